// DurabilityOutbox and its hub (outbox.md); see outbox.h. Probes ("obx.*", engine/outbox_events.h)
// report every write inside its transaction and every publish call for the OBX checks in properties/.
#include "engine/outbox.h"

#include <cmath>
#include <utility>

#include "engine/background.h"
#include "engine/buggify.h"
#include "engine/conventions.h"
#include "engine/errors.h"
#include "engine/outbox_events.h"
#include "engine/outbox_schema.h"
#include "engine/retry_policy.h"
#include "engine/variants.h"

namespace durasim {

using nlohmann::json;

namespace {

const std::vector<Migration> kOutboxMigrations = {
    {DURASIM_OUTBOX_MIGRATION,
     "CREATE TABLE " DURASIM_OUTBOX " ("
     " channel TEXT NOT NULL,"
     " key TEXT NOT NULL,"
     " version INTEGER NOT NULL,"
     " value TEXT NOT NULL,"
     " generation_id TEXT NOT NULL,"
     " attempt INTEGER NOT NULL DEFAULT 0,"
     " next_attempt_at INTEGER NOT NULL,"
     " last_error TEXT,"
     " last_error_name TEXT,"
     " staged_at INTEGER NOT NULL,"
     " PRIMARY KEY (channel, key));"
     "CREATE UNIQUE INDEX durability_outbox_version_idx ON " DURASIM_OUTBOX " (version);"
     "CREATE INDEX durability_outbox_due_idx ON " DURASIM_OUTBOX " (channel, next_attempt_at);"
     "CREATE INDEX durability_outbox_pending_idx ON " DURASIM_OUTBOX " (next_attempt_at);"
     "CREATE TABLE " DURASIM_OUTBOX_SEQ " (id INTEGER PRIMARY KEY CHECK (id = 1), next_version INTEGER NOT NULL);"
     "INSERT INTO " DURASIM_OUTBOX_SEQ " (id, next_version) VALUES (1, 1);",
     "DROP TABLE IF EXISTS " DURASIM_OUTBOX_SEQ ";"
     "DROP TABLE IF EXISTS " DURASIM_OUTBOX ";"}};

constexpr char kRetryName[] = "Retry";
constexpr char kRetryMessage[] = "Retried by publisher";

std::string inQuotes(const std::string& s) { return "\"" + s + "\""; }

// Owns the publish function and its batch for as long as the call runs (a deadline may leave it
// running).
Task<void> publishBatch(OutboxPublish publish, std::vector<OutboxEntry> entries) {
  Task<void> publishing = publish(std::move(entries));
  co_await publishing;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The hub (outbox.md 4): the participant "outbox" shared by every channel of one scheduler.

class OutboxHub final : public Participant {
 public:
  explicit OutboxHub(Engine& engine) : engine_(engine), ctx_(engine.context()), passes_(ctx_) { engine_.registerParticipant(*this); }
  ~OutboxHub() override { engine_.unregisterParticipant(*this); }
  OutboxHub(const OutboxHub&) = delete;
  OutboxHub& operator=(const OutboxHub&) = delete;

  bool attached(const std::string& channel) const { return channels_.count(channel) > 0; }
  void attach(DurabilityOutbox& outbox) { channels_[outbox.channel()] = &outbox; }
  void detach(const std::string& channel) { channels_.erase(channel); }

  std::string kind() const override { return "outbox"; }
  std::optional<int64_t> nextPendingAt(StorageTxn& txn) override {
    return txn.exec("SELECT MIN(next_attempt_at) AS next FROM " DURASIM_OUTBOX).one().optInt64("next");
  }
  Task<void> runDue(int64_t startedAt, std::optional<AlarmInvocationInfo> info) override;

 private:
  Task<void> passOf(std::string channel);
  Task<void> postpone(std::string channel);

  Engine& engine_;
  ObjectContext& ctx_;
  PassSet passes_;  // one pass per channel
  std::map<std::string, DurabilityOutbox*> channels_;
};

Task<void> OutboxHub::runDue(int64_t, std::optional<AlarmInvocationInfo>) {
  const int64_t now = ctx_.clock.now();
  std::vector<std::shared_ptr<PassSet::Pass>> passes;
  for (const SqlRow& r :
       ctx_.storage.exec("SELECT DISTINCT channel FROM " DURASIM_OUTBOX " WHERE next_attempt_at <= ? ORDER BY channel", now).toVector()) {
    const std::string channel = r.text("channel");
    passes.push_back(passes_.join(channel, [this, channel] { return passOf(channel); }));
  }
  Task<void> awaiting = PassSet::awaitAll(std::move(passes));
  co_await awaiting;
}

// One pass of `channel`, between its begin and end probes: the attached outbox's, or a
// postponement when no outbox attaches the channel.
Task<void> OutboxHub::passOf(std::string channel) {
  ctx_.probe(outbox_events::kPassBegin, {{"channel", channel}});
  std::exception_ptr error;
  try {
    const auto outbox = channels_.find(channel);
    Task<void> running = outbox != channels_.end() ? outbox->second->runPass() : postpone(channel);
    co_await running;
  } catch (...) {
    error = std::current_exception();
  }
  ctx_.probe(outbox_events::kPassEnd, {{"channel", channel}, {"failed", error != nullptr}});
  if (error) std::rethrow_exception(error);
}

// outbox.md 4, "Unattached channel": rows retained with their attempt and value, due again in 60 s.
Task<void> OutboxHub::postpone(std::string channel) {
  Permit permit = co_await engine_.acquirePermit();
  ctx_.logger.error("durability.outbox.channel_missing", {{"channel", channel}});
  const int64_t now = ctx_.clock.now();
  co_await engine_.transaction("outbox", [&](EngineTxn& txn) {
    const int64_t until = now + kOutboxUnattachedDelayMs;
    const int64_t postponed =
        txn.sql.exec("UPDATE " DURASIM_OUTBOX " SET next_attempt_at = ? WHERE channel = ? AND next_attempt_at <= ?", until, channel, now)
            .rowsWritten();
    ctx_.probe(outbox_events::kPostponeWrite, {{"channel", channel}, {"until", until}, {"postponed", postponed}});
    txn.reconcile();
  });
}

// ---------------------------------------------------------------------------------------------
// Entries and their retry marks (outbox.md 5.3)

struct OutboxEntry::Mark {
  DurabilityOutbox* owner = nullptr;
  bool closed = false;  // the batch closed: marks are refused
  bool marked = false;
  std::optional<int64_t> delayMs;  // the last one given
};

void OutboxEntry::retry(std::optional<int64_t> delayMs) {
  if (!mark_) throw OutboxSettlementError(key, version);  // not an entry of a published batch
  ObjectContext& ctx = mark_->owner->ctx_;
  auto probe = [&](json refused) {
    ctx.probe(outbox_events::kMark, {{"channel", channel},
                                     {"key", key},
                                     {"version", version},
                                     {"delayMs", delayMs ? json(*delayMs) : json()},
                                     {"refused", std::move(refused)}});
  };
  if (mark_->closed) {
    probe("closed");
    throw OutboxSettlementError(key, version);
  }
  if (delayMs && !isSafeNonNegative(*delayMs)) {
    probe("range");
    throw RangeError("delayMs must be a non-negative safe integer");
  }
  mark_->marked = true;
  if (delayMs) mark_->delayMs = delayMs;
  probe(nullptr);
}

// One claimed row, as the claim left it.
struct DurabilityOutbox::Row {
  std::string key, value, generation;
  int64_t version = 0, attempt = 0, stagedAt = 0;
};

// ---------------------------------------------------------------------------------------------
// Construction, schema (outbox.md 1-2)

DurabilityOutbox::DurabilityOutbox(DurabilityScheduler& scheduler, OutboxOptions options)
    : ctx_(scheduler.engine().context()),
      engine_(scheduler.engine()),
      options_(std::move(options)),
      variants_{variants::enabled(ctx_, variants::kOutboxAckIgnoresGeneration), variants::enabled(ctx_, variants::kOutboxStageOwnTransaction),
                variants::enabled(ctx_, variants::kOutboxVersionFromRows), variants::enabled(ctx_, variants::kOutboxGiveUpAfterMaxAttempts)} {
  if (options_.channel.empty()) throw TypeError("Outbox channel must be a non-empty string");
  if (!options_.publish) throw TypeError("Outbox requires a publish function");
  if (options_.maxBatchSize <= 0) throw RangeError("maxBatchSize must be a positive integer");
  if (!isSafeNonNegative(options_.batchDelayMs)) throw RangeError("batchDelayMs must be a non-negative integer");
  if (options_.attemptTimeoutMs <= 0) throw RangeError("attemptTimeoutMs must be a positive integer");
  hub_ = engine_.shared<OutboxHub>("outbox", [this] { return std::make_shared<OutboxHub>(engine_); });
  if (hub_->attached(options_.channel))
    throw TypeError("Outbox channel " + inQuotes(options_.channel) + " is already attached to this scheduler");
  migrate(ctx_.storage);
  hub_->attach(*this);
  ctx_.probe(outbox_events::kOptions, {{"channel", options_.channel},
                                       {"maxBatchSize", options_.maxBatchSize},
                                       {"batchDelayMs", options_.batchDelayMs},
                                       {"attemptTimeoutMs", options_.attemptTimeoutMs}});
}

DurabilityOutbox::~DurabilityOutbox() { hub_->detach(options_.channel); }

const std::vector<Migration>& DurabilityOutbox::migrations() { return kOutboxMigrations; }

MigrationResult DurabilityOutbox::migrate(ObjectStorage& storage, MigrationTarget target) {
  return durasim::migrate(storage, "outbox", kOutboxMigrations, std::move(target));
}

// ---------------------------------------------------------------------------------------------
// Stage (outbox.md 3)

int64_t DurabilityOutbox::stage(StorageTxn& txn, const std::string& key, const json& value) {
  if (key.empty()) throw RangeError("Outbox key must be a non-empty string");
  std::optional<std::string> serialized = serialize(value);
  if (!serialized) throw RangeError("Outbox value is not serializable JSON");
  if (variants_.stageOwnTransaction) return stageAlone(txn, key, std::move(*serialized));
  return writeStage(txn, key, *serialized);
}

// The stage's writes, in the transaction `txn`: the version from the counter (or, under the variant
// version_from_rows, from the stored rows), the row replaced with a new generation.
int64_t DurabilityOutbox::writeStage(StorageTxn& txn, const std::string& key, const std::string& serialized) {
  const int64_t now = ctx_.clock.now();
  int64_t version = 0;
  if (variants_.versionFromRows) {
    version = txn.exec("SELECT COALESCE(MAX(version), 0) + 1 AS v FROM " DURASIM_OUTBOX).one().int64("v");
  } else {
    version = txn.exec("SELECT next_version FROM " DURASIM_OUTBOX_SEQ " WHERE id = 1").one().int64("next_version");
    txn.exec("UPDATE " DURASIM_OUTBOX_SEQ " SET next_version = ? WHERE id = 1", version + 1);
  }
  const std::string generation = ctx_.random.uuid();
  const int64_t due = firstAttemptAt(now);
  txn.exec("INSERT INTO " DURASIM_OUTBOX " (channel, key, version, value, generation_id, attempt, next_attempt_at, last_error,"
           " last_error_name, staged_at) VALUES (?, ?, ?, ?, ?, 0, ?, NULL, NULL, ?)"
           " ON CONFLICT (channel, key) DO UPDATE SET version = excluded.version, value = excluded.value,"
           " generation_id = excluded.generation_id, attempt = 0, next_attempt_at = excluded.next_attempt_at, last_error = NULL,"
           " last_error_name = NULL, staged_at = excluded.staged_at",
           options_.channel, key, version, serialized, generation, due, now);
  ctx_.probe(outbox_events::kStageWrite, {{"channel", options_.channel},
                                          {"key", key},
                                          {"version", version},
                                          {"generation", generation},
                                          {"value", serialized},
                                          {"at", now},
                                          {"firstAttemptAt", due}});
  engine_.reconcileWithin(txn, "outbox");
  txn.afterCommit([this, key] { emit(event(LifecycleType::registered, key, 0)); });
  return version;
}

// The variant stage_own_transaction: the version the counter will give, returned at once; the
// writes commit later in an engine transaction of their own, whatever becomes of the application's.
int64_t DurabilityOutbox::stageAlone(StorageTxn& txn, const std::string& key, std::string serialized) {
  const int64_t next = txn.exec("SELECT next_version FROM " DURASIM_OUTBOX_SEQ " WHERE id = 1").one().int64("next_version");
  const int64_t version = next + stagesAlone_++;
  engine_.background(commitAlone(key, std::move(serialized)), "outbox_stage");
  return version;
}

Task<void> DurabilityOutbox::commitAlone(std::string key, std::string serialized) {
  Task<int64_t> staging = engine_.transaction("outbox", [&](EngineTxn& txn) { return writeStage(txn.sql, key, serialized); });
  co_await staging;
  --stagesAlone_;
}

Task<int64_t> DurabilityOutbox::stage(std::string key, json value) {
  Task<int64_t> staging = ctx_.storage.transaction([&](StorageTxn& txn) { return stage(txn, key, value); });
  co_return co_await staging;
}

Task<int64_t> DurabilityOutbox::pending() {
  const int64_t rows =
      ctx_.storage.exec("SELECT COUNT(*) AS n FROM " DURASIM_OUTBOX " WHERE channel = ?", options_.channel).one().int64("n");
  ctx_.probe(outbox_events::kPending, {{"channel", options_.channel}, {"pending", rows}});
  co_return rows;
}

int64_t DurabilityOutbox::firstAttemptAt(int64_t t) const {
  const int64_t b = options_.batchDelayMs;
  return b == 0 ? t : ((t + b - 1) / b) * b;
}

// ---------------------------------------------------------------------------------------------
// A channel pass (outbox.md 5)

Task<void> DurabilityOutbox::runPass() {
  Permit permit = co_await engine_.acquirePermit();
  Task<void> yielding = buggify::yieldIf(ctx_, buggify::kOutboxYieldBeforeClaim);
  co_await yielding;
  const int64_t now = ctx_.clock.now();
  std::vector<Row> claimed = co_await engine_.transaction("outbox", [&](EngineTxn& txn) { return claim(txn, now); });
  if (claimed.empty()) co_return;

  std::vector<OutboxEntry> entries;
  json handed = json::array();
  for (const Row& row : claimed) {
    OutboxEntry entry;
    entry.channel = options_.channel;
    entry.key = row.key;
    entry.version = row.version;
    entry.value = deserialize(row.value);
    entry.attempt = row.attempt;
    entry.stagedAt = row.stagedAt;
    entry.mark_ = std::make_shared<OutboxEntry::Mark>();
    entry.mark_->owner = this;
    entries.push_back(std::move(entry));
    handed.push_back({{"key", row.key}, {"version", row.version}, {"attempt", row.attempt}});
  }
  ctx_.probe(outbox_events::kPublish, {{"channel", options_.channel}, {"entries", std::move(handed)}});
  for (const Row& row : claimed) emit(event(LifecycleType::attempt_started, row.key, row.attempt));

  std::shared_ptr<Background> publishing = startBackground(ctx_, publishBatch(options_.publish, entries));
  const bool inTime = co_await publishing->done->wait(options_.attemptTimeoutMs);
  for (const OutboxEntry& entry : entries) entry.mark_->closed = true;
  const std::exception_ptr failure =
      inTime ? publishing->error : std::make_exception_ptr(OutboxPublishTimeoutError(options_.attemptTimeoutMs));
  ctx_.probe(outbox_events::kPublished,
             {{"channel", options_.channel}, {"threw", inTime && publishing->error != nullptr}, {"timedOut", !inTime}});
  Task<void> beforeSettle = buggify::yieldIf(ctx_, buggify::kOutboxYieldBeforeSettle);
  co_await beforeSettle;
  Task<void> settling = settle(std::move(claimed), std::move(entries), failure);
  co_await settling;
}

// outbox.md 5.1: the due rows of this channel, first stages before retries, each in version order,
// claimed in this one transaction with the publish deadline as their due time.
std::vector<DurabilityOutbox::Row> DurabilityOutbox::claim(EngineTxn& txn, int64_t now) {
  const int64_t deadline = now + options_.attemptTimeoutMs;
  std::vector<Row> claimed;
  json written = json::array();
  for (const SqlRow& r : txn.sql
                             .exec("SELECT key, version, value, generation_id, attempt, staged_at FROM " DURASIM_OUTBOX
                                   " WHERE channel = ? AND next_attempt_at <= ?"
                                   " ORDER BY CASE WHEN attempt = 0 THEN 0 ELSE 1 END, version LIMIT ?",
                                   options_.channel, now, options_.maxBatchSize)
                             .toVector()) {
    Row row{r.text("key"), r.text("value"), r.text("generation_id"), r.int64("version"), r.int64("attempt"), r.int64("staged_at")};
    const bool matched = txn.sql
                             .exec("UPDATE " DURASIM_OUTBOX " SET attempt = attempt + 1, next_attempt_at = ?"
                                   " WHERE channel = ? AND key = ? AND generation_id = ? AND attempt = ?",
                                   deadline, options_.channel, row.key, row.generation, row.attempt)
                             .rowsWritten() > 0;
    if (!matched) continue;
    row.attempt += 1;
    written.push_back({{"key", row.key}, {"version", row.version}, {"generation", row.generation}, {"attempt", row.attempt}});
    claimed.push_back(std::move(row));
  }
  ctx_.probe(outbox_events::kClaimWrite,
             {{"channel", options_.channel}, {"claimAt", now}, {"deadline", deadline}, {"claimed", std::move(written)}});
  txn.reconcile();
  return claimed;
}

// outbox.md 5.4: one transaction acknowledges every unmarked entry of a batch that returned (only
// while its row still holds the published generation) and reschedules the others; after a throw or
// a timeout it reschedules them all. Writes that match no row are skipped.
Task<void> DurabilityOutbox::settle(std::vector<Row> claimed, std::vector<OutboxEntry> entries, std::exception_ptr failure) {
  const std::optional<ErrorInfo> error = failure ? std::optional<ErrorInfo>(serializeError(failure)) : std::nullopt;
  struct Settled {
    bool acked = false, matched = false;
    int64_t next = 0;
  };
  const std::vector<Settled> settled = co_await engine_.transaction("outbox", [&](EngineTxn& txn) {
    const int64_t t = ctx_.clock.now();
    std::vector<Settled> out;
    json acked = json::array(), retried = json::array();
    for (std::size_t i = 0; i < claimed.size(); ++i) {
      const Row& row = claimed[i];
      Settled s;
      if (!failure && !entries[i].mark_->marked) {
        s.acked = true;
        s.matched = (variants_.ackIgnoresGeneration
                         ? txn.sql.exec("DELETE FROM " DURASIM_OUTBOX " WHERE channel = ? AND key = ?", options_.channel, row.key)
                         : txn.sql.exec("DELETE FROM " DURASIM_OUTBOX " WHERE channel = ? AND key = ? AND generation_id = ?",
                                        options_.channel, row.key, row.generation))
                        .rowsWritten() > 0;
        acked.push_back({{"key", row.key}, {"generation", row.generation}, {"matched", s.matched}});
      } else {
        const ErrorInfo why = error ? *error : ErrorInfo{kRetryName, kRetryMessage};
        s.next = t + delayFor(row, entries[i], t);
        s.matched = txn.sql
                        .exec("UPDATE " DURASIM_OUTBOX " SET next_attempt_at = ?, last_error = ?, last_error_name = ?"
                              " WHERE channel = ? AND key = ? AND generation_id = ? AND attempt = ?",
                              s.next, why.message, why.name, options_.channel, row.key, row.generation, row.attempt)
                        .rowsWritten() > 0;
        if (variants_.giveUp && row.attempt >= variants::kOutboxGiveUpAttempts)
          txn.sql.exec("DELETE FROM " DURASIM_OUTBOX " WHERE channel = ? AND key = ? AND generation_id = ?", options_.channel, row.key,
                       row.generation);
        retried.push_back({{"key", row.key},
                           {"generation", row.generation},
                           {"attempt", row.attempt},
                           {"next", s.next},
                           {"error", {{"name", why.name}, {"message", why.message}}},
                           {"matched", s.matched}});
      }
      out.push_back(s);
    }
    ctx_.probe(outbox_events::kSettleWrite, {{"channel", options_.channel}, {"at", t}, {"acked", std::move(acked)}, {"retried", std::move(retried)}});
    txn.reconcile();
    return out;
  });
  for (std::size_t i = 0; i < claimed.size(); ++i) {
    if (!settled[i].matched) continue;
    LifecycleEvent settledEvent = event(LifecycleType::attempt_settled, claimed[i].key, claimed[i].attempt);
    settledEvent.outcome = settled[i].acked ? SettleOutcome::completed : SettleOutcome::retry_scheduled;
    if (!settled[i].acked) {
      settledEvent.error = error ? *error : ErrorInfo{kRetryName, kRetryMessage};
      settledEvent.nextAttemptAt = settled[i].next;
    }
    emit(std::move(settledEvent));
  }
}

// outbox.md 5.5: the entry's explicit delay, else the policy's for its attempt; a policy that throws
// or gives an unusable value falls back to the default (the outbox never gives up).
int64_t DurabilityOutbox::delayFor(const Row& row, const OutboxEntry& entry, int64_t now) {
  if (entry.mark_->delayMs) return *entry.mark_->delayMs;
  if (options_.retries.delay) {
    std::optional<std::string> problem;
    double raw = 0;
    try {
      raw = options_.retries.delay(row.attempt);
    } catch (...) {
      problem = serializeError(std::current_exception()).message;
    }
    if (!problem && (!std::isfinite(raw) || raw < 0 || jsRound(raw) > static_cast<double>(kMaxSafeInteger) ||
                     static_cast<double>(now) + jsRound(raw) > static_cast<double>(kMaxSafeInteger)))
      problem = "invalid delay";
    if (!problem) return static_cast<int64_t>(jsRound(raw));
    ctx_.logger.error("durability.outbox.retry_policy_failed", {{"channel", options_.channel}, {"key", row.key}, {"error", *problem}});
  }
  return static_cast<int64_t>(jsRound(defaultDelay(row.attempt, ctx_.random)));
}

// ---------------------------------------------------------------------------------------------
// Lifecycle events (outbox.md 9): entity "outbox", name = channel, id = key.

LifecycleEvent DurabilityOutbox::event(LifecycleType type, const std::string& key, int64_t attempt) const {
  LifecycleEvent e;
  e.type = type;
  e.name = options_.channel;
  e.id = key;
  e.attempt = attempt;
  return e;
}

void DurabilityOutbox::emit(LifecycleEvent event) const {
  event.entityKind = "outbox";
  event.at = ctx_.clock.now();
  emitLifecycle(options_.onLifecycleEvent, ctx_.logger, event);
}

}  // namespace durasim
