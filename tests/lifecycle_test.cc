// Idle rules of the simulated runtime (runtime.md 6.1): an idle object with no timers hibernates
// after exactly 10,000 ms, one with a pending timer is evicted after a draw in [70,000, 140,000] ms,
// and a timer that fires ends the idle period. Durable state survives; memory does not (RT-19).
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/runtime_test_harness.h"

namespace durasim::rt_test {
namespace {

constexpr const char* kClass = "Life";
constexpr const char* kLabel = "Life/a";
constexpr SimTime kHibernate = 10'000;
constexpr SimTime kEvictMin = 70'000, kEvictMax = 140'000;

struct Journal {
  std::vector<std::pair<std::string, SimTime>> ticks;
};

class LifeObject final : public DurableObject {
 public:
  LifeObject(ObjectContext& ctx, Journal* journal) : ctx_(ctx), j_(journal) {
    ctx_.storage.exec("CREATE TABLE IF NOT EXISTS w (id INTEGER PRIMARY KEY)");
  }

  Task<json> call(std::string_view method, const json& args) override {
    ++calls_;
    if (method == "read") co_return json{{"incarnation", ctx_.incarnation}, {"calls", calls_}};
    if (method == "write") {
      ctx_.storage.exec("INSERT INTO w (id) VALUES (?)", args.at("id").get<int64_t>());
      co_return ctx_.incarnation;
    }
    if (method == "count") co_return ctx_.storage.exec("SELECT COUNT(*) AS n FROM w").one().int64("n");
    if (method == "background") {
      ctx_.waitUntil(ticker(&ctx_, j_, args.at("period").get<int64_t>(), args.at("times").get<int64_t>()));
      co_return true;
    }
    if (method == "sleep") {
      co_await ctx_.clock.sleepFor(args.at("ms").get<int64_t>());
      co_return true;
    }
    throw std::invalid_argument("unknown method");
  }

 private:
  // Background work: sleeps `period` ms, `times` times, noting each wake-up.
  static Task<void> ticker(ObjectContext* ctx, Journal* journal, int64_t period, int64_t times) {
    for (int64_t i = 0; i < times; ++i) {
      co_await ctx->clock.sleepFor(period);
      journal->ticks.emplace_back("tick #" + std::to_string(ctx->incarnation), ctx->clock.now());
    }
  }

  ObjectContext& ctx_;
  Journal* j_;
  int64_t calls_ = 0;
};

struct LifeRig : Rig {
  explicit LifeRig(uint64_t seed = 1) : Rig(seed) {
    Journal* j = &journal;
    runtime.define_class(kClass, [j](ObjectContext& ctx) { return std::make_unique<LifeObject>(ctx, j); });
  }
  CallPtr call(const std::string& method, json args = json::object(), SimTime delay = 0) {
    return Rig::call(kClass, "a", method, std::move(args), delay);
  }
  std::vector<json> ends() const { return events("incarnation.end", kLabel); }
  Journal journal;
};

TEST(Lifecycle, AnIdleObjectWithoutTimersHibernatesAfterExactly10000Ms) {
  LifeRig rig;
  rig.call("write", {{"id", 1}});      // delivered at +1, confirmed at +2: idle from +2
  CallPtr again = rig.call("write", {{"id", 2}}, 5'000);  // resets the idle period: idle from +5,002
  rig.run_for(5'002 + kHibernate - 1);
  EXPECT_TRUE(rig.ends().empty()) << "still idle for less than 10,000 ms";
  rig.run_for(100'000);
  const std::vector<json> ends = rig.ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].at("t").get<SimTime>(), kStart + 5'002 + kHibernate);
  EXPECT_EQ(ends[0].at("reset"), false);
  EXPECT_EQ(ends[0].at("cause"), "hibernated");
  EXPECT_FALSE(rig.status(kLabel)->live);
}

TEST(Lifecycle, ACallThatOnlyReadsAlsoStartsAnIdlePeriod) {
  LifeRig rig;
  rig.call("write", {{"id", 1}});
  CallPtr read = rig.call("read", json::object(), 1'000);  // delivered at +1,001, replied at once
  rig.run_for(100'000);
  ASSERT_TRUE(read->ok);
  const std::vector<json> ends = rig.ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].at("t").get<SimTime>(), kStart + 1'001 + kHibernate);
  EXPECT_EQ(ends[0].at("cause"), "hibernated");
}

TEST(Lifecycle, ACallThatSleptThenRepliedAlsoHibernates) {
  LifeRig rig;
  CallPtr sleeper = rig.call("sleep", {{"ms", 500}});  // resumes at +501, replies at once (no write)
  rig.run_for(100'000);
  ASSERT_TRUE(sleeper->ok);
  const std::vector<json> ends = rig.ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].at("t").get<SimTime>(), kStart + 501 + kHibernate);
}

TEST(Lifecycle, AfterHibernationTheNextCallBuildsANewIncarnationOnTheDurableState) {
  LifeRig rig;
  rig.call("write", {{"id", 1}});
  CallPtr read = rig.call("read", json::object(), 50'000);
  CallPtr count = rig.call("count", json::object(), 50'100);
  rig.run_for(60'000);
  ASSERT_TRUE(read->ok && count->ok);
  EXPECT_EQ(read->value.at("incarnation"), 2);
  EXPECT_EQ(read->value.at("calls"), 1) << "memory does not survive hibernation";
  EXPECT_EQ(count->value, 1);
}

TEST(Lifecycle, AnIdleObjectWithAPendingTimerIsEvictedAfterADrawIn70To140Seconds) {
  std::set<SimTime> draws;
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    LifeRig rig(seed);
    rig.call("background", {{"period", 10'000'000}, {"times", 1}});  // idle from +1 with a timer pending
    rig.run_for(1'000'000);
    const std::vector<json> ends = rig.ends();
    ASSERT_EQ(ends.size(), 1u) << "seed " << seed;
    EXPECT_EQ(ends[0].at("cause"), "evicted");
    EXPECT_EQ(ends[0].at("reset"), false);
    const SimTime idle = ends[0].at("t").get<SimTime>() - (kStart + 1);
    EXPECT_GE(idle, kEvictMin) << "seed " << seed;
    EXPECT_LE(idle, kEvictMax) << "seed " << seed;
    EXPECT_TRUE(rig.journal.ticks.empty()) << "the timer died with the incarnation";
    draws.insert(idle);
  }
  EXPECT_GT(draws.size(), 8u) << "the eviction delay is drawn per idle period";
}

TEST(Lifecycle, ATimerThatFiresEndsTheIdlePeriod) {
  LifeRig rig;
  // A 50 s timer, ten times: each fire ends the idle period before any eviction draw (>= 70 s) runs out.
  rig.call("background", {{"period", 50'000}, {"times", 10}});
  rig.run_for(501'000);
  EXPECT_TRUE(rig.ends().empty()) << rig.ends().front().dump();
  ASSERT_EQ(rig.journal.ticks.size(), 10u);
  EXPECT_EQ(rig.journal.ticks.back().second, kStart + 1 + 500'000);
  // Without timers left, the object hibernates 10,000 ms after the last fire.
  rig.run_for(100'000);
  const std::vector<json> ends = rig.ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].at("cause"), "hibernated");
  EXPECT_EQ(ends[0].at("t").get<SimTime>(), kStart + 1 + 500'000 + kHibernate);
}

TEST(Lifecycle, ATimerLongerThanTheEvictionWindowDiesWithTheIncarnation) {
  LifeRig rig(3);
  rig.call("background", {{"period", 200'000}, {"times", 3}});
  rig.run_for(1'000'000);
  const std::vector<json> ends = rig.ends();
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(ends[0].at("cause"), "evicted");
  EXPECT_LT(ends[0].at("t").get<SimTime>(), kStart + 1 + 200'000);
  EXPECT_TRUE(rig.journal.ticks.empty());
}

}  // namespace
}  // namespace durasim::rt_test
