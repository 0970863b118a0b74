// Merging and summing invariant tallies; see tally.h.
#include "sim/tally.h"

#include <algorithm>

#include "sim/executor.h"

namespace durasim::sim {

namespace {
std::vector<const SimClock*>& live_clocks() {
  thread_local std::vector<const SimClock*> clocks;
  return clocks;
}
}  // namespace

void register_clock(const SimClock* clock) { live_clocks().push_back(clock); }

void unregister_clock(const SimClock* clock) {
  std::vector<const SimClock*>& clocks = live_clocks();
  clocks.erase(std::remove(clocks.begin(), clocks.end(), clock), clocks.end());
}

std::optional<int64_t> current_sim_time() {
  const std::vector<const SimClock*>& clocks = live_clocks();
  return clocks.empty() ? std::nullopt : std::optional<int64_t>(clocks.back()->now());
}

namespace {
std::optional<int64_t> earliest(std::optional<int64_t> a, std::optional<int64_t> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}
}  // namespace

void Tallies::merge(const Tallies& other) {
  for (const auto& [id, theirs] : other.by_id_) {
    InvariantTally& mine = by_id_[id];
    mine.checked += theirs.checked;
    mine.violated += theirs.violated;
    mine.first_violation_ms = earliest(mine.first_violation_ms, theirs.first_violation_ms);
    for (const std::string& example : theirs.examples)
      if (mine.examples.size() < kMaxExamples) mine.examples.push_back(example);
  }
}

void Tallies::add(const std::string& id, uint64_t checked, uint64_t violated, const std::string& example) {
  InvariantTally& tally = by_id_[id];
  tally.checked += checked;
  if (violated > 0 && tally.violated == 0) tally.first_violation_ms = current_sim_time();
  tally.violated += violated;
  if (violated > 0 && tally.examples.size() < kMaxExamples) tally.examples.push_back(example);
}

uint64_t Tallies::violations() const {
  uint64_t total = 0;
  for (const auto& [id, tally] : by_id_) total += tally.violated;
  return total;
}

}  // namespace durasim::sim
