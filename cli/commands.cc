// `durasim run`, `durasim replay` and `durasim properties`; see commands.h.
#include "cli/commands.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "cli/campaign_report.h"
#include "cli/progress.h"
#include "cli/seed_run.h"
#include "cli/user_io.h"
#include "cli/variants.h"
#include "cli/workers.h"
#include "properties/registry.h"
#include "traces/recorder.h"
#include "traces/trace_file.h"

namespace durasim::cli {
namespace {

constexpr uint64_t kDefaultFirstSeed = 0, kDefaultLastSeed = 99;  // the default campaign, per workload

uint64_t parse_u64(const std::string& text, const std::string& what) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    throw std::invalid_argument(what + " must be an unsigned integer, got '" + text + "'");
  try {
    return std::stoull(text);
  } catch (const std::out_of_range&) {
    throw std::invalid_argument(what + " is out of range: '" + text + "'");
  }
}

workloads::RunConfig build_config(const RunOptions& options, const std::string& workload) {
  workloads::RunConfig config;
  config.workload = workload;
  config.faults = options.faults;
  if (options.start_time) config.start_time = *options.start_time;
  if (options.safety_ms) config.safety_ms = *options.safety_ms;
  if (options.liveness_ms) config.liveness_ms = *options.liveness_ms;
  if (options.max_events) config.limits.total = *options.max_events;
  if (options.max_events_per_instant) config.limits.per_instant = *options.max_events_per_instant;
  for (const std::string& name : options.variants) {
    require_known_variant(name);
    config.variants.insert(name);
  }
  for (const auto& [key, text] : options.workload_options) {
    nlohmann::json value;
    try {
      value = traces::parse_bounded_json(text, traces::kMaxOptionDepth);  // what a trace header holds
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument("--opt " + key + ": " + e.what());
    }
    config.options[key] = value.is_discarded() ? nlohmann::json(text) : value;
  }
  // Round-trip through JSON so the CLI accepts exactly what a trace header may hold.
  config = workloads::RunConfig::from_json(config.to_json());
  validate(config);
  return config;
}

std::string upper(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::toupper(c); });
  return text;
}

std::string family_list() {
  std::string list;
  for (const properties::InvariantFamily& family : properties::invariant_families())
    list += list.empty() ? std::string(family.id) : ", " + std::string(family.id);
  return list;
}

// The families named by --family (each value may be a comma list), upper-cased and checked.
std::set<std::string> selected_families(const std::vector<std::string>& values) {
  std::set<std::string> selected;
  for (const std::string& value : values) {
    std::size_t start = 0;
    while (true) {
      const std::size_t comma = value.find(',', start);
      const std::string name = upper(value.substr(start, comma - start));
      const auto& families = properties::invariant_families();
      if (std::none_of(families.begin(), families.end(), [&](const auto& f) { return f.id == name; }))
        throw std::invalid_argument("unknown family '" + name + "' (families: " + family_list() + ")");
      selected.insert(name);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  return selected;
}

// Names the bad ID and, when its family exists, the family's range.
std::string unknown_id_message(const std::string& id) {
  std::string message = "unknown invariant id '" + id + "'";
  const std::string family = upper(id.substr(0, id.find('-')));
  std::vector<std::string_view> members;
  for (const properties::Invariant& invariant : properties::invariant_registry())
    if (invariant.family == family) members.push_back(invariant.id);
  if (!members.empty())
    message += " (" + family + " has " + std::string(members.front()) + ".." + std::string(members.back()) + ")";
  return message + "; durasim properties lists them all";
}

std::string entry_line(const properties::Invariant& i) {
  return std::string(i.id) + "  [" + std::string(i.kinds) + "]  " + std::string(i.title) + " — " + std::string(i.statement);
}

}  // namespace

std::pair<uint64_t, uint64_t> parse_seed_range(const std::string& text) {
  const auto dots = text.find("..");
  if (dots == std::string::npos) throw std::invalid_argument("--seeds must look like A..B, got '" + text + "'");
  const uint64_t first = parse_u64(text.substr(0, dots), "--seeds start");
  const uint64_t last = parse_u64(text.substr(dots + 2), "--seeds end");
  if (first > last) throw std::invalid_argument("--seeds " + text + " is empty (start after end)");
  return {first, last};
}

Campaign plan_campaign(const RunOptions& options) {
  if (options.seed && options.seeds) throw std::invalid_argument("give --seed or --seeds, not both");
  std::pair<uint64_t, uint64_t> range{kDefaultFirstSeed, kDefaultLastSeed};
  if (options.seed) range = {*options.seed, *options.seed};
  if (options.seeds) range = parse_seed_range(*options.seeds);
  Campaign campaign;
  campaign.seeds = make_slice(range.first, range.second, options.shard ? parse_shard(*options.shard) : Shard{});
  if (options.jobs < 1 || options.jobs > kMaxJobs)
    throw std::invalid_argument("--jobs must be in [1, " + std::to_string(kMaxJobs) + "], got " + std::to_string(options.jobs));
  if (!options.workload && !options.workload_options.empty())
    throw std::invalid_argument("--opt needs --workload: every workload has options of its own");
  if (options.workload) {
    campaign.configs.push_back(build_config(options, *options.workload));
  } else {
    for (const workloads::WorkloadInfo& info : workloads::workload_registry()) campaign.configs.push_back(build_config(options, info.name));
  }
  if (options.save_trace) {
    if (range.first != range.second && options.save_trace->find("{seed}") == std::string::npos)
      throw std::invalid_argument("--save-trace with several seeds needs '{seed}' in the file name");
    if (campaign.configs.size() > 1 && options.save_trace->find("{workload}") == std::string::npos)
      throw std::invalid_argument("--save-trace with several workloads needs '{workload}' in the file name (or give --workload)");
  }
  if (options.failure_dir.empty()) throw std::invalid_argument("--failure-dir must name a directory");
  campaign.check_determinism = options.check_determinism;
  campaign.save_trace = options.save_trace;
  campaign.failure_dir = options.failure_dir;
  return campaign;
}

int run_command(const RunOptions& options, std::ostream& out, std::ostream& err) {
  Campaign campaign;
  std::unique_ptr<std::ofstream> json, junit;
  try {
    campaign = plan_campaign(options);
    if (options.json) json = open_output(*options.json);
    if (options.junit) junit = open_output(*options.junit);
  } catch (const std::exception& e) {
    err << "durasim run: " << e.what() << "\n";
    return kExitBadInput;
  }

  Progress progress(err, campaign.tasks(), options.progress);
  CampaignReport report(campaign, {out, options.verbose, json.get(), junit.get(), &progress});
  std::optional<std::string> stopped;  // a trace that could not be written stops the campaign
  const auto wall_start = std::chrono::steady_clock::now();
  std::optional<LostTask> lost;
  try {
    lost = run_tasks(
        campaign.tasks(), options.jobs, [&](uint64_t k) { return json_line(to_json(run_task(campaign, k))); },
        [&](uint64_t, const std::string& line) {
          const SeedResult result = seed_result_from_json(nlohmann::json::parse(line));
          if (!result.error.empty()) {
            stopped = result.error;
            return false;
          }
          report.add(result);
          progress.advance();
          return true;
        });
  } catch (const std::exception& e) {  // the workers could not be started, or a run broke in this process
    progress.clear();
    err << "durasim run: " << e.what() << "\n";
    return kExitFailed;
  }
  progress.clear();
  if (stopped) {
    err << "durasim run: " << *stopped << "\n";
    return kExitBadInput;
  }
  if (lost) {
    const auto [index, seed] = campaign.task(lost->task);
    err << "durasim run: " << lost->why << " while running seed " << seed << " of workload " << campaign.configs[index].workload
        << "; run that seed alone to see why\n";
    return kExitFailed;
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  const int code = report.finish({wall, options.jobs, 0}, err);
  try {
    close_output(json, options.json.value_or(""));
    close_output(junit, options.junit.value_or(""));
  } catch (const std::exception& e) {
    err << "durasim run: " << e.what() << "\n";
    return kExitBadInput;
  }
  return code;
}

namespace {

// "ALM-14 3x, RT-14 1x" from a {"ID": [checked, violated]} summary; "none" when nothing was violated.
std::string violated_list(const nlohmann::json& summary) {
  std::string list;
  for (const auto& [id, counts] : summary.items()) {
    if (!counts.is_array() || counts.size() != 2 || !counts[1].is_number_unsigned() || counts[1].get<uint64_t>() == 0) continue;
    list += (list.empty() ? "" : ", ") + id + " " + std::to_string(counts[1].get<uint64_t>()) + "x";
  }
  return list.empty() ? "none" : list;
}

// What the trace concluded, in the words of violated_list.
std::string recorded_line(const RecordedVerdict& recorded) {
  if (recorded.aborted) return "run aborted: " + *recorded.aborted;
  if (!recorded.invariants) return "not recorded (the trace holds no run.end event)";
  std::string line = violated_list(*recorded.invariants);
  if (recorded.drained == false) line += "; the run did not drain";
  return line;
}

}  // namespace

int replay_command(const std::string& path, bool verbose, std::ostream& out, std::ostream& err) {
  traces::TraceFile trace;
  ReplayOutcome outcome;
  try {
    trace = traces::load_trace(path);
    for (const std::string& name : workloads::RunConfig::from_json(trace.config).variants) require_known_variant(name);
    outcome = replay(trace);
  } catch (const std::exception& e) {
    err << "durasim replay: " << e.what() << "\n";
    return kExitBadInput;
  }
  if (outcome.matched) {
    out << "replay ok: " << outcome.events << " events, hash " << traces::hash_hex(outcome.hash)
        << " matches the trace (seed " << trace.seed << ", " << trace.choices.choices.size() << " choices)\n";
  } else if (outcome.verdict_only) {
    out << "replay ok up to its verdict: the " << trace.events.size() - 1 << " events of the run match the trace (seed " << trace.seed
        << "); the closing verdict differs, as the checks changed since the recording\n";
  } else {
    out << "replay DIVERGED from " << path << "\n";
    if (outcome.divergence) out << "  " << outcome.divergence->describe() << "\n";
    if (outcome.choice_divergence) out << "  " << *outcome.choice_divergence << "\n";
    if (!outcome.divergence && !outcome.choice_divergence)
      out << "  final hash " << traces::hash_hex(outcome.hash) << " != recorded " << traces::hash_hex(trace.hash) << "\n";
    if (verbose) out << "  replayed " << outcome.events << " events of " << trace.events.size() << "\n";
  }
  // The verdict, recorded beside replayed: a failure trace replays to its failure, and says so.
  const std::string recorded = recorded_line(outcome.recorded);
  out << "  invariants violated, recorded: " << recorded << "\n";
  if (!outcome.matched && !outcome.verdict_only) {
    out << "  invariants violated, replayed: not judged (the replay stopped at the divergence)\n";
    return kExitFailed;
  }
  std::string replayed = outcome.run.error ? "run aborted: " + *outcome.run.error : violated_list(tally_summary(outcome.run.tallies));
  if (!outcome.run.error && !outcome.run.phases.drained) replayed += "; the run did not drain";
  out << "  invariants violated, replayed: " << replayed << (replayed == recorded ? " (as recorded)" : " (DIFFERS from the trace)")
      << "\n";
  if (outcome.run.passed()) return kExitOk;
  out << "  FAILED " << outcome.run.failure() << "\n";
  return kExitFailed;
}

std::size_t report_unknown_invariants(const sim::Tallies& tallies, std::ostream& err) {
  std::size_t unknown = 0;
  for (const auto& [id, tally] : tallies.by_id()) {
    if (properties::find_invariant(id)) continue;
    err << "durasim run: unknown invariant id " << id << " (not in spec/invariants-*.md)\n";
    ++unknown;
  }
  return unknown;
}

std::vector<const properties::Invariant*> select_invariants(const PropertiesOptions& options) {
  if (options.id && !options.families.empty()) throw std::invalid_argument("give --id or --family, not both");
  std::vector<const properties::Invariant*> shown;
  if (options.id) {
    const properties::Invariant* invariant = properties::find_invariant(upper(*options.id));
    if (!invariant) throw std::invalid_argument(unknown_id_message(*options.id));
    shown.push_back(invariant);
  } else {
    const std::set<std::string> families = selected_families(options.families);
    for (const properties::Invariant& invariant : properties::invariant_registry())
      if (families.empty() || families.count(std::string(invariant.family))) shown.push_back(&invariant);
  }
  return shown;
}

int properties_command(const PropertiesOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<const properties::Invariant*> shown;
  try {
    shown = select_invariants(options);
  } catch (const std::exception& e) {
    err << "durasim properties: " << e.what() << "\n";
    return kExitBadInput;
  }

  if (options.json) {
    nlohmann::ordered_json list = nlohmann::ordered_json::array();
    for (const properties::Invariant* i : shown)
      list.push_back({{"id", i->id}, {"family", i->family}, {"title", i->title}, {"kinds", i->kinds}, {"statement", i->statement}});
    out << list.dump(2) << "\n";
    return kExitOk;
  }
  if (options.id) {
    out << entry_line(*shown.front()) << "\n";
    return kExitOk;
  }
  std::size_t families_shown = 0;
  for (const properties::InvariantFamily& family : properties::invariant_families()) {
    std::vector<const properties::Invariant*> members;
    for (const properties::Invariant* i : shown)
      if (i->family == family.id) members.push_back(i);
    if (members.empty()) continue;
    out << (families_shown++ ? "\n" : "") << family.id << " — " << family.name << ": " << members.size()
        << (members.size() == 1 ? " invariant" : " invariants") << "\n";
    for (const properties::Invariant* i : members) out << entry_line(*i) << "\n";
  }
  out << "\n" << shown.size() << " invariants in " << families_shown << (families_shown == 1 ? " family" : " families") << "\n";
  return kExitOk;
}

}  // namespace durasim::cli
