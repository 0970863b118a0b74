// Canonical serialisation and hashing of trace events; see recorder.h.
#include "traces/recorder.h"

#include <algorithm>
#include <array>
#include <bit>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <stdexcept>

namespace durasim::traces {
namespace {

using json = nlohmann::json;

// A word read from or written to unaligned bytes, in the host's byte order.
template <class Word>
Word load(const char* at) {
  Word w;
  std::memcpy(&w, at, sizeof w);
  return w;
}
template <class Word>
void store(char* at, Word w) {
  std::memcpy(at, &w, sizeof w);
}

// An event's fields in the order of their JSON object's keys (byte order, as std::string compares),
// for up to kMaxFields fields; an event with more is taken through its JSON object.
class SortedFields {
 public:
  static constexpr std::size_t kMaxFields = 32;

  explicit SortedFields(const EventFields& fields) : size_(fields.size()) {
    if (size_ > kMaxFields) return;
    std::size_t n = 0;
    for (const EventFields::Field& field : fields) fields_[n++] = {prefix(field.key), &field};
    std::sort(fields_.begin(), fields_.begin() + n, [](const Entry& a, const Entry& b) {
      return a.prefix != b.prefix ? a.prefix < b.prefix : less(a.field->key, b.field->key);
    });
  }
  bool fits() const { return size_ <= kMaxFields; }
  std::size_t size() const { return size_; }
  const EventFields::Field& operator[](std::size_t i) const { return *fields_[i].field; }

 private:
  struct Entry {
    uint64_t prefix;  // prefix(field->key)
    const EventFields::Field* field;
  };

  // The first eight bytes of `key` (zero-padded) as a big-endian integer: keys whose prefixes
  // differ order as their prefixes do, so most comparisons of the sort are one instruction.
  static uint64_t prefix(const std::string& key) {
    if (key.size() >= 8) {
      const auto word = load<uint64_t>(key.data());
      return std::endian::native == std::endian::little ? __builtin_bswap64(word) : word;
    }
    uint64_t bits = 0;
    for (std::size_t i = 0; i < key.size(); ++i) bits |= static_cast<uint64_t>(static_cast<unsigned char>(key[i])) << (56 - 8 * i);
    return bits;
  }
  // std::string's order, compared in place (for keys whose first eight bytes agree).
  static bool less(const std::string& a, const std::string& b) {
    const std::size_t n = std::min(a.size(), b.size());
    for (std::size_t i = 0; i < n; ++i)
      if (a[i] != b[i]) return static_cast<unsigned char>(a[i]) < static_cast<unsigned char>(b[i]);
    return a.size() < b.size();
  }

  std::size_t size_;
  std::array<Entry, kMaxFields> fields_;
};

// The binary encoding of one event that the trace hash folds: a tag byte per value, fixed-width
// little-endian integers, lengths before strings, arrays and objects (whose keys come sorted).
class EventEncoder {
 public:
  // Writes into `buffer` (kept between events, so the hot path does not allocate once warm).
  explicit EventEncoder(std::string& buffer) : out_(buffer) {}
  std::string_view encoded() const { return std::string_view(out_.data(), size_); }

  void value(const json& v) {
    switch (v.type()) {
      case json::value_t::null:
      case json::value_t::discarded:
        tag('n');
        return;
      case json::value_t::boolean:
        tag(v.get<bool>() ? 't' : 'f');
        return;
      case json::value_t::number_integer:
        integer(v.get<int64_t>());
        return;
      case json::value_t::number_unsigned: {
        const auto u = v.get<uint64_t>();
        if (u <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
          integer(static_cast<int64_t>(u));
        } else {
          tag('u');
          word(u);
        }
        return;
      }
      case json::value_t::number_float:
        number(v.get<double>());
        return;
      case json::value_t::string:
        tag('s');
        text(v.get_ref<const std::string&>());
        return;
      case json::value_t::array:
        tag('[');
        word(v.size());
        for (const json& item : v) value(item);
        return;
      case json::value_t::object:
        tag('{');
        word(v.size());
        for (const auto& [key, item] : v.get_ref<const json::object_t&>()) {
          text(key);
          value(item);
        }
        return;
      case json::value_t::binary:
        throw std::logic_error("trace events hold no binary values");
    }
  }

  // The fields as their JSON object: the same bytes as value(fields.to_json()).
  void object(const EventFields& fields) {
    const SortedFields sorted(fields);
    if (!sorted.fits()) [[unlikely]] return value(fields.to_json());
    tag('{');
    word(sorted.size());
    for (std::size_t i = 0; i < sorted.size(); ++i) {
      text(sorted[i].key);
      value(fields.read(sorted[i]));
    }
  }

 private:
  // Room for `n` more bytes at the end of what is written.
  char* room(std::size_t n) {
    if (size_ + n > out_.size()) [[unlikely]] grow(n);
    char* at = out_.data() + size_;
    size_ += n;
    return at;
  }
  [[gnu::noinline]] void grow(std::size_t n) { out_.resize(std::max(out_.size() * 2, size_ + n + 256)); }
  void tag(char c) { *room(1) = c; }
  void word(uint64_t w) { littleEndian(room(8), w); }
  static void littleEndian(char* at, uint64_t w) {
    if constexpr (std::endian::native != std::endian::little) w = __builtin_bswap64(w);
    store(at, w);
  }
  void integer(int64_t i) {
    tag('i');
    word(static_cast<uint64_t>(i));
  }
  void number(double d) {
    if (!std::isfinite(d)) return tag('n');  // the canonical line writes null
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    tag('d');
    word(bits);
  }
  // A string as its canonical line holds it: bytes beyond ASCII go through the line's own UTF-8
  // check and replacement (rare in events, so the slow path is the exact one).
  void text(const std::string& s) {
    if (!ascii(s)) return replaced(s);
    bytes(s);
  }
  void replaced(const std::string& s) { bytes(json::parse(canonical_line(json(s))).get<std::string>()); }
  void bytes(std::string_view s) {
    char* at = room(8 + s.size());  // the length's word, then the bytes
    littleEndian(at, s.size());
    copy(at + 8, s.data(), s.size());
  }
  // memcpy, with the short strings of most fields copied in place as two overlapping words.
  static void copy(char* to, const char* from, std::size_t n) {
    if (n > 16) {
      std::memcpy(to, from, n);
    } else if (n >= 8) {
      const auto first = load<uint64_t>(from), last = load<uint64_t>(from + n - 8);
      store(to, first);
      store(to + n - 8, last);
    } else if (n >= 4) {
      const auto first = load<uint32_t>(from), last = load<uint32_t>(from + n - 4);
      store(to, first);
      store(to + n - 4, last);
    } else {
      for (std::size_t i = 0; i < n; ++i) to[i] = from[i];
    }
  }
  static bool ascii(std::string_view s) {
    const std::size_t n = s.size();
    const char* at = s.data();
    uint64_t high = 0;  // the top bit of every byte, a word at a time (the last word may overlap)
    if (n >= 8) {
      for (std::size_t i = 0; i + 8 < n; i += 8) high |= load<uint64_t>(at + i);
      high |= load<uint64_t>(at + n - 8);
    } else if (n >= 4) {
      high = load<uint32_t>(at) | load<uint32_t>(at + n - 4);
    } else {
      for (std::size_t i = 0; i < n; ++i) high |= static_cast<unsigned char>(at[i]);
    }
    return (high & 0x8080808080808080ULL) == 0;
  }

  std::string& out_;  // its size is capacity; the first size_ bytes are written
  std::size_t size_ = 0;
};

}  // namespace

std::string canonical_line(const nlohmann::json& event) {
  return event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

namespace {

// Whether the canonical text of string `s` is `s` in quotes: printable ASCII, nothing to escape.
bool verbatim(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c >= 0x20 && c < 0x7F && c != '"' && c != '\\'; });
}

// Appends the canonical text of `v`: nulls, booleans, integers and verbatim strings written here,
// anything else by nlohmann::json's own serialiser (whose setup costs more than such a value).
void append_canonical(std::string& line, const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      line += "null";
      return;
    case json::value_t::boolean:
      line += v.get<bool>() ? "true" : "false";
      return;
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: {
      char digits[24];
      const auto end = v.is_number_unsigned() ? std::to_chars(digits, digits + sizeof digits, v.get<uint64_t>()).ptr
                                              : std::to_chars(digits, digits + sizeof digits, v.get<int64_t>()).ptr;
      line.append(digits, end);
      return;
    }
    case json::value_t::string:
      if (const std::string& s = v.get_ref<const std::string&>(); verbatim(s)) {
        line += '"';
        line += s;
        line += '"';
        return;
      }
      break;
    default:
      break;
  }
  line += canonical_line(v);
}

}  // namespace

std::string canonical_fields_line(const EventFields& event) {
  const SortedFields sorted(event);
  if (!sorted.fits()) [[unlikely]] return canonical_line(event.to_json());
  std::string line = "{";
  for (std::size_t i = 0; i < sorted.size(); ++i) {
    if (i > 0) line += ',';
    const std::string& key = sorted[i].key;
    if (verbatim(key)) {
      line += '"';
      line += key;
      line += '"';
    } else {
      line += canonical_line(json(key));
    }
    line += ':';
    append_canonical(line, event.read(sorted[i]));
  }
  line += '}';
  return line;
}

namespace {
// Folds what `encode` writes into `hash`.
template <class Encode>
uint64_t fold(uint64_t hash, const Encode& encode) {
  thread_local std::string buffer;  // reused: the event path allocates nothing here once warm
  EventEncoder encoder(buffer);
  encode(encoder);
  return sim::xxh3_64(encoder.encoded(), hash);
}
}  // namespace

uint64_t fold_event(uint64_t hash, const nlohmann::json& event) {
  return fold(hash, [&](EventEncoder& encoder) { encoder.value(event); });
}

uint64_t fold_event(uint64_t hash, const EventFields& event) {
  return fold(hash, [&](EventEncoder& encoder) { encoder.object(event); });
}

std::string hash_hex(uint64_t hash) {
  char text[17];
  std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(hash));
  return text;
}

void Recorder::record(const sim::TraceEvent& event) {
  hash_ = fold_event(hash_, event.fields());
  ++events_;
  if (events_ % kCheckpointInterval == 0) checkpoints_.push_back({events_, hash_});
  if (keep_lines_) {
    lines_.push_back(canonical_fields_line(event.fields()));
    line_hashes_.push_back(hash_);
  }
}

}  // namespace durasim::traces
