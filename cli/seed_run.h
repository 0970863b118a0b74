// One seed, end to end: a World with a recorder and the checkers of the workload's invariant
// families (properties/checkers.h), the configured workload through its phases, the checks, and the
// final hash. Replay runs the same composition
// from a trace's configuration and choice log and compares event by event. Used by every command.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "faults/accounting.h"
#include "faults/buggify.h"
#include "sim/tally.h"
#include "traces/replay.h"
#include "traces/trace_file.h"
#include "workloads/run_config.h"
#include "workloads/runner.h"
#include "workloads/workload.h"

namespace durasim::cli {

struct SeedOutcome {
  uint64_t seed = 0;
  uint64_t hash = 0;
  uint64_t trace_events = 0;
  uint64_t executor_events = 0;
  uint64_t choices = 0;
  int64_t start_time = 0;  // fixed by the configuration or drawn by the swarm (runtime.md 2.1)
  int64_t simulated_ms = 0;
  workloads::PhaseReport phases;
  sim::Tallies tallies;
  std::optional<std::string> error;  // the run stopped on a broken assumption
  std::optional<std::string> choice_divergence;  // replay only: the re-run left the recorded choices
  faults::FaultAccounting faults{};                // per fault: enabled, rate, opportunities, firings
  std::map<std::string, faults::BuggifyCount> buggify;  // per engine buggify site reached: enabled, calls, fires

  bool liveness_required = true;  // false under the arbitrary profile (runtime.md 11.4)

  // Under the arbitrary profile invariants that need progress (properties::requires_progress) and
  // draining are reported but do not fail.
  bool passed() const;
  // One line saying why the seed failed ("" if it passed).
  std::string failure() const;
};

// Throws std::invalid_argument for an unknown workload, invalid workload options or times out of range.
void validate(const workloads::RunConfig& config);

// Runs `seed`; when `trace` is not null it receives the complete trace of the run.
SeedOutcome run_seed(const workloads::RunConfig& config, uint64_t seed, traces::TraceFile* trace = nullptr);
// As above, with the workload `info` makes instead of the registered one `config` names.
SeedOutcome run_seed(const workloads::WorkloadInfo& info, const workloads::RunConfig& config, uint64_t seed,
                     traces::TraceFile* trace = nullptr);

// As run_seed, with no checker attached (the workload's own checks still run): the simulator's cost
// alone, for `durasim bench`. Same events and hash as run_seed.
SeedOutcome run_seed_unchecked(const workloads::RunConfig& config, uint64_t seed);

// What a trace says its run concluded: its last "run.end" (per invariant [checked, violated], and
// whether the run drained) or "run.aborted" event.
struct RecordedVerdict {
  std::optional<nlohmann::json> invariants;  // {"ID": [checked, violated], ...}
  std::optional<bool> drained;
  std::optional<std::string> aborted;        // the broken assumption that stopped the run
};
RecordedVerdict recorded_verdict(const traces::TraceFile& trace);

// {"ID": [checked, violated], ...}, as a run's "run.end" event records its tallies.
nlohmann::json tally_summary(const sim::Tallies& tallies);

struct ReplayOutcome {
  bool matched = false;
  // Every event matched but the last, the run's verdict ("run.end", with each invariant's counts):
  // the checks changed since the recording and judged the same run differently. `run` is complete.
  bool verdict_only = false;
  std::optional<traces::Divergence> divergence;
  std::optional<std::string> choice_divergence;  // the re-run asked for a choice the log does not hold
  uint64_t hash = 0;
  uint64_t events = 0;
  SeedOutcome run;           // the replayed run, checked exactly as `run_seed` checks one
  RecordedVerdict recorded;  // what the trace says its run concluded
};

// Re-runs `trace` from its configuration and choices (seed withheld). Throws std::invalid_argument
// when its configuration is not runnable.
ReplayOutcome replay(const traces::TraceFile& trace);
// A run of `config` whose choices come from `log` read in forgiving mode (sim/random.h): a log that
// runs out or no longer fits gives the simplest values instead of diverging. The shrinker's
// candidate runs (cli/shrink.h). `keep_going` is polled between events; a run it stops is marked
// `stopped`; a run that draws more than `max_draws` choices stops there and is marked `cut`. When
// `trace` is not null it receives the complete trace, whose choices are `drawn`.
struct ForgivingRun {
  SeedOutcome outcome;
  sim::ChoiceLog drawn;            // what the run drew: replays exactly with the ordinary replay
  std::vector<uint64_t> simplest;  // per drawn choice, its simplest value (sim::RandomSource::simplest)
  std::vector<std::size_t> units;  // where each actor's operation starts in `drawn` (sim::RandomSource::units)
  uint64_t fault_events = 0;       // "fault" events: faults injected
  bool stopped = false;
  bool cut = false;
};
ForgivingRun run_forgiving(const workloads::RunConfig& config, uint64_t seed, const sim::ChoiceLog& log,
                           const std::function<bool()>& keep_going, traces::TraceFile* trace = nullptr,
                           uint64_t max_draws = UINT64_MAX);

// The invariants whose violation fails `outcome` (SeedOutcome::failed's rule), in ID order.
std::vector<std::string> failing_invariants(const SeedOutcome& outcome);

// RT-01: a second run of the seed hashes the same; RT-23: a replay from the recorded choices alone
// (seed withheld) reproduces every event and the hash. `trace` is the seed's recorded trace; the
// checks are added to outcome.tallies.
void check_determinism(const workloads::RunConfig& config, const traces::TraceFile& trace, SeedOutcome& outcome);

}  // namespace durasim::cli
