// `durasim mutants`; see mutants.h.
#include "cli/mutants.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/seed_run.h"
#include "cli/user_io.h"
#include "cli/variants.h"
#include "traces/trace_file.h"

namespace durasim::cli {

namespace {

enum class Verdict { caught, caught_by_others, undetected, unreachable };

const char* verdict_name(Verdict verdict) {
  switch (verdict) {
    case Verdict::caught:
      return "caught";
    case Verdict::caught_by_others:
      return "CAUGHT BY OTHERS ONLY";
    case Verdict::undetected:
      return "UNDETECTED";
    case Verdict::unreachable:
    default:
      return "not reachable yet";
  }
}

struct MutantResult {
  const VariantInfo* variant = nullptr;
  Verdict verdict = Verdict::undetected;
  uint64_t seeds_run = 0;
  std::optional<uint64_t> detecting_seed;
  std::set<std::string> caught_by;  // invariants violated in the detecting seed
  std::string failure;              // the detecting seed's failure line
  std::optional<int64_t> detection_ms;  // simulated ms from the start to the first violation
  uint64_t trace_events = 0;
  std::string trace_path;
  // An earlier seed caught only by other invariants, when the detecting seed is a later one.
  std::optional<uint64_t> others_first_seed;
  std::set<std::string> others_first_caught_by;
};

template <class Items>
std::string joined(const Items& items) {
  std::string text;
  for (const auto& item : items) {
    if (!text.empty()) text += ',';
    text += item;
  }
  return text;
}

workloads::RunConfig config_of(const VariantInfo& variant) {
  workloads::RunConfig config;
  config.workload = std::string(variant.workload);
  config.faults = std::string(variant.faults);
  config.options = variant.options;
  config.variants = {std::string(variant.name)};
  return config;
}

// The earliest simulated time (ms since the run's start) at which one of `caught` was violated.
std::optional<int64_t> detection_time(const SeedOutcome& outcome) {
  std::optional<int64_t> earliest;
  for (const auto& [id, tally] : outcome.tallies.by_id())
    if (tally.violated && tally.first_violation_ms && (!earliest || *tally.first_violation_ms < *earliest))
      earliest = *tally.first_violation_ms;
  if (!earliest) return outcome.simulated_ms;  // a stuck or aborted run: detected at its end
  return *earliest - outcome.start_time;
}

// Runs seeds until one is caught by an expected invariant. A seed caught only by other invariants
// is noted (the first one) and the search goes on: a variant may show one symptom in every seed and
// the one its catalogue entry names only in the seeds that reach its interleaving. Without an
// expected catch in the budget, the first detection is the result.
MutantResult run_variant(const VariantInfo& variant, const MutantsOptions& options, const std::filesystem::path& trace_dir) {
  MutantResult result;
  result.variant = &variant;
  if (variant.workload.empty()) {
    result.verdict = Verdict::unreachable;
    return result;
  }
  const workloads::RunConfig config = config_of(variant);
  std::optional<MutantResult> first_by_others;
  for (uint64_t seed = 0; seed < options.seeds; ++seed) {
    traces::TraceFile trace;
    SeedOutcome outcome = run_seed(config, seed, &trace);
    if (variant.check_determinism) check_determinism(config, trace, outcome);
    ++result.seeds_run;
    if (outcome.passed()) continue;
    MutantResult detected = result;
    detected.detecting_seed = seed;
    detected.failure = outcome.failure();
    for (const auto& [id, tally] : outcome.tallies.by_id())
      if (tally.violated) detected.caught_by.insert(id);
    detected.detection_ms = detection_time(outcome);
    detected.trace_events = trace.events.size();
    const bool expected = std::any_of(variant.expected.begin(), variant.expected.end(),
                                      [&](std::string_view id) { return detected.caught_by.count(std::string(id)) > 0; });
    detected.verdict = expected ? Verdict::caught : Verdict::caught_by_others;
    if (!expected && first_by_others) continue;
    detected.trace_path = (trace_dir / (std::string(variant.name) + ".seed-" + std::to_string(seed) + ".trace")).string();
    traces::write_trace(detected.trace_path, trace);
    if (!expected) {
      first_by_others = detected;
      continue;
    }
    if (first_by_others) {
      detected.others_first_seed = first_by_others->detecting_seed;
      detected.others_first_caught_by = first_by_others->caught_by;
    }
    return detected;
  }
  if (first_by_others) {
    first_by_others->seeds_run = result.seeds_run;
    return *first_by_others;
  }
  result.verdict = Verdict::undetected;
  return result;
}

nlohmann::json to_json(const MutantResult& r) {
  nlohmann::json expected = nlohmann::json::array();
  for (std::string_view id : r.variant->expected) expected.push_back(id);
  nlohmann::json j = {{"variant", r.variant->name},
                      {"origin", r.variant->origin},
                      {"breaks", r.variant->breaks},
                      {"expected", expected},
                      {"workload", r.variant->workload},
                      {"faults", r.variant->faults},
                      {"options", r.variant->options},
                      {"verdict", verdict_name(r.verdict)},
                      {"seeds_run", r.seeds_run},
                      {"caught_by", r.caught_by}};
  if (r.verdict == Verdict::unreachable) j["why_unreachable"] = r.variant->why_unreachable;
  if (r.detecting_seed) {
    j["seeds_to_detection"] = *r.detecting_seed + 1;
    j["detecting_seed"] = *r.detecting_seed;
    j["failure"] = r.failure;
    j["trace"] = r.trace_path;
    j["trace_events"] = r.trace_events;
  }
  if (r.others_first_seed) j["caught_first_by_others"] = {{"seed", *r.others_first_seed}, {"caught_by", r.others_first_caught_by}};
  if (r.detection_ms) j["simulated_ms_to_detection"] = *r.detection_ms;
  return j;
}

// " --opt KEY=VALUE" for each workload option of `v`.
std::string workload_options(const VariantInfo& v) {
  std::string text;
  for (const auto& [key, value] : v.options.items()) {
    text += " --opt ";
    text += key;
    text += '=';
    text += value.dump();
  }
  return text;
}

void print_list(std::ostream& out) {
  for (const VariantInfo& v : variant_registry()) {
    out << v.name << "  [" << v.origin << "]  expected " << joined(v.expected) << "\n    breaks: " << v.breaks << "\n";
    if (v.workload.empty())
      out << "    not reachable yet: " << v.why_unreachable << "\n";
    else
      out << "    exercised by: --workload " << v.workload << " --faults " << v.faults << workload_options(v) << "\n";
  }
}

void print_table(const std::vector<MutantResult>& results, const MutantsOptions& options, std::ostream& out) {
  out << format("%-40s %-22s %-22s %6s %14s %8s  %s\n", "variant", "expected", "caught by", "seeds", "sim ms", "events", "verdict");
  std::vector<uint64_t> seeds_to_detection;
  std::size_t caught = 0, scored = 0;
  for (const MutantResult& r : results) {
    std::string seeds = "-";
    if (r.detecting_seed) seeds = std::to_string(*r.detecting_seed + 1);
    else if (r.seeds_run) seeds = format(">%llu", static_cast<unsigned long long>(r.seeds_run));
    const std::string ms = r.detection_ms ? with_commas(static_cast<uint64_t>(*r.detection_ms)) : "-";
    const std::string events = r.detecting_seed ? with_commas(r.trace_events) : "-";
    out << format("%-40s %-22s %-22s %6s %14s %8s  %s\n", std::string(r.variant->name).c_str(), joined(r.variant->expected).c_str(),
                  joined(r.caught_by).c_str(), seeds.c_str(), ms.c_str(), events.c_str(), verdict_name(r.verdict));
    if (r.verdict == Verdict::unreachable) continue;
    ++scored;
    if (r.verdict == Verdict::caught) {
      ++caught;
      seeds_to_detection.push_back(*r.detecting_seed + 1);
    }
  }
  out << "\nmutation score: " << caught << "/" << scored << " caught by an expected invariant within " << options.seeds
      << " seeds";
  if (!seeds_to_detection.empty()) {
    std::sort(seeds_to_detection.begin(), seeds_to_detection.end());
    out << "; median seeds to detection " << seeds_to_detection[seeds_to_detection.size() / 2];
  }
  out << "\n";
  for (const MutantResult& r : results) {
    if (r.verdict == Verdict::caught_by_others)
      out << "  " << r.variant->name << " was caught only by " << joined(r.caught_by) << ", not by " << joined(r.variant->expected)
          << " (seed " << *r.detecting_seed << ": " << r.failure << ")\n";
    if (r.verdict == Verdict::undetected)
      out << "  " << r.variant->name << " went undetected in " << r.seeds_run << " seeds of --workload " << r.variant->workload << "\n";
    if (r.others_first_seed)
      out << "  " << r.variant->name << " was caught first by " << joined(r.others_first_caught_by) << " alone (seed "
          << *r.others_first_seed << "), by an expected invariant at seed " << *r.detecting_seed << "\n";
    if (r.detecting_seed) out << "  " << r.variant->name << ": detection saved as " << r.trace_path << "\n";
  }
}

}  // namespace

std::vector<const VariantInfo*> chosen_variants(const MutantsOptions& options) {
  if (options.seeds == 0) throw std::invalid_argument("--seeds must be at least 1");
  std::vector<const VariantInfo*> chosen;
  for (const std::string& name : options.variants) {
    require_known_variant(name);
    chosen.push_back(find_variant(name));
  }
  if (chosen.empty())
    for (const VariantInfo& v : variant_registry()) chosen.push_back(&v);
  return chosen;
}

int mutants_command(const MutantsOptions& options, std::ostream& out, std::ostream& err) {
  if (options.list) {
    print_list(out);
    return kExitOk;
  }
  std::vector<const VariantInfo*> chosen;
  std::filesystem::path trace_dir;
  try {
    chosen = chosen_variants(options);
    trace_dir = options.trace_dir ? std::filesystem::path(*options.trace_dir)
                : options.json     ? std::filesystem::path(*options.json).parent_path()
                                   : std::filesystem::path(".");
    if (trace_dir.empty()) trace_dir = ".";
    std::filesystem::create_directories(trace_dir);
    if (options.json) require_writable_output(*options.json);  // a bad path fails now, not after every variant
  } catch (const std::exception& e) {
    err << "durasim mutants: " << e.what() << "\n";
    return kExitBadInput;
  }

  std::vector<MutantResult> results;
  try {
    for (const VariantInfo* variant : chosen) {
      err << "durasim mutants: " << variant->name << "...\n";
      results.push_back(run_variant(*variant, options, trace_dir));
    }
  } catch (const std::exception& e) {
    err << "durasim mutants: " << e.what() << "\n";
    return kExitBadInput;
  }
  print_table(results, options, out);
  if (options.json) {
    nlohmann::json report = {{"seeds_budget", options.seeds}, {"variants", nlohmann::json::array()}};
    for (const MutantResult& r : results) report["variants"].push_back(to_json(r));
    try {
      write_output(*options.json, report.dump(2) + "\n");
    } catch (const std::invalid_argument& e) {
      err << "durasim mutants: " << e.what() << "\n";
      return kExitBadInput;
    }
  }
  const bool all_caught = std::all_of(results.begin(), results.end(), [](const MutantResult& r) {
    return r.verdict == Verdict::caught || r.verdict == Verdict::unreachable;
  });
  return all_caught ? kExitOk : kExitFailed;
}

}  // namespace durasim::cli
