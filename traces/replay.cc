// Event-by-event comparison of a replay with its trace; see replay.h.
#include "traces/replay.h"

namespace durasim::traces {

std::string Divergence::describe() const {
  std::string where = "event #" + std::to_string(event_index + 1);
  if (line) where += " (line " + std::to_string(line) + ")";
  if (expected.empty()) return where + ": the replay produced an event the trace does not have: " + actual;
  if (actual.empty()) return where + ": the replay ended before this recorded event: " + expected;
  return where + " differs\n  recorded: " + expected + "\n  replayed: " + actual;
}

void ReplayComparer::diverge(std::string actual) {
  const uint64_t index = events_;
  Divergence d;
  d.event_index = index;
  if (index < expected_.events.size()) {
    d.expected = expected_.events[index];
    if (index < expected_.event_line_numbers.size()) d.line = expected_.event_line_numbers[index];
  }
  d.actual = std::move(actual);
  divergence_ = std::move(d);
}

void ReplayComparer::record(const sim::TraceEvent& event) {
  if (divergence_) return;
  const uint64_t hash = fold_event(hash_, event.fields());
  if (events_ >= expected_.event_hashes.size() || hash != expected_.event_hashes[events_]) {
    diverge(canonical_fields_line(event.fields()));
    return;
  }
  hash_ = hash;
  ++events_;
}

void ReplayComparer::finish() {
  if (!divergence_ && events_ < expected_.events.size()) diverge("");
}

}  // namespace durasim::traces
