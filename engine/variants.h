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

// The event bus (events.md 12-13): each flag restores one reference behaviour; the invariants
// expected to catch it are in invariants-events-runtime.md ("Which invariant catches which
// event-bus variant"). Read by the bus at construction (events.cc).
// D1: the log ordered by (ts, id) and paged by row offset; the last page re-listed (EVT-14, 40, 10).
inline constexpr std::string_view kEventsOrderByTimestamp = "events.order_by_timestamp";
// D2: a releasedAt or firstAt equal to 0 reads as absent (EVT-34, 23, 26).
inline constexpr std::string_view kEventsTimestampTruthiness = "events.timestamp_truthiness";
// D3: a release as separate steps, attempt reset before the dead-record CAS (EVT-27, 28).
inline constexpr std::string_view kEventsReleaseTwoStep = "events.release_two_step";
// D4: any maxAttempts accepted, compared as n >= maxAttempts (EVT-25, 18).
inline constexpr std::string_view kEventsUnvalidatedMaxAttempts = "events.unvalidated_max_attempts";
// D5: the depth counted by paging, then the append; a re-emit refused when full (EVT-03).
inline constexpr std::string_view kEventsDepthCheckNonatomic = "events.depth_check_nonatomic";
// D6: no pending index: the reference poll and release with the rescan flag (EVT-17, 26, 15).
inline constexpr std::string_view kEventsFullRescanWhenFrozen = "events.full_rescan_when_frozen";
// D7: the failure record as separate re-read, attempt CAS and dead CAS (EVT-18).
inline constexpr std::string_view kEventsFailureTwoStep = "events.failure_two_step";
// D8: plain put for the first write of an attempt or dead record (EVT-19).
inline constexpr std::string_view kEventsPlainPutOnAbsent = "events.plain_put_on_absent";
// D9: listDeadEvents scans the whole topic log (EVT-42).
inline constexpr std::string_view kEventsListDeadFullScan = "events.list_dead_full_scan";
// D10: stop() + start() during a tick leaves two timer chains (EVT-38).
inline constexpr std::string_view kEventsPollLoopDoubleChain = "events.poll_loop_double_chain";
// D11: no argument validation (EVT-25).
inline constexpr std::string_view kEventsUnvalidatedOptions = "events.unvalidated_options";
// Older reference: key components and the log namespace joined raw with ':' (EVT-04, 05, 06).
inline constexpr std::string_view kEventsUnescapedKeys = "events.unescaped_keys";

inline bool enabled(const ObjectContext& ctx, std::string_view flag) { return ctx.variants.count(std::string(flag)) > 0; }

}  // namespace durasim::variants
