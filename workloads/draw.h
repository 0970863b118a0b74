// A workload's draws handed to shared configuration code (log_config.cc, fanout_drivers.h,
// outbox_drivers.h, bus_drivers.h): a uniform integer from the caller's own stream, so the shared
// code draws exactly what the caller would draw in its place, and a pick among constant choices.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>

namespace durasim::workloads {

// A uniform draw in [lo, hi] from the caller's stream (a recorded choice).
using Draw = std::function<int64_t(int64_t lo, int64_t hi)>;

// One of `choices`, uniformly: one draw in [0, N - 1].
template <class T, std::size_t N>
const T& pick(const Draw& draw, const T (&choices)[N]) {
  return choices[draw(0, static_cast<int64_t>(N) - 1)];
}

}  // namespace durasim::workloads
