// Building a JSON object member by member. nlohmann::json's initializer-list constructor makes each
// {"key", value} pair a two-element array, checks that every element is such a pair, and moves each
// into the object (about a thousand instructions a member, most of them allocating and dropping the
// arrays); jsonObject puts each member in place. jsonObject({{"a", 1}, {"b", x}}) is the object that
// nlohmann::json({{"a", 1}, {"b", x}}) builds: the same members with the same values (of the same
// types), the first of a repeated key kept, so it replaces such an initializer list one for one.
// (JsonFields in engine/runtime.h builds an object by chained add() calls, a later key replacing.)
#pragma once

#include <initializer_list>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

namespace durasim {

struct JsonMember {
  JsonMember(std::string_view k, nlohmann::json v) : key(k), value(std::move(v)) {}
  std::string_view key;
  // Mutable so that jsonObject can move it out of its initializer list, whose elements are const
  // temporaries that live until the end of the call's full expression.
  mutable nlohmann::json value;
};

inline nlohmann::json jsonObject(std::initializer_list<JsonMember> members) {
  nlohmann::json object(nlohmann::json::value_t::object);
  nlohmann::json::object_t& map = object.get_ref<nlohmann::json::object_t&>();
  for (const JsonMember& member : members) map.emplace(member.key, std::move(member.value));
  return object;
}

}  // namespace durasim
