// Shared conventions (scheduler.md 1): safe integers, rounding, serialize / deserialize.
// Invariant kept: a value that serialize accepts round-trips through deserialize unchanged.
#include "engine/conventions.h"

#include <cmath>

#include "engine/json_text.h"

namespace durasim {

namespace {

// Whether `v` holds a non-finite number or a discarded value anywhere (dump would print the first as
// null and the second as "<discarded>", so neither round-trips).
bool hasUnstorable(const nlohmann::json& v) {
  switch (v.type()) {
    case nlohmann::json::value_t::discarded:
      return true;
    case nlohmann::json::value_t::number_float:
      return !std::isfinite(v.get<double>());
    case nlohmann::json::value_t::array:
    case nlohmann::json::value_t::object:
      for (const nlohmann::json& child : v)
        if (hasUnstorable(child)) return true;
      return false;
    default:
      return false;
  }
}

}  // namespace

bool isSafeNonNegative(int64_t x) { return x >= 0 && x <= kMaxSafeInteger; }

double jsRound(double x) { return std::floor(x + 0.5); }

std::optional<std::string> serialize(const nlohmann::json& v) {
  if (hasUnstorable(v)) return std::nullopt;
  try {
    // The dump of the wrapper object, keys in order, without copying `v` into one.
    std::string stored = R"({"kind":"value","value":)";
    appendJsonText(stored, v, nlohmann::json::error_handler_t::strict);
    stored += '}';
    return stored;
  } catch (const nlohmann::json::exception&) {
    return std::nullopt;
  }
}

nlohmann::json deserialize(const std::string& stored) {
  // What serialize wrote is the value's text inside a fixed envelope: when the text between is a
  // whole document of parseJson's subset, the envelope is valid and its "value" is that document.
  constexpr std::string_view kEnvelope = R"({"kind":"value","value":)";
  const std::string_view text(stored);
  if (text.size() > kEnvelope.size() && text.starts_with(kEnvelope) && text.back() == '}')
    if (std::optional<nlohmann::json> value = parseJsonSubset(text.substr(kEnvelope.size(), text.size() - kEnvelope.size() - 1)))
      return std::move(*value);
  nlohmann::json envelope = parseJson(stored);
  return std::move(envelope.at("value"));
}

}  // namespace durasim
