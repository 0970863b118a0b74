// Shared conventions of every capability (scheduler.md 1): the safe-integer range of timestamps and
// delays, JavaScript-style rounding, and the stored form of application values. A value is stored
// only if it serializes; nothing here touches storage or the clock.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace durasim {

// 2^53 - 1, the largest timestamp or delay a capability accepts (scheduler.md 1, "Safe integer").
inline constexpr int64_t kMaxSafeInteger = 9007199254740991;

// 0 <= x <= kMaxSafeInteger.
bool isSafeNonNegative(int64_t x);

// Round half up, as JavaScript's Math.round: std::floor(x + 0.5). NaN and infinities pass through.
double jsRound(double x);

// The stored string of `v`: the compact dump of {"kind":"value","value":v} (keys sorted, strict UTF-8).
// nullopt when `v` is unserializable: dump throws (invalid UTF-8), `v` contains a NaN or an infinity
// at any depth, or `v` contains a discarded value. Never throws for any other reason.
std::optional<std::string> serialize(const nlohmann::json& v);

// The value of a string produced by serialize: member "value" of the parsed wrapper.
// Throws nlohmann::json::exception when `stored` is not such a string.
nlohmann::json deserialize(const std::string& stored);

}  // namespace durasim
