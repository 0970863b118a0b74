// Running one task of a campaign; see campaign.h.
#include "cli/campaign.h"

#include <chrono>
#include <filesystem>

#include "traces/trace_file.h"

namespace durasim::cli {
namespace {

// RT-01 and RT-23 are checked on every 16th seed by default (each check runs the seed twice more);
// --check-determinism checks every seed.
constexpr uint64_t kDeterminismSampleEvery = 16;

void replace_all(std::string& text, const std::string& placeholder, const std::string& value) {
  for (auto at = text.find(placeholder); at != std::string::npos; at = text.find(placeholder, at + value.size()))
    text.replace(at, placeholder.size(), value);
}

// Where a failing seed's trace goes when no --save-trace pattern covers it.
std::string failure_trace_path(const std::string& dir, const std::string& workload, uint64_t seed) {
  std::filesystem::create_directories(dir);
  std::string name = workload;
  name += "-seed-" + std::to_string(seed) + ".trace";
  return (std::filesystem::path(dir) / name).string();
}

}  // namespace

std::pair<std::size_t, uint64_t> Campaign::task(uint64_t k) const {
  const uint64_t per_workload = seeds.size();
  return {static_cast<std::size_t>(k / per_workload), seeds.seed_at(k % per_workload)};
}

SeedResult run_task(const Campaign& campaign, uint64_t k) {
  const auto wall_start = std::chrono::steady_clock::now();
  const auto [index, seed] = campaign.task(k);
  const workloads::RunConfig& config = campaign.configs.at(index);
  traces::TraceFile trace;
  const bool determinism = campaign.check_determinism || seed % kDeterminismSampleEvery == 0;
  const bool keep_trace = campaign.save_trace || determinism;
  SeedOutcome outcome = run_seed(config, seed, keep_trace ? &trace : nullptr);
  if (determinism) check_determinism(config, trace, outcome);
  SeedResult result = seed_result(config.workload, outcome);
  if (!result.passed) result.reproduce = reproduce_command(config, seed);
  try {
    if (campaign.save_trace) {
      result.trace = trace_path(*campaign.save_trace, config.workload, seed);
    } else if (!result.passed) {
      if (!keep_trace) run_seed(config, seed, &trace);  // the same run again, recorded: runs are deterministic (RT-01)
      result.trace = failure_trace_path(campaign.failure_dir, config.workload, seed);
    }
    if (!result.trace.empty()) traces::write_trace(result.trace, trace);
  } catch (const std::exception& e) {
    result.error = e.what();
  }
  result.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  return result;
}

std::string trace_path(const std::string& pattern, const std::string& workload, uint64_t seed) {
  std::string path = pattern;
  replace_all(path, "{seed}", std::to_string(seed));
  replace_all(path, "{workload}", workload);
  return path;
}

std::string shell_word(const std::string& text) {
  const bool plain = !text.empty() && text.find_first_not_of(
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.,:=/+@%") == std::string::npos;
  if (plain) return text;
  std::string quoted = "'";
  for (char c : text) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return quoted + "'";
}

std::string reproduce_command(const workloads::RunConfig& config, uint64_t seed) {
  const workloads::RunConfig defaults;
  std::string command = "durasim run --workload " + shell_word(config.workload) + " --faults " + config.faults;
  if (config.start_time) command += " --start-time " + std::to_string(*config.start_time);
  if (config.safety_ms != defaults.safety_ms) command += " --safety-ms " + std::to_string(config.safety_ms);
  if (config.liveness_ms != defaults.liveness_ms) command += " --liveness-ms " + std::to_string(config.liveness_ms);
  if (config.limits.total != defaults.limits.total) command += " --max-events " + std::to_string(config.limits.total);
  if (config.limits.per_instant != defaults.limits.per_instant)
    command += " --max-events-per-instant " + std::to_string(config.limits.per_instant);
  for (const std::string& variant : config.variants) command += " --variant " + shell_word(variant);
  for (const auto& [key, value] : config.options.items())
    command += " --opt " + shell_word(key + "=" + (value.is_string() ? value.get<std::string>() : value.dump()));
  return command + " --seed " + std::to_string(seed) + " --save-trace seed-" + std::to_string(seed) + ".trace";
}

}  // namespace durasim::cli
