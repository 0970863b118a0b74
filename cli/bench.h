// `durasim bench`: the speed and memory figures of issue-level targets, measured side by side in one
// run and printed beside their targets (docs/performance.md): (a) seeds/s and simulated ÷ wall per
// workload, (b) seeds per CPU-hour of a heavy log workload, (c) the log's append against raw inserts,
// (d) replay against the original run, (e) peak RSS after 1,000 and 10,000 runtime seeds, (f) the
// share of run time spent in checkers, (g) the event bus's poll cost (events.md 11), (h) the
// happens-before checker on 10,000 and 100,000 operations. Figures are measurements, never
// assertions: a missed target is reported, and the exit code stays 0.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

namespace durasim::cli {

struct BenchOptions {
  double scale = 1.0;               // multiplies every seed count and batch count (--quick: 0.1)
  std::optional<std::string> json;  // also write the figures to this file
  bool rss = true;                  // (e) runs 11,000 runtime seeds in child processes
  std::string only;                 // the letters of the parts to run ("g", "ad"); empty: all
  int repeat = 3;                   // (a) is the median of this many rounds over the workloads
};

// Throws std::invalid_argument when --scale is not in (0, 100], --repeat not in [1, 20] or --only
// names a part that is not a..h.
void check_bench_options(const BenchOptions& options);
int bench_command(const BenchOptions& options, std::ostream& out, std::ostream& err);

// (c): wall seconds for `batches` appends of 100 records through DurabilityLog, and for the same
// rows inserted raw in one transaction each, on a fresh simulated object without faults.
struct AppendCost {
  int batches = 0;
  int records_per_batch = 0;
  double engine_s = 0, raw_s = 0;
};
AppendCost measure_append_cost(int batches);

// The median of `values` (not empty): the middle one, or the mean of the two middle ones.
double median(std::vector<double> values);

// (g): the reads of one poll (the store's counters) and, for idle polls, their median wall time.
struct PollCost {
  int64_t lists = 0, gets = 0;
  double seconds = 0;
};
// events.md 11 on a file-backed store: a topic of `events` events, consumer "c" failing e10 always,
// "h" healthy. delivering: c's first pass; frozen: c idle behind the waiting e10; healthy: h idle
// after its first pass; quarantined: c's poll after e10 was quarantined (the default schedule's 8
// attempts, an hour apart). Idle figures are the median of `idle_polls` polls (odd, >= 1).
struct EventBusPollCost {
  int64_t events = 0;
  PollCost delivering, frozen, healthy, quarantined;
};
// One topic per size in `sizes`, measured side by side: the idle polls of every topic are taken in
// turn (each one's frozen, then its healthy consumer, round after round), so that the ratios between
// them do not depend on when the machine was busy.
std::vector<EventBusPollCost> measure_event_bus_polls(const std::vector<int64_t>& sizes, const std::set<std::string>& variants,
                                                      int idle_polls);

// (h): wall seconds for the happens-before checker (properties::HistoryGraph with the log's
// read-from checks) to take a synthetic log history of `operations` operations event by event and
// run its end-of-run check; the event counts, the graph's size and the checks it counted.
struct HappensBeforeCost {
  int64_t operations = 0, events = 0, nodes = 0, edges = 0;
  uint64_t checks = 0, violations = 0;
  double seconds = 0;
};
HappensBeforeCost measure_happens_before(int64_t operations);

}  // namespace durasim::cli
