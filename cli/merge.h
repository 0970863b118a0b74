// `durasim merge FILE...`: the results of a campaign run in shards (`durasim run --shard i/n --json
// FILE` on each machine) combined into what one run of the whole campaign prints: the same
// summaries, totals and exit code, and on request the same --json lines and --junit report. The
// files must be the complete shards 0/n .. n-1/n of one campaign (the same seed range, workloads,
// configurations and determinism setting), each with its closing summary line; anything else is bad
// input (exit 2), named in one line.
#pragma once

#include <optional>
#include <ostream>
#include <string>
#include <vector>

namespace durasim::cli {

struct MergeOptions {
  std::vector<std::string> files;
  bool verbose = false;                    // print each seed's line, as `run --verbose` does
  std::optional<std::string> json, junit;  // write the merged results there
};

// 0 when every seed passed, 1 when one failed, 2 on bad input.
int merge_command(const MergeOptions& options, std::ostream& out, std::ostream& err);

}  // namespace durasim::cli
