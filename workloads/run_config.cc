// RunConfig <-> JSON with validation; see run_config.h.
#include "workloads/run_config.h"

#include <stdexcept>

#include "faults/fault_plan.h"

namespace durasim::workloads {
namespace {

uint64_t positive(const nlohmann::json& j, const char* field, uint64_t fallback) {
  if (!j.contains(field)) return fallback;
  const nlohmann::json& value = j.at(field);
  if (!value.is_number_unsigned() || value.get<uint64_t>() == 0)
    throw std::invalid_argument(std::string("config field '") + field + "' must be an integer >= 1");
  return value.get<uint64_t>();
}

int64_t non_negative(const nlohmann::json& j, const char* field, int64_t fallback) {
  if (!j.contains(field)) return fallback;
  const nlohmann::json& value = j.at(field);
  if (!value.is_number_integer() || value.get<int64_t>() < 0)
    throw std::invalid_argument(std::string("config field '") + field + "' must be an integer >= 0");
  return value.get<int64_t>();
}

}  // namespace

nlohmann::json RunConfig::to_json() const {
  nlohmann::json j = {{"workload", workload},
                      {"faults", faults},
                      {"safety_ms", safety_ms},
                      {"liveness_ms", liveness_ms},
                      {"options", options}};
  if (start_time) j["start_time"] = *start_time;
  if (!variants.empty()) j["variants"] = variants;
  if (limits.per_instant != sim::EventLimits::kDefaultPerInstant) j["max_events_per_instant"] = limits.per_instant;
  if (limits.total != sim::EventLimits::kDefaultTotal) j["max_events"] = limits.total;
  return j;
}

RunConfig RunConfig::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw std::invalid_argument("config must be a JSON object");
  RunConfig config;
  if (j.contains("workload")) {
    if (!j.at("workload").is_string()) throw std::invalid_argument("config field 'workload' must be a string");
    config.workload = j.at("workload").get<std::string>();
  }
  if (j.contains("faults")) {
    if (!j.at("faults").is_string()) throw std::invalid_argument("config field 'faults' must be a string");
    config.faults = j.at("faults").get<std::string>();
    faults::parse_profile_kind(config.faults);  // rejects anything but none|recoverable|arbitrary
  }
  if (j.contains("start_time")) config.start_time = non_negative(j, "start_time", 0);
  config.safety_ms = non_negative(j, "safety_ms", config.safety_ms);
  config.liveness_ms = non_negative(j, "liveness_ms", config.liveness_ms);
  config.limits.per_instant = positive(j, "max_events_per_instant", config.limits.per_instant);
  config.limits.total = positive(j, "max_events", config.limits.total);
  if (j.contains("variants")) {
    const nlohmann::json& names = j.at("variants");
    if (!names.is_array()) throw std::invalid_argument("config field 'variants' must be an array of strings");
    for (const nlohmann::json& name : names) {
      if (!name.is_string()) throw std::invalid_argument("config field 'variants' must be an array of strings");
      config.variants.insert(name.get<std::string>());
    }
  }
  if (j.contains("options")) {
    if (!j.at("options").is_object()) throw std::invalid_argument("config field 'options' must be an object");
    config.options = j.at("options");
  }
  config.check_times();
  return config;
}

void RunConfig::check_times() const {
  const auto at_most = [](const char* field, sim::SimTime value, sim::SimTime limit) {
    if (value < 0 || value > limit)
      throw std::invalid_argument(std::string(field) + " must be in [0, " + std::to_string(limit) + "], got " + std::to_string(value));
  };
  if (start_time) at_most("start_time", *start_time, kMaxStartTime);
  at_most("safety_ms", safety_ms, kMaxPhaseMs);
  at_most("liveness_ms", liveness_ms, kMaxPhaseMs);
}

sim::SimTime start_time_of(const RunConfig& config, sim::RandomSource& random) {
  return config.start_time ? *config.start_time : faults::draw_start_time(random);
}

}  // namespace durasim::workloads
