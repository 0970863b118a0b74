// Keys and stored records of the event bus (events.md 4): `enc` escapes '%' then ':' in every
// component, so keys are injective and ':' delimits components (EVT-05); the attempt and dead
// records with the predicates the bus decides by (presence of timestamps, never truthiness: D2).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace durasim::events {

// '%' -> "%25" first, then ':' -> "%3A"; nothing else. Total, injective, no ':' in the output.
std::string enc(std::string_view s);
// The inverse of enc: "%25" -> '%', "%3A" -> ':', left to right; other bytes unchanged.
std::string dec(std::string_view s);

// The keys and namespaces of one topic and consumer (events.md 4.2). `escape` false joins the
// components raw (variant events.unescaped_keys).
class Keys {
 public:
  Keys(std::string_view topic, std::string_view consumer, bool escape);
  const std::string& log() const { return log_; }        // evt:T
  const std::string& pending() const { return pend_; }   // evtpend:T:C
  const std::string& deadIndex() const { return dlq_; }  // evtdlq:T:C
  const std::string& cursor() const { return cursor_; }  // evtcursor:T:C
  const std::string& rescan() const { return rescan_; }  // evtrescan:T:C
  std::string ack(std::string_view id) const;            // evtack:T:C:I
  std::string attempts(std::string_view id) const;       // evtatt:T:C:I
  std::string dead(std::string_view id) const;           // evtdead:T:C:I

 private:
  std::string part(std::string_view s) const;
  bool escape_;
  std::string tc_, log_, pend_, dlq_, cursor_, rescan_;
};

// A bus key decoded into its family prefix ("evtack:", ...) and unescaped components; nullopt when
// the key is not of a bus family or has the wrong number of components (EVT-05's state check).
struct DecodedKey {
  std::string family;
  std::vector<std::string> parts;
};
std::optional<DecodedKey> decodeKey(std::string_view key);

// StoredAttempts (events.md 4.4) as read: absent -> {0, -, 0}; a bare integer k -> {k, -, 0}; an
// object -> its fields (a field of the wrong type reads as absent); anything else -> {0, -, 0}.
struct Attempts {
  int64_t n = 0;
  std::optional<int64_t> firstAt;
  int64_t nextAt = 0;
  std::optional<std::string> gen;
  nlohmann::json toJson() const;
  friend bool operator==(const Attempts&, const Attempts&) = default;
};
// `truthiness` (variant events.timestamp_truthiness): firstAt 0 reads as absent.
Attempts readAttempts(const std::optional<nlohmann::json>& raw, bool truthiness = false);

// Predicates over a StoredDead (events.md 4.4); `truthiness`: releasedAt 0 reads as absent.
bool isReleased(const std::optional<nlohmann::json>& dead, bool truthiness = false);
bool isQuarantined(const std::optional<nlohmann::json>& dead, bool truthiness = false);
// "0@-" when absent, else "<releases or 0>@<releasedAt, or - if absent>" ("0" under truthiness).
std::string stamp(const std::optional<nlohmann::json>& dead, bool truthiness = false);
// An integer member of a stored object, if present with that type.
std::optional<int64_t> intField(const nlohmann::json& record, const char* name);

// The handler's error text stored and logged: invalid UTF-8 replaced with U+FFFD.
std::string validUtf8(std::string_view text);
// A number as JavaScript prints it in the bus's messages: NaN, Infinity, -Infinity, 5, 2.5.
std::string numberText(double x);

}  // namespace durasim::events
