// The World of one run: one clock, one executor, one seeded random source with its choice log, and
// the trace sink every event goes to (DESIGN.md, "Determinism rules"). Everything that happens in a
// run happens through one World, on one thread; parallel campaigns run independent Worlds.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <string_view>

#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime.h"
#include "sim/executor.h"
#include "sim/mutants.h"
#include "sim/random.h"
#include "sim/store_view.h"
#include "sim/tally.h"
#include "sim/task_group.h"
#include "sim/trace_sink.h"

namespace durasim::sim {

class World {
 public:
  // `random` is a recording source (seeded) or a replaying one (choices from a trace).
  World(SimTime start_time, RandomSource random, TraceSink& sink);
  ~World();
  World(const World&) = delete;
  World& operator=(const World&) = delete;

  SimClock& clock() { return clock_; }
  SimTime now() const { return clock_.now(); }
  Executor& executor() { return executor_; }
  RandomSource& random() { return random_; }
  TaskGroup& tasks() { return tasks_; }  // roots that belong to no object (clients, drivers)

  // Records one trace event of type `type` at the current time; `fields` must be a JSON object.
  // The sink and its observers only read: if one of them draws a choice or schedules an event
  // while it handles the event, emit throws std::logic_error (in every build), since a run must be
  // the same with or without its checkers.
  void emit(std::string_view type, EventFields fields = {});
  // Adds a checker that sees every event after the sink, for as long as the World lives.
  void observe(TraceSink& observer) { observers_.push_back(&observer); }

  // The run's research variants (hazards.md, runtime.md 12): engine flags, which every object runtime
  // of this World hands to its ObjectContexts, and simulator mutants (sim/mutants.h), which the parts
  // of sim/ read here, as flags, from mutants(). Set before the workload is set up; none by default.
  void set_variants(std::set<std::string> variants);
  const std::set<std::string>& variants() const { return variants_; }
  bool has_variant(std::string_view name) const { return variants_.count(std::string(name)) > 0; }
  const ActiveMutants& mutants() const { return mutants_; }

  // The observation surface's read-only window onto the object stores of this World.
  StoreView& stores() { return stores_; }
  // Invariants the simulator checks on itself as it runs (RT-11, RT-13, RT-17, RT-25, RT-26):
  // counted here by the parts of sim/ that can see them, reported with the run's checks.
  Tallies& self_checks() { return self_checks_; }

  // Parks the awaiting frame until `t` (or for `ms`), as a new event.
  SleepAwaiter sleep_until(SimTime t) { return SleepAwaiter(executor_, t); }
  SleepAwaiter sleep_for(SimTime ms);

  // Runs events until none is left, the next is later than `horizon`, or `keep_going` says stop.
  // Returns the number of events run.
  template <class KeepGoing>
  uint64_t run_until(SimTime horizon, KeepGoing keep_going) {
    uint64_t ran = 0;
    while (keep_going() && executor_.run_one(horizon)) ++ran;
    return ran;
  }

 private:
  SimClock clock_;
  RandomSource random_;
  Executor executor_;
  TraceSink& sink_;
  uint64_t events_emitted_ = 0;  // the trace's length so far (sim/tally.h: where a violation was found)
  std::vector<TraceSink*> observers_;
  StoreView stores_;
  Tallies self_checks_;
  std::set<std::string> variants_;
  ActiveMutants mutants_;
  TaskGroup tasks_;
};

// The port's Clock for code that runs on the World's own time.
class WorldClock final : public Clock {
 public:
  explicit WorldClock(World& world) : world_(world) {}
  int64_t now() const override { return world_.now(); }
  Task<void> sleepFor(int64_t ms) override;
  Task<void> sleepUntil(int64_t t) override;

 private:
  World& world_;
};

}  // namespace durasim::sim
