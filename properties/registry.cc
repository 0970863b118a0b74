// The invariant catalogue; see registry.h. Titles and check kinds follow the spec files exactly
// (tests/registry_test.cc compares them); statements restate each predicate with all its numbers
// and conditions.
#include "properties/registry.h"

#include <algorithm>

namespace durasim::properties {
namespace {

std::vector<Invariant> build_registry() {
  return {
      // SCH — scheduler (invariants-engine.md)
      {"SCH-01", "SCH", "Alarm iff pending (quiescent)", "S",
       "At quiescence the physical alarm is set exactly when at least one registered participant has a pending "
       "row (a row counted by nextPendingAt)."},
      {"SCH-02", "SCH", "Alarm window", "H",
       "After a reconcile commits at time t with minimum pending time next, the alarm lies in "
       "[next, max(next, t + alarmMinDelayMs)]."},
      {"SCH-03", "SCH", "Minimum delay of written alarms", "H",
       "Any alarm value that reconcile or handoff writes at time t is at least t + alarmMinDelayMs."},
      {"SCH-04", "SCH", "No push-later", "H",
       "Reconcile does not write the alarm when its current value already lies in [next, target]."},
      {"SCH-05", "SCH", "Atomic alarm", "H",
       "A transaction that rolls back leaves the physical alarm and the early timer exactly as they were."},
      {"SCH-06", "SCH", "Early timer", "H",
       "An early timer is armed only for the next of the last committed reconcile, and only when "
       "next < commitTime + alarmMinDelayMs; it never fires before next."},
      {"SCH-07", "SCH", "Permit conservation", "H",
       "At all times free + held == alarmConcurrency, and running named-alarm attempts, fanout target passes and "
       "outbox channel passes together never exceed alarmConcurrency; waiters are served first in, first out, and "
       "releasing a permit again has no effect."},
      {"SCH-08", "SCH", "Permit held through timeout", "H",
       "A named-alarm attempt keeps its permit and its per-name lock until its handler has really settled, even "
       "after the attempt's deadline has passed."},
      {"SCH-09", "SCH", "Unique participants", "H",
       "A scheduler has at most one participant per kind and at most one outbox per channel; attaching a duplicate "
       "throws and changes nothing."},
      {"SCH-10", "SCH", "Handoff", "H",
       "When a run lasts longer than alarmHandoffMs, alarm() returns with an alarm set no later than "
       "now + alarmMinDelayMs (an earlier alarm already set is kept), and later alarms in the same incarnation join "
       "the execution still running instead of invoking it again."},
      {"SCH-11", "SCH", "Schema validity", "S",
       "Capability tables exist for exactly the capabilities whose migrations are applied, and the migration "
       "history table exists if and only if it holds rows."},
      {"SCH-12", "SCH", "Migration idempotence and atomicity", "H",
       "A second migrate(latest) applies nothing; a failing step leaves schema and history unchanged; migrating to "
       "none and then to latest restores the full schema; and more than 2 unknown future migrations make it throw "
       "without any change."},
      {"SCH-13", "SCH", "Retry time", "H",
       "A non-terminal failure at time t sets next_attempt_at = t + jsRound(delay(attempt)) >= t, and under the "
       "default policy the delay lies in [jsRound(d/2), d] with d = min(1000 * 2^(attempt-1), 300000). An invalid "
       "policy output makes the failure terminal for alarms and fanout, and is replaced by the default policy for "
       "the outbox."},
      {"SCH-14", "SCH", "No stranded work (liveness)", "L",
       "After healing, every pending row of a registered participant with next_attempt_at <= now is taken up by a "
       "pass within alarmMinDelayMs plus the platform's alarm lateness."},

      // ALM — named alarms
      {"ALM-01", "ALM", "Attempt bound", "H",
       "For each (name, generation) the handler is invoked at most maxAttempts times, however many crashes "
       "occur."},
      {"ALM-02", "ALM", "Claim before invoke", "H+S",
       "Each invocation follows a committed claim that set attempt = k, and the handler sees attempt == k, "
       "isRetry == (k > 1) and retryCount == k - 1; within a generation attempt never decreases."},
      {"ALM-03", "ALM", "Fenced writes", "H",
       "A success delete, failure settle or exhaustion write that carries a stale generation or attempt changes "
       "nothing."},
      {"ALM-04", "ALM", "Failed is absorbing", "H",
       "A failed row never returns to pending within its generation; only schedule, which starts a new generation, "
       "revives the name."},
      {"ALM-05", "ALM", "Field consistency", "S",
       "A failed row has last_error_name set; a pending row with attempt == 0 has both error columns NULL; and "
       "attempt <= maxAttempts always."},
      {"ALM-06", "ALM", "Terminal triggers", "H",
       "A row becomes failed if and only if the failure was non-retryable, or attempt == maxAttempts, or it timed "
       "out without retryTimeouts, or the retry policy was invalid (DurableRetryPolicyError), or the claim was "
       "refused for exhaustion (DurableAttemptsExhaustedError)."},
      {"ALM-07", "ALM", "Per-name exclusion", "H",
       "Within one incarnation two handlers of the same name never run at the same time, whatever their "
       "generations."},
      {"ALM-08", "ALM", "Replacement", "S+H",
       "Once schedule(name, t) commits, name has exactly one row, of a new generation, with attempt 0, status "
       "'pending' and scheduled_at = next_attempt_at = t; an older generation still running can neither delete nor "
       "overwrite it, and the replacement runs only after the old handler settles."},
      {"ALM-09", "ALM", "Idempotency key", "H",
       "idempotencyKey is the same for every attempt of one occurrence, across evictions too, and differs from one "
       "occurrence to the next."},
      {"ALM-10", "ALM", "Purge cutoff", "S+H",
       "purgeBefore(t) deletes exactly the rows with created_at < t and returns their count, keeps rows with "
       "created_at == t, and leaves the alarm reconciled."},
      {"ALM-11", "ALM", "Cancel", "H",
       "Once cancel(name) commits, no row of that name exists and no new attempt of the cancelled generation "
       "starts; a handler already running may finish, but its outcome write matches no row."},
      {"ALM-12", "ALM", "Not before due", "H",
       "No attempt starts before the row's next_attempt_at (the scheduled time, for the first attempt)."},
      {"ALM-13", "ALM", "Durable schedule", "H+S",
       "After schedule returns, the occurrence survives every crash until it succeeds, fails, or is replaced, "
       "cancelled or purged."},
      {"ALM-14", "ALM", "Liveness", "L",
       "After healing, each pending occurrence whose handler eventually succeeds is deleted and every other one "
       "becomes failed, within maxAttempts * (max backoff + attemptTimeoutMs) + alarmMinDelayMs."},

      // LOG — retained log
      {"LOG-01", "LOG", "Offset allocation", "S+H",
       "New records get contiguous offsets starting at the previous next_offset, next_offset grows by exactly the "
       "number of distinct new keys, and no offset is ever reused, even after trimming."},
      {"LOG-02", "LOG", "Dedup returns the original offset", "H",
       "Appending a key that is still hot returns its original offset and consumes none; duplicates within one "
       "batch share an offset and the last duplicate's body is stored; results come in input order; and a key "
       "whose record was trimmed gets a new record."},
      {"LOG-03", "LOG", "Append atomicity", "H+S",
       "A batch's records commit all or none; success = false leaves bounds() and every table unchanged; and an "
       "append that threw was applied either fully or not at all."},
      {"LOG-04", "LOG", "Bounds ordering", "S",
       "oldestOffset <= hotOffset <= nextOffset, the hot offsets are exactly [hotOffset, nextOffset), and an empty "
       "log has all three equal."},
      {"LOG-05", "LOG", "Byte accounting", "S",
       "total_bytes equals the sum of the bytes of the hot records and is >= 0, and each record's bytes equals "
       "payload.size()."},
      {"LOG-06", "LOG", "Cursor monotonic", "H",
       "A cursor never moves backwards; a commit that arrives late or twice is a no-op."},
      {"LOG-07", "LOG", "Read shape", "H",
       "A page holds strictly increasing offsets without gaps, starting at the first available offset >= from, "
       "and at most min(limit, maxBatchSize) records; its nextOffset is last + 1, or max(from, next) when empty, "
       "and lag = max(0, next - nextOffset)."},
      {"LOG-08", "LOG", "Loud truncation", "H",
       "Reading below oldestOffset, or a flushed offset that cannot be rehydrated, throws LogTruncatedError with "
       "correct fields; a page never skips an offset silently."},
      {"LOG-09", "LOG", "Record immutability", "H",
       "The key and body at offset o are the same whether read hot, rehydrated, or leased."},
      {"LOG-10", "LOG", "Prefix retention", "S+H",
       "Trim removes only a prefix of the hot range; with cold, each removed offset lies in a segment whose index "
       "row committed in the same transaction as the deletion; and a failed cold.write removes nothing."},
      {"LOG-11", "LOG", "Stable flush range", "H",
       "When nothing fails each flushed offset is handed to cold.write once; after a crash or failure, the "
       "re-flush for a given first offset has exactly the same range and records."},
      {"LOG-12", "LOG", "Retention met", "S",
       "Once trim() returns with no concurrent appends: count <= maxRecords, total_bytes <= maxBytes, and no hot "
       "record has appended_at < now - maxAgeMs."},
      {"LOG-13", "LOG", "Backlog", "S",
       "load().outbound.pendingDeliveries == max(0, next - min(cursors)), or 0 when there is no cursor."},
      {"LOG-14", "LOG", "Rejections are total", "H",
       "Every definite rejection of append (empty, oversize, empty key, unserializable body) returns "
       "success = false and never throws."},
      {"LOG-15", "LOG", "Segment index shape", "S",
       "Segments never overlap and lie entirely below hotOffset; while cold stays configured they are also "
       "contiguous with each other and with hotOffset (forgetColdBefore removes only a prefix)."},
      {"LOG-16", "LOG", "Readability", "S",
       "With a cold store that keeps what it is given, every offset in [oldestOffset, nextOffset) is readable."},
      {"LOG-17", "LOG", "No alarm", "H",
       "No log operation writes the physical alarm or arms the early timer."},
      {"LOG-18", "LOG", "Flush completes (liveness)", "L",
       "Once the cold store heals, the next trim() finishes any recorded flush intent and leaves no "
       "durability_log_flush row."},

      // LSE — log leases
      {"LSE-01", "LSE", "No overlap", "S+H",
       "For one consumer, the ranges of its held leases (pending, or active and unexpired) never intersect, for "
       "concurrent as well as sequential calls."},
      {"LSE-02", "LSE", "Allocation monotonic", "H",
       "A fresh lease starts at max(oldest, cursor ?? 0, allocation ?? 0) and sets allocation = last + 1; "
       "allocations never decrease."},
      {"LSE-03", "LSE", "Batch-id fencing", "H",
       "Batch ids are unique; after a reclaim the old id no longer exists, so ack/nack with it throws "
       "LogLeaseError and changes nothing; the reclaimed lease has attempt = previous + 1."},
      {"LSE-04", "LSE", "Settle once", "H",
       "Only active leases can be settled; a second ack or nack throws LogLeaseError."},
      {"LSE-05", "LSE", "Contiguous commit", "H+S",
       "A settle moves the cursor only across an unbroken run of acked/skipped ranges starting at the cursor, "
       "never past an active or pending range, and deletes the settled rows below the cursor in the same "
       "transaction."},
      {"LSE-06", "LSE", "Parallelism bound", "H",
       "A fresh lease is granted only while the consumer holds fewer than maxParallelism held leases; reclaims are "
       "exempt."},
      {"LSE-07", "LSE", "Poison needs a handler", "H",
       "With maxAttempts set but no onPoison, a failing range is redelivered indefinitely and the cursor never "
       "passes it."},
      {"LSE-08", "LSE", "Poison skip is durable first", "H",
       "With both maxAttempts and onPoison set, a range reclaimed with attempt > maxAttempts is committed as "
       "skipped before onPoison runs, is never leased again, and is passed by the cursor as soon as the lower "
       "ranges are settled."},
      {"LSE-09", "LSE", "Consumer independence", "H",
       "One consumer's operations leave the leases, allocation and cursor of every other consumer unaffected."},
      {"LSE-10", "LSE", "Lease content", "H",
       "A lease's records are exactly the offsets firstOffset..lastOffset, rehydrated when they were flushed after "
       "leasing."},
      {"LSE-11", "LSE", "Consumer-checked settlement", "H",
       "ack/nack naming a consumer other than the lease's own throws LogLeaseError and changes nothing."},
      {"LSE-12", "LSE", "Coverage", "S",
       "For each consumer, every offset in [0, allocation) is either below the cursor or inside some lease row, "
       "gap rows included."},
      {"LSE-13", "LSE", "Truncation is loud once", "H",
       "When a lease's range has a trimmed prefix, lease() throws LogTruncatedError once and exactly the trimmed "
       "offsets move into a skipped row (the whole range becomes skipped if all were trimmed); the next call then "
       "proceeds without throwing for that trimming."},
      {"LSE-14", "LSE", "Skips commit promptly", "S",
       "After any skip (poison, full truncation, gap row) commits, the cursor already covers the skipped range if "
       "every lower range was settled; no later ack is needed."},
      {"LSE-15", "LSE", "Liveness", "L",
       "After healing, within leaseMs * ranges, every leased range is acked, skipped, or redelivered (reclaimed "
       "with a new batch id after expiry or nack), and a consumer that keeps leasing and acking reaches "
       "cursor == nextOffset."},
      {"LSE-16", "LSE", "Opt-in", "S+H",
       "Without the leases option there are no lease tables and every lease method throws TypeError; read and "
       "commit behave identically with or without leases."},

      // FAN — fanout
      {"FAN-01", "FAN", "Enqueue atomicity", "H+S",
       "success = true means every message and every (message, target) delivery committed; success = false means "
       "storage is unchanged; a throw means one of the two, without knowing which."},
      {"FAN-02", "FAN", "Manifest accounting", "S",
       "Each manifest's remaining equals the number of delivery rows with its key and is > 0, and no delivery row "
       "exists without a manifest of the same generation."},
      {"FAN-03", "FAN", "Dedup returns the original work", "H",
       "While a manifest exists, enqueuing the same key again with the same id, payload and targets creates and "
       "redelivers nothing; different work under that key rejects the whole batch."},
      {"FAN-04", "FAN", "Frozen recipients", "S",
       "A message's delivery rows are exactly its sorted target set at enqueue; targets configured later never "
       "receive older messages."},
      {"FAN-05", "FAN", "Sequence monotonic", "H",
       "seq strictly increases in manifest commit order and is never reused, even after the queue empties."},
      {"FAN-06", "FAN", "Claim before delivery", "H",
       "Every consumer call or storage write for a row follows a committed claim that set attempt = k and "
       "next_attempt_at = claimAt + attemptTimeoutMs, and the message has attempt == k <= maxAttempts."},
      {"FAN-07", "FAN", "Attempt bound", "H",
       "Across crashes, a delivery reaches its consumer or storage target at most maxAttempts times."},
      {"FAN-08", "FAN", "Settled is final", "H",
       "Once a delivery row is removed (ack, DLQ success, drop), that (registration, target) pair is never "
       "delivered again."},
      {"FAN-09", "FAN", "Single settlement", "H",
       "Per message capability at most one of ack, retry and deadLetter takes effect; later or late calls fail "
       "with FanoutSettlementError, and a stale ack from an older attempt changes nothing."},
      {"FAN-10", "FAN", "Dead-letter intent is irreversible", "S+H",
       "phase only moves from delivery to dead_letter, and a dead_letter row is never handed to a consumer or "
       "storage target again."},
      {"FAN-11", "FAN", "DLQ write before removal", "H",
       "With a DLQ, a row is removed only after dlq() succeeded for it; while the DLQ fails, the row stays with "
       "next_attempt_at about now + 60000."},
      {"FAN-12", "FAN", "No DLQ means drop", "S+H",
       "Without a DLQ, terminal rows are removed and a terminal event is emitted, best effort."},
      {"FAN-13", "FAN", "Pending count exact", "S",
       "At quiescence load().outbound.pendingDeliveries equals COUNT(*) of the delivery rows."},
      {"FAN-14", "FAN", "Due ordering", "H",
       "A pass takes at most maxBatchSize due rows per target: first deliveries (attempt 0) in seq order, then "
       "retries in seq order."},
      {"FAN-15", "FAN", "Single pass per target", "H",
       "Within an incarnation, two passes of the same target never overlap."},
      {"FAN-16", "FAN", "Target isolation", "H",
       "A slow or failing target delays another target's deliveries by no more than permit contention."},
      {"FAN-17", "FAN", "Batch delay", "S+H",
       "The first due time is ceil(created_at / b) * b, which lies in [created_at, created_at + b); no eager pass "
       "runs when b > 0, and retries keep their policy delay."},
      {"FAN-18", "FAN", "Removed target", "S+H",
       "Rows of a target no longer configured keep their attempt and errors, are postponed by 60000 ms on each "
       "pass, and are never delivered or dropped."},
      {"FAN-19", "FAN", "Stable delivery identity", "H",
       "deliveryId == StoredMessage.id == json([generation, target]) for every attempt, storage write and DLQ "
       "write of one delivery."},
      {"FAN-20", "FAN", "ackOnReturn", "H",
       "When deliver returns normally, every message still without an outcome is acknowledged in one transaction; "
       "after a throw or timeout nothing is acknowledged automatically; explicit retry/deadLetter are respected."},
      {"FAN-21", "FAN", "Timeout bound", "H",
       "A batch is failed at attemptTimeoutMs: its unsettled messages are retried with a FanoutTimeoutError and "
       "settlement calls arriving later are rejected."},
      {"FAN-22", "FAN", "Exhaustion", "H",
       "A row with attempt >= maxAttempts is never claimed again; it is dead-lettered (or dropped) with reason "
       "exhausted and StoredMessage.attempts == maxAttempts."},
      {"FAN-23", "FAN", "Whole-batch claim", "H",
       "A pass claims all its claim candidates in one transaction: once it commits every candidate whose "
       "condition held is claimed, after a definite failure none is, and after an uncertain failure all or none "
       "are (runtime.md §4.5)."},
      {"FAN-24", "FAN", "Memo lifetime and reuse", "S+H",
       "No memo row exists without its delivery row (same key, target, generation); once a step's memo commits, "
       "fn is never invoked again for that step of that delivery and every later memoize returns the stored "
       "value."},
      {"FAN-25", "FAN", "Phase-gated acknowledgement", "H",
       "Neither a consumer ack nor ackOnReturn ever removes a row in the dead_letter phase."},
      {"FAN-26", "FAN", "Liveness", "L",
       "After healing, every accepted delivery to a configured target is eventually acknowledged, written to the "
       "DLQ and removed, or dropped (no DLQ), within roughly maxAttempts * (max backoff + attemptTimeoutMs) plus "
       "60000 ms per DLQ retry."},

      // OBX — outbox
      {"OBX-01", "OBX", "Versions increase", "H",
       "Versions returned by committed stages strictly increase in commit order, across all channels and across "
       "deletes of acknowledged rows."},
      {"OBX-02", "OBX", "Counter dominance", "S",
       "durability_outbox_seq.next_version is greater than every row's version and every version a committed "
       "stage returned, and row versions are unique."},
      {"OBX-03", "OBX", "Newest row", "S",
       "If a row for (channel, key) exists, it holds exactly the version, value and generation of that key's last "
       "committed stage."},
      {"OBX-04", "OBX", "Stage rolls back with the application", "H+S",
       "An aborted application transaction leaves the outbox rows, the version counter, the alarm and the early "
       "timer unchanged."},
      {"OBX-05", "OBX", "Acknowledgement never deletes a newer stage", "H",
       "A row is deleted only by a settlement whose entry generation equals the row's, and a publish call that "
       "returned never deletes a staged version newer than all the versions it carried."},
      {"OBX-06", "OBX", "Only committed, claimed versions are published", "H",
       "Each entry handed to publish matches a committed claim with the same channel, key, version, value and "
       "claimed attempt."},
      {"OBX-07", "OBX", "Batch shape", "H",
       "A publish call carries between 1 and maxBatchSize entries, all of one channel, with each key at most "
       "once."},
      {"OBX-08", "OBX", "Claim deadline", "S+H",
       "A claimed row has next_attempt_at = claimAt + attemptTimeoutMs and is not claimed again before then "
       "unless it is restaged."},
      {"OBX-09", "OBX", "No give-up", "H",
       "Rows disappear only through acknowledgement or migrate(none): there is no terminal state, no dead letter "
       "and no attempt limit."},
      {"OBX-10", "OBX", "Retry scheduling", "H",
       "After a failed publish or a retry mark at time t, next_attempt_at = t + delay, where delay is exactly "
       "delayMs for an explicit mark and otherwise comes from the policy (default bounds as in SCH-13, always "
       "below 300000); an invalid policy falls back to the default."},
      {"OBX-11", "OBX", "Batch delay", "S",
       "A stage's first due time is ceil(t / b) * b, so a stage exactly on a boundary is due at once."},
      {"OBX-12", "OBX", "Channel isolation", "H",
       "The same key in two channels is two independent rows, one channel's publish never receives another "
       "channel's entries, and at most one pass per channel runs at a time in an incarnation."},
      {"OBX-13", "OBX", "Unattached channels are retained", "S+H",
       "Rows of a channel with no attached outbox are never deleted or published; each pass postpones the due "
       "ones by 60000 ms with attempt unchanged."},
      {"OBX-14", "OBX", "Sink never regresses", "H",
       "For every key the sink's version never decreases and the sink only ever holds committed (version, value) "
       "pairs; it is checked against the configured sink, so a max-keeping sink must never violate it and a "
       "last-writer-wins sink (sink.last_writer_wins) must be caught violating it (and OBX-16) in some seeds."},
      {"OBX-15", "OBX", "Superseded versions may be skipped", "H",
       "Only publication of the newest version is required; any subset of intermediate versions may be missing "
       "from the sink's history, and no other property may demand them."},
      {"OBX-16", "OBX", "Convergence (liveness)", "L",
       "After healing, with the configured sink accepting, for every (channel, key) of an attached channel the "
       "sink holds the last committed stage's version and value and the outbox has no row for it, within "
       "300000 ms + attemptTimeoutMs + alarmMinDelayMs per backlog batch."},
      {"OBX-17", "OBX", "Publish outside transactions", "H",
       "No storage transaction is open while publish runs, and the claim commit comes before the call."},
      {"OBX-18", "OBX", "Late marks rejected", "H",
       "entry.retry() after its batch has closed throws OutboxSettlementError and changes nothing."},
      {"OBX-19", "OBX", "Schema removal", "S",
       "DurabilityOutbox::migrate(none) removes both outbox tables and their history rows, and nothing else."},
      {"OBX-20", "OBX", "Reconciled writes", "S",
       "Every stage, claim, settlement and postponement commit leaves the alarm satisfying SCH-02 with respect to "
       "the outbox rows."},

      // RTE — routing and load
      {"RTE-01", "RTE", "One invocation per push", "H",
       "Each push calls invoke exactly once, never retrying or re-routing."},
      {"RTE-02", "RTE", "Rejections pass through", "H",
       "A success = false response is returned unchanged and its load is recorded."},
      {"RTE-03", "RTE", "Uncertainty propagates", "H",
       "A transport exception or a RoutingTimeoutError propagates without recording an observation, and the "
       "invoke that timed out is not cancelled."},
      {"RTE-04", "RTE", "Bounded observations", "S",
       "At most 1024 shards are observed, none older than 60000 ms when read, and the maps returned are "
       "copies."},
      {"RTE-05", "RTE", "Fresh observations only", "H",
       "A shard's stored load is replaced only by a load whose observedAt is >= the stored one's."},
      {"RTE-06", "RTE", "Width dynamics", "H",
       "width >= 1; it grows by at most 1 per 1000 ms and shrinks by at most 1 per 60000 ms, only under the "
       "stated backlog and idleness conditions, and stale loads are ignored."},
      {"RTE-07", "RTE", "Selection rule", "H",
       "Default selection chooses among shard-0 ... shard-(width-1), preferring an unobserved candidate, then fewer "
       "pendingDeliveries, then lower pressure, with ties going to the first candidate."},
      {"RTE-08", "RTE", "RoutingLoad counters", "S+H",
       "inFlight >= 0; finish is idempotent; completed counts only samples of the last 60 s; and "
       "averageProcessingMs is absent if and only if completed == 0."},
      {"RTE-09", "RTE", "Envelope shape", "H",
       "Exactly one of value and error is present, as success says; load is always present and its "
       "pendingDeliveries equals the durable count at snapshot time."},
      {"RTE-10", "RTE", "Sharding validated before sending", "H",
       "An empty shard raises RoutingError and invoke is not called."},
      {"RTE-11", "RTE", "Timeout wrapper", "H",
       "With withTimeout(ms) and no reply, push throws RoutingTimeoutError no earlier than ms after invoke "
       "started, and a reply arriving later is discarded."},

      // EVT — event bus (invariants-events-runtime.md)
      {"EVT-01", "EVT", "Idempotent emit", "S+H",
       "For every (T, id) the topic log holds at most one record, with the payload of the first emit of that id "
       "whose transaction committed; every emit call for that id that returned, returned id."},
      {"EVT-02", "EVT", "A returned emit is durable", "H",
       "Once emit has returned an id (or an RPC carrying that result replied successfully), the record is present "
       "in every later state, across every reset and durability decision."},
      {"EVT-03", "EVT", "Depth bound is atomic", "H",
       "An emit with maxDepth = m that inserted a new record left its topic with at most m records; one that threw "
       "EventDepthExceededError changed nothing and reported depth == m; emitting an already stored id never "
       "throws it."},
      {"EVT-04", "EVT", "Topic isolation", "H",
       "The handler of consumer (T, C) is only ever called with events appended to topic T, with "
       "meta.topic == T."},
      {"EVT-05", "EVT", "Keys are injective", "M+S",
       "enc is total and injective with dec(enc(s)) == s; distinct (T, C, I) give distinct ack, attempt and dead "
       "keys, distinct (T, C) distinct cursor keys and pending/dead-letter-index namespaces, distinct T distinct "
       "log namespaces; and every bus key in the store decodes to exactly one component tuple."},
      {"EVT-06", "EVT", "Consumer isolation", "H+M",
       "Polls, failures, quarantines and releases of any other consumer (the same topic under another name, or the "
       "same name on another topic) never write a key or index entry of c and never change what c's handler is "
       "called with or what c's polls return."},
      {"EVT-07", "EVT", "Exact counting", "H+S",
       "For every c the number of ack markers equals the number of putIfAbsent(ack) calls that returned true, with "
       "at most one per event; the values returned by poll() sum to at most that number, and exactly that number "
       "when no poll was cut short by a reset or a store exception."},
      {"EVT-08", "EVT", "Ack only after success", "H",
       "If the ack marker of (c, e) exists, a handler call for (c, e) returned normally (not timed out) before the "
       "ack write was issued, in the same incarnation and the same poll."},
      {"EVT-09", "EVT", "Quarantine is not delivery", "H",
       "Only a successful handler call writes an ack marker, and quarantining never changes delivered."},
      {"EVT-10", "EVT", "Eventual delivery", "L",
       "After heal, with healthy handlers, polling consumers and the harness releasing every quarantined event "
       "once, every event of every topic ends acked for every consumer."},
      {"EVT-11", "EVT", "Whole log in one healthy pass", "H",
       "With no faults and handlers that never fail, one poll() delivers every event present when it started, "
       "each exactly once, and returns how many it delivered."},
      {"EVT-12", "EVT", "No head-of-line blocking", "H",
       "Within a pass, each event that is due, unacked and not quarantined when examined is handed to the handler "
       "exactly once in that pass, whatever happens to other events."},
      {"EVT-13", "EVT", "No redelivery after ack", "H",
       "A poll that starts after the ack marker of (c, e) is in the state it reads never calls the handler for "
       "(c, e)."},
      {"EVT-14", "EVT", "Nothing is skipped", "S+H",
       "Every event appended to T before a pass of c starts is acked, quarantined or in pending(c) when that pass "
       "completes, for any ids, any number of emits in one millisecond, the clock at 0, and after records were "
       "erased."},
      {"EVT-15", "EVT", "Bookmark safety", "S",
       "In every state and for every c, each event with seq <= F(c) is acked, quarantined and not released, or in "
       "pending(c); so the derived bookmark never passes an event that is retryable, waiting, or released and "
       "undelivered."},
      {"EVT-16", "EVT", "Frontier monotone", "H+S",
       "F(c) never decreases and never exceeds the largest sequence number the store has issued."},
      {"EVT-17", "EVT", "Poll cost independent of log length", "H",
       "A completed pass with no concurrent writer, starting with W pending entries and finding N new records, "
       "makes at most 2 + floor(W/50) + floor(N/50) lists and 1 + ceil(N/50) + 6(W + N) gets; an idle poll of a "
       "consumer frozen behind one waiting event costs 2 lists and 2 gets at 5,000 and at 50,000 events."},
      {"EVT-18", "EVT", "Quarantine after exactly `maxAttempts`", "H",
       "With one poller per c and no release in between, after the k-th counted failure of a streak att.n == k, "
       "no unreleased dead record exists while k < maxAttempts, and at k == maxAttempts the dead record exists "
       "with attempts == maxAttempts. With several pollers, quarantine never comes before maxAttempts counted "
       "failures; without resets, the handler was called exactly maxAttempts times in the streak."},
      {"EVT-19", "EVT", "Attempt counter is linear", "H",
       "Every committed write of an attempt record is either a release reset (n = 0, gen = the new stamp) or sets "
       "n to the previous value plus one (absent counting as 0); no other write replaces a record with an equal "
       "or lower n."},
      {"EVT-20", "EVT", "Quarantined means silent", "H",
       "Between the quarantine of (c, e) and a release of it, no handler call for (c, e) starts, whatever the "
       "clock does."},
      {"EVT-21", "EVT", "Quarantine unblocks", "S",
       "The transaction that quarantines (c, e) also removes it from pending(c), after which e no longer holds "
       "back the derived bookmark."},
      {"EVT-22", "EVT", "Retries are never early", "H",
       "No handler call for (c, e) starts while now < att.nextAt unless a release intervened, and for consecutive "
       "counted failures k and k+1 of a streak the call producing k+1 started at or after the time of failure k "
       "plus delay(k). Default delays are min(60,000 * 2^(k-1), 3,600,000), so with polls at each nextAt the 1st "
       "and 8th counted failures are 7,380,000 ms apart."},
      {"EVT-23", "EVT", "Attempt record accuracy", "S",
       "After committed failure k at time t_k: n == k; firstAt is present and equals the streak's t_1 (also when "
       "t_1 == 0); nextAt == min(t_k + delay(k), kMaxSafeInteger); and gen is the stamp of the last release, or "
       "absent if there was none."},
      {"EVT-24", "EVT", "Delay sanitising", "H",
       "nextAt is always an integer in [t_k, kMaxSafeInteger]; a delay function that throws, or returns NaN, "
       "+/-Infinity, a negative value or more than kMaxSafeInteger, yields the default delay for that attempt and "
       "exactly one warning (events.retry_delay.threw or events.retry_delay.invalid)."},
      {"EVT-25", "EVT", "Bad arguments are refused and write nothing", "M+S",
       "Each invalid argument of events.md §5 and §6.1 (empty topic, name or id; maxAttempts NaN, <= 0, -Infinity "
       "or non-integral; pollMs < 1; maxPollMs < pollMs; bad numeric retryDelayMs; handlerTimeoutMs <= 0; "
       "maxDepth < 0; unserializable payload) throws the specified error class and message and leaves the store "
       "unchanged."},
      {"EVT-26", "EVT", "A release restores the budget and means now", "H",
       "After releaseDeadEvent returned released for (c, e), the next pass of c calls the handler for e without any "
       "clock advance and without scanning the log (its cost obeys EVT-17 counting only the new records); e is "
       "quarantined again only after maxAttempts further counted failures, and the new dead record's attempts "
       "counts from the release."},
      {"EVT-27", "EVT", "Release outcomes and no-change on false", "H+S",
       "releaseDeadEvent returns notQuarantined iff no dead record existed when read, alreadyDelivered iff the ack "
       "marker existed, contended iff five tries lost their compare-and-swap, and released otherwise; for every "
       "outcome but released the store is byte-identical before and after the call."},
      {"EVT-28", "EVT", "Release atomicity", "S",
       "In every state, if the attempt record of (c, e) carries gen then the dead record exists with releases at "
       "least the count written in gen; and if the dead record is released and e is not acked then "
       "att.gen == stamp(dead) and e is in pending(c)."},
      {"EVT-29", "EVT", "Re-release is idempotent", "H+S",
       "Releasing an event that is released and undelivered returns released, increments releases by one, keeps "
       "the status released, resets the budget again, and leaves exactly one pending entry."},
      {"EVT-30", "EVT", "`releases` is exact and monotone", "H",
       "dead.releases equals the number of releaseDeadEvent calls for (T, C, e) that returned released (a call "
       "whose reply was lost counts iff its transaction is in the durable state); it never decreases and survives "
       "re-quarantine and delivery."},
      {"EVT-31", "EVT", "A release beats a stale attempt", "H",
       "If a release returns released while a handler call for (c, e) that started before it is still running, "
       "and that call then fails, the status stays released, releases is not rolled back, the attempt record is "
       "the release's reset plus only failures of calls started after the release, and e is due at once."},
      {"EVT-32", "EVT", "Status lattice", "H",
       "Per (c, e) the status moves only along none -> quarantined -> released -> (delivered | quarantined) and "
       "released -> released; delivered is absorbing, a dead record once written is never deleted, and the status "
       "is delivered iff the ack marker exists."},
      {"EVT-33", "EVT", "No phantom dead letters", "S+H",
       "A dead record for (c, e) exists only if some handler call for (c, e) failed, and none is ever written "
       "while the ack marker of (c, e) exists."},
      {"EVT-34", "EVT", "Time zero is a valid time", "H+S",
       "With the clock at 0, a release made at time 0 yields status released and the next pass calls the handler, "
       "and a first failure at time 0 records firstAt = 0 and keeps it through the streak's later failures."},
      {"EVT-35", "EVT", "Nothing is lost across crashes", "L",
       "Under any recoverable faults, after heal and continued polling (before the harness releases anything), "
       "every event is acked or quarantined for every consumer; duplicate handler calls are allowed."},
      {"EVT-36", "EVT", "The healthy path writes nothing extra", "S+H",
       "In a run where no handler fails, the only bus keys ever written are ack markers and cursors (no attempt, "
       "dead, rescan, pending or dead-letter-index records), and the bus logs no warn or error."},
      {"EVT-37", "EVT", "Legacy attempt records", "M",
       "A bare integer k at an attempt key reads as k failures, due now; the next failure writes the object form "
       "with n = k + 1 and quarantines if k + 1 >= maxAttempts."},
      {"EVT-38", "EVT", "Poll-loop timing and single chain", "H",
       "With backoff the gap after a tick is pollMs if the tick created an ack, else min(previous gap * 2, "
       "maxPollMs), and without backoff always pollMs; the first tick comes pollMs after start(), ticks never "
       "overlap, none starts after stop() returns, and after stop() + start() during a tick exactly one loop keeps "
       "ticking."},
      {"EVT-39", "EVT", "Store CAS contract", "M",
       "putIfAbsent returns true exactly once per key under any interleaving; compareAndSwap on an absent key or "
       "a mismatch returns false and writes nothing; and a value read and passed back unchanged matches iff "
       "nobody wrote in between."},
      {"EVT-40", "EVT", "Store list contract", "M",
       "The pages of list(ns) are disjoint, in strictly increasing seq, and together cover exactly the records of "
       "exactly ns present throughout the walk; a record appended during a walk never shows up at or before a "
       "position already passed, and seq is never reused after an erase."},
      {"EVT-41", "EVT", "Pending index hygiene", "S",
       "Every pending entry names an event of the same topic, and with one poller and no release during the "
       "pass, at the end of each completed pass pending(c) is exactly the set of events with seq <= F(c) that "
       "are neither acked nor quarantined-and-not-released."},
      {"EVT-42", "EVT", "Dead-letter listing", "S",
       "listDeadEvents(T, C) returns exactly the events with a dead record for (T, C) that are still in the log, "
       "each once, in log order, with the status rule of events.md §4.4 and the logged payload, at a cost of "
       "floor(D/50) + 1 lists and at most 3D gets for D dead records."},
      {"EVT-43", "EVT", "Logging discipline", "H",
       "Each counted failure with outcome retrying logs exactly one events.handler.retrying warn (plus at most "
       "one delay warning); each quarantine logs exactly one events.handler.quarantined error whose message "
       "contains QUARANTINED; alreadyDelivered logs no error; each contended release logs exactly one "
       "events.release.abandoned warn."},
      {"EVT-44", "EVT", "Handler input", "H",
       "Every handler call receives a payload equal to the stored (first) payload and meta with the unescaped id "
       "and topic; changes the handler makes to its argument never reach the store or a later call."},

      // RT — runtime and simulator
      {"RT-01", "RT", "Determinism", "H",
       "The same seed and configuration give the same trace hash and the same running hashes at every checkpoint, "
       "in every build type (Release, Debug, sanitizers) of the same source."},
      {"RT-02", "RT", "Time never goes backwards", "H",
       "The World clock never decreases across trace events and each incarnation's now() is non-decreasing; "
       "without clock.incarnation_offset every reader sees the same now() at the same instant."},
      {"RT-03", "RT", "An alarm never fires early", "H",
       "Every alarm handler starts at now >= scheduledTime, where scheduledTime is the stored alarm value at that "
       "moment and is at least the time setAlarm was called (past times clamp to now); only alarm.early is "
       "exempt."},
      {"RT-04", "RT", "One alarm, one handler", "H",
       "An object stores at most one alarm, and at most one of its alarm handlers runs at any time, across "
       "incarnations."},
      {"RT-05", "RT", "A confirmed commit survives every later crash", "S",
       "A confirmed commit (its afterCommit hooks ran, a transaction()/sync() covering it returned, or an output "
       "gated on it was released) is present in every later durable state and every later incarnation's view."},
      {"RT-06", "RT", "What was rolled back never appears; commits are all or nothing", "S",
       "Rolled-back writes (a throwing transactionSync body, a statement error, a transaction rolled back by a "
       "critical error or a definite commit failure, the open implicit transaction at a reset) appear in no later "
       "state, and every commit is wholly present or wholly absent in every durable state."},
      {"RT-07", "RT", "Durable state is a prefix", "H+S",
       "Confirmations happen in commit order, and every durable state is the result of applying a prefix of the "
       "object's local commits in commit order."},
      {"RT-08", "RT", "A replaced incarnation writes nothing", "H",
       "Once an incarnation has ended none of its writes reaches any state and every storage call it makes "
       "throws; only a zombie's non-storage effects may still happen."},
      {"RT-09", "RT", "Every injected fault is counted and reported", "H",
       "Each injection produces exactly one fault trace event, the run report's per-fault counts equal those "
       "events, and every enabled fault reports its opportunities and firings; a campaign lists the enabled "
       "faults that never fired and the invariants never checked."},
      {"RT-10", "RT", "Output gate", "H",
       "No outbound effect of an object (RPC reply, RPC call, cold-store call) is delivered before every commit "
       "issued before it is confirmed; effects leave in the order produced, and once the gate breaks none of the "
       "held effects is ever delivered."},
      {"RT-11", "RT", "Input gate", "H",
       "Segments of one object never overlap; no event of the object starts during a statement, a transactionSync "
       "or the body of transaction(); and while a blockConcurrencyWhile section is open only its own "
       "continuations run."},
      {"RT-12", "RT", "Alarm retry schedule", "H",
       "For one stored occurrence, after a failure with backoff exponent e the next fire is at failure time + "
       "(2,000 << e) + j with 0 <= j <= floor((2,000 << e) / 4); e resets to 0 on a counted failure after an "
       "uncounted one and never exceeds 9. After the 7th counted failure nothing more fires for it and the stored "
       "alarm is deleted iff it still holds that occurrence's time; uncounted failures never abandon; the "
       "handler's retryCount equals the counted failures so far."},
      {"RT-13", "RT", "Alarm handler semantics", "H",
       "Inside a handler getAlarm() is none until the handler calls setAlarm, and on success the stored alarm is "
       "deleted unless the handler set or deleted it; a handler that called setAlarm(T2) and failed is followed "
       "by a fire at T2 with retryCount = 0, one that called deleteAlarm() and failed by no fire."},
      {"RT-14", "RT", "Alarms are at-least-once", "L",
       "Every stored alarm whose time has passed runs its handler no later than kAlarmMaxLateMs after its time "
       "plus the retry delays of failed attempts, and after heal every stored alarm fires within the liveness "
       "deadline; not required under alarm.lost."},
      {"RT-15", "RT", "Stub ordering and dead stubs", "H",
       "Calls on one stub are delivered in call order, and once a call on a stub has failed every call in flight "
       "on it and every later call fails with that error."},
      {"RT-16", "RT", "Error semantics", "H",
       "A call failed overloaded or by request loss was not executed, and one failed by reply loss was executed "
       "exactly once; the flags match the cause (retryable iff connection lost, overloaded iff overload or timeout "
       "reset, durableObjectReset iff the callee's incarnation ended, remote iff the callee threw); with "
       "rpc.auto_retry off no call is executed twice (outside rpc.duplicate_delivery)."},
      {"RT-17", "RT", "Read-your-writes and a clean restart", "S",
       "Within an incarnation every read sees every earlier write of that incarnation, committed or not; the "
       "first read of a new incarnation sees exactly the durable state chosen by the last durability decision."},
      {"RT-18", "RT", "Critical errors poison and reset", "H+S",
       "After a critical error the open implicit transaction is absent from all later states, every later storage "
       "call of that incarnation throws the same error (even if the first was caught), and the incarnation ends "
       "by its next suspension point."},
      {"RT-19", "RT", "Memory never survives an incarnation", "H",
       "No member, timer, background task or coroutine frame outlives its incarnation, and a new incarnation's "
       "constructor completes before any of its events runs."},
      {"RT-20", "RT", "Cold store: create-only and strong consistency", "H",
       "Per key, at most one create-only put succeeds between two removals of it, a failed precondition writes "
       "nothing and returns none, and every get, head or list that starts after a put or delete resolved reflects "
       "it (per-key linearizability)."},
      {"RT-21", "RT", "Lifecycle bounds", "H",
       "An object under an expiry rule is never removed before it is due and is gone by due + 86,400,000 ms (not "
       "required under cold.vanish)."},
      {"RT-22", "RT", "Per-key write rate", "H",
       "Accepted writes to one cold-store key are at least 1,000 ms apart, and a rejected (429) write changes "
       "nothing."},
      {"RT-23", "RT", "The choice log is complete", "H",
       "Replaying a trace from its recorded inputs and choices, with the seed withheld, reproduces every event and "
       "the final hash."},
      {"RT-24", "RT", "Liveness after heal", "L",
       "Within the deadline after heal every issued RPC call completes or fails, every held outbound effect is "
       "delivered or dropped by a reset, every stored alarm whose time passed has fired, and no object is stuck in "
       "a reset loop; the run names whatever is still pending."},
      {"RT-25", "RT", "Timers", "H",
       "sleepFor(d) resumes no earlier than now + d, and later only while the object's input gate is held; no "
       "timer of an incarnation fires in another incarnation."},
      {"RT-26", "RT", "Statement errors are local", "S+H",
       "An ordinary statement error (storage.statement_error included) has no effect, rolls back nothing else of "
       "the open transaction, and never resets the object."},

      // CORE — the World alone (the project's own, docs/invariants-core.md; checked by the core workload)
      {"CORE-01", "CORE", "Work completes", "L",
       "Every operation a core worker starts finishes, so the started and finished counts equal workers x ops, "
       "and every child task of a when_all finishes."},
      {"CORE-02", "CORE", "Cancellation is final", "H",
       "A cancelled task runs no step after its cancellation, and every spawned task either finished or was "
       "cancelled."},
      {"CORE-03", "CORE", "Exceptions reach their awaiter", "H",
       "Every exception a task throws propagates through co_await to the task awaiting it and is caught there."},
  };
}

}  // namespace

const std::vector<Invariant>& invariant_registry() {
  static const std::vector<Invariant> registry = build_registry();
  return registry;
}

const std::vector<InvariantFamily>& invariant_families() {
  static const std::vector<InvariantFamily> families = {
      {"SCH", "scheduler"}, {"ALM", "named alarms"}, {"LOG", "retained log"},
      {"LSE", "log leases"}, {"FAN", "fanout"},       {"OBX", "outbox"},
      {"RTE", "routing and load"}, {"EVT", "event bus"}, {"RT", "runtime and simulator"},
      {"CORE", "the World alone", true},
  };
  return families;
}

const Invariant* find_invariant(std::string_view id) {
  const std::vector<Invariant>& registry = invariant_registry();
  const auto it = std::find_if(registry.begin(), registry.end(), [&](const Invariant& i) { return i.id == id; });
  return it == registry.end() ? nullptr : &*it;
}

bool requires_progress(const Invariant& invariant) {
  return invariant.kinds.find('L') != std::string_view::npos || invariant.statement.rfind("At quiescence", 0) == 0;
}

}  // namespace durasim::properties
