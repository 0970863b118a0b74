// The event bus (events.md) on the simulated runtime: every conformance scenario of events.md 14
// (Scenario01..Scenario35), and the rules one at a time: escaping, backoff, retry delays, release
// causes, bad input, the store port, and the read counts of a consumer frozen behind a waiting
// event (the pending index, events.md 11).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/conventions.h"
#include "engine/event_bus_events.h"
#include "engine/event_bus_schema.h"
#include "engine/events.h"
#include "engine/variants.h"
#include "tests/runtime_test_harness.h"

namespace durasim::rt_test {
namespace {

using events::ConsumerOptions;
using events::EventMeta;
constexpr const char* kClass = "Bus";
const std::string kLabel = "Bus/b";
constexpr double kInf = std::numeric_limits<double>::infinity();

class Host;
// The handler of every consumer: `consumer` is the consumer's label.
using Behaviour = std::function<Task<void>(Host&, std::string consumer, json payload, EventMeta meta)>;

struct ConsumerSpec {
  std::string label, topic;
  ConsumerOptions options;
};
struct Call {
  std::string consumer, topic, id;
  int64_t t = 0;
  json payload;
};

// What the test configures and observes; outlives every incarnation.
struct Env {
  std::vector<ConsumerSpec> consumers;
  Behaviour behaviour;                        // empty: succeed
  std::map<std::string, int> failuresLeft;    // "consumer/id" -> failures still to throw (-1: always)
  std::vector<Call> calls;
  std::function<bool(Host&, std::string_view)> buggify;
  Host* host = nullptr;
  bool resetNow = false;
};

class Host final : public DurableObject {
 public:
  Host(ObjectContext& context, Env* environment)
      : ctx(context), env(environment), store(context), bus(events::EventsContext::of(context, store)) {
    env->host = this;
    for (const ConsumerSpec& spec : env->consumers) {
      const std::string label = spec.label;
      Env* e = env;
      consumers[label] = events::createConsumer(bus, spec.topic, [this, e, label](const json& payload, const EventMeta& meta) {
        return handle(this, e, label, payload, meta);
      }, spec.options);
    }
  }
  ~Host() override {
    if (env->host == this) env->host = nullptr;
  }

  static Task<void> handle(Host* host, Env* e, std::string label, json payload, EventMeta meta) {
    e->calls.push_back(Call{label, meta.topic, meta.id, host->ctx.clock.now(), payload});
    const std::string key = label + "/" + meta.id;
    if (auto it = e->failuresLeft.find(key); it != e->failuresLeft.end() && it->second != 0) {
      if (it->second > 0) --it->second;
      throw std::runtime_error("boom " + meta.id);
    }
    if (e->behaviour) {
      Task<void> running = e->behaviour(*host, label, payload, meta);
      co_await running;
    }
  }

  Task<json> call(std::string_view method, const json& args) override {
    try {
      if (method == "emit") {
        events::EmitOptions opts;
        if (args.contains("id")) opts.id = args.at("id").get<std::string>();
        if (args.contains("maxDepth")) opts.maxDepth = args.at("maxDepth").get<int64_t>();
        Task<std::string> emitting = events::emit(bus, args.at("topic").get<std::string>(), args.value("payload", json::object()), opts);
        const std::string id = co_await emitting;
        json out = json::object();
        out["id"] = id;
        co_return out;
      }
      if (method == "emitMany") {  // one unit, one sync
        store.atomically([&](events::WorkTxn& txn) {
          for (const json& id : args.at("ids")) {
            events::EmitOptions opts;
            opts.id = id.get<std::string>();
            events::emitIn(bus, txn, args.at("topic").get<std::string>(), json{{"n", id}}, opts);
          }
        });
        Task<void> syncing = store.sync();
        co_await syncing;
        co_return json::object();
      }
      if (method == "poll") {
        Task<int64_t> polling = consumers.at(args.at("consumer").get<std::string>())->poll();
        const int64_t delivered = co_await polling;
        co_return json(delivered);
      }
      if (method == "pollConcurrent") {
        std::vector<Task<int64_t>> polls;
        for (int i = 0; i < args.at("n").get<int>(); ++i) polls.push_back(consumers.at(args.at("consumer").get<std::string>())->poll());
        Task<std::vector<int64_t>> all = when_all(std::move(polls));
        const std::vector<int64_t> returned = co_await all;
        json out = returned;
        co_return out;
      }
      if (method == "release") {
        Task<events::ReleaseOutcome> releasing = events::releaseDeadEvent(bus, args.at("topic").get<std::string>(),
                                                                          args.at("consumer").get<std::string>(), args.at("id").get<std::string>());
        const events::ReleaseOutcome outcome = co_await releasing;
        json out = std::string(events::toString(outcome));
        co_return out;
      }
      if (method == "list") {
        Task<std::vector<events::DeadEvent>> listing = events::listDeadEvents(bus, args.at("topic").get<std::string>(), args.at("consumer").get<std::string>());
        json out = json::array();
        const std::vector<events::DeadEvent> dead = co_await listing;
        for (const events::DeadEvent& d : dead)
          out.push_back({{"id", d.id}, {"topic", d.topic}, {"consumer", d.consumer}, {"payload", d.payload}, {"status", events::toString(d.status)},
                         {"error", d.error}, {"attempts", d.attempts}, {"at", d.at}, {"releasedAt", d.releasedAt ? json(*d.releasedAt) : json()},
                         {"releases", d.releases}});
        co_return out;
      }
      if (method == "start") {
        consumers.at(args.at("consumer").get<std::string>())->start();
        co_return json::object();
      }
      if (method == "stop") {
        consumers.at(args.at("consumer").get<std::string>())->stop();
        co_return json::object();
      }
      if (method == "put") {
        store.put(args.at("key").get<std::string>(), args.at("value"));
        co_return json::object();
      }
      if (method == "stats") {
        const events::StoreStats& s = store.stats();
        co_return json{{"lists", s.lists}, {"gets", s.gets}, {"counts", s.counts}, {"writes", s.writes}, {"atomics", s.atomics}};
      }
    } catch (const DurabilityError& e) {
      co_return json{{"error", e.name()}, {"message", e.what()}};
    }
    co_return json::object();
  }

  ObjectContext& ctx;
  Env* env;
  events::SqliteWorkStore store;
  events::EventsContext bus;
  std::map<std::string, std::shared_ptr<events::Consumer>> consumers;
};

struct EnvHolder {
  Env env;
};

// A World (starting at `start`, with `variants`), all latencies 0, one Bus object.
struct BusRig : EnvHolder {
  explicit BusRig(SimTime start = kStart, std::set<std::string> variants = {})
      : world(start, sim::RandomSource::recording(1), sink), runtime((faults.set_world(&world), world), faults, options(std::move(variants))) {
    faults.set_latency(LatencyKind::rpc, 0);
    faults.set_latency(LatencyKind::cold, 0);
    faults.set_latency(LatencyKind::confirm, 0);
    Env* e = &env;
    faults.set_rule([e](FaultKind kind, const sim::FaultSite&, int64_t) {
      if (kind != FaultKind::object_reset || !e->resetNow) return false;
      e->resetNow = false;
      return true;
    });
    runtime.set_buggify([e](std::string_view site) { return e->buggify && e->host ? e->buggify(*e->host, site) : false; });
    runtime.define_class(kClass, [e](ObjectContext& ctx) { return std::make_unique<Host>(ctx, e); });
  }
  ~BusRig() { world.tasks().cancel_all(); }
  static sim::RuntimeOptions options(std::set<std::string> variants) {
    sim::RuntimeOptions o;
    o.variants = std::move(variants);
    return o;
  }

  void consumer(const std::string& label, const std::string& topic, ConsumerOptions o = {}) {
    if (o.name.empty()) o.name = label;
    env.consumers.push_back({label, topic, std::move(o)});
  }
  SimTime now() const { return world.now(); }
  void advanceTo(SimTime t) {
    world.executor().at(t, [] {});
    world.run_until(t, [] { return true; });
  }
  void advance(SimTime ms) { advanceTo(now() + ms); }

  // Calls `method` and runs the current instant (and `ms` more) until it answers.
  json call(const std::string& method, json args = json::object(), SimTime ms = 0) {
    auto out = std::make_shared<CallResult>();
    world.tasks().spawn("client." + method, client_call(&world, runtime.client(kClass).get("b"), method, std::move(args), 0, out));
    world.run_until(now(), [] { return true; });
    if (ms > 0) advance(ms);
    for (int i = 0; i < 1000 && !out->done; ++i) advance(1);
    EXPECT_TRUE(out->ok) << method << ": " << out->error;
    return out->value;
  }
  std::string emit(const std::string& topic, const std::string& id, json payload = json::object()) {
    return call("emit", {{"topic", topic}, {"id", id}, {"payload", payload}}).value("id", "");
  }
  void emitMany(const std::string& topic, const std::vector<std::string>& ids) { call("emitMany", {{"topic", topic}, {"ids", ids}}); }
  int64_t poll(const std::string& consumer) { return call("poll", {{"consumer", consumer}}).get<int64_t>(); }
  std::string release(const std::string& topic, const std::string& consumer, const std::string& id) {
    return call("release", {{"topic", topic}, {"consumer", consumer}, {"id", id}}).get<std::string>();
  }
  json list(const std::string& topic, const std::string& consumer) { return call("list", {{"topic", topic}, {"consumer", consumer}}); }

  json rows(const std::string& sql) { return rows_json(runtime.world().stores().live(kLabel, sql)); }
  // The whole store: every KV pair and log record.
  json snapshot() {
    return json{{"kv", rows("SELECT key, value FROM " DURASIM_EVENTS_KV " ORDER BY key")},
                {"log", rows("SELECT seq, ns, id, payload, ts FROM " DURASIM_EVENTS_LOG " ORDER BY seq")}};
  }
  std::optional<json> kv(const std::string& key) {
    for (const json& r : rows("SELECT key, value FROM " DURASIM_EVENTS_KV))
      if (r.at("key") == key) return deserialize(r.at("value").get<std::string>());
    return std::nullopt;
  }
  std::vector<std::string> idsIn(const std::string& ns) {
    std::vector<std::string> out;
    for (const json& r : rows("SELECT ns, id FROM " DURASIM_EVENTS_LOG " ORDER BY seq"))
      if (r.at("ns") == ns) out.push_back(r.at("id").get<std::string>());
    return out;
  }
  int64_t seqOf(const std::string& ns, const std::string& id) {
    for (const json& r : rows("SELECT seq, ns, id FROM " DURASIM_EVENTS_LOG))
      if (r.at("ns") == ns && r.at("id") == id) return r.at("seq").get<int64_t>();
    return -1;
  }
  events::Keys keys(const std::string& topic, const std::string& consumer = "") const { return events::Keys(topic, consumer, true); }
  std::optional<int64_t> cursor(const std::string& topic, const std::string& consumer) {
    const std::optional<json> c = kv(keys(topic, consumer).cursor());
    if (!c) return std::nullopt;
    return std::stoll(c->get<std::string>());
  }

  std::vector<json> probes(std::string_view type) const {
    std::vector<json> out;
    for (const json& e : sink.events)
      if (e.at("ev") == type) out.push_back(e);
    return out;
  }
  // Bus log lines (level warn or error) named `event`; all bus lines when empty.
  std::vector<json> logs(const std::string& event = "") const {
    std::vector<json> out;
    for (const json& e : sink.of("log")) {
      const std::string name = e.at("event").get<std::string>();
      if (name.rfind("events.", 0) != 0) continue;
      if (event.empty() || name == event) out.push_back(e);
    }
    return out;
  }
  json lastReads() const { return probes(event_bus_events::kPollEnd).back().at("reads"); }
  std::vector<Call> callsOf(const std::string& consumer, const std::string& id = "") const {
    std::vector<Call> out;
    for (const Call& c : env.calls)
      if (c.consumer == consumer && (id.empty() || c.id == id)) out.push_back(c);
    return out;
  }
  void failAlways(const std::string& consumer, const std::string& id) { env.failuresLeft[consumer + "/" + id] = -1; }
  void failTimes(const std::string& consumer, const std::string& id, int n) { env.failuresLeft[consumer + "/" + id] = n; }
  void heal(const std::string& consumer, const std::string& id) { env.failuresLeft.erase(consumer + "/" + id); }

  CollectSink sink;
  sim::World world;
  ScriptedFaults faults;
  sim::ObjectRuntime runtime;
};

ConsumerOptions immediate(double maxAttempts = events::kDefaultMaxAttempts) {
  ConsumerOptions o;
  o.retryDelayMs = 0.0;
  o.maxAttempts = maxAttempts;
  return o;
}

std::vector<std::string> ids(const std::string& prefix, int n) {
  std::vector<std::string> out;
  for (int i = 1; i <= n; ++i) out.push_back(prefix + std::to_string(i));
  return out;
}

// ---------------------------------------------------------------------------------------------
// events.md 14: the conformance scenarios

TEST(EventsConformance, Scenario01TwoConsumersEachDeliverOnce) {
  BusRig rig;
  rig.consumer("c1", "t", immediate());
  rig.consumer("c2", "t", immediate());
  for (const std::string& id : ids("e", 3)) rig.emit("t", id);
  EXPECT_EQ(rig.poll("c1"), 3);
  EXPECT_EQ(rig.poll("c2"), 3);
  EXPECT_EQ(rig.poll("c1"), 0);
  EXPECT_EQ(rig.poll("c2"), 0);
  rig.emit("t", "e4");
  EXPECT_EQ(rig.poll("c1"), 1);
  EXPECT_EQ(rig.poll("c2"), 1);
  EXPECT_EQ(rig.callsOf("c1").size(), 4u);
  EXPECT_EQ(rig.callsOf("c2").size(), 4u);
}

TEST(EventsConformance, Scenario02ConcurrentPollsCountEachAckOnce) {
  BusRig rig;
  rig.consumer("c", "t", immediate());
  rig.env.behaviour = [](Host& host, std::string, json, EventMeta) -> Task<void> {
    Task<void> sleeping = host.ctx.clock.sleepFor(1);  // the three passes interleave
    co_await sleeping;
  };
  for (const std::string& id : ids("e", 3)) rig.emit("t", id);
  const json returned = rig.call("pollConcurrent", {{"consumer", "c"}, {"n", 3}}, 10);
  int64_t sum = 0;
  for (const json& r : returned) sum += r.get<int64_t>();
  EXPECT_EQ(sum, 3);
  EXPECT_GE(rig.callsOf("c").size(), 3u);
  for (const std::string& id : ids("e", 3)) EXPECT_TRUE(rig.kv(rig.keys("t", "c").ack(id)));
}

TEST(EventsConformance, Scenario03SixtyEventsInOnePoll) {
  BusRig rig;
  rig.consumer("c", "t", immediate());
  rig.emitMany("t", ids("e", 60));
  EXPECT_EQ(rig.poll("c"), 60);
  EXPECT_EQ(rig.callsOf("c").size(), 60u);
  EXPECT_EQ(rig.cursor("t", "c"), rig.seqOf(rig.keys("t").log(), "e60"));
}

TEST(EventsConformance, Scenario04LateConsumerDeliversEverything) {
  BusRig rig;
  rig.consumer("early", "t", immediate());
  rig.consumer("late", "t", immediate());
  rig.emitMany("t", ids("e", 30));
  EXPECT_EQ(rig.poll("early"), 30);
  rig.emitMany("t", ids("f", 25));
  EXPECT_EQ(rig.poll("early"), 25);
  EXPECT_EQ(rig.poll("late"), 55);
  EXPECT_EQ(rig.cursor("t", "early"), rig.cursor("t", "late"));
  EXPECT_NE(rig.keys("t", "early").cursor(), rig.keys("t", "late").cursor());
}

TEST(EventsConformance, Scenario05FailingEventDoesNotBlockThePass) {
  BusRig rig;
  rig.consumer("c", "t", immediate());
  for (const std::string& id : ids("e", 3)) rig.emit("t", id);
  rig.failTimes("c", "e2", 1);
  EXPECT_EQ(rig.poll("c"), 2);
  EXPECT_EQ(rig.logs("events.handler.retrying").size(), 1u);
  EXPECT_EQ(rig.logs().size(), 1u);
  EXPECT_FALSE(rig.kv(rig.keys("t", "c").ack("e2")));
  EXPECT_EQ(rig.poll("c"), 1);
  EXPECT_EQ(rig.poll("c"), 0);
}

TEST(EventsConformance, Scenario06PendingIndexHoldsTheFailedEvent) {
  BusRig rig;
  rig.consumer("c", "t", immediate());
  rig.emitMany("t", ids("e", 60));
  rig.failTimes("c", "e10", 1);
  EXPECT_EQ(rig.poll("c"), 59);
  EXPECT_EQ(rig.idsIn(rig.keys("t", "c").pending()), std::vector<std::string>{"e10"});
  EXPECT_EQ(rig.cursor("t", "c"), rig.seqOf(rig.keys("t").log(), "e60"));
  EXPECT_EQ(rig.poll("c"), 1);
  EXPECT_TRUE(rig.idsIn(rig.keys("t", "c").pending()).empty());
}

std::vector<SimTime> tickTimes(const BusRig& rig, SimTime since) {
  std::vector<SimTime> out;
  for (const json& e : rig.probes(event_bus_events::kTickBegin)) out.push_back(e.at("t").get<SimTime>() - since);
  return out;
}

TEST(EventsConformance, Scenario07BackoffDoublesOnAnEmptyTopic) {
  BusRig rig;
  ConsumerOptions o;
  o.pollMs = 15;
  o.maxPollMs = 120;
  rig.consumer("c", "t", o);
  const SimTime t0 = rig.now();
  rig.call("start", {{"consumer", "c"}});
  rig.advance(320);
  EXPECT_EQ(tickTimes(rig, t0), (std::vector<SimTime>{15, 45, 105, 225}));
}

TEST(EventsConformance, Scenario08DeliveryResetsTheInterval) {
  BusRig rig;
  ConsumerOptions o;
  o.pollMs = 10;
  o.maxPollMs = 80;
  rig.consumer("c", "t", o);
  const SimTime t0 = rig.now();
  rig.call("start", {{"consumer", "c"}});
  rig.advanceTo(t0 + 200);
  rig.emit("t", "e1");
  rig.advanceTo(t0 + 245);
  EXPECT_EQ(tickTimes(rig, t0), (std::vector<SimTime>{10, 30, 70, 150, 230, 240}));
  ASSERT_EQ(rig.callsOf("c").size(), 1u);
  EXPECT_EQ(rig.callsOf("c")[0].t - t0, 230);
}

TEST(EventsConformance, Scenario09FixedIntervalWithoutBackoff) {
  BusRig rig;
  ConsumerOptions o;
  o.pollMs = 10;
  o.backoff = false;
  rig.consumer("c", "t", o);
  const SimTime t0 = rig.now();
  rig.call("start", {{"consumer", "c"}});
  rig.advanceTo(t0 + 205);
  EXPECT_EQ(tickTimes(rig, t0).size(), 20u);
}

TEST(EventsConformance, Scenario10SlowHandlerNeverOverlapsTicks) {
  BusRig rig;
  ConsumerOptions o = immediate();
  o.pollMs = 10;
  rig.consumer("c", "t", o);
  rig.env.behaviour = [](Host& host, std::string, json, EventMeta) -> Task<void> {
    Task<void> sleeping = host.ctx.clock.sleepFor(60);
    co_await sleeping;
  };
  for (const std::string& id : ids("e", 3)) rig.emit("t", id);
  rig.call("start", {{"consumer", "c"}});
  rig.advance(500);
  int open = 0, most = 0;
  for (const json& e : rig.sink.events) {
    if (e.at("ev") == event_bus_events::kTickBegin) most = std::max(most, ++open);
    if (e.at("ev") == event_bus_events::kTickEnd) --open;
  }
  EXPECT_EQ(most, 1);
  EXPECT_EQ(rig.callsOf("c").size(), 3u);
}

TEST(EventsConformance, Scenario11MaxDepth) {
  BusRig rig;
  for (int i = 0; i < 3; ++i) rig.emit("t", "u" + std::to_string(i));  // no maxDepth: unbounded
  EXPECT_EQ(rig.call("emit", {{"topic", "t"}, {"id", "a"}, {"maxDepth", 5}}).value("id", ""), "a");
  EXPECT_EQ(rig.call("emit", {{"topic", "t"}, {"id", "b"}, {"maxDepth", 5}}).value("id", ""), "b");
  const json before = rig.snapshot();
  const json refused = rig.call("emit", {{"topic", "t"}, {"id", "c"}, {"maxDepth", 5}});
  EXPECT_EQ(refused.value("error", ""), "EventDepthExceededError");
  EXPECT_EQ(refused.value("message", ""), "topic depth limit exceeded (5 >= 5) for topic \"t\"");
  const std::vector<json> probe = rig.probes(event_bus_events::kEmitRefused);
  ASSERT_EQ(probe.size(), 1u);
  EXPECT_EQ(probe[0].at("depth"), 5);
  EXPECT_EQ(rig.snapshot(), before);
  EXPECT_EQ(rig.call("emit", {{"topic", "t"}, {"id", "a"}, {"maxDepth", 5}, {"payload", {{"other", 1}}}}).value("id", ""), "a");
  EXPECT_EQ(rig.snapshot(), before);
  EXPECT_EQ(rig.call("emit", {{"topic", "t"}, {"id", "z"}, {"maxDepth", 0}}).value("error", ""), "EventDepthExceededError");
}

// Scenarios 12-17 share one setup: 120 events, event 3 always throws, maxAttempts 5.
struct Poisoned : BusRig {
  Poisoned() {
    consumer("c", "t", immediate(5));
    consumer("d", "t", immediate(5));
    emitMany("t", ids("e", 120));
    failAlways("c", "e3");
  }
  void quarantine() {
    EXPECT_EQ(poll("c"), 119);
    for (int i = 0; i < 4; ++i) EXPECT_EQ(poll("c"), 0);
  }
};

TEST(EventsConformance, Scenario12QuarantineAfterMaxAttempts) {
  Poisoned rig;
  rig.quarantine();
  const std::optional<json> dead = rig.kv(rig.keys("t", "c").dead("e3"));
  ASSERT_TRUE(dead);
  EXPECT_EQ(dead->at("attempts"), 5);
  EXPECT_EQ(dead->at("error"), "boom e3");
  EXPECT_FALSE(dead->contains("releasedAt"));
  ASSERT_EQ(rig.logs("events.handler.quarantined").size(), 1u);
  EXPECT_NE(rig.logs("events.handler.quarantined")[0].at("fields").at("message").get<std::string>().find("QUARANTINED"), std::string::npos);
  const std::size_t calls = rig.callsOf("c").size();
  EXPECT_EQ(rig.callsOf("c", "e3").size(), 5u);
  rig.advance(86'400'000);
  EXPECT_EQ(rig.poll("c"), 0);
  EXPECT_EQ(rig.poll("c"), 0);
  EXPECT_EQ(rig.callsOf("c").size(), calls);
}

TEST(EventsConformance, Scenario13ReleaseWithTheHandlerFixed) {
  Poisoned rig;
  rig.quarantine();
  rig.heal("c", "e3");
  EXPECT_EQ(rig.release("t", "c", "e3"), "released");
  EXPECT_EQ(rig.poll("c"), 1);
  int acks = 0;
  for (const std::string& id : ids("e", 120)) acks += rig.kv(rig.keys("t", "c").ack(id)).has_value();
  EXPECT_EQ(acks, 120);
  const json listed = rig.list("t", "c");
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].at("status"), "delivered");
  EXPECT_EQ(listed[0].at("releases"), 1);
  const json before = rig.snapshot();
  EXPECT_EQ(rig.release("t", "c", "e3"), "alreadyDelivered");
  EXPECT_EQ(rig.snapshot(), before);
}

TEST(EventsConformance, Scenario14ReleaseIntoABrokenHandler) {
  Poisoned rig;
  rig.quarantine();
  EXPECT_EQ(rig.release("t", "c", "e3"), "released");
  for (int i = 0; i < 6; ++i) rig.poll("c");
  EXPECT_EQ(rig.callsOf("c", "e3").size(), 10u);
  json listed = rig.list("t", "c");
  ASSERT_EQ(listed.size(), 1u);
  EXPECT_EQ(listed[0].at("status"), "quarantined");
  EXPECT_EQ(listed[0].at("attempts"), 5);
  EXPECT_EQ(listed[0].at("releases"), 1);
  rig.heal("c", "e3");
  EXPECT_EQ(rig.release("t", "c", "e3"), "released");
  EXPECT_EQ(rig.poll("c"), 1);
  listed = rig.list("t", "c");
  EXPECT_EQ(listed[0].at("status"), "delivered");
  EXPECT_EQ(listed[0].at("releases"), 2);
}

TEST(EventsConformance, Scenario15ReleaseFalseCausesChangeNothing) {
  Poisoned rig;
  EXPECT_EQ(rig.poll("c"), 119);  // e3 retrying (1 failure)
  const json before = rig.snapshot();
  EXPECT_EQ(rig.release("t", "c", "e3"), "notQuarantined");
  EXPECT_EQ(rig.release("t", "c", "e1"), "notQuarantined");  // delivered, never quarantined
  EXPECT_EQ(rig.release("t", "c", "nope"), "notQuarantined");
  EXPECT_EQ(rig.snapshot(), before);
}

TEST(EventsConformance, Scenario16QuarantineIsPerConsumer) {
  Poisoned rig;
  rig.quarantine();
  EXPECT_EQ(rig.poll("d"), 120);
  EXPECT_TRUE(rig.list("t", "d").empty());
}

TEST(EventsConformance, Scenario17QuarantinedOnTheLastPageStaysSilent) {
  BusRig rig;
  rig.consumer("c", "t", immediate(2));
  rig.emitMany("t", ids("e", 120));
  rig.failAlways("c", "e120");
  EXPECT_EQ(rig.poll("c"), 119);
  EXPECT_EQ(rig.poll("c"), 0);
  EXPECT_TRUE(rig.kv(rig.keys("t", "c").dead("e120")));
  for (int i = 0; i < 5; ++i) EXPECT_EQ(rig.poll("c"), 0);
  EXPECT_EQ(rig.callsOf("c", "e120").size(), 2u);
}

TEST(EventsConformance, Scenario18HandlerReleasesItsOwnEvent) {
  BusRig rig;
  rig.consumer("c", "t", immediate(1));
  rig.emit("t", "e1");
  rig.failTimes("c", "e1", 1);
  EXPECT_EQ(rig.poll("c"), 0);
  EXPECT_EQ(rig.release("t", "c", "e1"), "released");
  bool releasedInside = false;
  rig.env.behaviour = [&releasedInside](Host& host, std::string, json, EventMeta meta) -> Task<void> {
    if (releasedInside) co_return;
    releasedInside = true;
    Task<bool> releasing = events::retryDeadEvent(host.bus, "t", "c", meta.id);
    EXPECT_TRUE(co_await releasing);
    throw std::runtime_error("after releasing");
  };
  EXPECT_EQ(rig.poll("c"), 0);
  EXPECT_EQ(rig.logs("events.handler.released_during_attempt").size(), 1u);
  json listed = rig.list("t", "c");
  EXPECT_EQ(listed[0].at("status"), "released");
  EXPECT_EQ(listed[0].at("releases"), 2);
  EXPECT_EQ(rig.poll("c"), 1);
}

TEST(EventsConformance, Scenario19InfiniteAttemptsStayPendingAtConstantCost) {
  for (int events : {200, 2'000}) {
    BusRig rig;
    ConsumerOptions o;
    o.maxAttempts = kInf;
    rig.consumer("c", "t", o);
    rig.emitMany("t", ids("e", events));
    rig.failAlways("c", "e10");
    rig.poll("c");
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(rig.poll("c"), 0);
      EXPECT_EQ(rig.lastReads().at("lists"), 2);
      EXPECT_EQ(rig.lastReads().at("gets"), 2);
    }
    for (int i = 0; i < 10; ++i) {
      rig.advance(3'600'000);
      rig.poll("c");
    }
    EXPECT_FALSE(rig.kv(rig.keys("t", "c").dead("e10")));
    EXPECT_EQ(rig.idsIn(rig.keys("t", "c").pending()), std::vector<std::string>{"e10"});
  }
}

TEST(EventsConformance, Scenario20HealthyPathWritesOnlyAcksAndCursors) {
  BusRig rig;
  rig.consumer("c", "t", immediate());
  rig.consumer("d", "t", immediate());
  rig.emitMany("t", ids("e", 70));
  EXPECT_EQ(rig.poll("c"), 70);
  EXPECT_EQ(rig.poll("d"), 70);
  EXPECT_EQ(rig.callsOf("c").size(), 70u);
  for (const json& r : rig.rows("SELECT key FROM " DURASIM_EVENTS_KV)) {
    const std::string key = r.at("key").get<std::string>();
    EXPECT_TRUE(key.rfind("evtack:", 0) == 0 || key.rfind("evtcursor:", 0) == 0) << key;
  }
  for (const json& r : rig.rows("SELECT DISTINCT ns FROM " DURASIM_EVENTS_LOG)) EXPECT_EQ(r.at("ns"), "evt:t");
  EXPECT_TRUE(rig.logs().empty());
}

TEST(EventsConformance, Scenario21AttemptRecordFromTimeZero) {
  BusRig rig(0);
  rig.consumer("c", "t");
  rig.advanceTo(1'000);
  rig.emit("t", "e1");
  rig.failAlways("c", "e1");
  rig.poll("c");
  EXPECT_EQ(rig.kv(rig.keys("t", "c").attempts("e1")), (json{{"n", 1}, {"firstAt", 1000}, {"nextAt", 61000}}));
  rig.advanceTo(60'999);
  rig.poll("c");
  EXPECT_EQ(rig.callsOf("c").size(), 1u);
  rig.advanceTo(61'000);
  rig.poll("c");
  EXPECT_EQ(rig.callsOf("c").size(), 2u);
  EXPECT_EQ(rig.kv(rig.keys("t", "c").attempts("e1")), (json{{"n", 2}, {"firstAt", 1000}, {"nextAt", 181000}}));
}

TEST(EventsConformance, Scenario22DefaultSchedule) {
  BusRig rig(0);
  rig.consumer("c", "t");
  rig.emit("t", "e1");
  rig.failAlways("c", "e1");
  const std::vector<SimTime> expected{0, 60'000, 180'000, 420'000, 900'000, 1'860'000, 3'780'000, 7'380'000};
  for (SimTime at : expected) {
    if (at > 0) {
      rig.advanceTo(at - 1);
      rig.poll("c");
      rig.advanceTo(at);
    }
    rig.poll("c");
  }
  std::vector<SimTime> calls;
  for (const Call& c : rig.callsOf("c")) calls.push_back(c.t);
  EXPECT_EQ(calls, expected);
  EXPECT_TRUE(rig.kv(rig.keys("t", "c").dead("e1")));
  for (int h = 0; h < 24; ++h) {
    rig.advance(3'600'000);
    rig.poll("c");
  }
  EXPECT_EQ(rig.callsOf("c").size(), 8u);
}

TEST(EventsConformance, Scenario23FixedDelay) {
  BusRig rig(0);
  ConsumerOptions o;
  o.retryDelayMs = 5'000.0;
  o.maxAttempts = 3;
  rig.consumer("c", "t", o);
  rig.emit("t", "e1");
  rig.failAlways("c", "e1");
  for (SimTime at = 0; at <= 20'000; at += 1'000) {
    rig.advanceTo(at);
    rig.poll("c");
  }
  std::vector<SimTime> calls;
  for (const Call& c : rig.callsOf("c")) calls.push_back(c.t);
  EXPECT_EQ(calls, (std::vector<SimTime>{0, 5'000, 10'000}));
  EXPECT_TRUE(rig.kv(rig.keys("t", "c").dead("e1")));
}

TEST(EventsConformance, Scenario24DelayFunctionAndItsFallbacks) {
  BusRig rig(0);
  auto seen = std::make_shared<std::vector<int64_t>>();
  ConsumerOptions o;
  o.maxAttempts = kInf;
  o.retryDelayMs = events::RetryDelayFn([seen](int64_t attempt) -> double {
    seen->push_back(attempt);
    switch (attempt) {
      case 1: return 10;
      case 2: return std::nan("");
      case 3: return kInf;
      case 4: return -5;
      case 5: throw std::runtime_error("schedule broke");
      default: return 1;
    }
  });
  rig.consumer("c", "t", o);
  rig.emit("t", "e1");
  rig.failAlways("c", "e1");
  const auto nextAt = [&] { return rig.kv(rig.keys("t", "c").attempts("e1"))->at("nextAt").get<int64_t>(); };
  rig.poll("c");
  EXPECT_EQ(nextAt(), 10);
  for (int i = 2; i <= 5; ++i) {
    rig.advanceTo(nextAt());
    const SimTime at = rig.now();
    rig.poll("c");
    EXPECT_EQ(nextAt(), at + 60'000 * (int64_t{1} << (i - 1)) ) << "attempt " << i;
  }
  EXPECT_EQ(*seen, (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(rig.logs("events.retry_delay.invalid").size(), 3u);
  EXPECT_EQ(rig.logs("events.retry_delay.threw").size(), 1u);
}

TEST(EventsConformance, Scenario25RetryForEver) {
  BusRig rig(0);
  ConsumerOptions o;
  o.maxAttempts = kInf;
  o.retryDelayMs = 1'000.0;
  rig.consumer("c", "t", o);
  rig.emit("t", "e1");
  rig.failAlways("c", "e1");
  for (SimTime at = 0; at <= 11'000; at += 1'000) {
    rig.advanceTo(at);
    rig.poll("c");
  }
  EXPECT_EQ(rig.callsOf("c").size(), 12u);
  EXPECT_FALSE(rig.kv(rig.keys("t", "c").dead("e1")));
  for (const json& l : rig.logs()) EXPECT_NE(l.at("level"), "error");
}

TEST(EventsConformance, Scenario26ReleaseCancelsAWait) {
  BusRig rig;
  ConsumerOptions o;
  o.maxAttempts = 1;
  o.retryDelayMs = 3'600'000.0;
  rig.consumer("c", "t", o);
  rig.emit("t", "e1");
  rig.failTimes("c", "e1", 1);
  rig.poll("c");
  EXPECT_TRUE(rig.kv(rig.keys("t", "c").dead("e1")));
  EXPECT_EQ(rig.release("t", "c", "e1"), "released");
  EXPECT_EQ(rig.poll("c"), 1);
}

TEST(EventsConformance, Scenario27LegacyAttemptValue) {
  BusRig rig;
  rig.consumer("c", "t", immediate(5));
  rig.emit("t", "e1");
  rig.call("put", {{"key", rig.keys("t", "c").attempts("e1")}, {"value", 4}});
  rig.failAlways("c", "e1");
  rig.poll("c");
  const std::optional<json> dead = rig.kv(rig.keys("t", "c").dead("e1"));
  ASSERT_TRUE(dead);
  EXPECT_EQ(dead->at("attempts"), 5);
  EXPECT_EQ(rig.kv(rig.keys("t", "c").attempts("e1"))->at("n"), 5);
}

TEST(EventsConformance, Scenario28ReleaseDuringAFailingCallGrantsAFullBudget) {
  BusRig rig;
  rig.consumer("c", "t", immediate(3));
  rig.emit("t", "e1");
  rig.failAlways("c", "e1");
  for (int i = 0; i < 3; ++i) rig.poll("c");
  ASSERT_TRUE(rig.kv(rig.keys("t", "c").dead("e1")));
  EXPECT_EQ(rig.release("t", "c", "e1"), "released");
  // The failing call runs 5 ms; a release lands 2 ms into it.
  rig.heal("c", "e1");
  bool slow = true;
  rig.env.behaviour = [&slow](Host& host, std::string, json, EventMeta) -> Task<void> {
    Task<void> sleeping = host.ctx.clock.sleepFor(slow ? 5 : 0);
    co_await sleeping;
    slow = false;
    throw std::runtime_error("still broken");
  };
  auto polled = std::make_shared<CallResult>(), released = std::make_shared<CallResult>();
  rig.world.tasks().spawn("poll", client_call(&rig.world, rig.runtime.client(kClass).get("b"), "poll", {{"consumer", "c"}}, 0, polled));
  rig.world.tasks().spawn("release", client_call(&rig.world, rig.runtime.client(kClass).get("b"), "release",
                                                 {{"topic", "t"}, {"consumer", "c"}, {"id", "e1"}}, 2, released));
  rig.advance(10);
  EXPECT_EQ(polled->value, 0);
  EXPECT_EQ(released->value, "released");
  EXPECT_EQ(rig.logs("events.handler.released_during_attempt").size(), 1u);
  EXPECT_EQ(rig.kv(rig.keys("t", "c").attempts("e1"))->at("n"), 0);
  for (int i = 0; i < 5; ++i) rig.poll("c");
  EXPECT_EQ(rig.callsOf("c", "e1").size(), 3u + 1u + 3u);
  const json listed = rig.list("t", "c");
  EXPECT_EQ(listed[0].at("status"), "quarantined");
  EXPECT_EQ(listed[0].at("attempts"), 3);
  EXPECT_EQ(listed[0].at("releases"), 2);
}

TEST(EventsConformance, Scenario29RacingReleasesAndTheCasBound) {
  BusRig rig;
  rig.consumer("c", "t", immediate(1));
  rig.emit("t", "e1");
  rig.failTimes("c", "e1", 1);
  rig.poll("c");
  rig.env.buggify = [](Host&, std::string_view site) { return site == "events.release.yield_before_cas"; };
  auto a = std::make_shared<CallResult>(), b = std::make_shared<CallResult>();
  const json args = {{"topic", "t"}, {"consumer", "c"}, {"id", "e1"}};
  rig.world.tasks().spawn("a", client_call(&rig.world, rig.runtime.client(kClass).get("b"), "release", args, 0, a));
  rig.world.tasks().spawn("b", client_call(&rig.world, rig.runtime.client(kClass).get("b"), "release", args, 0, b));
  rig.advance(10);
  EXPECT_EQ(a->value, "released");
  EXPECT_EQ(b->value, "released");
  EXPECT_EQ(rig.kv(rig.keys("t", "c").dead("e1"))->at("releases"), 2);
  EXPECT_EQ(rig.poll("c"), 1);
  EXPECT_EQ(rig.list("t", "c")[0].at("releases"), 2);

  // Five scripted rewrites of the dead record between read and CAS.
  rig.emit("t", "e2");
  rig.failTimes("c", "e2", 1);
  rig.poll("c");
  int rewrites = 0;
  rig.env.buggify = [&rewrites](Host& host, std::string_view site) {
    if (site != "events.release.yield_before_cas" || rewrites >= 5) return false;
    const std::string key = events::Keys("t", "c", true).dead("e2");
    json dead = *host.store.get(key);
    dead["touched"] = ++rewrites;
    host.store.put(key, dead);
    return true;
  };
  const std::optional<json> attBefore = rig.kv(rig.keys("t", "c").attempts("e2"));
  EXPECT_EQ(rig.release("t", "c", "e2"), "contended");
  EXPECT_EQ(rig.logs("events.release.abandoned").size(), 1u);
  const std::optional<json> dead = rig.kv(rig.keys("t", "c").dead("e2"));
  EXPECT_EQ(dead->at("touched"), 5);
  EXPECT_FALSE(dead->contains("releasedAt"));
  EXPECT_EQ(rig.kv(rig.keys("t", "c").attempts("e2")), attBefore);
  EXPECT_TRUE(rig.idsIn(rig.keys("t", "c").pending()).empty());
  EXPECT_EQ(rig.release("t", "c", "e2"), "released");
}

TEST(EventsConformance, Scenario30KeyAmbiguityPairsAreIsolated) {
  struct Pair {
    std::string topicA, consumerA, idA, topicB, consumerB, idB;
  };
  const std::vector<Pair> pairs{{"a", "b:c", "x", "a:b", "c", "x"},
                                {"t", "b:c", "d", "t", "b", "c:d"},
                                {"p%3Aq", "k", "x", "p:q", "k", "x"},
                                {"billing:eu", "emailer", "x", "billing", "eu:emailer", "x"}};
  for (const Pair& p : pairs) {
    BusRig rig;
    ConsumerOptions a = immediate(1), b = immediate(1);
    a.name = p.consumerA;
    b.name = p.consumerB;
    rig.consumer("A", p.topicA, a);
    rig.consumer("B", p.topicB, b);
    rig.emit(p.topicA, p.idA);
    rig.emit(p.topicB, p.idB);
    rig.emit(p.topicA, "fails");
    if (p.topicA != p.topicB) rig.emit(p.topicB, "fails");
    rig.failAlways("A", "fails");
    EXPECT_EQ(rig.poll("A"), p.topicA == p.topicB ? 2 : 1) << p.topicA;
    EXPECT_EQ(rig.poll("B"), p.topicA == p.topicB ? 3 : 2) << p.topicB;
    for (const Call& c : rig.callsOf("A")) EXPECT_EQ(c.topic, p.topicA);
    for (const Call& c : rig.callsOf("B")) EXPECT_EQ(c.topic, p.topicB);
    EXPECT_EQ(rig.list(p.topicA, p.consumerA).size(), 1u);
    EXPECT_TRUE(rig.list(p.topicB, p.consumerB).empty());
    EXPECT_NE(rig.keys(p.topicA, p.consumerA).ack(p.idA), rig.keys(p.topicB, p.consumerB).ack(p.idB));
    EXPECT_NE(rig.keys(p.topicA, p.consumerA).cursor(), rig.keys(p.topicB, p.consumerB).cursor());
    EXPECT_NE(rig.keys(p.topicA, p.consumerA).pending(), rig.keys(p.topicB, p.consumerB).pending());
  }
}

TEST(EventsConformance, Scenario31TopicNamespaces) {
  BusRig rig;
  rig.consumer("orders", "orders", immediate());
  rig.consumer("ordersEu", "orders:eu", immediate());
  rig.consumer("inv", "inv", immediate());
  rig.consumer("invEu", "inv:eu", immediate());
  rig.consumer("escaped", "inv%3Aeu", immediate());
  rig.consumer("qjob", "qjob", immediate());
  rig.emit("orders:eu", "o1");
  EXPECT_EQ(rig.poll("orders"), 0);
  EXPECT_EQ(rig.poll("ordersEu"), 1);
  EXPECT_EQ(rig.emit("inv:eu", "x"), "x");
  EXPECT_EQ(rig.emit("inv", "eu:x"), "eu:x");
  EXPECT_EQ(rig.poll("inv"), 1);
  EXPECT_EQ(rig.poll("invEu"), 1);
  EXPECT_EQ(rig.callsOf("inv")[0].id, "eu:x");
  EXPECT_EQ(rig.callsOf("invEu")[0].id, "x");
  EXPECT_EQ(rig.poll("escaped"), 0);
  rig.call("emitMany", {{"topic", "inv%3Aeu"}, {"ids", {"y"}}});
  EXPECT_EQ(rig.poll("escaped"), 1);
  EXPECT_EQ(rig.poll("invEu"), 0);
  rig.call("put", {{"key", "qjob"}, {"value", 1}});
  // A record of another capability's namespace "qjob" in the same store.
  rig.call("emitMany", {{"topic", "other"}, {"ids", {"z"}}});
  EXPECT_EQ(rig.poll("qjob"), 0);
}

TEST(EventsConformance, Scenario32SameMillisecondEmits) {
  for (bool variant : {false, true}) {
    std::set<std::string> flags;
    if (variant) flags.insert(std::string(variants::kEventsOrderByTimestamp));
    BusRig rig(kStart, flags);
    rig.consumer("c", "t", immediate());
    std::vector<std::string> burst;
    for (int i = 59; i >= 0; --i) burst.push_back((i < 10 ? "z0" : "z") + std::to_string(i));
    rig.emitMany("t", burst);
    EXPECT_EQ(rig.poll("c"), 60);
    rig.emitMany("t", {"a"});
    EXPECT_EQ(rig.poll("c"), variant ? 0 : 1) << (variant ? "order_by_timestamp" : "default");
    EXPECT_EQ(rig.poll("c"), 0);
  }
}

TEST(EventsConformance, Scenario33TimeZeroIsATime) {
  for (bool variant : {false, true}) {
    std::set<std::string> flags;
    if (variant) flags.insert(std::string(variants::kEventsTimestampTruthiness));
    BusRig rig(0, flags);
    rig.consumer("c", "t", immediate(1));
    rig.emit("t", "e1");
    rig.failTimes("c", "e1", 1);
    rig.poll("c");
    EXPECT_EQ(rig.release("t", "c", "e1"), "released");
    EXPECT_EQ(rig.list("t", "c")[0].at("status"), variant ? "quarantined" : "released");
    EXPECT_EQ(rig.poll("c"), variant ? 0 : 1);
    EXPECT_EQ(rig.callsOf("c").size(), variant ? 1u : 2u);
  }
}

// events.md 11 and 14.34: exact StoreStats counts at 5,000 (and 50,000) events, event 10 failing.
void loadProfile(int events, bool full) {
  BusRig rig;
  rig.consumer("c", "t");
  rig.consumer("h", "t");
  rig.emitMany("t", ids("e", events));
  rig.failAlways("c", "e10");
  rig.poll("c");
  if (full) {
    EXPECT_EQ(rig.lastReads().at("lists"), 101);
    EXPECT_EQ(rig.lastReads().at("gets"), 1 + 3 * events + 2 + events / 50);
  }
  for (int i = 0; i < 2; ++i) {
    rig.poll("c");
    EXPECT_EQ(rig.lastReads().at("lists"), 2);
    EXPECT_EQ(rig.lastReads().at("gets"), 2);
  }
  rig.poll("h");
  rig.poll("h");
  EXPECT_EQ(rig.lastReads().at("lists"), 2);
  EXPECT_EQ(rig.lastReads().at("gets"), 1);
  for (int i = 0; i < 8; ++i) {
    rig.advance(3'600'000);
    rig.poll("c");
  }
  ASSERT_TRUE(rig.kv(rig.keys("t", "c").dead("e10")));
  rig.poll("c");
  EXPECT_EQ(rig.lastReads().at("lists"), 2);
  EXPECT_EQ(rig.lastReads().at("gets"), 1);
}

TEST(EventsConformance, Scenario34LoadProfileAt5000) { loadProfile(5'000, true); }
TEST(EventsConformance, Scenario34LoadProfileAt50000) { loadProfile(50'000, false); }

TEST(EventsConformance, Scenario35CrashBetweenHandlerSuccessAndMarking) {
  BusRig rig;
  rig.consumer("c", "t", immediate());
  rig.emit("t", "e1");
  rig.emit("t", "e2");
  rig.env.buggify = [](Host& host, std::string_view site) {
    if (site != "events.poll.yield_before_ack" || host.env->calls.size() != 1) return false;
    host.env->resetNow = true;  // the object resets at this yield
    return true;
  };
  auto out = std::make_shared<CallResult>();
  rig.world.tasks().spawn("poll", client_call(&rig.world, rig.runtime.client(kClass).get("b"), "poll", {{"consumer", "c"}}, 0, out));
  rig.advance(10);
  EXPECT_FALSE(out->ok);
  EXPECT_FALSE(rig.kv(rig.keys("t", "c").ack("e1")));
  rig.env.buggify = nullptr;
  int64_t total = rig.poll("c");
  total += rig.poll("c");
  EXPECT_EQ(total, 2);
  EXPECT_EQ(rig.callsOf("c", "e1").size(), 2u);
  EXPECT_EQ(rig.callsOf("c", "e2").size(), 1u);
  EXPECT_TRUE(rig.kv(rig.keys("t", "c").ack("e1")));
}

// ---------------------------------------------------------------------------------------------
// Rules one at a time

TEST(EventsKeys, EncodingIsTotalInjectiveAndReversible) {
  EXPECT_EQ(events::enc("a:b%c"), "a%3Ab%25c");
  EXPECT_EQ(events::enc("p%3Aq"), "p%253Aq");
  EXPECT_EQ(events::enc(""), "");
  EXPECT_EQ(events::enc("plain"), "plain");
  for (const std::string s : {"", ":", "%", "%3A", "%25", "a::b", "\xff\xfe", "x%3a", "%%::"}) {
    EXPECT_EQ(events::dec(events::enc(s)), s);
    EXPECT_EQ(events::enc(s).find(':'), std::string::npos);
  }
  EXPECT_NE(events::enc("p%3Aq"), events::enc("p:q"));
  const events::Keys k("billing:eu", "emailer", true);
  EXPECT_EQ(k.ack("u:1"), "evtack:billing%3Aeu:emailer:u%3A1");
  const std::optional<events::DecodedKey> d = events::decodeKey(k.ack("u:1"));
  ASSERT_TRUE(d);
  EXPECT_EQ(d->parts, (std::vector<std::string>{"billing:eu", "emailer", "u:1"}));
  EXPECT_EQ(events::Keys("a", "b:c", false).ack("x"), events::Keys("a:b", "c", false).ack("x"));  // the variant's collision
}

TEST(EventsRecords, AttemptsAndStamps) {
  EXPECT_EQ(events::readAttempts(std::nullopt), events::Attempts{});
  EXPECT_EQ(events::readAttempts(json(4)).n, 4);
  EXPECT_EQ(events::readAttempts(json("x")).n, 0);
  const events::Attempts a = events::readAttempts(json{{"n", 2}, {"firstAt", 0}, {"nextAt", "bad"}, {"gen", "1@5"}});
  EXPECT_EQ(a.n, 2);
  EXPECT_EQ(a.firstAt, 0);
  EXPECT_EQ(a.nextAt, 0);
  EXPECT_EQ(a.gen, "1@5");
  EXPECT_FALSE(events::readAttempts(json{{"n", 1}, {"firstAt", 0}}, true).firstAt);
  EXPECT_EQ(events::stamp(std::nullopt), "0@-");
  EXPECT_EQ(events::stamp(json{{"attempts", 3}}), "0@-");
  EXPECT_EQ(events::stamp(json{{"releases", 2}, {"releasedAt", 0}}), "2@0");
  EXPECT_TRUE(events::isReleased(json{{"releasedAt", 0}}));
  EXPECT_FALSE(events::isReleased(json{{"releasedAt", 0}}, true));
  EXPECT_EQ(events::validUtf8("ok \xff end"), "ok \xEF\xBF\xBD end");
}

TEST(EventsRetry, DefaultScheduleDoublesToTheCap) {
  const std::vector<int64_t> expected{60'000, 120'000, 240'000, 480'000, 960'000, 1'920'000, 3'600'000, 3'600'000};
  int64_t total = 0;
  for (int n = 1; n <= 8; ++n) {
    EXPECT_EQ(events::defaultRetryDelayMs(n), expected[static_cast<std::size_t>(n - 1)]);
    if (n < 8) total += events::defaultRetryDelayMs(n);
  }
  EXPECT_EQ(total, 7'380'000);
  EXPECT_EQ(events::defaultRetryDelayMs(1'000'000), 3'600'000);
}

TEST(EventsValidation, BadArgumentsAreRefusedAndWriteNothing) {
  BusRig rig;
  rig.consumer("c", "t", immediate());
  rig.call("stats");
  const json before = rig.snapshot();
  EXPECT_EQ(rig.call("emit", {{"topic", ""}, {"id", "x"}}).value("message", ""), "event topic must be a non-empty string");
  EXPECT_EQ(rig.call("emit", {{"topic", "t"}, {"id", ""}}).value("message", ""), "event id must be a non-empty string");
  EXPECT_EQ(rig.call("emit", {{"topic", "t"}, {"id", "x"}, {"maxDepth", -1}}).value("error", ""), "RangeError");
  EXPECT_EQ(rig.call("release", {{"topic", "t"}, {"consumer", ""}, {"id", "x"}}).value("message", ""), "consumer name is required");
  EXPECT_EQ(rig.call("release", {{"topic", "t"}, {"consumer", "c"}, {"id", ""}}).value("message", ""), "event id must be a non-empty string");
  EXPECT_EQ(rig.call("list", {{"topic", ""}, {"consumer", "c"}}).value("error", ""), "TypeError");
  EXPECT_EQ(rig.snapshot(), before);

  // createConsumer, checked directly against an in-memory store.
  int64_t clock = 0;
  events::InMemoryWorkStore store([&clock] { return clock; });
  struct NoClock final : Clock {
    int64_t now() const override { return 0; }
    Task<void> sleepFor(int64_t) override { co_return; }
    Task<void> sleepUntil(int64_t) override { co_return; }
  } c;
  struct NoRandom final : Random {
    double random() override { return 0; }
    std::string uuid() override { return "u"; }
  } r;
  struct NoLog final : Logger {
    void log(std::string_view, std::string_view, const json&) override {}
  } l;
  const std::set<std::string> none;
  events::EventsContext ctx(store, c, r, l, [](Task<void>) {}, {}, none, {});
  const events::EventHandler h = [](const json&, const EventMeta&) -> Task<void> { co_return; };
  auto refused = [&](const std::string& topic, events::EventHandler handler, std::function<void(ConsumerOptions&)> edit) {
    ConsumerOptions o;
    o.name = "n";
    edit(o);
    try {
      events::createConsumer(ctx, topic, handler, o);
    } catch (const DurabilityError& e) {
      return e.name() + ": " + e.what();
    }
    return std::string();
  };
  EXPECT_EQ(refused("", h, [](ConsumerOptions&) {}), "TypeError: event topic must be a non-empty string");
  EXPECT_EQ(refused("t", nullptr, [](ConsumerOptions&) {}), "TypeError: event handler must be callable");
  EXPECT_EQ(refused("t", h, [](ConsumerOptions& o) { o.name = ""; }), "TypeError: consumer name is required");
  EXPECT_EQ(refused("t", h, [](ConsumerOptions& o) { o.pollMs = 0; }), "RangeError: pollMs must be a positive integer");
  EXPECT_EQ(refused("t", h, [](ConsumerOptions& o) { o.maxPollMs = 100; }), "RangeError: maxPollMs must be an integer >= pollMs");
  for (double bad : {0.0, -1.0, 2.5, std::nan(""), -kInf})
    EXPECT_EQ(refused("t", h, [bad](ConsumerOptions& o) { o.maxAttempts = bad; }), "RangeError: maxAttempts must be a positive integer or Infinity");
  EXPECT_EQ(refused("t", h, [](ConsumerOptions& o) { o.maxAttempts = kInf; }), "");
  for (double bad : {-1.0, kInf, std::nan(""), 1e300})
    EXPECT_EQ(refused("t", h, [bad](ConsumerOptions& o) { o.retryDelayMs = bad; }),
              "RangeError: retryDelayMs must be a finite non-negative number of milliseconds");
  EXPECT_EQ(refused("t", h, [](ConsumerOptions& o) { o.handlerTimeoutMs = 0; }), "RangeError: handlerTimeoutMs must be a positive integer");
  EXPECT_EQ(store.stats().writes, 0);
  ConsumerOptions o;
  o.name = "n";
  EXPECT_EQ(events::createConsumer(ctx, "t", h, o)->maxPollMs(), 6'400);
  // Unserializable payload.
  EXPECT_THROW(events::emitIn(ctx, store, "t", json(std::nan(""))), TypeError);
  EXPECT_EQ(store.stats().writes, 0);
}

TEST(EventsValidation, UnvalidatedVariantsAcceptWhatTheDefaultRefuses) {
  int64_t clock = 0;
  events::InMemoryWorkStore store([&clock] { return clock; });
  struct NoClock final : Clock {
    int64_t now() const override { return 0; }
    Task<void> sleepFor(int64_t) override { co_return; }
    Task<void> sleepUntil(int64_t) override { co_return; }
  } c;
  struct NoRandom final : Random {
    double random() override { return 0; }
    std::string uuid() override { return "u"; }
  } r;
  struct NoLog final : Logger {
    void log(std::string_view, std::string_view, const json&) override {}
  } l;
  const std::set<std::string> flags{std::string(variants::kEventsUnvalidatedMaxAttempts), std::string(variants::kEventsUnvalidatedOptions)};
  events::EventsContext ctx(store, c, r, l, [](Task<void>) {}, {}, flags, {});
  ConsumerOptions o;
  o.maxAttempts = std::nan("");
  o.retryDelayMs = -5.0;
  const events::EventHandler h = [](const json&, const EventMeta&) -> Task<void> { co_return; };
  EXPECT_NO_THROW(events::createConsumer(ctx, "", h, o));
  events::EmitOptions e;
  e.id = "";
  EXPECT_EQ(events::emitIn(ctx, store, "", json(1), e), "");
}

TEST(EventsStore, SqliteAndInMemoryKeepThePortContract) {
  BusRig rig;
  rig.consumer("c", "t");
  rig.call("put", {{"key", "k"}, {"value", false}});
  EXPECT_EQ(rig.kv("k"), json(false));  // false is a present value
  int64_t clock = 5;
  events::InMemoryWorkStore store([&clock] { return clock; });
  EXPECT_TRUE(store.putIfAbsent("k", 0));
  EXPECT_FALSE(store.putIfAbsent("k", 1));
  EXPECT_FALSE(store.compareAndSwap("absent", 0, 1));
  EXPECT_FALSE(store.compareAndSwap("k", 1, 2));
  EXPECT_TRUE(store.compareAndSwap("k", 0, json{{"b", 1}, {"a", 2}}));
  EXPECT_TRUE(store.compareAndSwap("k", json{{"a", 2}, {"b", 1}}, 3));  // compared on the serialized (sorted) form
  const events::AppendResult a = store.append("ns", "x", 1);
  const events::AppendResult b = store.append("ns", "y", 2);
  EXPECT_TRUE(store.append("ns2", "x", 3).inserted);
  const events::AppendResult again = store.append("ns", "x", 9);
  EXPECT_FALSE(again.inserted);
  EXPECT_EQ(again.seq, a.seq);
  EXPECT_EQ(store.getRecord("ns", "x")->payload, 1);
  EXPECT_TRUE(store.eraseRecord("ns", "y"));
  EXPECT_GT(store.append("ns", "z", 4).seq, b.seq + 1);  // never reused
  const events::LogPage page = store.list("ns", 0, 1);
  EXPECT_EQ(page.items.size(), 1u);
  EXPECT_TRUE(page.more);
  EXPECT_EQ(store.list("n", 0, 10).items.size(), 0u);  // whole-value namespaces, never a prefix
  EXPECT_EQ(store.count("ns", 1), 1);
  EXPECT_THROW(store.atomically([](events::WorkTxn& txn) {
    txn.put("rolled", 1);
    throw std::runtime_error("abort");
  }),
               std::runtime_error);
  EXPECT_FALSE(store.get("rolled"));
}

TEST(EventsFrozenConsumer, PollCostDoesNotGrowWithTheLog) {
  // The pending index: a consumer frozen behind a waiting event pays 2 lists and 2 gets per idle
  // poll at any log length; under events.full_rescan_when_frozen it rescans the log every poll.
  for (bool reference : {false, true}) {
    std::set<std::string> flags;
    if (reference) flags = {std::string(variants::kEventsFullRescanWhenFrozen), std::string(variants::kEventsFailureTwoStep)};
    BusRig rig(kStart, flags);
    rig.consumer("c", "t");
    rig.emitMany("t", ids("e", 5'000));
    rig.failAlways("c", "e10");
    rig.poll("c");
    if (reference) {
      EXPECT_EQ(rig.lastReads().at("lists"), 100);
      EXPECT_EQ(rig.lastReads().at("gets"), 15'003);
    }
    rig.poll("c");
    EXPECT_EQ(rig.lastReads().at("lists"), reference ? 100 : 2);
    EXPECT_EQ(rig.lastReads().at("gets"), reference ? 5'004 : 2);
    for (int i = 0; i < 8; ++i) {
      rig.advance(3'600'000);
      rig.poll("c");
    }
    rig.poll("c");
    EXPECT_EQ(rig.lastReads().at("lists"), reference ? 1 : 2);
    EXPECT_EQ(rig.lastReads().at("gets"), reference ? 52 : 1);
  }
}

TEST(EventsLoop, StopThenStartDuringATickKeepsOneChain) {
  for (bool variant : {false, true}) {
    std::set<std::string> flags;
    if (variant) flags.insert(std::string(variants::kEventsPollLoopDoubleChain));
    BusRig rig(kStart, flags);
    ConsumerOptions o = immediate();
    o.pollMs = 10;
    o.backoff = false;
    rig.consumer("c", "t", o);
    rig.env.behaviour = [](Host& host, std::string, json, EventMeta) -> Task<void> {
      Task<void> sleeping = host.ctx.clock.sleepFor(25);
      co_await sleeping;
    };
    rig.emit("t", "e1");
    const SimTime t0 = rig.now();
    rig.call("start", {{"consumer", "c"}});
    rig.advanceTo(t0 + 15);  // the first tick (at 10) is in its handler
    rig.call("stop", {{"consumer", "c"}});
    rig.call("start", {{"consumer", "c"}});
    rig.advanceTo(t0 + 200);
    std::set<int64_t> generations;
    std::vector<SimTime> times = tickTimes(rig, t0);
    for (const json& e : rig.probes(event_bus_events::kTickBegin)) generations.insert(e.at("generation").get<int64_t>());
    if (!variant) {
      for (std::size_t i = 1; i < times.size(); ++i) EXPECT_GE(times[i] - times[i - 1], 10) << i;
      EXPECT_FALSE(rig.probes(event_bus_events::kTickSkipped).empty());
    }
    EXPECT_GE(times.size(), 10u);
  }
}

TEST(EventsTimeout, AHungHandlerCountsAsAFailure) {
  BusRig rig;
  ConsumerOptions o = immediate(2);
  o.handlerTimeoutMs = 50;
  rig.consumer("c", "t", o);
  rig.env.behaviour = [](Host& host, std::string, json, EventMeta) -> Task<void> {
    Task<void> sleeping = host.ctx.clock.sleepFor(1'000);
    co_await sleeping;
  };
  rig.emit("t", "e1");
  EXPECT_EQ(rig.call("poll", {{"consumer", "c"}}, 60).get<int64_t>(), 0);
  EXPECT_EQ(rig.kv(rig.keys("t", "c").attempts("e1"))->at("n"), 1);
  rig.advance(2'000);  // the late success writes no marker
  EXPECT_FALSE(rig.kv(rig.keys("t", "c").ack("e1")));
  EXPECT_NE(rig.logs("events.handler.retrying")[0].at("fields").at("message").get<std::string>().find("handler timed out after 50 ms"),
            std::string::npos);
}

TEST(EventsVariants, PlainPutAndDepthAndUnescapedKeysChangeBehaviourOnlyWhenOn) {
  {
    BusRig rig(kStart, {std::string(variants::kEventsDepthCheckNonatomic)});
    rig.emit("t", "a");
    EXPECT_EQ(rig.call("emit", {{"topic", "t"}, {"id", "a"}, {"maxDepth", 1}}).value("error", ""), "EventDepthExceededError");
  }
  {
    BusRig rig(kStart, {std::string(variants::kEventsUnescapedKeys)});
    ConsumerOptions a = immediate(), b = immediate();
    a.name = "b:c";
    b.name = "c";
    rig.consumer("A", "a", a);
    rig.consumer("B", "a:b", b);
    rig.emit("a", "x");
    rig.emit("a:b", "x");
    EXPECT_EQ(rig.poll("A"), 1);
    EXPECT_EQ(rig.poll("B"), 0);  // A's marker hides B's event
  }
}

}  // namespace
}  // namespace durasim::rt_test
