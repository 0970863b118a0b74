// The trace vocabulary of DurabilityFanout (docs/fanout-trace-events.md): the name of every probe
// the fanout emits, with the fields it carries besides "ev", "t", "object" and "incarnation", and
// the events an application of it reports for the FAN checks. Probes named "*.write" are emitted
// inside the transaction they describe (they take effect only if it commits); the others after it.
// The engine, the checkers and the workloads use these names; nothing else in them spells one.
#pragma once

#include <string_view>

namespace durasim::fanout_events {

// Every probe name starts with this prefix.
inline constexpr std::string_view kPrefix = "fan.";

// targets [{id, kind ("consumer" | "storage"), ackOnReturn, maxAttempts, attemptTimeoutMs}], dlq,
// maxBatchSize, batchDelayMs
inline constexpr std::string_view kOptions = "fan.options";
// message
inline constexpr std::string_view kEnqueueRejected = "fan.enqueue.rejected";
// messages [{key, id, payload, targets, hit, seq?, generation?}], at, firstAttemptAt
inline constexpr std::string_view kEnqueueWrite = "fan.enqueue.write";
// ids, keys
inline constexpr std::string_view kEnqueue = "fan.enqueue";
// target
inline constexpr std::string_view kPassBegin = "fan.pass.begin";
// target, failed
inline constexpr std::string_view kPassEnd = "fan.pass.end";
// target, now, rows [{row, generation, attempt, seq, phase}]
inline constexpr std::string_view kDue = "fan.due";
// target, rows [row], until
inline constexpr std::string_view kPostponeWrite = "fan.postpone.write";
// target, claimAt, deadline, claimed [{row, generation, attempt}], refused [row]
inline constexpr std::string_view kClaimWrite = "fan.claim.write";
// target, deliveries [{row, delivery, attempt}]
inline constexpr std::string_view kDeliver = "fan.deliver";
// target, failed (the batch failed: deliver threw, a settlement action failed, or the deadline
// passed), threw (deliver itself threw), timedOut
inline constexpr std::string_view kDelivered = "fan.delivered";
// row, generation, attempt, how ("ack" | "ackOnReturn"), matched
inline constexpr std::string_view kAckWrite = "fan.ack.write";
// row, generation, attempt, next, error, matched
inline constexpr std::string_view kRetryWrite = "fan.retry.write";
// row, generation, attempt, reason, at, error ({name, message} or null), matched
inline constexpr std::string_view kDeadIntentWrite = "fan.dead.intent.write";
// row, delivery, failed
inline constexpr std::string_view kDlq = "fan.dlq";
// row, generation, attempt, why ("dlq" | "drop"), reason, matched
inline constexpr std::string_view kRemoveWrite = "fan.remove.write";
// row, delivery, outcome, refused (the outcome already chosen, "stale", or "range")
inline constexpr std::string_view kSettle = "fan.settle";
// row, generation, step, hit, stored
inline constexpr std::string_view kMemo = "fan.memo";
// pendingDeliveries
inline constexpr std::string_view kLoad = "fan.load";

// ---- Reported by an application of the fanout (workloads/mailbox.h) ----

// The consumer received a delivery (once per delivery and attempt): mailbox, target, delivery, id,
// attempt
inline constexpr std::string_view kAppConsume = "app.fan.consume";
// A settlement call of the application and how it ended: mailbox, delivery, action ("ack" |
// "retry" | "deadLetter"), delayMs?, second (a repeated call), sinceHandedOut (ms from the batch
// being handed out to the call, on the caller's clock),
// result ("ok" or the error's name)
inline constexpr std::string_view kAppSettle = "app.fan.settle";
// A create-only write to a cold bucket: mailbox, bucket, key, delivery, target, created, attempts,
// reason (DLQ only)
inline constexpr std::string_view kAppStored = "app.fan.stored";
// A DLQ entry redriven: mailbox, key, delivery, id, target, success, removed
inline constexpr std::string_view kAppRedrive = "app.fan.redrive";
// The targets an incarnation of the application was built with: mailbox, targets
inline constexpr std::string_view kAppTargets = "app.fan.targets";
// A load snapshot the application answered with: mailbox, pendingDeliveries
inline constexpr std::string_view kAppLoad = "app.fan.load";
// A memoized step's function ran: mailbox, delivery, attempt, step, value
inline constexpr std::string_view kAppMemoCompute = "app.fan.memo.compute";
// memoize returned: mailbox, delivery, attempt, step, value
inline constexpr std::string_view kAppMemo = "app.fan.memo";

}  // namespace durasim::fanout_events
