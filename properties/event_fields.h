// Reading the fields of trace events, shared by the checkers: typed access that throws
// nlohmann::json errors on a missing or mistyped field (the checkers turn those into a clear
// "malformed event" error), and the number formatting of their violation messages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace durasim::properties::fields {

inline std::string str(int64_t v) { return std::to_string(v); }
inline std::string str(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "none"; }
inline std::optional<int64_t> optInt(const nlohmann::json& v) {
  return v.is_null() ? std::nullopt : std::optional<int64_t>(v.get<int64_t>());
}
inline int64_t num(const nlohmann::json& e, const char* field) { return e.at(field).get<int64_t>(); }
inline std::string text(const nlohmann::json& e, const char* field) { return e.at(field).get<std::string>(); }
inline std::vector<int64_t> ints(const nlohmann::json& e, const char* field) {
  return e.at(field).get<std::vector<int64_t>>();
}
inline std::vector<std::string> strings(const nlohmann::json& e, const char* field) {
  return e.at(field).get<std::vector<std::string>>();
}

}  // namespace durasim::properties::fields
