// The run loop every workload uses (runtime.md 11.4): setup and start, the safety phase for
// `safety_ms` of simulated time, heal, the liveness phase until the workload has drained or
// `liveness_ms` have passed, then the checks. A run that did not drain names what is pending.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/tally.h"
#include "sim/world.h"
#include "workloads/run_config.h"
#include "workloads/workload.h"

namespace durasim::workloads {

struct PhaseReport {
  bool drained = false;
  std::vector<std::string> pending;     // empty when drained
  sim::SimTime heal_time = 0;
  sim::SimTime end_time = 0;
  uint64_t events = 0;                  // executor events run
  std::optional<std::string> stopped;   // set when `keep_going` ended the run early
  nlohmann::json metrics;
};

// Runs `workload` in `world` through every phase, adding its checks to `tallies`. `keep_going` is
// polled between events (replay uses it to stop at the first divergence). Exceptions escaping the
// workload (a broken internal assumption) propagate to the caller.
PhaseReport run_phases(sim::World& world, faults::FaultPlan& faults, Workload& workload, const RunConfig& config,
                       sim::Tallies& tallies, const std::function<bool()>& keep_going);

}  // namespace durasim::workloads
