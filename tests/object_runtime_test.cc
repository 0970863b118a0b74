// Objects and incarnations of the simulated runtime (runtime.md 3, 6.2): lazy construction by the
// first event, incarnation numbers 1, 2, ... that never repeat, the constructor before any event,
// and in-memory state and coroutine frames that never survive a reset (RT-19).
#include <gtest/gtest.h>

#include <algorithm>
#include <iterator>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/runtime_test_harness.h"

namespace durasim::rt_test {
namespace {

constexpr const char* kClass = "Probe";

struct Journal {
  std::vector<std::string> lines;
  int constructor_failures = 0;  // how many constructions still throw
  int frames_destroyed = 0;      // "sleep" frames destroyed (by completion or by a reset)
};

// Counts frames destroyed, to see that a reset destroys a suspended call without resuming it.
struct FrameGuard {
  int* destroyed;
  ~FrameGuard() { ++*destroyed; }
};

class Probe final : public DurableObject {
 public:
  Probe(ObjectContext& ctx, Journal* journal) : ctx_(ctx), journal_(journal) {
    note("ctor");
    if (journal_->constructor_failures > 0) {
      --journal_->constructor_failures;
      throw std::runtime_error("constructor failed");
    }
    ctx_.storage.exec("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v INTEGER NOT NULL)");
  }
  bool hasAlarmHandler() const override { return true; }

  Task<json> call(std::string_view method, const json& args) override {
    note("call " + std::string(method));
    if (method == "incarnation") co_return ctx_.incarnation;
    if (method == "bump") co_return ++memory_;
    if (method == "put") {
      ctx_.storage.exec("INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)", args.at("k").get<std::string>(), args.at("v").get<int64_t>());
      co_return true;
    }
    if (method == "get") {
      auto rows = ctx_.storage.exec("SELECT v FROM kv WHERE k = ?", args.at("k").get<std::string>()).toVector();
      co_return rows.empty() ? json(nullptr) : json(rows.front().int64("v"));
    }
    if (method == "abort") ctx_.abort("test");
    if (method == "sleep") {
      FrameGuard guard{&journal_->frames_destroyed};
      co_await ctx_.clock.sleepFor(args.at("ms").get<int64_t>());
      note("woke");
      co_return true;
    }
    if (method == "arm") {
      ctx_.storage.setAlarm(args.at("at").get<int64_t>());
      co_return true;
    }
    throw std::invalid_argument("unknown method");
  }

  Task<void> alarm(const AlarmInvocationInfo& info) override {
    note("alarm");
    co_return;
  }

 private:
  void note(const std::string& what) { journal_->lines.push_back(what + " #" + std::to_string(ctx_.incarnation)); }

  ObjectContext& ctx_;
  Journal* journal_;
  int64_t memory_ = 0;  // in-memory only: must start at 0 in every incarnation
};

struct ProbeRig : Rig {
  explicit ProbeRig(uint64_t seed = 1) : Rig(seed) {
    Journal* j = &journal;
    runtime.define_class(kClass, [j](ObjectContext& ctx) { return std::make_unique<Probe>(ctx, j); });
  }
  CallPtr call(const std::string& method, json args = json::object(), SimTime delay = 0, const std::string& name = "a") {
    return Rig::call(kClass, name, method, std::move(args), delay);
  }
  Journal journal;
};

std::vector<int64_t> start_numbers(const Rig& rig, const std::string& label) {
  std::vector<int64_t> numbers;
  for (const json& e : rig.events("incarnation.start", label)) numbers.push_back(e.at("incarnation").get<int64_t>());
  return numbers;
}

TEST(ObjectRuntime, NothingIsConstructedBeforeTheFirstEvent) {
  ProbeRig rig;
  Stub stub = rig.stub(kClass, "a");  // a stub alone constructs nothing
  rig.run_for(1'000);
  EXPECT_FALSE(rig.status("Probe/a").has_value());
  EXPECT_TRUE(rig.journal.lines.empty());
  EXPECT_EQ(rig.sink.count("incarnation.start"), 0u);

  CallPtr first = rig.call_on(stub, "incarnation");
  rig.run_for(1'000);
  ASSERT_TRUE(first->ok) << first->error;
  EXPECT_EQ(first->value, 1);
  ASSERT_TRUE(rig.status("Probe/a").has_value());
  EXPECT_EQ(rig.status("Probe/a")->incarnations, 1);
  EXPECT_EQ(rig.journal.lines, (std::vector<std::string>{"ctor #1", "call incarnation #1"}));
  // The incarnation starts before the call is delivered to it.
  std::vector<std::string> order;
  for (const json& e : rig.sink.events)
    if (e.at("ev") == "incarnation.start" || e.at("ev") == "rpc.deliver") order.push_back(e.at("ev"));
  EXPECT_EQ(order, (std::vector<std::string>{"incarnation.start", "rpc.deliver"}));
}

TEST(ObjectRuntime, ConstructorRunsBeforeAnyEventOfEachIncarnation) {
  ProbeRig rig;
  rig.call("arm", {{"at", kStart + 5'000}});
  rig.call("abort", json::object(), 100);  // incarnation 1 ends; the alarm wakes incarnation 2
  rig.call("get", {{"k", "x"}}, 20'000);   // incarnation 2 hibernated 10 s after the alarm: this builds 3
  rig.run_for(60'000);
  // Every incarnation's first line is its constructor, and every other line follows its constructor.
  std::set<std::string> constructed;
  for (const std::string& line : rig.journal.lines) {
    const std::string number = line.substr(line.find('#'));
    if (line.rfind("ctor", 0) == 0) {
      EXPECT_FALSE(constructed.count(number)) << "constructed twice: " << line;
      constructed.insert(number);
    } else {
      EXPECT_TRUE(constructed.count(number)) << "event before its constructor: " << line;
    }
  }
  EXPECT_NE(std::find(rig.journal.lines.begin(), rig.journal.lines.end(), "alarm #2"), rig.journal.lines.end())
      << "the alarm should construct incarnation 2";
  auto ctor2 = std::find(rig.journal.lines.begin(), rig.journal.lines.end(), "ctor #2");
  ASSERT_NE(ctor2, rig.journal.lines.end());
  EXPECT_EQ(*std::next(ctor2), "alarm #2");
  EXPECT_EQ(rig.journal.lines.back(), "call get #3");
}

TEST(ObjectRuntime, IncarnationNumbersStartAtOneGrowByOneAndNeverRepeat) {
  ProbeRig rig;
  std::vector<CallPtr> seen;
  SimTime at = 0;
  for (int i = 0; i < 5; ++i) {
    seen.push_back(rig.call("incarnation", json::object(), at));
    rig.call("abort", json::object(), at + 100);
    at += 1'000;
  }
  // A second object numbers its own incarnations from 1.
  CallPtr other = rig.call("incarnation", json::object(), 0, "b");
  rig.run_for(at + 1'000);
  for (int i = 0; i < 5; ++i) {
    ASSERT_TRUE(seen[i]->ok) << seen[i]->error;
    EXPECT_EQ(seen[i]->value, i + 1);
  }
  ASSERT_TRUE(other->ok);
  EXPECT_EQ(other->value, 1);
  EXPECT_EQ(start_numbers(rig, "Probe/a"), (std::vector<int64_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(start_numbers(rig, "Probe/b"), (std::vector<int64_t>{1}));
  // At most one incarnation at a time: each ends before the next starts.
  int64_t live = 0;
  for (const json& e : rig.sink.events) {
    if (!e.contains("object") || e.at("object") != "Probe/a") continue;
    if (e.at("ev") == "incarnation.start") {
      EXPECT_EQ(live++, 0);
    }
    if (e.at("ev") == "incarnation.end") {
      EXPECT_EQ(live--, 1);
    }
  }
}

TEST(ObjectRuntime, AbortFailsTheCallerWithAResetError) {
  ProbeRig rig;
  rig.call("put", {{"k", "x"}, {"v", 1}});
  CallPtr aborted = rig.call("abort", json::object(), 100);
  rig.run_for(1'000);
  ASSERT_TRUE(aborted->done);
  EXPECT_FALSE(aborted->ok);
  EXPECT_EQ(aborted->kind, RpcError::Kind::reset);
  EXPECT_TRUE(aborted->flags.durableObjectReset);
  EXPECT_EQ(aborted->error, "broken.reset; Durable Object was reset");
}

TEST(ObjectRuntime, MemoryDoesNotSurviveAResetButConfirmedStorageDoes) {
  ProbeRig rig;
  CallPtr b1 = rig.call("bump", json::object(), 0);
  CallPtr b2 = rig.call("bump", json::object(), 100);
  CallPtr put = rig.call("put", {{"k", "x"}, {"v", 42}}, 200);
  rig.call("abort", json::object(), 300);
  CallPtr b3 = rig.call("bump", json::object(), 400);
  CallPtr got = rig.call("get", {{"k", "x"}}, 500);
  rig.run_for(2'000);
  ASSERT_TRUE(b1->ok && b2->ok && b3->ok && put->ok && got->ok);
  EXPECT_EQ(b1->value, 1);
  EXPECT_EQ(b2->value, 2);
  EXPECT_EQ(b3->value, 1) << "RT-19: a new incarnation must not see the old one's memory";
  EXPECT_EQ(got->value, 42);
  EXPECT_EQ(rig.status("Probe/a")->incarnations, 2);
}

TEST(ObjectRuntime, AResetDestroysSuspendedFramesWithoutResumingThem) {
  ProbeRig rig;
  CallPtr sleeper = rig.call("sleep", {{"ms", 5'000}});
  rig.call("abort", json::object(), 100);
  rig.run_for(20'000);
  ASSERT_TRUE(sleeper->done);
  EXPECT_FALSE(sleeper->ok);
  EXPECT_TRUE(sleeper->flags.durableObjectReset);
  EXPECT_EQ(sleeper->error, "broken.reset; Durable Object was reset");
  EXPECT_EQ(rig.journal.frames_destroyed, 1);
  for (const std::string& line : rig.journal.lines) EXPECT_NE(line, "woke #1");
}

TEST(ObjectRuntime, AThrowingConstructorResetsAndTheNextCallBuildsANewIncarnation) {
  ProbeRig rig;
  rig.journal.constructor_failures = 1;
  CallPtr first = rig.call("incarnation");
  CallPtr second = rig.call("incarnation", json::object(), 100);
  rig.run_for(1'000);
  ASSERT_TRUE(first->done);
  EXPECT_FALSE(first->ok);
  EXPECT_TRUE(first->flags.durableObjectReset);
  ASSERT_TRUE(second->ok) << second->error;
  EXPECT_EQ(second->value, 2);
}

}  // namespace
}  // namespace durasim::rt_test
