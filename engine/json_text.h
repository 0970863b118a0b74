// Reading JSON text into nlohmann::json: the same value, of the same types, and the same exceptions
// as nlohmann::json::parse, at a fraction of its cost on the text the engine stores and reads back
// at every step (compact dumps of objects, arrays, ASCII strings and integers). And the writing of
// such text: the bytes nlohmann::json::dump gives, without its setup for every value.
//
// Invariant kept: parseJson(text) and nlohmann::json::parse(text) return equal values whose every
// node has the same type (a non-negative integer is number_unsigned, a negative one
// number_integer), or both throw the same exception. Text the fast reader is not certain of (a
// float, an escape, a byte beyond ASCII, a repeated key, an integer of 19 digits or more, deep
// nesting, anything malformed) is handed whole to nlohmann::json::parse, so every exception is
// its own.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace durasim {

nlohmann::json parseJson(std::string_view text);

// The value of `text` when it lies in the fast reader's subset; nullopt otherwise (nlohmann::json
// may still read it, or refuse it).
std::optional<nlohmann::json> parseJsonSubset(std::string_view text);

// The text nlohmann::json::array(items).dump() gives (and its exception, for a string that is not
// valid UTF-8), without building the array: each item as appendJsonString writes it.
std::string jsonStringArray(std::initializer_list<std::string_view> items);

// Appends what v.dump(-1, ' ', false, handler) gives, compact with keys in order, and throws what it
// throws (invalid UTF-8 under the strict handler). Nulls, booleans, integers, strings of printable
// ASCII without a quote or a backslash, and the arrays and objects made of them are written here;
// any other value (a float, a string to escape or to check as UTF-8, deep nesting) by dump, whose
// setup costs more than such a value. appendJsonString does the same for the string `s`.
void appendJsonText(std::string& out, const nlohmann::json& v, nlohmann::json::error_handler_t handler);
void appendJsonString(std::string& out, std::string_view s, nlohmann::json::error_handler_t handler);
// v.dump(): the compact text, invalid UTF-8 refused with dump's type_error.
std::string jsonText(const nlohmann::json& v);

}  // namespace durasim
