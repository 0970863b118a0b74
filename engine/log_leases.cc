// DurabilityLog leases (log.md 7); see log.h. Keeps, per consumer: held ranges never overlap (one
// transaction inserts a lease and moves the allocation, H4); a reclaim replaces the batch id, so a
// fenced holder can settle nothing; the cursor moves only across an unbroken run of acked/skipped
// ranges starting at it (advance); a poisoned range is skipped durably before onPoison runs (H6);
// a trimmed range surfaces LogTruncatedError once and its trimmed offsets stay covered by a skipped
// row (H5, H7). Probes ("log.lease*", "log.ack*", "log.nack*", "log.advance.write",
// "log.poison.*") are listed in docs/log-trace-events.md. The lease variants of hazards.md (H4-H8)
// branch off here where they change a step; the steps of their own are in log_lease_variants.cc.
#include <algorithm>
#include <exception>
#include <utility>

#include "engine/errors.h"
#include "engine/buggify.h"
#include "engine/log.h"
#include "engine/log_events.h"
#include "engine/log_internal.h"
#include "engine/log_schema.h"

namespace durasim {

using log_detail::Bounds;
using log_detail::optionalJson;
using log_detail::readBounds;
using log_detail::storedCursor;

using log_detail::insertLeaseRow;
using log_detail::insertSkippedRow;
using log_detail::setAllocation;

namespace {

LeaseState stateFromName(const std::string& name) {
  if (name == "active") return LeaseState::active;
  if (name == "pending") return LeaseState::pending;
  if (name == "acked") return LeaseState::acked;
  return LeaseState::skipped;
}

}  // namespace

// What the bounds transaction of loadLeaseRecords saw: the bounds, and the hot records of the lease's
// range unless some of its offsets were trimmed.
struct BoundsAndHot {
  Bounds bounds;
  std::vector<LogRecord> hot;
};

// What transaction A of lease() granted; `unwritten` only under log.lease_two_write_allocation.
struct DurabilityLog::Grant {
  LogLease lease;
  bool reclaimed = false;
  std::optional<UnwrittenGrant> unwritten;
};

void DurabilityLog::requireLeases(const char* method, const std::string& consumer) {
  if (!options_.leases) {
    ctx_.probe(log_events::kLeaseDisabled, {{"method", method}});
    throw TypeError("Leases require the leases option");
  }
  if (consumer.empty()) throw LogAppendError("Consumer must be a non-empty string");
}

// log.md 7.4: always inside the caller's transaction.
void DurabilityLog::advance(StorageTxn& txn, const std::string& consumer, int64_t now) {
  const std::optional<int64_t> cur = storedCursor(txn, consumer);
  const int64_t x = settledRunEnd(txn, consumer, cur);
  const bool moves = x > cur.value_or(0);
  if (moves) log_detail::moveCursorForward(txn, consumer, x, now);
  const int64_t deleted = deleteSettledBelow(txn, consumer, cur, x);
  const std::optional<int64_t> after = moves ? std::optional<int64_t>(x) : cur;
  ctx_.probe(log_events::kAdvanceWrite,
             {{"consumer", consumer}, {"cursor", optionalJson(cur)}, {"to", optionalJson(after)}, {"deleted", deleted}});
}

// The end of the unbroken run of acked/skipped rows starting at the cursor.
int64_t DurabilityLog::settledRunEnd(StorageTxn& txn, const std::string& consumer, std::optional<int64_t> cursor) {
  if (leaseVariants_.advanceFromZero || leaseVariants_.advanceBatchLimited) return referenceRunEnd(txn, consumer, cursor);
  int64_t x = cursor.value_or(0);
  for (const SqlRow& row : txn.exec("SELECT first_offset, last_offset, state FROM " DURASIM_LOG_LEASES " WHERE consumer = ?"
                                    " ORDER BY first_offset, batch_id",
                                    consumer)
                               .toVector()) {
    if (row.int64("last_offset") < x) continue;
    if (row.int64("first_offset") > x) break;
    const std::string state = row.text("state");
    if (state != "acked" && state != "skipped") break;
    x = row.int64("last_offset") + 1;
  }
  return x;
}

// Deletes the settled rows of `consumer` that end below `below`.
int64_t DurabilityLog::deleteSettledBelow(StorageTxn& txn, const std::string& consumer, std::optional<int64_t> cursor, int64_t below) {
  if (leaseVariants_.advanceFromZero) return deleteSettledFromCursor(txn, consumer, cursor, below);
  return txn.exec("DELETE FROM " DURASIM_LOG_LEASES " WHERE consumer = ? AND state IN ('acked','skipped') AND last_offset < ?",
                  consumer, below)
      .rowsWritten();
}

// log.md 7.1 step 2: one transaction (A). nullopt: nothing granted.
std::optional<DurabilityLog::Grant> DurabilityLog::grantLease(StorageTxn& txn, const std::string& consumer, int64_t size,
                                                             int64_t now) {
  const LogLeaseOptions& o = *options_.leases;
  const std::optional<int64_t> cur = storedCursor(txn, consumer);
  std::optional<SqlRow> allocRow =
      txn.exec("SELECT allocated_offset FROM " DURASIM_LOG_ALLOCATIONS " WHERE consumer = ?", consumer).next();
  const int64_t allocated = allocRow ? allocRow->int64("allocated_offset") : 0;  // absent counts as 0
  const int64_t held = txn.exec("SELECT COUNT(*) AS n FROM " DURASIM_LOG_LEASES " WHERE consumer = ?"
                                " AND (state = 'pending' OR (state = 'active' AND expires_at > ?))",
                                consumer, now)
                           .one()
                           .int64("n");
  const Bounds b = readBounds(txn);
  EventFields fields = {{"consumer", consumer}, {"held", held},       {"cursor", optionalJson(cur)},
                           {"allocation", allocRow ? nlohmann::json(allocated) : nlohmann::json()},          {"oldest", b.oldest},
                           {"hot", b.hot},           {"next", b.next},   {"gap", nullptr}};

  // 1. Reclaim first: not limited by maxParallelism.
  std::optional<SqlRow> reclaimable =
      txn.exec("SELECT batch_id, first_offset, last_offset, attempt FROM " DURASIM_LOG_LEASES " WHERE consumer = ?"
               " AND (state = 'pending' OR (state = 'active' AND expires_at <= ?)) ORDER BY first_offset LIMIT 1",
               consumer, now)
          .next();
  if (reclaimable) {
    Grant grant;
    grant.reclaimed = true;
    grant.lease = LogLease{ctx_.random.uuid(), consumer, {}, reclaimable->int64("first_offset"),
                           reclaimable->int64("last_offset"), reclaimable->int64("attempt") + 1, now + o.leaseMs};
    txn.exec("UPDATE " DURASIM_LOG_LEASES " SET batch_id = ?, state = 'active', attempt = attempt + 1, expires_at = ?"
             " WHERE batch_id = ?",
             grant.lease.batchId, grant.lease.expiresAt, reclaimable->text("batch_id"));
    fields.update({{"batchId", grant.lease.batchId}, {"first", grant.lease.firstOffset}, {"last", grant.lease.lastOffset},
                   {"attempt", grant.lease.attempt}, {"expiresAt", grant.lease.expiresAt}, {"reclaimed", true},
                   {"previousBatchId", reclaimable->text("batch_id")}, {"base", nullptr}, {"gapBatchId", nullptr}});
    ctx_.probe(log_events::kLeaseWrite, std::move(fields));
    return grant;
  }

  // 2. Parallelism bound on held rows.
  if (held >= o.maxParallelism) {
    ctx_.probe(log_events::kLeaseNone, {{"consumer", consumer}, {"reason", "parallelism"}});
    return std::nullopt;
  }

  // 3. Where a fresh lease starts.
  const int64_t base = std::max(cur.value_or(0), allocated);
  const int64_t from = std::max(b.oldest, base);
  const bool trimmedBelow = from > base && !leaseVariants_.advanceFromZero;  // the H5 variant writes no gap rows
  if (from >= b.next) {
    if (trimmedBelow) coverTrimmedTail(txn, consumer, base, from, now);
    ctx_.probe(log_events::kLeaseNone, {{"consumer", consumer}, {"reason", "empty"}});
    return std::nullopt;
  }

  // 4. Its end: the batch size, the log's end, and the segment (or cold range) holding `from`.
  int64_t last = std::min(from + size - 1, b.next - 1);
  if (from < b.hot) {
    std::optional<SqlRow> seg = log_detail::segmentHolding(txn, from);
    last = std::min(last, seg ? seg->int64("last_offset") : b.hot - 1);
  }

  // 5. Gap row for offsets trimmed before anyone leased them (H5).
  const bool oneWrite = !leaseVariants_.twoWriteAllocation;
  std::optional<std::string> gapId;
  if (trimmedBelow) {
    gapId = ctx_.random.uuid();
    if (oneWrite) insertSkippedRow(txn, *gapId, consumer, base, from - 1, now);
  }

  // 6. The lease and the allocation, in this same transaction (H4).
  Grant grant;
  grant.lease = LogLease{ctx_.random.uuid(), consumer, {}, from, last, 1, now + o.leaseMs};
  fields.update({{"batchId", grant.lease.batchId}, {"first", from}, {"last", last}, {"attempt", 1},
                 {"expiresAt", grant.lease.expiresAt}, {"reclaimed", false}, {"previousBatchId", nullptr}, {"base", base},
                 {"gap", gapId ? nlohmann::json::array({base, from - 1}) : nlohmann::json()},
                 {"gapBatchId", gapId ? nlohmann::json(*gapId) : nlohmann::json()}});
  if (!oneWrite) {
    grant.unwritten = UnwrittenGrant{base, gapId, std::move(fields), now};
    return grant;
  }
  insertLeaseRow(txn, LogLeaseRow{grant.lease.batchId, consumer, from, last, LeaseState::active, 1, grant.lease.expiresAt, now});
  setAllocation(txn, consumer, last + 1);
  ctx_.probe(log_events::kLeaseWrite, std::move(fields));

  // 7. Let the cursor pass the trimmed offsets at once (not under the H6 skip variant).
  if (gapId && !leaseVariants_.skipWithoutAdvance) advance(txn, consumer, now);
  return grant;
}

// Decision (docs/decisions.md): with nothing left to lease because every offset from `base` on was
// trimmed, the gap row of step 5 is still written, the allocation moves to `from` and the cursor
// advances, so a leased consumer of a fully trimmed log reaches nextOffset (LSE-15).
void DurabilityLog::coverTrimmedTail(StorageTxn& txn, const std::string& consumer, int64_t base, int64_t from, int64_t now) {
  const std::string gapId = ctx_.random.uuid();
  insertSkippedRow(txn, gapId, consumer, base, from - 1, now);
  setAllocation(txn, consumer, from);
  ctx_.probe(log_events::kLeaseGapWrite,
             {{"consumer", consumer}, {"gap", nlohmann::json::array({base, from - 1})}, {"gapBatchId", gapId}, {"allocation", from}});
  if (!leaseVariants_.skipWithoutAdvance) advance(txn, consumer, now);
}

Task<std::optional<LogLease>> DurabilityLog::lease(std::string consumer, std::optional<int64_t> limit) {
  requireLeases("lease", consumer);
  if (limit && *limit <= 0) throw RangeError("limit must be a positive integer");
  const int64_t size = std::min(limit.value_or(options_.maxBatchSize), options_.maxBatchSize);
  Task<void> waiting = waitForEarliestExpiry(consumer);
  co_await waiting;
  const int64_t now = ctx_.clock.now();
  std::optional<Grant> grant =
      co_await ctx_.storage.transaction([&](StorageTxn& txn) { return grantLease(txn, consumer, size, now); });
  if (!grant) co_return std::nullopt;

  LogLease lease = std::move(grant->lease);
  Task<std::vector<LogRecord>> loading = loadLeaseRecords(lease);
  lease.records = co_await loading;
  if (grant->unwritten) {
    Task<void> writing = writeGrantThenAllocation(lease, std::move(*grant->unwritten));
    co_await writing;
  }

  const LogLeaseOptions& o = *options_.leases;
  if (grant->reclaimed && o.maxAttempts && o.onPoison && lease.attempt > *o.maxAttempts) {
    Task<void> skipping = skipPoisoned(std::move(lease));
    co_await skipping;
    co_return std::nullopt;
  }
  EventFields fields = {{"consumer", consumer},         {"batchId", lease.batchId},     {"first", lease.firstOffset},
                           {"last", lease.lastOffset},     {"attempt", lease.attempt},     {"expiresAt", lease.expiresAt},
                           {"reclaimed", grant->reclaimed}};
  log_detail::describeRecords(fields, lease.records);
  ctx_.probe(log_events::kLease, std::move(fields));
  co_return lease;
}

// Buggify (engine/buggify.h): the call starts at the exact deadline of the consumer's earliest active
// lease, which is then reclaimable (expires_at <= now). What is read here only times the wait; the
// grant reads the table afresh.
Task<void> DurabilityLog::waitForEarliestExpiry(const std::string& consumer) {
  if (!buggify::fires(ctx_, buggify::kLeasesWaitForExpiry)) co_return;
  const int64_t now = ctx_.clock.now();
  const std::optional<int64_t> deadline = co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    return txn
        .exec("SELECT MIN(expires_at) AS at FROM " DURASIM_LOG_LEASES " WHERE consumer = ? AND state = 'active'"
              " AND expires_at > ?",
              consumer, now)
        .one()
        .optInt64("at");
  });
  if (!deadline) co_return;
  Task<void> sleeping = ctx_.clock.sleepUntil(*deadline);
  co_await sleeping;
}

// log.md 7.1 step 4 (H6): the skip commits before onPoison runs; a throwing callback is logged.
Task<void> DurabilityLog::skipPoisoned(LogLease lease) {
  const int64_t now = ctx_.clock.now();
  const bool matched = co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    const bool hit = txn.exec("UPDATE " DURASIM_LOG_LEASES " SET state = 'skipped' WHERE batch_id = ? AND state = 'active'",
                              lease.batchId)
                         .rowsWritten() > 0;
    ctx_.probe(log_events::kLeasePoisonWrite, {{"consumer", lease.consumer}, {"batchId", lease.batchId}, {"first", lease.firstOffset},
                                          {"last", lease.lastOffset}, {"attempt", lease.attempt}, {"matched", hit}});
    if (hit && !leaseVariants_.skipWithoutAdvance) advance(txn, lease.consumer, now);
    return hit;
  });
  if (!matched) co_return;
  ctx_.probe(log_events::kPoisonCallback, {{"consumer", lease.consumer}, {"batchId", lease.batchId}, {"first", lease.firstOffset},
                                     {"last", lease.lastOffset}, {"attempt", lease.attempt}});
  std::string failure;
  try {
    Task<void> callback = options_.leases->onPoison(lease);
    co_await callback;
  } catch (...) {
    failure = serializeError(std::current_exception()).message;
  }
  if (failure.empty()) co_return;
  ctx_.probe(log_events::kPoisonFailed, {{"consumer", lease.consumer}, {"batchId", lease.batchId}, {"message", failure}});
  ctx_.logger.error("durability.log.poison_handler.failed",
                    {{"consumer", lease.consumer}, {"batchId", lease.batchId}, {"error", failure}});
}

// log.md 7.2: the records of a granted lease, or LogTruncatedError (once per trimming). The hot
// part of the range is read inside the bounds transaction: awaiting it includes the wait for its
// confirmation, which lets other events in (runtime.md 4.3), and a trim flushing those rows meanwhile
// would make offsets still readable from cold look lost (docs/decisions.md).
Task<std::vector<LogRecord>> DurabilityLog::loadLeaseRecords(LogLease lease) {
  const int64_t now = ctx_.clock.now();
  BoundsAndHot seen = co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    BoundsAndHot read{readBounds(txn), {}};
    if (lease.firstOffset >= read.bounds.oldest)
      read.hot = log_detail::hotRecords(txn, std::max(lease.firstOffset, read.bounds.hot), lease.lastOffset);
    else if (!leaseVariants_.truncationBlocks)  // the H7 variant throws below without touching the row
      dropTrimmedPrefix(txn, lease, read.bounds.oldest, now);
    return read;
  });
  const Bounds& b = seen.bounds;
  if (lease.firstOffset < b.oldest) {
    ctx_.probe(log_events::kLeaseTruncated,
               {{"consumer", lease.consumer}, {"batchId", lease.batchId}, {"requested", lease.firstOffset}, {"oldest", b.oldest}});
    throw LogTruncatedError(lease.firstOffset, b.oldest);
  }

  // The flushed offsets below the hot ones the transaction saw, segment by segment, then those.
  std::vector<LogRecord> records;
  int64_t o = lease.firstOffset;
  while (o < std::min(b.hot, lease.lastOffset + 1)) {
    std::optional<SqlRow> seg = log_detail::segmentHolding(ctx_.storage, o);
    if (!seg || !options_.cold || !options_.cold->read) break;
    const std::string locator = seg->text("locator");
    const int64_t segLast = std::min(seg->int64("last_offset"), lease.lastOffset);
    Task<std::optional<std::vector<LogRecord>>> reading = options_.cold->read(locator);
    std::optional<std::vector<LogRecord>> loaded = co_await reading;
    if (!loaded) break;
    std::sort(loaded->begin(), loaded->end(), [](const LogRecord& x, const LogRecord& y) { return x.offset < y.offset; });
    for (LogRecord& r : *loaded)
      if (r.offset == o && o <= segLast) {
        records.push_back(std::move(r));
        ++o;
      }
    if (o <= segLast) break;  // the segment lacked an offset
  }
  for (LogRecord& r : seen.hot)
    if (r.offset == o) {
      records.push_back(std::move(r));
      ++o;
    }
  if (o <= lease.lastOffset) {
    Task<void> releasing = releaseUnreadable(lease, o);
    co_await releasing;
    const int64_t oldest = std::max(o + 1, b.hot);
    ctx_.probe(log_events::kLeaseUnreadable,
               {{"consumer", lease.consumer}, {"batchId", lease.batchId}, {"requested", o}, {"oldest", oldest}});
    throw LogTruncatedError(o, oldest);
  }
  co_return records;
}

// log.md 7.2 step 1, inside its transaction: the trimmed prefix of a still-matching lease is skipped.
void DurabilityLog::dropTrimmedPrefix(StorageTxn& txn, const LogLease& lease, int64_t oldest, int64_t now) {
  if (!txn.exec("SELECT 1 AS hit FROM " DURASIM_LOG_LEASES " WHERE batch_id = ? AND state = 'active'", lease.batchId).next())
    return;
  EventFields fields = {{"consumer", lease.consumer}, {"batchId", lease.batchId}, {"first", lease.firstOffset},
                           {"last", lease.lastOffset},   {"oldest", oldest},         {"skippedBatchId", nullptr}};
  if (lease.lastOffset < oldest) {
    txn.exec("UPDATE " DURASIM_LOG_LEASES " SET state = 'skipped' WHERE batch_id = ?", lease.batchId);
    fields["whole"] = true;
  } else {
    const std::string skippedId = ctx_.random.uuid();
    insertSkippedRow(txn, skippedId, lease.consumer, lease.firstOffset, oldest - 1, now);
    txn.exec("UPDATE " DURASIM_LOG_LEASES " SET first_offset = ?, state = 'pending', expires_at = 0, attempt = attempt - 1"
             " WHERE batch_id = ?",
             oldest, lease.batchId);
    fields["whole"] = false;
    fields["skippedBatchId"] = skippedId;
  }
  ctx_.probe(log_events::kLeaseTruncateWrite, std::move(fields));
  if (!leaseVariants_.skipWithoutAdvance) advance(txn, lease.consumer, now);
}

// log.md 7.2 step 2: an undeliverable lease goes back to pending, range and attempt count unchanged.
Task<void> DurabilityLog::releaseUnreadable(LogLease lease, int64_t missing) {
  co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    const bool hit = txn.exec("UPDATE " DURASIM_LOG_LEASES " SET state = 'pending', expires_at = 0, attempt = attempt - 1"
                              " WHERE batch_id = ? AND state = 'active'",
                              lease.batchId)
                         .rowsWritten() > 0;
    if (hit)
      ctx_.probe(log_events::kLeaseReleaseWrite, {{"consumer", lease.consumer}, {"batchId", lease.batchId}, {"missing", missing}});
  });
}

// log.md 7.3
Task<void> DurabilityLog::ack(std::string consumer, std::string batchId) {
  Task<void> settling = settle("ack", std::move(consumer), std::move(batchId));
  co_await settling;
}

Task<void> DurabilityLog::nack(std::string consumer, std::string batchId) {
  Task<void> settling = settle("nack", std::move(consumer), std::move(batchId));
  co_await settling;
}

Task<void> DurabilityLog::settle(std::string how, std::string consumer, std::string batchId) {
  Task<void> yielding = buggify::yieldIf(ctx_, buggify::kLeasesYieldBeforeSettle);
  co_await yielding;
  requireLeases(how.c_str(), consumer);
  const bool isAck = how == "ack";
  const bool advanceNow = isAck && !leaseVariants_.ackThreeUnits;
  const int64_t now = ctx_.clock.now();
  const bool matched = co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    if (!markSettled(txn, isAck, consumer, batchId)) return false;
    ctx_.probe(isAck ? log_events::kAckWrite : log_events::kNackWrite, {{"consumer", consumer}, {"batchId", batchId}});
    if (advanceNow) advance(txn, consumer, now);
    return true;
  });
  if (!matched) {
    ctx_.probe(isAck ? log_events::kAckRejected : log_events::kNackRejected, {{"consumer", consumer}, {"batchId", batchId}});
    throw LogLeaseError(batchId);
  }
  if (isAck && !advanceNow) {
    Task<void> advancing = commitCursorThenDeleteRows(consumer);
    co_await advancing;
  }
}

// The settle write of ack or nack: whether an active lease of `consumer` with `batchId` matched.
bool DurabilityLog::markSettled(StorageTxn& txn, bool ack, const std::string& consumer, const std::string& batchId) {
  if (leaseVariants_.settleIgnoresConsumer) return markSettledAnyConsumer(txn, ack, batchId);
  const char* sql = ack ? "UPDATE " DURASIM_LOG_LEASES " SET state = 'acked'"
                          " WHERE batch_id = ? AND consumer = ? AND state = 'active'"
                        : "UPDATE " DURASIM_LOG_LEASES " SET state = 'pending', expires_at = 0"
                          " WHERE batch_id = ? AND consumer = ? AND state = 'active'";
  return txn.exec(sql, batchId, consumer).rowsWritten() > 0;
}

Task<std::vector<LogLeaseRow>> DurabilityLog::leases(std::string consumer) {
  requireLeases("leases", consumer);
  std::vector<LogLeaseRow> rows;
  for (const SqlRow& row : ctx_.storage
                               .exec("SELECT * FROM " DURASIM_LOG_LEASES " WHERE consumer = ? ORDER BY first_offset, batch_id",
                                     consumer)
                               .toVector())
    rows.push_back(LogLeaseRow{row.text("batch_id"), row.text("consumer"), row.int64("first_offset"),
                               row.int64("last_offset"), stateFromName(row.text("state")), row.int64("attempt"),
                               row.int64("expires_at"), row.int64("created_at")});
  co_return rows;
}

}  // namespace durasim
