// Bus: the application object of the event-bus seed. It hosts the durable event bus on its own
// storage (SqliteWorkStore) with every topic and consumer of the seed's configuration, creating and
// starting each consumer's poll loop in every incarnation. Its handlers report each call
// ("app.evt.handle": what the handler received and whether it throws) and, before heal, fail as the
// consumer's behaviour says: "flaky" fails a drawn share of calls, "poison" fails every call for
// the events whose id marks them poison (they end quarantined), "slow" sometimes outlives the
// consumer's handler timeout; after heal every handler succeeds.
// RPC methods: emit {topic, payload, id?, maxDepth?} -> {id} | {error {name, message}} (reported as
// "app.evt.emitted"); poll {topic, consumer}: one pass of a second poller under the consumer's name,
// racing the loop (events.md 6.8) -> {delivered} | {error}; release {topic, consumer, id} ->
// {released}; dead {topic, consumer} -> {events [{id, status}]}; restart {topic, consumer}: stops the
// consumer's loop and starts it again at once (possibly during a tick, events.md 7) -> {};
// subscribe {topic, consumer, maxAttempts}: a consumer built with options a client chose, refused
// when they are invalid (events.md 6.1) -> {} | {error {name, message}}.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/events.h"
#include "engine/events_store.h"

namespace durasim::workloads {

// One consumer of the configuration and how its handler behaves before heal.
struct BusConsumerConfig {
  std::string topic, name;
  std::string behaviour = "ok";  // "ok" | "flaky" | "poison" | "slow"
  double maxAttempts = events::kDefaultMaxAttempts;
  std::string retryKind = "default";  // "default" | "fixed" | "linear" | "invalid"
  int64_t retryMs = 0;                // fixed: the delay; linear: the step per attempt
  int64_t pollMs = events::kDefaultPollMs;
  bool backoff = true;
  std::optional<int64_t> maxPollMs;
  std::optional<int64_t> handlerTimeoutMs;
  nlohmann::json toJson() const;
};

struct BusConfig {
  std::vector<std::string> topics;
  std::vector<BusConsumerConfig> consumers;
  double failChance = 0.3;  // "flaky": the share of calls that fail
  // What the checkers must know of the application, as stated in the "workload.config" event.
  nlohmann::json toJson() const;
};

// Whether an event id marks the event poison (its "poison" consumers fail it until heal).
bool poisonId(std::string_view id);

class Bus final : public DurableObject {
 public:
  static constexpr const char* kClass = "Bus";

  // `healed` outlives the object: from heal on every handler succeeds.
  Bus(ObjectContext& ctx, const BusConfig& config, const bool* healed);
  Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) override;

 private:
  events::ConsumerOptions options(const BusConsumerConfig& consumer) const;
  events::EventHandler handler(const BusConsumerConfig& consumer);
  Task<void> handle(BusConsumerConfig consumer, nlohmann::json payload, events::EventMeta meta);
  const BusConsumerConfig& consumerOf(const std::string& topic, const std::string& name) const;
  Task<nlohmann::json> emit(nlohmann::json args);
  Task<nlohmann::json> pollOnce(std::string topic, std::string name);
  Task<nlohmann::json> release(std::string topic, std::string name, std::string id);
  Task<nlohmann::json> dead(std::string topic, std::string name);
  nlohmann::json restart(const std::string& topic, const std::string& name);
  nlohmann::json subscribe(const std::string& topic, const std::string& name, double maxAttempts);

  ObjectContext& ctx_;
  BusConfig config_;
  const bool* healed_;
  events::SqliteWorkStore store_;
  events::EventsContext bus_;
  std::vector<std::shared_ptr<events::Consumer>> consumers_;  // in the order of config.consumers
};

}  // namespace durasim::workloads
