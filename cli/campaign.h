// A campaign: the workloads one `durasim run` covers, each under its own run configuration, and the
// seeds of each (the same slice for every workload). Task k is seed k mod S of the slice in
// workload k div S (S seeds per workload), so tasks are numbered in the order the summary reports
// them. Running a task yields its SeedResult and writes its trace where the campaign says: the
// --save-trace pattern, or, for a failing seed that pattern does not cover, the failure directory.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cli/seed_result.h"
#include "cli/seed_slice.h"
#include "workloads/run_config.h"

namespace durasim::cli {

inline constexpr const char* kDefaultFailureDir = "durasim-failures";

struct Campaign {
  std::vector<workloads::RunConfig> configs;  // one per workload, in report order
  SeedSlice seeds;
  bool check_determinism = false;             // RT-01 and RT-23 on every seed, not every 16th
  std::optional<std::string> save_trace;      // a path pattern with "{seed}" and "{workload}"
  std::string failure_dir = kDefaultFailureDir;

  uint64_t tasks() const { return configs.size() * seeds.size(); }
  // The workload index and seed of task k < tasks().
  std::pair<std::size_t, uint64_t> task(uint64_t k) const;
};

// Runs task k: the seed, its determinism checks when due, the trace saved when asked or when it
// failed. A trace that cannot be written is reported in the result's `error`.
SeedResult run_task(const Campaign& campaign, uint64_t k);

// `pattern` with "{seed}" and "{workload}" replaced.
std::string trace_path(const std::string& pattern, const std::string& workload, uint64_t seed);
// The command that runs `seed` again under `config` (every setting that differs from the default)
// and saves its trace.
std::string reproduce_command(const workloads::RunConfig& config, uint64_t seed);
// `text` as one shell word: as it is when it is plain, else in single quotes.
std::string shell_word(const std::string& text);

}  // namespace durasim::cli
