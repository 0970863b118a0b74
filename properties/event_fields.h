// Reading the fields of trace events, shared by the checkers: typed access that throws
// nlohmann::json errors on a missing or mistyped field (the checkers turn those into a clear
// "malformed event" error), and the number formatting of their violation messages. Each reader
// takes an event's fields (EventFields) or a JSON object nested in them alike.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace durasim::properties::fields {

inline std::string str(int64_t v) { return std::to_string(v); }
inline std::string str(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "none"; }
inline std::optional<int64_t> optInt(const nlohmann::json& v) {
  return v.is_null() ? std::nullopt : std::optional<int64_t>(v.get<int64_t>());
}
template <class Object>
int64_t num(const Object& e, std::string_view field) {
  return e.at(field).template get<int64_t>();
}
template <class Object>
std::string text(const Object& e, std::string_view field) {
  return e.at(field).template get<std::string>();
}
// The text of a string field in place (the same error as text() for any other value).
template <class Object>
const std::string& textRef(const Object& e, std::string_view field) {
  const nlohmann::json& value = e.at(field);
  if (!value.is_string()) (void)value.template get<std::string>();  // throws text()'s type_error
  return value.template get_ref<const std::string&>();
}
template <class Object>
std::vector<int64_t> ints(const Object& e, std::string_view field) {
  return e.at(field).template get<std::vector<int64_t>>();
}
template <class Object>
std::vector<std::string> strings(const Object& e, std::string_view field) {
  return e.at(field).template get<std::vector<std::string>>();
}

}  // namespace durasim::properties::fields
