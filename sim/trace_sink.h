// Where the World sends its trace events. Each event is a JSON object with at least "ev" (its type)
// and "t" (the simulated time); traces/ serialises it canonically, hashes it and stores it, and
// property checkers observe the same stream. The World never depends on what listens.
#pragma once

#include <nlohmann/json.hpp>

namespace durasim::sim {

class TraceSink {
 public:
  virtual ~TraceSink() = default;
  virtual void record(const nlohmann::json& event) = 0;
};

}  // namespace durasim::sim
