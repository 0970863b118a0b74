// The simulated Durable-Object-like runtime (runtime.md 3-10) on the World: objects identified by
// (className, name), incarnations built lazily by the first call or alarm, one SQLite store per
// object with implicit transactions and in-order confirmation, input and output gates, hibernation,
// eviction and resets, the per-object alarm with its retry schedule, RPC stubs with E-order and
// their failure modes, and R2-like cold buckets. Faults are asked of a FaultInjector at each point.
// Invariants kept here: RT-03..08, RT-10..16, RT-19, RT-25 (checked over the trace in properties/),
// except those the World's simulator mutants break on purpose (sim/mutants.h).
#pragma once

#include <map>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/runtime.h"
#include "sim/cold_store.h"
#include "sim/fault_points.h"
#include "sim/tally.h"
#include "sim/world.h"

namespace durasim::sim {

class SimObject;

struct RuntimeOptions {
  bool remote_error_breaks_stub = true;    // runtime.md 9.1
  bool delete_all_deletes_alarm = true;    // runtime.md 4.3
  std::set<std::string> variants;          // with the World's, passed to every ObjectContext
  std::map<std::string, std::vector<LifecycleRule>> bucket_rules;  // cold-store lifecycle per bucket
  // File-backed stores, one file per object in this directory, instead of memory. Each run starts
  // them empty (files of an earlier run are replaced).
  std::optional<std::string> storage_dir;
};

// What the runtime reports about one object, for checks and stuck-run reports.
struct ObjectStatus {
  std::string label;  // "Class/name"
  int64_t incarnations = 0;
  bool live = false;
  std::optional<int64_t> stored_alarm;
  std::size_t unconfirmed_commits = 0;
  std::size_t held_effects = 0;
  std::size_t calls_in_progress = 0;
};

class ObjectRuntime {
 public:
  ObjectRuntime(World& world, FaultInjector& faults, RuntimeOptions options = {});
  ~ObjectRuntime();
  ObjectRuntime(const ObjectRuntime&) = delete;
  ObjectRuntime& operator=(const ObjectRuntime&) = delete;

  // Registers the application class `className`. REQUIRES: before its first use.
  void define_class(const std::string& className, ObjectFactory factory);
  // Stubs for workload drivers outside any object (no output gate).
  ObjectNamespace& client(const std::string& className);
  ColdBucket& client_bucket(const std::string& name);
  // Replaces the fault injector's buggify decisions (FaultInjector::buggify) for this runtime's objects.
  void set_buggify(std::function<bool(std::string_view)> buggify) { buggify_ = std::move(buggify); }

  // Stops the per-object timed faults (code updates, partitions, episodes) and lifts storage caps (heal).
  void heal();
  std::vector<ObjectStatus> status() const;
  // Objects with unfinished runtime work (held effects, unconfirmed commits, calls in progress).
  // (Stores are read through the World's read-only StoreView, world().stores().)
  std::vector<std::string> pending() const;
  // Invariants the runtime checks on itself as it runs: the World's self checks.
  Tallies& self_checks() { return world_.self_checks(); }

  // Internal plumbing shared by the runtime's parts.
  World& world() { return world_; }
  FaultInjector& faults() { return faults_; }
  const RuntimeOptions& options() const { return options_; }
  const std::function<bool(std::string_view)>& buggify() const { return buggify_; }
  SimObject& object(const std::string& className, const std::string& name);
  ColdStore& cold_store() { return cold_; }
  ColdBucket& bucket_for(SimObject* caller, const std::string& name);
  uint64_t next_call_id() { return ++last_call_id_; }
  // rpc.partition or episode.isolation: whether all traffic to and from `label` fails now.
  bool partitioned(const std::string& label) const;
  void partition(const std::string& label, int64_t until) { partitioned_until_[label] = until; }
  // episode.isolation: besides its RPC traffic, the object's cold-store calls fail until `until`.
  void isolate(const std::string& label, int64_t until) { isolated_until_[label] = until; }
  // Why the cold store refuses a call from `caller` now ("outage" for episode.cold_outage,
  // "isolated" for episode.isolation), or null when it does not.
  const char* cold_refusal(const std::string& caller) const;

 private:
  int64_t draw_lifecycle_lag(int64_t max);
  void arm_storage_full();
  void arm_cold_vanish();
  void sweep_cold_vanish_after(int64_t delay);
  void arm_cold_outage();
  bool isolated(const std::string& label) const;

  World& world_;
  FaultInjector& faults_;
  RuntimeOptions options_;
  std::function<bool(std::string_view)> buggify_;
  std::map<std::string, ObjectFactory> classes_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<SimObject>> objects_;
  std::map<std::string, std::unique_ptr<ObjectNamespace>> clients_;
  std::map<std::pair<SimObject*, std::string>, std::unique_ptr<ColdBucket>> buckets_;
  ColdStore cold_;
  StreamId lag_stream_;
  uint64_t last_call_id_ = 0;
  std::set<std::string> bucket_names_;  // every bucket an object or client has used
  std::map<std::string, int64_t> partitioned_until_;
  std::map<std::string, int64_t> isolated_until_;  // episode.isolation
  int64_t cold_outage_until_ = 0;                  // episode.cold_outage
};

}  // namespace durasim::sim
