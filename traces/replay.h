// Replay (DESIGN.md, "Traces"): a sink that compares the events of a re-run, one by one, with the
// events of a recorded trace (by the running trace hash after each; the JSON line of an event is
// written only for the report of the first that differs) and remembers the first that differs. The re-run draws its choices
// from the trace's choice log with the seed withheld, so a complete log reproduces every event.
#pragma once

#include <optional>
#include <string>

#include "traces/recorder.h"
#include "traces/trace_file.h"

namespace durasim::traces {

struct Divergence {
  uint64_t event_index = 0;  // 0-based index of the first differing event
  uint64_t line = 0;         // its line in the trace file, 0 if unknown
  std::string expected;      // the recorded event line ("" if the trace had ended)
  std::string actual;        // the replayed event line ("" if the replay ended first)
  std::string describe() const;
};

class ReplayComparer final : public sim::TraceSink {
 public:
  explicit ReplayComparer(const TraceFile& expected) : expected_(expected) {}

  using sim::TraceSink::record;
  void record(const sim::TraceEvent& event) override;
  // Call when the re-run has ended: a replay that stopped short of the trace also diverges.
  void finish();

  bool diverged() const { return divergence_.has_value(); }
  const std::optional<Divergence>& divergence() const { return divergence_; }
  uint64_t hash() const { return hash_; }
  uint64_t events() const { return events_; }

 private:
  void diverge(std::string actual);

  const TraceFile& expected_;
  uint64_t hash_ = kTraceHashStart;  // over the events that matched
  uint64_t events_ = 0;
  std::optional<Divergence> divergence_;
};

}  // namespace durasim::traces
