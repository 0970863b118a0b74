// Model-based property (RapidCheck rc::state, suite EventsModelState): random emits (some with a
// depth bound, some re-emits), polls, releases, handler breakages and repairs, clock advances and
// object resets between commands run against the event bus on the simulated runtime and against
// model/events_model.h. After every command the whole bus state decoded from the store (topic logs,
// and per consumer its markers, attempt and dead records, frontier, pending and dead-letter
// indexes, with their sequence numbers) must equal the model's (EVT-01/03/14/15/18/19/21/23/28/41),
// every poll must return the model's count and call the handler with the model's events in the
// model's order (EVT-07/11/12/13/20/22), every release the model's outcome (EVT-27/29/30), and
// every listing the model's (EVT-42). Keys are decoded with events::decodeKey (EVT-05): names
// carry ':' and '%'. All latencies are 0: between commands every commit is confirmed, so a reset
// loses nothing but memory.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/conventions.h"
#include "engine/event_bus_schema.h"
#include "engine/events.h"
#include "model/events_model.h"
#include "tests/model_property.h"
#include "tests/runtime_test_harness.h"

namespace durasim {
namespace {

using namespace rt_test;
using model::EventsModel;
using model::EvtConsumerConfig;

constexpr const char* kClass = "ModelBus";
const std::string kLabel = std::string(kClass) + "/b";
constexpr int kMaxCommands = 40;
constexpr int kDefaultCases = 100;  // RC_PARAMS="max_success=N" overrides

const std::vector<std::string> kIds{"a", "b:c", "c%3A"};

// Three consumers: two names on one topic (':' in both), one on a topic with '%'.
std::vector<EvtConsumerConfig> configs() {
  return {EvtConsumerConfig{"ord:eu", "mail:x", 3, [](int64_t) { return int64_t{1'000}; }},
          EvtConsumerConfig{"ord:eu", "mail", 2, {}},
          EvtConsumerConfig{"inv%3A", "c", std::numeric_limits<double>::infinity(), [](int64_t n) { return n * 500; }}};
}

struct Coverage {
  int64_t cases = 0, emits = 0, refused = 0, polls = 0, calls = 0, delivered = 0, quarantines = 0, releases = 0, releasedFalse = 0,
          resets = 0;
};
Coverage& coverage() {
  static Coverage c;
  return c;
}

struct Shared {
  std::set<std::string> broken;  // "<consumer>/<id>"
  std::vector<std::pair<std::string, std::string>> calls;  // (consumer, id)
};

class ModelBus final : public DurableObject {
 public:
  ModelBus(ObjectContext& context, Shared* shared) : ctx(context), store(context), bus(events::EventsContext::of(context, store)) {
    for (const EvtConsumerConfig& c : configs()) {
      events::ConsumerOptions o;
      o.name = c.name;
      o.maxAttempts = c.maxAttempts;
      if (c.delay) {
        const auto delay = c.delay;
        o.retryDelayMs = events::RetryDelayFn([delay](int64_t n) { return static_cast<double>(delay(n)); });
      }
      const std::string name = c.name;
      consumers[c.name] = events::createConsumer(bus, c.topic, [shared, name](const nlohmann::json&, const events::EventMeta& meta) {
        return handle(shared, name, meta.id);
      }, o);
    }
  }
  static Task<void> handle(Shared* shared, std::string consumer, std::string id) {
    shared->calls.emplace_back(consumer, id);
    if (shared->broken.count(consumer + "/" + id)) throw std::runtime_error("boom " + id);
    co_return;
  }
  Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) override {
    nlohmann::json out = nlohmann::json::object();
    if (method == "emit") {
      events::EmitOptions opts;
      opts.id = args.at("id").get<std::string>();
      if (args.contains("maxDepth")) opts.maxDepth = args.at("maxDepth").get<int64_t>();
      try {
        Task<std::string> emitting = events::emit(bus, args.at("topic").get<std::string>(), args.at("payload"), opts);
        const std::string id = co_await emitting;
        out["id"] = id;
      } catch (const events::EventDepthExceededError& e) {
        out["refused"] = e.depth;
      }
    } else if (method == "poll") {
      Task<int64_t> polling = consumers.at(args.at("consumer").get<std::string>())->poll();
      const int64_t delivered = co_await polling;
      out["delivered"] = delivered;
    } else if (method == "release") {
      Task<events::ReleaseOutcome> releasing =
          events::releaseDeadEvent(bus, args.at("topic").get<std::string>(), args.at("consumer").get<std::string>(), args.at("id").get<std::string>());
      const events::ReleaseOutcome outcome = co_await releasing;
      out["outcome"] = std::string(events::toString(outcome));
    } else if (method == "list") {
      Task<std::vector<events::DeadEvent>> listing = events::listDeadEvents(bus, args.at("topic").get<std::string>(), args.at("consumer").get<std::string>());
      const std::vector<events::DeadEvent> dead = co_await listing;
      nlohmann::json list = nlohmann::json::array();
      for (const events::DeadEvent& d : dead)
        list.push_back({d.id, std::string(events::toString(d.status)), d.attempts, d.releases});
      out["list"] = list;
    }
    co_return out;
  }

  ObjectContext& ctx;
  events::SqliteWorkStore store;
  events::EventsContext bus;
  std::map<std::string, std::shared_ptr<events::Consumer>> consumers;
};

class Sut {
 public:
  explicit Sut(uint64_t seed) : rig_(seed) {
    rig_.faults.set_latency(LatencyKind::rpc, 0);
    rig_.faults.set_latency(LatencyKind::cold, 0);
    rig_.faults.set_latency(LatencyKind::confirm, 0);
    Shared* shared = &shared_;
    rig_.runtime.define_class(kClass, [shared](ObjectContext& ctx) { return std::make_unique<ModelBus>(ctx, shared); });
    ++coverage().cases;
  }
  ~Sut() { rig_.world.tasks().cancel_all(); }

  nlohmann::json call(const std::string& method, nlohmann::json args) {
    CallPtr c = rig_.call(kClass, "b", method, std::move(args));
    rig_.run_until(now());
    RC_ASSERT(c->done);
    if (!c->ok) RC_FAIL(method + " failed: " + c->error);
    return c->value;
  }

  void emit(const std::string& topic, const std::string& id, int payload, std::optional<int64_t> maxDepth) {
    ++coverage().emits;
    nlohmann::json args = {{"topic", topic}, {"id", id}, {"payload", payload}};
    if (maxDepth) args["maxDepth"] = *maxDepth;
    const nlohmann::json got = call("emit", args);
    const EventsModel::EmitResult expected = model_.emit(topic, id, nlohmann::json(payload).dump(), maxDepth);
    RC_ASSERT(got.contains("refused") == expected.refused);  // EVT-03
    if (expected.refused) {
      ++coverage().refused;
      RC_ASSERT(got.at("refused").get<int64_t>() == expected.depth);
    }
    compare();
  }

  void poll(std::size_t which) {
    ++coverage().polls;
    const EvtConsumerConfig c = configs()[which];
    shared_.calls.clear();
    const nlohmann::json got = call("poll", {{"consumer", c.name}});
    const EventsModel::PollResult expected =
        model_.poll(c, now(), [&](const std::string& id) { return shared_.broken.count(c.name + "/" + id) > 0; });
    RC_ASSERT(got.at("delivered").get<int64_t>() == expected.delivered);  // EVT-07
    std::vector<std::string> calls;
    for (const auto& [consumer, id] : shared_.calls) {
      RC_ASSERT(consumer == c.name);
      calls.push_back(id);
    }
    RC_ASSERT(calls == expected.calls);  // EVT-12, 13, 20, 22
    coverage().calls += static_cast<int64_t>(calls.size());
    coverage().delivered += expected.delivered;
    compare();
  }

  void release(std::size_t which, const std::string& id) {
    const EvtConsumerConfig c = configs()[which];
    const std::string got = call("release", {{"topic", c.topic}, {"consumer", c.name}, {"id", id}}).at("outcome").get<std::string>();
    const EventsModel::Release expected = model_.release(c.topic, c.name, id, now());
    const char* names[] = {"released", "notQuarantined", "alreadyDelivered"};
    RC_ASSERT(got == names[static_cast<int>(expected)]);  // EVT-27
    ++(expected == EventsModel::Release::released ? coverage().releases : coverage().releasedFalse);
    compare();
  }

  void list(std::size_t which) {
    const EvtConsumerConfig c = configs()[which];
    const nlohmann::json got = call("list", {{"topic", c.topic}, {"consumer", c.name}}).at("list");
    nlohmann::json expected = nlohmann::json::array();
    for (const EventsModel::Dead& d : model_.listDead(c.topic, c.name)) expected.push_back({d.id, d.status, d.attempts, d.releases});
    RC_ASSERT(got == expected);  // EVT-42
  }

  void breakHandler(std::size_t which, const std::string& id, bool broken) {
    const std::string key = configs()[which].name + "/" + id;
    if (broken) shared_.broken.insert(key);
    else shared_.broken.erase(key);
  }

  void advance(int64_t ms) {
    const int64_t target = now() + ms;
    rig_.world.executor().at(target, [] {});
    rig_.run_until(target);
  }

  void crash() {
    ++coverage().resets;
    if (auto status = rig_.status(kLabel)) RC_ASSERT(status->unconfirmed_commits == 0u);
    rig_.faults.arm(FaultKind::object_reset);
    rig_.call(kClass, "b", "ping");
    rig_.run_until(now());
    compare();
  }

  void finish() {
    for (const auto& [key, state] : model_.consumers()) coverage().quarantines += static_cast<int64_t>(state.dead.size());
  }

 private:
  int64_t now() const { return rig_.world.now(); }

  // Sequence numbers may leave gaps (events.md 3.2 promises order, never density): both sides are
  // compared with each sequence number replaced by its rank among the numbers in use.
  static void normalize(std::map<std::string, std::vector<model::EvtRecord>>& topics,
                        std::map<std::pair<std::string, std::string>, model::EvtConsumer>& consumers) {
    std::set<int64_t> used;
    for (const auto& [topic, records] : topics)
      for (const model::EvtRecord& r : records) used.insert(r.seq);
    for (const auto& [key, s] : consumers) {
      for (const auto& [id, seq] : s.pending) used.insert(seq);
      for (const auto& [id, seq] : s.deadIndex) used.insert(seq);
    }
    std::map<int64_t, int64_t> rank;
    for (const int64_t seq : used) rank.emplace(seq, static_cast<int64_t>(rank.size()) + 1);
    const auto ranked = [&rank](int64_t seq) {
      const auto it = rank.find(seq);
      return it == rank.end() ? (seq == 0 ? int64_t{0} : -seq) : it->second;
    };
    for (auto& [topic, records] : topics)
      for (model::EvtRecord& r : records) r.seq = ranked(r.seq);
    for (auto& [key, s] : consumers) {
      for (auto& [id, seq] : s.pending) seq = ranked(seq);
      for (auto& [id, seq] : s.deadIndex) seq = ranked(seq);
      s.frontier = ranked(s.frontier);
      for (auto& [id, dead] : s.dead)
        if (dead.contains("seq") && dead.at("seq").is_number_integer()) dead["seq"] = ranked(dead.at("seq").get<int64_t>());
    }
  }

  static std::string describe(const model::EvtConsumer& s) {
    nlohmann::json out = {{"acked", s.acked}, {"attempts", s.attempts}, {"dead", s.dead}, {"frontier", s.frontier}, {"pending", s.pending},
                          {"deadIndex", s.deadIndex}};
    return out.dump();
  }

  // The store decoded into the model's shape.
  void compare() {
    if (!rig_.runtime.world().stores().has_table(kLabel, DURASIM_EVENTS_KV)) return;
    std::map<std::string, std::vector<model::EvtRecord>> topics;
    std::map<std::pair<std::string, std::string>, model::EvtConsumer> consumers;
    for (const SqlRow& r : rig_.runtime.world().stores().live(kLabel, "SELECT seq, ns, id, payload FROM " DURASIM_EVENTS_LOG " ORDER BY seq").toVector()) {
      const std::optional<events::DecodedKey> ns = events::decodeKey(r.text("ns"));
      if (!ns) RC_FAIL("undecodable namespace " + r.text("ns"));
      const std::string id = r.text("id");
      if (ns->family == "evt:") {
        topics[ns->parts[0]].push_back(model::EvtRecord{r.int64("seq"), id, deserialize(r.text("payload")).dump()});
        continue;
      }
      model::EvtConsumer& s = consumers[{ns->parts[0], ns->parts[1]}];
      (ns->family == "evtpend:" ? s.pending : s.deadIndex)[id] = r.int64("seq");
    }
    for (const SqlRow& r : rig_.runtime.world().stores().live(kLabel, "SELECT key, value FROM " DURASIM_EVENTS_KV).toVector()) {
      const std::optional<events::DecodedKey> key = events::decodeKey(r.text("key"));
      if (!key) RC_FAIL("undecodable key " + r.text("key"));  // EVT-05
      model::EvtConsumer& s = consumers[{key->parts[0], key->parts[1]}];
      const nlohmann::json value = deserialize(r.text("value"));
      if (key->family == "evtack:") s.acked.insert(key->parts[2]);
      else if (key->family == "evtatt:") s.attempts[key->parts[2]] = value;
      else if (key->family == "evtdead:") s.dead[key->parts[2]] = value;
      else if (key->family == "evtcursor:") s.frontier = std::stoll(value.get<std::string>());
      else RC_FAIL("unexpected key " + r.text("key"));
    }
    normalize(topics, consumers);
    std::map<std::string, std::vector<model::EvtRecord>> expectedTopics;
    for (const auto& [topic, records] : model_.topics())
      if (!records.empty()) expectedTopics[topic] = records;
    std::map<std::pair<std::string, std::string>, model::EvtConsumer> expected;
    for (const auto& [key, state] : model_.consumers())
      if (!(state == model::EvtConsumer{})) expected[key] = state;
    normalize(expectedTopics, expected);
    if (topics != expectedTopics) {
      nlohmann::json a = nlohmann::json::object(), b = nlohmann::json::object();
      for (const auto& [t, rs] : topics)
        for (const model::EvtRecord& r : rs) a[t].push_back({r.seq, r.id, r.payload});
      for (const auto& [t, rs] : expectedTopics)
        for (const model::EvtRecord& r : rs) b[t].push_back({r.seq, r.id, r.payload});
      RC_FAIL("topic logs differ from the model: stored " + a.dump() + ", model " + b.dump());
    }
    for (const auto& [key, state] : expected) {
      const auto it = consumers.find(key);
      if (it == consumers.end() || !(it->second == state))
        RC_FAIL("consumer " + key.first + "/" + key.second + " differs from the model: stored " + describe(it == consumers.end() ? model::EvtConsumer{} : it->second) +
                ", model " + describe(state));
    }
    if (consumers.size() != expected.size()) RC_FAIL("the store holds a consumer the model does not");
  }

  Rig rig_;
  Shared shared_;
  EventsModel model_;
};

// ---------------------------------------------------------------------------------------------
// Commands

struct Plan {};
using BusCommand = rc::state::Command<Plan, Sut>;

struct Emit final : BusCommand {
  std::string topic = *rc::gen::element<std::string>("ord:eu", "ord:eu", "inv%3A");
  std::string id = *rc::gen::elementOf(kIds);
  int payload = *rc::gen::inRange(0, 10);
  std::optional<int64_t> maxDepth = *rc::gen::inRange(0, 6) == 0 ? std::optional<int64_t>(*rc::gen::inRange<int64_t>(0, 5)) : std::nullopt;
  void run(const Plan&, Sut& sut) const override { sut.emit(topic, id, payload, maxDepth); }
  void show(std::ostream& os) const override { os << "Emit(" << topic << ", " << id << ", " << payload << ", depth " << maxDepth.value_or(-1) << ")"; }
};

struct Poll final : BusCommand {
  std::size_t consumer = *rc::gen::inRange<std::size_t>(0, 3);
  void run(const Plan&, Sut& sut) const override { sut.poll(consumer); }
  void show(std::ostream& os) const override { os << "Poll(" << configs()[consumer].name << ")"; }
};

struct Release final : BusCommand {
  std::size_t consumer = *rc::gen::inRange<std::size_t>(0, 3);
  std::string id = *rc::gen::elementOf(kIds);
  void run(const Plan&, Sut& sut) const override { sut.release(consumer, id); }
  void show(std::ostream& os) const override { os << "Release(" << configs()[consumer].name << ", " << id << ")"; }
};

struct List final : BusCommand {
  std::size_t consumer = *rc::gen::inRange<std::size_t>(0, 3);
  void run(const Plan&, Sut& sut) const override { sut.list(consumer); }
  void show(std::ostream& os) const override { os << "List(" << configs()[consumer].name << ")"; }
};

struct Break final : BusCommand {
  std::size_t consumer = *rc::gen::inRange<std::size_t>(0, 3);
  std::string id = *rc::gen::elementOf(kIds);
  bool broken = *rc::gen::inRange(0, 5) != 0;
  void run(const Plan&, Sut& sut) const override { sut.breakHandler(consumer, id, broken); }
  void show(std::ostream& os) const override { os << (broken ? "Break(" : "Repair(") << configs()[consumer].name << ", " << id << ")"; }
};

struct Advance final : BusCommand {
  int64_t ms = *rc::gen::element<int64_t>(0, 1, 500, 1'000, 60'000, 3'600'000);
  void run(const Plan&, Sut& sut) const override { sut.advance(ms); }
  void show(std::ostream& os) const override { os << "Advance(" << ms << ")"; }
};

struct Crash final : BusCommand {
  void run(const Plan&, Sut& sut) const override { sut.crash(); }
  void show(std::ostream& os) const override { os << "Crash"; }
};

void engineAgreesWithTheModel() {
  const uint64_t seed = *rc::gen::inRange<uint64_t>(1, 1'000'000).as("world seed");
  const auto commands = *rc::gen::resize(
      kMaxCommands - 1, rc::state::gen::commands(Plan{}, rc::state::gen::execOneOfWithArgs<Emit, Emit, Poll, Poll, Poll, Poll, Release, Release, List, Break,
                                                                                           Break, Break, Advance, Advance, Crash>()));
  Sut sut(seed);
  rc::state::runAll(commands, Plan{}, sut);
  sut.finish();
}

TEST(EventsModelState, EngineAgreesWithTheModelOverRandomCommandSequences) {
  const std::optional<std::string> failure =
      runModelProperty("EventsModelState/EngineAgreesWithTheModelOverRandomCommandSequences", &engineAgreesWithTheModel, kDefaultCases);
  const Coverage& c = coverage();
  std::cout << "coverage over " << c.cases << " runs: " << c.emits << " emits (" << c.refused << " refused at maxDepth), " << c.polls
            << " polls, " << c.calls << " handler calls, " << c.delivered << " delivered, " << c.quarantines << " dead records at the end, "
            << c.releases << " releases (" << c.releasedFalse << " false), " << c.resets << " resets\n";
  if (failure) FAIL() << *failure;
}

}  // namespace
}  // namespace durasim
