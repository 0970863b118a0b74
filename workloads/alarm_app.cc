// AlarmApp: see alarm_app.h.
#include "workloads/alarm_app.h"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "engine/alarms_events.h"
#include "engine/errors.h"
#include "engine/scheduler_events.h"

namespace durasim::workloads {

namespace {
constexpr int64_t kFlakyFailures = 2;        // "flaky.*" fails its first two attempts
constexpr int64_t kFailRetryDelayMs = 1'000; // "fail.*" retries after a fixed delay
constexpr int64_t kSelfReplaceAfterMs = 1'000;
constexpr int64_t kHangMinMs = 60'000, kHangMaxMs = 1'800'000;  // runtime.md 11.2 workload.handler_hang
}  // namespace

std::vector<std::string> alarmNames(int64_t perFamily) {
  std::vector<std::string> names;
  for (const std::string& family : alarmFamilies())
    for (int64_t i = 0; i < perFamily; ++i) names.push_back(family + "." + std::to_string(i));
  return names;
}

std::string alarmFamily(const std::string& name) { return name.substr(0, name.find('.')); }

int64_t alarmMaxAttempts(const std::string& name, const AlarmAppConfig& config) {
  return alarmFamily(name) == "fail" ? config.failMaxAttempts : kDefaultMaxAttempts;
}

nlohmann::json alarmPolicyJson(const AlarmAppConfig& config) {
  return {{"defaultMaxAttempts", kDefaultMaxAttempts},
          {"alarmPolicies",
           {{"fail", {{"maxAttempts", config.failMaxAttempts}, {"retryDelayMs", kFailRetryDelayMs}}}, {"badpolicy", {{"invalid", true}}}}}};
}

AlarmApp::AlarmApp(ObjectContext& ctx, const AlarmAppConfig& config, int64_t namesPerFamily, sim::FaultInjector* faults)
    : ctx_(ctx), config_(config), faults_(faults), scheduler_(ctx, config.scheduler) {
  alarms_ = std::make_unique<DurabilityAlarms>(scheduler_, options(namesPerFamily));
  ctx_.storage.exec(
      "CREATE TABLE IF NOT EXISTS app_effects (key TEXT PRIMARY KEY, name TEXT NOT NULL, attempt INTEGER NOT NULL,"
      " at INTEGER NOT NULL)");
  ctx_.storage.exec("CREATE TABLE IF NOT EXISTS self_chain (name TEXT PRIMARY KEY, count INTEGER NOT NULL)");
  // SCH-12: migrating again applies nothing.
  const MigrationResult again = DurabilityAlarms::migrate(ctx_.storage);
  ctx_.probe(scheduler_events::kAppMigrate, {{"applied", static_cast<int64_t>(again.applied.size())},
                             {"rolled_back", static_cast<int64_t>(again.rolledBack.size())}});
  probeDuplicateAttach();
}

// SCH-09: a second scheduler on this storage and a second "alarms" participant are both refused.
void AlarmApp::probeDuplicateAttach() {
  bool schedulerRefused = false, alarmsRefused = false;
  try {
    DurabilityScheduler second(ctx_);
  } catch (const TypeError&) {
    schedulerRefused = true;
  }
  try {
    DurabilityAlarms second(scheduler_, NamedAlarmOptions{});
  } catch (const TypeError&) {
    alarmsRefused = true;
  }
  ctx_.probe(scheduler_events::kAppAttach, {{"second_scheduler_refused", schedulerRefused}, {"second_alarms_refused", alarmsRefused}});
}

NamedAlarmOptions AlarmApp::options(int64_t namesPerFamily) {
  NamedAlarmOptions options;
  options.attemptTimeoutMs = config_.attemptTimeoutMs;
  for (const std::string& name : alarmNames(namesPerFamily)) {
    options.handlers[name] = [this](const DurableAlarmInfo& info) { return handle(info); };
    const std::string family = alarmFamily(name);
    AlarmMethodOptions method;
    if (family == "fail") {
      method.retries = RetryOptions{[](int64_t) { return static_cast<double>(kFailRetryDelayMs); }, config_.failMaxAttempts};
    } else if (family == "slow") {
      method.attemptTimeoutMs = config_.slowTimeoutMs;
    } else if (family == "slowretry") {
      method.attemptTimeoutMs = config_.slowTimeoutMs;
      method.retryTimeouts = true;
    } else if (family == "badpolicy") {
      method.retries = RetryOptions{[](int64_t) { return std::numeric_limits<double>::quiet_NaN(); }, std::nullopt};
    } else if (family == "long") {
      method.attemptTimeoutMs = config_.longRunMs * 2;
    } else {
      continue;
    }
    options.methods[name] = method;
  }
  return options;
}

Task<nlohmann::json> AlarmApp::call(std::string_view method, const nlohmann::json& args) {
  if (method == "schedule") {
    const std::string name = args.at("name").get<std::string>();
    if (alarmFamily(name) == "self") ctx_.storage.exec("DELETE FROM self_chain WHERE name = ?", name);
    lastScheduledAt_[name] = ctx_.clock.now();  // schedule reads the same clock for created_at
    Task<void> scheduling = alarms_->schedule(name, args.at("at").get<int64_t>());
    co_await scheduling;
    co_return nlohmann::json::object();
  }
  if (method == "cancel") {
    const std::string name = args.at("name").get<std::string>();
    Task<bool> cancelling = alarms_->cancel(name);
    const bool deleted = co_await cancelling;
    co_return nlohmann::json{{"deleted", deleted}};
  }
  if (method == "purge") {
    int64_t before = args.value("before", int64_t{0});
    if (args.contains("boundaryOf")) {
      const auto known = lastScheduledAt_.find(args.at("boundaryOf").get<std::string>());
      before = known != lastScheduledAt_.end() ? known->second : ctx_.clock.now();
    }
    const int64_t count = co_await alarms_->purgeBefore(before);
    co_return nlohmann::json{{"count", count}};
  }
  if (method == "ping") co_return nlohmann::json::object();
  throw std::invalid_argument("unknown method " + std::string(method));
}

Task<void> AlarmApp::handle(DurableAlarmInfo info) {
  ctx_.probe(alarms_events::kAppHandler, {{"name", info.name}, {"key", info.idempotencyKey}, {"attempt", info.attempt}});
  co_await misbehave("alarm.handler");
  const std::string family = alarmFamily(info.name);
  if (family == "flaky" && info.attempt <= kFlakyFailures) throw std::runtime_error("flaky failure");
  if (family == "fail" || family == "badpolicy") throw std::runtime_error(family + " always fails");
  if (family == "poison") throw NonRetryableError("poison: never retried");
  if (family == "slow" || (family == "slowretry" && info.attempt == 1)) co_await ctx_.clock.sleepFor(config_.slowTimeoutMs * 2);
  if (family == "long") co_await ctx_.clock.sleepFor(config_.longRunMs);
  if (family == "self") {
    std::optional<SqlRow> row = ctx_.storage.exec("SELECT count FROM self_chain WHERE name = ?", info.name).next();
    const int64_t count = row ? row->int64("count") : 0;
    if (count < config_.selfReplacements) {
      ctx_.storage.exec("INSERT INTO self_chain (name, count) VALUES (?, ?) ON CONFLICT (name) DO UPDATE SET count = excluded.count",
                        info.name, count + 1);
      Task<void> replacing = alarms_->schedule(info.name, ctx_.clock.now() + kSelfReplaceAfterMs);
      co_await replacing;
    }
  }
  recordEffect(info);
}

void AlarmApp::recordEffect(const DurableAlarmInfo& info) {
  ctx_.storage.exec("INSERT OR IGNORE INTO app_effects (key, name, attempt, at) VALUES (?, ?, ?, ?)", info.idempotencyKey,
                    info.name, info.attempt, ctx_.clock.now());
}

// workload.handler_throw / workload.handler_hang (runtime.md 11.2).
Task<void> AlarmApp::misbehave(const char* point) {
  if (!faults_) co_return;
  const sim::FaultSite site{ctx_.id.first + "/" + ctx_.id.second, ctx_.incarnation, point};
  if (faults_->fires(sim::FaultKind::workload_handler_throw, site)) throw std::runtime_error("injected handler failure");
  int64_t hang = 0;
  if (faults_->fires(sim::FaultKind::workload_handler_hang, site, [&] {
        hang = kHangMinMs + static_cast<int64_t>(ctx_.random.random() * static_cast<double>(kHangMaxMs - kHangMinMs));
        return nlohmann::json{{"ms", hang}};
      }))
    co_await ctx_.clock.sleepFor(hang);
}

}  // namespace durasim::workloads
