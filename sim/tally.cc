// Merging and summing invariant tallies; see tally.h.
#include "sim/tally.h"

#include <algorithm>
#include <utility>

#include "sim/executor.h"

namespace durasim::sim {

namespace {
struct LiveWorld {
  const SimClock* clock;
  const uint64_t* events_emitted;
};
std::vector<LiveWorld>& live_worlds() {
  thread_local std::vector<LiveWorld> worlds;
  return worlds;
}
}  // namespace

void register_clock(const SimClock* clock, const uint64_t* events_emitted) { live_worlds().push_back({clock, events_emitted}); }

void unregister_clock(const SimClock* clock) {
  std::erase_if(live_worlds(), [clock](const LiveWorld& w) { return w.clock == clock; });
}

std::optional<int64_t> current_sim_time() {
  const std::vector<LiveWorld>& worlds = live_worlds();
  return worlds.empty() ? std::nullopt : std::optional<int64_t>(worlds.back().clock->now());
}

std::optional<uint64_t> current_event_index() {
  const std::vector<LiveWorld>& worlds = live_worlds();
  if (worlds.empty() || *worlds.back().events_emitted == 0) return std::nullopt;
  return *worlds.back().events_emitted - 1;
}

void note_first_violation(InvariantTally& tally) {
  tally.first_violation_ms = current_sim_time();
  tally.first_violation_event = current_event_index();
}

namespace {
std::optional<int64_t> earliest(std::optional<int64_t> a, std::optional<int64_t> b) {
  if (!a) return b;
  if (!b) return a;
  return std::min(*a, *b);
}
}  // namespace

Tallies& Tallies::operator=(const Tallies& other) {
  if (this != &other) {
    by_id_ = other.by_id_;
    reindex();
  }
  return *this;
}

Tallies& Tallies::operator=(Tallies&& other) noexcept {
  if (this != &other) {
    by_id_ = std::move(other.by_id_);
    short_index_ = std::exchange(other.short_index_, empty_short_index());
    short_count_ = std::exchange(other.short_count_, 0);
    other.by_id_.clear();
  }
  return *this;
}

InvariantTally& Tallies::add_entry(std::string_view id) {
  const auto [entry, added] = by_id_.try_emplace(std::string(id));
  if (id.size() <= kPackedMax) index_short(packed(id), &entry->second);
  return entry->second;
}

void Tallies::index_short(uint64_t key, InvariantTally* tally) {
  if (2 * (short_count_ + 1) > short_index_.size()) {  // keep the table at most half full
    std::vector<ShortSlot> old = std::exchange(short_index_, std::vector<ShortSlot>(2 * short_index_.size()));
    short_count_ = 0;
    for (const ShortSlot& slot : old)
      if (slot.tally != nullptr) index_short(slot.key, slot.tally);
  }
  std::size_t i = slot_of(key);
  while (short_index_[i].tally != nullptr) i = (i + 1) & (short_index_.size() - 1);
  short_index_[i] = ShortSlot{key, tally};
  ++short_count_;
}

void Tallies::reindex() {
  short_index_.assign(short_index_.size(), ShortSlot{});
  short_count_ = 0;
  for (auto& [id, tally] : by_id_)
    if (id.size() <= kPackedMax) index_short(packed(id), &tally);
}

void Tallies::merge(const Tallies& other) {
  for (const auto& [id, theirs] : other.by_id_) {
    InvariantTally& mine = of(id);
    mine.checked += theirs.checked;
    mine.violated += theirs.violated;
    if (!mine.first_violation_ms || (theirs.first_violation_ms && *theirs.first_violation_ms < *mine.first_violation_ms))
      mine.first_violation_event = theirs.first_violation_event;
    mine.first_violation_ms = earliest(mine.first_violation_ms, theirs.first_violation_ms);
    for (const std::string& example : theirs.examples)
      if (mine.examples.size() < kMaxExamples) mine.examples.push_back(example);
  }
}

void Tallies::add(std::string_view id, uint64_t checked, uint64_t violated, const std::string& example) {
  InvariantTally& tally = of(id);
  tally.checked += checked;
  if (violated > 0 && tally.violated == 0) note_first_violation(tally);
  tally.violated += violated;
  if (violated > 0 && tally.examples.size() < kMaxExamples) tally.examples.push_back(example);
}

uint64_t Tallies::violations() const {
  uint64_t total = 0;
  for (const auto& [id, tally] : by_id_) total += tally.violated;
  return total;
}

}  // namespace durasim::sim
