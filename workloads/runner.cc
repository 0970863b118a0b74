// Phases of a run; see runner.h.
#include "workloads/runner.h"

namespace durasim::workloads {
namespace {

constexpr uint64_t kDrainPollEvents = 64;  // how often the liveness phase asks whether work drained

}  // namespace

PhaseReport run_phases(sim::World& world, faults::FaultPlan& faults, Workload& workload, const RunConfig& config,
                       sim::Tallies& tallies, const std::function<bool()>& keep_going) {
  PhaseReport report;
  const uint64_t events_before = world.executor().events_run();
  workload.setup(world, faults);
  world.emit("phase", {{"phase", "safety"}});
  workload.start(world);

  const sim::SimTime heal_at = world.now() + config.safety_ms;
  world.run_until(heal_at, keep_going);
  if (keep_going()) {
    world.clock().advance_to(std::max(world.now(), heal_at));
    report.heal_time = world.now();
    faults.heal();
    workload.heal(world);
    world.emit("phase", {{"phase", "liveness"}});

    const sim::SimTime deadline = world.now() + config.liveness_ms;
    while (keep_going() && !workload.drained()) {
      uint64_t ran = 0;
      while (ran < kDrainPollEvents && keep_going() && world.executor().run_one(deadline)) ++ran;
      if (ran < kDrainPollEvents) break;  // idle, past the deadline, or told to stop
    }
  }
  if (!keep_going()) report.stopped = "stopped before the end of the run";

  report.drained = workload.drained();
  if (!report.drained) report.pending = workload.pending();
  // `idle`: nothing is left to run, so whatever is still pending would stay pending for ever.
  world.emit("phase", {{"phase", "check"}, {"drained", report.drained}, {"idle", world.executor().idle()}});
  if (!report.stopped) workload.check(world, tallies);
  report.end_time = world.now();
  report.events = world.executor().events_run() - events_before;
  report.metrics = workload.metrics();
  return report;
}

}  // namespace durasim::workloads
