// Executable spec of the routing client's default selection and adaptive width (routing.md 4): pure
// functions over plain values, time and random draws as arguments. The RTE-06 (width dynamics) and
// RTE-07 (selection rule) checks recompute the client's decisions with them.
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

}  // namespace durasim::model
