// Reading workload options (the `--opt KEY=VALUE` pairs of a run's configuration) with clear errors.
#pragma once

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace durasim::workloads {

// options[key] as a positive integer, or `fallback` when absent; std::invalid_argument otherwise.
inline int64_t positive_option(const nlohmann::json& options, const std::string& workload, const char* key,
                               int64_t fallback) {
  if (!options.contains(key)) return fallback;
  const nlohmann::json& value = options.at(key);
  if (!value.is_number_integer() || value.get<int64_t>() <= 0)
    throw std::invalid_argument(workload + " workload option '" + key + "' must be a positive integer");
  return value.get<int64_t>();
}

// options[key] as a non-negative integer, or `fallback` when absent; std::invalid_argument otherwise.
inline int64_t count_option(const nlohmann::json& options, const std::string& workload, const char* key, int64_t fallback) {
  if (!options.contains(key)) return fallback;
  const nlohmann::json& value = options.at(key);
  if (!value.is_number_integer() || value.get<int64_t>() < 0)
    throw std::invalid_argument(workload + " workload option '" + key + "' must be a non-negative integer");
  return value.get<int64_t>();
}

// options[key] as a boolean, false when absent; std::invalid_argument otherwise.
inline bool flag_option(const nlohmann::json& options, const std::string& workload, const char* key) {
  if (!options.contains(key)) return false;
  const nlohmann::json& value = options.at(key);
  if (!value.is_boolean()) throw std::invalid_argument(workload + " workload option '" + key + "' must be true or false");
  return value.get<bool>();
}

// Rejects any option key not in `known`, so a mistyped option is an error rather than ignored.
inline void reject_unknown_options(const nlohmann::json& options, const std::string& workload,
                                   std::initializer_list<const char*> known) {
  for (const auto& [key, value] : options.items()) {
    if (std::none_of(known.begin(), known.end(), [&](const char* k) { return key == k; })) {
      std::string list;
      for (const char* k : known) list += (list.empty() ? "" : ", ") + std::string(k);
      throw std::invalid_argument(workload + " workload has no option '" + key + "' (options: " + list + ")");
    }
  }
}

}  // namespace durasim::workloads
