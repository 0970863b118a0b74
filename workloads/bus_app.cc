// Bus; see bus_app.h.
#include "workloads/bus_app.h"

#include <cmath>
#include <limits>
#include <stdexcept>
#include <utility>

#include "engine/event_bus_events.h"
#include "engine/json_text.h"
#include "engine/runtime_errors.h"

namespace durasim::workloads {
namespace {

constexpr double kSlowChance = 0.2;        // a "slow" handler outlives its timeout
constexpr int64_t kSlowOverrunMs = 1'000;  // ... by this much
constexpr uint32_t kPoisonModulus = 7;     // one id in seven is poison

nlohmann::json maxAttemptsJson(double maxAttempts) {
  return std::isinf(maxAttempts) ? nlohmann::json("inf") : nlohmann::json(static_cast<int64_t>(maxAttempts));
}

nlohmann::json errorJson(const std::string& name, const std::string& message) {
  return {{"error", {{"name", name}, {"message", message}}}};
}

}  // namespace

nlohmann::json BusConsumerConfig::toJson() const {
  nlohmann::json retry = {{"kind", retryKind}};
  if (retryKind == "fixed") retry["delayMs"] = retryMs;
  if (retryKind == "linear") retry["stepMs"] = retryMs;
  return {{"topic", topic},
          {"name", name},
          {"behaviour", behaviour},
          {"maxAttempts", maxAttemptsJson(maxAttempts)},
          {"retry", std::move(retry)},
          {"pollMs", pollMs},
          {"backoff", backoff},
          {"maxPollMs", maxPollMs ? nlohmann::json(*maxPollMs) : nlohmann::json()},
          {"handlerTimeoutMs", handlerTimeoutMs ? nlohmann::json(*handlerTimeoutMs) : nlohmann::json()}};
}

nlohmann::json BusConfig::toJson() const {
  nlohmann::json list = nlohmann::json::array();
  for (const BusConsumerConfig& c : consumers) list.push_back(c.toJson());
  return {{"topics", topics}, {"consumers", std::move(list)}, {"failChance", failChance}};
}

// FNV-1a over the id's bytes: a property of the id alone, the same in every incarnation.
bool poisonId(std::string_view id) {
  uint32_t hash = 2166136261u;
  for (const char c : id) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 16777619u;
  }
  return hash % kPoisonModulus == 0;
}

Bus::Bus(ObjectContext& ctx, const BusConfig& config, const bool* healed)
    : ctx_(ctx), config_(config), healed_(healed), store_(ctx), bus_(events::EventsContext::of(ctx, store_)) {
  for (const BusConsumerConfig& c : config_.consumers) {
    std::shared_ptr<events::Consumer> consumer = events::createConsumer(bus_, c.topic, handler(c), options(c));
    consumer->start();
    consumers_.push_back(std::move(consumer));
  }
}

events::ConsumerOptions Bus::options(const BusConsumerConfig& c) const {
  events::ConsumerOptions o;
  o.name = c.name;
  o.pollMs = c.pollMs;
  o.backoff = c.backoff;
  o.maxPollMs = c.maxPollMs;
  o.maxAttempts = c.maxAttempts;
  o.handlerTimeoutMs = c.handlerTimeoutMs;
  if (c.retryKind == "fixed") {
    o.retryDelayMs = static_cast<double>(c.retryMs);
  } else if (c.retryKind == "linear") {
    const double step = static_cast<double>(c.retryMs);
    o.retryDelayMs = events::RetryDelayFn([step](int64_t attempt) { return step * static_cast<double>(attempt); });
  } else if (c.retryKind == "invalid") {
    o.retryDelayMs = events::RetryDelayFn([](int64_t) { return std::numeric_limits<double>::quiet_NaN(); });
  }
  return o;
}

events::EventHandler Bus::handler(const BusConsumerConfig& consumer) {
  return [this, consumer](const nlohmann::json& payload, const events::EventMeta& meta) { return handle(consumer, payload, meta); };
}

// The application's handler: how it behaves before heal is the consumer's behaviour; it reports
// every call just before it returns or throws.
Task<void> Bus::handle(BusConsumerConfig consumer, nlohmann::json payload, events::EventMeta meta) {
  bool fail = false;
  if (!*healed_) {
    if (consumer.behaviour == "flaky") fail = ctx_.random.random() < config_.failChance;
    if (consumer.behaviour == "poison") fail = poisonId(meta.id);
    if (consumer.behaviour == "slow" && consumer.handlerTimeoutMs && ctx_.random.random() < kSlowChance)
      co_await ctx_.clock.sleepFor(*consumer.handlerTimeoutMs + kSlowOverrunMs);
  }
  std::string error;
  if (fail) {
    error = "handler of ";
    error += consumer.name;
    error += " failed";
  }
  ctx_.probe(event_bus_events::kAppHandle, {{"topic", meta.topic},
                                            {"consumer", consumer.name},
                                            {"id", meta.id},
                                            {"payload", payload},
                                            {"failed", fail},
                                            {"error", fail ? nlohmann::json(error) : nlohmann::json()}});
  if (fail) throw std::runtime_error(error);
}

const BusConsumerConfig& Bus::consumerOf(const std::string& topic, const std::string& name) const {
  for (const BusConsumerConfig& c : config_.consumers)
    if (c.topic == topic && c.name == name) return c;
  throw std::invalid_argument("Bus has no consumer " + name);
}

Task<nlohmann::json> Bus::call(std::string_view method, const nlohmann::json& args) {
  if (method == "emit") {
    Task<nlohmann::json> emitting = emit(args);
    co_return co_await emitting;
  }
  if (method == "poll") {
    Task<nlohmann::json> polling = pollOnce(args.at("topic").get<std::string>(), args.at("consumer").get<std::string>());
    co_return co_await polling;
  }
  if (method == "release") {
    Task<nlohmann::json> releasing =
        release(args.at("topic").get<std::string>(), args.at("consumer").get<std::string>(), args.at("id").get<std::string>());
    co_return co_await releasing;
  }
  if (method == "dead") {
    Task<nlohmann::json> listing = dead(args.at("topic").get<std::string>(), args.at("consumer").get<std::string>());
    co_return co_await listing;
  }
  if (method == "restart") co_return restart(args.at("topic").get<std::string>(), args.at("consumer").get<std::string>());
  if (method == "subscribe")
    co_return subscribe(args.at("topic").get<std::string>(), args.at("consumer").get<std::string>(), args.at("maxAttempts").get<double>());
  throw std::invalid_argument("Bus has no method " + std::string(method));
}

Task<nlohmann::json> Bus::emit(nlohmann::json args) {
  const std::string topic = args.at("topic").get<std::string>();
  const nlohmann::json payload = args.at("payload");
  events::EmitOptions options;
  if (args.contains("id")) options.id = args.at("id").get<std::string>();
  if (args.contains("maxDepth")) options.maxDepth = args.at("maxDepth").get<int64_t>();
  EventFields reported = {{"topic", topic}, {"payload", jsonText(payload)}};
  try {
    Task<std::string> emitting = events::emit(bus_, topic, payload, options);
    const std::string id = co_await emitting;
    reported.update({{"id", id}, {"ok", true}, {"error", nullptr}});
    ctx_.probe(event_bus_events::kAppEmitted, std::move(reported));
    co_return nlohmann::json{{"id", id}};
  } catch (const DurabilityError& e) {
    reported.update({{"id", options.id.value_or("")}, {"ok", false}, {"error", e.name()}});
    ctx_.probe(event_bus_events::kAppEmitted, std::move(reported));
    co_return errorJson(e.name(), e.what());
  }
}

// A second poller under the consumer's name (events.md 6.8), one pass, racing the loop.
Task<nlohmann::json> Bus::pollOnce(std::string topic, std::string name) {
  const BusConsumerConfig& config = consumerOf(topic, name);
  std::shared_ptr<events::Consumer> second = events::createConsumer(bus_, topic, handler(config), options(config));
  Task<int64_t> polling = second->poll();
  const int64_t delivered = co_await polling;
  co_return nlohmann::json{{"delivered", delivered}};
}

nlohmann::json Bus::restart(const std::string& topic, const std::string& name) {
  for (std::size_t i = 0; i < config_.consumers.size(); ++i) {
    if (config_.consumers[i].topic != topic || config_.consumers[i].name != name) continue;
    consumers_[i]->stop();
    consumers_[i]->start();
    return nlohmann::json::object();
  }
  throw std::invalid_argument("Bus has no consumer " + name);
}

// A consumer with the configured options but a client's maxAttempts; nothing polls it.
nlohmann::json Bus::subscribe(const std::string& topic, const std::string& name, double maxAttempts) {
  events::ConsumerOptions o = options(consumerOf(topic, name));
  o.maxAttempts = maxAttempts;
  try {
    events::createConsumer(bus_, topic, handler(consumerOf(topic, name)), std::move(o));
  } catch (const DurabilityError& e) {
    return errorJson(e.name(), e.what());
  }
  return nlohmann::json::object();
}

Task<nlohmann::json> Bus::release(std::string topic, std::string name, std::string id) {
  Task<bool> releasing = events::retryDeadEvent(bus_, topic, name, id);
  const bool released = co_await releasing;
  co_return nlohmann::json{{"released", released}};
}

Task<nlohmann::json> Bus::dead(std::string topic, std::string name) {
  Task<std::vector<events::DeadEvent>> listing = events::listDeadEvents(bus_, topic, name);
  const std::vector<events::DeadEvent> found = co_await listing;
  nlohmann::json list = nlohmann::json::array();
  for (const events::DeadEvent& e : found) list.push_back({{"id", e.id}, {"status", events::toString(e.status)}});
  co_return nlohmann::json{{"events", std::move(list)}};
}

}  // namespace durasim::workloads
