// Merging and summing invariant tallies; see tally.h.
#include "sim/tally.h"

namespace durasim::sim {

void Tallies::merge(const Tallies& other) {
  for (const auto& [id, theirs] : other.by_id_) {
    InvariantTally& mine = by_id_[id];
    mine.checked += theirs.checked;
    mine.violated += theirs.violated;
    for (const std::string& example : theirs.examples)
      if (mine.examples.size() < kMaxExamples) mine.examples.push_back(example);
  }
}

void Tallies::add(const std::string& id, uint64_t checked, uint64_t violated, const std::string& example) {
  InvariantTally& tally = by_id_[id];
  tally.checked += checked;
  tally.violated += violated;
  if (violated > 0 && tally.examples.size() < kMaxExamples) tally.examples.push_back(example);
}

uint64_t Tallies::violations() const {
  uint64_t total = 0;
  for (const auto& [id, tally] : by_id_) total += tally.violated;
  return total;
}

}  // namespace durasim::sim
