// RoutingLoad's per-second buckets (routing.md 2): begin / finish count work in flight and record
// each finished request's duration in the bucket of its second; a snapshot sums the buckets of the
// last 60 seconds (RTE-08).
#include "engine/load.h"

namespace durasim {

namespace {

int64_t floorDiv(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

int64_t bucketIndex(int64_t second) {
  return ((second % kRoutingBucketCount) + kRoutingBucketCount) % kRoutingBucketCount;
}

}  // namespace

RoutingLoad::RoutingLoad(Clock& clock) : state_(std::make_shared<State>()) { state_->clock = &clock; }

std::function<void()> RoutingLoad::begin(Direction direction) {
  std::shared_ptr<State> state = state_;
  state->of(direction).inFlight += 1;
  const int64_t start = state->clock->now();
  auto finished = std::make_shared<bool>(false);
  return [state, direction, start, finished] {
    if (*finished) return;
    *finished = true;
    const int64_t now = state->clock->now();
    const int64_t second = floorDiv(now, kRoutingBucketMs);
    PerDirection& dir = state->of(direction);
    dir.inFlight -= 1;
    Bucket& bucket = dir.buckets[static_cast<std::size_t>(bucketIndex(second))];
    if (bucket.second != second) bucket = Bucket{second, 0, 0};
    bucket.count += 1;
    bucket.durationSum += now - start;
  };
}

LoadSnapshot RoutingLoad::snapshot(int64_t pendingDeliveries) const {
  const int64_t now = state_->clock->now();
  const int64_t nowSec = floorDiv(now, kRoutingBucketMs);
  const int64_t windowSeconds = kRoutingWindowMs / kRoutingBucketMs;
  auto summarize = [&](const PerDirection& dir, ProcessingLoad& out) {
    int64_t count = 0, duration = 0;
    for (const Bucket& bucket : dir.buckets)
      if (bucket.second > nowSec - windowSeconds && bucket.second <= nowSec) {
        count += bucket.count;
        duration += bucket.durationSum;
      }
    out.inFlight = dir.inFlight;
    out.completed = count;
    out.averageProcessingMs = count == 0 ? std::nullopt
                                         : std::optional<double>(static_cast<double>(duration) / static_cast<double>(count));
  };
  LoadSnapshot snapshot;
  snapshot.observedAt = now;
  snapshot.windowMs = kRoutingWindowMs;
  summarize(state_->inbound, snapshot.inbound);
  summarize(state_->outbound, snapshot.outbound);
  snapshot.outbound.pendingDeliveries = pendingDeliveries;
  return snapshot;
}

}  // namespace durasim
