// Model-based property (RapidCheck rc::state, suite AlarmsModelState): random schedule / replace /
// cancel / purge / advance / crash sequences run against the real scheduler and named alarms on the
// simulated runtime and against model/alarms_model.h, compared after every command.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <cstdint>
#include <deque>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/alarms.h"
#include "engine/errors.h"
#include "engine/scheduler.h"
#include "model/alarms_model.h"
#include "tests/model_property.h"
#include "tests/runtime_test_harness.h"

namespace durasim {
namespace {

using namespace rt_test;
using model::AlarmRow;
using model::AlarmsModel;
using model::AlarmStatus;
using model::ErrorKind;

constexpr const char* kClass = "ModelAlarms";
constexpr const char* kObject = "a";
const std::string kLabel = std::string(kClass) + "/" + kObject;

constexpr int64_t kMinDelayMs = 3'000;       // alarmMinDelayMs
constexpr int64_t kLongRunMs = 5'000;        // "long" sleeps this long, then succeeds
constexpr int64_t kLongTimeoutMs = 600'000;  // far above its run time: it never times out
constexpr int64_t kFlakyDelayMs = 2'000;     // below the minimum delay: retries ride the early timer
constexpr int64_t kFailDelayMs = 4'000;      // above it: retries ride the physical alarm
constexpr int64_t kFailMaxAttempts = 3;
constexpr int64_t kFlakyFailures = 2;  // "flaky" fails its first two attempts
// A due row is taken up within the minimum delay, later only while a handler of the same name or
// the physical alarm's run is busy with a long handler (checked while no reset has happened: after
// a reset the runtime's own alarm backoff applies, which the final drain covers).
constexpr int64_t kPickupSlackMs = kMinDelayMs + 2 * kLongRunMs;
constexpr int64_t kSearchMs = 60'000;  // how far CrashDuringHandler looks for a long run
constexpr int64_t kDrainMs = 600'000;  // final drain; exceeds the runtime's alarm backoff after resets
constexpr int kMaxCommands = 25;
constexpr int kDefaultCases = 200;  // RC_PARAMS="max_success=N" overrides

// ---------------------------------------------------------------------------------------------
// The application: one object, a handful of names whose handler behaviour is a function of
// (name, attempt) that the test's model side knows too.

enum class Behaviour { succeed, flaky, alwaysFail, nonRetryable, badPolicy, longRun };
struct NamedBehaviour {
  const char* name;
  Behaviour behaviour;
};
const std::vector<NamedBehaviour>& alarmNames() {
  static const std::vector<NamedBehaviour> names = {
      {"ok", Behaviour::succeed},          {"flaky", Behaviour::flaky},         {"fail", Behaviour::alwaysFail},
      {"poison", Behaviour::nonRetryable}, {"badpolicy", Behaviour::badPolicy}, {"long", Behaviour::longRun}};
  return names;
}
const std::string kLongName = "long";

Behaviour behaviourOf(const std::string& name) {
  for (const NamedBehaviour& n : alarmNames())
    if (name == n.name) return n.behaviour;
  throw std::invalid_argument("unknown alarm name " + name);
}

// How attempt `attempt` of `name` ends: nullopt when the handler returns, else how it throws.
std::optional<ErrorKind> failureOf(const std::string& name, int64_t attempt) {
  switch (behaviourOf(name)) {
    case Behaviour::succeed:
    case Behaviour::longRun:
      return std::nullopt;
    case Behaviour::flaky:
      if (attempt <= kFlakyFailures) return ErrorKind::retryable;
      return std::nullopt;
    case Behaviour::alwaysFail:
    case Behaviour::badPolicy:
      return ErrorKind::retryable;
    case Behaviour::nonRetryable:
      return ErrorKind::nonRetryable;
  }
  return std::nullopt;
}

double fixed(double ms) { return ms; }
double invalidDelay(int64_t) { return std::numeric_limits<double>::quiet_NaN(); }

class ModelApp final : public DurableObject {
 public:
  explicit ModelApp(ObjectContext& ctx)
      : ctx_(ctx), scheduler_(ctx, schedulerOptions()), alarms_(scheduler_, alarmOptions()) {}

  bool hasAlarmHandler() const override { return true; }
  Task<void> alarm(const AlarmInvocationInfo& info) override { return scheduler_.alarm(info); }

  Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) override {
    // Named locals only: no temporary with a destructor may sit inside a co_await (g++ 12).
    if (method == "schedule") {
      const std::string name = args.at("name").get<std::string>();
      const int64_t at = args.at("at").get<int64_t>();
      Task<void> scheduling = alarms_.schedule(name, at);
      co_await scheduling;
      co_return nlohmann::json::object();
    }
    if (method == "cancel") {
      const std::string name = args.at("name").get<std::string>();
      Task<bool> cancelling = alarms_.cancel(name);
      const bool deleted = co_await cancelling;
      co_return nlohmann::json{{"deleted", deleted}};
    }
    if (method == "purge") {
      const int64_t before = args.at("before").get<int64_t>();
      const int64_t count = co_await alarms_.purgeBefore(before);
      co_return nlohmann::json{{"count", count}};
    }
    if (method == "ping") co_return nlohmann::json::object();
    throw std::invalid_argument("unknown method");
  }

 private:
  static SchedulerOptions schedulerOptions() {
    SchedulerOptions options;
    options.alarmMinDelayMs = kMinDelayMs;
    return options;
  }

  NamedAlarmOptions alarmOptions() {
    NamedAlarmOptions options;
    for (const NamedBehaviour& n : alarmNames()) {
      options.handlers[n.name] = [this](const DurableAlarmInfo& info) { return handle(info); };
      AlarmMethodOptions method;
      switch (n.behaviour) {
        case Behaviour::flaky:
          method.retries = RetryOptions{[](int64_t) { return fixed(kFlakyDelayMs); }, std::nullopt};
          break;
        case Behaviour::alwaysFail:
          method.retries = RetryOptions{[](int64_t) { return fixed(kFailDelayMs); }, kFailMaxAttempts};
          break;
        case Behaviour::badPolicy:
          method.retries = RetryOptions{invalidDelay, std::nullopt};
          break;
        case Behaviour::longRun:
          method.attemptTimeoutMs = kLongTimeoutMs;
          break;
        default:
          continue;
      }
      options.methods[n.name] = method;
    }
    return options;
  }

  Task<void> handle(DurableAlarmInfo info) {
    if (behaviourOf(info.name) == Behaviour::longRun) co_await ctx_.clock.sleepFor(kLongRunMs);
    const std::optional<ErrorKind> failure = failureOf(info.name, info.attempt);
    if (!failure) co_return;
    if (*failure == ErrorKind::nonRetryable) throw NonRetryableError("never retried");
    throw std::runtime_error("handler failed");
  }

  ObjectContext& ctx_;
  DurabilityScheduler scheduler_;
  DurabilityAlarms alarms_;
};

// The same policies, as the model knows them.
void setModelPolicies(AlarmsModel& m) {
  model::AlarmPolicy flaky;
  flaky.delay = [](int64_t) { return fixed(kFlakyDelayMs); };
  m.setPolicy("flaky", flaky);
  model::AlarmPolicy fail;
  fail.maxAttempts = kFailMaxAttempts;
  fail.delay = [](int64_t) { return fixed(kFailDelayMs); };
  m.setPolicy("fail", fail);
  model::AlarmPolicy bad;
  bad.delay = invalidDelay;
  m.setPolicy("badpolicy", bad);
}

// ---------------------------------------------------------------------------------------------
// What the runs covered (summed over all cases, printed at the end).

struct Coverage {
  int64_t cases = 0, commands = 0, schedules = 0, trueReplacements = 0, replacementsWhileRunning = 0, cancels = 0,
          cancelsDeleting = 0, purges = 0, purgesDeleting = 0, crashes = 0, crashesDuringHandler = 0, claims = 0,
          invocations = 0, retries = 0, terminalFailures = 0, exhaustions = 0, fencedSettles = 0, physicalAlarmRuns = 0,
          alarmChecks = 0, runtimeLeftovers = 0;
};
Coverage& coverage() {
  static Coverage c;
  return c;
}

// ---------------------------------------------------------------------------------------------
// The system under test: the rig, plus the model advanced by the engine's observed commit points.
//
// The engine's commit points (schedules, cancels, purges, claims, outcome writes, read from its
// "alm.*" probes in trace order) are replayed into the model, each one checked against what the
// model and the handler's known behaviour allow: claims only of due, pending rows of the right
// generation with the next attempt number (ALM-02, ALM-07, ALM-12); outcomes as the handler behaved;
// outcome writes fenced exactly as the model fences them, with the model's retry time, status and
// error name (ALM-03/04/06/08/10/11); at most maxAttempts invocations per generation (ALM-01) with
// the generation's idempotency key (ALM-09). After every command the durable table must equal the
// model row by row (ALM-05 on both), and with no handler in flight the stored physical alarm must
// lie in the model's window (SCH-01/02) and no row may stay overdue; a final drain must leave
// nothing pending and no alarm set. All latencies are 0, so after running the current instant every
// commit is confirmed and the store holds exactly the durable state.

std::string show(const std::optional<int64_t>& v) { return v ? std::to_string(*v) : "none"; }

class Sut {
 public:
  explicit Sut(uint64_t seed) : rig_(seed) {
    rig_.faults.set_latency(LatencyKind::rpc, 0);
    rig_.faults.set_latency(LatencyKind::cold, 0);
    rig_.faults.set_latency(LatencyKind::confirm, 0);
    rig_.runtime.define_class(kClass, [](ObjectContext& ctx) { return std::make_unique<ModelApp>(ctx); });
    setModelPolicies(model_);
    ++coverage().cases;
  }

  int64_t now() const { return rig_.world.now(); }
  const AlarmsModel& model() const { return model_; }
  bool running(const std::string& name) const { return running_.count(name) > 0; }

  // ---- Commands ----

  void schedule(const std::string& name, int64_t delay, bool replacement) {
    ++coverage().schedules;
    if (replacement && model_.row(name)) ++coverage().trueReplacements;
    if (replacement && running(name)) ++coverage().replacementsWhileRunning;
    const int64_t at = now() + delay;
    expectedSchedules_.push_back(ExpectedSchedule{name, at, now()});
    CallPtr call = rig_.call(kClass, kObject, "schedule", {{"name", name}, {"at", at}});
    settle();
    RC_ASSERT(call->done);
    if (!call->ok) RC_FAIL("schedule(" + name + ") failed: " + call->error);
    RC_ASSERT(expectedSchedules_.empty());
  }

  void cancel(const std::string& name) {
    ++coverage().cancels;
    const bool had = model_.row(name) != nullptr;
    CallPtr call = rig_.call(kClass, kObject, "cancel", {{"name", name}});
    settle();
    RC_ASSERT(call->done);
    if (!call->ok) RC_FAIL("cancel(" + name + ") failed: " + call->error);
    RC_ASSERT(call->value.at("deleted").get<bool>() == had);  // ALM-11
    RC_ASSERT(model_.row(name) == nullptr);
    if (had) ++coverage().cancelsDeleting;
  }

  // `pick` chooses among the distinct created_at values of the rows (or now, with none).
  void purge(int pick, int offset) {
    ++coverage().purges;
    std::set<int64_t> created;
    for (const auto& [name, row] : model_.rows()) created.insert(row.createdAt);
    int64_t before = now();
    if (!created.empty()) before = *std::next(created.begin(), pick % static_cast<int>(created.size()));
    before = std::max<int64_t>(0, before + offset);
    int64_t expected = 0;
    for (const auto& [name, row] : model_.rows()) expected += row.createdAt < before ? 1 : 0;
    CallPtr call = rig_.call(kClass, kObject, "purge", {{"before", before}});
    settle();
    RC_ASSERT(call->done);
    if (!call->ok) RC_FAIL("purge failed: " + call->error);
    RC_ASSERT(call->value.at("count").get<int64_t>() == expected);  // ALM-10
    if (expected > 0) ++coverage().purgesDeleting;
  }

  void advance(int64_t ms) {
    advanceTo(now() + ms);
    compare();
  }

  // A reset of the object at a point where every commit is confirmed, so the durable state the next
  // incarnation opens is exactly the model's.
  void crash() {
    ++coverage().crashes;
    if (auto status = rig_.status(kLabel)) RC_ASSERT(status->unconfirmed_commits == 0u);
    const int64_t fired = rig_.faults.fired(FaultKind::object_reset);
    rig_.faults.arm(FaultKind::object_reset);  // fires at the end of the ping's segment
    rig_.call(kClass, kObject, "ping");
    // Stop right after the reset: the store now holds the durable state, which must be the model's
    // (for a crash during a handler: its claim kept, its outcome lost, the row still pending).
    std::size_t scanned = rig_.sink.events.size();
    bool reset = false;
    rig_.world.run_until(now(), [&] {
      for (; scanned < rig_.sink.events.size(); ++scanned) {
        const nlohmann::json& e = rig_.sink.events[scanned];
        if (ours(e) && e.at("ev") == "incarnation.end" && e.at("reset").get<bool>()) reset = true;
      }
      return !reset;
    });
    RC_ASSERT(reset);
    RC_ASSERT(rig_.faults.fired(FaultKind::object_reset) == fired + 1);
    replay();
    compareRows();
    // Then whatever the reset lets happen at once (an overdue alarm fires in a new incarnation).
    settle();
  }

  // Advances into a run of the long handler (the one in flight, or the next one to start) by
  // `offset` ms, short of its end, then resets: the claim is durable, the outcome lost.
  void crashDuringHandler(int64_t offset) {
    if (!running(kLongName)) {
      const AlarmRow* row = model_.row(kLongName);
      if (row && row->status == AlarmStatus::pending && row->attempt < model_.maxAttemptsOf(kLongName)) {
        std::size_t scanned = rig_.sink.events.size();
        bool found = false;
        rig_.world.run_until(now() + kSearchMs, [&] {
          for (; scanned < rig_.sink.events.size(); ++scanned) {
            const nlohmann::json& e = rig_.sink.events[scanned];
            if (ours(e) && e.at("ev") == "alm.invoke" && e.at("name") == kLongName) found = true;
          }
          return !found;
        });
        rig_.run_until(now());
        replay();
        compare();
      }
    }
    if (running(kLongName)) {
      const Run& run = running_.at(kLongName);
      const int64_t remaining = run.since + kLongRunMs - now();
      RC_ASSERT(remaining >= 1);
      advanceTo(now() + offset % remaining);
      RC_ASSERT(running(kLongName));
      compare();
      ++coverage().crashesDuringHandler;
      // The model keeps the claimed attempt and the pending row: nothing settles the lost run, and
      // the next claim of that generation must take the following attempt number (the claim was
      // durable), which onClaim checks, possibly within this same instant (an overdue alarm fires
      // as soon as the object is reset).
      crash();
      return;
    }
    crash();
  }

  // After the last command: run long enough for every occurrence to finish; nothing may be left.
  void drain() {
    advance(kDrainMs);
    RC_ASSERT(running_.empty());
    if (const auto next = model_.nextPending())
      RC_FAIL("after a drain of " + std::to_string(kDrainMs) + " ms a row is still pending: " + model_.toJson().dump());
    if (auto status = rig_.status(kLabel)) {
      if (status->stored_alarm)
        RC_FAIL("SCH-01: nothing pending but the alarm is set at " + show(status->stored_alarm));
    }
  }

 private:
  struct ExpectedSchedule {
    std::string name;
    int64_t at = 0, issuedAt = 0;
  };
  struct Run {
    std::string generation;
    int64_t attempt = 0;
    int64_t since = 0;
  };

  static bool ours(const nlohmann::json& e) { return e.contains("object") && e.at("object") == kLabel; }

  // The object's last engine and lifecycle events, for failure messages.
  std::string recentTrace() const {
    std::vector<std::string> lines;
    for (auto it = rig_.sink.events.rbegin(); it != rig_.sink.events.rend() && lines.size() < 40; ++it) {
      const std::string ev = it->at("ev").get<std::string>();
      if (ours(*it) && (ev.rfind("alm.", 0) == 0 || ev.rfind("sch.", 0) == 0 || ev.rfind("incarnation.", 0) == 0 ||
                        ev.rfind("alarm.", 0) == 0))
        lines.push_back(it->dump());
    }
    std::string out = "\nrecent trace (oldest first):";
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) out += "\n  " + *it;
    return out;
  }

  void advanceTo(int64_t target) {
    rig_.world.executor().at(target, [] {});  // the clock reaches `target` even when idle
    rig_.run_until(target);
    replay();
  }

  // Runs everything due at the current instant, then replays and compares.
  void settle() {
    rig_.run_until(now());
    replay();
    compare();
  }

  // ---- Replay of the engine's commit points into the model ----

  void replay() {
    const std::vector<nlohmann::json>& events = rig_.sink.events;
    for (; replayed_ < events.size(); ++replayed_) {
      const nlohmann::json& e = events[replayed_];
      if (!ours(e)) continue;
      const std::string ev = e.at("ev").get<std::string>();
      const int64_t t = e.at("t").get<int64_t>();
      if (ev == "alm.schedule.begin") {
        onSchedule(e, t);
      } else if (ev == "alm.cancel") {
        const std::string name = e.at("name").get<std::string>();
        RC_ASSERT(model_.cancel(name) == e.at("deleted").get<bool>());
      } else if (ev == "alm.purge") {
        const int64_t count = model_.purgeBefore(e.at("before").get<int64_t>());
        RC_ASSERT(count == e.at("count").get<int64_t>());
      } else if (ev == "alm.claim") {
        onClaim(e, t);
      } else if (ev == "alm.invoke") {
        onInvoke(e, t);
      } else if (ev == "alm.handler.end") {
        onHandlerEnd(e);
      } else if (ev == "alm.settle" || (ev == "alm.write" && e.at("write") == "delete")) {
        // Outcome writes: the success delete is reported where it is written ("alm.write"; older
        // engines reported it as "alm.settle"), failure and exhaustion settles once committed.
        onSettle(e, t);
      } else if (ev == "incarnation.end") {
        running_.clear();  // the incarnation's handlers died with it
        claimed_.clear();
        if (e.at("reset").get<bool>()) ++resets_;
      } else if (ev == "sch.reconcile.durable") {
        lastReconcileAt_ = e.at("reconciled_at").get<int64_t>();
      } else if (ev == "alarm.failure") {
        // A retry of that occurrence is due, unless the failure was superseded or abandoned.
        retryOccurrence_.reset();
        if (e.contains("next")) retryOccurrence_ = e.at("scheduled").get<int64_t>();
      } else if (ev == "alarm.run" || ev == "alarm.success") {
        retryOccurrence_.reset();
      } else if (ev == "sch.alarm.start") {
        if (e.at("platform").get<bool>()) ++coverage().physicalAlarmRuns;
      }
    }
  }

  void onSchedule(const nlohmann::json& e, int64_t t) {
    // (The probe's own "t" field is overwritten by the trace's event time: the scheduled time comes
    // from the command.)
    RC_ASSERT(!expectedSchedules_.empty());
    const ExpectedSchedule expected = expectedSchedules_.front();
    expectedSchedules_.pop_front();
    const std::string name = e.at("name").get<std::string>();
    const std::string generation = e.at("generation").get<std::string>();
    RC_ASSERT(name == expected.name);
    RC_ASSERT(e.at("created_at").get<int64_t>() == expected.issuedAt);
    RC_ASSERT(t == expected.issuedAt);
    RC_ASSERT(generations_.insert(generation).second);  // ALM-08: a new generation every time
    model_.schedule(name, expected.at, expected.issuedAt, generation);
  }

  void onClaim(const nlohmann::json& e, int64_t t) {
    ++coverage().claims;
    const std::string name = e.at("name").get<std::string>();
    const std::string generation = e.at("generation").get<std::string>();
    const int64_t attempt = e.at("attempt").get<int64_t>();
    const AlarmRow* row = model_.row(name);
    if (!row || row->generation != generation || row->status != AlarmStatus::pending)
      RC_FAIL("claim of " + name + " attempt " + std::to_string(attempt) + " at " + std::to_string(t) +
              " but the model holds " + (row ? row->toJson().dump() : std::string("no row")));
    if (row->nextAttemptAt > t)
      RC_FAIL("ALM-12: " + name + " claimed at " + std::to_string(t) + " before it was due at " +
              std::to_string(row->nextAttemptAt));
    if (running(name))
      RC_FAIL("ALM-07: " + name + " claimed while attempt " + std::to_string(running_.at(name).attempt) + " runs");
    const std::optional<int64_t> expected = model_.claim(name, generation);
    if (expected != attempt)
      RC_FAIL("claim of " + name + " got attempt " + std::to_string(attempt) + ", the model allows " + show(expected));
    claimed_[name] = Run{generation, attempt, t};
  }

  void onInvoke(const nlohmann::json& e, int64_t t) {
    ++coverage().invocations;
    const std::string name = e.at("name").get<std::string>();
    const std::string generation = e.at("generation").get<std::string>();
    const int64_t attempt = e.at("attempt").get<int64_t>();
    auto claim = claimed_.find(name);
    RC_ASSERT(claim != claimed_.end());  // ALM-02: every invocation follows its claim
    RC_ASSERT(claim->second.generation == generation);
    RC_ASSERT(claim->second.attempt == attempt);
    claimed_.erase(claim);
    RC_ASSERT(e.at("key").get<std::string>() == std::string(kAlarmIdempotencyPrefix) + generation);  // ALM-09
    RC_ASSERT(e.at("is_retry").get<bool>() == (attempt > 1));
    RC_ASSERT(e.at("retry_count").get<int64_t>() == attempt - 1);
    const int64_t count = ++invocations_[generation];
    if (count > model_.maxAttemptsOf(name))
      RC_FAIL("ALM-01: " + name + " generation " + generation + " invoked " + std::to_string(count) + " times");
    running_[name] = Run{generation, attempt, t};
  }

  void onHandlerEnd(const nlohmann::json& e) {
    const std::string name = e.at("name").get<std::string>();
    const int64_t attempt = e.at("attempt").get<int64_t>();
    auto run = running_.find(name);
    RC_ASSERT(run != running_.end());
    RC_ASSERT(run->second.attempt == attempt);
    RC_ASSERT(e.at("failed").get<bool>() == failureOf(name, attempt).has_value());
    running_.erase(run);
  }

  void onSettle(const nlohmann::json& e, int64_t t) {
    const std::string name = e.at("name").get<std::string>();
    const std::string generation = e.at("generation").get<std::string>();
    const int64_t attempt = e.at("attempt").get<int64_t>();
    const std::string write = e.at("write").get<std::string>();
    const bool matched = e.at("matched").get<bool>();
    if (!matched) ++coverage().fencedSettles;
    if (write == "delete") {
      if (failureOf(name, attempt)) RC_FAIL(name + " attempt " + std::to_string(attempt) + " settled as a success");
      const bool expected = model_.succeed(name, generation, attempt);
      if (expected != matched)
        RC_FAIL("ALM-03: success delete of " + name + " attempt " + std::to_string(attempt) +
                " matched=" + std::to_string(matched) + ", the model says " + std::to_string(expected));
    } else if (write == "failure") {
      const std::optional<ErrorKind> kind = failureOf(name, attempt);
      if (!kind) RC_FAIL(name + " attempt " + std::to_string(attempt) + " settled as a failure");
      RC_ASSERT(e.at("now").get<int64_t>() == t);
      const bool expected = model_.fail(name, generation, attempt, *kind, t);
      if (expected != matched)
        RC_FAIL("ALM-03: failure settle of " + name + " attempt " + std::to_string(attempt) +
                " matched=" + std::to_string(matched) + ", the model says " + std::to_string(expected));
      if (!matched) return;
      const AlarmRow* row = model_.row(name);
      RC_ASSERT(row != nullptr);
      const bool terminal = row->status == AlarmStatus::failed;
      if (e.at("terminal").get<bool>() != terminal || e.at("next_attempt_at").get<int64_t>() != row->nextAttemptAt ||
          e.at("error_name").get<std::string>() != row->lastErrorName.value_or(""))
        RC_FAIL("ALM-06: failure of " + name + " attempt " + std::to_string(attempt) + " settled as " + e.dump() +
                ", the model's row is " + row->toJson().dump());
      ++(terminal ? coverage().terminalFailures : coverage().retries);
    } else if (write == "exhaust") {
      const AlarmRow* row = model_.row(name);
      if (row && row->generation == generation && row->status == AlarmStatus::pending)
        RC_ASSERT(!model_.claim(name, generation).has_value());  // the claim was refused
      const bool expected = model_.exhaust(name, generation, t);
      RC_ASSERT(expected == matched);
      if (matched) ++coverage().exhaustions;
    } else {
      RC_FAIL("unknown settle write " + write);
    }
  }

  // ---- Comparison of the durable state with the model ----

  std::vector<AlarmRow> engineRows() {
    std::vector<AlarmRow> rows;
    if (!rig_.status(kLabel)) return rows;
    SqlCursor tables = rig_.runtime.world().stores().live(durasim::sim::object_label(kClass, kObject), "SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'durability_alarms'");
    if (tables.toVector().empty()) return rows;
    for (const SqlRow& r : rig_.runtime.world().stores().live(durasim::sim::object_label(kClass, kObject),
                                        "SELECT name, generation_id, status, scheduled_at, next_attempt_at, attempt,"
                                        " last_error, last_error_name, created_at FROM durability_alarms ORDER BY name")
                               .toVector()) {
      AlarmRow row;
      row.name = r.text("name");
      row.generation = r.text("generation_id");
      const std::string& status = r.text("status");
      RC_ASSERT(status == "pending" || status == "failed");
      row.status = status == "pending" ? AlarmStatus::pending : AlarmStatus::failed;
      row.scheduledAt = r.int64("scheduled_at");
      row.nextAttemptAt = row.nextAttemptAtMax = r.int64("next_attempt_at");
      row.attempt = r.int64("attempt");
      row.lastErrorName = r.optText("last_error_name");
      RC_ASSERT(r.isNull("last_error") == r.isNull("last_error_name"));  // ALM-05: both error columns or neither
      row.createdAt = r.int64("created_at");
      rows.push_back(std::move(row));
    }
    return rows;
  }

  void compare() {
    ++coverage().commands;
    compareRows();
    compareAlarm();
  }

  // The table equals the model, row by row, and both satisfy ALM-05.
  void compareRows() {
    if (auto status = rig_.status(kLabel)) RC_ASSERT(status->unconfirmed_commits == 0u);
    const std::vector<AlarmRow> engine = engineRows();
    std::vector<AlarmRow> expected;
    for (const auto& [name, row] : model_.rows()) expected.push_back(row);
    if (engine != expected) {
      nlohmann::json got = nlohmann::json::array();
      for (const AlarmRow& row : engine) got.push_back(row.toJson());
      RC_FAIL("durability_alarms at " + std::to_string(now()) + " is " + got.dump() + ", the model holds " +
              model_.toJson().dump() + recentTrace());
    }
    auto maxOf = [this](const std::string& name) { return model_.maxAttemptsOf(name); };
    if (auto violation = model_.fieldConsistency(maxOf)) RC_FAIL(*violation);
    if (auto violation = AlarmsModel::fieldConsistency(engine, maxOf)) RC_FAIL(*violation);
  }

  // SCH-01/02 and liveness, once no pass is busy.
  void compareAlarm() {
    if (!running_.empty()) return;  // a pass is still busy
    const std::optional<int64_t> stored = rig_.status(kLabel) ? rig_.status(kLabel)->stored_alarm : std::nullopt;
    // An alarm invocation that a reset cut short stays stored until the runtime's retry of it runs
    // (runtime.md 7.3/7.4): during the invocation the engine saw no alarm, so its reconciles could
    // not remove it. Such a leftover is the runtime's, not the engine's; the final drain clears it.
    if (stored && stored == retryOccurrence_) {
      ++coverage().runtimeLeftovers;
      return;
    }
    ++coverage().alarmChecks;
    const std::optional<model::TimeRange> window =
        model_.physicalAlarmWindow(lastReconcileAt_.value_or(now()), kMinDelayMs);
    if (stored.has_value() != window.has_value())
      RC_FAIL("SCH-01: at " + std::to_string(now()) + " the stored alarm is " + show(stored) +
              " but the next pending is " + show(model_.nextPending()));
    if (window && !window->contains(*stored))
      RC_FAIL("SCH-02: at " + std::to_string(now()) + " the stored alarm " + show(stored) + " is outside [" +
              std::to_string(window->lo) + ", " + std::to_string(window->hi) + "] (last reconcile at " +
              show(lastReconcileAt_) + ")");
    if (resets_ == 0 && now() >= kPickupSlackMs)
      for (const std::string& name : model_.dueNow(now() - kPickupSlackMs))
        RC_FAIL("liveness: " + name + " due at " + std::to_string(model_.row(name)->nextAttemptAt) +
                " is still pending at " + std::to_string(now()) + recentTrace());
  }

  Rig rig_;
  AlarmsModel model_;
  std::size_t replayed_ = 0;                        // trace events already replayed
  std::deque<ExpectedSchedule> expectedSchedules_;  // schedules issued, not yet seen in the trace
  std::map<std::string, Run> claimed_;              // claims not yet followed by their invocation
  std::map<std::string, Run> running_;              // handlers in flight in the live incarnation
  std::map<std::string, int64_t> invocations_;      // per generation (ALM-01)
  std::set<std::string> generations_;               // every generation scheduled (ALM-08)
  std::optional<int64_t> lastReconcileAt_;          // the last durable reconcile (SCH-02)
  std::optional<int64_t> retryOccurrence_;          // the runtime owes a retry of this stored alarm
  int64_t resets_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Commands. The command-level state only records which names were scheduled (and not cancelled
// since), for Replace and CrashDuringHandler; the exact model lives with the system under test.

struct Plan {
  std::set<std::string> scheduled;
};
using AlarmCommand = rc::state::Command<Plan, Sut>;

rc::Gen<std::string> nameGen() {
  std::vector<std::string> names;
  for (const NamedBehaviour& n : alarmNames()) names.push_back(n.name);
  return rc::gen::elementOf(names);
}

// Delays around the minimum delay (early timer vs physical alarm) and the long run.
rc::Gen<int64_t> delayGen() {
  return rc::gen::oneOf(rc::gen::inRange<int64_t>(0, 15'001),
                        rc::gen::element<int64_t>(0, 1, kMinDelayMs - 1, kMinDelayMs, kMinDelayMs + 1, kLongRunMs));
}

rc::Gen<int64_t> advanceGen() {
  return rc::gen::oneOf(
      rc::gen::inRange<int64_t>(0, 20'001),
      rc::gen::element<int64_t>(1, kFlakyDelayMs, kMinDelayMs, kFailDelayMs, kLongRunMs - 1, kLongRunMs));
}

struct Schedule final : AlarmCommand {
  std::string name = *nameGen();
  int64_t delay = *delayGen();
  void checkPreconditions(const Plan& s) const override { RC_PRE(s.scheduled.count(name) == 0u); }
  void apply(Plan& s) const override { s.scheduled.insert(name); }
  void run(const Plan&, Sut& sut) const override { sut.schedule(name, delay, false); }
  void show(std::ostream& os) const override { os << "Schedule(" << name << ", +" << delay << ")"; }
};

struct Replace final : AlarmCommand {
  std::string name;
  int64_t delay = 0;
  explicit Replace(const Plan& s) {
    RC_PRE(!s.scheduled.empty());
    name = *rc::gen::elementOf(s.scheduled);
    delay = *delayGen();
  }
  void checkPreconditions(const Plan& s) const override { RC_PRE(s.scheduled.count(name) == 1u); }
  void run(const Plan&, Sut& sut) const override { sut.schedule(name, delay, true); }
  void show(std::ostream& os) const override { os << "Replace(" << name << ", +" << delay << ")"; }
};

struct Cancel final : AlarmCommand {
  std::string name = *nameGen();
  void apply(Plan& s) const override { s.scheduled.erase(name); }
  void run(const Plan&, Sut& sut) const override { sut.cancel(name); }
  void show(std::ostream& os) const override { os << "Cancel(" << name << ")"; }
};

struct Purge final : AlarmCommand {
  int pick = *rc::gen::inRange(0, 8);
  int offset = *rc::gen::element(-1, 0, 1);
  void run(const Plan&, Sut& sut) const override { sut.purge(pick, offset); }
  void show(std::ostream& os) const override {
    os << "Purge(created_at #" << pick << " " << std::showpos << offset << std::noshowpos << ")";
  }
};

struct Advance final : AlarmCommand {
  int64_t ms = *advanceGen();
  void run(const Plan&, Sut& sut) const override { sut.advance(ms); }
  void show(std::ostream& os) const override { os << "Advance(" << ms << ")"; }
};

struct Crash final : AlarmCommand {
  void run(const Plan&, Sut& sut) const override { sut.crash(); }
  void show(std::ostream& os) const override { os << "Crash"; }
};

struct CrashDuringHandler final : AlarmCommand {
  int64_t offset = *rc::gen::inRange<int64_t>(0, kLongRunMs);
  void checkPreconditions(const Plan& s) const override { RC_PRE(s.scheduled.count(kLongName) == 1u); }
  void run(const Plan&, Sut& sut) const override { sut.crashDuringHandler(offset); }
  void show(std::ostream& os) const override { os << "CrashDuringHandler(+" << offset << ")"; }
};

void engineAgreesWithTheModel() {
  const uint64_t seed = *rc::gen::inRange<uint64_t>(1, 1'000'000).as("world seed");
  const auto commands =
      *rc::gen::resize(kMaxCommands - 1,
                       rc::state::gen::commands(
                           Plan{}, rc::state::gen::execOneOfWithArgs<Schedule, Schedule, Schedule, Replace, Replace,
                                                                     Cancel, Purge, Advance, Advance, Advance, Advance,
                                                                     Crash, CrashDuringHandler, CrashDuringHandler>()));
  Sut sut(seed);
  rc::state::runAll(commands, Plan{}, sut);
  sut.drain();
}

TEST(AlarmsModelState, EngineAgreesWithTheModelOverRandomCommandSequences) {
  const std::optional<std::string> failure =
      runModelProperty("AlarmsModelState/EngineAgreesWithTheModelOverRandomCommandSequences", &engineAgreesWithTheModel, kDefaultCases);
  const Coverage& c = coverage();
  std::cout << "coverage over " << c.cases << " runs: " << c.commands << " compared steps, " << c.schedules
            << " schedules (" << c.trueReplacements << " replacing a row, " << c.replacementsWhileRunning
            << " while it ran), " << c.cancels << " cancels (" << c.cancelsDeleting << " deleting), " << c.purges
            << " purges (" << c.purgesDeleting << " deleting), " << c.crashes << " resets (" << c.crashesDuringHandler
            << " during a handler), " << c.claims << " claims, " << c.invocations << " invocations, " << c.retries
            << " retries, " << c.terminalFailures << " terminal failures, " << c.exhaustions << " exhaustions, "
            << c.fencedSettles << " fenced settles, " << c.physicalAlarmRuns << " physical alarm runs, "
            << c.alarmChecks << " alarm checks (" << c.runtimeLeftovers
            << " skipped: a reset invocation awaiting its retry)\n";
  if (failure) FAIL() << *failure;
}

}  // namespace
}  // namespace durasim
