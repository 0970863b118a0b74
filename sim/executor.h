// The single-threaded executor of the World (runtime.md 2.2). Timers sit in a heap ordered by
// (time, insertion sequence); the clock jumps to the next due time when nothing is runnable, so idle
// time costs nothing. Events due at the current time form the ready set, and which of them runs next
// is a recorded choice (stream "executor.order") whenever there is more than one: different seeds
// explore different interleavings and a trace pins the one taken. Keeps RT-02 (the clock never moves
// back) and its share of RT-23 (the tie-break is recorded), which the mutants clock_step_back and
// unrecorded_choice break (sim/mutants.h). A pending timer's callback waits in a slot of a vector
// whose free slots are reused; its TimerId is its sequence number above its slot's index, so ids
// order as sequence numbers do and finding a timer is an index, not a hash.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <queue>
#include <stdexcept>
#include <vector>

#include "sim/mutants.h"
#include "sim/random.h"

namespace durasim::sim {

using SimTime = int64_t;  // simulated milliseconds
using TimerId = uint64_t;
inline constexpr TimerId kNoTimer = 0;
inline constexpr SimTime kDefaultStartTime = 1'700'000'000'000;  // runtime.md 2.1

// The World clock: int64 milliseconds that never go backwards (RT-02).
class SimClock {
 public:
  explicit SimClock(SimTime start) : now_(start) {}
  SimTime now() const { return now_; }
  // REQUIRES: t >= now().
  void advance_to(SimTime t);
  // sim.mutant.clock_step_back only: the clock moves back `ms`, breaking RT-02 on purpose.
  void step_back(SimTime ms) { now_ -= ms; }

 private:
  SimTime now_;
};

// Bounds that turn a runaway run into an error instead of a hang: a timer re-armed at the current
// instant for ever, or an event storm that never ends. Legitimate runs stay far below both (a
// default seed runs a few thousand events, a few hundred at one instant).
struct EventLimits {
  static constexpr uint64_t kDefaultPerInstant = 100'000;
  static constexpr uint64_t kDefaultTotal = 20'000'000;
  uint64_t per_instant = kDefaultPerInstant;  // events run while the clock stands still
  uint64_t total = kDefaultTotal;             // events run in all
};

// Thrown by Executor::run_one when a bound of EventLimits is exceeded; the message names the bound,
// the simulated time and the event that was about to run once more.
class RunawayError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Executor {
 public:
  using Callback = std::function<void()>;

  Executor(SimClock& clock, RandomSource& random);
  Executor(const Executor&) = delete;
  Executor& operator=(const Executor&) = delete;

  // Runs `fn` at `when` (a time in the past means now). Returns a handle for cancel().
  TimerId at(SimTime when, Callback fn);
  TimerId after(SimTime delay, Callback fn) { return at(clock_.now() + delay, std::move(fn)); }
  // Forgets a timer that has not run. Returns whether it was still pending.
  bool cancel(TimerId id);

  // Runs one event, advancing the clock if nothing is due now. Returns false when no event is
  // pending or the next one is later than `horizon`. Throws RunawayError (without running the
  // event) when running it would exceed the limits.
  bool run_one(SimTime horizon = INT64_MAX);
  void set_limits(EventLimits limits) { limits_ = limits; }
  // The World's mutants; the executor acts on unrecorded_choice and clock_step_back.
  void set_mutants(const ActiveMutants& mutants) { mutants_ = mutants; }
  // clock_step_back: the clock moves back after every this many idle jumps.
  static constexpr uint64_t kStepBackEveryIdleJumps = 4;

  bool idle() const { return pending() == 0; }
  std::size_t pending() const { return slots_.size() - free_slots_.size(); }
  std::optional<SimTime> next_due() const;
  uint64_t events_run() const { return events_run_; }
  uint64_t scheduled() const { return next_sequence_ - 1; }  // timers ever scheduled
  SimClock& clock() { return clock_; }

 private:
  struct Entry {
    SimTime when;
    TimerId id;
    bool operator>(const Entry& other) const { return when != other.when ? when > other.when : id > other.id; }
  };
  // A callback's place; `id` is the timer holding it (kNoTimer: free).
  struct Slot {
    TimerId id = kNoTimer;
    Callback callback;
  };
  static constexpr int kSlotBits = 24;  // at most 2^24 timers pending at once
  static constexpr TimerId kSlotMask = (TimerId{1} << kSlotBits) - 1;
  static std::size_t slot_of(TimerId id) { return static_cast<std::size_t>(id & kSlotMask); }
  bool live(TimerId id) const { return slots_[slot_of(id)].id == id; }
  // REQUIRES: live(id). Frees the timer's slot and hands back its callback.
  Callback take(TimerId id);
  void gather_due();
  // The index in ready_ of the event to run next: a recorded choice among several.
  std::size_t choose_ready();
  // REQUIRES: `next` is the callback about to run. Throws RunawayError past a limit.
  void enforce_limits(const Callback& next);

  SimClock& clock_;
  RandomSource& random_;
  StreamId order_stream_;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> heap_;
  std::vector<TimerId> ready_;       // due now; the next to run is chosen
  std::vector<Slot> slots_;          // the pending timers' callbacks
  std::vector<uint32_t> free_slots_;  // indexes in slots_ to reuse, the last freed first
  uint64_t next_sequence_ = 1;
  uint64_t events_run_ = 0;
  EventLimits limits_;
  SimTime instant_ = -1;         // the time of the last event run
  uint64_t events_at_instant_ = 0;
  ActiveMutants mutants_;
  uint64_t idle_jumps_ = 0;      // counted under clock_step_back only
};

}  // namespace durasim::sim
