// One seed's outcome as a campaign reports it: what the run summary, the JSON lines, the JUnit report
// and `durasim merge` need, and nothing the simulator holds. A worker process sends it to the parent
// as one JSON line, and `durasim run --json` writes the same line, so a campaign run in one process,
// in several, or in shards merged later adds up the same records to the same totals.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli/seed_run.h"
#include "faults/accounting.h"

namespace durasim::cli {

struct SeedResult {
  std::string workload;
  uint64_t seed = 0;
  uint64_t hash = 0;
  bool passed = true;
  std::string failure;    // SeedOutcome::failure(): why it failed, "" when it passed
  std::string reproduce;  // the `durasim run` command that runs it again, when it failed
  std::string trace;      // where its trace was written, "" if nowhere
  std::string error;      // a trace could not be written: the campaign stops there (exit 2)
  std::map<std::string, std::pair<uint64_t, uint64_t>> invariants;  // ID -> checked, violated
  faults::FaultAccounting faults{};  // rate_ppm is not carried: the campaign's table does not show it
  std::map<std::string, faults::BuggifyCount> buggify;  // per engine buggify site reached
  uint64_t executor_events = 0, trace_events = 0;
  int64_t simulated_ms = 0;
  double wall_s = 0;  // the seed's own wall time, its checks and trace writing included
};
bool operator==(const SeedResult& a, const SeedResult& b);

// The record of `outcome`, a run of `workload`; `reproduce`, `trace`, `error` and `wall_s` are the
// caller's to fill.
SeedResult seed_result(const std::string& workload, const SeedOutcome& outcome);

// One JSON object: {"type": "seed", "workload", "seed", "hash" (16 hex digits), "passed",
// "violated" {ID: count}, "fired" [fault ids], "failure", "reproduce", "trace", "invariants" {ID:
// [checked, violated]}, "faults" {id: [enabled 0/1, opportunities, firings]} (faults with all three
// zero left out), "buggify" {site: [enabled 0/1, calls, fires]}, "executor_events", "trace_events",
// "simulated_ms", "wall_s"} ("failure",
// "reproduce", "trace", "error" only when set). "violated" and "fired" are for readers; they are
// derived from "invariants" and "faults".
nlohmann::ordered_json to_json(const SeedResult& result);
// Throws std::invalid_argument naming the first field that is missing or malformed ("buggify" may be
// absent: no site reached).
SeedResult seed_result_from_json(const nlohmann::json& j);

// "seed 7 hash 0123456789abcdef events 1329 simulated_ms 600000 ok": the line `run --verbose` prints.
std::string verbose_line(const SeedResult& result);
// "seed 7: <failure>", then indented lines with the command that reproduces it and, when its trace
// was saved, the one that replays it.
std::string failure_text(const SeedResult& result);

// The same text as JSON dump() but never throwing: bytes that are not UTF-8 become U+FFFD.
std::string json_line(const nlohmann::ordered_json& j);

}  // namespace durasim::cli
