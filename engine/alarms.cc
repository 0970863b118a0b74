// Named alarms (scheduler.md 5-6); see alarms.h. Probes ("alm.*") report claims, invocations and
// fenced outcome writes for the ALM history checks in properties/.
#include "engine/alarms.h"

#include <utility>

#include "engine/alarms_events.h"
#include "engine/alarms_schema.h"
#include "engine/buggify.h"
#include "engine/conventions.h"
#include "engine/errors.h"

namespace durasim {

namespace {
const std::vector<Migration> kAlarmMigrations = {
    {DURASIM_ALARMS_MIGRATION,
     "CREATE TABLE " DURASIM_ALARMS " ("
     " name TEXT PRIMARY KEY,"
     " generation_id TEXT NOT NULL,"
     " status TEXT NOT NULL CHECK (status IN ('pending', 'failed')),"
     " scheduled_at INTEGER NOT NULL,"
     " next_attempt_at INTEGER NOT NULL,"
     " attempt INTEGER NOT NULL DEFAULT 0,"
     " last_error TEXT,"
     " last_error_name TEXT,"
     " created_at INTEGER NOT NULL);"
     "CREATE INDEX durability_alarms_pending_idx ON " DURASIM_ALARMS " (status, next_attempt_at);"
     "CREATE INDEX durability_alarms_created_idx ON " DURASIM_ALARMS " (created_at);",
     "DROP TABLE IF EXISTS " DURASIM_ALARMS ";"}};

std::string inQuotes(const std::string& name) { return "\"" + name + "\""; }

bool isTimeout(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const DurableAlarmTimeoutError&) {
    return true;
  } catch (...) {
    return false;
  }
}
}  // namespace

struct DurabilityAlarms::Active {
  std::string name, generation;
  int64_t createdAt = 0;
  std::shared_ptr<AsyncEvent> settled;      // set once the permit and the name are released
  std::shared_ptr<AsyncEvent> handlerDone;  // set when the handler returns or throws
  bool handlerSettled = false;
  std::exception_ptr handlerError;
  AbortSource abort;
};

// ---------------------------------------------------------------------------------------------
// Construction, schema

DurabilityAlarms::DurabilityAlarms(DurabilityScheduler& scheduler, NamedAlarmOptions options)
    : ctx_(scheduler.engine().context()), engine_(scheduler.engine()), options_(std::move(options)) {
  for (const auto& [name, handler] : options_.handlers)
    if (!handler) throw TypeError("Named alarm handler " + inQuotes(name) + " must be callable");
  validatePolicyOptions(ExecutionPolicyOptions{options_.attemptTimeoutMs, options_.retries});
  for (const auto& [name, method] : options_.methods) validatePolicyOptions(method);
  engine_.registerParticipant(*this);
  try {
    migrate(ctx_.storage);
  } catch (...) {
    engine_.unregisterParticipant(*this);
    throw;
  }
}

DurabilityAlarms::~DurabilityAlarms() { engine_.unregisterParticipant(*this); }

const std::vector<Migration>& DurabilityAlarms::migrations() { return kAlarmMigrations; }

MigrationResult DurabilityAlarms::migrate(ObjectStorage& storage, MigrationTarget target) {
  return durasim::migrate(storage, "namedAlarms", kAlarmMigrations, std::move(target));
}

// ---------------------------------------------------------------------------------------------
// API (scheduler.md 6.3)

Task<void> DurabilityAlarms::schedule(std::string name, int64_t scheduledTime) {
  if (!options_.handlers.count(name)) throw TypeError("No named alarm handler registered for " + inQuotes(name));
  if (!isSafeNonNegative(scheduledTime)) throw RangeError("scheduledTime must be a non-negative safe integer");
  const std::string generation = ctx_.random.uuid();
  const int64_t now = ctx_.clock.now();
  ctx_.probe(alarms_events::kScheduleBegin, {{"name", name}, {"generation", generation}, {"scheduled", scheduledTime}, {"created_at", now}});
  co_await engine_.transaction("alarms", [&](EngineTxn& txn) {
    txn.sql.exec(
        "INSERT INTO " DURASIM_ALARMS " (name, generation_id, status, scheduled_at, next_attempt_at, attempt,"
        " last_error, last_error_name, created_at) VALUES (?, ?, 'pending', ?, ?, 0, NULL, NULL, ?)"
        " ON CONFLICT (name) DO UPDATE SET generation_id = excluded.generation_id, status = 'pending',"
        " scheduled_at = excluded.scheduled_at, next_attempt_at = excluded.next_attempt_at, attempt = 0,"
        " last_error = NULL, last_error_name = NULL, created_at = excluded.created_at",
        name, generation, scheduledTime, scheduledTime, now);
    ctx_.probe(alarms_events::kScheduleWrite, {{"name", name}, {"generation", generation}, {"scheduled", scheduledTime}, {"created_at", now}});
    txn.reconcile();
  });
  ctx_.probe(alarms_events::kSchedule, {{"name", name}, {"generation", generation}, {"scheduled", scheduledTime}, {"created_at", now}});
  LifecycleEvent event;
  event.type = LifecycleType::scheduled;
  event.name = event.id = name;
  event.scheduledTime = scheduledTime;
  emit(std::move(event));
}

Task<bool> DurabilityAlarms::cancel(std::string name) {
  ctx_.probe(alarms_events::kCancelBegin, {{"name", name}});
  const bool deleted = co_await engine_.transaction("alarms", [&](EngineTxn& txn) {
    const bool any = txn.sql.exec("DELETE FROM " DURASIM_ALARMS " WHERE name = ?", name).rowsWritten() > 0;
    ctx_.probe(alarms_events::kCancelWrite, {{"name", name}, {"deleted", any}});
    txn.reconcile();
    return any;
  });
  ctx_.probe(alarms_events::kCancel, {{"name", name}, {"deleted", deleted}});
  co_return deleted;
}

Task<int64_t> DurabilityAlarms::purgeBefore(int64_t before) {
  if (!isSafeNonNegative(before)) throw RangeError("before must be a non-negative safe integer");
  for (auto& [name, active] : active_)
    if (active->createdAt < before)
      active->abort.abort(std::make_exception_ptr(DurabilityError("Durable alarm " + inQuotes(name) + " was purged")));
  ctx_.probe(alarms_events::kPurgeBegin, {{"before", before}});
  const int64_t count = co_await engine_.transaction("alarms", [&](EngineTxn& txn) {
    const int64_t n = txn.sql.exec("DELETE FROM " DURASIM_ALARMS " WHERE created_at < ?", before).rowsWritten();
    ctx_.probe(alarms_events::kPurgeWrite, {{"before", before}, {"count", n}});
    txn.reconcile();
    return n;
  });
  ctx_.probe(alarms_events::kPurge, {{"before", before}, {"count", count}});
  LifecycleEvent event;
  event.type = LifecycleType::purged;
  event.before = before;
  event.count = count;
  emit(std::move(event));
  co_return count;
}

// ---------------------------------------------------------------------------------------------
// Participant (scheduler.md 3.1, 6.3)

std::optional<int64_t> DurabilityAlarms::nextPendingAt(StorageTxn& txn) {
  return txn.exec("SELECT MIN(next_attempt_at) AS next FROM " DURASIM_ALARMS " WHERE status = 'pending'")
      .one()
      .optInt64("next");
}

Task<void> DurabilityAlarms::runDue(int64_t startedAt, std::optional<AlarmInvocationInfo> info) {
  std::vector<Row> rows;
  for (const SqlRow& r : ctx_.storage
                             .exec("SELECT name, generation_id, created_at, scheduled_at FROM " DURASIM_ALARMS
                                   " WHERE status = 'pending' AND next_attempt_at <= ?"
                                   " ORDER BY next_attempt_at, name LIMIT ?",
                                   startedAt, kAlarmPassLimit)
                             .toVector())
    rows.push_back(Row{r.text("name"), r.text("generation_id"), r.int64("created_at"), r.int64("scheduled_at")});
  std::function<Task<void>(std::size_t)> item = [this, &rows, info](std::size_t i) { return runItem(rows[i], info); };
  Task<void> running = engine_.runConcurrent(rows.size(), std::move(item));
  co_await running;
}

Task<void> DurabilityAlarms::runItem(Row listed, std::optional<AlarmInvocationInfo> info) {
  Task<void> yielding = buggify::yieldIf(ctx_, buggify::kAlarmsYieldBeforeAttempt);
  co_await yielding;
  if (auto it = active_.find(listed.name); it != active_.end()) {
    std::shared_ptr<Active> active = it->second;
    co_await active->settled->wait();
    co_return;
  }
  std::optional<SqlRow> fresh =
      ctx_.storage
          .exec("SELECT generation_id, status, next_attempt_at, created_at, scheduled_at FROM " DURASIM_ALARMS
                " WHERE name = ?",
                listed.name)
          .next();
  if (!fresh || fresh->text("status") != "pending" || fresh->int64("next_attempt_at") > ctx_.clock.now()) co_return;
  Row row{listed.name, fresh->text("generation_id"), fresh->int64("created_at"), fresh->int64("scheduled_at")};
  Task<void> attempt = runAttempt(std::move(row), info);
  co_await attempt;
}

// ---------------------------------------------------------------------------------------------
// One attempt (scheduler.md 5.1)

Task<void> DurabilityAlarms::runAttempt(Row row, std::optional<AlarmInvocationInfo> info) {
  auto active = std::make_shared<Active>();
  active->name = row.name;
  active->generation = row.generation;
  active->createdAt = row.createdAt;
  active->settled = ctx_.makeEvent();
  active->handlerDone = ctx_.makeEvent();
  active_[row.name] = active;
  const Policy policy = policyFor(row.name);

  Permit permit = co_await engine_.acquirePermit();
  std::optional<SqlRow> claimed;
  try {
    claimed = ctx_.storage
                  .exec("UPDATE " DURASIM_ALARMS " SET attempt = attempt + 1 WHERE name = ? AND generation_id = ?"
                        " AND status = 'pending' AND attempt < ? RETURNING attempt",
                        row.name, row.generation, policy.retry.maxAttempts)
                  .next();
    if (!claimed) {
      Task<void> exhausting = exhaust(row, policy);
      co_await exhausting;
      finish(active, permit);
      co_return;
    }
    ctx_.probe(alarms_events::kClaim, {{"name", row.name}, {"generation", row.generation}, {"attempt", claimed->int64("attempt")},
                             {"now", ctx_.clock.now()}, {"max_attempts", policy.retry.maxAttempts}});
    co_await ctx_.storage.sync();
  } catch (...) {
    active->handlerSettled = true;
    finish(active, permit);
    throw;
  }
  const int64_t attempt = claimed->int64("attempt");

  DurableAlarmInfo alarmInfo;
  alarmInfo.name = row.name;
  alarmInfo.scheduledTime = row.scheduledAt;
  alarmInfo.attempt = attempt;
  alarmInfo.isRetry = attempt > 1;
  alarmInfo.retryCount = attempt - 1;
  alarmInfo.idempotencyKey = std::string(kAlarmIdempotencyPrefix) + row.generation;
  alarmInfo.signal = active->abort.signal();
  alarmInfo.platform = info;
  LifecycleEvent started;
  started.type = LifecycleType::attempt_started;
  started.name = started.id = row.name;
  started.attempt = attempt;
  started.scheduledTime = row.scheduledAt;
  emit(std::move(started));

  const int64_t startedAt = ctx_.clock.now();
  std::exception_ptr failure;
  auto handler = options_.handlers.find(row.name);
  if (handler == options_.handlers.end()) {
    failure = std::make_exception_ptr(NonRetryableError("No named alarm handler registered for " + inQuotes(row.name)));
    active->handlerSettled = true;
  } else {
    ctx_.probe(alarms_events::kInvoke, {{"name", row.name},
                              {"generation", row.generation},
                              {"attempt", attempt},
                              {"key", alarmInfo.idempotencyKey},
                              {"is_retry", alarmInfo.isRetry},
                              {"retry_count", alarmInfo.retryCount},
                              {"platform", info.has_value()},
                              {"max_attempts", policy.retry.maxAttempts}});
    ctx_.waitUntil(runHandler(handler->second, alarmInfo, active));
    const bool settled = co_await active->handlerDone->wait(policy.retry.attemptTimeoutMs);
    if (settled) {
      failure = active->handlerError;
    } else {
      failure = std::make_exception_ptr(DurableAlarmTimeoutError(row.name, policy.retry.attemptTimeoutMs));
      active->abort.abort(failure);
      ctx_.probe(alarms_events::kTimeout, {{"name", row.name}, {"generation", row.generation}, {"attempt", attempt}});
    }
  }

  std::exception_ptr writeError;
  try {
    if (!failure) {
      settleSuccess(row, attempt, ctx_.clock.now() - startedAt);
    } else {
      Task<void> settling = settleFailure(row, attempt, policy, failure);
      co_await settling;
    }
  } catch (...) {
    writeError = std::current_exception();
  }
  if (active->handlerSettled)
    finish(active, permit);
  else
    engine_.background(releaseAfterHandler(active, std::move(permit)), "alarm_handler_release");
  if (writeError) std::rethrow_exception(writeError);
}

Task<void> DurabilityAlarms::runHandler(DurableAlarmHandler handler, DurableAlarmInfo info, std::shared_ptr<Active> active) {
  try {
    co_await handler(info);
  } catch (...) {
    active->handlerError = std::current_exception();
  }
  active->handlerSettled = true;
  ctx_.probe(alarms_events::kHandlerEnd, {{"name", info.name}, {"attempt", info.attempt}, {"key", info.idempotencyKey},
                                 {"failed", active->handlerError != nullptr}});
  active->handlerDone->set();
}

Task<void> DurabilityAlarms::releaseAfterHandler(std::shared_ptr<Active> active, Permit permit) {
  co_await active->handlerDone->wait();
  finish(active, permit);
}

void DurabilityAlarms::finish(const std::shared_ptr<Active>& active, Permit& permit) {
  permit.release();
  ctx_.probe(alarms_events::kRelease, {{"name", active->name}, {"generation", active->generation}});
  // Only if the name still holds this entry (scheduler.md 5.1 step 8).
  if (auto it = active_.find(active->name); it != active_.end() && it->second == active) active_.erase(it);
  active->settled->set();
}

void DurabilityAlarms::settleSuccess(const Row& row, int64_t attempt, int64_t durationMs) {
  const bool matched = ctx_.storage
                           .exec("DELETE FROM " DURASIM_ALARMS " WHERE name = ? AND generation_id = ? AND attempt = ?"
                                 " AND status = 'pending'",
                                 row.name, row.generation, attempt)
                           .rowsWritten() > 0;
  ctx_.probe(alarms_events::kWrite, {{"name", row.name}, {"generation", row.generation}, {"attempt", attempt},
                           {"write", "delete"}, {"matched", matched}});
  if (!matched) return;
  engine_.noteStateChange();  // the pass's closing refresh must read the state without this row
  LifecycleEvent event;
  event.type = LifecycleType::attempt_settled;
  event.name = event.id = row.name;
  event.attempt = attempt;
  event.outcome = SettleOutcome::completed;
  event.durationMs = durationMs;
  emit(std::move(event));
}

Task<void> DurabilityAlarms::settleFailure(Row row, int64_t attempt, Policy policy, std::exception_ptr failure) {
  const int64_t now = ctx_.clock.now();
  const RetryDecision decision =
      decideRetry(policy.retry, "durable alarm " + inQuotes(row.name), attempt, failure, now, ctx_.random,
                  [&](std::exception_ptr e) { return isTimeout(e) && !policy.retryTimeouts; });
  const ErrorInfo error = serializeError(decision.error);
  const char* status = decision.terminal ? "failed" : "pending";
  const bool matched = co_await engine_.transaction("alarms", [&](EngineTxn& txn) {
    const bool any = txn.sql
                         .exec("UPDATE " DURASIM_ALARMS " SET status = ?, next_attempt_at = ?, last_error = ?,"
                               " last_error_name = ? WHERE name = ? AND generation_id = ? AND attempt = ?"
                               " AND status = 'pending'",
                               status, decision.nextAttemptAt, error.message, error.name, row.name, row.generation, attempt)
                         .rowsWritten() > 0;
    ctx_.probe(alarms_events::kWrite, {{"name", row.name}, {"generation", row.generation}, {"attempt", attempt}, {"write", "failure"},
                             {"matched", any}, {"status", status}});
    txn.reconcile();
    return any;
  });
  ctx_.probe(alarms_events::kSettle, {{"name", row.name}, {"generation", row.generation}, {"attempt", attempt}, {"write", "failure"},
                            {"matched", matched}, {"terminal", decision.terminal}, {"now", now},
                            {"next_attempt_at", decision.nextAttemptAt}, {"error_name", error.name},
                            {"max_attempts", policy.retry.maxAttempts}, {"retry_timeouts", policy.retryTimeouts}});
  if (!matched) co_return;
  LifecycleEvent event;
  event.type = LifecycleType::attempt_settled;
  event.name = event.id = row.name;
  event.attempt = attempt;
  event.outcome = decision.terminal ? SettleOutcome::failed : SettleOutcome::retry_scheduled;
  event.error = error;
  event.nextAttemptAt = decision.nextAttemptAt;
  emit(std::move(event));
}

Task<void> DurabilityAlarms::exhaust(Row row, Policy policy) {
  std::optional<SqlRow> current =
      ctx_.storage.exec("SELECT generation_id, status, attempt FROM " DURASIM_ALARMS " WHERE name = ?", row.name).next();
  if (!current || current->text("generation_id") != row.generation || current->text("status") != "pending" ||
      current->int64("attempt") < policy.retry.maxAttempts)
    co_return;
  const int64_t now = ctx_.clock.now();
  const DurableAttemptsExhaustedError error(row.name, policy.retry.maxAttempts);
  const std::string message = error.what();
  const bool matched = co_await engine_.transaction("alarms", [&](EngineTxn& txn) {
    const bool any = txn.sql
                         .exec("UPDATE " DURASIM_ALARMS " SET status = 'failed', next_attempt_at = ?, last_error = ?,"
                               " last_error_name = 'DurableAttemptsExhaustedError' WHERE name = ? AND generation_id = ?"
                               " AND status = 'pending' AND attempt >= ?",
                               now, message, row.name, row.generation, policy.retry.maxAttempts)
                         .rowsWritten() > 0;
    ctx_.probe(alarms_events::kWrite, {{"name", row.name}, {"generation", row.generation}, {"attempt", current->int64("attempt")},
                             {"write", "exhaust"}, {"matched", any}, {"status", "failed"}});
    txn.reconcile();
    return any;
  });
  ctx_.probe(alarms_events::kSettle, {{"name", row.name}, {"generation", row.generation}, {"attempt", current->int64("attempt")},
                            {"write", "exhaust"}, {"matched", matched}, {"max_attempts", policy.retry.maxAttempts}});
  if (!matched) co_return;
  LifecycleEvent event;
  event.type = LifecycleType::terminal;
  event.name = event.id = row.name;
  event.attempt = current->int64("attempt");
  event.reason = TerminalReason::attempts_exhausted;
  event.error = ErrorInfo{"DurableAttemptsExhaustedError", message};
  emit(std::move(event));
}

// ---------------------------------------------------------------------------------------------
// Helpers

DurabilityAlarms::Policy DurabilityAlarms::policyFor(const std::string& name) const {
  const ExecutionPolicyOptions capability{options_.attemptTimeoutMs, options_.retries};
  auto method = options_.methods.find(name);
  const ExecutionPolicyOptions* perName = method == options_.methods.end() ? nullptr : &method->second;
  Policy policy;
  policy.retry = resolvePolicy(perName, capability);
  policy.retryTimeouts = method != options_.methods.end() && method->second.retryTimeouts.value_or(false);
  return policy;
}

void DurabilityAlarms::emit(LifecycleEvent event) const {
  event.entityKind = "alarm";
  event.at = ctx_.clock.now();
  emitLifecycle(options_.onLifecycleEvent, ctx_.logger, event);
}

}  // namespace durasim
