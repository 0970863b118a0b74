// The invariant registry: every stable invariant ID of spec/invariants-engine.md and
// spec/invariants-events-runtime.md, in spec order, with its title, check kinds and a statement of
// its predicate. `durasim properties` lists it; a run refuses tallied IDs missing from it.
#pragma once

#include <string_view>
#include <vector>

namespace durasim::properties {

struct Invariant {
  std::string_view id;         // "SCH-02"
  std::string_view family;     // "SCH": the ID's prefix
  std::string_view title;      // the spec's bold short name, e.g. "Alarm window"
  // The check kinds the spec lists, in the spec's order, joined by '+' (e.g. "H+S"): S state,
  // H history, L liveness, M model (a model-based test; used by the EVT entries only).
  std::string_view kinds;
  std::string_view statement;  // the predicate, in one or two sentences
};

// A family of invariants: its ID prefix and the spec's name for it.
struct InvariantFamily {
  std::string_view id;    // "SCH"
  std::string_view name;  // "scheduler"
  bool projectOwn = false;  // defined by this project (docs/), not by the spec's invariant files
};

// Every invariant, grouped by family, in spec order (SCH, ALM, LOG, LSE, FAN, OBX, RTE, EVT, RT),
// then the project's own families (CORE).
const std::vector<Invariant>& invariant_registry();
// The families in the order of invariant_registry().
const std::vector<InvariantFamily>& invariant_families();
// The entry with this exact ID, or nullptr.
const Invariant* find_invariant(std::string_view id);

// Whether the invariant needs the run to make progress: a liveness check, or a state check that
// holds only at quiescence ("At quiescence ..."). The arbitrary fault profile promises no progress
// (runtime.md 11.1), so there such an invariant is reported but does not fail a seed.
bool requires_progress(const Invariant& invariant);

}  // namespace durasim::properties
