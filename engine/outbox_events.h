// The trace vocabulary of DurabilityOutbox (docs/outbox-trace-events.md): the name of every probe
// the outbox emits, with the fields it carries besides "ev", "t", "object" and "incarnation".
// Probes named "*.write" are emitted inside the transaction they describe (they take effect only if
// it commits); the others after it. The engine, the checkers and the workloads use these names;
// nothing else in them spells one.
#pragma once

#include <string_view>

namespace durasim::outbox_events {

// Every probe name starts with this prefix.
inline constexpr std::string_view kPrefix = "obx.";

// channel, maxBatchSize, batchDelayMs, attemptTimeoutMs (at construction, in every incarnation)
inline constexpr std::string_view kOptions = "obx.options";
// channel, key, version, generation, value (serialized), at, firstAttemptAt
inline constexpr std::string_view kStageWrite = "obx.stage.write";
// channel
inline constexpr std::string_view kPassBegin = "obx.pass.begin";
// channel, failed
inline constexpr std::string_view kPassEnd = "obx.pass.end";
// channel, claimAt, deadline, claimed [{key, version, generation, attempt}] (the new attempt)
inline constexpr std::string_view kClaimWrite = "obx.claim.write";
// channel, entries [{key, version, attempt}]: the batch handed to publish
inline constexpr std::string_view kPublish = "obx.publish";
// channel, threw, timedOut: the batch closed
inline constexpr std::string_view kPublished = "obx.published";
// channel, key, version, delayMs (or null), refused (null when marked; "closed" | "range")
inline constexpr std::string_view kMark = "obx.mark";
// channel, at, acked [{key, generation, matched}], retried [{key, generation, attempt, next, error
// {name, message}, matched}]
inline constexpr std::string_view kSettleWrite = "obx.settle.write";
// channel, until, postponed (rows): a pass of a channel no outbox attaches
inline constexpr std::string_view kPostponeWrite = "obx.postpone.write";
// channel, pending
inline constexpr std::string_view kPending = "obx.pending";

}  // namespace durasim::outbox_events
