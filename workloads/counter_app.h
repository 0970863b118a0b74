// Counter: the runtime workload's application object. Every mutation is keyed by an operation id
// and applied at most once (table `ops`), so counters must add up across every crash (RT-05, RT-06).
// RPC methods: add {op, key, amount}, arm {op, delay[, fails]}, relay {op, to, amount},
// burst {op, to, calls}, archive {op}, rewrite {op, gap}; with the probes of CounterProbes also
// exclusive {op} and abort {op}. The probes exercise runtime promises the plain methods never
// reach, each off by default. Every sleep is reported (runtime_events::kSlept, RT-25).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/runtime.h"
#include "sim/fault_points.h"

namespace durasim::workloads {

struct CounterProbes {
  // `exclusive` writes inside a blockConcurrencyWhile section held across a wait (RT-11).
  bool sections = false;
  // `abort` writes a row of table `aborted`, then aborts its incarnation in the same segment: the
  // row must never be stored (RT-06).
  bool aborts = false;
  // `arm` with fails = true records its alarm time in table `failing`, whose handler then always
  // throws: 7 counted attempts, then abandoned (RT-12).
  bool failing_alarms = false;
  // Every call first reports the incarnation the object's memory was set up in
  // (runtime_events::kCanary), which must be the one running it (RT-19).
  bool canary = false;
  // `add` waits kLateWriteMs before it writes, as a read-modify-write around a remote call would: a
  // reset meanwhile leaves a frame that writes after its incarnation ended (RT-08, under object.zombie).
  bool late_writes = false;
};

class Counter final : public DurableObject {
 public:
  static constexpr const char* kClass = "Counter";
  static constexpr const char* kBucket = "archive";   // the cold-store bucket `archive` writes to
  static constexpr const char* kScratch = "scratch";  // the bucket `rewrite` writes to (no lifecycle rule)
  static constexpr int64_t kSectionMs = 1'000;    // how long `exclusive` holds its section
  static constexpr int64_t kLateWriteMs = 5'000;  // how long a late `add` waits before it writes

  Counter(ObjectContext& ctx, sim::FaultInjector& faults, CounterProbes probes);

  bool hasAlarmHandler() const override { return true; }
  Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) override;
  Task<void> alarm(const AlarmInvocationInfo& info) override;

 private:
  Task<void> maybe_misbehave(const char* point);
  Task<void> pause(int64_t ms);
  nlohmann::json apply(const std::string& op, const std::string& key, int64_t amount);
  Task<nlohmann::json> add(const nlohmann::json& args);
  nlohmann::json arm(const nlohmann::json& args);
  Task<nlohmann::json> relay(const nlohmann::json& args);
  Task<nlohmann::json> burst(nlohmann::json args);
  Task<nlohmann::json> archive(std::string op);
  Task<nlohmann::json> rewrite(std::string op, int64_t gap);
  Task<nlohmann::json> exclusive(std::string op);
  Task<void> exclusive_section(std::string op);
  [[noreturn]] void abort_after_write(const std::string& op);

  ObjectContext& ctx_;
  sim::FaultInjector& faults_;
  CounterProbes probes_;
  int64_t born_in_;  // the incarnation this memory was set up in (the canary)
  int64_t rewrites_ = 0;  // `rewrite` calls of this memory, for keys no other attempt writes
};

}  // namespace durasim::workloads
