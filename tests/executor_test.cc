// The simulated clock and executor (sim/executor.h): time order, same-time order as a recorded
// choice in stream "executor.order" (and reproduced on replay), cancel (also of a timer whose slot a
// later timer took), past timers, run_one's horizon, idle-time skipping, a clock that never moves
// backwards, and the runaway bounds.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/executor.h"
#include "sim/random.h"

namespace durasim::sim {
namespace {

constexpr SimTime kStart = 5'000;
constexpr SimTime kHour = 3'600'000;

// An executor with its own clock and recording random source.
struct Rig {
  explicit Rig(uint64_t seed = 1, SimTime start = kStart) : random(RandomSource::recording(seed)), clock(start) {}
  explicit Rig(ChoiceLog log, SimTime start = kStart) : random(RandomSource::replaying(std::move(log))), clock(start) {}

  uint64_t drain() {
    uint64_t n = 0;
    while (executor.run_one()) ++n;
    return n;
  }
  std::size_t order_choices() const {
    std::size_t n = 0;
    for (const Choice& c : random.log().choices)
      if (random.log().streams.at(c.stream) == "executor.order") ++n;
    return n;
  }

  RandomSource random;
  SimClock clock;
  Executor executor{clock, random};
};

TEST(SimClock, AdvanceBackwardsThrows) {
  SimClock clock(100);
  clock.advance_to(100);
  clock.advance_to(250);
  EXPECT_EQ(clock.now(), 250);
  EXPECT_THROW(clock.advance_to(249), std::logic_error);
  EXPECT_EQ(clock.now(), 250) << "a refused move leaves the clock where it was";
}

TEST(Executor, TimersRunInTimeOrderAtTheirTime) {
  Rig rig;
  std::vector<std::pair<int, SimTime>> ran;
  const std::vector<SimTime> delays = {700, 10, 300, 5, 1000, 20};
  for (std::size_t i = 0; i < delays.size(); ++i)
    rig.executor.after(delays[i], [&, i] { ran.emplace_back(static_cast<int>(i), rig.clock.now()); });
  EXPECT_EQ(rig.executor.pending(), delays.size());
  EXPECT_EQ(rig.drain(), delays.size());
  const std::vector<std::pair<int, SimTime>> expected = {{3, kStart + 5},   {1, kStart + 10},  {5, kStart + 20},
                                                         {2, kStart + 300}, {0, kStart + 700}, {4, kStart + 1000}};
  EXPECT_EQ(ran, expected);
  EXPECT_TRUE(rig.executor.idle());
  EXPECT_EQ(rig.order_choices(), 0u) << "distinct times need no choice";
}

TEST(Executor, SameTimeOrderIsARecordedChoice) {
  Rig rig;
  std::vector<int> order;
  for (int i = 0; i < 3; ++i) rig.executor.at(kStart + 50, [&order, i] { order.push_back(i); });
  const auto& log = rig.random.log();
  ASSERT_EQ(log.streams.size(), 1u);
  EXPECT_EQ(log.streams[0], "executor.order");

  ASSERT_TRUE(rig.executor.run_one());
  ASSERT_EQ(log.choices.size(), 1u) << "three ready events: one choice";
  EXPECT_EQ(log.choices[0].stream, 0u);
  EXPECT_EQ(log.choices[0].bound, 3u);
  EXPECT_EQ(order.at(0), static_cast<int>(log.choices[0].value)) << "the chosen index names the event run";

  ASSERT_TRUE(rig.executor.run_one());
  ASSERT_EQ(log.choices.size(), 2u);
  EXPECT_EQ(log.choices[1].bound, 2u);

  ASSERT_TRUE(rig.executor.run_one());
  EXPECT_EQ(log.choices.size(), 2u) << "a single ready event must not draw";
  EXPECT_FALSE(rig.executor.run_one());
  std::vector<int> sorted = order;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<int>{0, 1, 2}));
}

TEST(Executor, EventScheduledAtNowJoinsTheReadySet) {
  // Event 0 schedules event 2 at the current time. If 0 runs first, 2 competes with 1 (a second
  // choice, bound 2); if 1 runs first, every later step has a single ready event (no choice).
  for (uint64_t seed = 0; seed < 8; ++seed) {
    Rig rig(seed);
    std::vector<int> order;
    rig.executor.at(kStart, [&] {
      order.push_back(0);
      rig.executor.at(kStart - 1, [&] { order.push_back(2); });
    });
    rig.executor.at(kStart, [&] { order.push_back(1); });
    EXPECT_EQ(rig.drain(), 3u);
    const auto& choices = rig.random.log().choices;
    ASSERT_GE(choices.size(), 1u);
    EXPECT_EQ(choices[0].bound, 2u);
    if (order.front() == 0) {
      ASSERT_EQ(choices.size(), 2u) << "seed " << seed;
      EXPECT_EQ(choices[1].bound, 2u);
    } else {
      EXPECT_EQ(order, (std::vector<int>{1, 0, 2}));
      EXPECT_EQ(choices.size(), 1u) << "seed " << seed;
    }
    EXPECT_EQ(rig.clock.now(), kStart);
  }
}

std::vector<int> same_time_order(uint64_t seed, int n) {
  Rig rig(seed);
  std::vector<int> order;
  for (int i = 0; i < n; ++i) rig.executor.at(kStart + 1, [&order, i] { order.push_back(i); });
  rig.drain();
  return order;
}

TEST(Executor, SameSeedSameOrderDifferentSeedsDiffer) {
  EXPECT_EQ(same_time_order(42, 6), same_time_order(42, 6));
  std::set<std::vector<int>> orders;
  for (uint64_t seed = 0; seed < 16; ++seed) orders.insert(same_time_order(seed, 6));
  EXPECT_GE(orders.size(), 2u) << "no seed among 16 changed the order of 6 same-time events";
}

TEST(Executor, ReplayedChoicesReproduceTheOrder) {
  ChoiceLog log;
  std::vector<int> recorded;
  {
    Rig rig(99);
    for (int i = 0; i < 8; ++i) rig.executor.at(kStart + (i % 2), [&recorded, i] { recorded.push_back(i); });
    rig.drain();
    log = rig.random.log();
  }
  ASSERT_EQ(log.choices.size(), 6u) << "two groups of four same-time events: 3 + 3 choices";
  Rig replay(log);
  std::vector<int> replayed;
  for (int i = 0; i < 8; ++i) replay.executor.at(kStart + (i % 2), [&replayed, i] { replayed.push_back(i); });
  replay.drain();
  EXPECT_EQ(replayed, recorded);
  EXPECT_FALSE(replay.random.divergence().has_value()) << *replay.random.divergence();
}

TEST(Executor, CancelPreventsRunning) {
  Rig rig;
  bool a = false, b = false;
  const TimerId ta = rig.executor.after(10, [&] { a = true; });
  const TimerId tb = rig.executor.after(20, [&] { b = true; });
  EXPECT_NE(ta, kNoTimer);
  EXPECT_NE(ta, tb);
  EXPECT_TRUE(rig.executor.cancel(ta));
  EXPECT_FALSE(rig.executor.cancel(ta)) << "second cancel of the same timer";
  EXPECT_EQ(rig.executor.pending(), 1u);
  EXPECT_EQ(rig.drain(), 1u);
  EXPECT_FALSE(a);
  EXPECT_TRUE(b);
  EXPECT_FALSE(rig.executor.cancel(tb)) << "cancel of a timer that already ran";
  EXPECT_FALSE(rig.executor.cancel(12345)) << "cancel of an unknown id";
  EXPECT_EQ(rig.clock.now(), kStart + 20);
}

TEST(Executor, AReusedSlotDoesNotReviveACancelledTimer) {
  Rig rig;
  bool a = false, b = false;
  const TimerId ta = rig.executor.after(10, [&] { a = true; });
  ASSERT_TRUE(rig.executor.cancel(ta));
  const TimerId tb = rig.executor.after(10, [&] { b = true; });  // takes the slot ta left
  EXPECT_GT(tb, ta) << "a later timer has the larger id, whatever slot it holds (the same-time order)";
  EXPECT_FALSE(rig.executor.cancel(ta)) << "the cancelled id must not name the slot's new timer";
  EXPECT_EQ(rig.executor.pending(), 1u);
  EXPECT_EQ(rig.drain(), 1u);
  EXPECT_FALSE(a);
  EXPECT_TRUE(b);
}

TEST(Executor, ACallbackDroppedByCancelMayCancelAnotherTimer) {
  // A callback's captures are destroyed when it is cancelled; their destructor may call the
  // executor again (a frame's timer guard cancelling its sibling's timer).
  Rig rig;
  TimerId sibling = kNoTimer;
  bool sibling_cancelled = false;
  struct Guard {
    std::function<void()> on_drop;
    ~Guard() { on_drop(); }
  };
  auto guard = std::make_shared<Guard>();
  guard->on_drop = [&] { sibling_cancelled = rig.executor.cancel(sibling); };
  const TimerId owner = rig.executor.after(10, [guard] {});
  guard.reset();
  sibling = rig.executor.after(20, [] { FAIL() << "the sibling was cancelled"; });
  ASSERT_TRUE(rig.executor.cancel(owner));
  EXPECT_TRUE(sibling_cancelled);
  EXPECT_TRUE(rig.executor.idle());
  EXPECT_EQ(rig.drain(), 0u);
}

TEST(Executor, CancelOfAReadyEventFromAnotherEvent) {
  // Two events due at the same time, each cancelling the other: exactly one runs.
  for (uint64_t seed = 0; seed < 8; ++seed) {
    Rig rig(seed);
    int runs = 0;
    TimerId first = kNoTimer, second = kNoTimer;
    first = rig.executor.at(kStart + 7, [&] {
      ++runs;
      EXPECT_TRUE(rig.executor.cancel(second));
    });
    second = rig.executor.at(kStart + 7, [&] {
      ++runs;
      EXPECT_TRUE(rig.executor.cancel(first));
    });
    EXPECT_EQ(rig.drain(), 1u) << "seed " << seed;
    EXPECT_EQ(runs, 1);
    EXPECT_TRUE(rig.executor.idle());
  }
}

TEST(Executor, CancelledEarliestTimerDoesNotHideTheNextDueTime) {
  Rig rig;
  const TimerId early = rig.executor.after(10, [] {});
  rig.executor.after(500, [] {});
  ASSERT_EQ(rig.executor.next_due(), kStart + 10);
  ASSERT_TRUE(rig.executor.cancel(early));
  EXPECT_EQ(rig.executor.next_due(), kStart + 500) << "next_due reported a cancelled timer";
  ASSERT_TRUE(rig.executor.run_one());
  EXPECT_EQ(rig.clock.now(), kStart + 500);
  EXPECT_EQ(rig.executor.next_due(), std::nullopt);
}

TEST(Executor, TimerInThePastRunsNow) {
  Rig rig;
  rig.executor.after(100, [] {});
  ASSERT_TRUE(rig.executor.run_one());
  ASSERT_EQ(rig.clock.now(), kStart + 100);
  SimTime ran_at = -1, ran_at_negative = -1;
  rig.executor.at(kStart, [&] { ran_at = rig.clock.now(); });
  rig.executor.after(-30, [&] { ran_at_negative = rig.clock.now(); });
  EXPECT_EQ(rig.executor.next_due(), kStart + 100);
  rig.drain();
  EXPECT_EQ(ran_at, kStart + 100);
  EXPECT_EQ(ran_at_negative, kStart + 100);
  EXPECT_EQ(rig.clock.now(), kStart + 100);
}

TEST(Executor, RunOneStopsBeforeEventsLaterThanHorizon) {
  Rig rig;
  std::vector<SimTime> ran;
  for (SimTime d : {10, 20, 30}) rig.executor.after(d, [&] { ran.push_back(rig.clock.now()); });
  EXPECT_TRUE(rig.executor.run_one(kStart + 20));
  EXPECT_TRUE(rig.executor.run_one(kStart + 20)) << "an event exactly at the horizon runs";
  EXPECT_FALSE(rig.executor.run_one(kStart + 20));
  EXPECT_FALSE(rig.executor.run_one(kStart + 29));
  EXPECT_EQ(rig.clock.now(), kStart + 20) << "a refused step must not advance the clock";
  EXPECT_EQ(rig.executor.pending(), 1u);
  EXPECT_EQ(ran, (std::vector<SimTime>{kStart + 10, kStart + 20}));
  EXPECT_TRUE(rig.executor.run_one());
  EXPECT_EQ(ran.back(), kStart + 30);
  EXPECT_FALSE(rig.executor.run_one()) << "nothing pending";
}

TEST(Executor, IdleTimeIsSkippedInOneEvent) {
  Rig rig;
  SimTime ran_at = -1;
  rig.executor.after(kHour, [&] { ran_at = rig.clock.now(); });
  EXPECT_TRUE(rig.executor.run_one());
  EXPECT_EQ(rig.executor.events_run(), 1u);
  EXPECT_EQ(ran_at, kStart + kHour);
  EXPECT_EQ(rig.clock.now(), kStart + kHour);
  EXPECT_TRUE(rig.executor.idle());
  EXPECT_FALSE(rig.executor.run_one());
  EXPECT_EQ(rig.executor.events_run(), 1u);
}

// Random timer programs, some of which schedule more timers (including in the past): every event
// runs exactly at max(requested time, the time it was scheduled), the clock never decreases, and
// every scheduled timer runs exactly once.
RC_GTEST_PROP(ExecutorProp, ClockMonotonicAndTimersRunOnTime, ()) {
  const auto seed = *rc::gen::arbitrary<uint64_t>();
  const auto delays = *rc::gen::container<std::vector<int64_t>>(rc::gen::inRange<int64_t>(-50, 200));
  const auto follow = *rc::gen::container<std::vector<int64_t>>(delays.size(), rc::gen::inRange<int64_t>(-50, 200));
  Rig rig(seed, 0);
  std::vector<SimTime> times;
  int scheduled = 0, ran = 0;
  bool late_or_early = false;
  for (std::size_t i = 0; i < delays.size(); ++i) {
    const SimTime due = std::max<SimTime>(0, delays[i]);
    ++scheduled;
    rig.executor.at(delays[i], [&, due, i] {
      ++ran;
      times.push_back(rig.clock.now());
      if (rig.clock.now() != due) late_or_early = true;
      if (i % 2 == 0) {
        const SimTime next_due = std::max(rig.clock.now(), rig.clock.now() + follow[i]);
        ++scheduled;
        rig.executor.after(follow[i], [&, next_due] {
          ++ran;
          times.push_back(rig.clock.now());
          if (rig.clock.now() != next_due) late_or_early = true;
        });
      }
    });
  }
  rig.drain();
  RC_ASSERT(ran == scheduled);
  RC_ASSERT(!late_or_early);
  RC_ASSERT(std::is_sorted(times.begin(), times.end()));
  RC_ASSERT(rig.executor.idle());
}

// A timer that re-arms itself at the current instant: the loop a broken alarm manager once made.
void rearm_now(Executor& executor, uint64_t& runs) {
  ++runs;
  executor.at(executor.clock().now(), [&executor, &runs] { rearm_now(executor, runs); });
}

TEST(ExecutorLimits, ATimerReArmedAtTheSameInstantStopsAtThePerInstantBound) {
  Rig rig;
  rig.executor.set_limits(EventLimits{1'000, 1'000'000});
  uint64_t runs = 0;
  rig.executor.after(10, [&] { rearm_now(rig.executor, runs); });
  try {
    rig.drain();
    FAIL() << "a runaway loop must not drain";
  } catch (const RunawayError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("more than 1000 events at simulated time " + std::to_string(kStart + 10)), std::string::npos) << what;
    EXPECT_NE(what.find("rearm_now"), std::string::npos) << "names the code that re-arms: " << what;
  }
  EXPECT_EQ(runs, 1'000u) << "stops exactly at the bound, without running the event past it";
}

TEST(ExecutorLimits, TheTotalBoundStopsARunWhoseClockKeepsMoving) {
  Rig rig;
  rig.executor.set_limits(EventLimits{1'000, 5'000});
  uint64_t runs = 0;
  std::function<void()> tick = [&] {
    ++runs;
    rig.executor.after(1, tick);
  };
  rig.executor.after(1, tick);
  EXPECT_THROW(rig.drain(), RunawayError);
  EXPECT_EQ(runs, 5'000u);
}

TEST(ExecutorLimits, ManyEventsAtOneInstantBelowTheBoundRun) {
  Rig rig;
  rig.executor.set_limits(EventLimits{100, 1'000});
  int ran = 0;
  for (int round = 0; round < 5; ++round)
    for (int i = 0; i < 100; ++i) rig.executor.after(round, [&] { ++ran; });
  EXPECT_EQ(rig.drain(), 500u) << "the per-instant count starts again whenever the clock moves";
  EXPECT_EQ(ran, 500);
}

}  // namespace
}  // namespace durasim::sim
