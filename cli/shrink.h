// `durasim shrink` (DESIGN.md, "Traces"): cuts a failing trace down while the same failure remains.
// A run is a function of its configuration and its choice log, so the shrinker edits those two and
// re-runs each candidate with the log read in forgiving mode (sim/random.h: a stream that runs out
// or no longer fits gives the simplest values), Hypothesis-style, and deletes the workload actors'
// operations whole (workloads/actor_stream.h: each opens with a choice the forgiving run notes). A
// candidate is kept when it still fails the same way (one of the invariants the original violated,
// or the same kind of abort, or still stuck) and is smaller in a fixed order (docs/decisions.md,
// "Shrinking"); the passes repeat until a round makes no progress, the time budget runs out or
// --max-runs candidates have run.
// The result is the kept candidate's own trace, which the ordinary `durasim replay` reproduces.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "traces/trace_file.h"

namespace durasim::cli {

inline constexpr double kDefaultShrinkBudgetSeconds = 60;
// The deadline is a steady_clock time point (int64 nanoseconds, about 292 years): 10^9 s (31 years)
// is beyond any shrink and far from overflowing it.
inline constexpr double kMaxShrinkBudgetSeconds = 1e9;

// The input cannot be shrunk: it does not reproduce, or there is no failure to keep.
class ShrinkError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct ShrinkLimits {
  double budget_seconds = kDefaultShrinkBudgetSeconds;  // wall time for candidate runs
  std::optional<uint64_t> max_runs;                     // a deterministic bound on candidate runs
  std::optional<std::string> invariant;                 // keep this one violated (default: any the original violated)
};

// How big a run is. `operations`: the client calls the workload's metrics count ("calls"; fanout:
// "pushes"; core: "ops"), absent when the run ended before its metrics; `faults`: "fault" events.
struct TraceSizes {
  std::optional<uint64_t> operations;
  uint64_t faults = 0;
  uint64_t choices = 0;
  uint64_t events = 0;
};

struct ShrinkResult {
  traces::TraceFile trace;    // the smallest failing run found (the input's own if none was smaller)
  std::string failure;        // what is kept failing, e.g. "OBX-14 violated" or "run aborted (runaway)"
  TraceSizes before, after;
  uint64_t runs = 0;          // candidate runs
  uint64_t accepted = 0;      // candidates kept
  double seconds = 0;         // wall time of the whole shrink
  std::string stopped;        // "no further progress", "time budget", "--max-runs"
};

// Shrinks `trace`. Throws ShrinkError when the trace does not replay to its own hash or its run did
// not fail, std::invalid_argument when its configuration is not runnable.
ShrinkResult shrink_trace(const traces::TraceFile& trace, const ShrinkLimits& limits, std::ostream* progress = nullptr);

// FILE with ".shrunk" before its extension: "a/x3.jsonl" -> "a/x3.shrunk.jsonl", "t" -> "t.shrunk".
std::string default_shrink_output(const std::string& path);

struct ShrinkOptions {
  std::string path;
  std::optional<std::string> out;  // default: default_shrink_output(path)
  ShrinkLimits limits;
  bool verbose = false;            // print every candidate kept
};

// Throws std::invalid_argument when the budget is not in (0, kMaxShrinkBudgetSeconds] or max_runs is 0.
void check_shrink_limits(const ShrinkLimits& limits);

// Exit codes: 0 the shrunk trace was written; 2 bad input (unreadable or malformed trace, a trace that
// does not replay, a trace whose run passed: nothing to shrink), or the output cannot be written.
int shrink_command(const ShrinkOptions& options, std::ostream& out, std::ostream& err);

}  // namespace durasim::cli
