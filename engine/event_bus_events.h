// The trace vocabulary of the event bus (docs/event-bus-trace-events.md): the name of every probe
// the bus emits, with the fields it carries besides "ev", "t", "object" and "incarnation". Probes
// named "*.write" are emitted inside the transaction (atomically block) they describe and take
// effect only if it commits; the others after the decision they report. Every probe carries
// `topic` (and `consumer` where one applies) unescaped. `pass` numbers the polls of one
// incarnation (1, 2, ...), so the writes of concurrent polls can be told apart. The engine, the
// checkers and the workloads use these names; nothing else in them spells one.
#pragma once

#include <string_view>

namespace durasim::event_bus_events {

// Every probe name starts with this prefix.
inline constexpr std::string_view kPrefix = "evt.";

// topic, consumer, pollMs, maxPollMs, backoff, maxAttempts (a number, or "inf", "-Infinity", "NaN"),
// retryDelay ("default" | "function" | the number), handlerTimeoutMs (or null), variants (the
// events.* flags on): at createConsumer
inline constexpr std::string_view kOptions = "evt.options";
// op ("emit" | "createConsumer" | "listDeadEvents" | "retryDeadEvent"), error (class name), message,
// topic: a call refused for bad input, nothing written
inline constexpr std::string_view kRejected = "evt.rejected";

// ---- emit (events.md 5) ----
// topic, id, seq, inserted (false: the id was stored already, nothing written), payload (serialized;
// the stored one when not inserted: null), ts (of the new record, or null), depth (the count made,
// or null without maxDepth), maxDepth (or null)
inline constexpr std::string_view kEmitWrite = "evt.emit.write";
// topic, id, depth, maxDepth: EventDepthExceededError, nothing written
inline constexpr std::string_view kEmitRefused = "evt.emit.refused";
// topic, id, seq, inserted: emit returned (its record is durable)
inline constexpr std::string_view kEmit = "evt.emit";

// ---- poll (events.md 6.4-6.6) ----
// topic, consumer, pass, at, frontier (the cursor as read when phase B starts is reported on
// evt.poll.end; here the pass's start)
inline constexpr std::string_view kPollBegin = "evt.poll.begin";
// topic, consumer, pass, phase ("pending" | "log"), id, seq, decision ("waiting" | "acked" |
// "quarantined" | "gone" | "seen" | "due"), nextAt (the attempt record's, when read): one per
// event a pass examines
inline constexpr std::string_view kExamine = "evt.examine";
// topic, consumer, pass, id, seq, op ("add" | "erase"), reason ("waiting" | "acked" |
// "quarantined" | "gone"), changed (the index changed): a pending-index write of its own
inline constexpr std::string_view kPendingWrite = "evt.pending.write";
// topic, consumer, pass, id, seq, attempt (the attempt record's n + 1), fromIndex, stamp (of the
// dead record read before the call): the handler is called
inline constexpr std::string_view kInvoke = "evt.invoke";
// topic, consumer, pass, id, ok, timedOut, error (text, or null): the handler's call ended
inline constexpr std::string_view kHandled = "evt.handled";
// topic, consumer, pass, id, seq, won (this call created the marker), pendingErased
inline constexpr std::string_view kAckWrite = "evt.ack.write";
// topic, consumer, pass, id, seq, outcome ("releasedDuringAttempt" | "alreadyDelivered" |
// "attemptRaced" | "quarantineRaced" | "quarantined" | "retrying"), n, delayMs, expected (the raw
// attempt value read before the call, or null), attempts (the record written, or null), error,
// pending ("add" | "erase" | null): the failure record of one attempt (events.md 6.6); under
// events.failure_two_step one per step, with `step` ("attempts" | "dead")
inline constexpr std::string_view kFailureWrite = "evt.failure.write";
// topic, consumer, pass, id, seq, dead (the record written), replaced (a compare-and-swap over an
// earlier record, else an insert): in the failure transaction that quarantines
inline constexpr std::string_view kQuarantineWrite = "evt.quarantine.write";
// topic, consumer, pass, from, to, moved, rewind (the variant's rescan rewind)
inline constexpr std::string_view kCursorWrite = "evt.cursor.write";
// topic, consumer, value, by ("poll" | "release"): the rescan flag (events.full_rescan_when_frozen)
inline constexpr std::string_view kRescanWrite = "evt.rescan.write";
// topic, consumer, pass, delivered, failed (error text, or null), pendingExamined (W), newRecords
// (N), frontier (the cursor read in phase B, or null), reads {lists, gets, counts, writes, atomics}
// (the store's counters over the pass, concurrent work of the object included)
inline constexpr std::string_view kPollEnd = "evt.poll.end";

// ---- dead letters (events.md 9) ----
// topic, consumer, id, try (1-based), step ("all", or under events.release_two_step "attempts" |
// "dead" | "pending" | "rescan"), outcome ("released" | "lost" | "alreadyDelivered" | "written"),
// dead (the record written, or null), attempts (the reset written, or null), seq
inline constexpr std::string_view kReleaseWrite = "evt.release.write";
// topic, consumer, id, outcome ("released" | "notQuarantined" | "alreadyDelivered" | "contended"),
// tries: retryDeadEvent / releaseDeadEvent returned
inline constexpr std::string_view kRelease = "evt.release";
// topic, consumer, events [{id, seq, status, attempts, releases}], reads {lists, gets}
inline constexpr std::string_view kList = "evt.list";

// ---- the poll loop (events.md 7) ----
// topic, consumer, generation
inline constexpr std::string_view kLoopStart = "evt.loop.start";
inline constexpr std::string_view kLoopStop = "evt.loop.stop";
// topic, consumer, generation, gap (the sleep that preceded it)
inline constexpr std::string_view kTickBegin = "evt.tick.begin";
// topic, consumer, generation, delivered, failed (error text, or null), next (the next gap)
inline constexpr std::string_view kTickEnd = "evt.tick.end";
// topic, consumer, generation: a loop woke while another tick of the consumer was in progress
inline constexpr std::string_view kTickSkipped = "evt.tick.skipped";
// topic, consumer, generation: a loop ended (stopped, superseded)
inline constexpr std::string_view kLoopEnd = "evt.loop.end";

// ---- Reported by an application of the bus (workloads/bus_app.h) ----

// A handler of the application was called and is about to return or throw: topic, consumer, id,
// payload (as the handler received it), failed (it throws), error (its text, or null)
inline constexpr std::string_view kAppHandle = "app.evt.handle";
// The application's emit returned: topic, id (the id it returned, or the id it asked for), ok,
// error (the error's name, or null), payload (serialized as given)
inline constexpr std::string_view kAppEmitted = "app.evt.emitted";

}  // namespace durasim::event_bus_events
