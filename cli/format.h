// Text helpers for command output: thousands separators and printf-style formatting into a string.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

namespace durasim::cli {

// 1234567 -> "1,234,567".
std::string with_commas(uint64_t n);

// std::snprintf into a string of the right length. `pattern` is a literal matching `args`.
template <class... Args>
std::string format(const char* pattern, Args... args) {
  const int length = std::snprintf(nullptr, 0, pattern, args...);
  if (length <= 0) return "";
  std::string text(static_cast<std::size_t>(length), '\0');
  std::snprintf(text.data(), text.size() + 1, pattern, args...);
  return text;
}

}  // namespace durasim::cli
