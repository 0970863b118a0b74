// The event-bus workload: Bus objects (workloads/bus_app.h), each hosting every topic and consumer of
// the seed's configuration. Topic and consumer names contain ':' and '%' (one even looks like an
// escaped form), and one consumer name serves every topic. Each seed draws every consumer's options
// (maxAttempts, retry delay: default, fixed, linear or an invalid function; pollMs, backoff, handler
// timeout) and its handler's behaviour before heal (succeeds, fails a share of calls, fails poison
// ids until quarantined, or outlives its timeout), and states them in "workload.config". Emitters
// emit with explicit ids (retried with the same id while the outcome is uncertain), some ids reused
// with another payload, some emits bounded by maxDepth, a few without an id (tried once) and a few
// with an empty topic or id, which must be refused definitely (EVT-25, checked here on the
// answers). While faults are on, a racer runs second pollers under existing consumer names, restarts
// loops (stop then start, maybe during a tick) and asks for consumers with an invalid maxAttempts
// (which must be refused, EVT-25, checked here); an operator releases dead events with several
// racing releases of one event; after heal the operator releases every quarantined event until every
// consumer has acknowledged every event.
#include "workloads/events_workload.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "sim/object_runtime.h"
#include "workloads/actor_stream.h"
#include "workloads/bus_app.h"
#include "workloads/bus_drivers.h"
#include "workloads/client.h"
#include "workloads/options.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kDefaultBuses = 2, kDefaultEmitters = 3, kDefaultOps = 25;
constexpr int64_t kMaxThinkMs = 3'000;
constexpr uint32_t kReusedIdPpm = 100'000;   // an earlier id of the topic, another payload
constexpr uint32_t kDepthBoundPpm = 80'000;  // emits with maxDepth
constexpr uint32_t kNoIdPpm = 50'000;        // emits without an id: one attempt
constexpr uint32_t kBadInputPpm = 30'000;    // an empty topic or id
constexpr int64_t kMaxDepthLo = 3, kMaxDepthHi = 30;
constexpr int64_t kRaceEveryMs = 15'000, kReleaseEveryMs = 20'000, kHealSweepEveryMs = 30'000;
constexpr int64_t kMaxRacingReleases = 3;
constexpr Backoff kCallBackoff{500, 10'000};
const char* const kTopicNames[] = {"orders", "a:b", "100%", "x%3A", "t:%:"};
const char* const kConsumerNames[] = {"audit", "c:1", "c%1", "mail:%3A"};
constexpr char kSharedConsumer[] = "shared";
constexpr double kInvalidAttempts[] = {0, -1, 2.5};

std::string busName(int64_t i) {
  std::string name = "b";
  name += std::to_string(i);
  return name;
}

class EventsWorkload final : public Workload {
 public:
  explicit EventsWorkload(const nlohmann::json& options) {
    reject_unknown_options(options, "events", {"buses", "emitters", "ops"});
    buses_ = positive_option(options, "events", "buses", kDefaultBuses);
    emitters_ = positive_option(options, "events", "emitters", kDefaultEmitters);
    ops_ = positive_option(options, "events", "ops", kDefaultOps);
  }

  void setup(sim::World& world, faults::FaultPlan& faults) override {
    world_ = &world;
    stream_ = world.random().stream("workload.events");
    drawConfig();
    nlohmann::json stated = config_.toJson();
    nlohmann::json labels = nlohmann::json::array();
    for (int64_t b = 0; b < buses_; ++b) labels.push_back(std::string(Bus::kClass) + "/" + busName(b));
    stated["buses"] = std::move(labels);
    world.emit("workload.config", std::move(stated));

    runtime_ = std::make_unique<sim::ObjectRuntime>(world, faults);
    runtime_->define_class(Bus::kClass, [this](ObjectContext& ctx) { return std::make_unique<Bus>(ctx, config_, &healed_); });
    client_ = std::make_unique<ObjectClient>(world, runtime_->client(Bus::kClass), kPlainCallStyle);
  }

  void start(sim::World& world) override {
    for (int64_t e = 0; e < emitters_; ++e) world.tasks().spawn("events.emitter." + std::to_string(e), emitter(e));
    world.tasks().spawn("events.racer", racer());
    world.tasks().spawn("events.operator", releaser());
  }

  void heal(sim::World& world) override {
    healed_ = true;
    runtime_->heal();
    world.tasks().spawn("events.healer", healer());
  }

  bool drained() const override { return emittersDone_ == emitters_ && runtime_->pending().empty() && undelivered().empty(); }

  std::vector<std::string> pending() const override {
    std::vector<std::string> items = runtime_->pending();
    if (emittersDone_ < emitters_) items.push_back(std::to_string(emitters_ - emittersDone_) + " emitters still running");
    for (const std::string& item : undelivered()) items.push_back(item);
    return items;
  }

  void check(sim::World&, sim::Tallies& tallies) override { tallies.merge(expectations_); }

  nlohmann::json metrics() const override {
    return {{"emits", emits_},     {"accepted", accepted_}, {"refused", refused_}, {"races", races_},
            {"releases", releases_}, {"calls", client_->calls()}, {"uncertain", client_->uncertain()}};
  }

 private:
  int64_t draw(int64_t lo, int64_t hi) { return world_->random().between(stream_, lo, hi); }
  template <class T, std::size_t N>
  const T& pick(const T (&choices)[N]) {
    return choices[draw(0, static_cast<int64_t>(N) - 1)];
  }

  // Three topics; on each the shared consumer and one or two of the others, each with drawn options.
  void drawConfig() {
    std::vector<std::string> topics(std::begin(kTopicNames), std::end(kTopicNames));
    while (topics.size() > 3) topics.erase(topics.begin() + draw(0, static_cast<int64_t>(topics.size()) - 1));
    config_.topics = topics;
    for (const std::string& topic : topics) {
      std::vector<std::string> names = {kSharedConsumer};
      const int64_t others = draw(1, 2);
      for (int64_t i = 0; i < others; ++i) {
        const std::string name = pick(kConsumerNames);
        if (std::find(names.begin(), names.end(), name) == names.end()) names.push_back(name);
      }
      const Draw drawing = [this](int64_t lo, int64_t hi) { return draw(lo, hi); };
      for (const std::string& name : names) config_.consumers.push_back(drawBusConsumer(drawing, topic, name));
    }
  }

  const BusConsumerConfig& anyConsumer(ActorStream& ops) {
    return config_.consumers[ops.index(config_.consumers.size())];
  }

  // (bus, topic, consumer) triples whose consumer has not acknowledged every event of its topic.
  std::vector<std::string> undelivered() const {
    std::vector<std::string> items;
    for (int64_t b = 0; b < buses_; ++b)
      for (std::string& item : unacknowledged(world_->stores(), std::string(Bus::kClass) + "/" + busName(b), config_.consumers))
        items.push_back(std::move(item));
    return items;
  }

  Task<void> emitter(int64_t e) {
    std::vector<std::pair<std::string, std::string>> sent;  // (topic, id) emitted with an explicit id
    ActorStream ops(world_->random(), "events", "emitter", e);
    for (int64_t i = 0; i < ops_ && ops.next_operation(); ++i) {
      co_await world_->sleep_for(ops.between(0, kMaxThinkMs));
      const std::string bus = busName(ops.between(0, buses_ - 1));
      std::string topic = config_.topics[ops.index(config_.topics.size())];
      std::string id = "e";
      id += std::to_string(e);
      id += ":";
      id += std::to_string(i);
      if (ops.between(0, 3) == 0) id += "%";
      if (!sent.empty() && ops.chance(kReusedIdPpm)) {
        const auto& again = sent[ops.index(sent.size())];
        topic = again.first;
        id = again.second;
      }
      nlohmann::json args = {{"topic", topic}, {"payload", {{"emitter", e}, {"op", i}}}, {"id", id}};
      if (ops.chance(kDepthBoundPpm)) args["maxDepth"] = ops.between(kMaxDepthLo, kMaxDepthHi);
      const bool bad = ops.chance(kBadInputPpm);
      if (bad) args[ops.between(0, 1) == 0 ? "topic" : "id"] = "";
      ++emits_;
      if (!bad && ops.chance(kNoIdPpm)) {
        args.erase("id");
        Task<Reply> once = client_->call(bus, "emit", args);
        const Reply reply = co_await once;
        tally(bus, args, reply, false);
        continue;
      }
      Task<Settled> emitting = client_->callUntilDefinite(bus, "emit", args, kCallBackoff);
      const Settled settled = co_await emitting;
      tally(bus, args, settled.reply, bad);
      if (!bad && settled.reply.ok() && settled.reply.value.contains("id")) sent.emplace_back(topic, id);
    }
    ++emittersDone_;
  }

  // What an emitter read: an empty topic or id the bus ran must be refused with TypeError or
  // RangeError (events.md 5).
  void tally(const std::string& bus, const nlohmann::json& args, const Reply& reply, bool bad) {
    if (!reply.ok()) return;  // refused by the runtime, or uncertain: the bus never answered
    const nlohmann::json& answer = reply.value;
    if (answer.contains("id")) ++accepted_;
    else ++refused_;
    if (!bad) return;
    const bool refusedAsBadInput = answer.contains("error") && (answer.at("error").at("name") == "TypeError" || answer.at("error").at("name") == "RangeError");
    expectations_.check("EVT-25", refusedAsBadInput, [&] {
      return "an emit to " + bus + " with " + args.dump() + " was answered " + answer.dump() + ", not TypeError or RangeError";
    });
  }

  // While faults are on: a second poller under an existing consumer name, a loop stopped and
  // started again at once, or a consumer asked for with an invalid maxAttempts (which must be
  // refused with RangeError, events.md 6.1).
  Task<void> racer() {
    ActorStream ops(world_->random(), "events", "racer");
    while (!healed_ && ops.next_operation()) {
      co_await world_->sleep_for(ops.between(1, kRaceEveryMs));
      if (healed_) break;
      const BusConsumerConfig& c = anyConsumer(ops);
      const std::string bus = busName(ops.between(0, buses_ - 1));
      const nlohmann::json who = {{"topic", c.topic}, {"consumer", c.name}};
      switch (ops.between(0, 3)) {
        case 0: {
          Task<Reply> restarting = client_->call(bus, "restart", who);
          co_await restarting;
          break;
        }
        case 1: {
          nlohmann::json args = who;
          args["maxAttempts"] = ops.pick(kInvalidAttempts);
          Task<Reply> subscribing = client_->call(bus, "subscribe", args);
          const Reply reply = co_await subscribing;
          if (reply.ok())
            expectations_.check("EVT-25", reply.value.contains("error") && reply.value.at("error").at("name") == "RangeError", [&] {
              return "a consumer asked of " + bus + " with " + args.dump() + " was answered " + reply.value.dump() + ", not RangeError";
            });
          break;
        }
        default: {
          ++races_;
          Task<Reply> polling = client_->call(bus, "poll", who);
          co_await polling;
          break;
        }
      }
    }
  }

  // While faults are on: lists a consumer's dead events and releases one of them with several
  // racing calls.
  Task<void> releaser() {
    ActorStream ops(world_->random(), "events", "releaser");
    while (!healed_ && ops.next_operation()) {
      co_await world_->sleep_for(ops.between(1, kReleaseEveryMs));
      if (healed_) break;
      const BusConsumerConfig& c = anyConsumer(ops);
      const std::string bus = busName(ops.between(0, buses_ - 1));
      Task<Reply> listing = client_->call(bus, "dead", {{"topic", c.topic}, {"consumer", c.name}});
      const Reply listed = co_await listing;
      if (!listed.ok() || !listed.value.contains("events") || listed.value.at("events").empty()) continue;
      const nlohmann::json& dead = listed.value.at("events");
      const std::string id = dead.at(ops.index(dead.size())).at("id").get<std::string>();
      const int64_t racing = ops.between(1, kMaxRacingReleases);
      for (int64_t r = 0; r < racing; ++r) world_->tasks().spawn("events.release", releaseOnce(bus, c.topic, c.name, id));
    }
  }

  Task<void> releaseOnce(std::string bus, std::string topic, std::string consumer, std::string id) {
    ++releases_;
    Task<Reply> releasing = client_->call(bus, "release", {{"topic", topic}, {"consumer", consumer}, {"id", id}});
    co_await releasing;
  }

  // After heal: releases every quarantined event, sweep after sweep, until all is delivered.
  Task<void> healer() {
    while (!undelivered().empty() || emittersDone_ < emitters_) {
      for (int64_t b = 0; b < buses_; ++b) {
        for (const BusConsumerConfig& c : config_.consumers) {
          Task<int64_t> releasing = releaseQuarantined(*client_, busName(b), c.topic, c.name);
          releases_ += co_await releasing;
        }
      }
      co_await world_->sleep_for(kHealSweepEveryMs);
    }
  }

  sim::World* world_ = nullptr;
  sim::StreamId stream_;
  BusConfig config_;
  bool healed_ = false;
  int64_t buses_ = 0, emitters_ = 0, ops_ = 0;
  std::unique_ptr<sim::ObjectRuntime> runtime_;
  std::unique_ptr<ObjectClient> client_;
  sim::Tallies expectations_;
  int64_t emittersDone_ = 0, emits_ = 0, accepted_ = 0, refused_ = 0, races_ = 0, releases_ = 0;
};

}  // namespace

WorkloadInfo events_workload_info() {
  return {"events",
          "Bus objects: the durable event bus with escaped topic and consumer names, emitters, racing pollers and releases, under faults",
          [](const nlohmann::json& options) -> std::unique_ptr<Workload> { return std::make_unique<EventsWorkload>(options); },
          {{"RT", ""}, {"EVT", Bus::kClass}},
          {{"buses", kDefaultBuses}, {"emitters", kDefaultEmitters}, {"ops", kDefaultOps}},
          // No cold store; no alarm is ever set (the bus polls on its own loop), though every commit
          // is a scheduling step (alarm.schedule_reject); its handlers misbehave as each consumer's
          // drawn behaviour says, not by workload.handler_*.
          faults::every_fault_but({"cold", "episode.cold_outage", "alarm.late", "alarm.duplicate", "alarm.spurious",
                                   "alarm.infra_failure", "alarm.lost", "alarm.early", "workload"})};
}

}  // namespace durasim::workloads
