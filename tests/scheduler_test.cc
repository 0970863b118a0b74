// The shared scheduler (scheduler.md 2-3) on the simulated runtime: option validation, unique
// scheduler and participants, alarm reconciliation, the early timer, permits, handoff and coalescing.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "engine/alarms.h"
#include "engine/errors.h"
#include "engine/scheduler.h"
#include "engine/variants.h"
#include "tests/runtime_test_harness.h"

namespace durasim::rt_test {
namespace {

constexpr const char* kClass = "Sched";
constexpr const char* kLabel = "Sched/a";
// A call made `delay` ms after the start is delivered 1 ms later (fixed RPC latency of the rig).
constexpr SimTime at(SimTime delay) { return kStart + 1 + delay; }

class Host;
using Method = std::function<Task<json>(Host&, const json&)>;
using Handler = std::function<Task<void>(Host&, const DurableAlarmInfo&)>;

// One runDue call of a test participant.
struct DueRun {
  std::string kind;
  int64_t startedAt = 0;
  bool platform = false;
  int64_t incarnation = 0;
  int64_t finished = -1;
};

// What the test configures and observes; outlives every incarnation.
struct Env {
  bool build = true;  // construct a scheduler in the object's constructor
  SchedulerOptions options;
  std::vector<std::string> kinds;                      // test participants registered at construction
  std::map<std::string, std::optional<int64_t>> next;  // their next pending time, by kind
  std::vector<DueRun> runs;
  std::map<std::string, int64_t> runDueMs;  // how long runDue of a kind takes
  std::set<std::string> runDueThrows;       // kinds whose runDue throws (at its end)
  std::map<std::string, Handler> handlers;  // named alarms; DurabilityAlarms is built when non-empty
  std::optional<int64_t> attemptTimeoutMs;
  std::map<std::string, Method> methods;
};

// A participant whose next pending time the test sets; runDue records the call and, when the time
// is due, clears it (the work is done).
class TestParticipant final : public Participant {
 public:
  TestParticipant(Engine& engine, ObjectContext& ctx, std::string kind, std::optional<int64_t>* next, std::vector<DueRun>* runs,
                  Env* env = nullptr)
      : engine_(engine), ctx_(ctx), kind_(std::move(kind)), next_(next), runs_(runs), env_(env) {
    engine_.registerParticipant(*this);
  }
  ~TestParticipant() override { engine_.unregisterParticipant(*this); }

  std::string kind() const override { return kind_; }
  std::optional<int64_t> nextPendingAt(StorageTxn&) override { return *next_; }
  Task<void> runDue(int64_t startedAt, std::optional<AlarmInvocationInfo> info) override {
    runs_->push_back(DueRun{kind_, startedAt, info.has_value(), ctx_.incarnation});
    const std::size_t index = runs_->size() - 1;
    if (*next_ && **next_ <= startedAt) next_->reset();
    if (env_ && env_->runDueMs.count(kind_)) co_await ctx_.clock.sleepFor(env_->runDueMs.at(kind_));
    (*runs_)[index].finished = ctx_.clock.now();
    if (env_ && env_->runDueThrows.count(kind_)) throw std::runtime_error("runDue of " + kind_ + " failed");
  }

 private:
  Engine& engine_;
  ObjectContext& ctx_;
  std::string kind_;
  std::optional<int64_t>* next_;
  std::vector<DueRun>* runs_;
  Env* env_;
};

Task<void> nothing() { co_return; }

class Host final : public DurableObject {
 public:
  Host(ObjectContext& context, Env* environment) : ctx(context), env(environment) {
    if (!env->build) return;
    scheduler = std::make_unique<DurabilityScheduler>(ctx, env->options);
    for (const std::string& kind : env->kinds)
      participants.push_back(
          std::make_unique<TestParticipant>(scheduler->engine(), ctx, kind, &env->next[kind], &env->runs, env));
    if (!env->handlers.empty()) {
      NamedAlarmOptions options;
      options.attemptTimeoutMs = env->attemptTimeoutMs;
      for (const auto& [name, handler] : env->handlers) {
        Handler h = handler;
        options.handlers[name] = [this, h](const DurableAlarmInfo& info) { return h(*this, info); };
      }
      alarms = std::make_unique<DurabilityAlarms>(*scheduler, std::move(options));
    }
  }

  bool hasAlarmHandler() const override { return true; }
  Task<void> alarm(const AlarmInvocationInfo& info) override {
    if (scheduler) return scheduler->alarm(info);
    return nothing();
  }
  Task<json> call(std::string_view method, const json& args) override {
    const std::string name(method);
    auto it = env->methods.find(name);
    if (it == env->methods.end()) throw std::invalid_argument("unknown method " + name);
    Method body = it->second;
    const json copy = args;
    co_return co_await body(*this, copy);
  }

  Engine& engine() { return scheduler->engine(); }
  json storedAlarm() {
    const std::optional<int64_t> alarm = ctx.storage.getAlarm();
    return alarm ? json(*alarm) : json(nullptr);
  }

  ObjectContext& ctx;
  Env* env;
  std::unique_ptr<DurabilityScheduler> scheduler;
  std::vector<std::unique_ptr<TestParticipant>> participants;
  std::unique_ptr<DurabilityAlarms> alarms;
};

json errorJson(const DurabilityError& e) { return json{{"error", e.name()}, {"message", e.what()}}; }

std::optional<int64_t> optional(const json& v) { return v.is_null() ? std::nullopt : std::optional<int64_t>(v.get<int64_t>()); }

// The standard methods every test may call.
void addMethods(Env& env) {
  env.methods["ping"] = [](Host&, const json&) -> Task<json> { co_return json::object(); };
  env.methods["alarm"] = [](Host& h, const json&) -> Task<json> { co_return h.storedAlarm(); };
  // Sets the physical alarm to args.at (absolute).
  env.methods["preset"] = [](Host& h, const json& args) -> Task<json> {
    h.ctx.storage.setAlarm(args.at("at").get<int64_t>());
    co_return h.storedAlarm();
  };
  // Sets the participants' next times (absolute or null, by kind), then runs one engine transaction
  // of `kind` (default "alarms") that asks for reconciliation and, if args.throw, then throws.
  env.methods["reconcile"] = [](Host& h, const json& args) -> Task<json> {
    const json nexts = args.value("next", json::object());
    for (const auto& [kind, value] : nexts.items()) h.env->next[kind] = optional(value);
    const std::string kind = args.value("kind", "alarms");
    const std::string_view kindView = kind;
    const bool fail = args.value("throw", false);
    const int64_t now = h.ctx.clock.now();
    json out{{"now", now}};
    try {
      co_await h.engine().transaction(kindView, [fail](EngineTxn& txn) {
        txn.reconcile();
        if (fail) throw std::runtime_error("body failed");
      });
    } catch (const std::runtime_error& e) {
      out["thrown"] = e.what();
    }
    out["alarm"] = h.storedAlarm();
    co_return out;
  };
  // Named alarms.
  env.methods["schedule"] = [](Host& h, const json& args) -> Task<json> {
    const std::string name = args.at("name").get<std::string>();
    Task<void> scheduling = h.alarms->schedule(name, h.ctx.clock.now() + args.at("in").get<int64_t>());
    co_await scheduling;
    co_return h.storedAlarm();
  };
}

// A client that only sleeps, so that the world's clock reaches the end of a run_for.
Task<void> tick(sim::World* world, SimTime ms) { co_await world->sleep_for(ms); }

// The test's environment is a base so that it outlives the rig (and every object in it).
struct EnvHolder {
  Env env;
};

struct SchedRig : EnvHolder, Rig {
  explicit SchedRig(sim::RuntimeOptions options = {}) : Rig(1, std::move(options)) {
    Env* e = &env;
    runtime.define_class(kClass, [e](ObjectContext& ctx) { return std::make_unique<Host>(ctx, e); });
    addMethods(env);
    env.kinds = {"alarms", "deliveries"};
  }
  // Runs the world for exactly `ms` (the clock ends at now + ms even if nothing happens).
  uint64_t run_for(SimTime ms) {
    world.tasks().spawn("tick", tick(&world, ms));
    return Rig::run_for(ms);
  }
  CallPtr call(const std::string& method, json args = json::object(), SimTime delay = 0, const std::string& name = "a") {
    return Rig::call(kClass, name, method, std::move(args), delay);
  }
  // Calls `method` and runs the world for `ms`; the call must succeed.
  json done(const std::string& method, json args = json::object(), SimTime delay = 0, SimTime ms = 1'000,
            const std::string& name = "a") {
    CallPtr c = call(method, std::move(args), delay, name);
    run_for(delay + ms);
    EXPECT_TRUE(c->ok) << method << ": " << c->error;
    return c->value;
  }
  std::vector<json> ev(const std::string& type, const std::string& label = kLabel) const { return events(type, label); }
  json lastReconcile(const std::string& label = kLabel) const {
    const std::vector<json> all = ev("sch.reconcile", label);
    EXPECT_FALSE(all.empty());
    return all.empty() ? json() : all.back();
  }
  int64_t commits(const std::string& label) const {
    int64_t n = 0;
    for (const json& e : sink.of("commit"))
      if (e.at("object") == label) ++n;
    return n;
  }
  int64_t durabilityTables(const std::string& name) {
    return runtime.world().stores().live(durasim::sim::object_label(kClass, name), "SELECT count(*) AS n FROM sqlite_master WHERE name LIKE 'durability%'").one().int64("n");
  }
};

// ---------------------------------------------------------------------------------------------
// Construction (scheduler.md 2)

// Tries to construct a scheduler with args' options; returns "ok" or the error.
void addConstruct(Env& env) {
  env.methods["construct"] = [](Host& h, const json& args) -> Task<json> {
    SchedulerOptions options;
    options.alarmConcurrency = args.value("alarmConcurrency", options.alarmConcurrency);
    options.alarmMinDelayMs = args.value("alarmMinDelayMs", options.alarmMinDelayMs);
    options.alarmHandoffMs = args.value("alarmHandoffMs", options.alarmHandoffMs);
    try {
      DurabilityScheduler scheduler(h.ctx, options);
      co_return json("ok");
    } catch (const DurabilityError& e) {
      co_return errorJson(e);
    }
  };
}

struct OptionsCase {
  const char* option;
  int64_t value;
  const char* message;
};

void expectRejected(const std::vector<OptionsCase>& cases) {
  for (const OptionsCase& c : cases) {
    SchedRig rig;
    rig.env.build = false;
    addConstruct(rig.env);
    const json result = rig.done("construct", json{{c.option, c.value}});
    EXPECT_EQ(result, (json{{"error", "RangeError"}, {"message", c.message}})) << c.option << " = " << c.value;
    EXPECT_EQ(rig.durabilityTables("a"), 0) << "nothing written";
    EXPECT_EQ(rig.commits(kLabel), 0) << "nothing written";
    EXPECT_FALSE(rig.status(kLabel)->stored_alarm.has_value());
    // The rejected construction left nothing attached: a valid scheduler can be built on this object.
    EXPECT_EQ(rig.done("construct"), "ok") << c.option << " = " << c.value;
  }
}

TEST(SchedulerOptions, AlarmConcurrencyMustBePositive) {
  expectRejected({{"alarmConcurrency", 0, "alarmConcurrency must be a positive integer"},
                  {"alarmConcurrency", -1, "alarmConcurrency must be a positive integer"}});
}

TEST(SchedulerOptions, AlarmMinDelayMustLieBetween1000And15000) {
  expectRejected({{"alarmMinDelayMs", 999, "alarmMinDelayMs must be between 1000 and 15000"},
                  {"alarmMinDelayMs", 500, "alarmMinDelayMs must be between 1000 and 15000"},
                  {"alarmMinDelayMs", 15001, "alarmMinDelayMs must be between 1000 and 15000"}});
}

TEST(SchedulerOptions, AlarmHandoffMustBePositive) {
  expectRejected({{"alarmHandoffMs", 0, "alarmHandoffMs must be a positive integer"},
                  {"alarmHandoffMs", -5, "alarmHandoffMs must be a positive integer"}});
}

TEST(SchedulerOptions, MinDelayBoundsAreAccepted) {
  SchedRig rig;
  rig.env.build = false;
  addConstruct(rig.env);
  EXPECT_EQ(rig.done("construct", json{{"alarmMinDelayMs", 1000}}), "ok");
  EXPECT_EQ(rig.done("construct", json{{"alarmMinDelayMs", 15000}}), "ok");
  EXPECT_EQ(rig.done("construct", json{{"alarmConcurrency", 1}, {"alarmHandoffMs", 1}}), "ok");
}

TEST(SchedulerOptions, ASecondSchedulerOnOneObjectIsATypeError) {
  SchedRig rig;
  rig.env.kinds.clear();
  addConstruct(rig.env);
  // The constructor built one; a second on the same storage is refused.
  EXPECT_EQ(rig.done("construct"),
            (json{{"error", "TypeError"}, {"message", "A DurabilityScheduler is already attached to this object"}}));
  // Another object (another storage) builds its own.
  rig.env.build = false;
  EXPECT_EQ(rig.done("construct", json::object(), 0, 1'000, "b"), "ok");
}

TEST(SchedulerOptions, AfterTheSchedulerIsDestroyedANewOneCanBeBuilt) {
  SchedRig rig;
  rig.env.kinds.clear();
  addConstruct(rig.env);
  rig.env.methods["rebuild"] = [](Host& h, const json&) -> Task<json> {
    h.scheduler.reset();
    json out = json::array();
    try {
      h.scheduler = std::make_unique<DurabilityScheduler>(h.ctx);
      out.push_back("rebuilt");
    } catch (const DurabilityError& e) {
      out.push_back(errorJson(e));
    }
    try {
      DurabilityScheduler again(h.ctx);
      out.push_back("second accepted");
    } catch (const DurabilityError& e) {
      out.push_back(e.name());
    }
    co_return out;
  };
  EXPECT_EQ(rig.done("rebuild"), (json{"rebuilt", "TypeError"}));
}

TEST(SchedulerOptions, ANewIncarnationBuildsItsSchedulerAfresh) {
  SchedRig rig;
  rig.env.kinds.clear();
  rig.env.methods["incarnation"] = [](Host& h, const json&) -> Task<json> { co_return h.ctx.incarnation; };
  EXPECT_EQ(rig.done("incarnation"), 1);
  rig.faults.arm(FaultKind::object_reset);  // the next suspension point resets the object
  rig.call("ping");
  rig.run_for(1'000);
  const std::vector<json> ends = rig.ev("incarnation.end");
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_TRUE(ends[0].at("reset").get<bool>());
  EXPECT_EQ(rig.done("incarnation"), 2) << "the second incarnation's constructor built its scheduler";
}

TEST(SchedulerParticipants, ASecondParticipantOfOneKindIsATypeErrorAndTheFirstStays) {
  SchedRig rig;
  rig.env.kinds.clear();
  rig.env.methods["attach"] = [](Host& h, const json&) -> Task<json> {
    Engine& engine = h.engine();
    std::optional<int64_t> firstNext = h.ctx.clock.now() + 40'000, secondNext = h.ctx.clock.now() + 20'000;
    std::vector<DueRun> runs;
    json out;
    auto first = std::make_unique<TestParticipant>(engine, h.ctx, "alarms", &firstNext, &runs);
    try {
      TestParticipant second(engine, h.ctx, "alarms", &secondNext, &runs);
      out["second"] = "accepted";
    } catch (const TypeError& e) {
      out["second"] = errorJson(e);
    }
    out["registered"] = engine.hasParticipant("alarms");
    co_await engine.transaction("alarms", [](EngineTxn& txn) { txn.reconcile(); });
    out["alarm"] = h.storedAlarm();
    out["first_next"] = *firstNext;
    first.reset();
    out["after_first_destroyed"] = engine.hasParticipant("alarms");
    co_return out;
  };
  const json out = rig.done("attach");
  EXPECT_EQ(out.at("second"),
            (json{{"error", "TypeError"}, {"message", "Scheduler participant \"alarms\" is already attached"}}));
  EXPECT_TRUE(out.at("registered").get<bool>());
  EXPECT_EQ(rig.lastReconcile().at("next"), out.at("first_next")) << "the first participant drives the reconcile";
  EXPECT_EQ(out.at("alarm"), out.at("first_next"));
  EXPECT_FALSE(out.at("after_first_destroyed").get<bool>()) << "the refused one was never registered";
}

// ---------------------------------------------------------------------------------------------
// Reconciliation (scheduler.md 3.2). Calls are issued from the start; one made at delay d runs at
// at(d), so a reconcile call at kAt runs at N.

constexpr SimTime kAt = 100;
constexpr int64_t N = at(kAt);
constexpr int64_t kMin = 15'000;

json next(std::optional<int64_t> alarms, std::optional<int64_t> deliveries = std::nullopt) {
  return json{{"alarms", alarms ? json(*alarms) : json()}, {"deliveries", deliveries ? json(*deliveries) : json()}};
}

TEST(SchedulerReconcile, TargetIsTheLaterOfNextAndNowPlusMinDelay) {
  SchedRig rig;
  CallPtr far = rig.call("reconcile", json{{"next", next(N + 40'000)}}, kAt, "a");
  CallPtr soon = rig.call("reconcile", json{{"next", next(N + 3'000)}}, kAt, "b");
  rig.run_for(1'000);
  ASSERT_TRUE(far->ok && soon->ok) << far->error << soon->error;
  const json a = rig.lastReconcile("Sched/a");
  ASSERT_EQ(a.at("now"), N);
  EXPECT_EQ(a.at("written"), N + 40'000) << a.dump();
  EXPECT_EQ(far->value.at("alarm"), N + 40'000);
  const json b = rig.lastReconcile("Sched/b");
  ASSERT_EQ(b.at("now"), N);
  EXPECT_EQ(b.at("next"), N + 3'000);
  EXPECT_EQ(b.at("written"), N + kMin) << b.dump();
  EXPECT_EQ(soon->value.at("alarm"), N + kMin);
}

TEST(SchedulerReconcile, AnAlarmAlreadyBetweenNextAndTargetIsNotRewritten) {
  SchedRig rig;
  // object: {preset alarm, next}: lower edge (alarm == next), upper edge (alarm == now + min), inside.
  const std::vector<std::tuple<std::string, int64_t, int64_t>> cases = {
      {"a", N + 5'000, N + 5'000}, {"b", N + kMin, N + 2'000}, {"c", N + 9'000, N + 4'000}};
  std::vector<CallPtr> calls;
  for (const auto& [name, alarm, due] : cases) {
    calls.push_back(rig.call("preset", json{{"at", alarm}}, 0, name));
    calls.push_back(rig.call("reconcile", json{{"next", next(due)}}, kAt, name));
  }
  rig.run_for(1'000);
  for (const CallPtr& c : calls) ASSERT_TRUE(c->ok) << c->error;
  for (const auto& [name, alarm, due] : cases) {
    const std::string label = std::string(kClass) + "/" + name;
    const json r = rig.lastReconcile(label);
    ASSERT_EQ(r.at("now"), N);
    EXPECT_EQ(r.at("next"), due) << label;
    EXPECT_EQ(r.at("before"), alarm) << label;
    EXPECT_TRUE(r.at("written").is_null()) << label << ": " << r.dump();
    EXPECT_EQ(rig.status(label)->stored_alarm, alarm) << label;
  }
}

TEST(SchedulerReconcile, AnAlarmLaterThanTheTargetIsPulledIn) {
  SchedRig rig;
  rig.call("preset", json{{"at", N + kMin + 1}});
  CallPtr c = rig.call("reconcile", json{{"next", next(N + 1'000)}}, kAt);
  rig.run_for(1'000);
  ASSERT_TRUE(c->ok) << c->error;
  const json r = rig.lastReconcile();
  ASSERT_EQ(r.at("now"), N);
  EXPECT_EQ(r.at("before"), N + kMin + 1);
  EXPECT_EQ(r.at("written"), N + kMin);
  EXPECT_EQ(c->value.at("alarm"), N + kMin);
}

TEST(SchedulerReconcile, AnAlarmEarlierThanNextIsPushedToTheTarget) {
  SchedRig rig;
  rig.call("preset", json{{"at", N + 7'999}});
  CallPtr c = rig.call("reconcile", json{{"next", next(N + 8'000)}}, kAt);
  rig.run_for(1'000);
  ASSERT_TRUE(c->ok) << c->error;
  const json r = rig.lastReconcile();
  ASSERT_EQ(r.at("now"), N);
  EXPECT_EQ(r.at("before"), N + 7'999);
  EXPECT_EQ(r.at("written"), N + kMin);
  EXPECT_EQ(c->value.at("alarm"), N + kMin);
}

TEST(SchedulerReconcile, NothingPendingDeletesTheAlarm) {
  SchedRig rig;
  rig.call("preset", json{{"at", N + 30'000}});
  CallPtr c = rig.call("reconcile", json{{"next", next(std::nullopt, std::nullopt)}}, kAt);
  rig.run_for(1'000);
  ASSERT_TRUE(c->ok) << c->error;
  const json r = rig.lastReconcile();
  EXPECT_EQ(r.at("before"), N + 30'000);
  EXPECT_TRUE(r.at("next").is_null());
  EXPECT_TRUE(r.at("deleted").get<bool>());
  EXPECT_TRUE(c->value.at("alarm").is_null());
  EXPECT_FALSE(rig.status(kLabel)->stored_alarm.has_value());
}

TEST(SchedulerReconcile, ATransactionWhoseBodyThrowsChangesNeitherTheAlarmNorTheTimer) {
  SchedRig rig;
  rig.call("preset", json{{"at", N + 60'000}});
  // Without the throw this would write now + min and arm an early timer for N + 500.
  CallPtr c = rig.call("reconcile", json{{"next", next(N + 500)}, {"throw", true}}, kAt);
  rig.run_for(5'000);
  ASSERT_TRUE(c->ok) << c->error;
  EXPECT_EQ(c->value.at("thrown"), "body failed");
  EXPECT_EQ(c->value.at("alarm"), N + 60'000);
  EXPECT_EQ(rig.status(kLabel)->stored_alarm, N + 60'000);
  EXPECT_TRUE(rig.ev("sch.timer.arm").empty());
  EXPECT_TRUE(rig.ev("sch.reconcile.durable").empty());
  EXPECT_TRUE(rig.env.runs.empty()) << "nothing ran early";
}

TEST(SchedulerReconcile, TheMinimumOverAllParticipantsDrivesTheAlarm) {
  SchedRig rig;
  CallPtr a = rig.call("reconcile", json{{"next", next(N + 40'000, N + 20'000)}}, kAt, "a");
  CallPtr b = rig.call("reconcile", json{{"next", next(N + 20'000, N + 40'000)}, {"kind", "deliveries"}}, kAt, "b");
  rig.run_for(1'000);
  ASSERT_TRUE(a->ok && b->ok);
  for (const std::string label : {"Sched/a", "Sched/b"}) {
    const json r = rig.lastReconcile(label);
    ASSERT_EQ(r.at("now"), N) << label;
    EXPECT_EQ(r.at("next"), N + 20'000) << label;
    EXPECT_EQ(r.at("written"), N + 20'000) << label;
  }
}

// hazards.md H-A: with the variant, a reconcile only sees the requesting kind's rows, so one kind's
// transaction deletes the alarm another kind still needs.
TEST(SchedulerReconcile, TheOwnKindOnlyVariantIgnoresOtherParticipants) {
  sim::RuntimeOptions options;
  options.variants = {std::string(variants::kReconcileOwnKindOnly)};
  SchedRig rig(options);
  CallPtr first = rig.call("reconcile", json{{"next", next(std::nullopt, N + 20'000)}, {"kind", "deliveries"}}, kAt);
  rig.run_for(500);
  ASSERT_TRUE(first->ok) << first->error;
  EXPECT_EQ(first->value.at("alarm"), N + 20'000);
  // An alarms transaction with no alarm rows pending deletes the deliveries' wake-up.
  CallPtr second = rig.call("reconcile", json{{"kind", "alarms"}});
  rig.run_for(500);
  ASSERT_TRUE(second->ok) << second->error;
  const json r = rig.lastReconcile();
  EXPECT_TRUE(r.at("next").is_null()) << r.dump();
  EXPECT_TRUE(r.at("deleted").get<bool>());
  EXPECT_TRUE(second->value.at("alarm").is_null()) << "the pending delivery has no alarm left (the hazard)";
  EXPECT_EQ(rig.env.next["deliveries"], N + 20'000);
  // A deliveries transaction ignores a sooner alarms row.
  const int64_t now = rig.world.now() + 1;
  CallPtr third = rig.call("reconcile", json{{"next", next(now + 16'000, now + 40'000)}, {"kind", "deliveries"}});
  rig.run_for(500);
  ASSERT_TRUE(third->ok) << third->error;
  EXPECT_EQ(rig.lastReconcile().at("next"), now + 40'000);
  EXPECT_EQ(third->value.at("alarm"), now + 40'000);
}

TEST(SchedulerReconcile, RepeatedRequestsOnOneEngineTransactionReconcileOnce) {
  SchedRig rig;
  rig.env.methods["twice"] = [](Host& h, const json&) -> Task<json> {
    h.env->next["alarms"] = h.ctx.clock.now() + 40'000;
    co_await h.engine().transaction("alarms", [](EngineTxn& txn) {
      txn.reconcile();
      txn.reconcile();
    });
    co_return h.storedAlarm();
  };
  const json alarm = rig.done("twice");
  EXPECT_EQ(rig.ev("sch.reconcile").size(), 1u);
  EXPECT_EQ(rig.ev("sch.reconcile.durable").size(), 1u);
  EXPECT_EQ(alarm, at(0) + 40'000);
}

TEST(SchedulerReconcile, RepeatedReconcileWithinOneApplicationTransactionReconcilesOnce) {
  SchedRig rig;
  rig.env.methods["within"] = [](Host& h, const json&) -> Task<json> {
    h.env->next["alarms"] = h.ctx.clock.now() + 40'000;
    Engine* engine = &h.engine();
    co_await h.ctx.storage.transaction([engine](StorageTxn& txn) {
      engine->reconcileWithin(txn, "alarms");
      engine->reconcileWithin(txn, "alarms");
    });
    co_return h.storedAlarm();
  };
  const json alarm = rig.done("within");
  EXPECT_EQ(rig.ev("sch.reconcile").size(), 1u);
  EXPECT_EQ(rig.ev("sch.reconcile.durable").size(), 1u);
  EXPECT_EQ(alarm, at(0) + 40'000);
}

// ---------------------------------------------------------------------------------------------
// Early timer (scheduler.md 3.3)

TEST(SchedulerEarlyTimer, ArmedAfterTheCommitOnlyWhenNextIsSoonerThanMinDelay) {
  SchedRig rig;
  rig.faults.set_latency(LatencyKind::confirm, 40);
  rig.call("reconcile", json{{"next", next(N + 5'000)}}, kAt, "a");
  rig.call("reconcile", json{{"next", next(N + 20'000)}}, kAt, "b");
  rig.call("reconcile", json{{"next", next(std::nullopt)}}, kAt, "c");
  rig.run_for(1'000);
  const std::vector<json> arms = rig.ev("sch.timer.arm", "Sched/a");
  ASSERT_EQ(arms.size(), 1u);
  EXPECT_EQ(arms[0].at("next"), N + 5'000);
  const json r = rig.lastReconcile("Sched/a");
  EXPECT_EQ(arms[0].at("t").get<int64_t>(), r.at("t").get<int64_t>() + 40) << "armed when the commit was confirmed";
  EXPECT_TRUE(rig.ev("sch.timer.arm", "Sched/b").empty()) << "next >= now + min: the physical alarm suffices";
  EXPECT_TRUE(rig.ev("sch.timer.arm", "Sched/c").empty());
  EXPECT_EQ(rig.ev("sch.reconcile", "Sched/b").size(), 1u);
  EXPECT_EQ(rig.ev("sch.reconcile", "Sched/c").size(), 1u);
}

TEST(SchedulerEarlyTimer, FiresNoEarlierThanNext) {
  SchedRig rig;
  const int64_t due = N + 700;
  rig.call("reconcile", json{{"next", next(std::nullopt, due)}}, kAt);
  rig.run_for(5'000);
  const std::vector<json> fires = rig.ev("sch.timer.fire");
  ASSERT_EQ(fires.size(), 1u);
  EXPECT_GE(fires[0].at("t").get<int64_t>(), due);
  EXPECT_LE(fires[0].at("t").get<int64_t>(), due + 5);
  ASSERT_EQ(rig.env.runs.size(), 2u) << "both participants' runDue";
  for (const DueRun& run : rig.env.runs) {
    EXPECT_GE(run.startedAt, due);
    EXPECT_FALSE(run.platform) << "run by the timer, not the physical alarm";
  }
  EXPECT_FALSE(rig.env.next["deliveries"].has_value());
}

TEST(SchedulerEarlyTimer, AReconcileWithADifferentNextCancelsIt) {
  SchedRig rig;
  rig.call("reconcile", json{{"next", next(N + 3'000)}}, kAt);
  rig.call("reconcile", json{{"next", next(N + 5'000)}}, kAt + 100);
  rig.run_for(10'000);
  const std::vector<json> cancels = rig.ev("sch.timer.cancel");
  ASSERT_EQ(cancels.size(), 1u);
  EXPECT_EQ(cancels[0].at("next"), N + 3'000);
  const std::vector<json> fires = rig.ev("sch.timer.fire");
  ASSERT_EQ(fires.size(), 1u);
  EXPECT_EQ(fires[0].at("next"), N + 5'000);
  EXPECT_GE(fires[0].at("t").get<int64_t>(), N + 5'000);
  ASSERT_FALSE(rig.env.runs.empty());
  EXPECT_GE(rig.env.runs.front().startedAt, N + 5'000) << "nothing ran at the cancelled time";
}

TEST(SchedulerEarlyTimer, AReconcileWithTheSameNextKeepsIt) {
  SchedRig rig;
  rig.call("reconcile", json{{"next", next(N + 3'000)}}, kAt);
  rig.call("reconcile", json{{"next", next(N + 3'000)}}, kAt + 100);
  rig.run_for(10'000);
  EXPECT_EQ(rig.ev("sch.reconcile.durable").front().at("next"), N + 3'000);
  EXPECT_EQ(rig.ev("sch.reconcile.durable").at(1).at("next"), N + 3'000);
  EXPECT_EQ(rig.ev("sch.timer.arm").size(), 1u);
  EXPECT_TRUE(rig.ev("sch.timer.cancel").empty());
  EXPECT_EQ(rig.ev("sch.timer.fire").size(), 1u);
}

TEST(SchedulerEarlyTimer, AReconcileWithNothingPendingCancelsIt) {
  SchedRig rig;
  rig.call("reconcile", json{{"next", next(N + 3'000)}}, kAt);
  rig.call("reconcile", json{{"next", next(std::nullopt)}}, kAt + 100);
  rig.run_for(10'000);
  ASSERT_EQ(rig.ev("sch.timer.arm").size(), 1u);
  EXPECT_EQ(rig.ev("sch.timer.cancel").size(), 1u);
  EXPECT_TRUE(rig.ev("sch.timer.fire").empty());
  EXPECT_TRUE(rig.env.runs.empty());
}

TEST(SchedulerEarlyTimer, AFailedRunOfTheTimerIsLogged) {
  SchedRig rig;
  rig.env.runDueThrows = {"alarms"};
  rig.call("reconcile", json{{"next", next(N + 300)}}, kAt);
  rig.run_for(2'000);
  ASSERT_EQ(rig.ev("sch.timer.fire").size(), 1u);
  std::vector<json> logged;
  for (const json& e : rig.ev("log"))
    if (e.at("event") == "durability.background_execution.failed") logged.push_back(e);
  ASSERT_EQ(logged.size(), 1u);
  EXPECT_EQ(logged[0].at("t"), N + 300);
  EXPECT_NE(logged[0].at("fields").dump().find("runDue of alarms failed"), std::string::npos) << logged[0].dump();
}

TEST(SchedulerEarlyTimer, IsLostOnResetAndThePhysicalAlarmRunsTheWorkWithinMinDelay) {
  SchedRig rig;
  const int64_t due = N + 3'000;
  rig.call("reconcile", json{{"next", next(std::nullopt, due)}}, kAt);
  rig.run_for(kAt + 100);
  ASSERT_EQ(rig.ev("sch.timer.arm").size(), 1u);
  rig.faults.arm(FaultKind::object_reset);  // the next suspension point resets the object
  rig.call("ping");
  rig.run_for(60'000);
  const std::vector<json> ends = rig.ev("incarnation.end");
  ASSERT_FALSE(ends.empty());
  EXPECT_TRUE(ends[0].at("reset").get<bool>());
  EXPECT_LT(ends[0].at("t").get<int64_t>(), due);
  EXPECT_TRUE(rig.ev("sch.timer.fire").empty()) << "the timer died with the incarnation";
  ASSERT_FALSE(rig.env.runs.empty());
  const DueRun& run = rig.env.runs.front();
  EXPECT_TRUE(run.platform);
  EXPECT_EQ(run.incarnation, 2);
  EXPECT_GE(run.startedAt, due);
  EXPECT_LE(run.startedAt, due + kMin);
  EXPECT_FALSE(rig.env.next["deliveries"].has_value()) << "the work ran";
}

// ---------------------------------------------------------------------------------------------
// The alarm entry point (scheduler.md 3.4)

TEST(SchedulerAlarm, AfterTheParticipantsFinishTheAlarmIsReconciledForTheRemainingWork) {
  SchedRig rig;
  rig.call("reconcile", json{{"next", next(N + 20'000, N + 500'000)}}, kAt);
  rig.run_for(30'000);
  ASSERT_EQ(rig.env.runs.size(), 2u);
  EXPECT_TRUE(rig.env.runs[0].platform);
  EXPECT_FALSE(rig.env.next["alarms"].has_value());
  // Without the final reconcile the platform would have deleted the alarm after the handler.
  EXPECT_EQ(rig.status(kLabel)->stored_alarm, N + 500'000);
  EXPECT_EQ(rig.lastReconcile().at("next"), N + 500'000);
  EXPECT_EQ(rig.ev("sch.alarm.end").size(), 1u);
}

TEST(SchedulerAlarm, AFailingParticipantFailsTheAlarmAfterTheOthersFinish) {
  SchedRig rig;
  rig.env.runDueThrows = {"alarms"};
  rig.env.runDueMs = {{"deliveries", 400}};
  rig.call("reconcile", json{{"next", next(N + 20'000)}}, kAt);
  rig.run_for(20'600);
  ASSERT_EQ(rig.env.runs.size(), 2u);
  const DueRun& slow = rig.env.runs[0].kind == "deliveries" ? rig.env.runs[0] : rig.env.runs[1];
  ASSERT_EQ(slow.finished, slow.startedAt + 400);
  const std::vector<json> failures = rig.ev("alarm.failure");
  ASSERT_EQ(failures.size(), 1u) << "the platform sees the invocation fail and will retry it";
  EXPECT_GE(failures[0].at("t").get<int64_t>(), slow.finished);
  EXPECT_TRUE(rig.ev("sch.alarm.end").empty());
}

// ---------------------------------------------------------------------------------------------
// Permits (scheduler.md 3.5)

TEST(SchedulerPermits, TryAcquireSucceedsWhileOneIsFreeAndFailsWhenExhausted) {
  SchedRig rig;
  rig.env.options.alarmConcurrency = 2;
  rig.env.methods["try"] = [](Host& h, const json&) -> Task<json> {
    Engine& e = h.engine();
    json out;
    std::optional<Permit> a = e.tryAcquirePermit();
    std::optional<Permit> b = e.tryAcquirePermit();
    std::optional<Permit> c = e.tryAcquirePermit();
    out["got"] = json{a.has_value() && a->held(), b.has_value() && b->held(), c.has_value()};
    out["free"] = e.freePermits();
    a->release();
    std::optional<Permit> d = e.tryAcquirePermit();
    out["after_release"] = d.has_value();
    co_return out;
  };
  const json out = rig.done("try");
  EXPECT_EQ(out.at("got"), (json{true, true, false}));
  EXPECT_EQ(out.at("free"), 0);
  EXPECT_TRUE(out.at("after_release").get<bool>());
}

struct Granted {
  std::vector<int> order;
  std::vector<int64_t> times;
};

Task<void> waiter(Engine* engine, Clock* clock, int index, Granted* granted, int64_t holdMs) {
  Permit permit = co_await engine->acquirePermit();
  granted->order.push_back(index);
  granted->times.push_back(clock->now());
  co_await clock->sleepFor(holdMs);
}

TEST(SchedulerPermits, WaitersAreGrantedInArrivalOrder) {
  SchedRig rig;
  rig.env.options.alarmConcurrency = 1;
  rig.env.methods["fifo"] = [](Host& h, const json&) -> Task<json> {
    Engine& e = h.engine();
    Granted granted;
    std::optional<Permit> held = e.tryAcquirePermit();
    for (int i = 0; i < 3; ++i) {
      h.ctx.waitUntil(waiter(&e, &h.ctx.clock, i, &granted, 10));
      co_await h.ctx.clock.sleepFor(5);  // each waiter queues before the next starts
    }
    const bool noneBeforeRelease = granted.order.empty();
    held->release();
    co_await h.ctx.clock.sleepFor(200);
    co_return json{{"none_before_release", noneBeforeRelease}, {"order", granted.order}, {"free", e.freePermits()}};
  };
  const json out = rig.done("fifo");
  EXPECT_TRUE(out.at("none_before_release").get<bool>());
  EXPECT_EQ(out.at("order"), (json{0, 1, 2}));
  EXPECT_EQ(out.at("free"), 1);
}

TEST(SchedulerPermits, ReleaseActsOnceAndFreeNeverExceedsTheConcurrency) {
  SchedRig rig;
  rig.env.options.alarmConcurrency = 2;
  rig.env.methods["release"] = [](Host& h, const json&) -> Task<json> {
    Engine& e = h.engine();
    json out;
    {
      std::optional<Permit> p = e.tryAcquirePermit();
      p->release();
      p->release();
      out["after_two_releases"] = e.freePermits();
      Permit moved = std::move(*p);
      p.reset();  // destructor after release
      out["after_destructors"] = e.freePermits();
    }
    out["after_scope"] = e.freePermits();
    // With waiters: a second release must not hand a second permit over.
    std::optional<Permit> only = e.tryAcquirePermit();
    std::optional<Permit> other = e.tryAcquirePermit();
    Granted granted;
    h.ctx.waitUntil(waiter(&e, &h.ctx.clock, 0, &granted, 50));
    co_await h.ctx.clock.sleepFor(5);
    h.ctx.waitUntil(waiter(&e, &h.ctx.clock, 1, &granted, 50));
    co_await h.ctx.clock.sleepFor(5);
    only->release();
    only->release();
    only.reset();
    co_await h.ctx.clock.sleepFor(5);
    out["granted_after_double_release"] = granted.order.size();
    other.reset();
    co_await h.ctx.clock.sleepFor(500);
    out["granted_at_end"] = granted.order.size();
    out["free_at_end"] = e.freePermits();
    co_return out;
  };
  const json out = rig.done("release");
  EXPECT_EQ(out.at("after_two_releases"), 2);
  EXPECT_EQ(out.at("after_destructors"), 2);
  EXPECT_EQ(out.at("after_scope"), 2);
  EXPECT_EQ(out.at("granted_after_double_release"), 1);
  EXPECT_EQ(out.at("granted_at_end"), 2);
  EXPECT_EQ(out.at("free_at_end"), 2);
}

struct Concurrency {
  int64_t running = 0, maxRunning = 0;
  std::vector<std::size_t> started;
  std::size_t finished = 0;
};

TEST(SchedulerPermits, RunConcurrentBoundsWorkersRunsEveryIndexAndRethrowsTheFirstErrorAtTheEnd) {
  SchedRig rig;
  rig.env.options.alarmConcurrency = 3;
  rig.env.methods["concurrent"] = [](Host& h, const json& args) -> Task<json> {
    Engine& e = h.engine();
    Concurrency state;
    const std::size_t count = args.at("count").get<std::size_t>();
    Clock* clock = &h.ctx.clock;
    Concurrency* st = &state;
    std::function<Task<void>(std::size_t)> worker = [st, clock](std::size_t i) -> Task<void> {
      static const int64_t kDurations[] = {30, 10, 5, 20, 15, 40, 25, 5, 10, 35};
      st->started.push_back(i);
      st->maxRunning = std::max(st->maxRunning, ++st->running);
      co_await clock->sleepFor(kDurations[i % 10]);
      --st->running;
      ++st->finished;
      if (i == 2) throw std::runtime_error("item 2 failed");
      if (i == 6) throw std::runtime_error("item 6 failed");
    };
    json out;
    Task<void> run = e.runConcurrent(count, worker);
    try {
      co_await run;
      out["error"] = nullptr;
    } catch (const std::runtime_error& err) {
      out["error"] = err.what();
    }
    out["finished_when_done"] = state.finished;
    out["max"] = state.maxRunning;
    std::vector<std::size_t> sorted = state.started;
    std::sort(sorted.begin(), sorted.end());
    out["started"] = sorted;
    co_return out;
  };
  const json ten = rig.done("concurrent", json{{"count", 10}});
  EXPECT_EQ(ten.at("max"), 3);
  EXPECT_EQ(ten.at("started"), (json{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}));
  EXPECT_EQ(ten.at("finished_when_done"), 10) << "the error waits for every worker";
  EXPECT_EQ(ten.at("error"), "item 2 failed");
  const json two = rig.done("concurrent", json{{"count", 2}});
  EXPECT_EQ(two.at("max"), 2);
  EXPECT_EQ(two.at("started"), (json{0, 1}));
  EXPECT_TRUE(two.at("error").is_null());
}

// ---------------------------------------------------------------------------------------------
// Handoff (scheduler.md 3.4)

constexpr int64_t kHandoff = 5'000;
constexpr int64_t kShortMin = 1'000;

// A scheduler with a short handoff and a named alarm "slow" whose handler runs 20 s.
void slowAlarm(SchedRig& rig) {
  rig.env.kinds.clear();
  rig.env.options.alarmHandoffMs = kHandoff;
  rig.env.options.alarmMinDelayMs = kShortMin;
  rig.env.attemptTimeoutMs = 60'000;
  rig.env.handlers["slow"] = [](Host& h, const DurableAlarmInfo&) -> Task<void> { co_await h.ctx.clock.sleepFor(20'000); };
  rig.env.handlers["other"] = [](Host&, const DurableAlarmInfo&) -> Task<void> { co_return; };
}

TEST(SchedulerHandoff, AlarmReturnsAtTheHandoffAndArmsTheAlarmWithinMinDelay) {
  SchedRig rig;
  slowAlarm(rig);
  rig.done("schedule", json{{"name", "slow"}, {"in", 2'000}}, 0, 7'500);
  const int64_t fired = at(0) + 2'000;
  const std::vector<json> starts = rig.ev("sch.alarm.start");
  ASSERT_FALSE(starts.empty());
  EXPECT_EQ(starts[0].at("t"), fired);
  EXPECT_TRUE(starts[0].at("platform").get<bool>());
  const std::vector<json> handoffs = rig.ev("sch.handoff");
  ASSERT_EQ(handoffs.size(), 1u);
  const json& h = handoffs[0];
  EXPECT_EQ(h.at("now"), fired + kHandoff);
  EXPECT_TRUE(h.at("before").is_null()) << h.dump();
  EXPECT_EQ(h.at("written"), fired + kHandoff + kShortMin);
  // The platform's invocation ended at the handoff, successfully, while the handler still runs.
  const std::vector<json> successes = rig.ev("alarm.success");
  ASSERT_EQ(successes.size(), 1u);
  EXPECT_LE(successes[0].at("t").get<int64_t>(), fired + kHandoff + 5);
  EXPECT_TRUE(rig.ev("alm.handler.end").empty());
  EXPECT_EQ(rig.status(kLabel)->stored_alarm, fired + kHandoff + kShortMin);
}

TEST(SchedulerHandoff, AnEarlierExistingAlarmIsKept) {
  SchedRig rig;
  slowAlarm(rig);
  rig.done("schedule", json{{"name", "slow"}, {"in", 2'000}}, 0, 3'000);
  const int64_t fired = at(0) + 2'000;
  // During the run, another schedule reconciles: "slow" is still due, so the alarm goes to now + min.
  const json set = rig.done("schedule", json{{"name", "other"}, {"in", 100'000}}, 0, 5'000);
  ASSERT_TRUE(set.is_number());
  const int64_t earlier = set.get<int64_t>();
  ASSERT_LT(earlier, fired + kHandoff);
  const std::vector<json> handoffs = rig.ev("sch.handoff");
  ASSERT_GE(handoffs.size(), 1u);
  const json& h = handoffs[0];
  EXPECT_EQ(h.at("now"), fired + kHandoff);
  EXPECT_EQ(h.at("before"), earlier) << h.dump();
  EXPECT_TRUE(h.at("written").is_null()) << "an alarm at or before now + min is kept";
  EXPECT_LE(earlier, h.at("now").get<int64_t>() + kShortMin);
}

TEST(SchedulerHandoff, ALaterPassDoesNotInvokeTheRunningHandlerAgain) {
  SchedRig rig;
  slowAlarm(rig);
  rig.done("schedule", json{{"name", "slow"}, {"in", 2'000}}, 0, 60'000);
  EXPECT_GE(rig.ev("sch.alarm.start").size(), 3u) << "later passes ran while the handler was running";
  EXPECT_GE(rig.ev("sch.handoff").size(), 2u);
  EXPECT_EQ(rig.ev("alm.invoke").size(), 1u);
  EXPECT_EQ(rig.ev("alm.claim").size(), 1u);
  ASSERT_EQ(rig.ev("alm.handler.end").size(), 1u);
  EXPECT_EQ(rig.runtime.world().stores().live(durasim::sim::object_label(kClass, "a"), "SELECT count(*) AS n FROM durability_alarms").one().int64("n"), 0);
  EXPECT_FALSE(rig.status(kLabel)->stored_alarm.has_value());
}

// ---------------------------------------------------------------------------------------------
// scheduleNextAlarm (scheduler.md 3.2)

TEST(SchedulerCoalescing, TwoConcurrentScheduleNextAlarmCallsShareOneTransaction) {
  SchedRig rig;
  rig.env.methods["refresh"] = [](Host& h, const json& args) -> Task<json> {
    Engine& e = h.engine();
    std::vector<Task<void>> calls;
    for (int64_t i = 0; i < args.at("calls").get<int64_t>(); ++i) calls.push_back(e.scheduleNextAlarm());
    Task<void> all = when_all(std::move(calls));
    co_await all;
    co_return h.storedAlarm();
  };
  rig.env.next["alarms"] = kStart + 100'000;
  const json alarm = rig.done("refresh", json{{"calls", 2}});
  EXPECT_EQ(alarm, kStart + 100'000);
  EXPECT_EQ(rig.ev("sch.reconcile").size(), 1u);
  EXPECT_EQ(rig.ev("sch.reconcile.durable").size(), 1u);
  // Once it finished, the next call runs a transaction of its own.
  rig.done("refresh", json{{"calls", 1}});
  EXPECT_EQ(rig.ev("sch.reconcile").size(), 2u);
}

// A refresh in flight read the rows before a later engine transaction changed them: a caller
// after that change must not join it, or the alarm would follow rows that no longer exist (alarms
// seed 9159 lost its alarm this way once the platform's deferred delete followed).
TEST(SchedulerCoalescing, ACallAfterAChangeDoesNotJoinARefreshThatReadTheOldRows) {
  SchedRig rig;
  rig.faults.set_latency(LatencyKind::confirm, 50);
  rig.env.methods["refresh_then_change"] = [](Host& h, const json& args) -> Task<json> {
    Engine& e = h.engine();
    Env* env = h.env;
    Task<void> first = e.scheduleNextAlarm();  // reconciles with the rows as they are now
    Task<void> changeAndRefresh = [](Engine& engine, Env* env, int64_t moved) -> Task<void> {
      co_await engine.transaction("alarms", [env, moved](EngineTxn&) { env->next["alarms"] = moved; });
      co_await engine.scheduleNextAlarm();
    }(e, env, args.at("moved").get<int64_t>());
    std::vector<Task<void>> both;
    both.push_back(std::move(first));
    both.push_back(std::move(changeAndRefresh));
    Task<void> all = when_all(std::move(both));
    co_await all;
    co_return h.storedAlarm();
  };
  rig.env.next["alarms"] = kStart + 100'000;
  const json alarm = rig.done("refresh_then_change", json{{"moved", kStart + 200'000}});
  EXPECT_EQ(alarm, kStart + 200'000) << "the alarm follows the rows as the second caller left them";
  EXPECT_EQ(rig.ev("sch.reconcile").size(), 2u);
}

}  // namespace
}  // namespace durasim::rt_test
