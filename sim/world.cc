// The World; see world.h.
#include "sim/world.h"

#include <stdexcept>

namespace durasim::sim {

World::World(SimTime start_time, RandomSource random, TraceSink& sink)
    : clock_(start_time), random_(std::move(random)), executor_(clock_, random_), sink_(sink), tasks_(executor_) {
  if (start_time < 0) throw std::invalid_argument("start time must be >= 0, got " + std::to_string(start_time));
  register_clock(&clock_, &events_emitted_);
}

World::~World() { unregister_clock(&clock_); }

void World::emit(std::string_view type, EventFields fields) {
  const SimTime now = clock_.now();
  fields["ev"] = type;
  fields["t"] = now;
  const uint64_t draws = random_.draws();
  const uint64_t scheduled = executor_.scheduled();
  ++events_emitted_;
  const TraceEvent event(fields, type, now);
  sink_.record(event);
  for (TraceSink* observer : observers_) observer->record(event);
  if (random_.draws() != draws || executor_.scheduled() != scheduled)
    throw std::logic_error("an observer of a '" + std::string(type) +
                           "' event drew a choice or scheduled an event; observers only read (DESIGN.md, Checking)");
}

void World::set_variants(std::set<std::string> variants) {
  variants_ = std::move(variants);
  mutants_ = ActiveMutants::of(variants_);
  executor_.set_mutants(mutants_);
}

SleepAwaiter World::sleep_for(SimTime ms) {
  if (ms < 0) throw std::invalid_argument("sleepFor requires ms >= 0, got " + std::to_string(ms));
  return SleepAwaiter(executor_, clock_.now() + ms);
}

Task<void> WorldClock::sleepFor(int64_t ms) { co_await world_.sleep_for(ms); }

Task<void> WorldClock::sleepUntil(int64_t t) { co_await world_.sleep_until(t); }

}  // namespace durasim::sim
