// Executable spec of the routing client's default selection and adaptive width (routing.md 4): pure
// functions over plain values, time and random draws as arguments. The RTE-06 (width dynamics) and
// RTE-07 (selection rule) checks recompute the client's decisions with them; the RTE-08 check
// replays an application's RoutingLoad samples on LoadWindowModel (routing.md 2).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

namespace durasim::model {

// routing.md 3.1 step 1 and 4: the observation window.
inline constexpr int64_t kRoutingModelWindowMs = 60000;
// routing.md 4 resize steps 2 and 3.
inline constexpr int64_t kRoutingModelGrowIntervalMs = 1000;
inline constexpr int64_t kRoutingModelShrinkIntervalMs = 60000;
inline constexpr int64_t kRoutingModelShrinkFactor = 4;

// What selection and resizing read of a load snapshot (routing.md 1).
struct ShardLoad {
  int64_t observedAt = 0;
  int64_t pendingDeliveries = 0;
  int64_t inboundInFlight = 0;
  std::optional<double> inboundAverageMs;
  int64_t outboundInFlight = 0;
  std::optional<double> outboundAverageMs;
};

// The JSON form of routing's LoadSnapshot (as in `rte.*` events); throws std::invalid_argument with
// the missing field's name when the shape is wrong.
ShardLoad shardLoadFromJson(const nlohmann::json& load);

struct WidthState {
  int64_t width = 1;
  std::optional<int64_t> lastResizeAt;
  friend bool operator==(const WidthState&, const WidthState&) = default;
};

// "shard-" + floor(draw * width), clamped into [0, width).
std::string candidateShard(double draw, int64_t width);
// inbound.inFlight * inbound.avg + outbound.inFlight * outbound.avg, absent averages as 0.
double shardPressure(const ShardLoad& load);
// routing.md 4 select: the shard chosen from the two draws over `observed` at `width`.
std::string selectShard(const std::map<std::string, ShardLoad>& observed, int64_t width, double drawA, double drawB);
// routing.md 4 resize: the state after one reply's load arrives at `now`.
WidthState resizeWidth(const WidthState& state, const ShardLoad& load, int64_t now, int64_t softBacklogLimit);

// routing.md 2: one direction of a RoutingLoad, as the spec states it (one sample per first finish,
// kept in the bucket of its second; a snapshot sums the seconds in (nowSec - 60, nowSec]). Times are
// the object's clock; a new incarnation starts a new window.
class LoadWindowModel {
 public:
  struct View {
    int64_t inFlight = 0;
    int64_t completed = 0;
    std::optional<double> averageMs;
  };
  void begin(int64_t sample, int64_t now);
  // The first finish of a begun sample adds it; any later one (or one never begun) changes nothing.
  void finish(int64_t sample, int64_t now);
  View snapshot(int64_t now) const;

 private:
  struct Bucket {
    std::optional<int64_t> second;
    int64_t count = 0;
    int64_t durationSum = 0;
  };
  std::map<int64_t, int64_t> running_;  // sample -> start
  std::map<int64_t, Bucket> buckets_;   // (second mod 60) -> bucket
};

}  // namespace durasim::model
