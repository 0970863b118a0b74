// `durasim mutants`: the mutation score of the checkers. Each registered variant (cli/variants.h)
// is switched on in the workload that exercises it and run seed by seed, up to a budget, until a
// seed fails; the report says which invariants caught it, after how many seeds and how much
// simulated time, and saves the trace of the first detecting seed. A variant counts as caught only
// when one of its expected invariants is violated; one caught by others alone, or not at all, fails
// the command (exit 1), and the report says which.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "cli/variants.h"

namespace durasim::cli {

struct MutantsOptions {
  std::vector<std::string> variants;      // --variant: only these (default: every registered one)
  uint64_t seeds = 100;                   // --seeds N: the budget per variant, seeds 0..N-1
  std::optional<std::string> json;        // --json FILE: the report as JSON
  std::optional<std::string> trace_dir;   // where first detections are saved (default: beside --json, or .)
  bool list = false;                      // --list: the registry only, nothing is run
};

// The variants a run of `options` covers: those named by --variant, else every registered one.
// Throws std::invalid_argument for an unknown variant or --seeds 0.
std::vector<const VariantInfo*> chosen_variants(const MutantsOptions& options);
int mutants_command(const MutantsOptions& options, std::ostream& out, std::ostream& err);

}  // namespace durasim::cli
