// The choices of one actor of a workload (a client, a producer, an operator), drawn from a random
// stream of its own, one operation after another. Each operation begins with next_operation(), a
// recorded choice of its own (sim/random.h another()), so that the shrinker (cli/shrink.h) can
// delete an actor's operations one by one, or all of them after some point, without shifting the
// draws of any other actor, and an actor whose stream it emptied simply stops.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

#include "sim/random.h"

namespace durasim::workloads {

class ActorStream {
 public:
  // The stream "workload.<workload>.<actor>", or "workload.<workload>.<actor>.<number>".
  // REQUIRES: `random` outlives this object.
  ActorStream(sim::RandomSource& random, const char* workload, const char* actor, std::optional<int64_t> number = std::nullopt)
      : random_(&random), stream_(random.stream(name(workload, actor, number))) {}

  // Whether the actor goes on with another operation: always in a recorded run; when a replayed
  // log says so otherwise.
  bool next_operation() { return random_->another(stream_); }

  int64_t between(int64_t lo, int64_t hi) { return random_->between(stream_, lo, hi); }
  bool chance(uint32_t ppm) { return random_->chance(stream_, ppm); }
  // One of `choices`, uniformly.
  template <class T, std::size_t N>
  const T& pick(const T (&choices)[N]) {
    return choices[index(N)];
  }
  // An index into a non-empty collection of `size` elements.
  std::size_t index(std::size_t size) { return static_cast<std::size_t>(between(0, static_cast<int64_t>(size) - 1)); }

 private:
  static std::string name(const char* workload, const char* actor, std::optional<int64_t> number) {
    std::string text = "workload.";
    text += workload;
    text += ".";
    text += actor;
    if (number) {
      text += ".";
      text += std::to_string(*number);
    }
    return text;
  }

  sim::RandomSource* random_;
  sim::StreamId stream_;
};

}  // namespace durasim::workloads
