// The one way checks are attached to a run (DESIGN.md, "Checking"). A checker observes every trace
// event as it is recorded and reads object storage only through the World's read-only StoreView;
// its end-of-run checks run at the run's "phase: check" event, on the state of that instant, and
// faults healing is the "phase: liveness" event. The registry holds one entry per checker, naming
// the invariant families it reports; the command builds the checkers a workload's families need and
// attaches them the same way for `run`, `replay` and the tests.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "faults/accounting.h"
#include "sim/store_view.h"
#include "sim/tally.h"
#include "sim/trace_sink.h"

namespace durasim::properties {

// What a checker may learn at the end besides the trace and the stores.
struct RunFacts {
  const faults::FaultAccounting& faults;  // per fault kind: enabled, rate, opportunities, firings (RT-09)
};

class Checker : public sim::TraceSink {
 public:
  // Adds this run's checks to `tallies` (after the run's last event).
  virtual void report(sim::Tallies& tallies, const RunFacts& facts) const = 0;
};

// Where a checker looks: the objects of one class ("" for checkers that follow every object or
// none), read through `stores`.
struct CheckerScope {
  const sim::StoreView& stores;
  std::string className;
};

struct CheckerEntry {
  std::string_view name;                      // "runtime", "alarms", ...
  std::vector<std::string_view> families;     // the invariant families it reports
  std::function<std::unique_ptr<Checker>(const CheckerScope&)> make;
};

// Every checker, in report order.
const std::vector<CheckerEntry>& checker_registry();
// The entry reporting `family`, or null when no checker does (a family a workload checks itself).
const CheckerEntry* checker_for_family(std::string_view family);

// A family a workload feeds, and the class of the objects it covers.
struct FamilyScope {
  std::string family;
  std::string className;
};
// One checker per (entry, class) the scopes need, in registry order; families no checker reports
// are skipped (the workload checks them). Throws std::invalid_argument for a family the invariant
// catalogue does not hold.
std::vector<std::unique_ptr<Checker>> make_checkers(const std::vector<FamilyScope>& scopes, const sim::StoreView& stores);

}  // namespace durasim::properties
