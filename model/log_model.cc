// Executable spec of the retained log; see log_model.h. Every operation is the effect of the
// engine's transactions on the rows as log.md states them; nothing here reads a clock or draws ids.
#include "model/log_model.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

namespace durasim::model {

namespace {

const char* const kOffsetMessage = "Offset must be a non-negative integer";
const char* const kLimitMessage = "limit must be a positive integer";

std::optional<LogError> requirePositive(const std::optional<int64_t>& value, const char* name) {
  if (value && *value <= 0) return LogError::range(std::string(name) + " must be a positive integer");
  return std::nullopt;
}

nlohmann::json optionalJson(const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }

}  // namespace

LogError LogError::truncated(int64_t requested, int64_t oldest) {
  LogError e{kLogTruncatedError,
             "Log offset " + std::to_string(requested) + " was trimmed; the oldest retained offset is " +
                 std::to_string(oldest)};
  e.requested = requested;
  e.oldest = oldest;
  return e;
}

LogError LogError::lease(const std::string& batchId) {
  LogError e{kLogLeaseError, "Log lease \"" + batchId + "\" is not held"};
  e.batchId = batchId;
  return e;
}

const char* leaseStateName(LeaseState state) {
  switch (state) {
    case LeaseState::active:
      return "active";
    case LeaseState::pending:
      return "pending";
    case LeaseState::acked:
      return "acked";
    case LeaseState::skipped:
      return "skipped";
  }
  return "?";
}

bool isReclaimable(const LeaseRow& row, int64_t now) {
  return row.state == LeaseState::pending || (row.state == LeaseState::active && row.expiresAt <= now);
}

bool isHeld(const LeaseRow& row, int64_t now) {
  return row.state == LeaseState::pending || (row.state == LeaseState::active && row.expiresAt > now);
}

nlohmann::json Record::toJson() const {
  return {{"offset", offset}, {"key", key}, {"payload", payload}, {"bytes", bytes}, {"appended_at", appendedAt}};
}

nlohmann::json Segment::toJson() const {
  return {{"first", firstOffset}, {"last", lastOffset}, {"locator", locator}, {"bytes", bytes}, {"flushed_at", flushedAt}};
}

nlohmann::json LeaseRow::toJson() const {
  return {{"batch_id", batchId}, {"consumer", consumer},   {"first", firstOffset},   {"last", lastOffset},
          {"state", leaseStateName(state)}, {"attempt", attempt}, {"expires_at", expiresAt}, {"created_at", createdAt}};
}

// ---------------------------------------------------------------------------------------------
// Construction (log.md 1)

std::optional<LogError> LogModel::validate(const LogModelOptions& o) {
  if (auto e = requirePositive(o.maxBatchSize, "maxBatchSize")) return e;
  if (o.retention) {
    if (auto e = requirePositive(o.retention->maxAgeMs, "retention.maxAgeMs")) return e;
    if (auto e = requirePositive(o.retention->maxRecords, "retention.maxRecords")) return e;
    if (auto e = requirePositive(o.retention->maxBytes, "retention.maxBytes")) return e;
    if (o.retention->maxBytes && *o.retention->maxBytes > kMaxLogBytes)
      return LogError::range("retention.maxBytes must not exceed 1073741824 bytes");
  }
  if (o.leases) {
    if (auto e = requirePositive(o.leases->maxParallelism, "leases.maxParallelism")) return e;
    if (auto e = requirePositive(o.leases->leaseMs, "leases.leaseMs")) return e;
    if (auto e = requirePositive(o.leases->maxAttempts, "leases.maxAttempts")) return e;
  }
  return std::nullopt;
}

LogModel::LogModel(LogModelOptions options) { reconfigure(std::move(options)); }

void LogModel::reconfigure(LogModelOptions options) {
  if (auto e = validate(options)) throw std::invalid_argument("invalid log options: " + e->message);
  options_ = std::move(options);
}

// ---------------------------------------------------------------------------------------------
// Append (log.md 3)

Outcome<AppendResult> LogModel::append(const std::vector<AppendInput>& batch, int64_t now,
                                       const std::vector<std::string>& uuids) {
  using Result = Outcome<AppendResult>;
  if (batch.empty()) return Result::failed(LogError::append("Append requires at least one record"));
  if (static_cast<int64_t>(batch.size()) > options_.maxBatchSize)
    return Result::failed(
        LogError::append("Append accepts at most " + std::to_string(options_.maxBatchSize) + " records"));
  for (const AppendInput& in : batch)
    if (in.key && in.key->empty()) return Result::failed(LogError::append("Deduplication key must be a non-empty string"));
  for (const AppendInput& in : batch)
    if (!in.payload) return Result::failed(LogError::append("Record body is not serializable JSON"));

  AppendResult result;
  std::size_t drawn = 0;
  for (const AppendInput& in : batch) {
    if (in.key) {
      result.keys.push_back(*in.key);
    } else {
      if (drawn >= uuids.size()) throw std::invalid_argument("append: fewer uuids than inputs without a key");
      result.keys.push_back(uuids[drawn++]);
    }
  }
  // Step 3.2: a new key stores its last occurrence's payload at its first occurrence's position.
  std::map<std::string, std::size_t> lastOccurrence;
  for (std::size_t i = 0; i < batch.size(); ++i) lastOccurrence[result.keys[i]] = i;
  std::map<std::string, int64_t> offsetOf;
  for (const std::string& key : result.keys) {
    if (offsetOf.count(key)) continue;
    if (auto hit = hotKeys_.find(key); hit != hotKeys_.end()) {
      offsetOf[key] = hit->second;
      continue;
    }
    const std::string& payload = *batch[lastOccurrence[key]].payload;
    const int64_t bytes = static_cast<int64_t>(payload.size());
    records_[nextOffset_] = Record{nextOffset_, key, payload, bytes, now};
    hotKeys_[key] = nextOffset_;
    offsetOf[key] = nextOffset_++;
    totalBytes_ += bytes;
    ++result.newRecords;
  }
  for (const std::string& key : result.keys) result.offsets.push_back(offsetOf.at(key));
  return Result{std::move(result), std::nullopt};
}

// ---------------------------------------------------------------------------------------------
// Read and bounds (log.md 4)

Bounds LogModel::bounds() const {
  Bounds b;
  b.nextOffset = nextOffset_;
  b.hotOffset = records_.empty() ? nextOffset_ : records_.begin()->first;
  b.oldestOffset = segments_.empty() ? b.hotOffset : std::min(segments_.begin()->first, b.hotOffset);
  return b;
}

const Segment* LogModel::segmentContaining(int64_t offset) const {
  // ORDER BY first_offset DESC LIMIT 1 among first_offset <= offset AND last_offset >= offset.
  for (auto it = segments_.upper_bound(offset); it != segments_.begin();) {
    --it;
    if (it->second.lastOffset >= offset) return &it->second;
  }
  return nullptr;
}

Outcome<Page> LogModel::read(int64_t from, std::optional<int64_t> limit) const {
  using Result = Outcome<Page>;
  if (limit && *limit <= 0) return Result::failed(LogError::range(kLimitMessage));
  if (from < 0) return Result::failed(LogError::append(kOffsetMessage));
  const Bounds b = bounds();
  if (from < b.oldestOffset) return Result::failed(LogError::truncated(from, b.oldestOffset));
  const int64_t capped = std::min(limit.value_or(options_.maxBatchSize), options_.maxBatchSize);
  Page page;
  if (from < b.hotOffset) {
    const Segment* seg = segmentContaining(from);
    const LogError truncation = LogError::truncated(from, std::max(from + 1, b.hotOffset));
    if (!seg || !options_.cold || !options_.cold->read) return Result::failed(truncation);
    std::optional<std::vector<Record>> loaded = options_.cold->read(seg->locator);
    if (!loaded) return Result::failed(truncation);
    for (const Record& r : *loaded)
      if (r.offset >= from) page.records.push_back(r);
    std::stable_sort(page.records.begin(), page.records.end(),
                     [](const Record& x, const Record& y) { return x.offset < y.offset; });
    if (static_cast<int64_t>(page.records.size()) > capped) page.records.resize(static_cast<std::size_t>(capped));
  } else {
    for (auto it = records_.lower_bound(from); it != records_.end() && static_cast<int64_t>(page.records.size()) < capped;
         ++it)
      page.records.push_back(it->second);
  }
  page.nextOffset = page.records.empty() ? std::max(from, b.nextOffset) : page.records.back().offset + 1;
  page.lag = std::max<int64_t>(0, b.nextOffset - page.nextOffset);
  return Result{std::move(page), std::nullopt};
}

// ---------------------------------------------------------------------------------------------
// Cursors (log.md 5) and load (8)

std::optional<int64_t> LogModel::cursor(const std::string& consumer) const {
  auto it = cursors_.find(consumer);
  if (it == cursors_.end()) return std::nullopt;
  return it->second.offset;
}

void LogModel::upsertForward(const std::string& consumer, int64_t offset, int64_t now, bool* moved) {
  auto it = cursors_.find(consumer);
  const bool forward = it == cursors_.end() || offset > it->second.offset;
  if (forward) cursors_[consumer] = Cursor{offset, now};
  if (moved) *moved = forward;
}

Outcome<bool> LogModel::commit(const std::string& consumer, int64_t offset, int64_t now) {
  if (offset < 0) return Outcome<bool>::failed(LogError::append(kOffsetMessage));
  bool moved = false;
  upsertForward(consumer, offset, now, &moved);
  return Outcome<bool>{moved, std::nullopt};
}

int64_t LogModel::backlog() const {
  if (cursors_.empty()) return 0;
  int64_t low = cursors_.begin()->second.offset;
  for (const auto& [consumer, c] : cursors_) low = std::min(low, c.offset);
  return std::max<int64_t>(0, nextOffset_ - low);
}

// ---------------------------------------------------------------------------------------------
// Trim and cold flush (log.md 6)

std::optional<TrimRange> LogModel::planTrimPass(int64_t now) const {
  if (!options_.retention) return std::nullopt;
  const Retention& r = *options_.retention;
  if (!r.maxAgeMs && !r.maxRecords && !r.maxBytes) return std::nullopt;
  TrimRange range;
  if (options_.cold && flush_) {
    range.fromIntent = true;
    range.firstOffset = flush_->firstOffset;
    range.lastOffset = flush_->lastOffset;
    for (auto it = records_.lower_bound(range.firstOffset); it != records_.end() && it->first <= range.lastOffset; ++it)
      range.records.push_back(it->second);
    return range;
  }
  if (records_.empty()) return std::nullopt;
  const int64_t count = static_cast<int64_t>(records_.size());
  const int64_t excess = r.maxRecords ? std::max<int64_t>(0, count - *r.maxRecords) : 0;
  int64_t over = r.maxBytes ? std::max<int64_t>(0, totalBytes_ - *r.maxBytes) : 0;
  int64_t i = 0;
  for (auto it = records_.begin(); it != records_.end() && i < options_.maxBatchSize; ++it, ++i) {
    const Record& row = it->second;
    const bool expiring = i < excess || over > 0 || (r.maxAgeMs && row.appendedAt < now - *r.maxAgeMs);
    over -= row.bytes;
    if (!expiring) break;
    range.records.push_back(row);
  }
  if (range.records.empty()) return std::nullopt;
  range.firstOffset = range.records.front().offset;
  range.lastOffset = range.records.back().offset;
  return range;
}

void LogModel::beginFlush(const TrimRange& range, int64_t now) {
  flush_ = FlushIntent{range.firstOffset, range.lastOffset, now};
}

int64_t LogModel::deleteRange(const TrimRange& range) {
  int64_t deleted = 0, bytes = 0;
  for (auto it = records_.lower_bound(range.firstOffset); it != records_.end() && it->first <= range.lastOffset;) {
    bytes += it->second.bytes;
    hotKeys_.erase(it->second.key);
    it = records_.erase(it);
    ++deleted;
  }
  totalBytes_ = std::max<int64_t>(0, totalBytes_ - bytes);
  flush_.reset();  // also an intent left while cold storage was configured (docs/decisions.md)
  return deleted;
}

int64_t LogModel::finishFlush(const TrimRange& range, const std::string& locator, int64_t now) {
  int64_t bytes = 0;
  for (const Record& r : range.records) bytes += r.bytes;
  segments_[range.firstOffset] = Segment{range.firstOffset, range.lastOffset, locator, bytes, now};
  return deleteRange(range);
}

Outcome<int64_t> LogModel::trim(int64_t now) {
  int64_t removed = 0;
  for (;;) {
    std::optional<TrimRange> range = planTrimPass(now);
    if (!range) return Outcome<int64_t>{removed, std::nullopt};
    int64_t deleted = 0;
    if (!options_.cold) {
      deleted = deleteRange(*range);
    } else {
      if (!range->fromIntent) beginFlush(*range, now);
      const ColdWrite written = options_.cold->write(range->firstOffset, range->lastOffset, range->records);
      if (!written.locator) return Outcome<int64_t>::failed(written.thrown);
      if (written.locator->empty())
        return Outcome<int64_t>::failed(LogError::type("Cold storage must return a non-empty locator"));
      deleted = finishFlush(*range, *written.locator, now);
    }
    removed += deleted;
    if (deleted < static_cast<int64_t>(range->records.size())) return Outcome<int64_t>{removed, std::nullopt};
  }
}

Outcome<int64_t> LogModel::forgetColdBefore(int64_t offset) {
  if (offset < 0) return Outcome<int64_t>::failed(LogError::append(kOffsetMessage));
  int64_t forgotten = 0;
  for (auto it = segments_.begin(); it != segments_.end();) {
    if (it->second.lastOffset < offset) {
      it = segments_.erase(it);
      ++forgotten;
    } else {
      ++it;
    }
  }
  return Outcome<int64_t>{forgotten, std::nullopt};
}

// ---------------------------------------------------------------------------------------------
// Leases (log.md 7)

std::optional<LogError> LogModel::leaseGuard(const std::string& consumer) const {
  if (!options_.leases) return LogError::type("Leases require the leases option");
  if (consumer.empty()) return LogError::append("Consumer must be a non-empty string");
  return std::nullopt;
}

std::vector<LeaseRow*> LogModel::rowsOf(const std::string& consumer) {
  std::vector<LeaseRow*> rows;
  for (auto& [id, row] : leaseRows_)
    if (row.consumer == consumer) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(), [](const LeaseRow* a, const LeaseRow* b) { return a->firstOffset < b->firstOffset; });
  return rows;
}

std::vector<const LeaseRow*> LogModel::rowsOf(const std::string& consumer) const {
  std::vector<const LeaseRow*> rows;
  for (const auto& [id, row] : leaseRows_)
    if (row.consumer == consumer) rows.push_back(&row);
  std::stable_sort(rows.begin(), rows.end(), [](const LeaseRow* a, const LeaseRow* b) { return a->firstOffset < b->firstOffset; });
  return rows;
}

LeaseRow* LogModel::activeRow(const std::string& consumer, const std::string& batchId) {
  auto it = leaseRows_.find(batchId);
  if (it == leaseRows_.end() || it->second.consumer != consumer || it->second.state != LeaseState::active) return nullptr;
  return &it->second;
}

void LogModel::insertRow(LeaseRow row) {
  if (leaseRows_.count(row.batchId)) throw std::invalid_argument("lease: batch id " + row.batchId + " is already used");
  const std::string id = row.batchId;
  leaseRows_.emplace(id, std::move(row));
}

int64_t LogModel::heldCount(const std::string& consumer, int64_t now) const {
  int64_t held = 0;
  for (const LeaseRow* row : rowsOf(consumer)) held += isHeld(*row, now) ? 1 : 0;
  return held;
}

const LeaseRow* LogModel::firstReclaimable(const std::string& consumer, int64_t now) const {
  for (const LeaseRow* row : rowsOf(consumer))
    if (isReclaimable(*row, now)) return row;
  return nullptr;
}

std::optional<int64_t> LogModel::freshLeaseStart(const std::string& consumer) const {
  const Bounds b = bounds();
  const int64_t base = std::max(cursor(consumer).value_or(0),
                                allocations_.count(consumer) ? allocations_.at(consumer) : int64_t{0});
  const int64_t from = std::max(b.oldestOffset, base);
  if (from >= b.nextOffset) return std::nullopt;
  return from;
}

AdvanceResult advanceOver(std::optional<int64_t> cursor, const std::vector<AdvanceRow>& rows) {
  AdvanceResult result;
  result.before = cursor;
  int64_t x = cursor.value_or(0);
  for (const AdvanceRow& row : rows) {
    if (row.lastOffset < x) continue;
    if (row.firstOffset > x || !row.settled) break;
    x = row.lastOffset + 1;
  }
  result.to = x > cursor.value_or(0) ? std::optional<int64_t>(x) : cursor;
  for (const AdvanceRow& row : rows)
    if (row.settled && row.lastOffset < x) ++result.deleted;
  return result;
}

AdvanceResult LogModel::advancePreview(const std::string& consumer) const {
  std::vector<AdvanceRow> rows;
  for (const LeaseRow* row : rowsOf(consumer))
    rows.push_back({row->firstOffset, row->lastOffset, row->state == LeaseState::acked || row->state == LeaseState::skipped});
  return advanceOver(cursor(consumer), rows);
}

AdvanceResult LogModel::advance(const std::string& consumer, int64_t now) {
  const AdvanceResult result = advancePreview(consumer);
  if (result.to != result.before) upsertForward(consumer, *result.to, now);
  // The delete uses x, which equals the new cursor when it moved and cursor.value_or(0) otherwise.
  const int64_t x = result.to.value_or(0);
  for (auto it = leaseRows_.begin(); it != leaseRows_.end();) {
    const LeaseRow& row = it->second;
    if (row.consumer == consumer && (row.state == LeaseState::acked || row.state == LeaseState::skipped) &&
        row.lastOffset < x)
      it = leaseRows_.erase(it);
    else
      ++it;
  }
  return result;
}

LogModel::Grant LogModel::grantLease(const std::string& consumer, int64_t size, int64_t now, const LeaseIds& ids) {
  const LeaseOptions& lo = *options_.leases;
  Grant grant;
  // 1. Reclaim first, not limited by maxParallelism; the old batch id no longer exists.
  if (const LeaseRow* reclaimable = firstReclaimable(consumer, now)) {
    LeaseRow row = *reclaimable;
    leaseRows_.erase(row.batchId);
    row.batchId = ids.batchId;
    row.state = LeaseState::active;
    row.attempt += 1;
    row.expiresAt = now + lo.leaseMs;
    insertRow(row);
    grant.lease = Lease{row.batchId, consumer, {}, row.firstOffset, row.lastOffset, row.attempt, row.expiresAt, true};
    return grant;
  }
  // 2. The parallelism bound on held rows.
  if (heldCount(consumer, now) >= lo.maxParallelism) {
    grant.why = NoLease::parallelism;
    return grant;
  }
  // 3-4. Where a fresh lease starts and ends.
  const Bounds b = bounds();
  const int64_t base = std::max(cursor(consumer).value_or(0),
                                allocations_.count(consumer) ? allocations_.at(consumer) : int64_t{0});
  const int64_t from = std::max(b.oldestOffset, base);
  if (from >= b.nextOffset) {
    // Decision (docs/decisions.md): a fully trimmed tail is still covered by a gap row.
    if (from > base) {
      insertRow(LeaseRow{ids.gapBatchId, consumer, base, from - 1, LeaseState::skipped, 0, 0, now});
      allocations_[consumer] = from;
      advance(consumer, now);
    }
    grant.why = NoLease::empty;
    return grant;
  }
  int64_t last = std::min(from + size - 1, b.nextOffset - 1);
  if (from < b.hotOffset) {
    const Segment* seg = segmentContaining(from);
    last = std::min(last, seg ? seg->lastOffset : b.hotOffset - 1);
  }
  // 5-7. The gap row (H5), the lease and its allocation, and advance over the gap.
  const bool gap = from > base;
  if (gap) insertRow(LeaseRow{ids.gapBatchId, consumer, base, from - 1, LeaseState::skipped, 0, 0, now});
  insertRow(LeaseRow{ids.batchId, consumer, from, last, LeaseState::active, 1, now + lo.leaseMs, now});
  allocations_[consumer] = last + 1;
  if (gap) advance(consumer, now);
  grant.lease = Lease{ids.batchId, consumer, {}, from, last, 1, now + lo.leaseMs, false};
  return grant;
}

std::optional<LogError> LogModel::truncateLease(const Lease& lease, int64_t now, const std::string& skippedBatchId) {
  const int64_t oldest = bounds().oldestOffset;
  if (lease.firstOffset >= oldest) return std::nullopt;
  if (LeaseRow* row = activeRow(lease.consumer, lease.batchId)) {
    if (lease.lastOffset < oldest) {
      row->state = LeaseState::skipped;
    } else {
      row->firstOffset = oldest;
      row->state = LeaseState::pending;
      row->expiresAt = 0;
      row->attempt -= 1;  // that attempt was not delivered
      insertRow(LeaseRow{skippedBatchId, lease.consumer, lease.firstOffset, oldest - 1, LeaseState::skipped, 0, 0, now});
    }
    advance(lease.consumer, now);
  }
  return LogError::truncated(lease.firstOffset, oldest);
}

std::optional<LogError> LogModel::readLeaseRecords(Lease& lease) {
  const Bounds b = bounds();
  std::map<std::string, std::optional<std::vector<Record>>> loaded;  // one cold.read per segment
  lease.records.clear();
  for (int64_t o = lease.firstOffset; o <= lease.lastOffset; ++o) {
    std::optional<Record> found;
    if (o >= b.hotOffset) {
      if (auto it = records_.find(o); it != records_.end()) found = it->second;
    } else if (const Segment* seg = segmentContaining(o); seg && options_.cold && options_.cold->read) {
      auto cached = loaded.find(seg->locator);
      if (cached == loaded.end()) cached = loaded.emplace(seg->locator, options_.cold->read(seg->locator)).first;
      if (cached->second)
        for (const Record& r : *cached->second)
          if (r.offset == o) {
            found = r;
            break;
          }
    }
    if (!found) {
      lease.records.clear();
      if (LeaseRow* row = activeRow(lease.consumer, lease.batchId)) {
        row->state = LeaseState::pending;
        row->expiresAt = 0;
        row->attempt -= 1;
      }
      return LogError::truncated(o, std::max(o + 1, b.hotOffset));
    }
    lease.records.push_back(*found);
  }
  return std::nullopt;
}

bool LogModel::isPoisoned(const Lease& lease) const {
  const LeaseOptions& lo = *options_.leases;
  return lease.reclaimed && lo.maxAttempts && lo.onPoison && lease.attempt > *lo.maxAttempts;
}

bool LogModel::skipPoisoned(const Lease& lease, int64_t now) {
  LeaseRow* row = activeRow(lease.consumer, lease.batchId);
  if (!row) return false;
  row->state = LeaseState::skipped;
  advance(lease.consumer, now);
  return true;
}

Outcome<LeaseResult> LogModel::lease(const std::string& consumer, std::optional<int64_t> limit, int64_t now,
                                     const LeaseIds& ids) {
  using Result = Outcome<LeaseResult>;
  if (auto e = leaseGuard(consumer)) return Result::failed(*e);
  if (limit && *limit <= 0) return Result::failed(LogError::range(kLimitMessage));
  const int64_t size = std::min(limit.value_or(options_.maxBatchSize), options_.maxBatchSize);
  LeaseResult result;
  Grant grant = grantLease(consumer, size, now, ids);
  if (!grant.lease) {
    result.why = grant.why;
    return Result{std::move(result), std::nullopt};
  }
  Lease& lease = *grant.lease;
  if (auto e = truncateLease(lease, now, ids.skippedBatchId)) return Result::failed(*e);
  if (auto e = readLeaseRecords(lease)) return Result::failed(*e);
  if (isPoisoned(lease)) {
    result.why = NoLease::poisoned;
    if (skipPoisoned(lease, now)) result.poisonCallback = lease;
    return Result{std::move(result), std::nullopt};
  }
  result.lease = std::move(lease);
  return Result{std::move(result), std::nullopt};
}

Outcome<bool> LogModel::ack(const std::string& consumer, const std::string& batchId, int64_t now) {
  if (auto e = leaseGuard(consumer)) return Outcome<bool>::failed(*e);
  LeaseRow* row = activeRow(consumer, batchId);
  if (!row) return Outcome<bool>::failed(LogError::lease(batchId));
  row->state = LeaseState::acked;
  advance(consumer, now);
  return Outcome<bool>{true, std::nullopt};
}

Outcome<bool> LogModel::nack(const std::string& consumer, const std::string& batchId, int64_t now) {
  if (auto e = leaseGuard(consumer)) return Outcome<bool>::failed(*e);
  LeaseRow* row = activeRow(consumer, batchId);
  if (!row) return Outcome<bool>::failed(LogError::lease(batchId));
  row->state = LeaseState::pending;
  row->expiresAt = 0;
  return Outcome<bool>{true, std::nullopt};
}

Outcome<std::vector<LeaseRow>> LogModel::leases(const std::string& consumer) const {
  using Result = Outcome<std::vector<LeaseRow>>;
  if (auto e = leaseGuard(consumer)) return Result::failed(*e);
  std::vector<LeaseRow> rows;
  for (const LeaseRow* row : rowsOf(consumer)) rows.push_back(*row);
  return Result{std::move(rows), std::nullopt};
}

// ---------------------------------------------------------------------------------------------

nlohmann::json LogModel::toJson() const {
  nlohmann::json j;
  j["records"] = nlohmann::json::array();
  for (const auto& [offset, r] : records_) j["records"].push_back(r.toJson());
  j["seq"] = {{"next_offset", nextOffset_}, {"total_bytes", totalBytes_}};
  j["cursors"] = nlohmann::json::object();
  for (const auto& [consumer, c] : cursors_) j["cursors"][consumer] = {{"offset", c.offset}, {"committed_at", c.committedAt}};
  j["segments"] = nlohmann::json::array();
  for (const auto& [first, s] : segments_) j["segments"].push_back(s.toJson());
  j["flush"] = flush_ ? nlohmann::json{{"first", flush_->firstOffset}, {"last", flush_->lastOffset},
                                       {"created_at", flush_->createdAt}}
                      : nlohmann::json();
  j["leases"] = nlohmann::json::array();
  for (const auto& [id, row] : leaseRows_) j["leases"].push_back(row.toJson());
  j["allocations"] = allocations_;
  if (options_.retention)
    j["retention"] = {{"maxAgeMs", optionalJson(options_.retention->maxAgeMs)},
                      {"maxRecords", optionalJson(options_.retention->maxRecords)},
                      {"maxBytes", optionalJson(options_.retention->maxBytes)}};
  return j;
}

}  // namespace durasim::model
