// Executable spec of the retained log (log.md 1-8): the durable rows of durability_log_records,
// _seq, _cursors, _segments, _flush, _leases and _allocations, changed one spec operation at a time.
// Pure and synchronous: time and the ids the engine draws (uuids, batch ids) are arguments, stored
// payloads are the strings serialize(body) gives (the caller serializes), and cold storage is a pair
// of synchronous callbacks. Keeps dense, never-reused offsets, hot dedup, forward-only cursors, the
// flush intent (H20), and every lease rule of §7 (H4-H8, H23).
//
// Errors are values: an operation that the engine ends by throwing (or, for append, by returning a
// rejection) returns a LogError with the engine's error name() and message, so a test compares
// {name, message} with serializeError of what the engine threw.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace durasim::model {

// log.md 1: 2^30 bytes, the cap on retention.maxBytes.
inline constexpr int64_t kMaxLogBytes = 1073741824;
// log.md 1: default maxBatchSize and lease options.
inline constexpr int64_t kDefaultMaxBatchSize = 100;
inline constexpr int64_t kDefaultLeaseMs = 30000;

// The engine's error classes by name() (errors-and-contract.md 2).
inline constexpr const char* kRangeError = "RangeError";
inline constexpr const char* kTypeError = "TypeError";
inline constexpr const char* kLogAppendError = "LogAppendError";
inline constexpr const char* kLogTruncatedError = "LogTruncatedError";
inline constexpr const char* kLogLeaseError = "LogLeaseError";

// What the engine throws (or returns in EnqueueResult.error), as serializeError reports it, plus the
// fields of a LogTruncatedError (requested, oldest) and of a LogLeaseError (batchId).
struct LogError {
  LogError() = default;
  LogError(std::string errorName, std::string errorMessage)
      : name(std::move(errorName)), message(std::move(errorMessage)) {}
  std::string name;
  std::string message;
  int64_t requested = 0, oldest = 0;
  std::string batchId;
  friend bool operator==(const LogError&, const LogError&) = default;
  static LogError range(const std::string& message) { return {kRangeError, message}; }
  static LogError type(const std::string& message) { return {kTypeError, message}; }
  static LogError append(const std::string& message) { return {kLogAppendError, message}; }
  static LogError truncated(int64_t requested, int64_t oldest);
  static LogError lease(const std::string& batchId);
};

// A value or the error the operation ends with.
template <class T>
struct Outcome {
  T value{};
  std::optional<LogError> error;
  bool ok() const { return !error.has_value(); }
  static Outcome failed(LogError e) { return Outcome{T{}, std::move(e)}; }
};

// One row of durability_log_records; also what cold storage holds and what reads return.
struct Record {
  int64_t offset = 0;
  std::string key;      // dedup_key
  std::string payload;  // serialize(body)
  int64_t bytes = 0;    // payload.size()
  int64_t appendedAt = 0;
  friend bool operator==(const Record&, const Record&) = default;
  nlohmann::json toJson() const;
};

// One row of durability_log_segments.
struct Segment {
  int64_t firstOffset = 0, lastOffset = 0;
  std::string locator;
  int64_t bytes = 0, flushedAt = 0;
  friend bool operator==(const Segment&, const Segment&) = default;
  nlohmann::json toJson() const;
};

// The row of durability_log_flush (H20).
struct FlushIntent {
  int64_t firstOffset = 0, lastOffset = 0, createdAt = 0;
  friend bool operator==(const FlushIntent&, const FlushIntent&) = default;
};

// One row of durability_log_cursors.
struct Cursor {
  int64_t offset = 0, committedAt = 0;
  friend bool operator==(const Cursor&, const Cursor&) = default;
};

enum class LeaseState { active, pending, acked, skipped };
const char* leaseStateName(LeaseState state);  // as stored: "active" | "pending" | "acked" | "skipped"

// One row of durability_log_leases.
struct LeaseRow {
  std::string batchId, consumer;
  int64_t firstOffset = 0, lastOffset = 0;
  LeaseState state = LeaseState::active;
  int64_t attempt = 0, expiresAt = 0, createdAt = 0;
  friend bool operator==(const LeaseRow&, const LeaseRow&) = default;
  nlohmann::json toJson() const;
};

// log.md 7 definitions.
bool isReclaimable(const LeaseRow& row, int64_t now);  // pending, or active with expires_at <= now
bool isHeld(const LeaseRow& row, int64_t now);         // pending, or active with expires_at > now

struct Retention {
  std::optional<int64_t> maxAgeMs, maxRecords, maxBytes;
};

// What cold.write did: a locator (possibly empty), or threw with `thrown` (the exception's
// serializeError, which trim() propagates).
struct ColdWrite {
  std::optional<std::string> locator;
  LogError thrown;
};
struct ColdStorage {
  std::function<ColdWrite(int64_t firstOffset, int64_t lastOffset, const std::vector<Record>& records)> write;
  std::function<std::optional<std::vector<Record>>(const std::string& locator)> read;  // nullopt = gone
};

struct LeaseOptions {
  int64_t maxParallelism = 1;
  int64_t leaseMs = kDefaultLeaseMs;
  std::optional<int64_t> maxAttempts;
  bool onPoison = false;  // an onPoison callback is configured
};

struct LogModelOptions {
  std::optional<Retention> retention;
  std::optional<ColdStorage> cold;
  std::optional<LeaseOptions> leases;
  int64_t maxBatchSize = kDefaultMaxBatchSize;
};

// One input of append: the key if given, the serialized body (nullopt = not serializable).
struct AppendInput {
  std::optional<std::string> key;
  std::optional<std::string> payload;
};

struct AppendResult {
  std::vector<int64_t> offsets;  // input order; duplicates share one offset
  std::vector<std::string> keys;
  int64_t newRecords = 0;
};

struct Bounds {
  int64_t oldestOffset = 0, hotOffset = 0, nextOffset = 0;
  friend bool operator==(const Bounds&, const Bounds&) = default;
};

struct Page {
  std::vector<Record> records;
  int64_t nextOffset = 0, lag = 0;
};

// A lease as lease() returns it (or as onPoison sees it).
struct Lease {
  std::string batchId, consumer;
  std::vector<Record> records;
  int64_t firstOffset = 0, lastOffset = 0, attempt = 0, expiresAt = 0;
  bool reclaimed = false;
};

// The ids one lease() call may draw: the lease's (fresh or reclaimed) batch id, the gap row's, and
// the truncation row's (7.1 steps 2.1, 2.5, 2.6; 7.2 step 1). Unused ones are ignored.
struct LeaseIds {
  std::string batchId, gapBatchId, skippedBatchId;
};

enum class NoLease { none, parallelism, empty, poisoned };

struct LeaseResult {
  std::optional<Lease> lease;           // granted or reclaimed
  NoLease why = NoLease::none;          // why lease is nullopt (without an error)
  std::optional<Lease> poisonCallback;  // the lease onPoison runs with (the skip matched)
};

// What advance(c) does (7.4).
struct AdvanceResult {
  std::optional<int64_t> before, to;  // cursor before; the cursor after (nullopt when none)
  int64_t deleted = 0;
};

// A lease row as advance(c) sees it.
struct AdvanceRow {
  int64_t firstOffset = 0, lastOffset = 0;
  bool settled = false;  // acked or skipped
};

// log.md 7.4, the one statement of the rule (the model and the LSE-05 check use it): from the cursor
// (none reads as 0), the run of settled rows that starts at or below it moves the cursor past each;
// every settled row below the new position is deleted. `rows` are one consumer's lease rows in
// order of first offset (ties in batch id order).
AdvanceResult advanceOver(std::optional<int64_t> cursor, const std::vector<AdvanceRow>& rows);

// One pass of trim (log.md 6 step 2): the range and its hot records.
struct TrimRange {
  int64_t firstOffset = 0, lastOffset = 0;
  std::vector<Record> records;
  bool fromIntent = false;
};

class LogModel {
 public:
  // Construction (log.md 1): the first invalid option as the engine's RangeError, or nullopt.
  static std::optional<LogError> validate(const LogModelOptions& options);
  // REQUIRES: validate(options) is nullopt (throws std::invalid_argument otherwise).
  explicit LogModel(LogModelOptions options = {});

  // Replaces the options (a new incarnation constructed with other options over the same rows).
  // REQUIRES: validate(options) is nullopt.
  void reconfigure(LogModelOptions options);
  const LogModelOptions& options() const { return options_; }

  // ---- log.md 3-6, 8 ----

  // Draws one of `uuids`, in input order, per input without a key. A definite rejection is the
  // error (a LogAppendError, nothing written). Throws std::invalid_argument if uuids run short.
  Outcome<AppendResult> append(const std::vector<AppendInput>& batch, int64_t now,
                               const std::vector<std::string>& uuids = {});
  // log.md 4.2 as written: a rehydrated page keeps the segment's records with offset >= from. The
  // engine instead returns only the gap-free run starting at `from` and throws LogTruncatedError when
  // the segment lacks `from` (docs/decisions.md); the two differ only for a cold store that returns a
  // segment missing some of its offsets.
  Outcome<Page> read(int64_t from, std::optional<int64_t> limit = std::nullopt) const;
  Bounds bounds() const;
  std::optional<int64_t> cursor(const std::string& consumer) const;
  // Returns whether the cursor moved.
  Outcome<bool> commit(const std::string& consumer, int64_t offset, int64_t now);
  // Returns the number of hot records removed; a cold write that threw or returned an empty locator
  // ends it with that error (the records stay hot, the flush intent stays).
  Outcome<int64_t> trim(int64_t now);
  Outcome<int64_t> forgetColdBefore(int64_t offset);
  // log.md 8: max(0, nextOffset - min cursor), 0 without cursors.
  int64_t backlog() const;

  // The steps of one trim pass, for checkers that follow the engine's writes. `planTrimPass` is
  // step 2 (nullopt: nothing to remove, or no limit configured); `beginFlush` writes the intent
  // (step 4); `finishFlush` is step 5's final transaction; `deleteRange` is step 3 and drops the flush
  // intent too (finishFlush ends with it). Each returns the hot rows it deleted; a pass made progress
  // only if that equals the range's record count (step 6).
  std::optional<TrimRange> planTrimPass(int64_t now) const;
  void beginFlush(const TrimRange& range, int64_t now);
  int64_t finishFlush(const TrimRange& range, const std::string& locator, int64_t now);
  int64_t deleteRange(const TrimRange& range);

  // ---- log.md 7 ----

  Outcome<LeaseResult> lease(const std::string& consumer, std::optional<int64_t> limit, int64_t now,
                             const LeaseIds& ids);
  // The steps of lease(), for checkers that follow the engine's writes one transaction at a time.
  // grantLease is transaction A (7.1 step 2) for a batch of `size` (already capped): a reclaim, a
  // fresh lease (with its gap row and advance), or nothing (`why`); the lease has no records yet.
  struct Grant {
    std::optional<Lease> lease;
    NoLease why = NoLease::none;
  };
  Grant grantLease(const std::string& consumer, int64_t size, int64_t now, const LeaseIds& ids);
  // 7.2 step 1: nullopt unless some of the lease's offsets were trimmed; then the truncation write
  // (only if the row still has this batch id and is active) and the LogTruncatedError.
  std::optional<LogError> truncateLease(const Lease& lease, int64_t now, const std::string& skippedBatchId);
  // 7.2 step 2: fills lease.records, or makes the release write (if the row still matches) and
  // returns the LogTruncatedError of the first offset that cannot be produced.
  std::optional<LogError> readLeaseRecords(Lease& lease);
  // 7.1 step 4: whether a granted lease is poisoned, and the skip write (returns whether it matched).
  bool isPoisoned(const Lease& lease) const;
  bool skipPoisoned(const Lease& lease, int64_t now);
  Outcome<bool> ack(const std::string& consumer, const std::string& batchId, int64_t now);
  Outcome<bool> nack(const std::string& consumer, const std::string& batchId, int64_t now);
  Outcome<std::vector<LeaseRow>> leases(const std::string& consumer) const;
  // What advance(c) would do now (7.4), without doing it.
  AdvanceResult advancePreview(const std::string& consumer) const;
  // LSE-02: the first offset a fresh (non-reclaim) lease of `consumer` would start at, ignoring
  // maxParallelism and reclaimable rows: max(oldestOffset, max(cursor, allocation)), or nullopt
  // when that is not below nextOffset.
  std::optional<int64_t> freshLeaseStart(const std::string& consumer) const;
  int64_t heldCount(const std::string& consumer, int64_t now) const;
  const LeaseRow* firstReclaimable(const std::string& consumer, int64_t now) const;

  // ---- The rows ----

  const std::map<int64_t, Record>& records() const { return records_; }
  int64_t nextOffset() const { return nextOffset_; }
  int64_t totalBytes() const { return totalBytes_; }
  const std::map<std::string, Cursor>& cursors() const { return cursors_; }
  const std::map<int64_t, Segment>& segments() const { return segments_; }
  const std::optional<FlushIntent>& flush() const { return flush_; }
  const std::map<std::string, LeaseRow>& leaseRows() const { return leaseRows_; }  // by batch id
  const std::map<std::string, int64_t>& allocations() const { return allocations_; }

  nlohmann::json toJson() const;

 private:
  std::optional<LogError> leaseGuard(const std::string& consumer) const;
  const Segment* segmentContaining(int64_t offset) const;
  std::vector<LeaseRow*> rowsOf(const std::string& consumer);
  std::vector<const LeaseRow*> rowsOf(const std::string& consumer) const;
  LeaseRow* activeRow(const std::string& consumer, const std::string& batchId);
  AdvanceResult advance(const std::string& consumer, int64_t now);
  void upsertForward(const std::string& consumer, int64_t offset, int64_t now, bool* moved = nullptr);
  void insertRow(LeaseRow row);

  LogModelOptions options_;
  std::map<int64_t, Record> records_;
  std::map<std::string, int64_t> hotKeys_;  // dedup index: key -> offset of a hot record
  int64_t nextOffset_ = 0, totalBytes_ = 0;
  std::map<std::string, Cursor> cursors_;
  std::map<int64_t, Segment> segments_;
  std::optional<FlushIntent> flush_;
  std::map<std::string, LeaseRow> leaseRows_;
  std::map<std::string, int64_t> allocations_;
};

}  // namespace durasim::model
