// The durasim commands, as functions from parsed options to an exit code, so tests can run them
// without a process. Exit codes: 0 success, 1 a check failed (violation, stuck run, divergence),
// 2 bad input (invalid option, unreadable or malformed trace).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/campaign.h"

namespace durasim::sim {
class Tallies;
}
namespace durasim::properties {
struct Invariant;
}

namespace durasim::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailed = 1;
inline constexpr int kExitBadInput = 2;

struct RunOptions {
  std::optional<uint64_t> seed;
  std::optional<std::string> seeds;            // "A..B", inclusive
  std::optional<std::string> workload;         // unset: every registered workload, in name order
  std::string faults = "recoverable";          // none | recoverable | arbitrary
  std::optional<std::string> save_trace;       // a path; "{seed}" needed with several seeds, "{workload}" with several workloads
  std::string failure_dir = kDefaultFailureDir;  // where a failing seed's trace goes when --save-trace does not cover it
  bool verbose = false;
  bool check_determinism = false;              // run every seed twice and compare hashes (RT-01)
  std::optional<int64_t> start_time, safety_ms, liveness_ms;
  std::optional<uint64_t> max_events, max_events_per_instant;  // runaway bounds (sim/executor.h EventLimits)
  std::map<std::string, std::string> workload_options;  // key=value, value parsed as JSON if it is
  std::vector<std::string> variants;           // --variant: research variants to switch on (cli/variants.h)
  unsigned jobs = 1;                           // worker processes (cli/workers.h)
  std::optional<std::string> shard;            // "i/n": this run's slice of the seeds (cli/seed_slice.h)
  std::optional<std::string> json, junit;      // result files: JSON lines, JUnit XML
  bool progress = false;                       // a progress bar on `err` (main: when stderr is a terminal)
};

struct PropertiesOptions {
  std::vector<std::string> families;  // --family: only these families ("SCH", or "SCH,ALM"); empty: all
  std::optional<std::string> id;      // --id: only this invariant
  bool json = false;                  // a JSON array instead of the text listing
};

// The campaign `options` ask for: seeds, shard, jobs, workloads, fault profile, variants, workload
// options, run times and --save-trace patterns checked, nothing run or written. Throws
// std::invalid_argument naming what is wrong.
Campaign plan_campaign(const RunOptions& options);
// Runs the campaign (cli/campaign.h) and prints its report (cli/campaign_report.h).
int run_command(const RunOptions& options, std::ostream& out, std::ostream& err);
int replay_command(const std::string& path, bool verbose, std::ostream& out, std::ostream& err);
// The invariants `durasim properties` lists, in registry order. Throws std::invalid_argument for an
// unknown family or ID, or both --id and --family.
std::vector<const properties::Invariant*> select_invariants(const PropertiesOptions& options);
// Lists the invariant registry (properties/registry.h); an unknown family or ID is bad input.
int properties_command(const PropertiesOptions& options, std::ostream& out, std::ostream& err);

// Writes "unknown invariant id X" to `err` for every ID in `tallies` missing from the registry (a
// programming error: a check counted under an ID the spec does not define); returns how many.
std::size_t report_unknown_invariants(const sim::Tallies& tallies, std::ostream& err);

// "A..B" -> {A, B}; throws std::invalid_argument with a message naming the problem.
std::pair<uint64_t, uint64_t> parse_seed_range(const std::string& text);

}  // namespace durasim::cli
