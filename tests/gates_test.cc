// The input and output gates of the simulated runtime (runtime.md 5): replies and outbound calls
// wait for the writes before them and leave in production order (RT-10), a broken gate drops them,
// blockConcurrencyWhile holds other events and times out (RT-11); property: no reply reveals a lost commit.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/runtime_test_harness.h"

namespace durasim::rt_test {
namespace {

constexpr const char* kClass = "Gate";
constexpr const char* kLabel = "Gate/a";
constexpr const char* kBcwTimeout =
    "A call to blockConcurrencyWhile() in a Durable Object waited for too long. The call was canceled and the Durable "
    "Object was reset.";

struct Journal {
  ScriptedFaults* faults = nullptr;
  std::vector<std::string> lines;
  std::vector<std::pair<std::string, SimTime>> timed;  // (line, time)
  int64_t next_id = 1;
  std::set<int64_t> told;  // ids another object received in a call (revealed outside the writer)
};

class GateObject final : public DurableObject {
 public:
  GateObject(ObjectContext& ctx, Journal* journal) : ctx_(ctx), j_(journal) {
    ctx_.storage.exec("CREATE TABLE IF NOT EXISTS w (id INTEGER PRIMARY KEY)");
  }

  Task<json> call(std::string_view method, const json& args) override {
    if (method == "warm") co_return true;
    if (method == "write") {
      const int64_t id = args.contains("id") ? args.at("id").get<int64_t>() : j_->next_id++;
      insert(id);
      if (args.contains("sleep")) co_await ctx_.clock.sleepFor(args.at("sleep").get<int64_t>());
      co_return id;
    }
    if (method == "read") co_return ids();
    if (method == "note") {  // the receiving side of "tell"
      note("note " + args.at("id").dump());
      j_->told.insert(args.at("id").get<int64_t>());
      co_return true;
    }
    if (method == "tell") {  // write, then tell another object about it and archive it
      const int64_t id = args.contains("id") ? args.at("id").get<int64_t>() : j_->next_id++;
      insert(id);
      Stub sink = ctx_.objects(kClass).get(args.at("to").get<std::string>());
      json note_args = {{"id", id}};  // not inside the co_await: g++ 12 rejects a braced json there
      co_await sink.call("note", std::move(note_args));
      if (args.value("archive", false)) co_await ctx_.bucket("b").put("k" + std::to_string(id), "v");
      co_return id;
    }
    if (method == "effects") co_return co_await effects(args.at("to").get<std::string>());
    if (method == "ping") {
      note("ping");
      co_return true;
    }
    if (method == "sleep") {
      note("sleep start");
      co_await ctx_.clock.sleepFor(args.at("ms").get<int64_t>());
      note("sleep end");
      co_return true;
    }
    if (method == "bcw") {
      const int64_t ms = args.at("ms").get<int64_t>();
      const bool fail = args.value("throw", false);
      co_await ctx_.blockConcurrencyWhile([this, ms, fail] { return section(this, ms, fail); });
      note("after bcw");
      co_return true;
    }
    throw std::invalid_argument("unknown method");
  }

 private:
  static Task<void> section(GateObject* self, int64_t ms, bool fail) {
    self->note("body start");
    co_await self->ctx_.clock.sleepFor(ms);
    if (fail) throw std::runtime_error("section failed");
    self->note("body end");
  }

  // Produces a call, a cold put and the reply, each after a write.
  Task<json> effects(std::string to) {
    insert(j_->next_id++);
    Stub sink = ctx_.objects(kClass).get(to);
    json note_args = {{"id", 0}};
    co_await sink.call("note", std::move(note_args));
    insert(j_->next_id++);
    co_await ctx_.bucket("b").put("key", "body");
    insert(j_->next_id++);
    co_return true;
  }

  void insert(int64_t id) { ctx_.storage.exec("INSERT INTO w (id) VALUES (?)", id); }
  json ids() {
    json out = json::array();
    for (const SqlRow& row : ctx_.storage.exec("SELECT id FROM w ORDER BY id").toVector()) out.push_back(row.int64("id"));
    return out;
  }
  void note(const std::string& line) {
    j_->lines.push_back(line);
    j_->timed.emplace_back(line, ctx_.clock.now());
  }

  ObjectContext& ctx_;
  Journal* j_;
};

struct GateRig : Rig {
  explicit GateRig(uint64_t seed = 1) : Rig(seed) {
    journal.faults = &faults;
    Journal* j = &journal;
    runtime.define_class(kClass, [j](ObjectContext& ctx) { return std::make_unique<GateObject>(ctx, j); });
  }
  CallPtr call(const std::string& method, json args = json::object(), SimTime delay = 0, const std::string& name = "a") {
    return Rig::call(kClass, name, method, std::move(args), delay);
  }
  SimTime time_of(const std::string& line) const {
    for (const auto& [l, t] : journal.timed)
      if (l == line) return t;
    ADD_FAILURE() << "no journal line " << line;
    return -1;
  }
  std::size_t index_of(const std::string& line) const {
    auto it = std::find(journal.lines.begin(), journal.lines.end(), line);
    EXPECT_NE(it, journal.lines.end()) << "no journal line " << line;
    return static_cast<std::size_t>(it - journal.lines.begin());
  }
  Journal journal;
};

// ---------------------------------------------------------------------------------------------
// Output gate

TEST(OutputGate, AReplyWaitsForTheCalleesEarlierWrites) {
  GateRig rig;
  rig.faults.set_latency(LatencyKind::confirm, 500);
  rig.call("warm");
  CallPtr writer = rig.call("write", {{"id", 7}}, 1'000);
  CallPtr reader = rig.call("read", json::object(), 1'010);  // reads the unconfirmed 7
  CallPtr alone = rig.call("read", json::object(), 3'000);   // nothing unconfirmed: not held
  rig.run_for(10'000);
  ASSERT_TRUE(writer->ok && reader->ok && alone->ok);
  const std::vector<json> confirms = rig.events("confirm", kLabel);
  ASSERT_EQ(confirms.size(), 2u);
  const SimTime confirmed = confirms[1].at("t").get<SimTime>();
  EXPECT_EQ(confirmed, kStart + 1'001 + 500);
  EXPECT_EQ(writer->finished, confirmed + 1);  // released at confirmation, then the reply latency
  EXPECT_EQ(reader->value, json::array({7}));
  EXPECT_EQ(reader->finished, confirmed + 1);
  EXPECT_EQ(alone->finished, kStart + 3'002);
  // RT-10 evidence: no effect left before the commit it required was confirmed.
  for (const json& e : rig.events("effect", kLabel)) EXPECT_LE(e.at("required"), e.at("confirmed")) << e.dump();
}

TEST(OutputGate, OutboundEffectsLeaveInProductionOrderAfterTheirWrites) {
  GateRig rig;
  int64_t draws = 0;
  // Each write of "effects" gets its own confirmation latency (400, 200, 100 ms).
  rig.faults.set_latency([&draws](LatencyKind kind) -> int64_t {
    if (kind != LatencyKind::confirm) return 1;
    static const int64_t kLatencies[] = {1, 1, 400, 200, 100, 50};
    return kLatencies[std::min<int64_t>(draws++, 5)];
  });
  rig.call("warm", json::object(), 0, "sink");
  rig.call("warm");
  CallPtr effects = rig.call("effects", {{"to", "sink"}}, 100);
  CallPtr reader = rig.call("read", json::object(), 110);
  rig.run_for(10'000);
  ASSERT_TRUE(effects->ok) << effects->error;
  ASSERT_TRUE(reader->ok) << reader->error;
  std::vector<std::string> kinds;
  int64_t last = 0;
  for (const json& e : rig.events("effect", kLabel)) {
    kinds.push_back(e.at("kind"));
    EXPECT_GT(e.at("produced").get<int64_t>(), last) << "effects leave in production order";
    last = e.at("produced").get<int64_t>();
    EXPECT_LE(e.at("required"), e.at("confirmed")) << e.dump();
  }
  // warm's reply, the call (after write 1), the reader's reply (behind write 1), the put, the reply.
  EXPECT_EQ(kinds, (std::vector<std::string>{"reply", "call", "reply", "cold", "reply"}));
  // The sink heard of the call only after write 1 was confirmed.
  const SimTime first_confirm = rig.events("confirm", kLabel).at(1).at("t").get<SimTime>();
  EXPECT_GE(rig.time_of("note 0"), first_confirm);
  EXPECT_GE(reader->finished, first_confirm);
}

TEST(OutputGate, ABrokenGateDropsHeldRepliesAndCallsAndCallersGetAResetError) {
  GateRig rig;
  rig.faults.set_latency(LatencyKind::confirm, 500);
  rig.call("warm");
  CallPtr writer = rig.call("write", {{"id", 1}}, 1'000);
  CallPtr reader = rig.call("read", json::object(), 1'010);
  CallPtr teller = rig.call("tell", {{"id", 2}, {"to", "sink"}}, 1'020);
  rig.run_for(1'100);
  rig.faults.arm(FaultKind::storage_commit_uncertain);  // the confirmation of write 1 fails
  rig.run_for(10'000);
  const std::string expected = "broken.outputGateBroken; Durable Object storage commit failed: durability unknown";
  for (const CallPtr& call : {writer, reader, teller}) {
    ASSERT_TRUE(call->done);
    EXPECT_FALSE(call->ok);
    EXPECT_EQ(call->kind, RpcError::Kind::reset);
    EXPECT_TRUE(call->flags.durableObjectReset);
    EXPECT_EQ(call->error, expected);
  }
  EXPECT_TRUE(rig.journal.told.empty()) << "a held outbound call must never be sent";
  EXPECT_FALSE(rig.status("Gate/sink").has_value()) << "the sink was never even constructed";
  std::vector<std::string> dropped;
  for (const json& e : rig.events("effect.dropped", kLabel)) dropped.push_back(e.at("kind"));
  EXPECT_EQ(dropped, (std::vector<std::string>{"reply", "reply", "call"}));
}

TEST(OutputGate, AConfirmationStuckPast30SecondsResetsWithTheGateTimeoutMessage) {
  GateRig rig;
  rig.call("warm");
  rig.run_for(1'000);
  rig.faults.arm(FaultKind::storage_gate_timeout);  // the next commit's confirmation takes 30,001..60,000 ms
  CallPtr writer = rig.call("write", {{"id", 1}});
  CallPtr later = rig.call("read", json::object(), 100'000);
  rig.run_for(200'000);
  ASSERT_TRUE(writer->done);
  EXPECT_FALSE(writer->ok);
  EXPECT_EQ(writer->error, "Durable Object storage operation exceeded timeout which caused object to be reset.");
  EXPECT_TRUE(writer->flags.durableObjectReset);
  EXPECT_TRUE(writer->flags.overloaded);
  const SimTime committed = rig.events("commit", kLabel).at(1).at("t").get<SimTime>();
  EXPECT_EQ(writer->finished, committed + 30'000 + 1);
  // The stuck commit's durability was decided at the reset: 1 is there or not, and nothing else is.
  ASSERT_TRUE(later->ok) << later->error;
  EXPECT_TRUE(later->value == json::array() || later->value == json::array({1})) << later->value.dump();
}

// ---------------------------------------------------------------------------------------------
// Input gate

TEST(InputGate, BlockConcurrencyWhileHoldsOtherCallsAndTimersUntilItsBodyEnds) {
  GateRig rig;
  rig.call("warm");
  CallPtr sleeper = rig.call("sleep", {{"ms", 100}}, 1'000);  // its timer falls inside the section
  CallPtr bcw = rig.call("bcw", {{"ms", 1'000}}, 1'050);
  CallPtr ping = rig.call("ping", json::object(), 1'060);
  rig.run_for(10'000);
  ASSERT_TRUE(sleeper->ok && bcw->ok && ping->ok);
  // The held timer and the held call resume once the section ends, in an order the executor picks.
  ASSERT_EQ(rig.journal.lines.size(), 6u) << json(rig.journal.lines).dump();
  EXPECT_EQ(std::vector<std::string>(rig.journal.lines.begin(), rig.journal.lines.begin() + 4),
            (std::vector<std::string>{"sleep start", "body start", "body end", "after bcw"}))
      << json(rig.journal.lines).dump();
  EXPECT_EQ(std::set<std::string>(rig.journal.lines.begin() + 4, rig.journal.lines.end()),
            (std::set<std::string>{"sleep end", "ping"}));
  const SimTime end = rig.time_of("body end");
  EXPECT_EQ(end, kStart + 1'051 + 1'000);
  EXPECT_EQ(rig.time_of("ping"), end);
  EXPECT_EQ(rig.time_of("sleep end"), end);
  EXPECT_EQ(rig.sink.count("incarnation.end"), 0u);
}

TEST(InputGate, BlockConcurrencyWhileTimesOutAfter30SecondsAndResets) {
  GateRig rig;
  rig.call("warm");
  CallPtr bcw = rig.call("bcw", {{"ms", 40'000}}, 1'000);
  CallPtr ping = rig.call("ping", json::object(), 1'010);
  CallPtr later = rig.call("ping", json::object(), 40'000);
  rig.run_for(100'000);
  for (const CallPtr& call : {bcw, ping}) {
    ASSERT_TRUE(call->done);
    EXPECT_FALSE(call->ok);
    EXPECT_EQ(call->error, kBcwTimeout);
    EXPECT_TRUE(call->flags.durableObjectReset);
    EXPECT_TRUE(call->flags.overloaded);
    EXPECT_EQ(call->finished, kStart + 1'001 + 30'000 + 1);
  }
  EXPECT_EQ(std::count(rig.journal.lines.begin(), rig.journal.lines.end(), "body end"), 0);
  ASSERT_TRUE(later->ok) << later->error;
  EXPECT_EQ(rig.status(kLabel)->incarnations, 2);
  const std::vector<json> ends = rig.events("incarnation.end", kLabel);
  ASSERT_GE(ends.size(), 1u);
  EXPECT_EQ(ends[0].at("cause"), kBcwTimeout);
  EXPECT_EQ(ends[0].at("t").get<SimTime>(), kStart + 1'001 + 30'000);
}

TEST(InputGate, ABodyThatThrowsResetsTheObject) {
  GateRig rig;
  rig.call("warm");
  CallPtr bcw = rig.call("bcw", {{"ms", 100}, {"throw", true}}, 1'000);
  CallPtr ping = rig.call("ping", json::object(), 1'010);
  rig.run_for(10'000);
  ASSERT_TRUE(bcw->done && ping->done);
  EXPECT_FALSE(bcw->ok);
  EXPECT_TRUE(bcw->flags.durableObjectReset);
  EXPECT_FALSE(ping->ok) << "queued behind the section, it dies with the incarnation";
  EXPECT_TRUE(ping->flags.durableObjectReset);
  EXPECT_EQ(std::count(rig.journal.lines.begin(), rig.journal.lines.end(), "after bcw"), 0);
  EXPECT_EQ(std::count(rig.journal.lines.begin(), rig.journal.lines.end(), "ping"), 0);
}

// ---------------------------------------------------------------------------------------------
// Property: whatever crashes, nothing that left the object (a reply, a call) reveals a commit that
// later vanished from the durable state.

RC_GTEST_PROP(GatesProp, NoReplyOrCallRevealsACommitThatVanished, ()) {
  const uint64_t seed = *rc::gen::inRange<uint64_t>(1, 1'000'000);
  const int ncalls = *rc::gen::inRange(1, 9);
  const std::vector<int> latencies = *rc::gen::container<std::vector<int>>(4, rc::gen::inRange(1, 150));
  static const std::vector<FaultKind> kCrashes = {FaultKind::object_reset,         FaultKind::storage_commit_uncertain,
                                                  FaultKind::storage_commit_definite, FaultKind::storage_critical,
                                                  FaultKind::storage_gate_timeout,  FaultKind::rpc_request_lost,
                                                  FaultKind::rpc_reply_lost,        FaultKind::rpc_stall};
  const int ncrashes = *rc::gen::inRange(0, 4);
  std::vector<std::pair<int, int>> crashes;
  for (int i = 0; i < ncrashes; ++i)
    crashes.emplace_back(*rc::gen::inRange(0, static_cast<int>(kCrashes.size())), *rc::gen::inRange(1, 10));

  GateRig rig(seed);
  int64_t draw = 0;
  rig.faults.set_latency([&latencies, &draw](LatencyKind kind) -> int64_t {
    if (kind != LatencyKind::confirm) return 1;
    return latencies[static_cast<std::size_t>(draw++) % latencies.size()];
  });
  // Faults only in the writer (its nth opportunity of a kind); the sink object stays healthy.
  std::map<FaultKind, int> seen;
  rig.faults.set_rule([&crashes, &seen](FaultKind kind, const sim::FaultSite& site, int64_t) {
    if (site.object != kLabel) return false;
    const int n = ++seen[kind];
    for (const auto& [k, nth] : crashes)
      if (kCrashes[static_cast<std::size_t>(k)] == kind && nth == n) return true;
    return false;
  });
  std::vector<CallPtr> calls;
  for (int i = 0; i < ncalls; ++i) {
    const int what = *rc::gen::inRange(0, 3);
    const int delay = *rc::gen::inRange(0, 400);
    json args = json::object();
    std::string method = what == 0 ? "write" : what == 1 ? "read" : "tell";
    if (what == 0 && *rc::gen::arbitrary<bool>()) args["sleep"] = *rc::gen::inRange(0, 50);
    if (what == 2) args["to"] = "sink";
    calls.push_back(rig.call(method, args, delay));
  }
  rig.run_for(600'000);
  const std::vector<int64_t> rows = column(rig.runtime, kClass, "a", "w", "id");
  const std::set<int64_t> durable(rows.begin(), rows.end());
  for (const CallPtr& call : calls) {
    RC_ASSERT(call->done);
    if (!call->ok) continue;
    if (call->value.is_array()) {
      for (const json& id : call->value) RC_ASSERT(durable.count(id.get<int64_t>()) == 1u);
    } else if (call->value.is_number_integer()) {
      RC_ASSERT(durable.count(call->value.get<int64_t>()) == 1u);
    }
  }
  for (int64_t id : rig.journal.told) RC_ASSERT(durable.count(id) == 1u);
  RC_CLASSIFY(static_cast<int64_t>(durable.size()) < rig.journal.next_id - 1, "some writes vanished");
  RC_CLASSIFY(!rig.sink.of("effect.dropped").empty(), "held effects dropped");
  for (const json& e : rig.events("effect", kLabel)) RC_ASSERT(e.at("required").get<int64_t>() <= e.at("confirmed").get<int64_t>());
}

}  // namespace
}  // namespace durasim::rt_test
