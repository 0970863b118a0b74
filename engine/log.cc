// DurabilityLog (log.md 1-6, 8); see log.h. Appends are one storage transaction that assigns dense
// offsets from durability_log_seq; reads see only [oldestOffset, nextOffset); cursors move forward only;
// trim removes the oldest hot records per retention, flushing them to cold storage first when it is
// configured (flush intent, cold.write, then one transaction for the segment and the deletion).
// Probes ("log.*") report appends, commits and trim passes. Research variants: H20
// (log.segment_flush_two_units) in trim and in the segment lookup of read; H19
// (log.migrate_null_keeps_lease_tables) in migrate(ctx, none).
#include "engine/log.h"

#include <algorithm>
#include <exception>
#include <limits>
#include <map>
#include <set>
#include <string_view>
#include <utility>

#include "engine/buggify.h"
#include "engine/conventions.h"
#include "engine/errors.h"
#include "engine/log_events.h"
#include "engine/log_internal.h"
#include "engine/log_schema.h"
#include "engine/variants.h"

namespace durasim {

using log_detail::Bounds;
using log_detail::readBounds;

namespace {

const std::vector<Migration> kLogMigrations = {
    {DURASIM_LOG_MIGRATION,
     "CREATE TABLE " DURASIM_LOG_RECORDS " ("
     " \"offset\" INTEGER PRIMARY KEY,"
     " dedup_key TEXT NOT NULL UNIQUE,"
     " payload TEXT NOT NULL,"
     " bytes INTEGER NOT NULL,"
     " appended_at INTEGER NOT NULL);"
     "CREATE INDEX durability_log_records_appended_idx ON " DURASIM_LOG_RECORDS " (appended_at, \"offset\");"
     "CREATE TABLE " DURASIM_LOG_CURSORS " ("
     " consumer TEXT PRIMARY KEY,"
     " \"offset\" INTEGER NOT NULL,"
     " committed_at INTEGER NOT NULL);"
     "CREATE TABLE " DURASIM_LOG_SEGMENTS " ("
     " first_offset INTEGER PRIMARY KEY,"
     " last_offset INTEGER NOT NULL,"
     " locator TEXT NOT NULL,"
     " bytes INTEGER NOT NULL,"
     " flushed_at INTEGER NOT NULL);"
     "CREATE TABLE " DURASIM_LOG_SEQ " ("
     " id INTEGER PRIMARY KEY CHECK (id = 1),"
     " next_offset INTEGER NOT NULL,"
     " total_bytes INTEGER NOT NULL);"
     "INSERT INTO " DURASIM_LOG_SEQ " (id, next_offset, total_bytes) VALUES (1, 0, 0);"
     "CREATE TABLE " DURASIM_LOG_FLUSH " ("
     " id INTEGER PRIMARY KEY CHECK (id = 1),"
     " first_offset INTEGER NOT NULL,"
     " last_offset INTEGER NOT NULL,"
     " created_at INTEGER NOT NULL);",
     "DROP TABLE IF EXISTS " DURASIM_LOG_FLUSH ";"
     "DROP TABLE IF EXISTS " DURASIM_LOG_SEQ ";"
     "DROP TABLE IF EXISTS " DURASIM_LOG_SEGMENTS ";"
     "DROP TABLE IF EXISTS " DURASIM_LOG_CURSORS ";"
     "DROP TABLE IF EXISTS " DURASIM_LOG_RECORDS ";"}};

const std::vector<Migration> kLogLeaseMigrations = {
    {DURASIM_LOG_LEASES_MIGRATION,
     "CREATE TABLE " DURASIM_LOG_LEASES " ("
     " batch_id TEXT PRIMARY KEY,"
     " consumer TEXT NOT NULL,"
     " first_offset INTEGER NOT NULL,"
     " last_offset INTEGER NOT NULL,"
     " state TEXT NOT NULL CHECK (state IN ('active','pending','acked','skipped')),"
     " attempt INTEGER NOT NULL,"
     " expires_at INTEGER NOT NULL,"
     " created_at INTEGER NOT NULL);"
     "CREATE INDEX durability_log_leases_claim_idx ON " DURASIM_LOG_LEASES " (consumer, state, expires_at, first_offset);"
     "CREATE INDEX durability_log_leases_order_idx ON " DURASIM_LOG_LEASES " (consumer, first_offset);"
     "CREATE TABLE " DURASIM_LOG_ALLOCATIONS " ("
     " consumer TEXT PRIMARY KEY,"
     " allocated_offset INTEGER NOT NULL);",
     "DROP TABLE IF EXISTS " DURASIM_LOG_ALLOCATIONS ";"
     "DROP TABLE IF EXISTS " DURASIM_LOG_LEASES ";"}};

// The keys of a batch without repeats, in order of first occurrence.
std::vector<std::string> distinctInOrder(const std::vector<std::string>& keys) {
  std::vector<std::string> distinct;
  std::set<std::string_view> seen;
  for (const std::string& key : keys)
    if (seen.insert(key).second) distinct.push_back(key);
  return distinct;
}

// The hot offsets of those of `keys` (distinct) that are dedup hits: one lookup per 100 keys, the
// platform's bound on a statement's parameters (docs/decisions.md, "One dedup lookup per batch").
std::map<std::string, int64_t> lookUpHotKeys(StorageTxn& txn, const std::vector<std::string>& keys) {
  constexpr std::size_t kKeysPerLookup = 100;
  std::map<std::string, int64_t> hits;
  for (std::size_t from = 0; from < keys.size(); from += kKeysPerLookup) {
    const std::size_t n = std::min(kKeysPerLookup, keys.size() - from);
    std::string sql = "SELECT dedup_key, \"offset\" FROM " DURASIM_LOG_RECORDS " WHERE dedup_key IN (?";
    for (std::size_t i = 1; i < n; ++i) sql += ", ?";
    sql += ")";
    std::vector<SqlValue> params(keys.begin() + static_cast<std::ptrdiff_t>(from), keys.begin() + static_cast<std::ptrdiff_t>(from + n));
    for (const SqlRow& row : txn.execValues(sql, std::move(params)).toVector()) hits[row.text("dedup_key")] = row.int64("offset");
  }
  return hits;
}

constexpr char kLogCapability[] = "log";
constexpr char kLeaseCapability[] = "logLeases";

void requirePositive(const std::optional<int64_t>& value, const char* name) {
  if (value && *value <= 0) throw RangeError(std::string(name) + " must be a positive integer");
}

void validate(const LogOptions& o) {
  requirePositive(o.maxBatchSize, "maxBatchSize");
  if (o.retention) {
    requirePositive(o.retention->maxAgeMs, "retention.maxAgeMs");
    requirePositive(o.retention->maxRecords, "retention.maxRecords");
    requirePositive(o.retention->maxBytes, "retention.maxBytes");
    if (o.retention->maxBytes && *o.retention->maxBytes > kMaxLogBytes)
      throw RangeError("retention.maxBytes must not exceed 1073741824 bytes");
  }
  if (o.leases) {
    requirePositive(o.leases->maxParallelism, "leases.maxParallelism");
    requirePositive(o.leases->leaseMs, "leases.leaseMs");
    requirePositive(o.leases->maxAttempts, "leases.maxAttempts");
  }
}

nlohmann::json describeOptions(const LogOptions& o) {
  using log_detail::optionalJson;
  nlohmann::json fields = {{"maxBatchSize", o.maxBatchSize}, {"cold", o.cold.has_value()}};
  fields["retention"] = o.retention ? nlohmann::json{{"maxAgeMs", optionalJson(o.retention->maxAgeMs)},
                                                     {"maxRecords", optionalJson(o.retention->maxRecords)},
                                                     {"maxBytes", optionalJson(o.retention->maxBytes)}}
                                   : nlohmann::json();
  fields["leases"] = o.leases ? nlohmann::json{{"maxParallelism", o.leases->maxParallelism},
                                               {"leaseMs", o.leases->leaseMs},
                                               {"maxAttempts", optionalJson(o.leases->maxAttempts)},
                                               {"onPoison", static_cast<bool>(o.leases->onPoison)}}
                              : nlohmann::json();
  return fields;
}

bool holds(const std::vector<Migration>& list, const std::string& name) {
  return std::any_of(list.begin(), list.end(), [&](const Migration& m) { return m.name == name; });
}

// Runs `finish` of routing.begin on every exit path of append.
struct Finish {
  std::function<void()> fn;
  ~Finish() {
    if (fn) fn();
  }
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Construction, schema (log.md 1-2)

DurabilityLog::DurabilityLog(DurabilityScheduler& scheduler, LogOptions options)
    : ctx_(scheduler.engine().context()),
      options_(std::move(options)),
      segmentFlushTwoUnits_(variants::enabled(ctx_, variants::kSegmentFlushTwoUnits)),
      routing_(options_.routing) {
  validate(options_);
  if (!routing_) routing_ = &ownRouting_.emplace(ctx_.clock);
  migrate(ctx_.storage, MigrationTarget::latest());
  if (options_.leases) durasim::migrate(ctx_.storage, kLeaseCapability, kLogLeaseMigrations, MigrationTarget::latest());
  ctx_.probe(log_events::kOptions, describeOptions(options_));
}

const std::vector<Migration>& DurabilityLog::migrations() { return kLogMigrations; }
const std::vector<Migration>& DurabilityLog::leaseMigrations() { return kLogLeaseMigrations; }

MigrationResult DurabilityLog::migrate(ObjectStorage& storage, MigrationTarget target) {
  switch (target.kind()) {
    case MigrationTarget::Kind::none: {
      MigrationResult leases = durasim::migrate(storage, kLeaseCapability, kLogLeaseMigrations, MigrationTarget::none());
      MigrationResult log = durasim::migrate(storage, kLogCapability, kLogMigrations, MigrationTarget::none());
      leases.applied.insert(leases.applied.end(), log.applied.begin(), log.applied.end());
      leases.rolledBack.insert(leases.rolledBack.end(), log.rolledBack.begin(), log.rolledBack.end());
      return leases;
    }
    case MigrationTarget::Kind::named:
      if (holds(kLogLeaseMigrations, target.name()))
        return durasim::migrate(storage, kLeaseCapability, kLogLeaseMigrations, std::move(target));
      return durasim::migrate(storage, kLogCapability, kLogMigrations, std::move(target));
    case MigrationTarget::Kind::latest:
    default:
      return durasim::migrate(storage, kLogCapability, kLogMigrations, std::move(target));
  }
}

MigrationResult DurabilityLog::migrate(const ObjectContext& ctx, MigrationTarget target) {
  if (target.kind() == MigrationTarget::Kind::none && variants::enabled(ctx, variants::kMigrateNullKeepsLeaseTables))
    return durasim::migrate(ctx.storage, kLogCapability, kLogMigrations, std::move(target));  // H19: the lease tables stay
  return migrate(ctx.storage, std::move(target));
}

// ---------------------------------------------------------------------------------------------
// Append (log.md 3)

Task<EnqueueResult<std::vector<int64_t>>> DurabilityLog::append(LogAppendInput record) {
  std::vector<LogAppendInput> batch;
  batch.push_back(std::move(record));
  Task<EnqueueResult<std::vector<int64_t>>> appending = append(std::move(batch));
  co_return co_await appending;
}

Task<EnqueueResult<std::vector<int64_t>>> DurabilityLog::append(std::vector<LogAppendInput> records) {
  using Result = EnqueueResult<std::vector<int64_t>>;
  Task<void> yielding = buggify::yieldIf(ctx_, buggify::kLogYieldBeforeAppend);
  co_await yielding;
  Finish finish{routing_->begin(Direction::inbound)};

  // 1. Definite rejections: nothing is written.
  std::optional<std::string> rejection;
  if (records.empty())
    rejection = "Append requires at least one record";
  else if (static_cast<int64_t>(records.size()) > options_.maxBatchSize)
    rejection = "Append accepts at most " + std::to_string(options_.maxBatchSize) + " records";
  std::vector<std::string> keys, payloads;
  if (!rejection) {
    for (const LogAppendInput& r : records) {
      if (r.deduplicationKey && r.deduplicationKey->empty()) {
        rejection = "Deduplication key must be a non-empty string";
        break;
      }
    }
  }
  if (!rejection) {
    for (const LogAppendInput& r : records) {
      std::optional<std::string> payload = serialize(r.body);
      if (!payload) {
        rejection = "Record body is not serializable JSON";
        break;
      }
      payloads.push_back(std::move(*payload));
    }
  }
  if (rejection) {
    const ErrorInfo error = serializeError(std::make_exception_ptr(LogAppendError(*rejection)));
    ctx_.probe(log_events::kAppendRejected, {{"message", error.message}});
    LoadSnapshot snapshot = co_await load();
    co_return Result::rejected(error, std::move(snapshot));
  }

  // 2. Keys: the given one, or a fresh uuid.
  for (const LogAppendInput& r : records) keys.push_back(r.deduplicationKey ? *r.deduplicationKey : ctx_.random.uuid());

  // 3. One transaction.
  const int64_t now = ctx_.clock.now();
  std::vector<int64_t> offsets = co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    std::map<std::string, std::size_t> last;   // key -> index of its last occurrence
    for (std::size_t i = 0; i < keys.size(); ++i) last[keys[i]] = i;
    const std::vector<std::string> distinct = distinctInOrder(keys);
    std::map<std::string, int64_t> offsetOf = lookUpHotKeys(txn, distinct);  // key -> offset: the hits, then the new keys
    std::vector<std::string> fresh;                                          // new keys, by first occurrence
    for (const std::string& key : distinct)
      if (!offsetOf.count(key)) fresh.push_back(key);
    const int64_t first = txn.exec("SELECT next_offset FROM " DURASIM_LOG_SEQ " WHERE id = 1").one().int64("next_offset");
    int64_t next = first;
    if (!fresh.empty()) {
      int64_t added = 0;
      for (const std::string& key : fresh) {
        const std::string& payload = payloads[last[key]];
        const int64_t bytes = static_cast<int64_t>(payload.size());
        txn.exec("INSERT INTO " DURASIM_LOG_RECORDS " (\"offset\", dedup_key, payload, bytes, appended_at) VALUES (?, ?, ?, ?, ?)",
                 next, key, payload, bytes, now);
        offsetOf[key] = next++;
        added += bytes;
      }
      txn.exec("UPDATE " DURASIM_LOG_SEQ " SET next_offset = ?, total_bytes = total_bytes + ? WHERE id = 1", next, added);
    }
    std::vector<int64_t> out, bytes;
    for (const std::string& key : keys) out.push_back(offsetOf.at(key));
    for (const std::string& payload : payloads) bytes.push_back(static_cast<int64_t>(payload.size()));
    ctx_.probe(log_events::kAppendWrite, {{"keys", keys}, {"offsets", out}, {"new", fresh.size()}, {"first", first},
                                    {"next", next}, {"bytes", bytes}, {"at", now}});
    return out;
  });
  ctx_.probe(log_events::kAppend, {{"keys", keys}, {"offsets", offsets}});
  LoadSnapshot snapshot = co_await load();
  co_return Result::ok(std::move(offsets), std::move(snapshot));
}

// ---------------------------------------------------------------------------------------------
// Read and bounds (log.md 4)

Task<LogBounds> DurabilityLog::bounds() {
  const Bounds b = readBounds(ctx_.storage);
  co_return LogBounds{b.oldest, b.hot, b.next};
}

Task<LogPage> DurabilityLog::read(int64_t from, std::optional<int64_t> limit) {
  if (limit && *limit <= 0) throw RangeError("limit must be a positive integer");
  if (from < 0) throw LogAppendError("Offset must be a non-negative integer");
  const Bounds b = readBounds(ctx_.storage);
  if (from < b.oldest) throwReadTruncated(from, from, b.oldest);
  const int64_t capped = std::min(limit.value_or(options_.maxBatchSize), options_.maxBatchSize);

  LogPage page;
  if (from < b.hot) {
    // Rehydrate from the one cold segment holding `from` (segments are written by trim, log.md 6).
    const log_detail::SegmentLookup lookup =
        segmentFlushTwoUnits_ ? log_detail::SegmentLookup::unordered : log_detail::SegmentLookup::latestStart;
    std::optional<SqlRow> seg = log_detail::segmentHolding(ctx_.storage, from, lookup);
    if (!seg || !options_.cold || !options_.cold->read) throwReadTruncated(from, from, std::max(from + 1, b.hot));
    const std::string locator = seg->text("locator");
    Task<std::optional<std::vector<LogRecord>>> loading = options_.cold->read(locator);
    std::optional<std::vector<LogRecord>> loaded = co_await loading;
    if (!loaded) throwReadTruncated(from, from, std::max(from + 1, b.hot));
    std::sort(loaded->begin(), loaded->end(), [](const LogRecord& x, const LogRecord& y) { return x.offset < y.offset; });
    // Only the gap-free run starting at `from` is returned: a page never skips an offset (LOG-08).
    for (LogRecord& r : *loaded) {
      if (r.offset < from) continue;
      if (r.offset != from + static_cast<int64_t>(page.records.size()) || static_cast<int64_t>(page.records.size()) == capped) break;
      page.records.push_back(std::move(r));
    }
    if (page.records.empty()) throwReadTruncated(from, from, std::max(from + 1, b.hot));
  } else {
    page.records = log_detail::hotRecords(ctx_.storage, from, std::min(b.next, from + capped) - 1);
  }
  page.nextOffset = page.records.empty() ? std::max(from, b.next) : page.records.back().offset + 1;
  page.lag = std::max<int64_t>(0, b.next - page.nextOffset);
  EventFields fields = {{"from", from},         {"limit", log_detail::optionalJson(limit)},
                           {"capped", capped},     {"nextOffset", page.nextOffset},
                           {"lag", page.lag},      {"oldest", b.oldest},
                           {"hot", b.hot},         {"next", b.next}};
  log_detail::describeRecords(fields, page.records);
  ctx_.probe(log_events::kRead, std::move(fields));
  co_return page;
}

void DurabilityLog::throwReadTruncated(int64_t from, int64_t requested, int64_t oldest) {
  ctx_.probe(log_events::kReadTruncated, {{"from", from}, {"requested", requested}, {"oldest", oldest}});
  throw LogTruncatedError(requested, oldest);
}

// ---------------------------------------------------------------------------------------------
// Cursors (log.md 5)

Task<std::optional<int64_t>> DurabilityLog::cursor(std::string consumer) {
  co_return log_detail::storedCursor(ctx_.storage, consumer);
}

Task<void> DurabilityLog::commit(std::string consumer, int64_t offset) {
  if (offset < 0) throw LogAppendError("Offset must be a non-negative integer");
  const int64_t now = ctx_.clock.now();
  co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    const bool moved = log_detail::moveCursorForward(txn, consumer, offset, now);
    ctx_.probe(log_events::kCommitWrite, {{"consumer", consumer}, {"offset", offset}, {"moved", moved}});
  });
}

Task<std::map<std::string, int64_t>> DurabilityLog::cursors() {
  std::map<std::string, int64_t> out;
  for (const SqlRow& row : ctx_.storage.exec("SELECT consumer, \"offset\" FROM " DURASIM_LOG_CURSORS " ORDER BY consumer").toVector())
    out[row.text("consumer")] = row.int64("offset");
  co_return out;
}

// ---------------------------------------------------------------------------------------------
// Trim and cold flush (log.md 6)

Task<void> DurabilityLog::lockTrim() {
  if (!trimming_) {
    trimming_ = true;
    co_return;
  }
  std::shared_ptr<AsyncEvent> turn = ctx_.makeEvent();
  trimWaiters_.push_back(turn);
  co_await turn->wait();  // the releasing trim hands the lock over (trimming_ stays true)
}

void DurabilityLog::unlockTrim() {
  if (trimWaiters_.empty()) {
    trimming_ = false;
    return;
  }
  std::shared_ptr<AsyncEvent> next = trimWaiters_.front();
  trimWaiters_.pop_front();
  next->set();
}

Task<int64_t> DurabilityLog::trim() {
  const std::optional<LogRetention>& r = options_.retention;
  if (!r || (!r->maxAgeMs && !r->maxRecords && !r->maxBytes)) co_return 0;
  co_await lockTrim();
  struct Unlock {
    DurabilityLog* log;
    ~Unlock() { log->unlockTrim(); }
  } unlock{this};
  ctx_.probe(log_events::kTrimBegin, {{"now", ctx_.clock.now()}});
  Task<int64_t> running = trimLocked();
  const int64_t removed = co_await running;
  ctx_.probe(log_events::kTrimEnd, {{"removed", removed}, {"now", ctx_.clock.now()}});
  co_return removed;
}

// The hot rows one trim pass removes (log.md 6 step 2), in offset order, and where they came from.
struct DurabilityLog::TrimRange {
  struct Row {
    int64_t offset;
    std::string key;
    std::string payload;
    int64_t bytes;
    int64_t appendedAt;
  };
  static Row of(const SqlRow& row) {
    return Row{row.int64("offset"), row.text("dedup_key"), row.text("payload"), row.int64("bytes"), row.int64("appended_at")};
  }
  std::vector<Row> rows;
  int64_t first = 0, last = 0;
  bool fromIntent = false;   // an unfinished flush intent's range (its rows may be fewer than its offsets)
  bool staleIntent = false;  // without cold: a flush intent left by an incarnation with cold storage
};

namespace {

// Deletes the hot rows in [first, last] and lowers total_bytes by their bytes (floored at 0); returns
// the number of rows deleted.
int64_t deleteHotRange(StorageTxn& txn, int64_t first, int64_t last) {
  const int64_t bytes =
      txn.exec("SELECT COALESCE(SUM(bytes), 0) AS b FROM " DURASIM_LOG_RECORDS " WHERE \"offset\" >= ? AND \"offset\" <= ?", first, last)
          .one()
          .int64("b");
  const int64_t deleted =
      txn.exec("DELETE FROM " DURASIM_LOG_RECORDS " WHERE \"offset\" >= ? AND \"offset\" <= ?", first, last).rowsWritten();
  txn.exec("UPDATE " DURASIM_LOG_SEQ " SET total_bytes = MAX(0, total_bytes - ?) WHERE id = 1", bytes);
  return deleted;
}

// Indexes the segment [first, last] under `locator`, replacing a row with the same first offset.
void upsertSegment(StorageTxn& txn, int64_t first, int64_t last, const std::string& locator, int64_t bytes, int64_t now) {
  txn.exec("INSERT INTO " DURASIM_LOG_SEGMENTS " (first_offset, last_offset, locator, bytes, flushed_at) VALUES (?, ?, ?, ?, ?)"
           " ON CONFLICT(first_offset) DO UPDATE SET last_offset = excluded.last_offset, locator = excluded.locator,"
           " bytes = excluded.bytes, flushed_at = excluded.flushed_at",
           first, last, locator, bytes, now);
}

}  // namespace

Task<int64_t> DurabilityLog::trimLocked() {
  int64_t removed = 0;
  for (;;) {
    const int64_t now = ctx_.clock.now();
    std::optional<TrimRange> range = chooseTrimRange(now);
    if (!range) co_return removed;
    const int64_t first = range->first, last = range->last, size = static_cast<int64_t>(range->rows.size());
    const bool dropIntent = range->staleIntent;
    Task<int64_t> removing = options_.cold ? flushTrimRange(std::move(*range), now) : deleteTrimRange(first, last, dropIntent);
    const int64_t deleted = co_await removing;
    // Step 6: a pass that deleted fewer rows than its range held met another writer.
    removed += deleted;
    if (deleted < size) co_return removed;
  }
}

// Step 2: with cold, an unfinished flush intent's range first (never under H20); otherwise the longest
// expiring prefix of the oldest maxBatchSize hot rows. nullopt: nothing expires.
std::optional<DurabilityLog::TrimRange> DurabilityLog::chooseTrimRange(int64_t now) {
  const LogRetention& r = *options_.retention;
  // Nothing is appended before the minimum: without maxAgeMs no record is expiring by age.
  const int64_t cutoff = r.maxAgeMs ? now - *r.maxAgeMs : std::numeric_limits<int64_t>::min();
  TrimRange range;
  if (options_.cold && !segmentFlushTwoUnits_) {
    std::optional<SqlRow> intent = ctx_.storage.exec("SELECT first_offset, last_offset FROM " DURASIM_LOG_FLUSH " WHERE id = 1").next();
    if (intent) {
      range.fromIntent = true;
      range.first = intent->int64("first_offset");
      range.last = intent->int64("last_offset");
      for (const SqlRow& row : ctx_.storage
                                   .exec("SELECT \"offset\", dedup_key, payload, bytes, appended_at FROM " DURASIM_LOG_RECORDS
                                         " WHERE \"offset\" >= ? AND \"offset\" <= ? ORDER BY \"offset\"",
                                         range.first, range.last)
                                   .toVector())
        range.rows.push_back(TrimRange::of(row));
      return range;
    }
  }
  const std::vector<SqlRow> oldest = ctx_.storage
                                         .exec("SELECT \"offset\", dedup_key, payload, bytes, appended_at FROM " DURASIM_LOG_RECORDS
                                               " ORDER BY \"offset\" LIMIT ?",
                                               options_.maxBatchSize)
                                         .toVector();
  if (oldest.empty()) return std::nullopt;
  SqlRow totals = ctx_.storage
                      .exec("SELECT (SELECT COUNT(*) FROM " DURASIM_LOG_RECORDS ") AS n,"
                            " (SELECT total_bytes FROM " DURASIM_LOG_SEQ " WHERE id = 1) AS total,"
                            " (SELECT COUNT(*) FROM " DURASIM_LOG_FLUSH ") AS intents")
                      .one();
  range.staleIntent = !options_.cold && totals.int64("intents") > 0;
  const int64_t excess = r.maxRecords ? std::max<int64_t>(0, totals.int64("n") - *r.maxRecords) : 0;
  int64_t over = r.maxBytes ? std::max<int64_t>(0, totals.int64("total") - *r.maxBytes) : 0;
  for (std::size_t i = 0; i < oldest.size(); ++i) {
    TrimRange::Row row = TrimRange::of(oldest[i]);
    const bool expiring = static_cast<int64_t>(i) < excess || over > 0 || row.appendedAt < cutoff;
    over -= row.bytes;
    if (!expiring) break;
    range.rows.push_back(std::move(row));
  }
  if (range.rows.empty()) return std::nullopt;
  range.first = range.rows.front().offset;
  range.last = range.rows.back().offset;
  return range;
}

// Step 3, without cold: one transaction deletes the range and, with `dropIntent`, the flush intent an
// incarnation with cold storage left (docs/decisions.md: its first offset is deleted here, so no
// segment can start there again; flushed later, it would index an empty segment).
Task<int64_t> DurabilityLog::deleteTrimRange(int64_t first, int64_t last, bool dropIntent) {
  const int64_t deleted = co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    const int64_t n = deleteHotRange(txn, first, last);
    if (dropIntent) txn.exec("DELETE FROM " DURASIM_LOG_FLUSH " WHERE id = 1");
    ctx_.probe(log_events::kTrimDelete, {{"first", first}, {"last", last}, {"deleted", n}});
    return n;
  });
  co_return deleted;
}

// Steps 4-5, with cold: the flush intent (unless resuming one), cold.write, then one transaction
// indexing the segment, deleting its hot rows and the intent. Returns the rows deleted.
Task<int64_t> DurabilityLog::flushTrimRange(TrimRange range, int64_t now) {
  const int64_t first = range.first, last = range.last;
  if (!range.fromIntent && !segmentFlushTwoUnits_) {
    co_await ctx_.storage.transaction([&](StorageTxn& txn) {
      txn.exec("INSERT INTO " DURASIM_LOG_FLUSH " (id, first_offset, last_offset, created_at) VALUES (1, ?, ?, ?)", first, last, now);
      ctx_.probe(log_events::kTrimIntent, {{"first", first}, {"last", last}});
    });
  }
  // An exception (or an empty locator) leaves the records hot and the intent kept.
  LogSegment segment;
  segment.firstOffset = first;
  segment.lastOffset = last;
  int64_t segmentBytes = 0;
  for (const TrimRange::Row& row : range.rows) {
    segment.records.push_back(LogRecord{row.offset, row.key, deserialize(row.payload), row.appendedAt});
    segmentBytes += row.bytes;
  }
  EventFields described = {{"first", first}, {"last", last}};
  log_detail::describeRecords(described, segment.records);
  ctx_.probe(log_events::kColdWrite, std::move(described));
  std::string locator;
  try {
    Task<std::string> writing = options_.cold->write(segment);
    locator = co_await writing;
    if (locator.empty()) throw TypeError("Cold storage must return a non-empty locator");
  } catch (const std::exception& e) {
    ctx_.probe(log_events::kColdFailed, {{"first", first}, {"last", last}, {"message", e.what()}});
    throw;
  }
  if (segmentFlushTwoUnits_) {
    Task<int64_t> committing = indexThenDelete(first, last, std::move(locator), segmentBytes, now);
    co_return co_await committing;
  }
  const int64_t deleted = co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    upsertSegment(txn, first, last, locator, segmentBytes, now);
    const int64_t n = deleteHotRange(txn, first, last);
    txn.exec("DELETE FROM " DURASIM_LOG_FLUSH " WHERE id = 1");
    ctx_.probe(log_events::kTrimFlush, {{"first", first}, {"last", last}, {"locator", locator}, {"deleted", n}});
    return n;
  });
  co_return deleted;
}

// H20 variant: the segment row, a yield, then the deletion, as two writes (a crash between them leaves
// an indexed segment over records that are still hot).
Task<int64_t> DurabilityLog::indexThenDelete(int64_t first, int64_t last, std::string locator, int64_t bytes, int64_t now) {
  co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    upsertSegment(txn, first, last, locator, bytes, now);
    ctx_.probe(log_events::kTrimSegmentWrite, {{"first", first}, {"last", last}, {"locator", locator}});
  });
  co_await ctx_.clock.sleepFor(0);
  const int64_t deleted = co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    const int64_t n = deleteHotRange(txn, first, last);
    ctx_.probe(log_events::kTrimDelete, {{"first", first}, {"last", last}, {"deleted", n}});
    return n;
  });
  co_return deleted;
}

// log.md 6.1
Task<int64_t> DurabilityLog::forgetColdBefore(int64_t offset) {
  if (offset < 0) throw LogAppendError("Offset must be a non-negative integer");
  const int64_t forgotten = co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    const int64_t n = txn.exec("DELETE FROM " DURASIM_LOG_SEGMENTS " WHERE last_offset < ?", offset).rowsWritten();
    ctx_.probe(log_events::kForgetWrite, {{"offset", offset}, {"forgotten", n}});
    return n;
  });
  co_return forgotten;
}

// ---------------------------------------------------------------------------------------------
// Load (log.md 8)

Task<LoadSnapshot> DurabilityLog::load() {
  SqlRow row = ctx_.storage
                   .exec("SELECT (SELECT next_offset FROM " DURASIM_LOG_SEQ " WHERE id = 1) AS next,"
                         " (SELECT MIN(\"offset\") FROM " DURASIM_LOG_CURSORS ") AS low")
                   .one();
  const std::optional<int64_t> low = row.optInt64("low");
  const int64_t backlog = low ? std::max<int64_t>(0, row.int64("next") - *low) : 0;
  ctx_.probe(log_events::kLoad, {{"pendingDeliveries", backlog}});
  co_return routing_->snapshot(backlog);
}

}  // namespace durasim
