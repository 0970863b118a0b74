// Checkers behind a mutated event stream: a workload's run without faults whose trace reaches the
// checkers of some families through a MutatingObserver, which changes one chosen event (the store
// left as the engine wrote it) on its way. The run itself is never changed: the mutation happens in
// the observer, after the recorder saw the event. Used to show that each check can fail.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "faults/fault_plan.h"
#include "properties/checkers.h"
#include "sim/world.h"
#include "workloads/run_config.h"
#include "workloads/runner.h"
#include "workloads/workload.h"

namespace durasim::mutated {

// Changes the `nth` event named `ev` (counting from 0) before the checkers see it, and hands them
// `copies` of it.
struct Mutation {
  std::string ev;
  int nth = 0;
  std::function<void(nlohmann::json&)> change;
  int copies = 1;
};

class MutatingObserver final : public sim::TraceSink {
 public:
  MutatingObserver(std::vector<std::unique_ptr<properties::Checker>> checkers, Mutation mutation)
      : checkers_(std::move(checkers)), mutation_(std::move(mutation)) {}

  void record(const sim::TraceEvent& event) override {
    if (!mutation_.ev.empty() && event.is(mutation_.ev) && seen_++ == mutation_.nth) {
      nlohmann::json changed = event.json();
      mutation_.change(changed);
      applied_ = true;
      for (int i = 0; i < mutation_.copies; ++i) forward(sim::TraceEvent(changed));
      return;
    }
    forward(event);
  }
  void report(sim::Tallies& tallies, const faults::FaultAccounting& accounting) const {
    for (const auto& checker : checkers_) checker->report(tallies, properties::RunFacts{accounting});
  }
  bool applied() const { return applied_; }

 private:
  void forward(const sim::TraceEvent& event) {
    for (const auto& checker : checkers_) checker->record(event);
  }
  std::vector<std::unique_ptr<properties::Checker>> checkers_;
  Mutation mutation_;
  int seen_ = 0;
  bool applied_ = false;
};

// One mutated-stream test case: its name, the mutation, and the invariant that must catch it.
struct MutationCase {
  const char* name;
  Mutation mutation;
  const char* caught_by;
};

struct Checked {
  sim::Tallies tallies;
  bool applied = false;
  uint64_t violations(const std::string& id) const {
    const auto found = tallies.by_id().find(id);
    return found == tallies.by_id().end() ? 0 : found->second.violated;
  }
  std::string examples() const {
    std::string out;
    for (const auto& [id, tally] : tallies.by_id())
      for (const std::string& example : tally.examples) out += id + ": " + example + "\n";
    return out;
  }
};

// `workload` at `seed` without faults, the checkers of `scopes` behind `mutation`.
inline Checked runMutated(const std::string& workload, std::vector<properties::FamilyScope> scopes, uint64_t seed,
                          Mutation mutation = {}) {
  class NullSink final : public sim::TraceSink {
   public:
    void record(const sim::TraceEvent&) override {}
  };
  workloads::RunConfig config;
  config.workload = workload;
  config.faults = "none";
  NullSink sink;
  sim::RandomSource random = sim::RandomSource::recording(seed);
  const sim::SimTime start_time = workloads::start_time_of(config, random);
  sim::World world(start_time, std::move(random), sink);
  MutatingObserver observer(properties::make_checkers(scopes, world.stores()), std::move(mutation));
  world.observe(observer);
  faults::FaultPlan plan(world, faults::parse_profile_kind(config.faults));
  const workloads::WorkloadInfo* info = workloads::find_workload(workload);
  auto running = info->make(config.options);
  Checked checked;
  workloads::run_phases(world, plan, *running, config, checked.tallies, [] { return true; });
  observer.report(checked.tallies, plan.accounting());
  checked.applied = observer.applied();
  return checked;
}

}  // namespace durasim::mutated
