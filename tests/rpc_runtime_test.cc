// RPC stubs of the simulated runtime (runtime.md 9): E-order on one stub whatever the latencies,
// a stub dead after any failure (in-flight and later calls), remote error text and flags, and the
// failure modes of 9.3 (overloaded and lost requests never execute; lost replies did). RT-15, RT-16.
#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/runtime_test_harness.h"

namespace durasim::rt_test {
namespace {

constexpr const char* kClass = "Callee";
constexpr const char* kLabel = "Callee/a";
constexpr const char* kConnectionLost = "Network connection lost.";
constexpr const char* kOverloaded = "Durable Object is overloaded. Too many requests queued.";

struct Journal {
  std::vector<int64_t> delivered;  // the "i" of every call the callee started, in order
};

class Callee final : public DurableObject {
 public:
  Callee(ObjectContext& ctx, Journal* journal) : ctx_(ctx), j_(journal) {
    ctx_.storage.exec("CREATE TABLE IF NOT EXISTS w (id INTEGER PRIMARY KEY)");
  }
  Task<json> call(std::string_view method, const json& args) override {
    const int64_t i = args.value("i", int64_t{-1});
    j_->delivered.push_back(i);
    if (method == "echo") co_return i;
    if (method == "slow") {
      co_await ctx_.clock.sleepFor(args.value("ms", int64_t{100}));
      co_return i;
    }
    if (method == "write") {
      ctx_.storage.exec("INSERT INTO w (id) VALUES (?)", i);
      co_return i;
    }
    if (method == "throw") throw std::runtime_error("boom " + std::to_string(i));
    if (method == "abort") ctx_.abort("test");
    throw std::invalid_argument("unknown method");
  }

 private:
  ObjectContext& ctx_;
  Journal* j_;
};

struct RpcRig : Rig {
  explicit RpcRig(uint64_t seed = 1, sim::RuntimeOptions options = {}) : Rig(seed, std::move(options)) {
    Journal* j = &journal;
    runtime.define_class(kClass, [j](ObjectContext& ctx) { return std::make_unique<Callee>(ctx, j); });
  }
  Journal journal;
};

// One call's outcome as JSON, so a batch can be awaited with when_all without losing any error.
Task<json> settle(Task<json> call) {
  try {
    json value = co_await call;
    co_return json{{"ok", true}, {"value", value}};
  } catch (const RpcError& e) {
    co_return json{{"ok", false},
                   {"error", e.what()},
                   {"retryable", e.retryable()},
                   {"overloaded", e.overloaded()},
                   {"reset", e.durableObjectReset()},
                   {"remote", e.remote()}};
  }
}

// Makes calls `first`..`first + n - 1` of `method` on `stub`, in that order, all in flight at once.
Task<void> burst(sim::World* world, Stub stub, std::string method, int64_t first, int64_t n, SimTime delay,
                 std::shared_ptr<std::vector<json>> out) {
  if (delay > 0) co_await world->sleep_for(delay);
  std::vector<Task<json>> calls;
  for (int64_t i = first; i < first + n; ++i) calls.push_back(settle(stub.call(method, {{"i", i}})));
  *out = co_await when_all(std::move(calls));
}

std::shared_ptr<std::vector<json>> spawn_burst(Rig& rig, Stub stub, const std::string& method, int64_t first, int64_t n,
                                               SimTime delay = 0) {
  auto out = std::make_shared<std::vector<json>>();
  rig.world.tasks().spawn("burst", burst(&rig.world, std::move(stub), method, first, n, delay, out));
  return out;
}

// ---------------------------------------------------------------------------------------------
// E-order

TEST(RpcRuntime, CallsOnOneStubAreDeliveredInCallOrderWhateverTheLatencies) {
  constexpr int64_t kCalls = 40;
  for (uint64_t seed = 1; seed <= 4; ++seed) {
    RpcRig rig(seed);
    Lcg lcg(seed);
    rig.faults.set_latency([&lcg](LatencyKind) { return lcg.below(100); });
    auto results = spawn_burst(rig, rig.stub(kClass, "a"), "echo", 0, kCalls);
    rig.run_for(100'000);
    ASSERT_EQ(results->size(), static_cast<std::size_t>(kCalls));
    for (int64_t i = 0; i < kCalls; ++i) {
      ASSERT_TRUE((*results)[i].at("ok").get<bool>()) << (*results)[i].dump();
      EXPECT_EQ((*results)[i].at("value"), i);
    }
    std::vector<int64_t> expected(kCalls);
    for (int64_t i = 0; i < kCalls; ++i) expected[i] = i;
    EXPECT_EQ(rig.journal.delivered, expected) << "seed " << seed;
    // The trace agrees: deliveries in the order of the calls.
    std::vector<int64_t> called, delivered;
    for (const json& e : rig.sink.of("rpc.call")) called.push_back(e.at("call"));
    for (const json& e : rig.sink.of("rpc.deliver")) delivered.push_back(e.at("call"));
    EXPECT_EQ(called, delivered);
  }
}

TEST(RpcRuntime, TheSameLatenciesReorderCallsOnSeparateStubs) {
  // Sanity check of the test above: without one shared stub, these latencies do reorder deliveries.
  RpcRig rig(1);
  Lcg lcg(1);
  rig.faults.set_latency([&lcg](LatencyKind) { return lcg.below(100); });
  for (int64_t i = 0; i < 40; ++i) rig.call(kClass, "a", "echo", {{"i", i}});
  rig.run_for(100'000);
  ASSERT_EQ(rig.journal.delivered.size(), 40u);
  EXPECT_FALSE(std::is_sorted(rig.journal.delivered.begin(), rig.journal.delivered.end()));
}

// ---------------------------------------------------------------------------------------------
// Dead stubs

TEST(RpcRuntime, AFailedStubFailsItsInFlightAndLaterCallsWithTheSameError) {
  RpcRig rig;
  rig.faults.fire_at(FaultKind::rpc_request_lost, 1);  // the first call's request is lost
  Stub stub = rig.stub(kClass, "a");
  auto first = spawn_burst(rig, stub, "slow", 0, 3);
  auto later = spawn_burst(rig, stub, "echo", 10, 1, 1'000);
  rig.run_for(10'000);
  ASSERT_EQ(first->size(), 3u);
  for (const json& r : *first) {
    EXPECT_FALSE(r.at("ok").get<bool>()) << r.dump();
    EXPECT_EQ(r.at("error"), kConnectionLost);
    EXPECT_TRUE(r.at("retryable").get<bool>());
    EXPECT_FALSE(r.at("reset").get<bool>());
  }
  ASSERT_EQ(later->size(), 1u);
  EXPECT_EQ(later->at(0).at("error"), kConnectionLost);
  EXPECT_TRUE(stub.broken());
  // Calls 1 and 2 had been delivered (and ran); call 0 never was; call 10 was never sent.
  EXPECT_EQ(rig.journal.delivered, (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(rig.sink.count("rpc.call"), 3u);
  // A new stub works.
  CallPtr fresh = rig.call(kClass, "a", "echo", {{"i", 20}});
  rig.run_for(1'000);
  ASSERT_TRUE(fresh->ok) << fresh->error;
}

TEST(RpcRuntime, ARemoteErrorCarriesTheCalleesTextAndKillsTheStubByDefault) {
  RpcRig rig;
  Stub stub = rig.stub(kClass, "a");
  CallPtr thrown = rig.call_on(stub, "throw", {{"i", 42}});
  CallPtr after = rig.call_on(stub, "echo", {{"i", 43}}, 1'000);
  rig.run_for(5'000);
  ASSERT_TRUE(thrown->done);
  EXPECT_FALSE(thrown->ok);
  EXPECT_EQ(thrown->error, "boom 42");
  EXPECT_EQ(thrown->kind, RpcError::Kind::remote);
  EXPECT_TRUE(thrown->flags.remote);
  EXPECT_FALSE(thrown->flags.retryable);
  EXPECT_FALSE(thrown->flags.overloaded);
  EXPECT_FALSE(thrown->flags.durableObjectReset);
  ASSERT_TRUE(after->done);
  EXPECT_FALSE(after->ok);
  EXPECT_EQ(after->error, "boom 42") << "the dead stub repeats its error";
  EXPECT_EQ(rig.journal.delivered, (std::vector<int64_t>{42}));
}

TEST(RpcRuntime, WithRemoteErrorsNotBreakingStubsTheStubLivesOn) {
  sim::RuntimeOptions options;
  options.remote_error_breaks_stub = false;
  RpcRig rig(1, options);
  Stub stub = rig.stub(kClass, "a");
  CallPtr thrown = rig.call_on(stub, "throw", {{"i", 1}});
  CallPtr after = rig.call_on(stub, "echo", {{"i", 2}}, 1'000);
  rig.run_for(5'000);
  EXPECT_EQ(thrown->error, "boom 1");
  EXPECT_TRUE(thrown->flags.remote);
  ASSERT_TRUE(after->ok) << after->error;
  EXPECT_EQ(after->value, 2);
  EXPECT_FALSE(stub.broken());
}

// ---------------------------------------------------------------------------------------------
// Failure modes

TEST(RpcRuntime, AnOverloadedCallIsNeverExecuted) {
  RpcRig rig;
  rig.faults.fire_at(FaultKind::rpc_overloaded, 1);
  CallPtr call = rig.call(kClass, "a", "write", {{"i", 5}});
  rig.run_for(5'000);
  ASSERT_TRUE(call->done);
  EXPECT_FALSE(call->ok);
  EXPECT_EQ(call->error, kOverloaded);
  EXPECT_EQ(call->kind, RpcError::Kind::overloaded);
  EXPECT_TRUE(call->flags.overloaded);
  EXPECT_FALSE(call->flags.retryable);
  EXPECT_FALSE(call->flags.durableObjectReset);
  EXPECT_FALSE(call->flags.remote);
  EXPECT_TRUE(rig.journal.delivered.empty());
  EXPECT_FALSE(rig.status(kLabel).has_value()) << "not even constructed";
}

TEST(RpcRuntime, ALostRequestIsNeverExecutedAndFailsAfterBothLatencies) {
  RpcRig rig;
  int64_t draws = 0;
  rig.faults.set_latency([&draws](LatencyKind kind) -> int64_t {
    if (kind != LatencyKind::rpc) return 1;
    return ++draws % 2 == 1 ? 7 : 11;  // request 7 ms, reply 11 ms
  });
  rig.faults.fire_at(FaultKind::rpc_request_lost, 1);
  CallPtr call = rig.call(kClass, "a", "write", {{"i", 5}});
  rig.run_for(5'000);
  ASSERT_TRUE(call->done);
  EXPECT_FALSE(call->ok);
  EXPECT_EQ(call->error, kConnectionLost);
  EXPECT_EQ(call->kind, RpcError::Kind::disconnected);
  EXPECT_TRUE(call->flags.retryable);
  EXPECT_EQ(call->finished - call->sent, 18);
  EXPECT_TRUE(rig.journal.delivered.empty());
  EXPECT_FALSE(rig.status(kLabel).has_value());
}

TEST(RpcRuntime, ALostReplyFailsTheCallerButTheCallRanAndItsWritesCommitted) {
  RpcRig rig;
  rig.faults.fire_at(FaultKind::rpc_reply_lost, 1);
  CallPtr call = rig.call(kClass, "a", "write", {{"i", 5}});
  rig.run_for(5'000);
  ASSERT_TRUE(call->done);
  EXPECT_FALSE(call->ok);
  EXPECT_EQ(call->error, kConnectionLost);
  EXPECT_TRUE(call->flags.retryable);
  EXPECT_EQ(rig.journal.delivered, (std::vector<int64_t>{5}));
  EXPECT_EQ(column(rig.runtime, kClass, "a", "w", "id"), (std::vector<int64_t>{5}));
}

TEST(RpcRuntime, ACalleeResetDuringTheCallFailsItWithTheResetFlag) {
  RpcRig rig;
  CallPtr slow = rig.call(kClass, "a", "slow", {{"i", 1}, {"ms", 1'000}});
  CallPtr abort = rig.call(kClass, "a", "abort", {{"i", 2}}, 100);
  rig.run_for(5'000);
  for (const CallPtr& call : {slow, abort}) {
    ASSERT_TRUE(call->done);
    EXPECT_FALSE(call->ok);
    EXPECT_EQ(call->kind, RpcError::Kind::reset);
    EXPECT_TRUE(call->flags.durableObjectReset);
    EXPECT_FALSE(call->flags.remote);
    EXPECT_EQ(call->error, "broken.reset; Durable Object was reset");
  }
}

}  // namespace
}  // namespace durasim::rt_test
