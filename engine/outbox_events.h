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


// ---- Reported by an application of the outbox (workloads/account.h) ----

// The channels an incarnation of the application attaches (at construction): account, channels
inline constexpr std::string_view kAppChannels = "app.obx.channels";
// The application's transaction that staged these versions threw on purpose after staging (it rolled
// back with them): account, staged [{channel, key, version}]
inline constexpr std::string_view kAppAborted = "app.obx.aborted";
// The sink's write of one entry, inside the sink's transaction (it takes effect with the sink
// object's commit): source (the staging object's label), channel, key, version, value (serialized)
inline constexpr std::string_view kAppSinkWrite = "app.obx.sink.write";
// The application removed the outbox schema (DurabilityOutbox::migrate(none)) and no outbox is
// attached any more: account
inline constexpr std::string_view kAppMigratedNone = "app.obx.migrated_none";

// The sink object's class, and the table it keeps the entries it received in: (source TEXT, channel
// TEXT, key TEXT, version INTEGER, value TEXT, PRIMARY KEY (source, channel, key))
inline constexpr std::string_view kSinkClass = "OutboxSink";
inline constexpr std::string_view kSinkTable = "outbox_sink";

}  // namespace durasim::outbox_events
