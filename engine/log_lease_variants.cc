// The lease variants of hazards.md (H4-H8; names in engine/variants.h): each reintroduces one
// reference behaviour that log_leases.cc fixes, so that the LSE checks can be shown to catch it. This
// file reads the flags (once, when the log is built) and holds the steps that exist only under a
// variant; log_leases.cc branches to them. Apart from reading the flags, nothing here runs with
// every flag off.
//   log.lease_two_write_allocation (H4): the lease row, then the allocation, as two writes
//   log.lease_ack_three_units (H6): after the settle write, the cursor, then the row deletion
//   log.lease_advance_from_zero (H5), log.lease_advance_batch_limited (H6): advance's walk and
//     deletion as the reference did them
//   log.lease_settle_ignores_consumer (H8): the settle write without the consumer condition
// Two change one condition in log_leases.cc itself: log.lease_skip_without_advance (H6) and
// log.lease_truncation_blocks (H7/H23); H5 also writes no gap rows there.
#include <limits>
#include <utility>

#include "engine/log.h"
#include "engine/log_events.h"
#include "engine/log_internal.h"
#include "engine/variants.h"

namespace durasim {

DurabilityLog::LeaseVariants DurabilityLog::LeaseVariants::of(const ObjectContext& ctx) {
  LeaseVariants v;
  v.twoWriteAllocation = variants::enabled(ctx, variants::kLeaseTwoWriteAllocation);
  v.advanceFromZero = variants::enabled(ctx, variants::kLeaseAdvanceFromZero);
  v.advanceBatchLimited = variants::enabled(ctx, variants::kLeaseAdvanceBatchLimited);
  v.skipWithoutAdvance = variants::enabled(ctx, variants::kLeaseSkipWithoutAdvance);
  v.ackThreeUnits = variants::enabled(ctx, variants::kLeaseAckThreeUnits);
  v.truncationBlocks = variants::enabled(ctx, variants::kLeaseTruncationBlocks);
  v.settleIgnoresConsumer = variants::enabled(ctx, variants::kLeaseSettleIgnoresConsumer);
  return v;
}

// The settled run of advance() as the reference walked it: H5 looks only at rows from the cursor on
// and needs each to start exactly where the run stands; H6 walks at most maxBatchSize rows.
int64_t DurabilityLog::referenceRunEnd(StorageTxn& txn, const std::string& consumer, std::optional<int64_t> cursor) {
  const bool fromZero = leaseVariants_.advanceFromZero;
  int64_t x = cursor.value_or(0);
  const int64_t lowest = fromZero ? x : std::numeric_limits<int64_t>::min();
  const int64_t limit = leaseVariants_.advanceBatchLimited ? options_.maxBatchSize : -1;  // a negative LIMIT is none
  for (const SqlRow& row : txn.exec("SELECT first_offset, last_offset, state FROM " DURASIM_LOG_LEASES " WHERE consumer = ?"
                                    " AND first_offset >= ? ORDER BY first_offset, batch_id LIMIT ?",
                                    consumer, lowest, limit)
                               .toVector()) {
    if (fromZero) {
      if (row.int64("first_offset") != x) break;
    } else {
      if (row.int64("last_offset") < x) continue;
      if (row.int64("first_offset") > x) break;
    }
    const std::string state = row.text("state");
    if (state != "acked" && state != "skipped") break;
    x = row.int64("last_offset") + 1;
  }
  return x;
}

// H5: the settled rows the walk passed are deleted; those below the cursor it started from stay.
int64_t DurabilityLog::deleteSettledFromCursor(StorageTxn& txn, const std::string& consumer, std::optional<int64_t> cursor,
                                               int64_t below) {
  return txn.exec("DELETE FROM " DURASIM_LOG_LEASES " WHERE consumer = ? AND state IN ('acked','skipped')"
                  " AND first_offset >= ? AND last_offset < ?",
                  consumer, cursor.value_or(0), below)
      .rowsWritten();
}

// H8: the settle write matches the batch id whichever consumer holds it; advance() then runs for the
// consumer named in the call.
bool DurabilityLog::markSettledAnyConsumer(StorageTxn& txn, bool ack, const std::string& batchId) {
  const char* sql = ack ? "UPDATE " DURASIM_LOG_LEASES " SET state = 'acked' WHERE batch_id = ? AND state = 'active'"
                        : "UPDATE " DURASIM_LOG_LEASES " SET state = 'pending', expires_at = 0 WHERE batch_id = ? AND state = 'active'";
  return txn.exec(sql, batchId).rowsWritten() > 0;
}

// H4: after its records were loaded, a fresh lease is inserted (with its gap row) as one write; the
// wait for that commit lets other events in; then the allocation moves as a second write. A crash in
// between, or a lease() that planned meanwhile, hands out an overlapping range.
Task<void> DurabilityLog::writeGrantThenAllocation(LogLease lease, UnwrittenGrant grant) {
  co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    if (grant.gapId) log_detail::insertSkippedRow(txn, *grant.gapId, lease.consumer, grant.base, lease.firstOffset - 1, grant.now);
    log_detail::insertLeaseRow(txn, LogLeaseRow{lease.batchId, lease.consumer, lease.firstOffset, lease.lastOffset, LeaseState::active,
                                                lease.attempt, lease.expiresAt, grant.now});
    ctx_.probe(log_events::kLeaseWrite, std::move(grant.fields));
    if (grant.gapId && !leaseVariants_.skipWithoutAdvance) advance(txn, lease.consumer, grant.now);
  });
  const int64_t allocation = lease.lastOffset + 1;
  co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    log_detail::setAllocation(txn, lease.consumer, allocation);
    ctx_.probe(log_events::kLeaseAllocateWrite, {{"consumer", lease.consumer}, {"allocation", allocation}});
  });
}

// H6: the ack's settle write has committed alone; the cursor then moves as a second write and the
// settled rows below it are deleted as a third, each commit awaited before the next.
Task<void> DurabilityLog::commitCursorThenDeleteRows(std::string consumer) {
  const int64_t now = ctx_.clock.now();
  std::optional<int64_t> before;
  const int64_t to = co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    before = log_detail::storedCursor(txn, consumer);
    const int64_t x = settledRunEnd(txn, consumer, before);
    const bool moves = x > before.value_or(0);
    if (moves) log_detail::moveCursorForward(txn, consumer, x, now);
    const std::optional<int64_t> after = moves ? std::optional<int64_t>(x) : before;
    ctx_.probe(log_events::kAdvanceWrite, {{"consumer", consumer},
                                           {"cursor", log_detail::optionalJson(before)},
                                           {"to", log_detail::optionalJson(after)},
                                           {"deleted", 0}});
    return x;
  });
  co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    const int64_t deleted = deleteSettledBelow(txn, consumer, before, to);
    ctx_.probe(log_events::kLeaseDeleteWrite, {{"consumer", consumer}, {"below", to}, {"deleted", deleted}});
  });
}

}  // namespace durasim
