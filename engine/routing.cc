// The shared state of a RoutingClient and its views (routing.md): the capped, windowed observation
// map (3.1 steps 1 and 5), power-of-two-choices selection and the adaptive width (4), and the
// client's validation messages (errors-and-contract.md 2).
#include "engine/routing.h"

#include <cmath>

#include "engine/conventions.h"

namespace durasim {

namespace {

// inbound.inFlight * inbound.avg + outbound.inFlight * outbound.avg, absent averages as 0 (4 step 4).
double pressure(const LoadSnapshot& load) {
  return static_cast<double>(load.inbound.inFlight) * load.inbound.averageProcessingMs.value_or(0) +
         static_cast<double>(load.outbound.inFlight) * load.outbound.averageProcessingMs.value_or(0);
}

}  // namespace

namespace detail {

nlohmann::json loadToJson(const LoadSnapshot& load) {
  auto direction = [](const ProcessingLoad& d) {
    return JsonFields()
        .add("inFlight", d.inFlight)
        .add("completed", d.completed)
        .add("averageProcessingMs", json_or_null(d.averageProcessingMs));
  };
  return JsonFields()
      .add("observedAt", load.observedAt)
      .add("windowMs", load.windowMs)
      .add("inbound", direction(load.inbound))
      .add("outbound", direction(load.outbound).add("pendingDeliveries", load.outbound.pendingDeliveries));
}

// ---------------------------------------------------------------------------------------------
// Observations (routing.md 3.1 steps 1 and 5)

Observations RoutingCore::observations(int64_t now) {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (now - it->second.load.observedAt >= kRoutingWindowMs) {
      byUpdate_.erase(it->second.sequence);
      changed(it->first);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  Observations copy;
  for (const auto& [shard, entry] : entries_) copy.emplace(shard, entry.load);
  return copy;
}

ObservationOutcome RoutingCore::record(const std::string& shard, const LoadSnapshot& load) {
  ObservationOutcome outcome;
  auto it = entries_.find(shard);
  if (it != entries_.end()) {
    outcome.stored = it->second.load.observedAt;
    if (load.observedAt < it->second.load.observedAt) {  // an older reply never replaces a fresher one
      outcome.size = entries_.size();
      return outcome;
    }
    byUpdate_.erase(it->second.sequence);
    it->second.load = load;
  } else {
    it = entries_.emplace(shard, Entry{load, 0}).first;
  }
  outcome.kept = true;
  changed(shard);
  it->second.sequence = nextSequence_++;
  byUpdate_.emplace(it->second.sequence, shard);
  while (entries_.size() > kRoutingMaxObservedShards) {  // evict the least recently updated
    auto oldest = byUpdate_.begin();
    outcome.evicted.push_back(oldest->second);
    changed(oldest->second);
    entries_.erase(oldest->second);
    byUpdate_.erase(oldest);
  }
  outcome.size = entries_.size();
  return outcome;
}

void RoutingCore::changed(const std::string& shard) {
  if (rebuild_) return;
  changed_.insert(shard);
  if (changed_.size() > kRoutingMaxObservedShards) {
    changed_.clear();
    rebuild_ = true;
  }
}

std::shared_ptr<const nlohmann::json> RoutingCore::observationsJson() {
  if (!json_ || rebuild_) {
    json_ = std::make_shared<nlohmann::json>(nlohmann::json::value_t::object);
    for (const auto& [shard, entry] : entries_) (*json_)[shard] = loadToJson(entry.load);
  } else {
    if (json_.use_count() > 1) json_ = std::make_shared<nlohmann::json>(*json_);  // an event still holds it
    for (const std::string& shard : changed_) {
      const auto it = entries_.find(shard);
      if (it == entries_.end())
        json_->erase(shard);
      else
        (*json_)[shard] = loadToJson(it->second.load);
    }
  }
  changed_.clear();
  rebuild_ = false;
  return json_;
}

// ---------------------------------------------------------------------------------------------
// Selection and width (routing.md 4)

ShardAddress RoutingCore::select(const Observations& observed, Random& random, std::array<double, 2>* draws) const {
  int drawn = 0;
  auto draw = [&] {
    const double value = random.random();
    if (draws) (*draws)[static_cast<std::size_t>(drawn++)] = value;
    const auto i = static_cast<int64_t>(std::floor(value * static_cast<double>(width_)));
    return kRoutingShardPrefix + std::to_string(std::clamp<int64_t>(i, 0, width_ - 1));
  };
  const std::string a = draw();
  const std::string b = draw();
  auto loadA = observed.find(a);
  if (loadA == observed.end()) return ShardAddress{a, std::nullopt};
  auto loadB = observed.find(b);
  if (loadB == observed.end()) return ShardAddress{b, std::nullopt};
  const int64_t pendingA = loadA->second.outbound.pendingDeliveries;
  const int64_t pendingB = loadB->second.outbound.pendingDeliveries;
  if (pendingA != pendingB) return ShardAddress{pendingA < pendingB ? a : b, std::nullopt};
  return ShardAddress{pressure(loadA->second) <= pressure(loadB->second) ? a : b, std::nullopt};
}

void RoutingCore::resize(const LoadSnapshot& load, int64_t now, int64_t softBacklogLimit) {
  if (now - load.observedAt >= kRoutingWindowMs) return;               // stale: too old
  if (lastResizeAt_ && load.observedAt < *lastResizeAt_) return;      // stale: before the last resize
  const int64_t pending = load.outbound.pendingDeliveries;
  if (pending > softBacklogLimit) {
    if (!lastResizeAt_ || now - *lastResizeAt_ >= kRoutingGrowIntervalMs) {
      width_ += 1;
      lastResizeAt_ = now;
    }
    return;
  }
  if (width_ > 1 && (!lastResizeAt_ || now - *lastResizeAt_ >= kRoutingShrinkIntervalMs) &&
      kRoutingShrinkBacklogFactor * pending < softBacklogLimit && load.inbound.inFlight == 0 &&
      load.outbound.inFlight == 0) {
    width_ -= 1;
    lastResizeAt_ = now;
  }
}

// ---------------------------------------------------------------------------------------------
// Validation (errors-and-contract.md 2)

std::optional<nlohmann::json> mergeRoutingContext(const std::optional<nlohmann::json>& bound,
                                                  const std::optional<nlohmann::json>& positional) {
  if ((bound && !bound->is_object()) || (positional && !positional->is_object()))
    throw TypeError("Routing context must be an object");
  if (!bound) return positional;
  if (!positional) return bound;
  nlohmann::json merged = *positional;
  for (const auto& [key, value] : bound->items()) merged[key] = value;
  return merged;
}

void validateRoutingOptions(bool hasInvoke, int64_t softBacklogLimit) {
  if (softBacklogLimit <= 0 || softBacklogLimit > kMaxSafeInteger)
    throw RangeError("softBacklogLimit must be a positive safe integer");
  if (!hasInvoke) throw TypeError("Routing requires an invoke function");
}

void validateRoutingTimeout(int64_t timeoutMs, bool hasMakeEvent, bool hasBackground) {
  if (timeoutMs <= 0) throw RangeError("timeoutMs must be a positive integer");
  if (!hasMakeEvent || !hasBackground)
    throw TypeError("Routing timeout requires the makeEvent and background options");
}

}  // namespace detail

}  // namespace durasim
