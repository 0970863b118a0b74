// A reader of the subset of JSON the engine stores, and nlohmann::json::parse for the rest; see
// json_text.h.
#include "engine/json_text.h"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <utility>

namespace durasim {
namespace {

using nlohmann::json;

bool verbatimByte(char c) { return c >= 0x20 && c <= 0x7E && c != '"' && c != '\\'; }

// Whether any byte of the word `x` is not verbatimByte: each test below sets the top bit of some
// byte exactly when a byte of its kind is present (a borrow or carry only starts at such a byte).
bool anyNonVerbatim(uint64_t x) {
  constexpr uint64_t kOnes = 0x0101010101010101ULL, kHigh = 0x8080808080808080ULL;
  const auto anyZero = [](uint64_t v) { return (v - kOnes) & ~v; };
  const uint64_t below = (x - kOnes * 0x20) & ~x;  // a byte below 0x20
  const uint64_t above = (x + kOnes) | x;          // a byte above 0x7E
  return ((below | above | anyZero(x ^ (kOnes * '"')) | anyZero(x ^ (kOnes * '\\'))) & kHigh) != 0;
}

// The eight bytes at `at`, in the host's order: anyNonVerbatim tests every byte alike, so the
// order does not matter.
uint64_t word(const char* at) {
  uint64_t w;
  std::memcpy(&w, at, sizeof w);
  return w;
}

// Reads a whole document of the subset: objects without a repeated key, arrays, strings of
// printable ASCII without escapes, integers of at most 18 digits without a leading zero (except "0"
// itself) or "-0", true, false, null, and JSON's four whitespace bytes between them. Stops with false
// at the first byte outside the subset (`out` then holds a partial value, never used).
class SubsetReader {
 public:
  explicit SubsetReader(std::string_view text) : at_(text.data()), end_(text.data() + text.size()) {}

  bool document(json& out) {
    skipSpace();
    if (!value(out, 0)) return false;
    skipSpace();
    return at_ == end_;
  }

 private:
  static constexpr int kMaxDepth = 64;      // deeper nesting goes to nlohmann (no recursion limit to mind)
  static constexpr std::ptrdiff_t kMaxDigits = 18;  // any 18-digit integer fits int64_t and uint64_t

  bool value(json& out, int depth) {
    if (at_ == end_) return false;
    switch (*at_) {
      case '{':
        return object(out, depth);
      case '[':
        return array(out, depth);
      case '"':
        out = json::value_t::string;
        return string(out.get_ref<json::string_t&>());
      case 't':
        return literal("true", out, json(true));
      case 'f':
        return literal("false", out, json(false));
      case 'n':
        return literal("null", out, json(nullptr));
      default:
        return integer(out);
    }
  }

  bool object(json& out, int depth) {
    bool empty = false;
    if (!open(out, json::value_t::object, '}', depth, empty)) return false;
    if (empty) return true;
    json::object_t& members = out.get_ref<json::object_t&>();
    std::string key;
    for (;;) {
      if (at_ == end_ || *at_ != '"' || !string(key)) return false;
      skipSpace();
      if (at_ == end_ || *at_ != ':') return false;
      ++at_;
      skipSpace();
      // nlohmann keeps the last of a repeated key; the subset has none, so either way is the same.
      // Keys come sorted in the text the engine writes: the map's end is where each one goes.
      const std::size_t before = members.size();
      const auto member = members.emplace_hint(members.end(), std::move(key), json());
      if (members.size() == before || !value(member->second, depth + 1)) return false;
      const After after = next('}');
      if (after != After::more) return after == After::closed;
    }
  }

  bool array(json& out, int depth) {
    bool empty = false;
    if (!open(out, json::value_t::array, ']', depth, empty)) return false;
    if (empty) return true;
    json::array_t& items = out.get_ref<json::array_t&>();
    for (;;) {
      if (!value(items.emplace_back(), depth + 1)) return false;
      const After after = next(']');
      if (after != After::more) return after == After::closed;
    }
  }

  // Steps into a container (`out` becomes an empty one of `type`) and the space after its opening
  // byte; `empty` when `close` comes next, and then past it. False when nested too deep.
  bool open(json& out, json::value_t type, char close, int depth, bool& empty) {
    if (depth >= kMaxDepth) return false;
    ++at_;
    out = type;
    skipSpace();
    empty = at_ != end_ && *at_ == close;
    if (empty) ++at_;
    return true;
  }

  // After a member or item: `close`, or a comma and the space before the next one.
  enum class After { closed, more, invalid };
  After next(char close) {
    skipSpace();
    if (at_ == end_) return After::invalid;
    if (*at_ == close) return ++at_, After::closed;
    if (*at_ != ',') return After::invalid;
    ++at_;
    skipSpace();
    return After::more;
  }

  bool string(std::string& out) {
    const char* const first = at_ + 1;
    const char* p = first;
    for (;; ++p) {
      // Eight bytes at a time while none of them needs a look (stored strings are mostly long runs
      // of printable ASCII); the word holding the closing quote is then read byte by byte.
      while (end_ - p >= 8 && !anyNonVerbatim(word(p))) p += 8;
      if (p == end_) return false;
      const auto c = static_cast<unsigned char>(*p);
      if (c == '"') break;
      if (c < 0x20 || c >= 0x80 || c == '\\') return false;  // control bytes, UTF-8, escapes
    }
    out.assign(first, p);
    at_ = p + 1;
    return true;
  }

  bool integer(json& out) {
    const char* p = at_;
    const bool negative = *p == '-';
    if (negative) ++p;
    const char* const digits = p;
    uint64_t magnitude = 0;
    for (; p != end_ && *p >= '0' && *p <= '9'; ++p) magnitude = magnitude * 10 + static_cast<uint64_t>(*p - '0');
    const std::ptrdiff_t n = p - digits;
    if (n == 0 || n > kMaxDigits || (*digits == '0' && n > 1) || (negative && magnitude == 0)) return false;
    at_ = p;  // a fraction or an exponent next is no delimiter: the caller stops there
    // As nlohmann's lexer: a minus sign makes number_integer, none number_unsigned.
    out = negative ? json(-static_cast<int64_t>(magnitude)) : json(magnitude);
    return true;
  }

  bool literal(std::string_view word, json& out, json v) {
    if (static_cast<std::size_t>(end_ - at_) < word.size() || std::string_view(at_, word.size()) != word) return false;
    at_ += word.size();
    out = std::move(v);
    return true;
  }

  void skipSpace() {
    while (at_ != end_ && (*at_ == ' ' || *at_ == '\n' || *at_ == '\r' || *at_ == '\t')) ++at_;
  }

  const char* at_;
  const char* const end_;
};

}  // namespace

std::optional<nlohmann::json> parseJsonSubset(std::string_view text) {
  json out;
  if (!SubsetReader(text).document(out)) return std::nullopt;
  return out;
}

nlohmann::json parseJson(std::string_view text) {
  if (std::optional<json> value = parseJsonSubset(text)) return std::move(*value);
  return json::parse(text);
}

namespace {

// Whether JSON writes string `s` as its bytes in quotes: printable ASCII, nothing to escape.
// Eight bytes at a time (the payloads' padding makes most strings long), the last word
// overlapping the one before when the length is not a multiple of eight.
bool verbatim(std::string_view s) {
  const std::size_t n = s.size();
  if (n < 8) {
    for (const char c : s)
      if (!verbatimByte(c)) return false;
    return true;
  }
  for (std::size_t i = 0; i + 8 < n; i += 8)
    if (anyNonVerbatim(word(s.data() + i))) return false;
  return !anyNonVerbatim(word(s.data() + n - 8));
}

void quoted(std::string& out, std::string_view s) {
  out += '"';
  out += s;
  out += '"';
}

template <class Integer>
void digits(std::string& out, Integer i) {
  char text[24];
  out.append(text, std::to_chars(text, text + sizeof text, i).ptr);
}

// Arrays and objects nested deeper than this are written by dump, as before this writer existed.
constexpr int kMaxWriteDepth = 64;

void append(std::string& out, const json& v, json::error_handler_t handler, int depth) {
  switch (v.type()) {
    case json::value_t::null:
      out += "null";
      return;
    case json::value_t::boolean:
      out += v.get<bool>() ? "true" : "false";
      return;
    case json::value_t::number_integer:
      digits(out, v.get<int64_t>());
      return;
    case json::value_t::number_unsigned:
      digits(out, v.get<uint64_t>());
      return;
    case json::value_t::string:
      return appendJsonString(out, v.get_ref<const std::string&>(), handler);
    case json::value_t::array:
      if (depth >= kMaxWriteDepth) break;
      out += '[';
      for (std::size_t i = 0; i < v.size(); ++i) {
        if (i > 0) out += ',';
        append(out, v[i], handler, depth + 1);
      }
      out += ']';
      return;
    case json::value_t::object: {
      if (depth >= kMaxWriteDepth) break;
      out += '{';
      bool first = true;
      for (const auto& [key, item] : v.get_ref<const json::object_t&>()) {
        if (!first) out += ',';
        first = false;
        appendJsonString(out, key, handler);
        out += ':';
        append(out, item, handler, depth + 1);
      }
      out += '}';
      return;
    }
    default:
      break;
  }
  out += v.dump(-1, ' ', false, handler);
}

}  // namespace

void appendJsonText(std::string& out, const json& v, json::error_handler_t handler) { append(out, v, handler, 0); }

void appendJsonString(std::string& out, std::string_view s, json::error_handler_t handler) {
  if (verbatim(s)) return quoted(out, s);
  out += json(std::string(s)).dump(-1, ' ', false, handler);
}

std::string jsonText(const json& v) {
  std::string text;
  appendJsonText(text, v, json::error_handler_t::strict);
  return text;
}

std::string jsonStringArray(std::initializer_list<std::string_view> items) {
  std::string text = "[";
  for (const std::string_view item : items) {
    if (text.size() > 1) text += ',';
    appendJsonString(text, item, json::error_handler_t::strict);  // dump()'s handler
  }
  text += ']';
  return text;
}

}  // namespace durasim
