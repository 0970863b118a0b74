// Building a JSON object field by field, for the trace events and probes every run emits by the
// tens of thousands. nlohmann::json's initializer-list syntax ({{"key", value}, ...}) first builds a
// two-element array per field and then moves it into the object: about twice the allocations and
// time of inserting the fields directly, which is what this does. The object is the same either way,
// so traces and their hashes do not depend on which one built an event.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace durasim {

class JsonFields {
 public:
  JsonFields() : json_(nlohmann::json::value_t::object) {}

  // Sets `key` to `value` (a later call with the same key replaces the earlier value).
  template <class Value>
  JsonFields& add(std::string_view key, Value&& value) & {
    object().insert_or_assign(std::string(key), nlohmann::json(std::forward<Value>(value)));
    return *this;
  }
  template <class Value>
  JsonFields&& add(std::string_view key, Value&& value) && {
    return std::move(add(key, std::forward<Value>(value)));
  }

  nlohmann::json take() && { return std::move(json_); }
  operator nlohmann::json() && { return std::move(json_); }

 private:
  nlohmann::json::object_t& object() { return json_.get_ref<nlohmann::json::object_t&>(); }

  nlohmann::json json_;
};

// An optional as JSON: its value, or null.
template <class T>
nlohmann::json json_or_null(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

}  // namespace durasim
