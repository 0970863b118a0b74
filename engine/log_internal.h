// Pieces of DurabilityLog shared by its translation units (log.cc: append, read, cursors, trim;
// log_leases.cc: leases; log_lease_variants.cc: the lease variants of hazards.md). Not part of the
// log's interface.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/conventions.h"
#include "engine/log.h"
#include "engine/log_schema.h"
#include "engine/runtime.h"

namespace durasim::log_detail {

// log.md 4.1 from one read: oldest <= hot <= next.
struct Bounds {
  int64_t oldest, hot, next;
};

// `sql` is the object's storage or an open transaction.
template <class Sql>
Bounds readBounds(Sql& sql) {
  SqlRow row = sql.exec("SELECT (SELECT next_offset FROM " DURASIM_LOG_SEQ " WHERE id = 1) AS next,"
                        " (SELECT MIN(\"offset\") FROM " DURASIM_LOG_RECORDS ") AS hot,"
                        " (SELECT MIN(first_offset) FROM " DURASIM_LOG_SEGMENTS ") AS seg")
                   .one();
  const int64_t next = row.int64("next");
  const int64_t hot = row.optInt64("hot").value_or(next);
  const int64_t oldest = std::min(row.optInt64("seg").value_or(hot), hot);
  return Bounds{oldest, hot, next};
}

// log.md 5: the stored cursor of `consumer`, or nullopt before its first commit.
template <class Sql>
std::optional<int64_t> storedCursor(Sql& sql, const std::string& consumer) {
  std::optional<SqlRow> row = sql.exec("SELECT \"offset\" FROM " DURASIM_LOG_CURSORS " WHERE consumer = ?", consumer).next();
  return row ? std::optional<int64_t>(row->int64("offset")) : std::nullopt;
}

// log.md 5: the forward-only cursor upsert shared by commit() and the lease advance; returns
// whether the cursor moved.
inline bool moveCursorForward(StorageTxn& txn, const std::string& consumer, int64_t offset, int64_t now) {
  return txn.exec("INSERT INTO " DURASIM_LOG_CURSORS " (consumer, \"offset\", committed_at) VALUES (?, ?, ?)"
                  " ON CONFLICT(consumer) DO UPDATE SET \"offset\" = excluded.\"offset\", committed_at = excluded.committed_at"
                  " WHERE excluded.\"offset\" > " DURASIM_LOG_CURSORS ".\"offset\"",
                  consumer, offset, now)
             .rowsWritten() > 0;
}

// Which segment a lookup picks when several hold an offset: the latest-starting one (log.md 4.2), or,
// under the H20 variant (log.segment_flush_two_units), whichever SQLite returns first.
enum class SegmentLookup { latestStart, unordered };

// log.md 4.2: the indexed segment holding `offset`.
template <class Sql>
std::optional<SqlRow> segmentHolding(Sql& sql, int64_t offset, SegmentLookup lookup = SegmentLookup::latestStart) {
  if (lookup == SegmentLookup::unordered)
    return sql
        .exec("SELECT first_offset, last_offset, locator FROM " DURASIM_LOG_SEGMENTS " WHERE first_offset <= ? AND last_offset >= ? LIMIT 1",
              offset, offset)
        .next();
  return sql
      .exec("SELECT first_offset, last_offset, locator FROM " DURASIM_LOG_SEGMENTS
            " WHERE first_offset <= ? AND last_offset >= ? ORDER BY first_offset DESC LIMIT 1",
            offset, offset)
      .next();
}

// Hot records with offsets in [first, last], in offset order.
template <class Sql>
std::vector<LogRecord> hotRecords(Sql& sql, int64_t first, int64_t last) {
  std::vector<LogRecord> records;
  for (const SqlRow& row : sql.exec("SELECT \"offset\", dedup_key, payload, appended_at FROM " DURASIM_LOG_RECORDS
                                    " WHERE \"offset\" >= ? AND \"offset\" <= ? ORDER BY \"offset\"",
                                    first, last)
                               .toVector())
    records.push_back(LogRecord{row.int64("offset"), row.text("dedup_key"), deserialize(row.text("payload")),
                                row.int64("appended_at")});
  return records;
}

// Adds `offsets`, `keys` and `bodies` (stored payload strings) of `records` to a probe's fields.
inline void describeRecords(EventFields& fields, const std::vector<LogRecord>& records) {
  nlohmann::json offsets = nlohmann::json::array(), keys = nlohmann::json::array(), bodies = nlohmann::json::array();
  for (nlohmann::json* list : {&offsets, &keys, &bodies}) list->get_ref<nlohmann::json::array_t&>().reserve(records.size());
  for (const LogRecord& r : records) {
    offsets.push_back(r.offset);
    keys.push_back(r.deduplicationKey);
    bodies.push_back(serialize(r.body).value_or(""));
  }
  fields["offsets"] = std::move(offsets);
  fields["keys"] = std::move(keys);
  fields["bodies"] = std::move(bodies);
}

inline nlohmann::json optionalJson(const std::optional<int64_t>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json();
}

// log.md 2: the stored name of a lease state.
inline const char* leaseStateName(LeaseState state) {
  switch (state) {
    case LeaseState::active:
      return "active";
    case LeaseState::pending:
      return "pending";
    case LeaseState::acked:
      return "acked";
    case LeaseState::skipped:
    default:
      return "skipped";
  }
}

inline void insertLeaseRow(StorageTxn& txn, const LogLeaseRow& row) {
  txn.exec("INSERT INTO " DURASIM_LOG_LEASES " (batch_id, consumer, first_offset, last_offset, state, attempt, expires_at,"
           " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
           row.batchId, row.consumer, row.firstOffset, row.lastOffset, leaseStateName(row.state), row.attempt, row.expiresAt,
           row.createdAt);
}

// A skipped row for trimmed offsets [first, last]: a gap row (log.md 7.1 step 5) or the trimmed
// prefix of a leased range (7.2).
inline void insertSkippedRow(StorageTxn& txn, const std::string& batchId, const std::string& consumer, int64_t first, int64_t last,
                         int64_t now) {
  insertLeaseRow(txn, LogLeaseRow{batchId, consumer, first, last, LeaseState::skipped, 0, 0, now});
}

inline void setAllocation(StorageTxn& txn, const std::string& consumer, int64_t offset) {
  txn.exec("INSERT INTO " DURASIM_LOG_ALLOCATIONS " (consumer, allocated_offset) VALUES (?, ?)"
           " ON CONFLICT(consumer) DO UPDATE SET allocated_offset = excluded.allocated_offset",
           consumer, offset);
}

}  // namespace durasim::log_detail

namespace durasim {

// A fresh lease that transaction A planned but left unwritten (variant log.lease_two_write_allocation,
// log_lease_variants.cc): its gap row id, if any, and the `log.lease.write` fields to trace.
struct DurabilityLog::UnwrittenGrant {
  int64_t base = 0;
  std::optional<std::string> gapId;
  EventFields fields;
  int64_t now = 0;
};

}  // namespace durasim
