// Research variant flags (hazards.md, "Variant flags"): each reintroduces one reference hazard or
// contract change. They are read from ObjectContext::variants at construction; none is on by default.
// cli/variants.h registers each with the contract it breaks and the invariants expected to catch it.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "engine/runtime.h"

namespace durasim::variants {

// H-A: reconcile computes `next` only from the participant that requested it (SCH-01, 02, 14).
inline constexpr std::string_view kReconcileOwnKindOnly = "scheduler.reconcile_own_kind_only";

// H-F1: fanout claims each due row in a transaction of its own instead of the whole batch in one
// (FAN-23, 26).
inline constexpr std::string_view kFanoutPerRowClaim = "fanout.per_row_claim";

// Calibration variants for the outbox (hazards.md): plausible bugs, not reference behaviour.
// An acknowledgement deletes by (channel, key) only, whatever generation the row holds (OBX-05, 16).
inline constexpr std::string_view kOutboxAckIgnoresGeneration = "outbox.ack_ignores_generation";
// stage(txn, ...) commits in a transaction of its own, not the application's (OBX-04).
inline constexpr std::string_view kOutboxStageOwnTransaction = "outbox.stage_own_transaction";
// A stage's version is MAX(version) of the stored rows + 1; the counter is not used (OBX-01, 02, 14).
inline constexpr std::string_view kOutboxVersionFromRows = "outbox.version_from_rows";
// A row is deleted after 5 failed publishes (OBX-09, 16).
inline constexpr std::string_view kOutboxGiveUpAfterMaxAttempts = "outbox.give_up_after_max_attempts";
inline constexpr int64_t kOutboxGiveUpAttempts = 5;

// The lease flags (H4-H8) are read by DurabilityLog::LeaseVariants (engine/log_lease_variants.cc).
// H4: a fresh lease inserts its row, yields, then upserts the allocation as a second write (LSE-01, 02).
inline constexpr std::string_view kLeaseTwoWriteAllocation = "log.lease_two_write_allocation";
// H5: no gap rows; advance starts from `cursor ?? 0`, needs first_offset == position, never deletes
// rows below the cursor (LSE-12, 15).
inline constexpr std::string_view kLeaseAdvanceFromZero = "log.lease_advance_from_zero";
// H6: advance walks at most maxBatchSize rows (LSE-05, 15).
inline constexpr std::string_view kLeaseAdvanceBatchLimited = "log.lease_advance_batch_limited";
// H6: poison, truncation and gap skips do not run advance (LSE-14).
inline constexpr std::string_view kLeaseSkipWithoutAdvance = "log.lease_skip_without_advance";
// H6: ack settles, commits the cursor and deletes rows as three writes with a yield between (LSE-05, 15).
inline constexpr std::string_view kLeaseAckThreeUnits = "log.lease_ack_three_units";
// H7/H23: loading a trimmed range throws without touching the row (LSE-13, 15).
inline constexpr std::string_view kLeaseTruncationBlocks = "log.lease_truncation_blocks";
// H8: ack and nack ignore which consumer holds the lease (LSE-09, 11).
inline constexpr std::string_view kLeaseSettleIgnoresConsumer = "log.lease_settle_ignores_consumer";
// H19: migrate(none) reverts the log but leaves the lease tables behind (SCH-11).
inline constexpr std::string_view kMigrateNullKeepsLeaseTables = "log.migrate_null_keeps_lease_tables";
// H20: no flush intent, the range recomputed each pass, segment upsert and deletion as two writes
// with a yield between, unordered segment lookup (LOG-11, 15, 16).
inline constexpr std::string_view kSegmentFlushTwoUnits = "log.segment_flush_two_units";

inline bool enabled(const ObjectContext& ctx, std::string_view flag) { return ctx.variants.count(std::string(flag)) > 0; }

}  // namespace durasim::variants
