// Reading JSON text into nlohmann::json: the same value, of the same types, and the same exceptions
// as nlohmann::json::parse, at a fraction of its cost on the text the engine stores and reads back
// at every step (compact dumps of objects, arrays, ASCII strings and integers). And the one piece
// of JSON text the engine writes per delivery, an array of strings, without a JSON tree.
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
// valid UTF-8): written directly when every item is printable ASCII without a quote or a backslash,
// by dump otherwise.
std::string jsonStringArray(std::initializer_list<std::string_view> items);

}  // namespace durasim
