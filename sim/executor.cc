// Timer heap, idle skipping and the recorded same-time choice; see executor.h.
#include "sim/executor.h"

#include <cxxabi.h>

#include <cassert>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>

namespace durasim::sim {

void SimClock::advance_to(SimTime t) {
  if (t < now_)
    throw std::logic_error("RT-02 violated: clock asked to move back from " + std::to_string(now_) + " to " +
                           std::to_string(t));
  now_ = t;
}

Executor::Executor(SimClock& clock, RandomSource& random)
    : clock_(clock), random_(random), order_stream_(random.stream("executor.order")) {}

TimerId Executor::at(SimTime when, Callback fn) {
  std::size_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
  } else {
    if (slots_.size() > kSlotMask) throw RunawayError("runaway: more than " + std::to_string(kSlotMask + 1) + " timers pending at once");
    slot = slots_.size();
    slots_.emplace_back();
  }
  const TimerId id = (next_sequence_++ << kSlotBits) | slot;
  slots_[slot] = Slot{id, std::move(fn)};
  heap_.push(Entry{when < clock_.now() ? clock_.now() : when, id});
  return id;
}

Executor::Callback Executor::take(TimerId id) {
  Slot& slot = slots_[slot_of(id)];
  Callback callback = std::move(slot.callback);
  slot = Slot{};
  free_slots_.push_back(static_cast<uint32_t>(slot_of(id)));
  return callback;
}

bool Executor::cancel(TimerId id) {
  if (id == kNoTimer || slot_of(id) >= slots_.size() || !live(id)) return false;
  take(id);
  for (std::size_t i = 0; i < ready_.size(); ++i) {
    if (ready_[i] == id) {
      ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(i));
      break;
    }
  }
  // Keep the heap's top live, so next_due() never reports the time of a cancelled timer.
  while (!heap_.empty() && !live(heap_.top().id)) heap_.pop();
  return true;
}

std::optional<SimTime> Executor::next_due() const {
  if (!ready_.empty()) return clock_.now();
  // Cancelled entries may linger in the heap; they are skipped when reached.
  if (idle() || heap_.empty()) return std::nullopt;
  return heap_.top().when;
}

// Moves every live heap entry due at the current time into the ready set, in sequence order.
void Executor::gather_due() {
  while (!heap_.empty() && heap_.top().when <= clock_.now()) {
    const TimerId id = heap_.top().id;
    heap_.pop();
    if (live(id)) ready_.push_back(id);
  }
}

namespace {

// The source-level name of a callback's type (for a lambda: the function that wrote it), which is
// what a person needs to find the code that keeps scheduling it.
std::string describe(const Executor::Callback& callback) {
  const char* mangled = callback.target_type().name();
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> demangled(abi::__cxa_demangle(mangled, nullptr, nullptr, &status), &std::free);
  return status == 0 && demangled ? demangled.get() : mangled;
}

}  // namespace

void Executor::enforce_limits(const Callback& next) {
  if (clock_.now() != instant_) {
    instant_ = clock_.now();
    events_at_instant_ = 0;
  }
  if (++events_at_instant_ > limits_.per_instant)
    throw RunawayError("runaway: more than " + std::to_string(limits_.per_instant) + " events at simulated time " +
                       std::to_string(instant_) + " without the clock moving; the event that repeats: " + describe(next));
  if (events_run_ >= limits_.total)
    throw RunawayError("runaway: more than " + std::to_string(limits_.total) + " events in one run (simulated time " +
                       std::to_string(instant_) + "); the next event: " + describe(next));
}

std::size_t Executor::choose_ready() {
  if (ready_.size() == 1) return 0;
  // sim.mutant.unrecorded_choice: the same draw, missing from the choice log (RT-23).
  if (mutants_.unrecorded_choice) return random_.below_unrecorded(order_stream_, ready_.size());
  return random_.below(order_stream_, ready_.size());
}

bool Executor::run_one(SimTime horizon) {
  gather_due();
  bool jumped = false;
  while (ready_.empty()) {
    while (!heap_.empty() && !live(heap_.top().id)) heap_.pop();
    if (heap_.empty() || heap_.top().when > horizon) return false;
    clock_.advance_to(heap_.top().when);
    jumped = true;
    gather_due();
  }
  const std::size_t pick = choose_ready();
  const TimerId id = ready_[pick];
  ready_.erase(ready_.begin() + static_cast<std::ptrdiff_t>(pick));
  assert(live(id));
  Callback callback = take(id);
  enforce_limits(callback);
  ++events_run_;
  callback();
  // sim.mutant.clock_step_back: events still due at the new time run 1 ms in its past (RT-02).
  if (jumped && mutants_.clock_step_back && ++idle_jumps_ % kStepBackEveryIdleJumps == 0) clock_.step_back(1);
  return true;
}

}  // namespace durasim::sim
