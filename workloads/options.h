// Reading workload options (the `--opt KEY=VALUE` pairs of a run's configuration) with clear errors.
#pragma once

#include <cstdint>
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

}  // namespace durasim::workloads
