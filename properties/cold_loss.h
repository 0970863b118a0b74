// Which cold objects the simulated store may have lost by a given time (runtime.md 10, 11.2), learned
// from the trace alone: a `cold.vanish` fault names the object it removed (arbitrary profile), and an
// applied put whose object drew a lifecycle lag may be removed from put time + lag on (the `fault`
// cold.lifecycle_lag event comes just before the put's `cold.call`; after heal no lag is drawn, so a
// put then may be removed at once). The LOG and LSE checks use it to tell a lost segment from one a
// reader should still have found.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/runtime.h"
#include "properties/event_type.h"

namespace durasim::properties {

class ColdLossWatch {
 public:
  // Learns from a `fault` or `cold.call` event; any other event is ignored.
  void observe(EventType ev, const EventFields& event);
  // Faults have healed: from now on a put draws no lifecycle lag (its lag is 0).
  void healed() { healed_ = true; }
  // Whether the cold object with key `key` may be gone at World time `now`.
  bool lossPossible(const std::string& key, int64_t now) const;

 private:
  std::set<std::string> vanished_;                // keys a cold.vanish fault removed
  std::map<std::string, int64_t> expirableFrom_;  // key -> earliest lifecycle removal time
  std::optional<int64_t> pendingLag_;             // the lag drawn for the put reported next
  bool healed_ = false;
};

}  // namespace durasim::properties
