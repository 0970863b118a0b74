// The port: everything capability code may ask of the object it runs in (DESIGN.md, "The port and
// coroutines"; runtime.md 2-10). The engine is written against these interfaces only; the simulator
// implements them in sim/, and a wall-clock implementation could implement them without touching
// engine/. This file also brings in Task<T>, the coroutine type of every asynchronous method.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/task.h"

namespace durasim {

// The object's view of time: int64 milliseconds that never go backwards within an incarnation.
class Clock {
 public:
  virtual ~Clock() = default;
  virtual int64_t now() const = 0;
  // Suspends for `ms` >= 0 milliseconds of simulated time; sleepFor(0) is a pure yield that lets
  // other events of the object in. A negative delay is a programming error (std::invalid_argument).
  virtual Task<void> sleepFor(int64_t ms) = 0;
  // Suspends until `t`; a time at or before now() is a pure yield.
  virtual Task<void> sleepUntil(int64_t t) = 0;
};

// The object's source of randomness: deterministic under the simulator (seeded, recorded).
class Random {
 public:
  virtual ~Random() = default;
  // Uniform in [0, 1): (next() >> 11) * 2^-53.
  virtual double random() = 0;
  // An RFC 4122 version-4 UUID, lower case.
  virtual std::string uuid() = 0;
};

}  // namespace durasim
