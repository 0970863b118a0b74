// The workload interface and registry (STYLE.md, FoundationDB's test workloads). A workload is a
// scenario: it builds what it needs in `setup`, drives load from `start`, stops injecting trouble at
// `heal`, says whether its work has drained, and in `check` adds what its clients observed (the
// answers they got) to the run's tallies; the trace and store checks of the families it declares are
// attached by the command. Workloads register by name for `durasim run --workload NAME`.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "faults/fault_plan.h"
#include "sim/tally.h"
#include "sim/world.h"

namespace durasim::workloads {

class Workload {
 public:
  virtual ~Workload() = default;
  // Before the first event; `faults` is the run's fault plan (its swarm profile already drawn).
  virtual void setup(sim::World& world, faults::FaultPlan& faults) = 0;
  virtual void start(sim::World& world) = 0;  // spawn drivers; they run in the safety phase
  virtual void heal(sim::World& world) {}     // the safety phase is over: faults stop
  virtual bool drained() const = 0;           // all work is done (the liveness goal)
  virtual std::vector<std::string> pending() const = 0;  // what is not done yet, for stuck runs
  virtual void check(sim::World& world, sim::Tallies& tallies) = 0;
  virtual nlohmann::json metrics() const = 0;
};

// An invariant family a workload feeds, and the class of the objects it covers ("" for a family
// that follows every object, or none).
struct CheckedFamily {
  std::string family;
  std::string className;
};

// A workload option that scales a run (how many objects, clients, operations), with the value the
// workload uses when the option is absent and the smallest it accepts: `durasim shrink` lowers it.
struct SizeOption {
  std::string key;
  int64_t fallback = 1;
  int64_t minimum = 1;
};

struct WorkloadInfo {
  std::string name;
  std::string summary;
  std::function<std::unique_ptr<Workload>(const nlohmann::json& options)> make;
  // The families its runs are checked for: the command attaches the checkers of properties/ for
  // them; a family no checker reports is checked by the workload's own check() (what its clients
  // read).
  std::vector<CheckedFamily> families;
  // The options that scale its runs, for the shrinker (cli/shrink.h).
  std::vector<SizeOption> sizes = {};
  // The faults it can offer opportunities for: its fault plans draw only these
  // (faults::FaultPlan, docs/fault-episodes.md).
  faults::FaultSet hosts = faults::every_fault();
};

// Every registered workload, in name order.
const std::vector<WorkloadInfo>& workload_registry();
// The workload named `name`, or null.
const WorkloadInfo* find_workload(const std::string& name);

}  // namespace durasim::workloads
