// Shared rig for the tests of the simulated object runtime (sim/object_runtime.h): a World with a
// trace sink that keeps every event, a scripted FaultInjector (faults fire at chosen opportunities,
// latencies are fixed or scripted), and client coroutines that record how their RPC calls ended.
#pragma once

#include <gtest/gtest.h>

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime.h"
#include "sim/fault_points.h"
#include "sim/object_runtime.h"
#include "sim/world.h"

namespace durasim::rt_test {

using nlohmann::json;
using sim::FaultKind;
using sim::LatencyKind;
using sim::SimTime;

inline constexpr SimTime kStart = 1'000'000;

// Keeps every trace event of the run.
class CollectSink final : public sim::TraceSink {
 public:
  void record(const sim::TraceEvent& event) override { events.push_back(event.json()); }

  std::vector<json> of(const std::string& type) const {
    std::vector<json> out;
    for (const json& e : events)
      if (e.at("ev") == type) out.push_back(e);
    return out;
  }
  std::size_t count(const std::string& type) const { return of(type).size(); }

  std::vector<json> events;
};

// A FaultInjector driven by the test: a fault fires at the opportunities the test chose, either by
// number (the nth opportunity of that kind, from 1), by arming the next ones, or by a rule.
class ScriptedFaults final : public sim::FaultInjector {
 public:
  using Rule = std::function<bool(FaultKind, const sim::FaultSite&, int64_t nth)>;
  using Latency = std::function<int64_t(LatencyKind)>;

  // Fires the `nth` opportunity of `kind` (1-based, counted over the whole run).
  void fire_at(FaultKind kind, int64_t nth) { planned_[kind].insert(nth); }
  // Fires the next `count` opportunities of `kind`.
  void arm(FaultKind kind, int64_t count = 1) { armed_[static_cast<std::size_t>(kind)] += count; }
  void set_rule(Rule rule) { rule_ = std::move(rule); }
  void set_latency(Latency latency) { latency_ = std::move(latency); }
  // Fixed latency per family.
  void set_latency(LatencyKind kind, int64_t ms) { fixed_[static_cast<std::size_t>(kind)] = ms; }
  void set_world(sim::World* world) { world_ = world; }

  bool fires(FaultKind kind, const sim::FaultSite& site, const std::function<json()>& draw_details) override {
    const auto index = static_cast<std::size_t>(kind);
    const int64_t nth = ++seen_[index];
    bool fire = false;
    if (armed_[index] > 0) {
      --armed_[index];
      fire = true;
    }
    if (auto it = planned_.find(kind); it != planned_.end() && it->second.count(nth)) fire = true;
    if (rule_ && rule_(kind, site, nth)) fire = true;
    if (!fire) return false;
    json details = draw_details ? draw_details() : json::object();
    ++fired_[index];
    if (world_)
      world_->emit("fault", {{"fault", std::string(sim::fault_name(kind))},
                             {"object", site.object},
                             {"incarnation", site.incarnation},
                             {"point", std::string(site.point)},
                             {"details", details}});
    return true;
  }
  int64_t latency(LatencyKind kind) override {
    if (latency_) return latency_(kind);
    return fixed_[static_cast<std::size_t>(kind)];
  }
  // Healed by default: no per-object timed faults (code updates, partitions, episodes).
  bool healed() const override { return healed_; }
  void set_healed(bool healed) { healed_ = healed; }

  int64_t seen(FaultKind kind) const { return seen_[static_cast<std::size_t>(kind)]; }
  int64_t fired(FaultKind kind) const { return fired_[static_cast<std::size_t>(kind)]; }

 private:
  std::array<int64_t, sim::kFaultKindCount> seen_{}, fired_{}, armed_{};
  std::map<FaultKind, std::set<int64_t>> planned_;
  Rule rule_;
  Latency latency_;
  std::array<int64_t, 3> fixed_{1, 1, 1};  // rpc, cold, confirm
  sim::World* world_ = nullptr;
  bool healed_ = true;
};

// How one client call ended.
struct CallResult {
  bool done = false;
  bool ok = false;
  json value;
  std::string error;  // the RpcError's message
  RpcError::Kind kind = RpcError::Kind::remote;
  RpcError::Flags flags;
  SimTime sent = 0, finished = 0;
};
using CallPtr = std::shared_ptr<CallResult>;

// Calls `method` on `stub` after `delay` ms and records the outcome into `out`.
inline Task<void> client_call(sim::World* world, Stub stub, std::string method, json args, SimTime delay, CallPtr out) {
  if (delay > 0) co_await world->sleep_for(delay);
  out->sent = world->now();
  try {
    out->value = co_await stub.call(std::move(method), std::move(args));
    out->ok = true;
  } catch (const RpcError& e) {
    out->error = e.what();
    out->kind = e.kind();
    out->flags = e.flags();
  }
  out->finished = world->now();
  out->done = true;
}

// The World, the injector and the runtime of one test, in construction order.
struct Rig {
  // `timed_faults`: the injector starts unhealed, so the runtime arms its timed faults (code
  // updates, partitions, episodes); only the kinds the test arms or plans fire.
  explicit Rig(uint64_t seed = 1, sim::RuntimeOptions options = {}, bool timed_faults = false)
      : world(kStart, sim::RandomSource::recording(seed), sink),
        runtime((faults.set_world(&world), faults.set_healed(!timed_faults), world), faults, std::move(options)) {}
  ~Rig() { world.tasks().cancel_all(); }  // client frames hold stubs into the runtime

  // Runs until `horizon` (absolute) or until nothing is left to run.
  uint64_t run_until(SimTime horizon) { return world.run_until(horizon, [] { return true; }); }
  uint64_t run_for(SimTime ms) { return run_until(world.now() + ms); }

  Stub stub(const std::string& className, const std::string& name) { return runtime.client(className).get(name); }

  // Spawns a client that calls `method` on a fresh stub after `delay` ms.
  CallPtr call(const std::string& className, const std::string& name, const std::string& method, json args = json::object(),
               SimTime delay = 0) {
    return call_on(stub(className, name), method, std::move(args), delay);
  }
  CallPtr call_on(Stub on, const std::string& method, json args = json::object(), SimTime delay = 0) {
    auto out = std::make_shared<CallResult>();
    world.tasks().spawn("client." + method, client_call(&world, std::move(on), method, std::move(args), delay, out));
    return out;
  }

  std::optional<sim::ObjectStatus> status(const std::string& label) const {
    for (const sim::ObjectStatus& s : runtime.status())
      if (s.label == label) return s;
    return std::nullopt;
  }

  // Trace events of `type` about object `label`.
  std::vector<json> events(const std::string& type, const std::string& label) const {
    std::vector<json> out;
    for (const json& e : sink.of(type))
      if (e.contains("object") && e.at("object") == label) out.push_back(e);
    return out;
  }

  CollectSink sink;
  sim::World world;
  ScriptedFaults faults;
  sim::ObjectRuntime runtime;
};

inline Task<void> ticking(sim::World* world, SimTime ms) { co_await world->sleep_for(ms); }

// A rig around one object `className`/`name` of a capability's test: time runs for the whole span
// asked even when nothing is scheduled, the object resets at its next reset opportunity while
// `*resetNow` is set (then it is cleared), and `done` calls a method and expects an answer.
struct ObjectRig : Rig {
  ObjectRig(std::string className, std::string name, bool* resetNow, sim::RuntimeOptions options = {})
      : Rig(1, std::move(options)), className_(std::move(className)), name_(std::move(name)) {
    faults.set_rule([resetNow](FaultKind kind, const sim::FaultSite&, int64_t) {
      if (kind != FaultKind::object_reset || !*resetNow) return false;
      *resetNow = false;
      return true;
    });
  }
  uint64_t run_for(SimTime ms) {
    world.tasks().spawn("tick", ticking(&world, ms));
    return Rig::run_for(ms);
  }
  json done(const std::string& method, json args = json::object(), SimTime ms = 1'000) {
    CallPtr c = Rig::call(className_, name_, method, std::move(args));
    run_for(ms);
    EXPECT_TRUE(c->ok) << method << ": " << c->error;
    return c->value;
  }
  // The rows `sql` reads from the object's live store.
  json query(const std::string& sql);

 private:
  std::string className_, name_;
};

// Rows of one integer column from an object's store (after a drained run); empty if the table is missing.
inline std::vector<int64_t> column(sim::ObjectRuntime& runtime, const std::string& className, const std::string& name,
                                   const std::string& table, const std::string& col) {
  std::vector<int64_t> values;
  SqlCursor tables = runtime.world().stores().live(durasim::sim::object_label(className, name), "SELECT name FROM sqlite_master WHERE type = 'table' AND name = '" + table + "'");
  if (tables.toVector().empty()) return values;
  for (const SqlRow& row : runtime.world().stores().live(durasim::sim::object_label(className, name), "SELECT " + col + " FROM " + table + " ORDER BY rowid").toVector())
    values.push_back(row.int64(col));
  return values;
}

// Rows of a cursor as JSON objects by column: integers and text as they are, anything else null.
inline json rows_json(SqlCursor cursor) {
  json rows = json::array();
  for (const SqlRow& row : cursor.toVector()) {
    json r = json::object();
    for (std::size_t i = 0; i < row.size(); ++i) {
      const SqlValue& v = row[i];
      const std::string& column = row.columnNames()[i];
      if (const auto* n = std::get_if<int64_t>(&v))
        r[column] = *n;
      else if (const auto* s = std::get_if<std::string>(&v))
        r[column] = *s;
      else
        r[column] = nullptr;
    }
    rows.push_back(r);
  }
  return rows;
}

inline json ObjectRig::query(const std::string& sql) {
  return rows_json(runtime.world().stores().live(sim::object_label(className_, name_), sql));
}

// A small deterministic generator for test-side latencies (not the World's randomness).
struct Lcg {
  uint64_t state;
  explicit Lcg(uint64_t seed) : state(seed * 6364136223846793005ULL + 1442695040888963407ULL) {}
  int64_t below(int64_t bound) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<int64_t>((state >> 33) % static_cast<uint64_t>(bound));
  }
};

}  // namespace durasim::rt_test
