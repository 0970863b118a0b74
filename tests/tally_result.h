// One invariant's tally as a test reads it: checks made, violations, and the first violation's
// message ("" when there is none, or when the invariant was never declared).
#pragma once

#include <cstdint>
#include <string>

#include "sim/tally.h"

namespace durasim::test {

struct TallyResult {
  uint64_t checked = 0;
  uint64_t violated = 0;
  std::string first;
};

inline TallyResult tally_of(const sim::Tallies& tallies, const std::string& id) {
  TallyResult result;
  const auto found = tallies.by_id().find(id);
  if (found == tallies.by_id().end()) return result;
  result.checked = found->second.checked;
  result.violated = found->second.violated;
  if (!found->second.examples.empty()) result.first = found->second.examples.front();
  return result;
}

}  // namespace durasim::test
