// FAN invariants (invariants-engine.md) over a run of objects that use DurabilityFanout. It observes
// the trace as it is recorded: the engine's "fan.*" probes (each "*.write" inside the transaction it
// describes, counted once that transaction commits), the runtime's commit, confirmation and
// incarnation events, and what the application reports of the effects outside the object
// ("app.fan.consume" from the consumer that received a delivery, "app.fan.stored" from the cold
// bucket writes of storage targets and the DLQ). State checks read the object's live store at the
// instant of the event.
//   [S] at commits: FAN-02 and FAN-04 (manifests against their rows: remaining, generation, target
//       set), FAN-10 (a dead-letter reason only on a dead_letter row)
//   [H] FAN-05 (seq above every committed seq, across resets that discard unconfirmed commits),
//       FAN-06 (a consumer or storage target receives a delivery's attempt k only after a committed
//       claim of attempt k; for the consumer also judged on the happens-before graph, whose
//       violations carry a witness path, happens_before.h), FAN-07 (at most maxAttempts attempts of a delivery reach its targets),
//       FAN-08 (a removed delivery is never claimed again), FAN-10 (a dead_letter row is never
//       claimed), FAN-11 (a DLQ removal only after the DLQ holds the entry), FAN-12 (no DLQ: no
//       intent, no DLQ write), FAN-19 (a delivery identity is json([generation, target]) of a
//       delivery the object created, for the target that received it or the stored message names),
//       FAN-22 (an exhausted dead letter carries attempts == maxAttempts), FAN-25 (no acknowledgement
//       removes a dead_letter row)
//       FAN-09 (a second settlement call fails; one settlement per delivery attempt takes effect),
//       FAN-14 (a pass reads the due rows the spec's order gives, computed from the store), FAN-15
//       (one pass per target at a time), FAN-17 (first due times on the batch window), FAN-23 (at
//       most one claim transaction per pass), FAN-20 (ackOnReturn removals only on a target with it,
//       and only for a batch whose deliver returned normally before its deadline)
//       FAN-03 (a key with a live manifest gets no second one, and only the same work counts as its
//       duplicate), FAN-13 (every load snapshot the application answers with counts the stored
//       rows), FAN-16 (rows of one target due when another target's pass began have a pass of their
//       own target open in that instant), FAN-18 (an incarnation built without a target
//       neither claims nor removes its rows; it postpones them by 60 s and keeps their attempt and
//       error), FAN-21 (a batch fails exactly at attemptTimeoutMs, its unsettled rows retried with
//       FanoutTimeoutError, and a settlement called after that takes no effect), FAN-24 (a memo row
//       only beside its delivery row; a memoized step computed only while no memo is stored, and
//       every memoize returns the stored value)
//   [L] at the end of the run: FAN-26 (no delivery row left, and the last removal within the
//       retry bound after heal or after the last enqueue)
// The options it needs (maxAttempts, whether there is a DLQ) come from the application's
// "workload.config" event (one naming the class, or naming none: config_of_class), never from the
// engine.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "model/fanout_model.h"
#include "properties/durable_state.h"
#include "properties/fanout_account.h"
#include "properties/happens_before.h"
#include "properties/object_checker.h"
#include "properties/store_reader.h"
#include "properties/table_mirror.h"

namespace durasim::properties {

class FanoutChecks final : public ObjectChecker {
 public:
  FanoutChecks(StoreReader reader, std::string className);
  // The faults healed at `t`.
  void healed(int64_t t) { healedAt_ = t; }
  // End-of-run checks (quiescent, after heal) over every object of the class.
  void finish();

 private:
  using RowKey = std::pair<std::string, std::string>;  // (row id, generation)
  struct Claim {
    RowKey row;
    std::string delivery;
    int64_t attempt = 0;
  };
  using DeliveryAttempt = std::pair<std::string, int64_t>;  // (delivery identity, attempt)
  // A manifest as the enqueue that created it wrote it.
  struct Manifest {
    std::string key, generation, id, payload;
    nlohmann::json targets;
    std::set<std::string> open;  // targets whose delivery row is not removed yet
  };
  // What a transaction did, counted once it commits.
  struct CommitNotes {
    std::vector<int64_t> seqs;
    std::vector<Claim> claims;
    std::vector<RowKey> intents, removals;
    std::vector<Manifest> created;
    void merge(CommitNotes&& other);
  };
  // A batch handed to a target, until it closes (FAN-20, FAN-21).
  struct Batch {
    std::map<std::pair<std::string, int64_t>, std::string> rows;  // (row id, attempt) -> delivery identity
    int64_t handedAt = 0;
    bool autoAcked = false;  // an ackOnReturn removal happened for it
  };
  // A pass of a target (FAN-15, FAN-23).
  struct PassState {
    std::optional<int64_t> openSince;
    int64_t lastEnd = -1;
    int64_t claims = 0;  // claim writes of the open pass
  };
  // FAN-16: the rows of other targets due when a pass of `target` began, and the targets with a pass
  // open in that instant.
  struct WatchedRow {
    std::string target, id, generation;
    int64_t attempt = 0, next = 0;
  };
  struct IsolationWatch {
    std::string target;
    int64_t began = 0;
    std::set<std::string> openInInstant;
    std::vector<WatchedRow> due;
  };
  // A row of an unconfigured target as its pass read it (FAN-18).
  struct Unconfigured {
    int64_t attempt = 0;
    std::optional<std::string> error, errorName;
  };
  struct IncarnationState {
    DurableState<NoState, NoEdit, CommitNotes> commits;
    std::map<std::string, PassState> passes;  // by target
    std::vector<IsolationWatch> watches;
    std::map<std::string, Batch> batches;     // target -> its open batch
    std::optional<std::set<std::string>> configured;  // the targets this incarnation was built with
    std::map<std::string, std::pair<int64_t, std::map<std::string, Unconfigured>>> unconfiguredDue;  // target -> (now, rows)
    int64_t clockOffset = 0;  // clock.incarnation_offset: the incarnation's now() is the World's plus this
  };
  // Stored facts, at two depths: `local` (every local commit of the live incarnation) and `durable`
  // (what the next incarnation opens after a reset).
  struct Facts {
    int64_t maxSeq = -1;
    std::set<RowKey> deadLettered, removed;  // committed intents and removals
    std::map<std::string, Manifest> live;    // key -> its live manifest
    void apply(const CommitNotes& notes);
  };
  // A delivery attempt whose batch timed out (FAN-21).
  struct TimedOut {
    int64_t at = 0, incarnation = 0;
    bool settledBefore = false;           // a settlement called before the deadline took effect
    std::vector<std::string> retryErrors;  // error names of the retries / intents written for it
  };
  struct ObjectState {
    Facts local, durable;
    std::map<std::string, std::set<int64_t>> claimed;    // delivery -> attempts claimed (committed)
    std::map<std::string, std::set<int64_t>> delivered;  // delivery -> attempts a target received
    std::set<std::string> inDlq;                         // deliveries the DLQ holds
    std::map<std::string, std::set<std::string>> generations;  // generation -> targets, of every committed manifest
    std::map<DeliveryAttempt, int64_t> settled;  // settlements that took effect
    std::map<DeliveryAttempt, TimedOut> timedOut;
    int64_t lastEnqueueAt = -1, lastRemovalAt = -1;  // commit times
  };

  void observe(EventType ev, const EventFields& e) override;
  std::string invariant_for(EventType ev) const override;

  void onConfig(const EventFields& e);
  void onCommit(const EventFields& e);
  void onDurability(const EventFields& e);
  void onEnqueueWrite(const EventFields& e, IncarnationState& inc);
  void onClaimWrite(const EventFields& e, IncarnationState& inc);
  void onAckWrite(const EventFields& e, IncarnationState& inc);
  void onRemoveWrite(const EventFields& e, IncarnationState& inc);
  void onReceived(const std::string& mailbox, const std::string& delivery, int64_t attempt, const char* what);
  void onStored(const EventFields& e);
  void checkIdentity(const std::string& mailbox, const std::string& delivery, const std::string& target);
  void onSettled(const EventFields& e);
  void onDue(const EventFields& e);
  void onDelivered(const EventFields& e, IncarnationState& inc);
  void checkFirstDue(const EventFields& e);
  void checkDedup(const EventFields& e, IncarnationState& inc);
  void onPassBegin(const EventFields& e, IncarnationState& inc);
  void onPassEnd(const EventFields& e, IncarnationState& inc);
  void judgeIsolation(const EventFields& e, IncarnationState& inc);
  void onDeliver(const EventFields& e, IncarnationState& inc);
  void onUnconfiguredDue(const EventFields& e, IncarnationState& inc);
  void onPostponeWrite(const EventFields& e, IncarnationState& inc);
  void onRetryWritten(const EventFields& e);
  void onLoad(const EventFields& e);
  void onMemo(const EventFields& e, bool computed);
  bool configured(const IncarnationState& inc, const std::string& target) const;
  void checkConfiguredRemoval(const EventFields& e, const IncarnationState& inc, const char* what);
  int64_t retryBoundMs() const;
  CommitNotes validated(const std::string& object, IncarnationState& inc);
  void committed(const std::string& object, const CommitNotes& notes, int64_t at);
  void checkRows(const std::string& object);
  IncarnationState& incarnation(const EventFields& e);
  bool hasTables(const std::string& object) const;

  // One object's manifest and delivery rows, mirrored from the row-change journal at each commit
  // and kept as the model reads them (the rows the FAN-02/04/10 checks judge).
  struct StoredRows {
    StoredRows();
    StoredRows(const StoredRows&) = delete;  // the mirrors' indexes point back here
    StoredRows& operator=(const StoredRows&) = delete;
    FanoutAccount account;  // the manifests and delivery rows, and their FAN-02/04 accounting
    std::map<std::tuple<std::string, std::string, std::string>, int, std::less<>> deliveriesOf;  // (key, target, generation) -> rows
    int64_t deadLetterDisagreements = 0;  // delivery rows whose dead-letter fields FAN-10 rejects (or cannot read)
    TableMirror messages, deliveryRows, memos;
  };
  // The rows `object` stores in one of its mirrored tables at this event, by rowid: the mirror
  // brought up to date (the due-row and memo checks scan it where they ran a statement per pass).
  const std::map<int64_t, SqlRow>& rowsNow(const std::string& object, TableMirror StoredRows::*table);

  StoreReader reader_;
  HistoryGraph history_;
  std::optional<int64_t> maxAttempts_;
  std::optional<bool> dlq_, ackOnReturn_;
  std::optional<int64_t> maxBatchSize_, batchDelayMs_, attemptTimeoutMs_;
  std::optional<int64_t> healedAt_;
  IncarnationStates<IncarnationState> incarnations_;
  ObjectStates<ObjectState> objects_;
  ObjectStates<StoredRows> stored_;
  mutable std::map<std::string, std::pair<uint64_t, bool>, std::less<>> hasTables_;  // object -> (event asked at, answer)
  uint64_t checked_ = 0;  // events checked so far (the end of the run counts as one)
};

}  // namespace durasim::properties
