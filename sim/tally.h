// Per-invariant accounting (DESIGN.md, "Checking"): every check of an invariant ID is counted, and
// every violation is counted and keeps its first few messages. A campaign merges the tallies of its
// runs and reports invariants that were never checked. A violation also notes the simulated time
// of the World running on this thread, if any, so a campaign can say how soon a bug was caught, and
// the index of the trace event being observed when it was found, so `explain` can mark its witness.
#pragma once

#include <bit>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace durasim::sim {

class SimClock;

// The clocks and event counters of the Worlds alive on this thread, newest last: each World
// registers its own for its lifetime (in any order of destruction). A violation is placed by the
// newest.
void register_clock(const SimClock* clock, const uint64_t* events_emitted);
void unregister_clock(const SimClock* clock);
std::optional<int64_t> current_sim_time();
// The index (from 0) of the newest World's latest trace event: the one its observers are handling,
// or, after the run, its last.
std::optional<uint64_t> current_event_index();

struct InvariantTally;
void note_first_violation(InvariantTally& tally);

struct InvariantTally {
  uint64_t checked = 0;
  uint64_t violated = 0;
  std::vector<std::string> examples;  // the first kMaxExamples violation messages
  std::optional<int64_t> first_violation_ms;  // simulated time of the earliest violation, if known
  std::optional<uint64_t> first_violation_event;  // trace event being observed at the earliest violation
};

class Tallies {
 public:
  static constexpr std::size_t kMaxExamples = 5;
  using ById = std::map<std::string, InvariantTally, std::less<>>;

  Tallies() = default;
  Tallies(const Tallies& other) : by_id_(other.by_id_) { reindex(); }
  Tallies& operator=(const Tallies& other);
  // Map nodes move with the map, so the index stays valid; the source is left empty and usable.
  Tallies(Tallies&& other) noexcept { *this = std::move(other); }
  Tallies& operator=(Tallies&& other) noexcept;

  // Counts one check of `id`; `message()` is evaluated only when `ok` is false.
  template <class Message>
  bool check(std::string_view id, bool ok, Message message) {
    InvariantTally& tally = of(id);
    ++tally.checked;
    if (!ok) {
      if (tally.violated == 0) note_first_violation(tally);
      ++tally.violated;
      if (tally.examples.size() < kMaxExamples) tally.examples.push_back(message());
    }
    return ok;
  }
  // Counts `checked` checks of `id`, `violated` of which failed, the first described by `example`.
  void add(std::string_view id, uint64_t checked, uint64_t violated, const std::string& example);
  // Declares `id` so that a run in which it is never checked still reports it.
  void declare(std::string_view id) { of(id); }
  void merge(const Tallies& other);

  uint64_t violations() const;
  const ById& by_id() const { return by_id_; }

 private:
  // The tally of `id`, created empty on first use. Checks run hundreds of thousands of times a
  // seed, so an ID of up to 7 bytes (every catalogue ID: "LOG-02", "CORE-01") is found by its bytes
  // and length packed into one integer, in an open-addressed table (linear probing, at most half
  // full); a longer one through the ordered map.
  InvariantTally& of(std::string_view id) {
    if (id.size() <= kPackedMax) {
      const uint64_t key = packed(id);
      for (std::size_t i = slot_of(key);; i = (i + 1) & (short_index_.size() - 1)) {
        const ShortSlot& slot = short_index_[i];
        if (slot.tally == nullptr) break;
        if (slot.key == key) return *slot.tally;
      }
    } else if (const auto found = by_id_.find(id); found != by_id_.end()) {
      return found->second;
    }
    return add_entry(id);
  }
  // The bytes of an ID of up to kPackedMax bytes, and its length in the top byte: one per ID.
  static constexpr std::size_t kPackedMax = 7;
  static uint64_t packed(std::string_view id) {
    uint64_t key = uint64_t{id.size()} << 56;
    for (std::size_t i = 0; i < id.size(); ++i) key |= uint64_t{static_cast<unsigned char>(id[i])} << (8 * i);
    return key;
  }
  // The first slot to probe for `key` (Fibonacci hashing onto the table's power-of-two size).
  std::size_t slot_of(uint64_t key) const {
    return static_cast<std::size_t>((key * 0x9E3779B97F4A7C15ull) >> (64 - std::countr_zero(short_index_.size())));
  }
  InvariantTally& add_entry(std::string_view id);
  void index_short(uint64_t key, InvariantTally* tally);
  void reindex();

  struct ShortSlot {
    uint64_t key = 0;
    InvariantTally* tally = nullptr;  // null: the slot is free
  };
  static std::vector<ShortSlot> empty_short_index() { return std::vector<ShortSlot>(16); }

  ById by_id_;                                                 // reports walk it in ID order
  std::vector<ShortSlot> short_index_ = empty_short_index();  // packed ID -> by_id_'s entry; 2^k slots
  std::size_t short_count_ = 0;                                // slots in use
};

}  // namespace durasim::sim
