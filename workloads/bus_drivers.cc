// The shared Bus drivers; see bus_drivers.h.
#include "workloads/bus_drivers.h"

#include <limits>

#include "engine/event_bus_schema.h"
#include "engine/events_keys.h"

namespace durasim::workloads {
namespace {

constexpr Backoff kCallBackoff{500, 10'000};
const char* const kBehaviours[] = {"ok", "flaky", "poison", "slow"};
constexpr double kAttemptChoices[] = {1, 3, 8, std::numeric_limits<double>::infinity()};
constexpr int64_t kPollChoices[] = {100, 200, 1'000};
constexpr int64_t kFixedDelayChoices[] = {0, 200, 2'000};
constexpr int64_t kLinearStepMs = 500;
constexpr int64_t kHandlerTimeoutMs = 2'000;

}  // namespace

BusConsumerConfig drawBusConsumer(const Draw& draw, const std::string& topic, const std::string& name) {
  BusConsumerConfig c;
  c.topic = topic;
  c.name = name;
  c.behaviour = pick(draw, kBehaviours);
  c.maxAttempts = pick(draw, kAttemptChoices);
  switch (draw(0, 4)) {
    case 0:
      c.retryKind = "fixed";
      c.retryMs = pick(draw, kFixedDelayChoices);
      break;
    case 1:
      c.retryKind = "linear";
      c.retryMs = kLinearStepMs;
      break;
    case 2:
      c.retryKind = "invalid";
      break;
    default:
      c.retryKind = "default";
      break;
  }
  c.pollMs = pick(draw, kPollChoices);
  // Fixed intervals only at the slowest poll rate, so a long liveness phase stays cheap.
  c.backoff = c.pollMs < 1'000 || draw(0, 1) == 0;
  if (draw(0, 2) == 0) c.maxPollMs = c.pollMs * 8;
  if (c.behaviour == "slow" || draw(0, 3) == 0) c.handlerTimeoutMs = kHandlerTimeoutMs;
  return c;
}

std::vector<std::string> unacknowledged(const sim::StoreView& stores, const std::string& label,
                                        const std::vector<BusConsumerConfig>& consumers) {
  std::vector<std::string> items;
  if (!stores.has_table(label, DURASIM_EVENTS_LOG) || !stores.has_table(label, DURASIM_EVENTS_KV)) return items;
  for (const BusConsumerConfig& c : consumers) {
    const events::Keys keys(c.topic, c.name, true);
    const int64_t logged =
        stores.live(label, "SELECT count(*) AS n FROM " DURASIM_EVENTS_LOG " WHERE ns = ?", {keys.log()}).one().int64("n");
    const std::string prefix = keys.ack("");
    const int64_t acked = stores
                              .live(label, "SELECT count(*) AS n FROM " DURASIM_EVENTS_KV " WHERE substr(key, 1, ?) = ?",
                                    {static_cast<int64_t>(prefix.size()), prefix})
                              .one()
                              .int64("n");
    if (acked < logged)
      items.push_back(label + " " + c.topic + "/" + c.name + ": " + std::to_string(logged - acked) + " events not acknowledged");
  }
  return items;
}

Task<int64_t> releaseQuarantined(ObjectClient& client, std::string bus, std::string topic, std::string consumer) {
  int64_t releases = 0;
  Task<Settled> listing = client.callUntilDefinite(bus, "dead", {{"topic", topic}, {"consumer", consumer}}, kCallBackoff);
  const Settled listed = co_await listing;
  if (!listed.reply.ok() || !listed.reply.value.contains("events")) co_return releases;
  for (const nlohmann::json& dead : listed.reply.value.at("events")) {
    if (dead.at("status") != "quarantined") continue;
    ++releases;
    Task<Settled> releasing =
        client.callUntilDefinite(bus, "release", {{"topic", topic}, {"consumer", consumer}, {"id", dead.at("id")}}, kCallBackoff);
    co_await releasing;
  }
  co_return releases;
}

}  // namespace durasim::workloads
