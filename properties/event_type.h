// An event's type ("commit", "fan.claim.write", ...) as the checkers compare it with the names
// they dispatch on. Each checker compares every event's type with a chain of names; as
// std::string_view, each comparison whose lengths agree is a call into string_view::compare and
// memcmp wherever the compiler stops inlining in a large dispatch function. EventType's
// comparisons are always inlined: against a name whose length is a constant (a literal, a
// constexpr name of engine/*_events.h), a comparison is a length test and a word or two compared
// in place. It reads as a string_view everywhere else.
#pragma once

#include <string_view>

namespace durasim::properties {

class EventType {
 public:
  constexpr EventType(std::string_view name = {}) : name_(name) {}  // NOLINT(google-explicit-constructor)
  constexpr EventType(const char* name) : name_(name) {}             // NOLINT(google-explicit-constructor)
  constexpr operator std::string_view() const { return name_; }     // NOLINT(google-explicit-constructor)

  constexpr std::size_t size() const { return name_.size(); }
  constexpr bool empty() const { return name_.empty(); }
  constexpr const char* data() const { return name_.data(); }
  constexpr EventType substr(std::size_t pos, std::size_t n = std::string_view::npos) const { return name_.substr(pos, n); }

  [[gnu::always_inline]] bool starts_with(std::string_view prefix) const {
    return name_.size() >= prefix.size() && sameBytes(name_.data(), prefix);
  }
  [[gnu::always_inline]] bool ends_with(std::string_view suffix) const {
    return name_.size() >= suffix.size() && sameBytes(name_.data() + (name_.size() - suffix.size()), suffix);
  }
  [[gnu::always_inline]] friend bool operator==(EventType a, std::string_view b) {
    return a.name_.size() == b.size() && sameBytes(a.name_.data(), b);
  }

 private:
  // The first b.size() bytes at `at` are b's (an empty b compares no bytes, so a null `at` is fine).
  [[gnu::always_inline]] static bool sameBytes(const char* at, std::string_view b) {
    return b.empty() || __builtin_memcmp(at, b.data(), b.size()) == 0;
  }

  std::string_view name_;
};

}  // namespace durasim::properties
