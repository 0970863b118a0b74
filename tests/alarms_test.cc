// Named alarms (scheduler.md 4-7, errors-and-contract.md 2-3) on the simulated runtime: schedule,
// attempts and retries, fencing, purge, migrations, construction checks and lifecycle events.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <regex>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/alarms.h"
#include "engine/conventions.h"
#include "engine/errors.h"
#include "engine/scheduler.h"
#include "tests/runtime_test_harness.h"
#include "workloads/alarm_app.h"

namespace durasim::rt_test {
namespace {

constexpr const char* kClass = "Alarms";
constexpr const char* kLabel = "Alarms/a";
constexpr int64_t kMin = 15'000;  // the default alarmMinDelayMs

class Host;
using Method = std::function<Task<json>(Host&, const json&)>;
using Handler = std::function<Task<void>(Host&, const DurableAlarmInfo&)>;

// One handler invocation as the handler saw it.
struct Invocation {
  std::string name;
  int64_t attempt = 0;
  bool isRetry = false;
  int64_t retryCount = 0;
  std::string key;
  int64_t scheduledTime = 0;
  bool platform = false;
  int64_t incarnation = 0;
  int64_t t = 0;
  int64_t end = -1;  // when the handler returned or threw; -1 if it never did
  bool abortedAtEnd = false;
  std::string abortName;  // name() of the abort reason
};

// What the test configures and observes; outlives every incarnation.
struct Env {
  SchedulerOptions scheduler;
  bool buildAlarms = true;
  std::map<std::string, Handler> handlers;
  std::optional<int64_t> attemptTimeoutMs;
  std::optional<RetryOptions> retries;
  std::map<std::string, AlarmMethodOptions> methods;
  bool hookThrows = false;
  std::vector<LifecycleEvent> lifecycle;
  std::vector<Invocation> invocations;
  bool resetNow = false;  // the next suspension point of the object resets it
  std::map<std::string, Method> calls;
};

Task<void> nothing() { co_return; }

class Host final : public DurableObject {
 public:
  Host(ObjectContext& context, Env* environment) : ctx(context), env(environment), scheduler(context, env->scheduler) {
    if (env->buildAlarms) alarms = std::make_unique<DurabilityAlarms>(scheduler, options());
  }

  NamedAlarmOptions options() {
    NamedAlarmOptions o;
    for (const auto& [name, handler] : env->handlers) {
      Handler h = handler;
      o.handlers[name] = [this, h](const DurableAlarmInfo& info) { return h(*this, info); };
    }
    o.attemptTimeoutMs = env->attemptTimeoutMs;
    o.retries = env->retries;
    o.methods = env->methods;
    Env* e = env;
    o.onLifecycleEvent = [e](const LifecycleEvent& event) {
      e->lifecycle.push_back(event);
      if (e->hookThrows) throw std::runtime_error("hook failed");
    };
    return o;
  }

  bool hasAlarmHandler() const override { return true; }
  Task<void> alarm(const AlarmInvocationInfo& info) override { return scheduler.alarm(info); }
  Task<json> call(std::string_view method, const json& args) override {
    const std::string name(method);
    auto it = env->calls.find(name);
    if (it == env->calls.end()) throw std::invalid_argument("unknown method " + name);
    Method body = it->second;
    const json copy = args;
    co_return co_await body(*this, copy);
  }

  // Handlers call these to record what they saw.
  std::size_t started(const DurableAlarmInfo& info) {
    Invocation inv;
    inv.name = info.name;
    inv.attempt = info.attempt;
    inv.isRetry = info.isRetry;
    inv.retryCount = info.retryCount;
    inv.key = info.idempotencyKey;
    inv.scheduledTime = info.scheduledTime;
    inv.platform = info.platform.has_value();
    inv.incarnation = ctx.incarnation;
    inv.t = ctx.clock.now();
    env->invocations.push_back(inv);
    return env->invocations.size() - 1;
  }
  void ended(std::size_t index, const DurableAlarmInfo& info) {
    Invocation& inv = env->invocations.at(index);
    inv.end = ctx.clock.now();
    inv.abortedAtEnd = info.signal.aborted();
    if (info.signal.aborted()) inv.abortName = serializeError(info.signal.reason()).name;
  }
  json storedAlarm() {
    const std::optional<int64_t> alarm = ctx.storage.getAlarm();
    return alarm ? json(*alarm) : json(nullptr);
  }

  ObjectContext& ctx;
  Env* env;
  DurabilityScheduler scheduler;
  std::unique_ptr<DurabilityAlarms> alarms;
};

json errorJson(const DurabilityError& e) { return json{{"error", e.name()}, {"message", e.what()}}; }

// Handlers.
Handler succeed() {
  return [](Host& h, const DurableAlarmInfo& info) -> Task<void> {
    h.ended(h.started(info), info);
    co_return;
  };
}
// Throws std::runtime_error("boom <attempt>") while attempt <= failures, then succeeds.
Handler failFirst(int64_t failures) {
  return [failures](Host& h, const DurableAlarmInfo& info) -> Task<void> {
    const std::size_t index = h.started(info);
    h.ended(index, info);
    if (info.attempt <= failures) throw std::runtime_error("boom " + std::to_string(info.attempt));
    co_return;
  };
}
// Runs `ms` before succeeding (or throwing std::runtime_error("late failure") if `fail`).
Handler sleepFor(int64_t ms, bool fail = false) {
  return [ms, fail](Host& h, const DurableAlarmInfo& info) -> Task<void> {
    const std::size_t index = h.started(info);
    co_await h.ctx.clock.sleepFor(ms);
    h.ended(index, info);
    if (fail) throw std::runtime_error("late failure");
  };
}
// Resets the object while running, on every attempt up to `attempts`; later attempts succeed.
Handler resetWhileRunning(int64_t attempts) {
  return [attempts](Host& h, const DurableAlarmInfo& info) -> Task<void> {
    const std::size_t index = h.started(info);
    if (info.attempt <= attempts) {
      h.env->resetNow = true;
      co_await h.ctx.clock.sleepFor(1'000);
    }
    h.ended(index, info);
  };
}

void addCalls(Env& env) {
  env.calls["ping"] = [](Host&, const json&) -> Task<json> { co_return json::object(); };
  env.calls["alarm"] = [](Host& h, const json&) -> Task<json> { co_return h.storedAlarm(); };
  // schedule {name, at} or {name, in}: returns {t, now} or the error.
  env.calls["schedule"] = [](Host& h, const json& args) -> Task<json> {
    const std::string name = args.at("name").get<std::string>();
    const int64_t now = h.ctx.clock.now();
    const int64_t t = args.contains("at") ? args.at("at").get<int64_t>() : now + args.at("in").get<int64_t>();
    try {
      Task<void> scheduling = h.alarms->schedule(name, t);
      co_await scheduling;
    } catch (const DurabilityError& e) {
      co_return errorJson(e);
    }
    co_return json{{"t", t}, {"now", now}};
  };
  env.calls["cancel"] = [](Host& h, const json& args) -> Task<json> {
    const std::string name = args.at("name").get<std::string>();
    Task<bool> cancelling = h.alarms->cancel(name);
    const bool deleted = co_await cancelling;
    co_return deleted;
  };
  env.calls["purge"] = [](Host& h, const json& args) -> Task<json> {
    const int64_t before = args.at("before").get<int64_t>();
    try {
      const int64_t count = co_await h.alarms->purgeBefore(before);
      co_return count;
    } catch (const DurabilityError& e) {
      co_return errorJson(e);
    }
  };
}

// A client that only sleeps, so that the world's clock reaches the end of a run_for.
Task<void> tick(sim::World* world, SimTime ms) { co_await world->sleep_for(ms); }

// The test's environment is a base so that it outlives the rig (and every object in it).
struct EnvHolder {
  Env env;
};

struct AlarmRig : EnvHolder, Rig {
  explicit AlarmRig(uint64_t seed = 1) : Rig(seed) {
    Env* e = &env;
    runtime.define_class(kClass, [e](ObjectContext& ctx) { return std::make_unique<Host>(ctx, e); });
    addCalls(env);
    // Resets requested by handlers fire at the object's next suspension point.
    faults.set_rule([e](FaultKind kind, const sim::FaultSite&, int64_t) {
      if (kind != FaultKind::object_reset || !e->resetNow) return false;
      e->resetNow = false;
      return true;
    });
  }
  // Runs the world for exactly `ms` (the clock ends at now + ms even if nothing happens).
  uint64_t run_for(SimTime ms) {
    world.tasks().spawn("tick", tick(&world, ms));
    return Rig::run_for(ms);
  }
  // Calls `method` after `delay` ms, runs the world for delay + `ms`; the call must succeed.
  json done(const std::string& method, json args = json::object(), SimTime delay = 0, SimTime ms = 1'000) {
    CallPtr c = Rig::call(kClass, "a", method, std::move(args), delay);
    run_for(delay + ms);
    EXPECT_TRUE(c->ok) << method << ": " << c->error;
    return c->value;
  }
  std::vector<json> ev(const std::string& type) const { return events(type, kLabel); }

  json query(const std::string& sql) { return rows_json(runtime.world().stores().live(durasim::sim::object_label(kClass, "a"), sql)); }
  json row(const std::string& name) {
    const json rows = query("SELECT * FROM durability_alarms WHERE name = '" + name + "'");
    return rows.empty() ? json() : rows[0];
  }
  int64_t rowCount() { return query("SELECT count(*) AS n FROM durability_alarms")[0].at("n").get<int64_t>(); }
  std::vector<Invocation> invocationsOf(const std::string& name) const {
    std::vector<Invocation> out;
    for (const Invocation& inv : env.invocations)
      if (inv.name == name) out.push_back(inv);
    return out;
  }
  std::vector<LifecycleEvent> lifecycleOf(const std::string& name, LifecycleType type) const {
    std::vector<LifecycleEvent> out;
    for (const LifecycleEvent& e : env.lifecycle)
      if (e.name == name && e.type == type) out.push_back(e);
    return out;
  }
};

RetryOptions fixedDelay(std::function<double(int64_t)> delay, std::optional<int64_t> maxAttempts = std::nullopt) {
  RetryOptions r;
  r.delay = std::move(delay);
  r.maxAttempts = maxAttempts;
  return r;
}

bool isUuidV4(const std::string& s) {
  static const std::regex uuid("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$");
  return std::regex_match(s, uuid);
}

// ---------------------------------------------------------------------------------------------
// schedule (scheduler.md 6.3)

TEST(AlarmsSchedule, AnUnknownNameIsATypeErrorBeforeAnyWrite) {
  AlarmRig rig;
  rig.env.handlers["known"] = succeed();
  const json out = rig.done("schedule", json{{"name", "nope"}, {"in", 60'000}});
  EXPECT_EQ(out, (json{{"error", "TypeError"}, {"message", "No named alarm handler registered for \"nope\""}}));
  EXPECT_EQ(rig.rowCount(), 0);
  EXPECT_TRUE(rig.ev("sch.reconcile").empty());
  EXPECT_FALSE(rig.status(kLabel)->stored_alarm.has_value());
}

TEST(AlarmsSchedule, ATimeOutsideTheSafeRangeIsARangeErrorBeforeAnyWrite) {
  AlarmRig rig;
  rig.env.handlers["x"] = succeed();
  const json expected{{"error", "RangeError"}, {"message", "scheduledTime must be a non-negative safe integer"}};
  EXPECT_EQ(rig.done("schedule", json{{"name", "x"}, {"at", -1}}), expected);
  EXPECT_EQ(rig.done("schedule", json{{"name", "x"}, {"at", kMaxSafeInteger + 1}}), expected);
  EXPECT_EQ(rig.rowCount(), 0);
  EXPECT_TRUE(rig.ev("sch.reconcile").empty());
  EXPECT_FALSE(rig.status(kLabel)->stored_alarm.has_value());
  // The largest safe integer is accepted.
  EXPECT_EQ(rig.done("schedule", json{{"name", "x"}, {"at", kMaxSafeInteger}}).at("t"), kMaxSafeInteger);
  EXPECT_EQ(rig.row("x").at("scheduled_at"), kMaxSafeInteger);
}

TEST(AlarmsSchedule, WritesExactlyTheSpecifiedRowAndReconciles) {
  AlarmRig rig;
  rig.env.handlers["x"] = succeed();
  const json out = rig.done("schedule", json{{"name", "x"}, {"in", 60'000}});
  const int64_t t = out.at("t").get<int64_t>(), now = out.at("now").get<int64_t>();
  const json rows = rig.query("SELECT * FROM durability_alarms");
  ASSERT_EQ(rows.size(), 1u);
  const json& r = rows[0];
  EXPECT_EQ(r.size(), 9u) << r.dump();
  EXPECT_EQ(r.at("name"), "x");
  EXPECT_TRUE(isUuidV4(r.at("generation_id").get<std::string>())) << r.dump();
  EXPECT_EQ(r.at("status"), "pending");
  EXPECT_EQ(r.at("attempt"), 0);
  EXPECT_EQ(r.at("scheduled_at"), t);
  EXPECT_EQ(r.at("next_attempt_at"), t);
  EXPECT_TRUE(r.at("last_error").is_null());
  EXPECT_TRUE(r.at("last_error_name").is_null());
  EXPECT_EQ(r.at("created_at"), now);
  const std::vector<json> reconciles = rig.ev("sch.reconcile");
  ASSERT_EQ(reconciles.size(), 1u);
  EXPECT_EQ(reconciles[0].at("next"), t);
  ASSERT_GT(t, now + kMin);
  EXPECT_EQ(rig.status(kLabel)->stored_alarm, t) << "max(next, now + min) = next";
  EXPECT_TRUE(rig.env.invocations.empty()) << "schedule never starts a handler eagerly";
}

TEST(AlarmsSchedule, ScheduleReplacesAFailedOccurrence) {
  AlarmRig rig;
  rig.env.handlers["x"] = [](Host& h, const DurableAlarmInfo& info) -> Task<void> {
    h.started(info);
    throw NonRetryableError("nope");
    co_return;
  };
  rig.done("schedule", json{{"name", "x"}, {"in", 100}}, 0, 2'000);
  const json failed = rig.row("x");
  ASSERT_EQ(failed.at("status"), "failed") << failed.dump();
  const json out = rig.done("schedule", json{{"name", "x"}, {"in", 60'000}});
  const json r = rig.row("x");
  EXPECT_EQ(r.at("status"), "pending");
  EXPECT_NE(r.at("generation_id"), failed.at("generation_id"));
  EXPECT_EQ(r.at("attempt"), 0);
  EXPECT_EQ(r.at("next_attempt_at"), out.at("t"));
  EXPECT_TRUE(r.at("last_error").is_null());
  EXPECT_TRUE(r.at("last_error_name").is_null());
  EXPECT_EQ(r.at("created_at"), out.at("now"));
}

TEST(AlarmsSchedule, APastTimeRunsPromptlyThroughTheEarlyTimer) {
  AlarmRig rig;
  rig.env.handlers["x"] = succeed();
  const json out = rig.done("schedule", json{{"name", "x"}, {"in", -5'000}}, 0, 1'000);
  const int64_t now = out.at("now").get<int64_t>();
  ASSERT_EQ(rig.env.invocations.size(), 1u);
  const Invocation& inv = rig.env.invocations[0];
  EXPECT_LE(inv.t, now + 10) << "well before alarmMinDelayMs";
  EXPECT_FALSE(inv.platform) << "run by the early timer";
  EXPECT_EQ(inv.scheduledTime, now - 5'000);
  EXPECT_EQ(rig.ev("sch.timer.arm").size(), 1u);
  EXPECT_EQ(rig.rowCount(), 0);
}

// ---------------------------------------------------------------------------------------------
// Attempts (scheduler.md 5.1, 6.4)

TEST(AlarmsAttempts, SuccessDeletesTheRowAndTheHandlerSeesTheAttempt) {
  AlarmRig rig;
  rig.env.handlers["x"] = succeed();
  const json out = rig.done("schedule", json{{"name", "x"}, {"in", 20'000}}, 0, 10);
  const std::string generation = rig.row("x").at("generation_id").get<std::string>();
  rig.run_for(30'000);
  ASSERT_EQ(rig.env.invocations.size(), 1u);
  const Invocation& inv = rig.env.invocations[0];
  EXPECT_EQ(inv.attempt, 1);
  EXPECT_FALSE(inv.isRetry);
  EXPECT_EQ(inv.retryCount, 0);
  EXPECT_EQ(inv.key, "durability-alarm:v1:" + generation);
  EXPECT_EQ(inv.scheduledTime, out.at("t"));
  EXPECT_GE(inv.t, out.at("t").get<int64_t>());
  EXPECT_TRUE(inv.platform) << "run by the physical alarm";
  EXPECT_EQ(rig.rowCount(), 0);
  EXPECT_FALSE(rig.status(kLabel)->stored_alarm.has_value());
}

TEST(AlarmsAttempts, TheIdempotencyKeyIsStableAcrossRetries) {
  AlarmRig rig;
  rig.env.handlers["x"] = failFirst(2);
  rig.env.retries = fixedDelay([](int64_t) { return 100.0; });
  rig.done("schedule", json{{"name", "x"}, {"in", 100}}, 0, 10);
  const std::string generation = rig.row("x").at("generation_id").get<std::string>();
  rig.run_for(5'000);
  const std::vector<Invocation> runs = rig.invocationsOf("x");
  ASSERT_EQ(runs.size(), 3u);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    EXPECT_EQ(runs[i].attempt, static_cast<int64_t>(i + 1));
    EXPECT_EQ(runs[i].isRetry, i > 0);
    EXPECT_EQ(runs[i].retryCount, static_cast<int64_t>(i));
    EXPECT_EQ(runs[i].key, "durability-alarm:v1:" + generation);
  }
  EXPECT_EQ(rig.rowCount(), 0);
}

TEST(AlarmsAttempts, TheIdempotencyKeyIsStableAcrossAResetAfterTheClaim) {
  AlarmRig rig;
  rig.env.handlers["x"] = resetWhileRunning(1);
  rig.done("schedule", json{{"name", "x"}, {"in", 100}}, 0, 60'000);
  const std::vector<Invocation> runs = rig.invocationsOf("x");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].end, -1) << "the first attempt died with its incarnation";
  EXPECT_EQ(runs[0].incarnation, 1);
  EXPECT_EQ(runs[1].incarnation, 2);
  EXPECT_EQ(runs[1].attempt, 2) << "the claim of attempt 1 was durable";
  EXPECT_TRUE(runs[1].isRetry);
  EXPECT_EQ(runs[1].retryCount, 1);
  EXPECT_EQ(runs[1].key, runs[0].key);
  EXPECT_EQ(rig.rowCount(), 0);
}

TEST(AlarmsAttempts, AReplacementGetsANewIdempotencyKey) {
  AlarmRig rig;
  rig.env.handlers["x"] = succeed();
  rig.done("schedule", json{{"name", "x"}, {"in", 100}}, 0, 10);
  const std::string first = rig.row("x").at("generation_id").get<std::string>();
  rig.run_for(2'000);
  rig.done("schedule", json{{"name", "x"}, {"in", 100}}, 0, 10);
  const std::string second = rig.row("x").at("generation_id").get<std::string>();
  rig.run_for(2'000);
  const std::vector<Invocation> runs = rig.invocationsOf("x");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_NE(first, second);
  EXPECT_EQ(runs[0].key, "durability-alarm:v1:" + first);
  EXPECT_EQ(runs[1].key, "durability-alarm:v1:" + second);
  EXPECT_EQ(runs[1].attempt, 1);
}

TEST(AlarmsAttempts, TheDefaultPolicyDelayLiesInTheJitterWindow) {
  for (uint64_t seed : {1u, 2u, 3u}) {
    AlarmRig rig(seed);
    rig.env.handlers["x"] = failFirst(4);
    rig.done("schedule", json{{"name", "x"}, {"in", 100}}, 0, 60'000);
    const std::vector<Invocation> runs = rig.invocationsOf("x");
    const std::vector<LifecycleEvent> retries = rig.lifecycleOf("x", LifecycleType::attempt_settled);
    ASSERT_EQ(runs.size(), 5u) << "seed " << seed;
    ASSERT_EQ(retries.size(), 5u);
    for (int64_t a = 1; a <= 4; ++a) {
      const LifecycleEvent& settled = retries[a - 1];
      ASSERT_EQ(settled.outcome, SettleOutcome::retry_scheduled);
      ASSERT_EQ(settled.attempt, a);
      const double d = std::min(1000.0 * std::pow(2.0, double(a - 1)), 300000.0);
      const int64_t gap = *settled.nextAttemptAt - runs[a - 1].t;
      EXPECT_GE(gap, static_cast<int64_t>(jsRound(d / 2))) << "seed " << seed << " attempt " << a;
      EXPECT_LE(gap, static_cast<int64_t>(d)) << "seed " << seed << " attempt " << a;
      EXPECT_GE(runs[a].t, *settled.nextAttemptAt) << "the next attempt waits for its time";
    }
    EXPECT_EQ(retries[4].outcome, SettleOutcome::completed);
    EXPECT_EQ(rig.rowCount(), 0);
  }
}

TEST(AlarmsAttempts, AFixedDelayPolicyIsAppliedExactlyAfterRounding) {
  AlarmRig rig;
  rig.env.handlers["x"] = failFirst(2);
  rig.env.methods["x"].retries = fixedDelay([](int64_t attempt) { return 1000.0 * double(attempt) + 0.5; });
  rig.done("schedule", json{{"name", "x"}, {"in", 100}}, 0, 500);
  // After the first failure the row waits for its retry.
  const std::vector<Invocation> first = rig.invocationsOf("x");
  ASSERT_EQ(first.size(), 1u);
  const json r = rig.row("x");
  EXPECT_EQ(r.at("status"), "pending");
  EXPECT_EQ(r.at("attempt"), 1);
  EXPECT_EQ(r.at("next_attempt_at"), first[0].t + 1'001);
  EXPECT_EQ(r.at("last_error"), "boom 1");
  EXPECT_EQ(r.at("last_error_name"), "Error");
  rig.run_for(10'000);
  const std::vector<Invocation> runs = rig.invocationsOf("x");
  ASSERT_EQ(runs.size(), 3u);
  const std::vector<LifecycleEvent> settled = rig.lifecycleOf("x", LifecycleType::attempt_settled);
  ASSERT_EQ(settled.size(), 3u);
  EXPECT_EQ(*settled[0].nextAttemptAt, runs[0].t + 1'001);
  EXPECT_EQ(*settled[1].nextAttemptAt, runs[1].t + 2'001);
  EXPECT_GE(runs[1].t, runs[0].t + 1'001);
  EXPECT_LE(runs[1].t, runs[0].t + 1'001 + 5);
  EXPECT_GE(runs[2].t, runs[1].t + 2'001);
}

TEST(AlarmsAttempts, TheLastAllowedAttemptFailsTerminallyWithItsOwnError) {
  AlarmRig rig;
  rig.env.handlers["x"] = failFirst(10);
  rig.env.retries = fixedDelay([](int64_t) { return 100.0; }, 3);
  rig.done("schedule", json{{"name", "x"}, {"in", 100}}, 0, 10'000);
  const std::vector<Invocation> runs = rig.invocationsOf("x");
  ASSERT_EQ(runs.size(), 3u);
  const json r = rig.row("x");
  EXPECT_EQ(r.at("status"), "failed");
  EXPECT_EQ(r.at("attempt"), 3);
  EXPECT_EQ(r.at("last_error"), "boom 3");
  EXPECT_EQ(r.at("last_error_name"), "Error");
  EXPECT_EQ(r.at("next_attempt_at"), runs[2].t) << "a terminal decision sets next_attempt_at = now";
  EXPECT_FALSE(rig.status(kLabel)->stored_alarm.has_value()) << "nothing pending: no alarm";
}

TEST(AlarmsAttempts, PerNameOptionsOverrideCapabilityOptionsFieldByField) {
  AlarmRig rig;
  rig.env.retries = fixedDelay([](int64_t) { return 300.0; }, 5);
  rig.env.handlers["capability"] = failFirst(10);
  rig.env.handlers["named"] = failFirst(10);
  rig.env.methods["named"].retries = fixedDelay({}, 2);  // maxAttempts per name; delay from the capability
  for (const char* name : {"capability", "named"}) rig.done("schedule", json{{"name", name}, {"in", 100}}, 0, 10);
  rig.run_for(20'000);
  const std::vector<Invocation> capability = rig.invocationsOf("capability");
  const std::vector<Invocation> named = rig.invocationsOf("named");
  EXPECT_EQ(capability.size(), 5u);
  ASSERT_EQ(named.size(), 2u);
  const std::vector<LifecycleEvent> settled = rig.lifecycleOf("named", LifecycleType::attempt_settled);
  ASSERT_EQ(settled.size(), 2u);
  EXPECT_EQ(settled[0].nextAttemptAt, named[0].t + 300) << "the capability's delay";
  EXPECT_EQ(settled[1].outcome, SettleOutcome::failed) << "the name's maxAttempts";
}

class PoisonError : public NonRetryableError {
 public:
  using NonRetryableError::NonRetryableError;
  std::string name() const override { return "PoisonError"; }
};
// Not derived from NonRetryableError, but named so.
class NamedNonRetryable : public DurabilityError {
 public:
  using DurabilityError::DurabilityError;
  std::string name() const override { return "NonRetryableError"; }
};

TEST(AlarmsAttempts, NonRetryableErrorsAreTerminal) {
  AlarmRig rig;
  rig.env.retries = fixedDelay([](int64_t) { return 100.0; });
  rig.env.handlers["plain"] = [](Host& h, const DurableAlarmInfo& info) -> Task<void> {
    h.started(info);
    throw NonRetryableError("plain refusal");
    co_return;
  };
  rig.env.handlers["derived"] = [](Host& h, const DurableAlarmInfo& info) -> Task<void> {
    h.started(info);
    throw PoisonError("poisoned");
    co_return;
  };
  rig.env.handlers["named"] = [](Host& h, const DurableAlarmInfo& info) -> Task<void> {
    h.started(info);
    throw NamedNonRetryable("named refusal");
    co_return;
  };
  for (const char* name : {"plain", "derived", "named"}) rig.done("schedule", json{{"name", name}, {"in", 100}}, 0, 10);
  rig.run_for(10'000);
  const std::map<std::string, std::pair<std::string, std::string>> expected = {
      {"plain", {"NonRetryableError", "plain refusal"}},
      {"derived", {"PoisonError", "poisoned"}},
      {"named", {"NonRetryableError", "named refusal"}}};
  for (const auto& [name, error] : expected) {
    EXPECT_EQ(rig.invocationsOf(name).size(), 1u) << name;
    const json r = rig.row(name);
    EXPECT_EQ(r.at("status"), "failed") << name;
    EXPECT_EQ(r.at("attempt"), 1) << name;
    EXPECT_EQ(r.at("last_error_name"), error.first) << name;
    EXPECT_EQ(r.at("last_error"), error.second) << name;
  }
}

TEST(AlarmsAttempts, AnInvalidRetryPolicyIsTerminalWithDurableRetryPolicyError) {
  AlarmRig rig;
  const std::map<std::string, std::function<double(int64_t)>> policies = {
      {"nan", [](int64_t) { return std::numeric_limits<double>::quiet_NaN(); }},
      {"negative", [](int64_t) { return -0.1; }},
      {"throwing", [](int64_t) -> double { throw std::runtime_error("no delay"); }},
      {"infinite", [](int64_t) { return std::numeric_limits<double>::infinity(); }},
      {"huge", [](int64_t) { return 9007199254740992.0; }},
      {"overflowing", [](int64_t) { return 9007199254739991.0; }}};  // safe, but now + delay is not
  for (const auto& [name, delay] : policies) {
    rig.env.handlers[name] = failFirst(10);
    rig.env.methods[name].retries = fixedDelay(delay);
  }
  for (const auto& [name, delay] : policies) rig.done("schedule", json{{"name", name}, {"in", 100}}, 0, 10);
  rig.run_for(10'000);
  for (const auto& [name, delay] : policies) {
    EXPECT_EQ(rig.invocationsOf(name).size(), 1u) << name;
    const json r = rig.row(name);
    EXPECT_EQ(r.at("status"), "failed") << name;
    EXPECT_EQ(r.at("last_error_name"), "DurableRetryPolicyError") << name;
    EXPECT_EQ(r.at("last_error"),
              "Retry policy for durable alarm \"" + name + "\" must produce a non-negative safe-integer timestamp")
        << name;
  }
}

TEST(AlarmsAttempts, ATimeoutIsTerminalByDefault) {
  AlarmRig rig;
  rig.env.attemptTimeoutMs = 1'000;
  rig.env.retries = fixedDelay([](int64_t) { return 100.0; });
  rig.env.handlers["slow"] = sleepFor(3'000);
  rig.done("schedule", json{{"name", "slow"}, {"in", 100}}, 0, 10'000);
  const std::vector<Invocation> runs = rig.invocationsOf("slow");
  ASSERT_EQ(runs.size(), 1u);
  const json r = rig.row("slow");
  EXPECT_EQ(r.at("status"), "failed");
  EXPECT_EQ(r.at("last_error_name"), "DurableAlarmTimeoutError");
  EXPECT_EQ(r.at("last_error"), "Durable alarm \"slow\" timed out after 1000ms");
  EXPECT_EQ(r.at("next_attempt_at"), runs[0].t + 1'000) << "the attempt failed at its deadline";
  EXPECT_EQ(runs[0].end, runs[0].t + 3'000) << "the handler was not stopped";
  EXPECT_TRUE(runs[0].abortedAtEnd) << "its signal was aborted";
  EXPECT_EQ(runs[0].abortName, "DurableAlarmTimeoutError");
  // The pass ended with the outcome write, not with the handler.
  const std::vector<json> passEnds = rig.ev("sch.alarm.end");
  ASSERT_FALSE(passEnds.empty());
  EXPECT_LT(passEnds[0].at("t").get<int64_t>(), runs[0].end);
}

TEST(AlarmsAttempts, ATimeoutIsRetriedWithRetryTimeouts) {
  AlarmRig rig;
  rig.env.attemptTimeoutMs = 1'000;
  rig.env.retries = fixedDelay([](int64_t) { return 100.0; });
  rig.env.methods["slow"].retryTimeouts = true;
  rig.env.handlers["slow"] = [](Host& h, const DurableAlarmInfo& info) -> Task<void> {
    const std::size_t index = h.started(info);
    if (info.attempt == 1) co_await h.ctx.clock.sleepFor(3'000);
    h.ended(index, info);
  };
  rig.done("schedule", json{{"name", "slow"}, {"in", 100}}, 0, 10'000);
  const std::vector<Invocation> runs = rig.invocationsOf("slow");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].attempt, 2);
  EXPECT_GE(runs[1].t, runs[0].end) << "one handler per name at a time";
  const std::vector<LifecycleEvent> settled = rig.lifecycleOf("slow", LifecycleType::attempt_settled);
  ASSERT_EQ(settled.size(), 2u);
  EXPECT_EQ(settled[0].outcome, SettleOutcome::retry_scheduled);
  EXPECT_EQ(settled[0].error->name, "DurableAlarmTimeoutError");
  EXPECT_EQ(settled[1].outcome, SettleOutcome::completed);
  EXPECT_EQ(rig.rowCount(), 0);
}

TEST(AlarmsAttempts, ATimedOutHandlerKeepsItsPermitAndItsNameUntilItReturns) {
  AlarmRig rig;
  rig.env.scheduler.alarmConcurrency = 1;
  rig.env.attemptTimeoutMs = 1'000;
  rig.env.handlers["slow"] = sleepFor(5'000);
  rig.env.handlers["other"] = succeed();
  rig.done("schedule", json{{"name", "slow"}, {"in", 100}}, 0, 2'000);
  ASSERT_EQ(rig.invocationsOf("slow").size(), 1u);
  ASSERT_EQ(rig.row("slow").at("status"), "failed") << "the attempt settled at its deadline";
  // While the timed-out handler still runs: another name is due, and "slow" is scheduled anew.
  rig.done("schedule", json{{"name", "other"}, {"in", 0}}, 0, 10);
  rig.done("schedule", json{{"name", "slow"}, {"in", 0}}, 0, 20'000);
  const std::vector<Invocation> slow = rig.invocationsOf("slow");
  const std::vector<Invocation> other = rig.invocationsOf("other");
  ASSERT_EQ(slow.size(), 2u);
  ASSERT_EQ(other.size(), 1u);
  ASSERT_EQ(slow[0].end, slow[0].t + 5'000);
  EXPECT_GE(other[0].t, slow[0].end) << "the only permit was held by the timed-out handler";
  EXPECT_GE(slow[1].t, slow[0].end) << "no second handler of the name while the first runs";
  // The permit went back when the handler returned, not at the timeout.
  const std::vector<json> ends = rig.ev("alm.handler.end");
  ASSERT_FALSE(ends.empty());
  const int64_t firstEnd = ends[0].at("t").get<int64_t>();
  std::vector<json> releases;
  for (const json& e : rig.ev("sch.permit"))
    if (e.at("op") == "release" || e.at("op") == "handoff") releases.push_back(e);
  ASSERT_FALSE(releases.empty());
  EXPECT_GE(releases[0].at("t").get<int64_t>(), firstEnd);
  EXPECT_GT(firstEnd, slow[0].t + 1'000);
  EXPECT_TRUE(rig.row("other").is_null()) << "other completed";
}

TEST(AlarmsAttempts, AClaimWhoseConfirmationFailsNeverInvokesTheHandler) {
  AlarmRig rig;
  rig.env.handlers["x"] = succeed();
  // The first confirmation after the claim fails (durability unknown): the claim's commit.
  rig.faults.set_rule([&rig, fired = false](FaultKind kind, const sim::FaultSite&, int64_t) mutable {
    if (kind != FaultKind::storage_commit_uncertain || fired || rig.sink.of("alm.claim").empty()) return false;
    fired = true;
    return true;
  });
  rig.done("schedule", json{{"name", "x"}, {"in", 100}}, 0, 60'000);
  const std::vector<json> claims = rig.ev("alm.claim");
  const std::vector<json> faults = rig.sink.of("fault");
  ASSERT_EQ(faults.size(), 1u);
  ASSERT_FALSE(claims.empty());
  EXPECT_EQ(claims[0].at("incarnation"), 1);
  EXPECT_GT(faults[0].at("t").get<int64_t>(), claims[0].at("t").get<int64_t>()) << "the claim's commit failed";
  const std::vector<Invocation> runs = rig.invocationsOf("x");
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].incarnation, 2) << "not invoked by the incarnation whose claim was not confirmed";
  EXPECT_LE(runs[0].attempt, 2);
  EXPECT_EQ(rig.rowCount(), 0);
}

TEST(AlarmsAttempts, TheAttemptBoundHoldsAcrossResets) {
  AlarmRig rig;
  rig.env.handlers["x"] = resetWhileRunning(100);
  rig.env.retries = fixedDelay([](int64_t) { return 100.0; }, 2);
  rig.done("schedule", json{{"name", "x"}, {"in", 100}}, 0, 120'000);
  const std::vector<Invocation> runs = rig.invocationsOf("x");
  ASSERT_EQ(runs.size(), 2u) << "at most maxAttempts invocations";
  EXPECT_EQ(runs[0].attempt, 1);
  EXPECT_EQ(runs[1].attempt, 2);
  EXPECT_NE(runs[0].incarnation, runs[1].incarnation);
  const json r = rig.row("x");
  EXPECT_EQ(r.at("status"), "failed");
  EXPECT_EQ(r.at("attempt"), 2);
  EXPECT_EQ(r.at("last_error_name"), "DurableAttemptsExhaustedError");
  EXPECT_EQ(r.at("last_error"), "Durable alarm \"x\" exhausted its 2 attempts");
  EXPECT_GE(rig.ev("incarnation.end").size(), 2u);
  EXPECT_FALSE(rig.status(kLabel)->stored_alarm.has_value());
}

TEST(AlarmsAttempts, APassTakesAtMost100DueRowsAndTheRestFollow) {
  AlarmRig rig;
  std::vector<std::string> names;
  for (int i = 0; i < 120; ++i) {
    char name[8];
    std::snprintf(name, sizeof name, "n%03d", 119 - i);
    names.push_back(name);
    rig.env.handlers[name] = succeed();
  }
  const int64_t due = kStart + 1'000;
  std::vector<CallPtr> calls;
  for (const std::string& name : names) calls.push_back(rig.call(kClass, "a", "schedule", json{{"name", name}, {"at", due}}));
  rig.run_for(10'000);
  for (const CallPtr& c : calls) ASSERT_TRUE(c->ok) << c->error;
  ASSERT_EQ(rig.env.invocations.size(), 120u);
  const std::vector<json> passes = rig.ev("sch.alarm.start");
  ASSERT_GE(passes.size(), 2u);
  std::set<std::string> firstPass;
  for (const json& e : rig.ev("alm.invoke"))
    if (e.at("t").get<int64_t>() < passes[1].at("t").get<int64_t>()) firstPass.insert(e.at("name").get<std::string>());
  ASSERT_EQ(firstPass.size(), static_cast<std::size_t>(kAlarmPassLimit));
  EXPECT_EQ(*firstPass.begin(), "n000");
  EXPECT_EQ(*firstPass.rbegin(), "n099") << "the first 100 by (next_attempt_at, name)";
  EXPECT_EQ(rig.rowCount(), 0);
}

// ---------------------------------------------------------------------------------------------
// Fencing (scheduler.md 5.1, 6.3, 6.4)

TEST(AlarmsFencing, AReplacementScheduledDuringARunSurvivesAndRunsAfterIt) {
  AlarmRig rig;
  rig.env.handlers["r"] = sleepFor(3'000);
  rig.done("schedule", json{{"name", "r"}, {"in", 100}}, 0, 1'000);
  ASSERT_EQ(rig.invocationsOf("r").size(), 1u);
  rig.done("schedule", json{{"name", "r"}, {"in", 0}}, 0, 10);
  const std::string replacement = rig.row("r").at("generation_id").get<std::string>();
  rig.run_for(3'000);
  // The old handler returned: its fenced delete matched nothing, the replacement is still there.
  const std::vector<Invocation> old = rig.invocationsOf("r");
  ASSERT_NE(old[0].end, -1);
  rig.run_for(10'000);
  const std::vector<Invocation> runs = rig.invocationsOf("r");
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[1].key, "durability-alarm:v1:" + replacement);
  EXPECT_NE(runs[0].key, runs[1].key);
  EXPECT_EQ(runs[1].attempt, 1);
  EXPECT_GE(runs[1].t, runs[0].end) << "the replacement waited for the old handler";
  const std::vector<LifecycleEvent> settled = rig.lifecycleOf("r", LifecycleType::attempt_settled);
  ASSERT_EQ(settled.size(), 1u) << "only the replacement's delete matched";
  EXPECT_EQ(settled[0].outcome, SettleOutcome::completed);
  EXPECT_EQ(rig.rowCount(), 0);
}

TEST(AlarmsFencing, CancelDuringARunFencesTheOutcomeAndStopsTheGeneration) {
  AlarmRig rig;
  rig.env.retries = fixedDelay([](int64_t) { return 100.0; });
  rig.env.handlers["c"] = sleepFor(3'000, /*fail=*/true);
  rig.done("schedule", json{{"name", "c"}, {"in", 100}}, 0, 1'000);
  ASSERT_EQ(rig.invocationsOf("c").size(), 1u);
  EXPECT_EQ(rig.done("cancel", json{{"name", "c"}}), true);
  rig.run_for(20'000);
  const std::vector<Invocation> runs = rig.invocationsOf("c");
  ASSERT_EQ(runs.size(), 1u) << "no new attempt of the cancelled generation";
  EXPECT_NE(runs[0].end, -1);
  EXPECT_FALSE(runs[0].abortedAtEnd) << "cancel does not abort a running attempt";
  EXPECT_TRUE(rig.lifecycleOf("c", LifecycleType::attempt_settled).empty()) << "the failure write matched nothing";
  EXPECT_EQ(rig.rowCount(), 0);
  EXPECT_FALSE(rig.status(kLabel)->stored_alarm.has_value());
}

TEST(AlarmsFencing, CancelReportsWhetherARowWasDeleted) {
  AlarmRig rig;
  rig.env.handlers["x"] = succeed();
  EXPECT_EQ(rig.done("cancel", json{{"name", "missing"}}), false);
  rig.done("schedule", json{{"name", "x"}, {"in", 60'000}});
  ASSERT_TRUE(rig.status(kLabel)->stored_alarm.has_value());
  EXPECT_EQ(rig.done("cancel", json{{"name", "x"}}), true);
  EXPECT_EQ(rig.rowCount(), 0);
  EXPECT_FALSE(rig.status(kLabel)->stored_alarm.has_value()) << "cancel reconciles";
  EXPECT_EQ(rig.done("cancel", json{{"name", "x"}}), false);
  rig.run_for(120'000);
  EXPECT_TRUE(rig.env.invocations.empty());
}

// ---------------------------------------------------------------------------------------------
// purgeBefore (scheduler.md 3.6, 6.3)

TEST(AlarmsPurge, TheCutoffIsStrictAndTheCountIsReturned) {
  AlarmRig rig;
  for (const char* name : {"a", "b", "c"}) rig.env.handlers[name] = succeed();
  const int64_t created_a = rig.done("schedule", json{{"name", "a"}, {"in", 600'000}}).at("now").get<int64_t>();
  const int64_t created_b = rig.done("schedule", json{{"name", "b"}, {"in", 600'000}}).at("now").get<int64_t>();
  rig.done("schedule", json{{"name", "c"}, {"in", 600'000}});
  ASSERT_LT(created_a, created_b);
  EXPECT_EQ(rig.done("purge", json{{"before", created_b}}), 1);
  EXPECT_EQ(rig.query("SELECT name FROM durability_alarms ORDER BY name"), (json{{{"name", "b"}}, {{"name", "c"}}}));
  EXPECT_TRUE(rig.status(kLabel)->stored_alarm.has_value());
  EXPECT_EQ(rig.done("purge", json{{"before", kMaxSafeInteger}}), 2);
  EXPECT_EQ(rig.rowCount(), 0);
  const std::vector<json> reconciles = rig.ev("sch.reconcile");
  ASSERT_FALSE(reconciles.empty());
  EXPECT_TRUE(reconciles.back().at("deleted").get<bool>());
  EXPECT_FALSE(rig.status(kLabel)->stored_alarm.has_value()) << "nothing left: the alarm is deleted";
}

TEST(AlarmsPurge, AnUnsafeCutoffIsARangeError) {
  AlarmRig rig;
  rig.env.handlers["a"] = succeed();
  rig.done("schedule", json{{"name", "a"}, {"in", 600'000}});
  const json expected{{"error", "RangeError"}, {"message", "before must be a non-negative safe integer"}};
  EXPECT_EQ(rig.done("purge", json{{"before", -1}}), expected);
  EXPECT_EQ(rig.done("purge", json{{"before", kMaxSafeInteger + 1}}), expected);
  EXPECT_EQ(rig.rowCount(), 1);
  EXPECT_EQ(rig.ev("sch.reconcile").size(), 1u) << "only the schedule reconciled";
  EXPECT_EQ(rig.done("purge", json{{"before", 0}}), 0);
}

TEST(AlarmsPurge, RunningAttemptsCreatedBeforeTheCutoffAreAborted) {
  AlarmRig rig;
  rig.env.handlers["a"] = sleepFor(3'000);
  rig.env.handlers["b"] = sleepFor(3'000);
  const int64_t due = kStart + 1'000;
  rig.done("schedule", json{{"name", "a"}, {"at", due}}, 0, 100);
  const int64_t created_b = rig.done("schedule", json{{"name", "b"}, {"at", due}}, 0, 1'500).at("now").get<int64_t>();
  ASSERT_EQ(rig.env.invocations.size(), 2u) << "both running";
  EXPECT_EQ(rig.done("purge", json{{"before", created_b}}, 0, 10'000), 1);
  const Invocation ia = rig.invocationsOf("a").at(0);
  const Invocation ib = rig.invocationsOf("b").at(0);
  EXPECT_TRUE(ia.abortedAtEnd) << "created before the cutoff";
  EXPECT_FALSE(ib.abortedAtEnd) << "created at the cutoff";
  EXPECT_EQ(ia.end, ia.t + 3'000) << "aborting never stops a handler";
  EXPECT_EQ(rig.rowCount(), 0) << "b completed, a was purged";
  EXPECT_EQ(rig.invocationsOf("a").size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// A due row whose name lost its handler (scheduler.md 6.3)

TEST(AlarmsMissingHandler, ADueRowWithoutAHandlerFailsAsNonRetryable) {
  AlarmRig rig;
  rig.env.handlers["legacy"] = succeed();
  rig.env.handlers["other"] = succeed();
  rig.done("schedule", json{{"name", "legacy"}, {"in", 20'000}});
  // The next incarnation's application no longer has the handler.
  rig.env.handlers.erase("legacy");
  rig.faults.arm(FaultKind::object_reset);
  rig.done("ping");
  ASSERT_EQ(rig.ev("incarnation.end").size(), 1u);
  rig.run_for(60'000);
  EXPECT_TRUE(rig.env.invocations.empty());
  const json r = rig.row("legacy");
  EXPECT_EQ(r.at("status"), "failed");
  EXPECT_EQ(r.at("attempt"), 1);
  EXPECT_EQ(r.at("last_error_name"), "NonRetryableError");
  EXPECT_EQ(r.at("last_error"), "No named alarm handler registered for \"legacy\"");
  EXPECT_FALSE(rig.status(kLabel)->stored_alarm.has_value());
}

// ---------------------------------------------------------------------------------------------
// Schema and construction (scheduler.md 6.1, 8)

TEST(AlarmsMigrations, MigratingToNoneRemovesTheSchemaAndConstructionRestoresIt) {
  AlarmRig rig;
  rig.env.handlers["x"] = succeed();
  rig.env.calls["drop"] = [](Host& h, const json&) -> Task<json> {
    h.alarms.reset();
    const MigrationResult result = DurabilityAlarms::migrate(h.ctx.storage, MigrationTarget::none());
    co_return json{{"applied", result.applied}, {"rolledBack", result.rolledBack}};
  };
  rig.env.calls["rebuild"] = [](Host& h, const json&) -> Task<json> {
    h.alarms = std::make_unique<DurabilityAlarms>(h.scheduler, h.options());
    co_return json::object();
  };
  rig.done("schedule", json{{"name", "x"}, {"in", 600'000}});
  const std::string tables = "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'durability%' ORDER BY name";
  EXPECT_EQ(rig.query(tables), (json{{{"name", "durability_alarms"}}, {{"name", "durability_migrations"}}}));
  EXPECT_EQ(rig.done("drop"), (json{{"applied", json::array()}, {"rolledBack", {"durability_0003_create_alarms"}}}));
  EXPECT_EQ(rig.query(tables), json::array()) << "the table and its (now empty) history are gone";
  rig.done("rebuild");
  EXPECT_EQ(rig.query(tables), (json{{{"name", "durability_alarms"}}, {{"name", "durability_migrations"}}}));
  EXPECT_EQ(rig.query("SELECT name, capability FROM durability_migrations"),
            (json{{{"name", "durability_0003_create_alarms"}, {"capability", "namedAlarms"}}}));
  EXPECT_EQ(rig.rowCount(), 0);
  EXPECT_EQ(rig.done("schedule", json{{"name", "x"}, {"in", 600'000}}).count("error"), 0u);
  EXPECT_EQ(rig.rowCount(), 1);
}

TEST(AlarmsMigrations, ConstructionRejectsEmptyHandlersAndNonPositivePolicies) {
  AlarmRig rig;
  rig.env.buildAlarms = false;
  rig.env.calls["construct"] = [](Host& h, const json& args) -> Task<json> {
    const std::string variant = args.at("case").get<std::string>();
    NamedAlarmOptions options;
    options.handlers["ok"] = [](const DurableAlarmInfo&) { return nothing(); };
    if (variant == "empty_handler") options.handlers["hollow"] = DurableAlarmHandler{};
    if (variant == "timeout") options.attemptTimeoutMs = 0;
    if (variant == "max") options.retries = fixedDelay({}, 0);
    if (variant == "method_timeout") options.methods["ok"].attemptTimeoutMs = 0;
    if (variant == "method_max") options.methods["ok"].retries = fixedDelay({}, -1);
    try {
      DurabilityAlarms alarms(h.scheduler, std::move(options));
      co_return json("ok");
    } catch (const DurabilityError& e) {
      co_return errorJson(e);
    }
  };
  const std::vector<std::pair<std::string, json>> cases = {
      {"empty_handler", {{"error", "TypeError"}, {"message", "Named alarm handler \"hollow\" must be callable"}}},
      {"timeout", {{"error", "RangeError"}, {"message", "attemptTimeoutMs must be a positive integer"}}},
      {"max", {{"error", "RangeError"}, {"message", "maxAttempts must be a positive integer"}}},
      {"method_timeout", {{"error", "RangeError"}, {"message", "attemptTimeoutMs must be a positive integer"}}},
      {"method_max", {{"error", "RangeError"}, {"message", "maxAttempts must be a positive integer"}}}};
  for (const auto& [variant, expected] : cases) EXPECT_EQ(rig.done("construct", json{{"case", variant}}), expected) << variant;
  EXPECT_EQ(rig.query("SELECT name FROM sqlite_master WHERE name LIKE 'durability%'"), json::array()) << "nothing written";
  // No refused construction left an "alarms" participant behind.
  EXPECT_EQ(rig.done("construct", json{{"case", "valid"}}), "ok");
  EXPECT_EQ(rig.query("SELECT name FROM sqlite_master WHERE name = 'durability_alarms'").size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Lifecycle events (scheduler.md 7)

TEST(AlarmsLifecycle, TheHookReceivesEachEventWithItsFields) {
  AlarmRig rig;
  rig.env.retries = fixedDelay([](int64_t) { return 500.0; });
  rig.env.handlers["x"] = failFirst(1);
  rig.env.handlers["y"] = [](Host& h, const DurableAlarmInfo& info) -> Task<void> {
    h.started(info);
    throw NonRetryableError("refused");
    co_return;
  };
  const json x = rig.done("schedule", json{{"name", "x"}, {"in", 100}}, 0, 5'000);
  rig.done("schedule", json{{"name", "y"}, {"in", 100}}, 0, 5'000);
  const int64_t before = rig.world.now();
  EXPECT_EQ(rig.done("purge", json{{"before", before}}), 1);

  const std::vector<LifecycleEvent> scheduled = rig.lifecycleOf("x", LifecycleType::scheduled);
  ASSERT_EQ(scheduled.size(), 1u);
  EXPECT_EQ(scheduled[0].entityKind, "alarm");
  EXPECT_EQ(scheduled[0].id, "x");
  EXPECT_EQ(scheduled[0].attempt, 0);
  EXPECT_EQ(scheduled[0].scheduledTime, x.at("t").get<int64_t>());
  EXPECT_GE(scheduled[0].at, x.at("now").get<int64_t>()) << "emitted after the commit";

  const std::vector<Invocation> runs = rig.invocationsOf("x");
  ASSERT_EQ(runs.size(), 2u);
  const std::vector<LifecycleEvent> started = rig.lifecycleOf("x", LifecycleType::attempt_started);
  ASSERT_EQ(started.size(), 2u);
  EXPECT_EQ(started[0].attempt, 1);
  EXPECT_EQ(started[1].attempt, 2);
  EXPECT_EQ(started[0].scheduledTime, x.at("t").get<int64_t>());
  EXPECT_EQ(started[0].entityKind, "alarm");

  const std::vector<LifecycleEvent> settled = rig.lifecycleOf("x", LifecycleType::attempt_settled);
  ASSERT_EQ(settled.size(), 2u);
  EXPECT_EQ(settled[0].attempt, 1);
  EXPECT_EQ(settled[0].outcome, SettleOutcome::retry_scheduled);
  ASSERT_TRUE(settled[0].error.has_value());
  EXPECT_EQ(*settled[0].error, (ErrorInfo{"Error", "boom 1"}));
  EXPECT_EQ(settled[0].nextAttemptAt, runs[0].t + 500);
  EXPECT_EQ(settled[1].attempt, 2);
  EXPECT_EQ(settled[1].outcome, SettleOutcome::completed);
  EXPECT_TRUE(settled[1].durationMs.has_value());
  EXPECT_FALSE(settled[1].error.has_value());

  const std::vector<LifecycleEvent> failed = rig.lifecycleOf("y", LifecycleType::attempt_settled);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].outcome, SettleOutcome::failed);
  EXPECT_EQ(*failed[0].error, (ErrorInfo{"NonRetryableError", "refused"}));
  EXPECT_EQ(failed[0].nextAttemptAt, rig.invocationsOf("y").at(0).t);

  std::vector<LifecycleEvent> purged;
  for (const LifecycleEvent& e : rig.env.lifecycle)
    if (e.type == LifecycleType::purged) purged.push_back(e);
  ASSERT_EQ(purged.size(), 1u);
  EXPECT_EQ(purged[0].entityKind, "alarm");
  EXPECT_EQ(purged[0].before, before);
  EXPECT_EQ(purged[0].count, 1);
}

TEST(AlarmsLifecycle, ExhaustionEmitsATerminalEvent) {
  AlarmRig rig;
  rig.env.handlers["x"] = resetWhileRunning(100);
  rig.env.retries = fixedDelay([](int64_t) { return 100.0; }, 1);
  rig.done("schedule", json{{"name", "x"}, {"in", 100}}, 0, 60'000);
  ASSERT_EQ(rig.invocationsOf("x").size(), 1u);
  const std::vector<LifecycleEvent> terminal = rig.lifecycleOf("x", LifecycleType::terminal);
  ASSERT_EQ(terminal.size(), 1u);
  EXPECT_EQ(terminal[0].entityKind, "alarm");
  EXPECT_EQ(terminal[0].reason, TerminalReason::attempts_exhausted);
  EXPECT_EQ(terminal[0].attempt, 1);
  ASSERT_TRUE(terminal[0].error.has_value());
  EXPECT_EQ(*terminal[0].error, (ErrorInfo{"DurableAttemptsExhaustedError", "Durable alarm \"x\" exhausted its 1 attempts"}));
  EXPECT_EQ(rig.row("x").at("status"), "failed");
}

TEST(AlarmsLifecycle, AThrowingHookIsLoggedAndChangesNothing) {
  AlarmRig rig;
  rig.env.hookThrows = true;
  rig.env.handlers["x"] = succeed();
  const json out = rig.done("schedule", json{{"name", "x"}, {"in", 100}}, 0, 10);
  EXPECT_EQ(out.count("error"), 0u) << out.dump();
  EXPECT_EQ(rig.rowCount(), 1) << "the schedule committed";
  rig.run_for(5'000);
  EXPECT_EQ(rig.invocationsOf("x").size(), 1u);
  EXPECT_EQ(rig.rowCount(), 0) << "the success delete committed";
  int64_t logged = 0;
  for (const json& e : rig.ev("log"))
    if (e.at("event") == "durability.lifecycle_hook.failed") ++logged;
  EXPECT_EQ(logged, static_cast<int64_t>(rig.env.lifecycle.size()));
  EXPECT_GE(logged, 3) << "scheduled, attempt_started, attempt_settled";
}

// ---------------------------------------------------------------------------------------------
// The AlarmApp workload end to end

TEST(AlarmsApp, OkAndFlakyAlarmsRunToCompletion) {
  Rig rig;
  workloads::AlarmAppConfig config;
  rig.runtime.define_class(workloads::AlarmApp::kClass, [config](ObjectContext& ctx) {
    return std::make_unique<workloads::AlarmApp>(ctx, config, 1, nullptr);
  });
  const std::string cls = workloads::AlarmApp::kClass;
  CallPtr ok = rig.call(cls, "a", "schedule", {{"name", "ok.0"}, {"at", kStart + 5'000}});
  CallPtr flaky = rig.call(cls, "a", "schedule", {{"name", "flaky.0"}, {"at", kStart + 20'000}});
  rig.run_for(600'000);
  ASSERT_TRUE(ok->ok) << ok->error;
  ASSERT_TRUE(flaky->ok) << flaky->error;
  const std::vector<SqlRow> effects =
      rig.runtime.world().stores().live(durasim::sim::object_label(cls, "a"), "SELECT name, attempt, at FROM app_effects ORDER BY at").toVector();
  ASSERT_EQ(effects.size(), 2u);
  EXPECT_EQ(effects[0].text("name"), "ok.0");
  EXPECT_GE(effects[0].int64("at"), kStart + 5'000);
  EXPECT_EQ(effects[1].text("name"), "flaky.0");
  EXPECT_EQ(effects[1].int64("attempt"), 3);
  EXPECT_EQ(rig.runtime.world().stores().live(durasim::sim::object_label(cls, "a"), "SELECT count(*) AS n FROM durability_alarms").one().int64("n"), 0);
  EXPECT_FALSE(rig.status(cls + "/a")->stored_alarm.has_value());
}

}  // namespace
}  // namespace durasim::rt_test
