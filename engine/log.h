// DurabilityLog (log.md): an append-only retained log with deduplicated atomic appends, offset
// reads, forward-only consumer cursors, retention trimming, cold segment flushes and leases. Keeps offsets dense and never reused
// (next_offset never decreases; hot offsets are exactly [hotOffset, nextOffset)), append batches all
// or nothing, dedup hits return the original offset, and cursors that only move forward.
// Research variants (hazards.md, engine/variants.h) read from ObjectContext::variants: the lease
// flags (H4-H8) once at construction into LeaseVariants, whose reference behaviour lives in
// log_lease_variants.cc; log.segment_flush_two_units (H20, at construction); and
// log.migrate_null_keeps_lease_tables (H19, by the migrate overload that takes the context).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/migrations.h"
#include "engine/load.h"
#include "engine/runtime.h"
#include "engine/scheduler.h"
#include "engine/task.h"

namespace durasim {

inline constexpr int64_t kMaxLogBytes = 1073741824;  // 2^30 bytes (1 GiB)

struct LogAppendInput {
  nlohmann::json body;
  std::optional<std::string> deduplicationKey;
};
struct LogRecord {
  int64_t offset = 0;
  std::string deduplicationKey;
  nlohmann::json body;
  int64_t appendedAt = 0;
};
struct LogPage {
  std::vector<LogRecord> records;
  int64_t nextOffset = 0;
  int64_t lag = 0;
};
struct LogBounds {
  int64_t oldestOffset = 0;
  int64_t hotOffset = 0;
  int64_t nextOffset = 0;
  friend bool operator==(const LogBounds&, const LogBounds&) = default;
};
struct LogSegment {
  int64_t firstOffset = 0;
  int64_t lastOffset = 0;
  std::vector<LogRecord> records;
};

// The log keeps the argument of each call alive in the awaiting frame until the returned Task
// completes, so an implementation may take it by reference.
struct LogColdStorage {
  std::function<Task<std::string>(const LogSegment&)> write;                           // returns a locator
  std::function<Task<std::optional<std::vector<LogRecord>>>(const std::string&)> read;  // nullopt = gone
};
struct LogRetention {
  std::optional<int64_t> maxAgeMs, maxRecords, maxBytes;
};

struct LogLease {
  std::string batchId;
  std::string consumer;
  std::vector<LogRecord> records;
  int64_t firstOffset = 0;
  int64_t lastOffset = 0;
  int64_t attempt = 0;  // 1-based
  int64_t expiresAt = 0;
};
enum class LeaseState { active, pending, acked, skipped };
struct LogLeaseRow {
  std::string batchId;
  std::string consumer;
  int64_t firstOffset = 0;
  int64_t lastOffset = 0;
  LeaseState state = LeaseState::active;
  int64_t attempt = 0;
  int64_t expiresAt = 0;
  int64_t createdAt = 0;
};
struct LogLeaseOptions {
  int64_t maxParallelism = 1;
  int64_t leaseMs = 30000;
  std::optional<int64_t> maxAttempts;
  std::function<Task<void>(const LogLease&)> onPoison;  // empty = none; the lease outlives its Task
};
struct LogOptions {
  std::optional<LogRetention> retention;
  std::optional<LogColdStorage> cold;
  std::optional<LogLeaseOptions> leases;  // absent = leases disabled, no lease tables
  RoutingLoad* routing = nullptr;         // absent = a private RoutingLoad
  int64_t maxBatchSize = 100;
};

class DurabilityLog {
 public:
  // Validates the options (RangeError before any write), applies migration `log`, and `logLeases`
  // when `leases` is set. Registers no scheduler participant and never touches the alarm.
  DurabilityLog(DurabilityScheduler& scheduler, LogOptions options = {});

  // log.md 3: one transaction; definite rejections are returned (success = false, nothing written);
  // a storage error propagates (outcome uncertain).
  Task<EnqueueResult<std::vector<int64_t>>> append(std::vector<LogAppendInput> records);
  Task<EnqueueResult<std::vector<int64_t>>> append(LogAppendInput record);  // = append({record})
  // log.md 4.2: throws RangeError (limit), LogAppendError (from < 0), LogTruncatedError.
  Task<LogPage> read(int64_t from, std::optional<int64_t> limit = std::nullopt);
  // log.md 4.1: oldestOffset <= hotOffset <= nextOffset, from one read.
  Task<LogBounds> bounds();
  // log.md 5.
  Task<std::optional<int64_t>> cursor(std::string consumer);
  Task<void> commit(std::string consumer, int64_t offset);
  Task<std::map<std::string, int64_t>> cursors();
  // log.md 8: routing snapshot with backlog = nextOffset - min cursor (0 without cursors).
  Task<LoadSnapshot> load();

  // log.md 6: removes hot records per retention (oldest first), flushing them to `cold` first when it
  // is configured; returns the number of hot records removed. Calls are serialized per instance.
  Task<int64_t> trim();
  // log.md 6.1: one write deleting segment index rows with last_offset < offset; returns the count.
  Task<int64_t> forgetColdBefore(int64_t offset);

  // log.md 7: every lease method throws TypeError("Leases require the leases option") without the
  // `leases` option, and LogAppendError for an empty consumer name.
  // 7.1: nullopt when nothing is available now (at maxParallelism, nothing unleased, or the reclaimed
  // range was poisoned and skipped); throws LogTruncatedError once when the range lost offsets.
  Task<std::optional<LogLease>> lease(std::string consumer, std::optional<int64_t> limit = std::nullopt);
  // 7.3: LogLeaseError (nothing written) unless `batchId` is an active lease of `consumer`.
  Task<void> ack(std::string consumer, std::string batchId);
  Task<void> nack(std::string consumer, std::string batchId);
  Task<std::vector<LogLeaseRow>> leases(std::string consumer);

  // log.md 2: latest() applies `log` only; none() reverts `logLeases` (if applied) then `log`; a named
  // target goes to the capability whose list holds it (`log` otherwise, which refuses unknown names).
  static MigrationResult migrate(ObjectStorage& storage, MigrationTarget target = MigrationTarget::latest());
  // The same on ctx.storage, for applications that run under research variants: with
  // log.migrate_null_keeps_lease_tables in ctx.variants, none() reverts `log` alone (H19).
  static MigrationResult migrate(const ObjectContext& ctx, MigrationTarget target = MigrationTarget::latest());
  static const std::vector<Migration>& migrations();       // capability `log`
  static const std::vector<Migration>& leaseMigrations();  // capability `logLeases`

 private:
  // Which lease hazards of the reference (hazards.md H4-H8) this instance reintroduces; all off
  // unless ObjectContext::variants names them (read once, at construction).
  struct LeaseVariants {
    bool twoWriteAllocation = false;     // H4  log.lease_two_write_allocation
    bool advanceFromZero = false;        // H5  log.lease_advance_from_zero
    bool advanceBatchLimited = false;    // H6  log.lease_advance_batch_limited
    bool skipWithoutAdvance = false;     // H6  log.lease_skip_without_advance
    bool ackThreeUnits = false;          // H6  log.lease_ack_three_units
    bool truncationBlocks = false;       // H7  log.lease_truncation_blocks
    bool settleIgnoresConsumer = false;  // H8  log.lease_settle_ignores_consumer
    static LeaseVariants of(const ObjectContext& ctx);
  };

  ObjectContext& ctx_;
  const LeaseVariants leaseVariants_ = LeaseVariants::of(ctx_);
  LogOptions options_;
  // H20 variant: no flush intent, the range chosen afresh each pass, the segment row and the deletion
  // as two writes with a yield between, read()'s segment lookup without ORDER BY (the lease loader's
  // lookups, log_leases.cc, keep theirs).
  const bool segmentFlushTwoUnits_;
  std::optional<RoutingLoad> ownRouting_;
  RoutingLoad* routing_;
  // In-memory trim mutex (log.md 6): held by the running trim(); waiters are handed over in FIFO order.
  bool trimming_ = false;
  std::deque<std::shared_ptr<AsyncEvent>> trimWaiters_;
  Task<void> lockTrim();
  void unlockTrim();
  Task<int64_t> trimLocked();
  // One pass of trim (log.md 6 steps 2-5): the range it removes, and its removal.
  struct TrimRange;
  std::optional<TrimRange> chooseTrimRange(int64_t now);
  Task<int64_t> deleteTrimRange(int64_t first, int64_t last, bool dropIntent);
  Task<int64_t> flushTrimRange(TrimRange range, int64_t now);
  Task<int64_t> indexThenDelete(int64_t first, int64_t last, std::string locator, int64_t bytes, int64_t now);
  [[noreturn]] void throwReadTruncated(int64_t from, int64_t requested, int64_t oldest);

  // Leases (log.md 7, log_leases.cc).
  struct Grant;
  struct UnwrittenGrant;
  void requireLeases(const char* method, const std::string& consumer);
  std::optional<Grant> grantLease(StorageTxn& txn, const std::string& consumer, int64_t size, int64_t now);
  void advance(StorageTxn& txn, const std::string& consumer, int64_t now);
  int64_t settledRunEnd(StorageTxn& txn, const std::string& consumer, std::optional<int64_t> cursor);
  int64_t deleteSettledBelow(StorageTxn& txn, const std::string& consumer, std::optional<int64_t> cursor, int64_t below);
  void coverTrimmedTail(StorageTxn& txn, const std::string& consumer, int64_t base, int64_t from, int64_t now);
  Task<std::vector<LogRecord>> loadLeaseRecords(LogLease lease);
  void dropTrimmedPrefix(StorageTxn& txn, const LogLease& lease, int64_t oldest, int64_t now);
  Task<void> releaseUnreadable(LogLease lease, int64_t missing);
  Task<void> skipPoisoned(LogLease lease);
  Task<void> waitForEarliestExpiry(const std::string& consumer);
  Task<void> settle(std::string how, std::string consumer, std::string batchId);
  bool markSettled(StorageTxn& txn, bool ack, const std::string& consumer, const std::string& batchId);
  // The lease variants' own steps (log_lease_variants.cc).
  int64_t referenceRunEnd(StorageTxn& txn, const std::string& consumer, std::optional<int64_t> cursor);
  int64_t deleteSettledFromCursor(StorageTxn& txn, const std::string& consumer, std::optional<int64_t> cursor, int64_t below);
  bool markSettledAnyConsumer(StorageTxn& txn, bool ack, const std::string& batchId);
  Task<void> writeGrantThenAllocation(LogLease lease, UnwrittenGrant grant);
  Task<void> commitCursorThenDeleteRows(std::string consumer);
};

}  // namespace durasim
