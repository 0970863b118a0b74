// The trace vocabulary of the retained log (docs/log-trace-events.md): the name of every probe
// DurabilityLog emits, with the fields it carries besides "ev", "t", "object" and "incarnation",
// and the events an application of the log reports for the LOG and LSE checks. The engine, the
// checkers and the workloads use these names; nothing else in them spells one.
#pragma once

#include <string_view>

namespace durasim::log_events {

// Every probe name starts with this prefix.
inline constexpr std::string_view kPrefix = "log.";

// consumer, batchId
inline constexpr std::string_view kAckRejected = "log.ack.rejected";
// consumer, batchId
inline constexpr std::string_view kAckWrite = "log.ack.write";
// consumer, cursor, to, deleted
inline constexpr std::string_view kAdvanceWrite = "log.advance.write";
// keys, offsets
inline constexpr std::string_view kAppend = "log.append";
// message
inline constexpr std::string_view kAppendRejected = "log.append.rejected";
// keys, offsets, new, first, next, bytes, at
inline constexpr std::string_view kAppendWrite = "log.append.write";
// first, last, message
inline constexpr std::string_view kColdFailed = "log.cold.failed";
// bodies, first, keys, last, offsets
inline constexpr std::string_view kColdWrite = "log.cold.write";
// consumer, offset, moved
inline constexpr std::string_view kCommitWrite = "log.commit.write";
// offset, forgotten
inline constexpr std::string_view kForgetWrite = "log.forget.write";
// attempt, batchId, bodies, consumer, expiresAt, first, keys, last, offsets, reclaimed
inline constexpr std::string_view kLease = "log.lease";
// consumer, allocation (variant log.lease_two_write_allocation only)
inline constexpr std::string_view kLeaseAllocateWrite = "log.lease.allocate.write";
// consumer, below, deleted (variant log.lease_ack_three_units only)
inline constexpr std::string_view kLeaseDeleteWrite = "log.lease.delete.write";
// method
inline constexpr std::string_view kLeaseDisabled = "log.lease.disabled";
// consumer, gap, gapBatchId, allocation
inline constexpr std::string_view kLeaseGapWrite = "log.lease.gap.write";
// consumer, reason
inline constexpr std::string_view kLeaseNone = "log.lease.none";
// consumer, batchId, first, last, attempt, matched
inline constexpr std::string_view kLeasePoisonWrite = "log.lease.poison.write";
// consumer, batchId, missing
inline constexpr std::string_view kLeaseReleaseWrite = "log.lease.release.write";
// batchId, consumer, first, last, oldest, skippedBatchId, whole
inline constexpr std::string_view kLeaseTruncateWrite = "log.lease.truncate.write";
// consumer, batchId, requested, oldest
inline constexpr std::string_view kLeaseTruncated = "log.lease.truncated";
// consumer, batchId, requested, oldest
inline constexpr std::string_view kLeaseUnreadable = "log.lease.unreadable";
// allocation, attempt, base, batchId, consumer, cursor, expiresAt, first, gap, gapBatchId, held, hot, last, next, oldest, previousBatchId, reclaimed
inline constexpr std::string_view kLeaseWrite = "log.lease.write";
// pendingDeliveries
inline constexpr std::string_view kLoad = "log.load";
// consumer, batchId
inline constexpr std::string_view kNackRejected = "log.nack.rejected";
// consumer, batchId
inline constexpr std::string_view kNackWrite = "log.nack.write";
// cold, leases, maxBatchSize, retention
inline constexpr std::string_view kOptions = "log.options";
// consumer, batchId, first, last, attempt
inline constexpr std::string_view kPoisonCallback = "log.poison.callback";
// consumer, batchId, message
inline constexpr std::string_view kPoisonFailed = "log.poison.failed";
// bodies, capped, from, hot, keys, lag, limit, next, nextOffset, offsets, oldest
inline constexpr std::string_view kRead = "log.read";
// from, requested, oldest
inline constexpr std::string_view kReadTruncated = "log.read.truncated";
// now
inline constexpr std::string_view kTrimBegin = "log.trim.begin";
// first, last, deleted (without cold; under H20 also the deletion after log.trim.segment.write)
inline constexpr std::string_view kTrimDelete = "log.trim.delete";
// removed, now
inline constexpr std::string_view kTrimEnd = "log.trim.end";
// first, last, locator, deleted
inline constexpr std::string_view kTrimFlush = "log.trim.flush";
// first, last
inline constexpr std::string_view kTrimIntent = "log.trim.intent";
// first, last, locator (H20 variant only: the segment row written alone, before the deletion)
inline constexpr std::string_view kTrimSegmentWrite = "log.trim.segment.write";

// Reported by an application of the capability (workloads/), read by its checkers.
// bodies, keys, offsets, partition, producer
inline constexpr std::string_view kAppProduce = "app.produce";
// from, group, offsets, partition
inline constexpr std::string_view kAppConsume = "app.consume";
// group, oldest, partition, requested, resume
inline constexpr std::string_view kAppConsumeTruncated = "app.consume.truncated";
// batchId, consumer, first, last, outcome, partition, result
inline constexpr std::string_view kAppLeaseOutcome = "app.lease.outcome";
// partition, offset
inline constexpr std::string_view kAppColdLifecycle = "app.cold.lifecycle";
// partition (the application retired its log with DurabilityLog::migrate(none))
inline constexpr std::string_view kAppLogRetired = "app.log.retired";
// partition, from, and records [{offset, key, body}] or the LogTruncatedError's requested, oldest
inline constexpr std::string_view kAppProbe = "app.log.probe";
// partition, oldest, next (the probe read every offset in [oldest, next) of the partition)
inline constexpr std::string_view kAppProbeDone = "app.log.probe.done";

}  // namespace durasim::log_events
