// The per-object alarm of the simulated runtime (runtime.md 7): setAlarm validation and clamping,
// the handler's view, the deferred delete, the retry schedule (RT-12: 2..64 s plus jitter, 7 attempts)
// and supersession, waking an evicted object; and the pure schedule of sim/alarm_retry.h.
#include <gtest/gtest.h>

#include <algorithm>
#include <deque>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sim/alarm_retry.h"
#include "tests/runtime_test_harness.h"

namespace durasim::rt_test {
namespace {

using sim::AlarmFailure;
using sim::AlarmRetryState;
using sim::on_alarm_failure;
using sim::RetryDecision;

constexpr const char* kClass = "Alarmed";
constexpr const char* kLabel = "Alarmed/a";
constexpr const char* kBare = "Bare";  // a class without an alarm handler

struct HandlerRun {
  int64_t incarnation;
  int64_t scheduled;
  int64_t retryCount;
  bool isRetry;
  SimTime t;
  std::optional<int64_t> alarm_at_start;
};

struct Journal {
  std::deque<std::string> plan;  // what each handler run does: ok, throw, abort, set_then_throw, delete_then_throw, set
  int64_t set_delta = 20'000;    // for set_then_throw and set: setAlarm(now + set_delta)
  std::vector<HandlerRun> runs;
  std::vector<std::string> lines;
  bool bare_sets_in_constructor = false;
  int constructor_failures = 0;  // how many constructions of AlarmedObject still throw
};

class AlarmedObject final : public DurableObject {
 public:
  AlarmedObject(ObjectContext& ctx, Journal* journal) : ctx_(ctx), j_(journal) {
    j_->lines.push_back("ctor #" + std::to_string(ctx_.incarnation));
    if (j_->constructor_failures > 0) {
      --j_->constructor_failures;
      throw std::runtime_error("constructor failed");
    }
  }
  bool hasAlarmHandler() const override { return true; }

  Task<json> call(std::string_view method, const json& args) override {
    if (method == "set") {
      ctx_.storage.setAlarm(args.at("at").get<int64_t>());
      co_return alarm_json();
    }
    if (method == "get") co_return alarm_json();
    if (method == "now") co_return ctx_.clock.now();
    if (method == "abort") ctx_.abort("test");
    if (method == "set_bad") {
      json out = json::array();
      for (int64_t t : {int64_t{0}, int64_t{-5}}) {
        try {
          ctx_.storage.setAlarm(t);
          out.push_back("no error");
        } catch (const TypeError& e) {
          out.push_back(e.name() + ": " + e.what());
        }
      }
      co_return json{{"errors", out}, {"alarm", alarm_json()}};
    }
    if (method == "background") {
      ctx_.waitUntil(ctx_.clock.sleepFor(args.at("ms").get<int64_t>()));
      co_return true;
    }
    throw std::invalid_argument("unknown method");
  }

  Task<void> alarm(const AlarmInvocationInfo& info) override {
    j_->lines.push_back("alarm #" + std::to_string(ctx_.incarnation));
    j_->runs.push_back(HandlerRun{ctx_.incarnation, info.scheduledTime, info.retryCount, info.isRetry, ctx_.clock.now(),
                           ctx_.storage.getAlarm()});
    std::string what = "ok";
    if (!j_->plan.empty()) {
      what = j_->plan.front();
      j_->plan.pop_front();
    }
    if (what == "throw") throw std::runtime_error("handler failed");
    if (what == "abort") ctx_.abort("handler aborts");
    if (what == "set_then_throw") {
      ctx_.storage.setAlarm(ctx_.clock.now() + j_->set_delta);
      throw std::runtime_error("handler failed after setAlarm");
    }
    if (what == "delete_then_throw") {
      ctx_.storage.deleteAlarm();
      throw std::runtime_error("handler failed after deleteAlarm");
    }
    if (what == "set") {
      ctx_.storage.setAlarm(ctx_.clock.now() + j_->set_delta);
      const std::optional<int64_t> now_set = ctx_.storage.getAlarm();
      j_->lines.push_back("handler reads " + (now_set ? std::to_string(*now_set - ctx_.clock.now()) : std::string("none")));
    }
    co_return;
  }

 private:
  json alarm_json() {
    const std::optional<int64_t> at = ctx_.storage.getAlarm();
    return at ? json(*at) : json(nullptr);
  }

  ObjectContext& ctx_;
  Journal* j_;
};

class BareObject final : public DurableObject {
 public:
  BareObject(ObjectContext& ctx, Journal* journal) : ctx_(ctx), j_(journal) {
    if (j_->bare_sets_in_constructor) ctx_.storage.setAlarm(ctx_.clock.now() + 1'000);
  }
  Task<json> call(std::string_view method, const json&) override {
    if (method == "set") {
      try {
        ctx_.storage.setAlarm(ctx_.clock.now() + 1'000);
        co_return "no error";
      } catch (const TypeError& e) {
        co_return e.name() + ": " + e.what();
      }
    }
    co_return true;
  }
  Task<void> alarm(const AlarmInvocationInfo&) override {  // never to be called: hasAlarmHandler() is false
    j_->lines.push_back("bare alarm");
    co_return;
  }

 private:
  ObjectContext& ctx_;
  Journal* j_;
};

struct AlarmRig : Rig {
  explicit AlarmRig(uint64_t seed = 1) : Rig(seed) {
    Journal* j = &journal;
    runtime.define_class(kClass, [j](ObjectContext& ctx) { return std::make_unique<AlarmedObject>(ctx, j); });
    runtime.define_class(kBare, [j](ObjectContext& ctx) { return std::make_unique<BareObject>(ctx, j); });
  }
  CallPtr call(const std::string& method, json args = json::object(), SimTime delay = 0) {
    return Rig::call(kClass, "a", method, std::move(args), delay);
  }
  std::optional<int64_t> stored() const { return status(kLabel) ? status(kLabel)->stored_alarm : std::nullopt; }
  Journal journal;
};

// ---------------------------------------------------------------------------------------------
// API

TEST(AlarmRuntime, SetAlarmRequiresAPositiveTime) {
  AlarmRig rig;
  CallPtr call = rig.call("set_bad");
  rig.run_for(1'000);
  ASSERT_TRUE(call->ok) << call->error;
  EXPECT_EQ(call->value.at("errors"), json::array({"TypeError: setAlarm() requires a positive time",
                                                    "TypeError: setAlarm() requires a positive time"}));
  EXPECT_TRUE(call->value.at("alarm").is_null());
  EXPECT_EQ(rig.sink.count("incarnation.end"), 0u);
}

TEST(AlarmRuntime, AClassWithoutAHandlerCannotSetAnAlarmOutsideItsConstructor) {
  AlarmRig rig;
  CallPtr call = rig.Rig::call(kBare, "b", "set");
  rig.run_for(1'000);
  ASSERT_TRUE(call->ok) << call->error;
  EXPECT_EQ(call->value, "TypeError: setAlarm() requires an alarm() handler");
}

// runtime.md 7.1: a class without a handler may set an alarm in its constructor; "such an alarm is
// later dropped without a call".
TEST(AlarmRuntime, AnAlarmSetByAConstructorWithoutHandlerIsDroppedWithoutACall) {
  AlarmRig rig;
  rig.journal.bare_sets_in_constructor = true;
  CallPtr call = rig.Rig::call(kBare, "b", "noop");
  rig.run_for(100'000);
  ASSERT_TRUE(call->ok) << call->error;
  EXPECT_EQ(std::count(rig.journal.lines.begin(), rig.journal.lines.end(), "bare alarm"), 0);
  EXPECT_EQ(rig.events("alarm.run", "Bare/b").size(), 0u);
  EXPECT_FALSE(rig.status("Bare/b")->stored_alarm.has_value());
}

TEST(AlarmRuntime, APastTimeIsClampedToNowAndFiresAtOnce) {
  AlarmRig rig;
  CallPtr set = rig.call("set", {{"at", kStart - 5'000}}, 100);
  rig.run_for(1'000);
  ASSERT_TRUE(set->ok) << set->error;
  const SimTime delivered = kStart + 101;
  EXPECT_EQ(set->value, delivered) << "getAlarm() returns the clamped value";
  ASSERT_EQ(rig.journal.runs.size(), 1u);
  EXPECT_EQ(rig.journal.runs[0].scheduled, delivered);
  EXPECT_GE(rig.journal.runs[0].t, delivered);
  EXPECT_LE(rig.journal.runs[0].t, delivered + 2);
}

TEST(AlarmRuntime, TheHandlerSeesNoAlarmAndSuccessDeletesIt) {
  AlarmRig rig;
  CallPtr set = rig.call("set", {{"at", kStart + 5'000}});
  CallPtr get = rig.call("get", json::object(), 20'000);
  rig.run_for(30'000);
  ASSERT_TRUE(set->ok && get->ok);
  EXPECT_EQ(set->value, kStart + 5'000);
  ASSERT_EQ(rig.journal.runs.size(), 1u);
  const HandlerRun& run = rig.journal.runs[0];
  EXPECT_EQ(run.scheduled, kStart + 5'000);
  EXPECT_EQ(run.t, kStart + 5'000);
  EXPECT_EQ(run.retryCount, 0);
  EXPECT_FALSE(run.isRetry);
  EXPECT_FALSE(run.alarm_at_start.has_value()) << "getAlarm() inside the handler reads none";
  EXPECT_TRUE(get->value.is_null()) << "the deferred delete removed the stored alarm";
  EXPECT_FALSE(rig.stored().has_value());
  EXPECT_EQ(rig.events("alarm.success", kLabel).size(), 1u);
}

TEST(AlarmRuntime, AHandlerThatSetsANewAlarmKeepsIt) {
  AlarmRig rig;
  rig.journal.plan = {"set", "ok"};
  rig.journal.set_delta = 7'000;
  rig.call("set", {{"at", kStart + 5'000}});
  rig.run_for(30'000);
  ASSERT_EQ(rig.journal.runs.size(), 2u);
  EXPECT_FALSE(rig.journal.runs[0].alarm_at_start.has_value());
  EXPECT_EQ(std::count(rig.journal.lines.begin(), rig.journal.lines.end(), "handler reads 7000"), 1)
      << "after setAlarm in the handler, getAlarm() returns the new time";
  EXPECT_EQ(rig.journal.runs[1].scheduled, kStart + 12'000);
  EXPECT_EQ(rig.journal.runs[1].retryCount, 0);
  EXPECT_FALSE(rig.stored().has_value());
}

// ---------------------------------------------------------------------------------------------
// Retries

TEST(AlarmRuntime, AHandlerThatKeepsThrowingIsRetriedSixTimesWithBackoffThenAbandoned) {
  AlarmRig rig(7);
  rig.journal.plan.assign(20, "throw");
  const int64_t scheduled = kStart + 1'000;
  rig.call("set", {{"at", scheduled}});
  rig.run_for(3'600'000);
  const std::vector<HandlerRun>& runs = rig.journal.runs;
  ASSERT_EQ(runs.size(), 7u) << "7 attempts in all";
  for (std::size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].scheduled, scheduled);
    EXPECT_EQ(runs[i].retryCount, static_cast<int64_t>(i));
    EXPECT_EQ(runs[i].isRetry, i > 0);
  }
  EXPECT_EQ(runs[0].t, scheduled);
  for (std::size_t i = 0; i + 1 < runs.size(); ++i) {
    const int64_t delay = int64_t{2'000} << i;
    const int64_t gap = runs[i + 1].t - runs[i].t;
    EXPECT_GE(gap, delay) << "retry " << i + 1;
    EXPECT_LE(gap, delay + delay / 4) << "retry " << i + 1;
  }
  const std::vector<json> failures = rig.events("alarm.failure", kLabel);
  ASSERT_EQ(failures.size(), 7u);
  EXPECT_EQ(failures.back().value("abandoned", false), true);
  for (std::size_t i = 0; i + 1 < failures.size(); ++i) {
    EXPECT_EQ(failures[i].at("delay"), int64_t{2'000} << i);
    EXPECT_EQ(failures[i].at("next"), runs[i + 1].t);
  }
  EXPECT_FALSE(rig.stored().has_value()) << "the abandoned occurrence's alarm is deleted";
}

TEST(AlarmRuntime, AHandlerThatSetsANewAlarmThenThrowsFiresAtTheNewTimeWithRetryCountZero) {
  AlarmRig rig;
  rig.journal.plan = {"set_then_throw", "ok"};
  rig.journal.set_delta = 20'000;
  rig.call("set", {{"at", kStart + 1'000}});
  rig.run_for(100'000);
  ASSERT_EQ(rig.journal.runs.size(), 2u);
  EXPECT_EQ(rig.journal.runs[1].scheduled, kStart + 21'000);
  EXPECT_EQ(rig.journal.runs[1].t, kStart + 21'000);
  EXPECT_EQ(rig.journal.runs[1].retryCount, 0);
  EXPECT_FALSE(rig.journal.runs[1].isRetry);
  EXPECT_FALSE(rig.stored().has_value());
}

TEST(AlarmRuntime, AHandlerThatDeletesTheAlarmThenThrowsIsNotRetried) {
  AlarmRig rig;
  rig.journal.plan = {"delete_then_throw"};
  rig.call("set", {{"at", kStart + 1'000}});
  rig.run_for(300'000);
  EXPECT_EQ(rig.journal.runs.size(), 1u);
  EXPECT_FALSE(rig.stored().has_value());
}

TEST(AlarmRuntime, ResetsAreUncountedFailuresRetriedWithRetryCountZero) {
  AlarmRig rig(3);
  rig.journal.plan = {"abort", "abort", "ok"};
  const int64_t scheduled = kStart + 1'000;
  rig.call("set", {{"at", scheduled}});
  rig.run_for(100'000);
  const std::vector<HandlerRun>& runs = rig.journal.runs;
  ASSERT_EQ(runs.size(), 3u);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].retryCount, 0);
    EXPECT_FALSE(runs[i].isRetry);
    EXPECT_EQ(runs[i].incarnation, static_cast<int64_t>(i + 1)) << "each abort ends the incarnation";
  }
  EXPECT_GE(runs[1].t - runs[0].t, 2'000);
  EXPECT_LE(runs[1].t - runs[0].t, 2'500);
  EXPECT_GE(runs[2].t - runs[1].t, 4'000);
  EXPECT_LE(runs[2].t - runs[1].t, 5'000);
  EXPECT_FALSE(rig.stored().has_value());
}

TEST(AlarmRuntime, AnAlarmWakesAnEvictedObjectAfterItsConstructor) {
  AlarmRig rig;
  rig.call("set", {{"at", kStart + 500'000}});
  rig.call("background", {{"ms", 10'000'000}}, 10);  // a pending timer: eviction, not hibernation
  rig.run_for(600'000);
  const std::vector<json> ends = rig.events("incarnation.end", kLabel);
  ASSERT_GE(ends.size(), 1u);
  EXPECT_EQ(ends[0].at("cause"), "evicted");
  EXPECT_LT(ends[0].at("t").get<SimTime>(), kStart + 500'000);
  ASSERT_EQ(rig.journal.runs.size(), 1u);
  EXPECT_EQ(rig.journal.runs[0].incarnation, 2);
  EXPECT_EQ(rig.journal.runs[0].t, kStart + 500'000);
  EXPECT_EQ(rig.journal.lines, (std::vector<std::string>{"ctor #1", "ctor #2", "alarm #2"}));
}

// A constructor that throws resets the incarnation it was building (as a call sees it): when an alarm
// built it, the invocation fails at once (uncounted) and is retried after 2 s plus jitter.
TEST(AlarmRuntime, AConstructorThatThrowsOnAnAlarmWakeFailsTheInvocationAtOnce) {
  AlarmRig rig;
  const int64_t scheduled = kStart + 5'000;
  rig.call("set", {{"at", scheduled}});
  rig.call("abort", json::object(), 100);  // no live incarnation when the alarm comes
  rig.run_for(1'000);
  rig.journal.constructor_failures = 1;
  rig.run_for(2'000'000);
  ASSERT_EQ(rig.journal.runs.size(), 1u);
  const HandlerRun& run = rig.journal.runs[0];
  EXPECT_EQ(run.incarnation, 3);
  EXPECT_EQ(run.retryCount, 0) << "a failed construction is not the handler's own failure";
  EXPECT_GE(run.t, scheduled + 2'000);
  EXPECT_LE(run.t, scheduled + 2'500);
  EXPECT_FALSE(rig.stored().has_value());
}

// ---------------------------------------------------------------------------------------------
// Across resets and faults

// The durability decision of the gate-timeout reset below: how many of the unconfirmed commits it kept.
int64_t kept_at_reset(const AlarmRig& rig) {
  const std::vector<json> decisions = rig.events("durability", kLabel);
  return decisions.empty() ? -1 : decisions.back().at("kept").get<int64_t>();
}

std::vector<json> resets(const AlarmRig& rig) {
  std::vector<json> out;
  for (const json& e : rig.events("incarnation.end", kLabel))
    if (e.at("reset").get<bool>()) out.push_back(e);
  return out;
}

// runtime.md 7.2 and 4.5: the stored alarm T comes due while a commit moving it later waits for a
// confirmation that never comes (storage.gate_timeout); the reset keeps T (the move vanished) or
// the later time. Either way the manager must be armed for the durable alarm, an overdue one at
// once. Both decisions are reached over these seeds.
TEST(AlarmRuntime, AnAlarmDueDuringAGateTimeoutWaitFiresAfterTheReset) {
  int decisions_seen[2] = {0, 0};
  for (uint64_t seed = 1; seed <= 16; ++seed) {
    AlarmRig rig(seed);
    const int64_t first = kStart + 10'000, later = kStart + 100'000;
    CallPtr set_first = rig.call("set", {{"at", first}});
    rig.run_for(1'000);
    ASSERT_TRUE(set_first->ok) << set_first->error;
    rig.faults.arm(FaultKind::storage_gate_timeout);  // the next commit: the move to `later`
    CallPtr move = rig.call("set", {{"at", later}});
    rig.run_for(300'000);
    ASSERT_EQ(rig.faults.fired(FaultKind::storage_gate_timeout), 1);
    ASSERT_EQ(resets(rig).size(), 1u) << "the gate timeout resets the object";
    EXPECT_FALSE(move->ok) << "the caller of the wedged commit sees the reset";
    const int64_t kept = kept_at_reset(rig);
    ASSERT_TRUE(kept == 0 || kept == 1) << "seed " << seed;
    ++decisions_seen[kept];
    const int64_t durable = kept == 1 ? later : first;
    const SimTime reset_at = resets(rig).front().at("t").get<SimTime>();
    ASSERT_EQ(rig.journal.runs.size(), 1u) << "seed " << seed << ": the durable alarm " << durable << " ran once";
    EXPECT_EQ(rig.journal.runs[0].scheduled, durable) << "seed " << seed;
    EXPECT_EQ(rig.journal.runs[0].t, std::max(durable, reset_at)) << "seed " << seed << ": an overdue alarm fires at once";
    EXPECT_FALSE(rig.stored().has_value()) << "seed " << seed;
  }
  EXPECT_GT(decisions_seen[0], 0) << "no seed reached the reset that drops the move";
  EXPECT_GT(decisions_seen[1], 0) << "no seed reached the reset that keeps the move";
}

// An alarm.early run (arbitrary) is the only early run of its occurrence: the alarm.duplicate of
// it waits for the stored time (docs/decisions.md, "Early runs").
TEST(AlarmRuntime, TheDuplicateOfAnEarlyRunWaitsForTheStoredTime) {
  AlarmRig rig(3);
  const int64_t scheduled = kStart + 90'000;
  rig.faults.arm(FaultKind::alarm_early);
  rig.faults.arm(FaultKind::alarm_duplicate);
  rig.call("set", {{"at", scheduled}});
  rig.run_for(200'000);
  ASSERT_EQ(rig.faults.fired(FaultKind::alarm_early), 1);
  ASSERT_EQ(rig.faults.fired(FaultKind::alarm_duplicate), 1);
  ASSERT_EQ(rig.journal.runs.size(), 2u);
  EXPECT_LT(rig.journal.runs[0].t, scheduled) << "alarm.early ran the handler ahead of its time";
  EXPECT_EQ(rig.journal.runs[1].scheduled, scheduled);
  EXPECT_EQ(rig.journal.runs[1].t, scheduled) << "the duplicate waits for the stored time";
}

// A failed early run announces a retry that may fall before the stored time; the retry fires at the
// later of the two, once (before, the manager re-armed for the past retry time without end).
TEST(AlarmRuntime, TheRetryOfAFailedEarlyRunFiresNoEarlierThanTheStoredTime) {
  for (uint64_t seed = 1; seed <= 8; ++seed) {
    AlarmRig rig(seed);
    rig.journal.plan = {"throw", "ok"};
    const int64_t scheduled = kStart + 90'000;
    rig.faults.arm(FaultKind::alarm_early);
    rig.call("set", {{"at", scheduled}});
    rig.run_for(300'000);
    ASSERT_EQ(rig.journal.runs.size(), 2u) << "seed " << seed;
    EXPECT_LT(rig.journal.runs[0].t, scheduled) << "seed " << seed;
    const std::vector<json> failures = rig.events("alarm.failure", kLabel);
    ASSERT_EQ(failures.size(), 1u);
    const int64_t announced = failures[0].at("next").get<int64_t>();
    EXPECT_EQ(rig.journal.runs[1].t, std::max(announced, scheduled)) << "seed " << seed;
    EXPECT_EQ(rig.journal.runs[1].retryCount, 1);
    EXPECT_FALSE(rig.stored().has_value());
  }
}

// ---------------------------------------------------------------------------------------------
// The pure retry schedule (sim/alarm_retry.h)

TEST(AlarmRetrySchedule, CountedFailuresBackOffFrom2SecondsAndAbandonAfterSixRetries) {
  AlarmRetryState state;
  for (int i = 0; i < 6; ++i) {
    const RetryDecision d = on_alarm_failure(state, AlarmFailure::counted);
    EXPECT_FALSE(d.abandoned) << i;
    EXPECT_EQ(d.delay, int64_t{2'000} << i);
    EXPECT_EQ(d.max_jitter, (int64_t{2'000} << i) / 4);
    EXPECT_EQ(state.counted, i + 1);
  }
  const RetryDecision last = on_alarm_failure(state, AlarmFailure::counted);
  EXPECT_TRUE(last.abandoned);
  EXPECT_EQ(state.counted, 7);
}

TEST(AlarmRetrySchedule, UncountedFailuresRetryForeverWithDelaysCappedAt1024000Ms) {
  AlarmRetryState state;
  const int64_t expected[] = {2'000, 4'000, 8'000, 16'000, 32'000, 64'000, 128'000, 256'000, 512'000, 1'024'000};
  for (int64_t want : expected) {
    const RetryDecision d = on_alarm_failure(state, AlarmFailure::uncounted);
    EXPECT_FALSE(d.abandoned);
    EXPECT_EQ(d.delay, want);
    EXPECT_EQ(d.max_jitter, want / 4);
  }
  for (int i = 0; i < 100; ++i) {
    const RetryDecision d = on_alarm_failure(state, AlarmFailure::uncounted);
    EXPECT_FALSE(d.abandoned);
    EXPECT_EQ(d.delay, 1'024'000);
    EXPECT_EQ(d.max_jitter, 256'000);
  }
  EXPECT_EQ(state.counted, 0);
  EXPECT_EQ(state.exponent, sim::kAlarmBackoffMaxExponent);
}

TEST(AlarmRetrySchedule, ACountedFailureAfterAnUncountedOneResetsTheExponent) {
  AlarmRetryState state;
  EXPECT_EQ(on_alarm_failure(state, AlarmFailure::uncounted).delay, 2'000);
  EXPECT_EQ(on_alarm_failure(state, AlarmFailure::uncounted).delay, 4'000);
  EXPECT_EQ(on_alarm_failure(state, AlarmFailure::uncounted).delay, 8'000);
  EXPECT_EQ(on_alarm_failure(state, AlarmFailure::counted).delay, 2'000) << "e = 0 after an uncounted failure";
  EXPECT_EQ(on_alarm_failure(state, AlarmFailure::counted).delay, 4'000) << "no reset between counted failures";
  EXPECT_EQ(on_alarm_failure(state, AlarmFailure::uncounted).delay, 8'000) << "uncounted failures keep the exponent";
  EXPECT_EQ(state.counted, 2);
  EXPECT_TRUE(state.last_uncounted);
}

TEST(AlarmRetrySchedule, UncountedFailuresDoNotUseUpTheSevenAttempts) {
  AlarmRetryState state;
  for (int round = 0; round < 6; ++round) {
    EXPECT_FALSE(on_alarm_failure(state, AlarmFailure::counted).abandoned);
    for (int i = 0; i < 5; ++i) EXPECT_FALSE(on_alarm_failure(state, AlarmFailure::uncounted).abandoned);
  }
  EXPECT_EQ(state.counted, 6);
  EXPECT_TRUE(on_alarm_failure(state, AlarmFailure::counted).abandoned);
}

TEST(AlarmRetrySchedule, JitterBoundIsAQuarterOfTheDelayRoundedDown) {
  AlarmRetryState state;
  state.exponent = 0;
  const RetryDecision d = on_alarm_failure(state, AlarmFailure::uncounted);
  EXPECT_EQ(d.max_jitter, 500);
  EXPECT_EQ(sim::kAlarmRetryBaseMs / sim::kAlarmJitterDivisor, 500);
}

}  // namespace
}  // namespace durasim::rt_test
