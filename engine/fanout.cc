// DurabilityFanout (fanout.md); see fanout.h. Probes ("fan.*", engine/fanout_events.h) report every
// write inside its transaction and every hand-out of a delivery for the FAN checks in properties/.
#include "engine/fanout.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <utility>

#include "engine/background.h"
#include "engine/buggify.h"
#include "engine/conventions.h"
#include "engine/fanout_events.h"
#include "engine/fanout_schema.h"
#include "engine/json_text.h"
#include "engine/variants.h"

namespace durasim {

using nlohmann::json;

namespace {

const std::vector<Migration> kFanoutMigrations = {
    {DURASIM_FANOUT_MIGRATION,
     "CREATE TABLE " DURASIM_FANOUT_MESSAGES " ("
     " key TEXT PRIMARY KEY,"
     " id TEXT NOT NULL,"
     " payload TEXT NOT NULL,"
     " targets TEXT NOT NULL,"
     " remaining INTEGER NOT NULL,"
     " seq INTEGER NOT NULL,"
     " created_at INTEGER NOT NULL,"
     " generation_id TEXT NOT NULL);"
     "CREATE TABLE " DURASIM_FANOUT_DELIVERIES " ("
     " id TEXT PRIMARY KEY,"
     " message_key TEXT NOT NULL,"
     " target_id TEXT NOT NULL,"
     " seq INTEGER NOT NULL,"
     " status TEXT NOT NULL DEFAULT 'pending' CHECK (status = 'pending'),"
     " phase TEXT NOT NULL DEFAULT 'delivery' CHECK (phase IN ('delivery', 'dead_letter')),"
     " attempt INTEGER NOT NULL DEFAULT 0,"
     " next_attempt_at INTEGER NOT NULL,"
     " last_error TEXT,"
     " last_error_name TEXT,"
     " created_at INTEGER NOT NULL,"
     " generation_id TEXT NOT NULL,"
     " dead_lettered_at INTEGER,"
     " dead_letter_reason TEXT CHECK (dead_letter_reason IN ('explicit', 'exhausted')));"
     "CREATE INDEX durability_fanout_deliveries_due_idx ON " DURASIM_FANOUT_DELIVERIES
     " (target_id, phase, status, attempt, seq, next_attempt_at);"
     "CREATE INDEX durability_fanout_deliveries_pending_idx ON " DURASIM_FANOUT_DELIVERIES " (phase, status, next_attempt_at);"
     "CREATE INDEX durability_fanout_deliveries_created_idx ON " DURASIM_FANOUT_DELIVERIES " (created_at);"
     "CREATE TABLE " DURASIM_FANOUT_SEQ " (id INTEGER PRIMARY KEY CHECK (id = 1), next_seq INTEGER NOT NULL);"
     "INSERT INTO " DURASIM_FANOUT_SEQ " (id, next_seq) VALUES (1, 0);"
     "CREATE TABLE " DURASIM_FANOUT_MEMOS " ("
     " message_key TEXT NOT NULL,"
     " target_id TEXT NOT NULL,"
     " generation_id TEXT NOT NULL,"
     " step TEXT NOT NULL,"
     " value TEXT NOT NULL,"
     " attempt INTEGER NOT NULL,"
     " created_at INTEGER NOT NULL,"
     " PRIMARY KEY (message_key, target_id, generation_id, step));",
     "DROP TABLE IF EXISTS " DURASIM_FANOUT_MEMOS ";"
     "DROP TABLE IF EXISTS " DURASIM_FANOUT_SEQ ";"
     "DROP TABLE IF EXISTS " DURASIM_FANOUT_DELIVERIES ";"
     "DROP TABLE IF EXISTS " DURASIM_FANOUT_MESSAGES ";"}};

constexpr char kStateDisagrees[] = "Fanout manifest and delivery state disagree";
constexpr char kUnsettled[] = "Consumer returned without settling the message";

std::string inQuotes(const std::string& s) { return "\"" + s + "\""; }

// Runs `finish` of routing.begin on every exit path (at the latest).
struct Finish {
  std::function<void()> fn;
  void run() {
    if (fn) std::exchange(fn, nullptr)();
  }
  ~Finish() { run(); }
};

// Owns the message for as long as the write runs (a deadline may leave it running).
Task<void> writeMessage(MessageWrite write, StoredMessage message) {
  Task<void> writing = write(message);
  co_await writing;
}

Task<void> failed(std::exception_ptr error) {
  std::rethrow_exception(error);
  co_return;
}

json errorJson(const std::optional<ErrorInfo>& error) {
  return error ? JsonFields().add("name", error->name).add("message", error->message) : json();
}

}  // namespace

// One delivery row as a pass read it, with its manifest's message id, body and creation time.
struct DurabilityFanout::Row {
  std::string id, key, target, generation, phase;
  int64_t seq = 0, attempt = 0, nextAttemptAt = 0, createdAt = 0;
  std::optional<std::string> lastError, lastErrorName, deadLetterReason;
  std::optional<int64_t> deadLetteredAt;
  std::string messageId, payload;
  int64_t enqueuedAt = 0;

  static Row of(const SqlRow& r) {
    Row row;
    row.id = r.text("id");
    row.key = r.text("message_key");
    row.target = r.text("target_id");
    row.generation = r.text("generation_id");
    row.phase = r.text("phase");
    row.seq = r.int64("seq");
    row.attempt = r.int64("attempt");
    row.nextAttemptAt = r.int64("next_attempt_at");
    row.createdAt = r.int64("created_at");
    row.lastError = r.optText("last_error");
    row.lastErrorName = r.optText("last_error_name");
    row.deadLetterReason = r.optText("dead_letter_reason");
    row.deadLetteredAt = r.optInt64("dead_lettered_at");
    return row;
  }
  json brief() const { return JsonFields().add("row", id).add("generation", generation).add("attempt", attempt); }
};

// A target's pass in this instance (fanout.md 4.1): awaited by every runDue that finds it running.
// What the deadline of a batch and its invocation tell each other: whether the deadline passed
// (then nothing is acknowledged on return), and whether deliver threw.
struct DurabilityFanout::Invocation {
  bool expired = false;
  bool threw = false;
};

// A target's resolved policy and how it is delivered.
struct DurabilityFanout::Resolved {
  RetryPolicy retry;
  const FanoutTarget* target = nullptr;  // null for a target no longer configured
};

// The settlement state shared by the copies of one FanoutMessage (fanout.md 5.1, 5.2).
struct FanoutMessage::State {
  DurabilityFanout* owner = nullptr;
  DurabilityFanout::Row row;  // the claim
  bool closed = false;
  std::optional<std::string> outcome;      // "ack" | "retry" | "deadLetter"
  std::shared_ptr<AsyncEvent> actionDone;  // null until an action starts
  std::exception_ptr actionError;

  bool actionFailed() const { return actionDone && actionDone->isSet() && actionError; }
  bool actionRunning() const { return actionDone && !actionDone->isSet(); }
  // Why a settlement call cannot take effect, if it cannot.
  std::exception_ptr refusal(const std::string& messageId) const {
    if (outcome) return std::make_exception_ptr(FanoutSettlementError(messageId, outcome));
    if (closed) return std::make_exception_ptr(FanoutSettlementError(messageId));
    return nullptr;
  }
};

// ---------------------------------------------------------------------------------------------
// FanoutMessage (fanout.md 5.2)

Task<void> FanoutMessage::ack() {
  DurabilityFanout& owner = *state_->owner;
  if (std::exception_ptr refused = state_->refusal(id)) return owner.refuse(state_, "ack", refused);
  owner.startAction(state_, "ack", owner.ack(state_));
  return DurabilityFanout::awaitAction(state_);
}

Task<void> FanoutMessage::retry(std::optional<int64_t> delayMs) {
  DurabilityFanout& owner = *state_->owner;
  if (delayMs && (!isSafeNonNegative(*delayMs) || !isSafeNonNegative(owner.ctx_.clock.now() + *delayMs)))
    return owner.refuse(state_, "retry", std::make_exception_ptr(RangeError("delayMs must be a non-negative safe integer")), "range");
  if (std::exception_ptr refused = state_->refusal(id)) return owner.refuse(state_, "retry", refused);
  owner.startAction(state_, "retry", owner.retryDelivery(state_->row, delayMs, ErrorInfo{"Retry", "Retried by consumer"}));
  return DurabilityFanout::awaitAction(state_);
}

Task<void> FanoutMessage::deadLetter() {
  DurabilityFanout& owner = *state_->owner;
  if (std::exception_ptr refused = state_->refusal(id)) return owner.refuse(state_, "deadLetter", refused);
  owner.startAction(state_, "deadLetter", owner.deadLetter(state_->row, "explicit", std::nullopt));
  return DurabilityFanout::awaitAction(state_);
}

Task<json> FanoutMessage::memoize(std::string step, std::function<Task<json>()> fn) {
  return state_->owner->memoize(state_, std::move(step), std::move(fn));
}

// ---------------------------------------------------------------------------------------------
// Construction, schema (fanout.md 1-2)

DurabilityFanout::DurabilityFanout(DurabilityScheduler& scheduler, FanoutOptions options)
    : ctx_(scheduler.engine().context()),
      engine_(scheduler.engine()),
      options_(std::move(options)),
      perRowClaim_(variants::enabled(ctx_, variants::kFanoutPerRowClaim)),
      routing_(options_.routing),
      passes_(ctx_) {
  if (options_.maxBatchSize <= 0) throw RangeError("maxBatchSize must be a positive integer");
  if (!isSafeNonNegative(options_.batchDelayMs)) throw RangeError("batchDelayMs must be a non-negative integer");
  if (options_.targets.empty()) throw TypeError("Fanout requires at least one static target");
  for (const auto& [id, target] : options_.targets)
    if (id.empty() || static_cast<bool>(target.deliver) == static_cast<bool>(target.storage))
      throw TypeError("Invalid fanout target " + inQuotes(id));
  validatePolicyOptions(ExecutionPolicyOptions{options_.attemptTimeoutMs, options_.retries});
  for (const auto& [id, target] : options_.targets) validatePolicyOptions(target);
  if (!routing_) routing_ = &ownRouting_.emplace(ctx_.clock);
  engine_.registerParticipant(*this);
  try {
    migrate(ctx_.storage);
  } catch (...) {
    engine_.unregisterParticipant(*this);
    throw;
  }
  json targets = json::array();
  for (const auto& [id, target] : options_.targets) {
    const RetryPolicy policy = policyFor(id).retry;
    targets.push_back(JsonFields()
        .add("id", id)
        .add("kind", target.deliver ? "consumer" : "storage")
        .add("ackOnReturn", target.ackOnReturn)
        .add("maxAttempts", policy.maxAttempts)
        .add("attemptTimeoutMs", policy.attemptTimeoutMs));
  }
  ctx_.probe(fanout_events::kOptions, {{"targets", targets},
                                       {"dlq", static_cast<bool>(options_.dlq)},
                                       {"maxBatchSize", options_.maxBatchSize},
                                       {"batchDelayMs", options_.batchDelayMs}});
}

DurabilityFanout::~DurabilityFanout() { engine_.unregisterParticipant(*this); }

const std::vector<Migration>& DurabilityFanout::migrations() { return kFanoutMigrations; }

MigrationResult DurabilityFanout::migrate(ObjectStorage& storage, MigrationTarget target) {
  return durasim::migrate(storage, "fanout", kFanoutMigrations, std::move(target));
}

std::string DurabilityFanout::deliveryId(const std::string& generation, const std::string& target) {
  return jsonStringArray({generation, target});
}

std::string DurabilityFanout::rowId(const std::string& key, const std::string& target) { return jsonStringArray({key, target}); }

// ---------------------------------------------------------------------------------------------
// Enqueue (fanout.md 3)

Task<EnqueueResult<std::vector<std::string>>> DurabilityFanout::enqueue(FanoutInput message, EnqueueOptions options) {
  std::vector<FanoutInput> batch;
  batch.push_back(std::move(message));
  Task<EnqueueResult<std::vector<std::string>>> enqueuing = enqueue(std::move(batch), std::move(options));
  co_return co_await enqueuing;
}

Task<EnqueueResult<std::vector<std::string>>> DurabilityFanout::enqueue(std::vector<FanoutInput> messages, EnqueueOptions options) {
  using Result = EnqueueResult<std::vector<std::string>>;
  Finish finish{routing_->begin(Direction::inbound)};

  // 1. Validation: nothing is written on a rejection.
  std::vector<std::string> targets;
  if (options.targets) {
    targets = *options.targets;
  } else {
    for (const auto& [id, target] : options_.targets) targets.push_back(id);
  }
  std::sort(targets.begin(), targets.end());
  std::optional<std::string> rejection;
  if (targets.empty() || std::adjacent_find(targets.begin(), targets.end()) != targets.end() ||
      std::any_of(targets.begin(), targets.end(), [&](const std::string& t) { return !options_.targets.count(t); }))
    rejection = "Enqueue targets must be distinct configured target IDs";
  else if (messages.empty())
    rejection = "Enqueue requires at least one message";
  std::vector<std::string> ids, keys, payloads;
  if (!rejection) {
    for (const FanoutInput& m : messages) {
      ids.push_back(m.id ? *m.id : ctx_.random.uuid());
      keys.push_back(m.deduplicationKey ? *m.deduplicationKey : ids.back());
      if (ids.back().empty() || keys.back().empty()) {
        rejection = "Message id and deduplication key must be non-empty strings";
        break;
      }
    }
  }
  if (!rejection) {
    for (const FanoutInput& m : messages) {
      std::optional<std::string> payload = serialize(m.body);
      if (!payload) {
        rejection = "Message body is not serializable JSON";
        break;
      }
      payloads.push_back(std::move(*payload));
    }
  }
  std::optional<ErrorInfo> error;
  if (rejection) error = serializeError(std::make_exception_ptr(FanoutEnqueueError(*rejection)));

  // 2. One engine transaction; a conflicting key rolls back the whole batch.
  std::vector<Row> registered;
  if (!error) {
    const std::string targetsJson = jsonText(json(targets));
    try {
      registered = co_await engine_.transaction("deliveries", [&](EngineTxn& txn) {
        std::vector<Row> fresh;
        const int64_t now = ctx_.clock.now();
        const int64_t due = firstAttemptAt(now);
        json written = json::array();
        for (std::size_t i = 0; i < messages.size(); ++i) {
          std::optional<SqlRow> manifest =
              txn.sql.exec("SELECT id, payload, targets FROM " DURASIM_FANOUT_MESSAGES " WHERE key = ?", keys[i]).next();
          json entry = JsonFields().add("key", keys[i]).add("id", ids[i]).add("payload", payloads[i]).add("targets", targets);
          if (manifest) {
            if (manifest->text("id") != ids[i] || manifest->text("payload") != payloads[i] || manifest->text("targets") != targetsJson)
              throw FanoutEnqueueError("Deduplication key " + inQuotes(keys[i]) + " already identifies different work");
            entry["hit"] = true;
            written.push_back(std::move(entry));
            continue;
          }
          const int64_t seq = txn.sql.exec("SELECT next_seq FROM " DURASIM_FANOUT_SEQ " WHERE id = 1").one().int64("next_seq");
          txn.sql.exec("UPDATE " DURASIM_FANOUT_SEQ " SET next_seq = ? WHERE id = 1", seq + 1);
          const std::string generation = ctx_.random.uuid();
          txn.sql.exec("INSERT INTO " DURASIM_FANOUT_MESSAGES " (key, id, payload, targets, remaining, seq, created_at, generation_id)"
                       " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                       keys[i], ids[i], payloads[i], targetsJson, static_cast<int64_t>(targets.size()), seq, now, generation);
          for (const std::string& target : targets) {
            Row row;
            row.id = rowId(keys[i], target);
            row.key = keys[i];
            row.target = target;
            row.generation = generation;
            const bool inserted =
                txn.sql
                    .exec("INSERT INTO " DURASIM_FANOUT_DELIVERIES " (id, message_key, target_id, seq, status, phase, attempt,"
                          " next_attempt_at, created_at, generation_id) VALUES (?, ?, ?, ?, 'pending', 'delivery', 0, ?, ?, ?)"
                          " ON CONFLICT (id) DO NOTHING",
                          row.id, keys[i], target, seq, due, now, generation)
                    .rowsWritten() > 0;
            if (!inserted) throw DurabilityStateError(kStateDisagrees);
            fresh.push_back(std::move(row));
          }
          entry["hit"] = false;
          entry["seq"] = seq;
          entry["generation"] = generation;
          written.push_back(std::move(entry));
        }
        ctx_.probe(fanout_events::kEnqueueWrite, {{"messages", std::move(written)}, {"at", now}, {"firstAttemptAt", due}});
        txn.reconcile();
        return fresh;
      });
    } catch (const FanoutEnqueueError&) {
      error = serializeError(std::current_exception());
    }
  }
  if (error) {
    ctx_.probe(fanout_events::kEnqueueRejected, {{"message", error->message}});
    LoadSnapshot snapshot = co_await load();
    co_return Result::rejected(*error, std::move(snapshot));
  }

  // 4. After commit: lifecycle events and the eager pass.
  ctx_.probe(fanout_events::kEnqueue, {{"ids", ids}, {"keys", keys}});
  for (const Row& row : registered) emit(deliveryEvent(LifecycleType::registered, row));
  if (!registered.empty() && options_.batchDelayMs == 0) ctx_.waitUntil(backgroundPass());
  LoadSnapshot snapshot = co_await load();
  co_return Result::ok(std::move(ids), std::move(snapshot));
}

int64_t DurabilityFanout::firstAttemptAt(int64_t t) const {
  const int64_t b = options_.batchDelayMs;
  return b == 0 ? t : ((t + b - 1) / b) * b;
}

Task<void> DurabilityFanout::backgroundPass() {
  try {
    Task<void> passes = runDue(ctx_.clock.now(), std::nullopt);
    co_await passes;
    co_await engine_.scheduleNextAlarm();
  } catch (...) {
    ctx_.logger.error("durability.fanout.failed", {{"error", serializeError(std::current_exception()).message}});
  }
}

// ---------------------------------------------------------------------------------------------
// Load (fanout.md 7)

int64_t DurabilityFanout::pendingCount() {
  return ctx_.storage.exec("SELECT COUNT(*) AS n FROM " DURASIM_FANOUT_DELIVERIES).one().int64("n");
}

Task<LoadSnapshot> DurabilityFanout::load() {
  const int64_t pending = pendingCount();
  ctx_.probe(fanout_events::kLoad, {{"pendingDeliveries", pending}});
  co_return routing_->snapshot(pending);
}

// ---------------------------------------------------------------------------------------------
// Participant and passes (fanout.md 4)

std::optional<int64_t> DurabilityFanout::nextPendingAt(StorageTxn& txn) {
  return txn.exec("SELECT MIN(next_attempt_at) AS next FROM " DURASIM_FANOUT_DELIVERIES " WHERE status = 'pending'")
      .one()
      .optInt64("next");
}

Task<void> DurabilityFanout::runDue(int64_t, std::optional<AlarmInvocationInfo>) {
  std::vector<std::shared_ptr<PassSet::Pass>> passes;
  for (const SqlRow& r :
       ctx_.storage.exec("SELECT DISTINCT target_id FROM " DURASIM_FANOUT_DELIVERIES " ORDER BY target_id").toVector()) {
    const std::string target = r.text("target_id");
    passes.push_back(passes_.join(target, [this, target] { return passOf(target); }));
  }
  Task<void> awaiting = PassSet::awaitAll(std::move(passes));
  co_await awaiting;
}

// One pass of `target`, between its begin and end probes.
Task<void> DurabilityFanout::passOf(std::string target) {
  ctx_.probe(fanout_events::kPassBegin, {{"target", target}});
  std::exception_ptr error;
  try {
    Task<void> running = runTarget(target);
    co_await running;
  } catch (...) {
    error = std::current_exception();
  }
  ctx_.probe(fanout_events::kPassEnd, {{"target", target}, {"failed", error != nullptr}});
  if (error) std::rethrow_exception(error);
}

Task<void> DurabilityFanout::runTarget(std::string target) {
  Permit permit = co_await engine_.acquirePermit();
  Task<void> yielding = buggify::yieldIf(ctx_, buggify::kFanoutYieldBeforeClaim);
  co_await yielding;
  const int64_t now = ctx_.clock.now();
  std::vector<Row> due;
  for (const SqlRow& r : ctx_.storage
                             .exec("SELECT * FROM " DURASIM_FANOUT_DELIVERIES " WHERE target_id = ? AND status = 'pending'"
                                   " AND next_attempt_at <= ? ORDER BY CASE WHEN attempt = 0 THEN 0 ELSE 1 END, seq LIMIT ?",
                                   target, now, options_.maxBatchSize)
                             .toVector())
    due.push_back(Row::of(r));
  json listed = json::array();
  for (const Row& row : due)
    listed.push_back(JsonFields()
        .add("row", row.id)
        .add("generation", row.generation)
        .add("attempt", row.attempt)
        .add("seq", row.seq)
        .add("phase", row.phase));
  ctx_.probe(fanout_events::kDue, {{"target", target}, {"now", now}, {"rows", std::move(listed)}});
  if (due.empty()) co_return;

  const Resolved policy = policyFor(target);
  if (!policy.target) {
    Task<void> postponing = postponeRemovedTarget(target, due, now);
    co_await postponing;
    co_return;
  }
  for (Row& row : due) {
    std::optional<SqlRow> manifest =
        ctx_.storage.exec("SELECT id, payload, created_at, generation_id FROM " DURASIM_FANOUT_MESSAGES " WHERE key = ?", row.key).next();
    if (!manifest || manifest->text("generation_id") != row.generation) throw DurabilityStateError(kStateDisagrees);
    row.messageId = manifest->text("id");
    row.payload = manifest->text("payload");
    row.enqueuedAt = manifest->int64("created_at");
  }

  std::vector<Row> candidates;
  for (const Row& row : due) {
    if (row.phase == "dead_letter" || row.attempt >= policy.retry.maxAttempts) {
      try {
        Task<void> dead = deadLetter(row, row.deadLetterReason.value_or("exhausted"), std::nullopt);
        co_await dead;
      } catch (const FanoutSettlementError&) {
        // The row changed meanwhile.
      }
    } else {
      candidates.push_back(row);
    }
  }
  if (candidates.empty()) co_return;

  std::vector<Row> claimed;
  if (perRowClaim_) {
    Task<void> claiming = claimPerRow(target, candidates, policy, &claimed);
    co_await claiming;
  } else {
    claimed = co_await engine_.transaction("deliveries", [&](EngineTxn& txn) {
      std::vector<Row> out;
      const int64_t claimAt = ctx_.clock.now();
      const int64_t deadline = claimAt + policy.retry.attemptTimeoutMs;
      json done = json::array(), refused = json::array();
      for (const Row& row : candidates) {
        const bool matched = txn.sql
                                 .exec("UPDATE " DURASIM_FANOUT_DELIVERIES " SET attempt = attempt + 1, next_attempt_at = ?"
                                       " WHERE id = ? AND generation_id = ? AND status = 'pending' AND phase = 'delivery'"
                                       " AND attempt = ? AND attempt < ?",
                                       deadline, row.id, row.generation, row.attempt, policy.retry.maxAttempts)
                                 .rowsWritten() > 0;
        if (!matched) {
          refused.push_back(row.id);
          continue;
        }
        Row claim = row;
        claim.attempt = row.attempt + 1;
        claim.nextAttemptAt = deadline;
        done.push_back(claim.brief());
        out.push_back(std::move(claim));
      }
      ctx_.probe(fanout_events::kClaimWrite,
                 {{"target", target}, {"claimAt", claimAt}, {"deadline", deadline}, {"claimed", std::move(done)}, {"refused", std::move(refused)}});
      txn.reconcile();
      return out;
    });
  }
  if (claimed.empty()) co_return;
  Task<void> delivering = deliverBatch(target, std::move(claimed), policy);
  co_await delivering;
}

// Variant fanout.per_row_claim (hazards.md H-F1): one engine transaction per row, in due order.
Task<void> DurabilityFanout::claimPerRow(std::string target, std::vector<Row> candidates, Resolved policy, std::vector<Row>* claimed) {
  for (const Row& row : candidates) {
    std::optional<Row> claim = co_await engine_.transaction("deliveries", [&](EngineTxn& txn) -> std::optional<Row> {
      const int64_t claimAt = ctx_.clock.now();
      const int64_t deadline = claimAt + policy.retry.attemptTimeoutMs;
      const bool matched = txn.sql
                               .exec("UPDATE " DURASIM_FANOUT_DELIVERIES " SET attempt = attempt + 1, next_attempt_at = ?"
                                     " WHERE id = ? AND generation_id = ? AND status = 'pending' AND phase = 'delivery'"
                                     " AND attempt = ? AND attempt < ?",
                                     deadline, row.id, row.generation, row.attempt, policy.retry.maxAttempts)
                               .rowsWritten() > 0;
      std::optional<Row> out;
      if (matched) {
        out = row;
        out->attempt = row.attempt + 1;
        out->nextAttemptAt = deadline;
      }
      ctx_.probe(fanout_events::kClaimWrite, {{"target", target},
                                              {"claimAt", claimAt},
                                              {"deadline", deadline},
                                              {"claimed", out ? json::array({out->brief()}) : json::array()},
                                              {"refused", out ? json::array() : json::array({row.id})}});
      txn.reconcile();
      return out;
    });
    if (claim) claimed->push_back(std::move(*claim));
  }
}

Task<void> DurabilityFanout::postponeRemovedTarget(const std::string& target, const std::vector<Row>& due, int64_t now) {
  ctx_.logger.error("durability.fanout.target_missing", {{"target", target}});
  const int64_t until = now + kFanoutRemovedTargetDelayMs;
  co_await engine_.transaction("deliveries", [&](EngineTxn& txn) {
    json rows = json::array();
    for (const Row& row : due) {
      txn.sql.exec("UPDATE " DURASIM_FANOUT_DELIVERIES " SET next_attempt_at = ? WHERE id = ? AND generation_id = ? AND attempt = ?",
                   until, row.id, row.generation, row.attempt);
      rows.push_back(row.id);
    }
    ctx_.probe(fanout_events::kPostponeWrite, {{"target", target}, {"rows", std::move(rows)}, {"until", until}});
    txn.reconcile();
  });
}

// ---------------------------------------------------------------------------------------------
// Delivering a batch (fanout.md 5.1, 5.3)

FanoutMessage DurabilityFanout::messageOf(const Row& row) {
  FanoutMessage message;
  message.id = row.messageId;
  message.deliveryId = deliveryId(row.generation, row.target);
  message.target = row.target;
  message.body = deserialize(row.payload);
  message.attempt = row.attempt;
  message.enqueuedAt = row.enqueuedAt;
  message.state_ = std::make_shared<FanoutMessage::State>();
  message.state_->owner = this;
  message.state_->row = row;
  return message;
}

Task<void> DurabilityFanout::deliverBatch(std::string target, std::vector<Row> claims, Resolved policy) {
  Finish finish{routing_->begin(Direction::outbound)};
  std::vector<FanoutMessage> messages;
  json handed = json::array();
  for (const Row& claim : claims) {
    messages.push_back(messageOf(claim));
    handed.push_back(JsonFields().add("row", claim.id).add("delivery", messages.back().deliveryId).add("attempt", claim.attempt));
  }
  ctx_.probe(fanout_events::kDeliver, {{"target", target}, {"deliveries", std::move(handed)}});
  for (const Row& claim : claims) emit(deliveryEvent(LifecycleType::attempt_started, claim));

  auto call = std::make_shared<Invocation>();
  std::shared_ptr<Background> invocation = startBackground(ctx_, invoke(target, messages, policy, call));
  const bool inTime = co_await invocation->done->wait(policy.retry.attemptTimeoutMs);
  std::exception_ptr failure = invocation->error;
  if (!inTime) {
    call->expired = true;
    failure = std::make_exception_ptr(FanoutTimeoutError(policy.retry.attemptTimeoutMs));
  }
  ctx_.probe(fanout_events::kDelivered,
             {{"target", target}, {"failed", failure != nullptr}, {"threw", call->threw}, {"timedOut", !inTime}});
  for (const FanoutMessage& message : messages) message.state_->closed = true;
  finish.run();
  for (std::size_t i = 0; i < claims.size(); ++i) {
    Task<void> settling = afterBatch(claims[i], messages[i], failure);
    co_await settling;
  }
}

Task<void> DurabilityFanout::invoke(std::string target, std::vector<FanoutMessage> messages, Resolved policy,
                                    std::shared_ptr<Invocation> call) {
  std::exception_ptr invocationError;
  try {
    if (policy.target->deliver) {
      Task<void> delivering = policy.target->deliver(messages);
      co_await delivering;
    } else {
      std::vector<std::shared_ptr<Background>> writes;
      for (const FanoutMessage& message : messages) writes.push_back(startBackground(ctx_, writeStored(target, message)));
      for (const std::shared_ptr<Background>& write : writes) co_await write->done->wait();
      for (const std::shared_ptr<Background>& write : writes)
        if (write->error) std::rethrow_exception(write->error);
    }
  } catch (...) {
    invocationError = std::current_exception();
  }
  for (const FanoutMessage& message : messages) message.state_->closed = true;
  call->threw = invocationError != nullptr;
  if (!invocationError && policy.target->ackOnReturn && !call->expired) {
    Task<void> acking = ackUnsettled(messages);
    co_await acking;
  }
  for (const FanoutMessage& message : messages)
    if (message.state_->actionDone) co_await message.state_->actionDone->wait();
  if (invocationError) std::rethrow_exception(invocationError);
  for (const FanoutMessage& message : messages)
    if (message.state_->actionError) std::rethrow_exception(message.state_->actionError);
}

Task<void> DurabilityFanout::writeStored(std::string target, FanoutMessage message) {
  StoredMessage stored;
  stored.id = message.deliveryId;
  stored.messageId = message.id;
  stored.target = target;
  stored.body = message.body;
  stored.enqueuedAt = message.enqueuedAt;
  stored.storedAt = ctx_.clock.now();
  stored.attempts = message.attempt;
  Task<void> writing = options_.targets.at(target).storage(stored);
  co_await writing;
  co_await message.ack();
}

// fanout.md 5.3: one transaction acknowledges every message left without an outcome.
Task<void> DurabilityFanout::ackUnsettled(std::vector<FanoutMessage> messages) {
  std::vector<std::shared_ptr<FanoutMessage::State>> unsettled;
  for (const FanoutMessage& message : messages)
    if (!message.state_->outcome) unsettled.push_back(message.state_);
  if (unsettled.empty()) co_return;
  std::shared_ptr<AsyncEvent> done = ctx_.makeEvent();
  for (const auto& state : unsettled) {
    state->outcome = "ack";
    state->actionDone = done;
  }
  std::vector<bool> removed;
  try {
    removed = co_await engine_.transaction("deliveries", [&](EngineTxn& txn) {
      std::vector<bool> out;
      for (const auto& state : unsettled) {
        const Row& row = state->row;
        const bool matched = deleteFenced(txn, row, "delivery");
        ctx_.probe(fanout_events::kAckWrite, {{"row", row.id}, {"generation", row.generation}, {"attempt", row.attempt},
                                              {"how", "ackOnReturn"}, {"matched", matched}});
        if (matched) removeRow(txn, row);
        out.push_back(matched);
      }
      txn.reconcile();
      return out;
    });
  } catch (...) {
    for (const auto& state : unsettled) state->actionError = std::current_exception();
  }
  done->set();
  for (std::size_t i = 0; i < removed.size(); ++i)
    if (removed[i]) emit(completed(unsettled[i]->row));
}

// fanout.md 5.1 step 4, for one message of a closed batch.
Task<void> DurabilityFanout::afterBatch(const Row& claim, const FanoutMessage& message, std::exception_ptr failure) {
  const FanoutMessage::State& state = *message.state_;
  if (state.outcome) {
    if (!state.actionFailed()) co_return;  // done, or still running after a timeout
    const std::optional<Row> now = reread(claim);
    if (!now || now->generation != claim.generation || now->attempt != claim.attempt || now->phase == "dead_letter") co_return;
  }
  const ErrorInfo error = failure ? serializeError(failure) : ErrorInfo{"Error", kUnsettled};
  try {
    Task<void> retrying = retryDelivery(claim, std::nullopt, error);
    co_await retrying;
  } catch (const FanoutSettlementError&) {
    // Another attempt owns the row now.
  }
}

std::optional<DurabilityFanout::Row> DurabilityFanout::reread(const Row& row) {
  std::optional<SqlRow> found = ctx_.storage.exec("SELECT * FROM " DURASIM_FANOUT_DELIVERIES " WHERE id = ?", row.id).next();
  if (!found) return std::nullopt;
  return Row::of(*found);
}

// ---------------------------------------------------------------------------------------------
// Settlement (fanout.md 5.2, 5.4, 6)

Task<void> DurabilityFanout::refuse(std::shared_ptr<FanoutMessage::State> state, std::string outcome, std::exception_ptr error,
                                    std::optional<std::string> why) {
  ctx_.probe(fanout_events::kSettle, {{"row", state->row.id},
                                      {"delivery", deliveryId(state->row.generation, state->row.target)},
                                      {"outcome", outcome},
                                      {"refused", why ? *why : state->outcome ? *state->outcome : "stale"}});
  return failed(std::move(error));
}

void DurabilityFanout::startAction(const std::shared_ptr<FanoutMessage::State>& state, std::string outcome, Task<void> action) {
  ctx_.probe(fanout_events::kSettle, {{"row", state->row.id},
                                      {"delivery", deliveryId(state->row.generation, state->row.target)},
                                      {"outcome", outcome},
                                      {"refused", nullptr}});
  state->outcome = std::move(outcome);
  state->actionDone = ctx_.makeEvent();
  ctx_.waitUntil(runAction(std::move(action), state));
}

Task<void> DurabilityFanout::runAction(Task<void> action, std::shared_ptr<FanoutMessage::State> state) {
  try {
    co_await action;
  } catch (...) {
    state->actionError = std::current_exception();
  }
  state->actionDone->set();
}

Task<void> DurabilityFanout::awaitAction(std::shared_ptr<FanoutMessage::State> state) {
  co_await state->actionDone->wait();
  if (state->actionError) std::rethrow_exception(state->actionError);
}

Task<void> DurabilityFanout::ack(std::shared_ptr<FanoutMessage::State> state) {
  Task<void> yielding = buggify::yieldIf(ctx_, buggify::kFanoutYieldBeforeSettle);
  co_await yielding;
  const Row row = state->row;
  const bool matched = co_await engine_.transaction("deliveries", [&](EngineTxn& txn) {
    const bool any = deleteFenced(txn, row, "delivery");
    ctx_.probe(fanout_events::kAckWrite,
               {{"row", row.id}, {"generation", row.generation}, {"attempt", row.attempt}, {"how", "ack"}, {"matched", any}});
    if (any) removeRow(txn, row);
    return any;
  });
  if (!matched) throw FanoutSettlementError(row.id);
  emit(completed(row));
}

Task<void> DurabilityFanout::retryDelivery(Row row, std::optional<int64_t> overrideDelayMs, ErrorInfo error) {
  const Resolved policy = policyFor(row.target);
  if (row.attempt >= policy.retry.maxAttempts) {
    Task<void> dead = deadLetter(row, "exhausted", error);
    co_await dead;
    co_return;
  }
  const int64_t now = ctx_.clock.now();
  std::exception_ptr cause;
  double raw = 0;
  try {
    raw = overrideDelayMs ? static_cast<double>(*overrideDelayMs)
          : policy.retry.delay ? policy.retry.delay(row.attempt)
                               : defaultDelay(row.attempt, ctx_.random);
  } catch (...) {
    cause = std::current_exception();
    raw = std::nan("");
  }
  const double rounded = jsRound(raw);
  if (!std::isfinite(raw) || raw < 0 || rounded > static_cast<double>(kMaxSafeInteger) ||
      static_cast<double>(now) + rounded > static_cast<double>(kMaxSafeInteger)) {
    const ErrorInfo policyError =
        serializeError(std::make_exception_ptr(DurableRetryPolicyError("fanout target " + inQuotes(row.target), cause)));
    Task<void> dead = deadLetter(row, "exhausted", policyError);
    co_await dead;
    co_return;
  }
  const int64_t next = now + static_cast<int64_t>(rounded);
  const bool matched = co_await engine_.transaction("deliveries", [&](EngineTxn& txn) {
    const bool any = txn.sql
                         .exec("UPDATE " DURASIM_FANOUT_DELIVERIES " SET next_attempt_at = ?, last_error = ?, last_error_name = ?"
                               " WHERE id = ? AND generation_id = ? AND attempt = ? AND status = 'pending' AND phase = 'delivery'",
                               next, error.message, error.name, row.id, row.generation, row.attempt)
                         .rowsWritten() > 0;
    ctx_.probe(fanout_events::kRetryWrite, {{"row", row.id}, {"generation", row.generation}, {"attempt", row.attempt},
                                            {"next", next}, {"error", errorJson(error)}, {"matched", any}});
    txn.reconcile();
    return any;
  });
  if (!matched) throw FanoutSettlementError(row.id);
  LifecycleEvent event = deliveryEvent(LifecycleType::attempt_settled, row);
  event.outcome = SettleOutcome::retry_scheduled;
  event.error = error;
  event.nextAttemptAt = next;
  emit(std::move(event));
}

Task<void> DurabilityFanout::deadLetter(Row row, std::string reason, std::optional<ErrorInfo> failure) {
  const int64_t now = ctx_.clock.now();
  const int64_t timestamp = row.deadLetteredAt.value_or(now);
  std::optional<ErrorInfo> error = failure;
  if (!error && row.lastError) error = ErrorInfo{row.lastErrorName.value_or("Error"), *row.lastError};
  const std::string delivery = deliveryId(row.generation, row.target);
  auto terminal = [&](std::optional<ErrorInfo> reported) {
    LifecycleEvent event = deliveryEvent(LifecycleType::terminal, row);
    event.reason = reason == "exhausted" ? TerminalReason::attempts_exhausted : TerminalReason::dead_lettered;
    event.error = std::move(reported);
    emit(std::move(event));
  };

  if (!options_.dlq) {
    const bool matched = co_await engine_.transaction("deliveries", [&](EngineTxn& txn) {
      const bool any = deleteFenced(txn, row, nullptr);
      ctx_.probe(fanout_events::kRemoveWrite, {{"row", row.id}, {"generation", row.generation}, {"attempt", row.attempt},
                                               {"why", "drop"}, {"reason", reason}, {"matched", any}});
      if (any) removeRow(txn, row);
      return any;
    });
    if (!matched) throw FanoutSettlementError(row.id);
    terminal(error);
    co_return;
  }

  // 1. The terminal intent, committed before anything leaves the object.
  const bool intended = co_await engine_.transaction("deliveries", [&](EngineTxn& txn) {
    const bool any = txn.sql
                         .exec("UPDATE " DURASIM_FANOUT_DELIVERIES " SET phase = 'dead_letter', dead_lettered_at = ?,"
                               " dead_letter_reason = ?, next_attempt_at = ?, last_error = ?, last_error_name = ?"
                               " WHERE id = ? AND generation_id = ? AND attempt = ? AND status = 'pending'",
                               timestamp, reason, now + kFanoutDlqRetryMs, error ? SqlValue(error->message) : SqlValue(),
                               error ? SqlValue(error->name) : SqlValue(), row.id, row.generation, row.attempt)
                         .rowsWritten() > 0;
    ctx_.probe(fanout_events::kDeadIntentWrite, {{"row", row.id}, {"generation", row.generation}, {"attempt", row.attempt},
                                                 {"reason", reason}, {"at", timestamp}, {"error", errorJson(error)}, {"matched", any}});
    txn.reconcile();
    return any;
  });
  if (!intended) throw FanoutSettlementError(row.id);

  // 2. The DLQ write, under its deadline.
  StoredMessage stored;
  stored.id = delivery;
  stored.messageId = row.messageId;
  stored.target = row.target;
  stored.body = deserialize(row.payload);
  stored.enqueuedAt = row.enqueuedAt;
  stored.storedAt = timestamp;
  stored.attempts = row.attempt;
  stored.failure = StoredFailure{reason, error};
  std::shared_ptr<Background> write = startBackground(ctx_, writeMessage(options_.dlq, std::move(stored)));
  const bool inTime = co_await write->done->wait(kFanoutDlqTimeoutMs);
  const bool failedWrite = !inTime || write->error;
  ctx_.probe(fanout_events::kDlq, {{"row", row.id}, {"delivery", delivery}, {"failed", failedWrite}});
  if (failedWrite) {
    const ErrorInfo why = serializeError(inTime ? write->error : std::make_exception_ptr(FanoutTimeoutError(kFanoutDlqTimeoutMs)));
    ctx_.logger.error("durability.fanout.dead_letter_failed", {{"target", row.target}, {"id", delivery}, {"error", why.message}});
    co_return;
  }

  // 3. Removal, only after the DLQ accepted the entry.
  const bool removed = co_await engine_.transaction("deliveries", [&](EngineTxn& txn) {
    const bool any = deleteFenced(txn, row, "dead_letter");
    ctx_.probe(fanout_events::kRemoveWrite, {{"row", row.id}, {"generation", row.generation}, {"attempt", row.attempt},
                                             {"why", "dlq"}, {"reason", reason}, {"matched", any}});
    if (any) removeRow(txn, row);
    return any;
  });
  if (removed) terminal(error ? error : ErrorInfo{"DeadLetter", "Dead-lettered by consumer"});
}

// Deletes `row` if it still is this attempt of this generation (and in `phase`, when given).
// Returns whether it matched; a match is followed by removeRow in the same transaction.
bool DurabilityFanout::deleteFenced(EngineTxn& txn, const Row& row, const char* phase) {
  return (phase ? txn.sql.exec("DELETE FROM " DURASIM_FANOUT_DELIVERIES " WHERE id = ? AND generation_id = ? AND attempt = ?"
                               " AND status = 'pending' AND phase = ?",
                               row.id, row.generation, row.attempt, phase)
                : txn.sql.exec("DELETE FROM " DURASIM_FANOUT_DELIVERIES " WHERE id = ? AND generation_id = ? AND attempt = ?"
                               " AND status = 'pending'",
                               row.id, row.generation, row.attempt))
             .rowsWritten() > 0;
}

// fanout.md 2: removing a delivery row updates its manifest and drops its memos, then reconciles.
void DurabilityFanout::removeRow(EngineTxn& txn, const Row& row) {
  txn.sql.exec("UPDATE " DURASIM_FANOUT_MESSAGES " SET remaining = remaining - 1 WHERE key = ?", row.key);
  txn.sql.exec("DELETE FROM " DURASIM_FANOUT_MESSAGES " WHERE key = ? AND remaining <= 0", row.key);
  txn.sql.exec("DELETE FROM " DURASIM_FANOUT_MEMOS " WHERE message_key = ? AND target_id = ? AND generation_id = ?", row.key,
               row.target, row.generation);
  txn.reconcile();
}

// ---------------------------------------------------------------------------------------------
// Memoize (fanout.md 8)

Task<json> DurabilityFanout::memoize(std::shared_ptr<FanoutMessage::State> state, std::string step, std::function<Task<json>()> fn) {
  if (step.empty()) throw RangeError("memoize step must be a non-empty string");
  const Row row = state->row;
  auto lookUp = [&](auto& sql) {
    return sql
        .exec("SELECT value FROM " DURASIM_FANOUT_MEMOS " WHERE message_key = ? AND target_id = ? AND generation_id = ? AND step = ?",
              row.key, row.target, row.generation, step)
        .next();
  };
  if (std::optional<SqlRow> found = lookUp(ctx_.storage)) {
    ctx_.probe(fanout_events::kMemo, {{"row", row.id}, {"generation", row.generation}, {"step", step}, {"hit", true}, {"stored", true}});
    co_return deserialize(found->text("value"));
  }
  Task<json> computing = fn();
  json value = co_await computing;
  const std::optional<std::string> serialized = serialize(value);
  if (!serialized) throw RangeError("memoized value is not serializable JSON");
  const std::optional<std::string> kept = co_await ctx_.storage.transaction([&](StorageTxn& txn) -> std::optional<std::string> {
    txn.exec("INSERT INTO " DURASIM_FANOUT_MEMOS " (message_key, target_id, generation_id, step, value, attempt, created_at)"
             " SELECT ?, ?, ?, ?, ?, ?, ? WHERE EXISTS (SELECT 1 FROM " DURASIM_FANOUT_DELIVERIES
             " WHERE id = ? AND generation_id = ? AND phase = 'delivery') ON CONFLICT DO NOTHING",
             row.key, row.target, row.generation, step, *serialized, row.attempt, ctx_.clock.now(), row.id, row.generation);
    std::optional<SqlRow> stored = lookUp(txn);
    ctx_.probe(fanout_events::kMemo, {{"row", row.id}, {"generation", row.generation}, {"step", step}, {"hit", false},
                                      {"stored", stored.has_value()}});
    return stored ? std::optional<std::string>(stored->text("value")) : std::nullopt;
  });
  co_return kept ? deserialize(*kept) : value;
}

// ---------------------------------------------------------------------------------------------
// Helpers

DurabilityFanout::Resolved DurabilityFanout::policyFor(const std::string& target) const {
  const ExecutionPolicyOptions capability{options_.attemptTimeoutMs, options_.retries};
  auto found = options_.targets.find(target);
  Resolved resolved;
  resolved.target = found == options_.targets.end() ? nullptr : &found->second;
  resolved.retry = resolvePolicy(resolved.target, capability);
  return resolved;
}

LifecycleEvent DurabilityFanout::deliveryEvent(LifecycleType type, const Row& row) {
  LifecycleEvent event;
  event.type = type;
  event.name = row.target;
  event.id = deliveryId(row.generation, row.target);
  event.attempt = row.attempt;
  return event;
}

LifecycleEvent DurabilityFanout::completed(const Row& row) {
  LifecycleEvent event = deliveryEvent(LifecycleType::attempt_settled, row);
  event.outcome = SettleOutcome::completed;
  return event;
}

void DurabilityFanout::emit(LifecycleEvent event) const {
  event.entityKind = "delivery";
  event.at = ctx_.clock.now();
  emitLifecycle(options_.onLifecycleEvent, ctx_.logger, event);
}

}  // namespace durasim
