// AlarmApp: an application object composing the shared scheduler and named alarms, with one
// handler behaviour per name family (succeed, fail then succeed, always fail, non-retryable, time
// out, replace itself while running, invalid retry policy, outlive the alarm handoff). Handlers are
// idempotent by their idempotency key: each records its effect once in `app_effects`.
// RPC methods: schedule {name, at}, cancel {name}, purge {before} or {boundaryOf: name} (the cutoff
// is the instant this incarnation last scheduled `name`, its created_at: a boundary case), ping.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/alarms.h"
#include "engine/scheduler.h"
#include "sim/fault_points.h"

namespace durasim::workloads {

struct AlarmAppConfig {
  SchedulerOptions scheduler;
  int64_t attemptTimeoutMs = 20'000;  // capability level, for every name without its own
  int64_t slowTimeoutMs = 2'000;      // "slow.*" and "slowretry.*" time out after this
  int64_t longRunMs = 40'000;         // "long.*" runs this long (more than a short handoff)
  int64_t selfReplacements = 2;       // "self.*" replaces itself this many times per chain
  int64_t failMaxAttempts = 3;        // "fail.*" attempts before it becomes failed
};

// The handler families, by name prefix (the part before the first '.').
inline const std::vector<std::string>& alarmFamilies() {
  static const std::vector<std::string> families = {"ok", "flaky", "fail", "poison", "slow",
                                                    "slowretry", "self", "badpolicy", "long"};
  return families;
}
// Every alarm name the object registers: `perFamily` names of each family ("ok.0", "ok.1", ...).
std::vector<std::string> alarmNames(int64_t perFamily);
std::string alarmFamily(const std::string& name);
// The resolved maxAttempts of `name` under `config`.
int64_t alarmMaxAttempts(const std::string& name, const AlarmAppConfig& config);
// The handler families' retry policies as the trace states them for the checkers ("alarmPolicies"
// and "defaultMaxAttempts" of the workload's "workload.config" event): per family its maxAttempts,
// a fixed retryDelayMs, or "invalid" for a policy whose output is invalid.
nlohmann::json alarmPolicyJson(const AlarmAppConfig& config);

class AlarmApp final : public DurableObject {
 public:
  static constexpr const char* kClass = "AlarmApp";

  // `faults` may be null (no injected handler misbehaviour).
  AlarmApp(ObjectContext& ctx, const AlarmAppConfig& config, int64_t namesPerFamily, sim::FaultInjector* faults);

  bool hasAlarmHandler() const override { return true; }
  Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) override;
  Task<void> alarm(const AlarmInvocationInfo& info) override { return scheduler_.alarm(info); }

  DurabilityAlarms& alarms() { return *alarms_; }

 private:
  NamedAlarmOptions options(int64_t namesPerFamily);
  Task<void> handle(DurableAlarmInfo info);
  Task<void> misbehave(const char* point);
  void recordEffect(const DurableAlarmInfo& info);
  void probeDuplicateAttach();

  ObjectContext& ctx_;
  AlarmAppConfig config_;
  sim::FaultInjector* faults_;
  DurabilityScheduler scheduler_;
  std::unique_ptr<DurabilityAlarms> alarms_;
  std::map<std::string, int64_t> lastScheduledAt_;  // name -> clock when this incarnation scheduled it
};

}  // namespace durasim::workloads
