// Keys and stored records of the event bus; see events_keys.h.
#include "engine/events_keys.h"

#include <cmath>

#include "engine/event_bus_schema.h"

namespace durasim::events {

using nlohmann::json;

std::string enc(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    if (c == '%')
      out += "%25";
    else if (c == ':')
      out += "%3A";
    else
      out += c;
  }
  return out;
}

std::string dec(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && s.substr(i, 3) == "%25") {
      out += '%';
      i += 2;
    } else if (s[i] == '%' && s.substr(i, 3) == "%3A") {
      out += ':';
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

Keys::Keys(std::string_view topic, std::string_view consumer, bool escape) : escape_(escape) {
  const std::string t = part(topic);
  tc_ = t;
  tc_ += ':';
  tc_ += part(consumer);
  log_ = std::string(keys::kTopicLog) + t;
  pend_ = std::string(keys::kPending) + tc_;
  dlq_ = std::string(keys::kDeadIndex) + tc_;
  cursor_ = std::string(keys::kCursor) + tc_;
  rescan_ = std::string(keys::kRescan) + tc_;
}

std::string Keys::part(std::string_view s) const { return escape_ ? enc(s) : std::string(s); }

std::string Keys::ack(std::string_view id) const {
  std::string k(keys::kAck);
  k += tc_;
  k += ':';
  k += part(id);
  return k;
}
std::string Keys::attempts(std::string_view id) const {
  std::string k(keys::kAttempts);
  k += tc_;
  k += ':';
  k += part(id);
  return k;
}
std::string Keys::dead(std::string_view id) const {
  std::string k(keys::kDead);
  k += tc_;
  k += ':';
  k += part(id);
  return k;
}

std::optional<DecodedKey> decodeKey(std::string_view key) {
  struct Family {
    std::string_view prefix;
    std::size_t parts;
  };
  static constexpr Family kFamilies[] = {{keys::kAck, 3},    {keys::kAttempts, 3}, {keys::kDead, 3},      {keys::kCursor, 2},
                                         {keys::kPending, 2}, {keys::kDeadIndex, 2}, {keys::kRescan, 2}, {keys::kTopicLog, 1}};
  for (const Family& f : kFamilies) {
    if (key.substr(0, f.prefix.size()) != f.prefix) continue;
    DecodedKey out{std::string(f.prefix), {}};
    std::string_view rest = key.substr(f.prefix.size());
    while (true) {
      const std::size_t colon = rest.find(':');
      out.parts.push_back(dec(rest.substr(0, colon)));
      if (colon == std::string_view::npos) break;
      rest = rest.substr(colon + 1);
    }
    if (out.parts.size() != f.parts) return std::nullopt;
    return out;
  }
  return std::nullopt;
}

std::optional<int64_t> intField(const json& record, const char* name) {
  if (!record.is_object()) return std::nullopt;
  const auto it = record.find(name);
  if (it == record.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

json Attempts::toJson() const {
  json out = {{"n", n}, {"nextAt", nextAt}};
  if (firstAt) out["firstAt"] = *firstAt;
  if (gen) out["gen"] = *gen;
  return out;
}

Attempts readAttempts(const std::optional<json>& raw, bool truthiness) {
  Attempts a;
  if (!raw) return a;
  if (raw->is_number_integer()) {
    a.n = raw->get<int64_t>();
    return a;
  }
  if (!raw->is_object()) return a;
  a.n = intField(*raw, "n").value_or(0);
  a.nextAt = intField(*raw, "nextAt").value_or(0);
  a.firstAt = intField(*raw, "firstAt");
  if (truthiness && a.firstAt == 0) a.firstAt.reset();
  if (const auto g = raw->find("gen"); g != raw->end() && g->is_string()) a.gen = g->get<std::string>();
  return a;
}

bool isReleased(const std::optional<json>& dead, bool truthiness) {
  if (!dead || !dead->is_object() || !dead->contains("releasedAt")) return false;
  if (truthiness) {
    const json& at = dead->at("releasedAt");
    return !(at.is_number() && at.get<double>() == 0) && !at.is_null();
  }
  return true;
}

bool isQuarantined(const std::optional<json>& dead, bool truthiness) { return dead.has_value() && !isReleased(dead, truthiness); }

std::string stamp(const std::optional<json>& dead, bool truthiness) {
  if (!dead) return "0@-";
  std::string out = std::to_string(intField(*dead, "releases").value_or(0));
  out += '@';
  const std::optional<int64_t> at = intField(*dead, "releasedAt");
  if (at)
    out += std::to_string(*at);
  else
    out += truthiness ? "0" : "-";
  return out;
}

std::string validUtf8(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  const auto byte = [&](std::size_t i) { return static_cast<unsigned char>(text[i]); };
  std::size_t i = 0;
  while (i < text.size()) {
    const unsigned char c = byte(i);
    std::size_t len = 0;
    uint32_t cp = 0;
    if (c < 0x80) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    if ((c & 0xE0) == 0xC0) len = 2, cp = c & 0x1F;
    else if ((c & 0xF0) == 0xE0) len = 3, cp = c & 0x0F;
    else if ((c & 0xF8) == 0xF0) len = 4, cp = c & 0x07;
    bool ok = len != 0 && i + len <= text.size();
    for (std::size_t k = 1; ok && k < len; ++k) {
      if ((byte(i + k) & 0xC0) != 0x80) ok = false;
      else cp = (cp << 6) | (byte(i + k) & 0x3F);
    }
    if (ok) {
      const uint32_t min = len == 2 ? 0x80 : len == 3 ? 0x800 : 0x10000;
      ok = cp >= min && cp <= 0x10FFFF && !(cp >= 0xD800 && cp <= 0xDFFF);
    }
    if (!ok) {
      out += "\xEF\xBF\xBD";
      ++i;
      continue;
    }
    out.append(text.substr(i, len));
    i += len;
  }
  return out;
}

std::string numberText(double x) {
  if (std::isnan(x)) return "NaN";
  if (std::isinf(x)) return x > 0 ? "Infinity" : "-Infinity";
  if (x == std::floor(x) && std::fabs(x) < 1e18) return std::to_string(static_cast<int64_t>(x));
  return json(x).dump();
}

}  // namespace durasim::events
