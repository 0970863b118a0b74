// One seed's record and its JSON line; see seed_result.h.
#include "cli/seed_result.h"

#include <algorithm>
#include <stdexcept>

#include "cli/campaign.h"
#include "traces/recorder.h"

namespace durasim::cli {
namespace {

const nlohmann::json& field(const nlohmann::json& j, const char* key) {
  const auto it = j.find(key);
  if (it == j.end()) throw std::invalid_argument(std::string("field '") + key + "' is missing");
  return *it;
}

uint64_t unsigned_field(const nlohmann::json& j, const char* key) {
  const nlohmann::json& value = field(j, key);
  if (!value.is_number_unsigned()) throw std::invalid_argument(std::string("field '") + key + "' is not an unsigned integer");
  return value.get<uint64_t>();
}

std::string string_field(const nlohmann::json& j, const char* key) {
  if (!j.contains(key)) return "";
  const nlohmann::json& value = j.at(key);
  if (!value.is_string()) throw std::invalid_argument(std::string("field '") + key + "' is not a string");
  return value.get<std::string>();
}

uint64_t parse_hash(const nlohmann::json& j) {
  const nlohmann::json& value = field(j, "hash");
  const std::string text = value.is_string() ? value.get<std::string>() : "";
  if (text.size() != 16 || text.find_first_not_of("0123456789abcdef") != std::string::npos)
    throw std::invalid_argument("field 'hash' is not 16 hex digits");
  return std::stoull(text, nullptr, 16);
}

// [a, b] of unsigned integers, or [a, b, c].
std::vector<uint64_t> counts(const nlohmann::json& value, std::size_t size, const std::string& what) {
  if (!value.is_array() || value.size() != size) throw std::invalid_argument(what + " is not an array of " + std::to_string(size) + " counts");
  std::vector<uint64_t> out;
  for (const nlohmann::json& n : value) {
    if (!n.is_number_unsigned()) throw std::invalid_argument(what + " holds something other than an unsigned integer");
    out.push_back(n.get<uint64_t>());
  }
  return out;
}

std::optional<sim::FaultKind> fault_kind(const std::string& name) {
  for (std::size_t i = 0; i < sim::kFaultKindCount; ++i)
    if (sim::fault_name(static_cast<sim::FaultKind>(i)) == name) return static_cast<sim::FaultKind>(i);
  return std::nullopt;
}

faults::FaultAccounting no_faults() {
  faults::FaultAccounting accounting{};
  for (std::size_t i = 0; i < accounting.size(); ++i) accounting[i].kind = static_cast<sim::FaultKind>(i);
  return accounting;
}

}  // namespace

SeedResult seed_result(const std::string& workload, const SeedOutcome& outcome) {
  SeedResult result;
  result.workload = workload;
  result.seed = outcome.seed;
  result.hash = outcome.hash;
  result.failure = outcome.failure();
  result.passed = result.failure.empty();
  for (const auto& [id, tally] : outcome.tallies.by_id()) result.invariants[id] = {tally.checked, tally.violated};
  result.faults = outcome.faults;
  for (faults::FaultCount& count : result.faults) count.rate_ppm = 0;
  result.buggify = outcome.buggify;
  result.executor_events = outcome.executor_events;
  result.trace_events = outcome.trace_events;
  result.simulated_ms = outcome.simulated_ms;
  return result;
}

bool operator==(const SeedResult& a, const SeedResult& b) {
  const auto same_faults = [](const faults::FaultCount& x, const faults::FaultCount& y) {
    return x.kind == y.kind && x.enabled == y.enabled && x.rate_ppm == y.rate_ppm && x.opportunities == y.opportunities &&
           x.firings == y.firings;
  };
  const auto same_sites = [](const auto& x, const auto& y) {
    return x.first == y.first && x.second.enabled == y.second.enabled && x.second.calls == y.second.calls && x.second.fires == y.second.fires;
  };
  return a.workload == b.workload && a.seed == b.seed && a.hash == b.hash && a.passed == b.passed && a.failure == b.failure &&
         a.reproduce == b.reproduce && a.trace == b.trace && a.error == b.error && a.invariants == b.invariants &&
         std::equal(a.faults.begin(), a.faults.end(), b.faults.begin(), same_faults) &&
         std::equal(a.buggify.begin(), a.buggify.end(), b.buggify.begin(), b.buggify.end(), same_sites) && a.executor_events == b.executor_events &&
         a.trace_events == b.trace_events && a.simulated_ms == b.simulated_ms && a.wall_s == b.wall_s;
}

nlohmann::ordered_json to_json(const SeedResult& r) {
  nlohmann::ordered_json violated = nlohmann::ordered_json::object(), invariants = nlohmann::ordered_json::object();
  for (const auto& [id, tally] : r.invariants) {
    invariants[id] = {tally.first, tally.second};
    if (tally.second > 0) violated[id] = tally.second;
  }
  nlohmann::ordered_json fired = nlohmann::ordered_json::array(), faults = nlohmann::ordered_json::object();
  for (const faults::FaultCount& count : r.faults) {
    const std::string name(sim::fault_name(count.kind));
    if (count.firings > 0) fired.push_back(name);
    if (count.enabled || count.opportunities > 0 || count.firings > 0) faults[name] = {count.enabled ? 1 : 0, count.opportunities, count.firings};
  }
  nlohmann::ordered_json j = {{"type", "seed"},      {"workload", r.workload}, {"seed", r.seed},
                              {"hash", traces::hash_hex(r.hash)}, {"passed", r.passed}, {"violated", violated},
                              {"fired", fired}};
  if (!r.failure.empty()) j["failure"] = r.failure;
  if (!r.reproduce.empty()) j["reproduce"] = r.reproduce;
  if (!r.trace.empty()) j["trace"] = r.trace;
  if (!r.error.empty()) j["error"] = r.error;
  j["invariants"] = invariants;
  j["faults"] = faults;
  nlohmann::ordered_json buggify = nlohmann::ordered_json::object();
  for (const auto& [site, count] : r.buggify) buggify[site] = {count.enabled ? 1 : 0, count.calls, count.fires};
  j["buggify"] = buggify;
  j["executor_events"] = r.executor_events;
  j["trace_events"] = r.trace_events;
  j["simulated_ms"] = r.simulated_ms;
  j["wall_s"] = r.wall_s;
  return j;
}

SeedResult seed_result_from_json(const nlohmann::json& j) {
  if (!j.is_object() || string_field(j, "type") != "seed") throw std::invalid_argument("not a seed record");
  SeedResult r;
  r.workload = string_field(j, "workload");
  if (r.workload.empty()) throw std::invalid_argument("field 'workload' is missing");
  r.seed = unsigned_field(j, "seed");
  r.hash = parse_hash(j);
  if (!field(j, "passed").is_boolean()) throw std::invalid_argument("field 'passed' is not a boolean");
  r.passed = j.at("passed").get<bool>();
  r.failure = string_field(j, "failure");
  r.reproduce = string_field(j, "reproduce");
  r.trace = string_field(j, "trace");
  r.error = string_field(j, "error");
  if (r.passed != r.failure.empty()) throw std::invalid_argument("fields 'passed' and 'failure' disagree");
  const nlohmann::json& invariants = field(j, "invariants");
  if (!invariants.is_object()) throw std::invalid_argument("field 'invariants' is not an object");
  for (const auto& [id, value] : invariants.items()) {
    const std::vector<uint64_t> n = counts(value, 2, "invariant " + id);
    r.invariants[id] = {n[0], n[1]};
  }
  const nlohmann::json& faults = field(j, "faults");
  if (!faults.is_object()) throw std::invalid_argument("field 'faults' is not an object");
  r.faults = no_faults();
  for (const auto& [name, value] : faults.items()) {
    const std::optional<sim::FaultKind> kind = fault_kind(name);
    if (!kind) throw std::invalid_argument("unknown fault '" + name + "'");
    const std::vector<uint64_t> n = counts(value, 3, "fault " + name);
    faults::FaultCount& count = r.faults[static_cast<std::size_t>(*kind)];
    count.enabled = n[0] != 0;
    count.opportunities = n[1];
    count.firings = n[2];
  }
  if (j.contains("buggify")) {
    const nlohmann::json& buggify = j.at("buggify");
    if (!buggify.is_object()) throw std::invalid_argument("field 'buggify' is not an object");
    for (const auto& [site, value] : buggify.items()) {
      const std::vector<uint64_t> n = counts(value, 3, "buggify site " + site);
      r.buggify[site] = faults::BuggifyCount{n[0] != 0, n[1], n[2]};
    }
  }
  r.executor_events = unsigned_field(j, "executor_events");
  r.trace_events = unsigned_field(j, "trace_events");
  if (!field(j, "simulated_ms").is_number_integer()) throw std::invalid_argument("field 'simulated_ms' is not an integer");
  r.simulated_ms = j.at("simulated_ms").get<int64_t>();
  if (!field(j, "wall_s").is_number()) throw std::invalid_argument("field 'wall_s' is not a number");
  r.wall_s = j.at("wall_s").get<double>();
  return r;
}

std::string verbose_line(const SeedResult& r) {
  std::string line = "seed ";
  line += std::to_string(r.seed);
  line += " hash " + traces::hash_hex(r.hash) + " events " + std::to_string(r.trace_events) + " simulated_ms " +
          std::to_string(r.simulated_ms) + (r.passed ? " ok" : " FAILED");
  return line;
}

std::string failure_text(const SeedResult& r) {
  std::string text = "seed ";
  text += std::to_string(r.seed);
  text += ": " + r.failure + "\n    reproduce: " + r.reproduce;
  if (!r.trace.empty()) text += "\n    replay: durasim replay " + shell_word(r.trace);
  return text;
}

std::string json_line(const nlohmann::ordered_json& j) { return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace); }

}  // namespace durasim::cli
