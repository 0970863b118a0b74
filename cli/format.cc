// Text helpers for command output; see format.h.
#include "cli/format.h"

namespace durasim::cli {

std::string with_commas(uint64_t n) {
  std::string digits = std::to_string(n), out;
  for (std::size_t i = 0; i < digits.size(); ++i) {
    if (i && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return out;
}

}  // namespace durasim::cli
