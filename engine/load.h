// The load envelope every capability returns (routing.md 1 and 2): the LoadSnapshot of an object's
// inbound and outbound work over one 60 s window, the EnqueueResult that carries it with exactly one
// of value / error, and RoutingLoad, the object-side observer that counts the work (in memory and
// advisory: an eviction resets it). Keeps: inFlight counts started, unfinished work; completed and
// averageProcessingMs cover the buckets of (nowSec - 60, nowSec] only (RTE-08); load is always
// present in an EnqueueResult (RTE-09).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <utility>

#include "engine/errors.h"
#include "engine/runtime.h"

namespace durasim {

// routing.md 2 and 3.1 step 1: loads are counted, and observations kept, over one 60 s window.
inline constexpr int64_t kRoutingWindowMs = 60000;
// routing.md 2: one bucket per second, 60 buckets per direction.
inline constexpr int64_t kRoutingBucketMs = 1000;
inline constexpr int64_t kRoutingBucketCount = 60;

// ---------------------------------------------------------------------------------------------
// Result envelope and load snapshot (ErrorInfo is the one of engine/errors.h)

struct ProcessingLoad {
  int64_t inFlight = 0;                       // started, not finished
  int64_t completed = 0;                      // finished within the window
  std::optional<double> averageProcessingMs;  // nullopt iff completed == 0
  friend bool operator==(const ProcessingLoad&, const ProcessingLoad&) = default;
};
struct OutboundLoad : ProcessingLoad {
  int64_t pendingDeliveries = 0;
  friend bool operator==(const OutboundLoad&, const OutboundLoad&) = default;
};
struct LoadSnapshot {
  int64_t observedAt = 0;  // clock time of the snapshot
  int64_t windowMs = kRoutingWindowMs;
  ProcessingLoad inbound;
  OutboundLoad outbound;
  friend bool operator==(const LoadSnapshot&, const LoadSnapshot&) = default;
};

// Exactly one of value / error is set, matching success; load is always present.
template <class T>
struct EnqueueResult {
  bool success = false;
  std::optional<T> value;
  std::optional<ErrorInfo> error;
  LoadSnapshot load;

  static EnqueueResult ok(T value, LoadSnapshot load) { return {true, std::move(value), std::nullopt, std::move(load)}; }
  static EnqueueResult rejected(ErrorInfo error, LoadSnapshot load) {
    return {false, std::nullopt, std::move(error), std::move(load)};
  }
};

// ---------------------------------------------------------------------------------------------
// RoutingLoad (object side, in memory; eviction resets everything)

enum class Direction { inbound, outbound };

class RoutingLoad {
 public:
  explicit RoutingLoad(Clock& clock);
  // inFlight[dir] += 1 now; the returned finish is idempotent: its first call decrements inFlight
  // and records one sample of the elapsed ms in the bucket of the current second.
  std::function<void()> begin(Direction direction);
  // inFlight live, completed / average over the buckets of (nowSec - 60, nowSec].
  LoadSnapshot snapshot(int64_t pendingDeliveries) const;

 private:
  struct Bucket {
    int64_t second = -1;
    int64_t count = 0;
    int64_t durationSum = 0;
  };
  struct PerDirection {
    int64_t inFlight = 0;
    std::array<Bucket, kRoutingBucketCount> buckets{};
  };
  struct State {
    Clock* clock;
    PerDirection inbound, outbound;
    PerDirection& of(Direction d) { return d == Direction::inbound ? inbound : outbound; }
  };
  // Shared with every finish, so a finish outliving this object stays harmless.
  std::shared_ptr<State> state_;
};

using DurabilityRouting = RoutingLoad;  // the object-side observer

}  // namespace durasim
