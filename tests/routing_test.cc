// The routing client (routing.md 3 and 4; RTE-01..07, RTE-10, RTE-11 of invariants-engine.md): its
// exactly-once invoke, passthrough, observations, width dynamics, selection, validation and the
// timeout wrapper, driven by a fake clock, a scripted random source and a tiny executor here.
// RoutingLoad and the envelope (RTE-08, RTE-09): load_test.cc.
#include <gtest/gtest.h>

#include <coroutine>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/conventions.h"
#include "engine/errors.h"
#include "engine/routing.h"
#include "engine/runtime.h"
#include "engine/task.h"
#include "properties/routing_checks.h"

namespace durasim {
namespace {

// ---------------------------------------------------------------------------------------------
// A minimal host: fake time with a timer queue, a ready queue, background roots and events.

class FakeClock final : public Clock {
 public:
  int64_t now() const override { return now_; }
  Task<void> sleepFor(int64_t ms) override {
    if (ms < 0) throw std::invalid_argument("negative delay");
    co_await Timer{this, now_ + ms};
  }
  Task<void> sleepUntil(int64_t t) override { co_await Timer{this, t < now_ ? now_ : t}; }

  void set(int64_t t) { now_ = t; }
  void advance(int64_t ms) { now_ += ms; }
  void schedule(int64_t t, std::coroutine_handle<> h) { timers_.emplace(t, h); }
  bool fireNext() {
    if (timers_.empty()) return false;
    auto next = timers_.begin();
    const std::coroutine_handle<> h = next->second;
    if (next->first > now_) now_ = next->first;
    timers_.erase(next);
    h.resume();
    return true;
  }

 private:
  struct Timer {
    FakeClock* clock;
    int64_t at;
    bool await_ready() const noexcept { return false; }
    void await_suspend(std::coroutine_handle<> h) { clock->schedule(at, h); }
    void await_resume() const noexcept {}
  };
  int64_t now_ = 0;
  std::multimap<int64_t, std::coroutine_handle<>> timers_;  // equal times fire in insertion order
};

// Returns the scripted values in order, then 0.
class ScriptedRandom final : public Random {
 public:
  std::deque<double> script;
  int draws = 0;
  double random() override {
    ++draws;
    if (script.empty()) return 0;
    const double v = script.front();
    script.pop_front();
    return v;
  }
  std::string uuid() override { return "00000000-0000-4000-8000-000000000000"; }
};

// Polls its flag once per simulated millisecond; good enough for tests.
class PollingEvent final : public AsyncEvent {
 public:
  explicit PollingEvent(FakeClock& clock) : clock_(clock) {}
  void set() override { set_ = true; }
  bool isSet() const override { return set_; }
  Task<bool> wait(std::optional<int64_t> timeoutMs) override {
    const int64_t start = clock_.now();
    while (!set_) {
      if (timeoutMs && clock_.now() - start >= *timeoutMs) co_return false;
      co_await clock_.sleepFor(1);
    }
    co_return true;
  }

 private:
  FakeClock& clock_;
  bool set_ = false;
};

struct Host {
  FakeClock clock;
  ScriptedRandom random;
  std::vector<Task<void>> background;
  int64_t backgroundDelayMs = 0;  // how long after spawn a background root starts

  std::shared_ptr<AsyncEvent> makeEvent() { return std::make_shared<PollingEvent>(clock); }
  void spawn(Task<void> task) {
    clock.schedule(clock.now() + backgroundDelayMs, task.handle());
    background.push_back(std::move(task));
  }
  // Starts `task` and fires timers until it is done (or nothing is left to run).
  template <class T>
  void runUntilDone(Task<T>& task) {
    task.handle().resume();
    while (!task.done() && clock.fireNext()) {
    }
    ASSERT_TRUE(task.done());
  }
  void drain() {
    while (clock.fireNext()) {
    }
  }
};

using Result = EnqueueResult<std::string>;
using Client = RoutingClient<int, std::string>;
using Options = RoutingClientOptions<int, std::string>;

LoadSnapshot loadAt(int64_t observedAt, int64_t pending = 0, int64_t inFlight = 0) {
  LoadSnapshot load;
  load.observedAt = observedAt;
  load.outbound.pendingDeliveries = pending;
  load.inbound.inFlight = inFlight;
  return load;
}

Task<Result> replyNow(Result result) { co_return result; }
Task<Result> replyLater(FakeClock& clock, int64_t delayMs, Result result, bool* replied) {
  co_await clock.sleepFor(delayMs);
  *replied = true;
  co_return result;
}
Task<Result> failNow(std::string message) {
  throw std::runtime_error(message);
  co_return Result{};
}

struct TransportFailure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Records every invoke and replies with `next` (observedAt defaults to the clock's now).
struct Recorder {
  explicit Recorder(Host& h) : host(h) {}
  Host& host;
  std::vector<ShardAddress> calls;
  std::vector<int> inputs;
  std::optional<LoadSnapshot> nextLoad;
  int64_t pending = 0;
  bool reject = false;

  Options options() {
    Options o;
    o.invoke = [this](const ShardAddress& address, const int& input) {
      calls.push_back(address);
      inputs.push_back(input);
      const LoadSnapshot load = nextLoad.value_or(loadAt(host.clock.now(), pending));
      return replyNow(reject ? Result::rejected(ErrorInfo{"FanoutEnqueueError", "bad"}, load)
                             : Result::ok("v" + std::to_string(input), load));
    };
    o.makeEvent = [this] { return host.makeEvent(); };
    o.background = [this](Task<void> task) { host.spawn(std::move(task)); };
    return o;
  }
};

Result pushNow(Host& host, Client& client, int input, std::optional<nlohmann::json> context = std::nullopt) {
  Task<Result> task = client.push(input, std::move(context));
  host.runUntilDone(task);
  return task.result();
}

// ---------------------------------------------------------------------------------------------
// RTE-01, RTE-02, RTE-03

TEST(RoutingClient, InvokesExactlyOncePerPush) {
  Host host;
  Recorder rec(host);
  Client client(host.clock, host.random, rec.options());
  for (int i = 0; i < 5; ++i) {
    const Result r = pushNow(host, client, i);
    EXPECT_TRUE(r.success);
    EXPECT_EQ(r.value, std::string("v").append(std::to_string(i)));
  }
  ASSERT_EQ(rec.calls.size(), 5u);
  EXPECT_EQ(rec.inputs, (std::vector<int>{0, 1, 2, 3, 4}));
  for (const ShardAddress& a : rec.calls) EXPECT_EQ(a, (ShardAddress{"shard-0", std::nullopt}));

  // A failing invoke is called once and not retried nor re-routed.
  int failures = 0;
  Options o = rec.options();
  o.invoke = [&](const ShardAddress&, const int&) {
    ++failures;
    return failNow("lost reply");
  };
  Client failing(host.clock, host.random, o);
  Task<Result> task = failing.push(1);
  host.runUntilDone(task);
  EXPECT_THROW(task.result(), std::runtime_error);
  EXPECT_EQ(failures, 1);
}

TEST(RoutingClient, RejectionPassesThroughWithLoadRecorded) {
  Host host;
  host.clock.set(5000);
  Recorder rec(host);
  rec.reject = true;
  rec.nextLoad = loadAt(4900, 7, 2);
  Client client(host.clock, host.random, rec.options());
  const Result r = pushNow(host, client, 3);
  EXPECT_FALSE(r.success);
  EXPECT_FALSE(r.value.has_value());
  EXPECT_EQ(r.error, (ErrorInfo{"FanoutEnqueueError", "bad"}));
  EXPECT_EQ(r.load, loadAt(4900, 7, 2));
  EXPECT_EQ(rec.calls.size(), 1u);
  const Observations observed = client.observations();
  ASSERT_EQ(observed.count("shard-0"), 1u);
  EXPECT_EQ(observed.at("shard-0"), loadAt(4900, 7, 2));
}

TEST(RoutingClient, ExceptionsPropagateWithoutObservation) {
  Host host;
  Recorder rec(host);
  Options o = rec.options();
  int calls = 0;
  o.invoke = [&](const ShardAddress&, const int& input) -> Task<Result> {
    ++calls;
    if (input == 0) throw TransportFailure("thrown by invoke itself");
    return failNow("transport failure");
  };
  Client client(host.clock, host.random, o);
  for (int input : {0, 1}) {
    Task<Result> task = client.push(input);
    host.runUntilDone(task);
    EXPECT_THROW(task.result(), std::runtime_error);
  }
  EXPECT_EQ(calls, 2);
  EXPECT_TRUE(client.observations().empty());
  EXPECT_EQ(client.width(), 1);
}

// ---------------------------------------------------------------------------------------------
// RTE-04, RTE-05

Options shardByInput(Recorder& rec) {
  Options o = rec.options();
  o.sharding = [](const int& input, const std::optional<nlohmann::json>&, const Observations&) {
    return ShardAddress{std::string("s").append(std::to_string(input)), std::nullopt};
  };
  return o;
}

TEST(RoutingObservations, CappedAt1024LeastRecentlyUpdatedEvicted) {
  Host host;
  Recorder rec(host);
  Client client(host.clock, host.random, shardByInput(rec));
  for (int i = 0; i < 1024; ++i) pushNow(host, client, i);
  EXPECT_EQ(client.observations().size(), kRoutingMaxObservedShards);
  pushNow(host, client, 0);     // s0 becomes the most recently updated
  pushNow(host, client, 5000);  // evicts s1, the least recently updated
  Observations observed = client.observations();
  EXPECT_EQ(observed.size(), 1024u);
  EXPECT_EQ(observed.count("s0"), 1u);
  EXPECT_EQ(observed.count("s1"), 0u);
  EXPECT_EQ(observed.count("s5000"), 1u);
  for (int i = 1; i < 7; ++i) pushNow(host, client, 6000 + i);
  observed = client.observations();
  EXPECT_EQ(observed.size(), 1024u);
  EXPECT_EQ(observed.count("s6"), 0u);
  EXPECT_EQ(observed.count("s7"), 0u);
  EXPECT_EQ(observed.count("s8"), 1u);
}

TEST(RoutingObservations, WindowedAndReturnedAsCopies) {
  Host host;
  Recorder rec(host);
  Client client(host.clock, host.random, shardByInput(rec));
  host.clock.set(1000);
  pushNow(host, client, 1);  // observedAt 1000
  host.clock.set(2000);
  pushNow(host, client, 2);  // observedAt 2000

  Observations copy = client.observations();
  copy.erase("s1");
  copy["s2"].outbound.pendingDeliveries = 999;
  copy["bogus"] = loadAt(0);
  Observations again = client.observations();
  EXPECT_EQ(again.size(), 2u);
  EXPECT_EQ(again.at("s2").outbound.pendingDeliveries, 0);

  host.clock.set(1000 + kRoutingWindowMs - 1);
  EXPECT_EQ(client.observations().size(), 2u);
  host.clock.set(1000 + kRoutingWindowMs);  // now - observedAt >= 60000: dropped
  again = client.observations();
  EXPECT_EQ(again.size(), 1u);
  EXPECT_EQ(again.count("s2"), 1u);

  // The sharding function sees the pruned copy.
  Options o = rec.options();
  std::vector<std::size_t> seen;
  o.sharding = [&](const int&, const std::optional<nlohmann::json>&, const Observations& obs) {
    seen.push_back(obs.size());
    return ShardAddress{"s9", std::nullopt};
  };
  Client other(host.clock, host.random, o);
  pushNow(host, other, 9);
  host.clock.set(host.clock.now() + kRoutingWindowMs);
  pushNow(host, other, 9);
  EXPECT_EQ(seen, (std::vector<std::size_t>{0, 0}));
}

TEST(RoutingObservations, OnlyFresherOrEqualLoadsReplaceStoredOnes) {
  Host host;
  host.clock.set(10000);
  Recorder rec(host);
  Client client(host.clock, host.random, shardByInput(rec));
  rec.nextLoad = loadAt(9000, 10);
  pushNow(host, client, 1);
  rec.nextLoad = loadAt(8000, 20);  // older: ignored
  const Result r = pushNow(host, client, 1);
  EXPECT_EQ(r.load, loadAt(8000, 20));  // still returned unchanged
  EXPECT_EQ(client.observations().at("s1"), loadAt(9000, 10));
  rec.nextLoad = loadAt(9000, 30);  // equal: replaces
  pushNow(host, client, 1);
  EXPECT_EQ(client.observations().at("s1"), loadAt(9000, 30));
  rec.nextLoad = loadAt(9500, 40);
  pushNow(host, client, 1);
  EXPECT_EQ(client.observations().at("s1"), loadAt(9500, 40));
}

// ---------------------------------------------------------------------------------------------
// RTE-06

TEST(RoutingWidth, GrowsAtMostOncePerSecondAboveSoftLimit) {
  Host host;
  Recorder rec(host);
  Options o = rec.options();
  o.softBacklogLimit = 100;
  Client client(host.clock, host.random, o);
  EXPECT_EQ(client.width(), 1);
  rec.pending = 100;  // not above the limit
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 1);
  rec.pending = 101;
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 2);  // first resize: no lastResizeAt
  host.clock.set(999);
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 2);
  host.clock.set(1000);
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 3);
  host.clock.set(1500);
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 3);

  // Stale loads never resize: older than the last resize, or a full window old.
  host.clock.set(5000);
  rec.nextLoad = loadAt(999, 500);
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 3);
  host.clock.set(1000 + kRoutingWindowMs);
  rec.nextLoad = loadAt(1000, 500);
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 3);
  rec.nextLoad = loadAt(1001, 500);
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 4);

  // Custom sharding never resizes.
  Options custom = shardByInput(rec);
  custom.softBacklogLimit = 1;
  Client sharded(host.clock, host.random, custom);
  rec.nextLoad.reset();
  rec.pending = 1000;
  pushNow(host, sharded, 1);
  EXPECT_EQ(sharded.width(), 1);
}

TEST(RoutingWidth, ShrinksAtMostOncePerWindowWhenIdleAndBelowQuarterLimit) {
  Host host;
  Recorder rec(host);
  Options o = rec.options();
  o.softBacklogLimit = 1000;
  Client client(host.clock, host.random, o);
  rec.pending = 2000;
  pushNow(host, client, 0);  // t=0: width 2
  host.clock.set(1000);
  pushNow(host, client, 0);  // t=1000: width 3
  ASSERT_EQ(client.width(), 3);

  rec.pending = 0;
  host.clock.set(1000 + kRoutingShrinkIntervalMs - 1);
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 3);  // too soon after the last resize
  host.clock.set(1000 + kRoutingShrinkIntervalMs);
  rec.nextLoad = loadAt(host.clock.now(), 250);  // 4 * 250 == limit: not below
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 3);
  rec.nextLoad = loadAt(host.clock.now(), 0, 1);  // inbound in flight: not idle
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 3);
  LoadSnapshot busyOut = loadAt(host.clock.now(), 0);
  busyOut.outbound.inFlight = 1;  // outbound in flight: not idle
  rec.nextLoad = busyOut;
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 3);
  rec.nextLoad = loadAt(host.clock.now(), 249);
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 2);
  rec.nextLoad.reset();
  host.clock.advance(kRoutingShrinkIntervalMs - 1);
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 2);  // at most one shrink per window
  host.clock.advance(1);
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 1);
  host.clock.advance(10 * kRoutingShrinkIntervalMs);
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 1);  // never below 1

  // Growth is allowed 1000 ms after a shrink.
  rec.pending = 2000;
  host.clock.advance(kRoutingGrowIntervalMs);
  pushNow(host, client, 0);
  EXPECT_EQ(client.width(), 2);
}

// ---------------------------------------------------------------------------------------------
// RTE-07

TEST(RoutingSelection, PowerOfTwoChoicesRule) {
  ScriptedRandom random;
  detail::RoutingCore core;
  for (int64_t t = 0; t < 3; ++t) core.resize(loadAt(t * 1000, 2000), t * 1000, 1000);
  ASSERT_EQ(core.width(), 4);

  auto pick = [&](double a, double b, const Observations& observed) {
    random.script = {a, b};
    random.draws = 0;
    const ShardAddress address = core.select(observed, random);
    EXPECT_EQ(random.draws, 2);  // both candidates are always drawn
    EXPECT_FALSE(address.locationHint.has_value());
    return address.shard;
  };
  Observations none;
  EXPECT_EQ(pick(0.0, 0.99, none), "shard-0");
  EXPECT_EQ(pick(0.99, 0.0, none), "shard-3");
  EXPECT_EQ(pick(0.25, 0.74, none), "shard-1");

  Observations observed{{"shard-0", loadAt(0, 5)}, {"shard-1", loadAt(0, 3)}};
  EXPECT_EQ(pick(0.0, 0.5, observed), "shard-2");   // a observed, b unobserved
  EXPECT_EQ(pick(0.75, 0.0, observed), "shard-3");  // a unobserved
  EXPECT_EQ(pick(0.0, 0.25, observed), "shard-1");  // fewer pending wins
  EXPECT_EQ(pick(0.25, 0.0, observed), "shard-1");
  EXPECT_EQ(pick(0.0, 0.0, observed), "shard-0");   // same candidate twice

  LoadSnapshot busy = loadAt(0, 4, 2);
  busy.inbound.averageProcessingMs = 10;  // pressure 20
  LoadSnapshot calm = loadAt(0, 4);
  calm.outbound.inFlight = 3;
  calm.outbound.averageProcessingMs = 5;  // pressure 15
  LoadSnapshot calmToo = loadAt(0, 4, 3);  // inbound average absent counts as 0: pressure 0 + ...
  calmToo.outbound.inFlight = 1;
  calmToo.outbound.averageProcessingMs = 15;  // pressure 15
  Observations tied{{"shard-0", busy}, {"shard-1", calm}, {"shard-2", calmToo}};
  EXPECT_EQ(pick(0.0, 0.25, tied), "shard-1");  // lower pressure
  EXPECT_EQ(pick(0.25, 0.0, tied), "shard-1");
  EXPECT_EQ(pick(0.25, 0.5, tied), "shard-1");  // equal pressure: the first candidate
  EXPECT_EQ(pick(0.5, 0.25, tied), "shard-2");
}

// The observation map `rte.push.begin` carries is kept between pushes and shared with the events:
// after any sequence of replies recorded, evictions and window expiries it equals the map built
// from the observations afresh, and an event that still holds an earlier map keeps what it saw.
TEST(RoutingObservationsJson, FollowsTheObservationsAndLeavesHeldMapsAlone) {
  using json = nlohmann::json;
  detail::RoutingCore core;
  const auto fresh = [&](int64_t now) {
    json expected = json::object();
    for (const auto& [shard, load] : core.observations(now)) expected[shard] = detail::loadToJson(load);
    return expected;
  };
  std::vector<std::pair<std::shared_ptr<const json>, json>> held;  // a map an event kept, and what it was
  uint64_t state = 7;
  const auto next = [&](uint64_t bound) {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (state >> 33) % bound;
  };
  int64_t now = 0;
  for (int step = 0; step < 4000; ++step) {
    // Steps 1000 to 2999 record replies of more shards than the cap within the window (evictions),
    // and the first 1,600 of them without a push between (more changes than are worth noting).
    const bool many = step >= 1000 && step < 3000;
    now += static_cast<int64_t>(next(many ? 3 : 3000));
    const std::string shard = "shard-" + std::to_string(next(many ? 5000 : 40));
    LoadSnapshot load = loadAt(now - static_cast<int64_t>(next(many ? 1000 : 70'000)), static_cast<int64_t>(next(9)),
                               static_cast<int64_t>(next(4)));
    if (next(3) == 0) load.outbound.averageProcessingMs = static_cast<double>(next(100)) / 4;
    core.record(shard, load);
    if (step == 2999) EXPECT_EQ(core.observations(now).size(), kRoutingMaxObservedShards);  // the cap was reached
    if (next(4) != 0 || (step >= 1000 && step < 2600)) continue;
    const json expected = fresh(now);
    const std::shared_ptr<const json> shared = core.observationsJson();
    ASSERT_EQ(*shared, expected) << "step " << step;
    if (next(2) == 0) held.emplace_back(shared, expected);
    if (held.size() > 5) held.erase(held.begin());
  }
  for (const auto& [shared, was] : held) EXPECT_EQ(*shared, was);
}

TEST(RoutingSelection, ClientRoutesToTheSelectedShard) {
  Host host;
  Recorder rec(host);
  Options o = rec.options();
  o.softBacklogLimit = 10;
  Client client(host.clock, host.random, o);
  rec.pending = 11;
  pushNow(host, client, 0);  // width 2, shard-0 observed with pending 11
  ASSERT_EQ(client.width(), 2);
  host.random.script = {0.0, 0.5};
  rec.pending = 0;
  pushNow(host, client, 1);
  EXPECT_EQ(rec.calls.back().shard, "shard-1");  // unobserved explored
  host.random.script = {0.0, 0.5};
  pushNow(host, client, 2);
  EXPECT_EQ(rec.calls.back().shard, "shard-1");  // fewer pending (0 < 11)
}

// ---------------------------------------------------------------------------------------------
// RTE-10 and validation messages

template <class E, class F>
void expectError(F&& f, const std::string& name, const std::string& message) {
  try {
    f();
    ADD_FAILURE() << "expected " << name;
  } catch (const E& e) {
    EXPECT_EQ(e.name(), name);
    EXPECT_STREQ(e.what(), message.c_str());
  }
}

TEST(RoutingClient, EmptyShardThrowsRoutingErrorWithoutInvoking) {
  Host host;
  Recorder rec(host);
  Options o = rec.options();
  o.sharding = [](const int&, const std::optional<nlohmann::json>&, const Observations&) { return ShardAddress{}; };
  Client client(host.clock, host.random, o);
  Task<Result> task = client.push(1);
  host.runUntilDone(task);
  expectError<RoutingError>([&] { task.result(); }, "RoutingError", "Routing requires a non-empty shard");
  EXPECT_TRUE(rec.calls.empty());

  // A throwing sharding function propagates, also without invoking.
  Options t = rec.options();
  t.sharding = [](const int&, const std::optional<nlohmann::json>&, const Observations&) -> ShardAddress {
    throw std::logic_error("bad sharding");
  };
  Client throwing(host.clock, host.random, t);
  Task<Result> again = throwing.push(1);
  host.runUntilDone(again);
  EXPECT_THROW(again.result(), std::logic_error);
  EXPECT_TRUE(rec.calls.empty());
  EXPECT_TRUE(client.observations().empty());
}

TEST(RoutingClient, ValidationMessages) {
  Host host;
  Recorder rec(host);
  Options o = rec.options();
  o.softBacklogLimit = 0;
  expectError<RangeError>([&] { (void)Client(host.clock, host.random, o); }, "RangeError",
                          "softBacklogLimit must be a positive safe integer");
  o.softBacklogLimit = kMaxSafeInteger;
  EXPECT_NO_THROW((void)Client(host.clock, host.random, o));
  o.softBacklogLimit = kMaxSafeInteger + 1;
  expectError<RangeError>([&] { (void)Client(host.clock, host.random, o); }, "RangeError",
                          "softBacklogLimit must be a positive safe integer");
  Options none = rec.options();
  none.invoke = nullptr;
  expectError<TypeError>([&] { (void)Client(host.clock, host.random, none); }, "TypeError",
                         "Routing requires an invoke function");

  Client client(host.clock, host.random, rec.options());
  expectError<RangeError>([&] { (void)client.withTimeout(0); }, "RangeError", "timeoutMs must be a positive integer");
  expectError<RangeError>([&] { (void)client.withTimeout(-5); }, "RangeError", "timeoutMs must be a positive integer");

  Task<Result> positional = client.push(1, nlohmann::json::array());
  host.runUntilDone(positional);
  expectError<TypeError>([&] { positional.result(); }, "TypeError", "Routing context must be an object");
  Client boundBad = client.withContext(nlohmann::json(5));
  Task<Result> bound = boundBad.push(1);
  host.runUntilDone(bound);
  expectError<TypeError>([&] { bound.result(); }, "TypeError", "Routing context must be an object");
  EXPECT_TRUE(rec.calls.empty());
}

TEST(RoutingClient, ContextsMergeAndViewsShareState) {
  Host host;
  Recorder rec(host);
  Options o = rec.options();
  std::vector<std::optional<nlohmann::json>> contexts;
  o.sharding = [&](const int&, const std::optional<nlohmann::json>& context, const Observations&) {
    contexts.push_back(context);
    return ShardAddress{"s", std::string("weur")};
  };
  Client client(host.clock, host.random, o);
  pushNow(host, client, 1);
  Client view = client.withContext({{"tenant", "a"}, {"k", 1}});
  pushNow(host, view, 2, nlohmann::json{{"k", 2}, {"extra", true}});
  Client nested = view.withContext({{"tenant", "b"}, {"n", 3}});
  pushNow(host, nested, 3);
  ASSERT_EQ(contexts.size(), 3u);
  EXPECT_FALSE(contexts[0].has_value());
  EXPECT_EQ(*contexts[1], (nlohmann::json{{"tenant", "a"}, {"k", 1}, {"extra", true}}));
  EXPECT_EQ(*contexts[2], (nlohmann::json{{"tenant", "a"}, {"k", 1}, {"n", 3}}));
  EXPECT_EQ(rec.calls.back(), (ShardAddress{"s", std::string("weur")}));  // the hint is passed through
  EXPECT_EQ(client.observations().size(), 1u);  // views record into the shared map

  // Width is shared as well.
  Options d = rec.options();
  d.softBacklogLimit = 1;
  Client base(host.clock, host.random, d);
  Client timed = base.withTimeout(1000).withContext(nlohmann::json::object());
  rec.pending = 5;
  pushNow(host, timed, 0);
  EXPECT_EQ(base.width(), 2);
  EXPECT_EQ(timed.width(), 2);
}

// ---------------------------------------------------------------------------------------------
// RTE-11

struct Hanging {
  Hanging(Host& h, int64_t replyAfter) : host(h), replyAfterMs(replyAfter) {}
  Host& host;
  int64_t replyAfterMs;
  int calls = 0;
  bool replied = false;
  std::optional<int64_t> startedAt;

  Options options(Recorder& rec) {
    Options o = rec.options();
    o.invoke = [this](const ShardAddress&, const int&) {
      ++calls;
      startedAt = host.clock.now();
      return replyLater(host.clock, replyAfterMs, Result::ok("late", loadAt(host.clock.now() + replyAfterMs, 1)),
                        &replied);
    };
    return o;
  }
};

TEST(RoutingTimeout, ThrowsNoEarlierThanTimeoutAndDiscardsLateReply) {
  Host host;
  host.clock.set(1000);
  Recorder rec(host);
  Hanging hang(host, 500);
  Client client = Client(host.clock, host.random, hang.options(rec)).withTimeout(100);
  Task<Result> task = client.push(1);
  host.runUntilDone(task);
  const int64_t thrownAt = host.clock.now();
  expectError<RoutingTimeoutError>([&] { task.result(); }, "RoutingTimeoutError", "Routing push timed out after 100ms");
  try {
    task.result();
  } catch (const RoutingTimeoutError& e) {
    EXPECT_EQ(e.timeoutMs(), 100);
  }
  ASSERT_TRUE(hang.startedAt.has_value());
  EXPECT_GE(thrownAt - *hang.startedAt, 100);
  EXPECT_EQ(hang.calls, 1);
  EXPECT_FALSE(hang.replied);

  host.drain();  // the invoke was not cancelled: its reply arrives, and is discarded
  EXPECT_TRUE(hang.replied);
  EXPECT_EQ(hang.calls, 1);
  EXPECT_TRUE(client.observations().empty());
  EXPECT_EQ(client.width(), 1);
}

TEST(RoutingTimeout, DeadlineCountsFromInvokeStart) {
  Host host;
  host.backgroundDelayMs = 70;  // the host starts the raced invoke 70 ms after the push
  Recorder rec(host);
  Hanging hang(host, 1000);
  Client client = Client(host.clock, host.random, hang.options(rec)).withTimeout(100);
  Task<Result> task = client.push(1);
  host.runUntilDone(task);
  EXPECT_THROW(task.result(), RoutingTimeoutError);
  ASSERT_TRUE(hang.startedAt.has_value());
  EXPECT_EQ(*hang.startedAt, 70);
  EXPECT_GE(host.clock.now() - *hang.startedAt, 100);
}

TEST(RoutingTimeout, ReplyOrFailureWithinDeadlinePassesThrough) {
  Host host;
  Recorder rec(host);
  Hanging hang(host, 30);
  Client client = Client(host.clock, host.random, hang.options(rec)).withTimeout(100);
  const Result r = pushNow(host, client, 1);
  EXPECT_TRUE(r.success);
  EXPECT_EQ(r.value, "late");
  EXPECT_EQ(hang.calls, 1);
  EXPECT_EQ(client.observations().size(), 1u);

  // Composed timeouts: the shortest applies.
  Hanging slow(host, 80);
  Client composed = Client(host.clock, host.random, slow.options(rec)).withTimeout(500).withTimeout(50);
  Task<Result> timed = composed.push(1);
  host.runUntilDone(timed);
  expectError<RoutingTimeoutError>([&] { timed.result(); }, "RoutingTimeoutError", "Routing push timed out after 50ms");

  // An invoke failure inside the deadline propagates unchanged.
  Options o = rec.options();
  o.invoke = [](const ShardAddress&, const int&) { return failNow("reset"); };
  Client failing = Client(host.clock, host.random, o).withTimeout(100);
  Task<Result> failed = failing.push(1);
  host.runUntilDone(failed);
  try {
    failed.result();
    ADD_FAILURE() << "expected a failure";
  } catch (const RoutingTimeoutError&) {
    ADD_FAILURE() << "not a timeout";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "reset");
  }
  EXPECT_TRUE(failing.observations().empty());
}

// ---------------------------------------------------------------------------------------------
// The probe: the `rte.*` events of docs/log-trace-events.md, and the RTE checks over them

struct Trace {
  std::vector<nlohmann::json> events;
  std::function<void(std::string_view, durasim::EventFields)> probe() {
    return [this](std::string_view event, durasim::EventFields fields) {
      fields["ev"] = std::string(event);
      events.push_back(fields.to_json());
    };
  }
  std::vector<std::string> names() const {
    std::vector<std::string> out;
    for (const nlohmann::json& e : events) out.push_back(e.at("ev").get<std::string>());
    return out;
  }
  const nlohmann::json& first(const std::string& name) const {
    for (const nlohmann::json& e : events)
      if (e.at("ev") == name) return e;
    throw std::logic_error("no event " + name);
  }
  uint64_t violations() const {
    properties::RoutingChecks checks;
    for (const nlohmann::json& e : events) checks.record(e);
    checks.finish();
    return checks.tallies().violations();
  }
};

using Names = std::vector<std::string>;

TEST(RoutingProbe, AcceptedPushTracesSelectionInvokeReplyObservationAndResize) {
  Host host;
  host.clock.set(5000);
  Recorder rec(host);
  Trace trace;
  Options o = rec.options();
  o.probe = trace.probe();
  o.softBacklogLimit = 10;
  Client client(host.clock, host.random, o);
  rec.pending = 11;
  host.random.script = {0.5, 0.25};
  pushNow(host, client, 1);
  EXPECT_EQ(trace.names(), (Names{"rte.push.begin", "rte.select", "rte.invoke.start", "rte.reply", "rte.observe", "rte.resize",
                                  "rte.push.return"}));
  for (const nlohmann::json& e : trace.events) {
    EXPECT_EQ(e.at("push"), 1);
    EXPECT_EQ(e.at("now"), 5000);
  }
  const nlohmann::json& begin = trace.first("rte.push.begin");
  EXPECT_EQ(begin.at("width"), 1);
  EXPECT_TRUE(begin.at("lastResizeAt").is_null());
  EXPECT_EQ(begin.at("custom"), false);
  EXPECT_TRUE(begin.at("observed").empty());
  EXPECT_EQ(trace.first("rte.select").at("draws"), nlohmann::json::array({0.5, 0.25}));
  EXPECT_EQ(trace.first("rte.select").at("shard"), "shard-0");
  const nlohmann::json& reply = trace.first("rte.reply");
  EXPECT_EQ(reply.at("success"), true);
  EXPECT_EQ(reply.at("value"), true);
  EXPECT_EQ(reply.at("error"), false);
  EXPECT_EQ(reply.at("late"), false);
  EXPECT_EQ(reply.at("load").at("outbound").at("pendingDeliveries"), 11);
  EXPECT_TRUE(reply.at("load").at("inbound").at("averageProcessingMs").is_null());
  const nlohmann::json& observe = trace.first("rte.observe");
  EXPECT_EQ(observe.at("kept"), true);
  EXPECT_TRUE(observe.at("stored").is_null());
  EXPECT_EQ(observe.at("size"), 1);
  const nlohmann::json& resize = trace.first("rte.resize");
  EXPECT_EQ(resize.at("before"), 1);
  EXPECT_EQ(resize.at("after"), 2);
  EXPECT_EQ(resize.at("lastResizeAfter"), 5000);

  // A second, older load is refused; its observe event says so.
  rec.nextLoad = loadAt(4000, 0);
  host.random.script = {0.0, 0.0};
  pushNow(host, client, 2);
  const nlohmann::json& refused = trace.events[trace.events.size() - 3];
  ASSERT_EQ(refused.at("ev"), "rte.observe");
  EXPECT_EQ(refused.at("kept"), false);
  EXPECT_EQ(refused.at("stored"), 5000);
  EXPECT_EQ(refused.at("push"), 2);
  EXPECT_EQ(trace.violations(), 0u);
}

TEST(RoutingProbe, RefusedFailedAndTimedOutPushesRecordNothing) {
  Host host;
  Recorder rec(host);
  Trace trace;
  Options empty = rec.options();
  empty.probe = trace.probe();
  empty.sharding = [](const int&, const std::optional<nlohmann::json>&, const Observations&) { return ShardAddress{}; };
  Client refusing(host.clock, host.random, empty);
  Task<Result> refused = refusing.push(1);
  host.runUntilDone(refused);
  EXPECT_EQ(trace.names(), (Names{"rte.push.begin", "rte.select", "rte.push.refused"}));
  EXPECT_EQ(trace.first("rte.select").at("shard"), "");
  EXPECT_TRUE(trace.first("rte.select").at("draws").is_null());

  Trace failures;
  Options failing = rec.options();
  failing.probe = failures.probe();
  failing.invoke = [](const ShardAddress&, const int&) { return failNow("reset"); };
  Client thrower(host.clock, host.random, failing);
  Task<Result> threw = thrower.push(1);
  host.runUntilDone(threw);
  EXPECT_EQ(failures.names(), (Names{"rte.push.begin", "rte.select", "rte.invoke.start", "rte.push.failed"}));
  EXPECT_EQ(failures.first("rte.push.failed").at("outcome"), "threw");
  EXPECT_EQ(failures.first("rte.push.failed").at("message"), "reset");

  Trace timeouts;
  Hanging hang(host, 500);
  Options hanging = hang.options(rec);
  hanging.probe = timeouts.probe();
  Client timed = Client(host.clock, host.random, hanging).withTimeout(100);
  Task<Result> late = timed.push(1);
  host.runUntilDone(late);
  host.drain();
  EXPECT_EQ(timeouts.names(), (Names{"rte.push.begin", "rte.select", "rte.invoke.start", "rte.push.failed", "rte.reply"}));
  EXPECT_EQ(timeouts.first("rte.push.failed").at("outcome"), "timeout");
  EXPECT_GE(timeouts.first("rte.push.failed").at("now").get<int64_t>() - timeouts.first("rte.invoke.start").at("now").get<int64_t>(), 100);
  EXPECT_EQ(timeouts.first("rte.reply").at("late"), true);
  EXPECT_EQ(trace.violations() + failures.violations() + timeouts.violations(), 0u);
}

TEST(RoutingProbe, ManyPushesWithGrowthShrinkAndRejectionsPassTheChecks) {
  Host host;
  Recorder rec(host);
  Trace trace;
  Options o = rec.options();
  o.probe = trace.probe();
  o.softBacklogLimit = 8;
  Client client(host.clock, host.random, o);
  for (int i = 0; i < 400; ++i) {
    host.random.script = {((i * 37) % 100) / 100.0, ((i * 61) % 100) / 100.0};
    rec.pending = i < 150 ? 9 + i % 5 : i % 2;
    rec.reject = i % 7 == 0;
    pushNow(host, client, i);
    host.clock.advance(i < 150 ? 300 : 2000);
  }
  EXPECT_GT(client.width(), 0);
  properties::RoutingChecks checks;
  for (const nlohmann::json& e : trace.events) checks.record(e);
  checks.finish();
  EXPECT_EQ(checks.tallies().violations(), 0u);
  for (const char* id : {"RTE-01", "RTE-02", "RTE-04", "RTE-05", "RTE-06", "RTE-07", "RTE-08", "RTE-09"})
    EXPECT_GT(checks.tallies().by_id().at(id).checked, 0u) << id;
  int grew = 0, shrank = 0;
  for (const nlohmann::json& e : trace.events)
    if (e.at("ev") == "rte.resize") {
      grew += e.at("after").get<int64_t>() > e.at("before").get<int64_t>();
      shrank += e.at("after").get<int64_t>() < e.at("before").get<int64_t>();
    }
  EXPECT_GT(grew, 1);
  EXPECT_GT(shrank, 0);
}

}  // namespace
}  // namespace durasim
