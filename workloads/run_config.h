// The configuration of one run: everything, besides the seed or the choice log, that determines
// its trace. It is written in every trace header and read back by replay, so it round-trips
// through JSON and rejects malformed input with a message naming the field.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "sim/executor.h"
#include "sim/random.h"

namespace durasim::workloads {

inline constexpr sim::SimTime kDefaultSafetyMs = 600'000;        // runtime.md 11.4 draws from [60 s, 30 min]
inline constexpr sim::SimTime kDefaultLivenessMs = 10'800'000;   // runtime.md 11.4: 3 h after heal

struct RunConfig {
  std::string workload = "runtime";
  std::string faults = "recoverable";  // none | recoverable | arbitrary (runtime.md 11.3)
  // Unset (the default): drawn per seed by the swarm (runtime.md 2.1), a recorded choice, so a trace
  // replays to the same start. Written to the trace header only when fixed.
  std::optional<sim::SimTime> start_time;
  sim::SimTime safety_ms = kDefaultSafetyMs;
  sim::SimTime liveness_ms = kDefaultLivenessMs;
  nlohmann::json options = nlohmann::json::object();  // workload-specific
  // Research variants switched on (hazards.md flags, runtime.md 12 mutants; cli/variants.h names
  // them all). Written to the trace header only when some are on.
  std::set<std::string> variants;
  sim::EventLimits limits;  // a run past them stops as a failure (runaway), never hangs

  // Simulated times stay far from int64 overflow: a start time up to 2^53 - 1 (the largest
  // millisecond time a JavaScript Date holds exactly), each phase up to 100 years.
  static constexpr sim::SimTime kMaxStartTime = 9'007'199'254'740'991;
  static constexpr sim::SimTime kMaxPhaseMs = 3'155'760'000'000;
  // Throws std::invalid_argument naming the field out of those ranges.
  void check_times() const;

  // The limits are written only when they differ from the defaults, so default traces keep their
  // header and hash.
  nlohmann::json to_json() const;
  // Throws std::invalid_argument naming the offending field.
  static RunConfig from_json(const nlohmann::json& j);
};

// The start time of a run of `config`: the fixed one, or the swarm's draw from `random` (the run's
// own source, before the World takes it).
sim::SimTime start_time_of(const RunConfig& config, sim::RandomSource& random);

}  // namespace durasim::workloads
