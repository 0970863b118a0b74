// What a campaign prints and writes, built from its seeds' records in campaign order: with
// --verbose a line per seed, after each workload's last seed its summary (seeds passed, simulated
// against wall time, executor events, per invariant checked / violated, the fault table, the buggify
// sites reached and those that never fired, each
// failure with the commands that replay and reproduce it), then the campaign's totals; and the
// --json lines and the --junit report. `durasim run` feeds it as seeds finish and `durasim merge`
// from shard files, so both print the same text for the same seeds.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/campaign.h"
#include "cli/junit.h"
#include "cli/progress.h"
#include "faults/accounting.h"
#include "faults/buggify.h"
#include "sim/tally.h"

namespace durasim::cli {

struct ReportSinks {
  std::ostream& out;
  bool verbose = false;
  std::ostream* json = nullptr;   // JSON lines: one per seed, then a summary line
  std::ostream* junit = nullptr;  // JUnit XML, written by finish()
  Progress* progress = nullptr;   // cleared before anything is printed
};

// How the campaign ran, for its last lines.
struct CampaignTiming {
  double wall_s = 0;             // a run's wall time; for a merge, the sum of its files' runs
  unsigned jobs = 1;
  std::size_t merged_files = 0;  // 0 for a run
};

class CampaignReport {
 public:
  CampaignReport(const Campaign& campaign, ReportSinks sinks);

  // The next seed's record, in task order (workload by workload, seeds ascending).
  void add(const SeedResult& result);
  // Prints the workloads not yet summarised, the campaign's wall time and totals, and writes the
  // JSON summary line and the JUnit report. Returns the exit code: 2 when a tallied invariant ID is
  // not in the catalogue (a programming error), 1 when a seed failed, else 0.
  int finish(const CampaignTiming& timing, std::ostream& err);

 private:
  struct Totals {
    uint64_t seeds = 0, passed = 0, executor_events = 0, trace_events = 0;
    int64_t simulated_ms = 0;
    double wall_s = 0;
    sim::Tallies tallies;
    faults::FaultCampaign faults;
    faults::BuggifyCampaign buggify;
    std::vector<std::string> failures;
  };
  void print_summary(std::size_t index);
  void write_json_summary(const CampaignTiming& timing);

  const Campaign& campaign_;
  ReportSinks sinks_;
  std::vector<Totals> totals_;
  std::size_t summarised_ = 0;  // workloads whose summary is printed
  std::optional<JUnitReport> junit_;
};

}  // namespace durasim::cli
