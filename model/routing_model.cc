// Routing selection and width dynamics; see routing_model.h.
#include "model/routing_model.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <stdexcept>
#include <string_view>

namespace durasim::model {

namespace {

// The members of a load snapshot's object (or of one of its directions) that selection reads, found
// in one walk over its members; a name absent (or `object` not an object) leaves its slot null.
template <std::size_t N>
std::array<const nlohmann::json*, N> members(const nlohmann::json& object, const std::array<std::string_view, N>& names) {
  std::array<const nlohmann::json*, N> found{};
  if (!object.is_object()) return found;
  for (const auto& [key, value] : object.get_ref<const nlohmann::json::object_t&>())
    for (std::size_t i = 0; i < N; ++i)
      if (key == names[i]) found[i] = &value;
  return found;
}

const nlohmann::json& field(const nlohmann::json* found, const char* name) {
  if (found) return *found;
  throw std::invalid_argument(std::string("load snapshot lacks ") + name);
}

std::optional<double> optionalAverage(const nlohmann::json& average) {
  return average.is_null() ? std::nullopt : std::optional<double>(average.get<double>());
}

}  // namespace

// The fields are read, and a missing one named, in the order the snapshot's shape is checked: the
// directions, observedAt, the outbound backlog, then each direction's in-flight count and average.
ShardLoad shardLoadFromJson(const nlohmann::json& load) {
  const auto top = members<3>(load, {"inbound", "outbound", "observedAt"});
  const nlohmann::json& inbound = field(top[0], "inbound");
  const nlohmann::json& outbound = field(top[1], "outbound");
  const auto in = members<2>(inbound, {"inFlight", "averageProcessingMs"});
  const auto out = members<3>(outbound, {"pendingDeliveries", "inFlight", "averageProcessingMs"});
  ShardLoad result;
  result.observedAt = field(top[2], "observedAt").get<int64_t>();
  result.pendingDeliveries = field(out[0], "pendingDeliveries").get<int64_t>();
  result.inboundInFlight = field(in[0], "inFlight").get<int64_t>();
  result.inboundAverageMs = optionalAverage(field(in[1], "averageProcessingMs"));
  result.outboundInFlight = field(out[1], "inFlight").get<int64_t>();
  result.outboundAverageMs = optionalAverage(field(out[2], "averageProcessingMs"));
  return result;
}

std::string candidateShard(double draw, int64_t width) {
  const auto i = static_cast<int64_t>(std::floor(draw * static_cast<double>(width)));
  return "shard-" + std::to_string(std::clamp<int64_t>(i, 0, width - 1));
}

double shardPressure(const ShardLoad& load) {
  return static_cast<double>(load.inboundInFlight) * load.inboundAverageMs.value_or(0) +
         static_cast<double>(load.outboundInFlight) * load.outboundAverageMs.value_or(0);
}

std::string selectShard(const std::map<std::string, ShardLoad>& observed, int64_t width, double drawA, double drawB) {
  const std::string a = candidateShard(drawA, width);
  const std::string b = candidateShard(drawB, width);
  const auto loadA = observed.find(a);
  if (loadA == observed.end()) return a;
  const auto loadB = observed.find(b);
  if (loadB == observed.end()) return b;
  if (loadA->second.pendingDeliveries != loadB->second.pendingDeliveries)
    return loadA->second.pendingDeliveries < loadB->second.pendingDeliveries ? a : b;
  return shardPressure(loadA->second) <= shardPressure(loadB->second) ? a : b;
}

WidthState resizeWidth(const WidthState& state, const ShardLoad& load, int64_t now, int64_t softBacklogLimit) {
  const bool stale = now - load.observedAt >= kRoutingModelWindowMs || (state.lastResizeAt && load.observedAt < *state.lastResizeAt);
  if (stale) return state;
  const auto since = [&](int64_t interval) { return !state.lastResizeAt || now - *state.lastResizeAt >= interval; };
  WidthState next = state;
  if (load.pendingDeliveries > softBacklogLimit) {
    if (since(kRoutingModelGrowIntervalMs)) {
      next.width += 1;
      next.lastResizeAt = now;
    }
    return next;
  }
  const bool idle = load.inboundInFlight == 0 && load.outboundInFlight == 0;
  if (state.width > 1 && since(kRoutingModelShrinkIntervalMs) && kRoutingModelShrinkFactor * load.pendingDeliveries < softBacklogLimit &&
      idle) {
    next.width -= 1;
    next.lastResizeAt = now;
  }
  return next;
}

namespace {
constexpr int64_t kBucketMs = 1000;
constexpr int64_t kBuckets = kRoutingModelWindowMs / kBucketMs;
int64_t secondOf(int64_t ms) { return ms / kBucketMs - (ms % kBucketMs < 0 ? 1 : 0); }
}  // namespace

void LoadWindowModel::begin(int64_t sample, int64_t now) { running_.emplace(sample, now); }

void LoadWindowModel::finish(int64_t sample, int64_t now) {
  const auto it = running_.find(sample);
  if (it == running_.end()) return;
  const int64_t second = secondOf(now);
  Bucket& bucket = buckets_[((second % kBuckets) + kBuckets) % kBuckets];
  if (bucket.second != second) bucket = Bucket{second, 0, 0};
  bucket.count += 1;
  bucket.durationSum += now - it->second;
  running_.erase(it);
}

LoadWindowModel::View LoadWindowModel::snapshot(int64_t now) const {
  const int64_t nowSec = secondOf(now);
  View view;
  view.inFlight = static_cast<int64_t>(running_.size());
  int64_t duration = 0;
  for (const auto& [index, bucket] : buckets_)
    if (bucket.second && *bucket.second > nowSec - kBuckets && *bucket.second <= nowSec) {
      view.completed += bucket.count;
      duration += bucket.durationSum;
    }
  if (view.completed > 0) view.averageMs = static_cast<double>(duration) / static_cast<double>(view.completed);
  return view;
}

}  // namespace durasim::model
