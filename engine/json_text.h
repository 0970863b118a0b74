// Reading JSON text into nlohmann::json: the same value, of the same types, and the same exceptions
// as nlohmann::json::parse, at a fraction of its cost on the text the engine stores and reads back
// at every step (compact dumps of objects, arrays, ASCII strings and integers).
//
// Invariant kept: parseJson(text) and nlohmann::json::parse(text) return equal values whose every
// node has the same type (a non-negative integer is number_unsigned, a negative one
// number_integer), or both throw the same exception. Text the fast reader is not certain of (a
// float, an escape, a byte beyond ASCII, a repeated key, an integer of 19 digits or more, deep
// nesting, anything malformed) is handed whole to nlohmann::json::parse, so every exception is
// its own.
#pragma once

#include <optional>
#include <string_view>

#include <nlohmann/json.hpp>

namespace durasim {

nlohmann::json parseJson(std::string_view text);

// The value of `text` when it lies in the fast reader's subset; nullopt otherwise (nlohmann::json
// may still read it, or refuse it).
std::optional<nlohmann::json> parseJsonSubset(std::string_view text);

}  // namespace durasim
