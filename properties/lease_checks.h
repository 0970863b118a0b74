// LSE invariants (invariants-engine.md) over the lease part of the retained log (log.md 7). It
// observes the trace as it is recorded: the engine's lease probes (docs/log-trace-events.md), the
// runtime's commit, confirmation, durability and incarnation events, and the workload's
// `app.lease.outcome`. It keeps a mirror of every object's lease rows, allocations and cursors built
// only from the `*.write` events: a write applies to the open transaction's view at once, becomes a
// local commit with the next `commit` of its incarnation, is durable at `confirm`, and vanishes with a
// `commit.failed`, the end of its incarnation, or a durability decision that does not keep it; after a
// `storage.statement_error` fault (a savepoint may have undone described writes) the next commit
// takes the store as it is instead of judging the mirror. Expiry is judged on the object's clock
// (World time plus the incarnation's `clock.incarnation_offset`). State checks read the object's live
// store at the commit through a StoreReader.
//   [S] at commits: LSE-01 (held rows disjoint), LSE-05 (cursor not past a held row, settled rows
//       below it gone, no settled row at it), LSE-12 (coverage of [0, allocation)), LSE-14 (the
//       cursor already passed a fresh skip); the stored rows, allocations and cursors against the
//       mirror: an untouched consumer under LSE-09, a touched one under the ID of what touched it
//       (LSE-02 grant, LSE-04 settle, LSE-05 advance, LSE-08 poison, LSE-10 release, LSE-13 truncation)
//   [S] at a release for an unreadable offset (LSE-10) and at the LogTruncatedError that follows it
//       (LSE-13): the offset is really unreadable, i.e. no hot row holds it and, with cold storage,
//       no indexed segment does whose cold object the store cannot have lost (ColdLossWatch, from the
//       `fault` cold.vanish / cold.lifecycle_lag and `cold.call` events)
//   [H] LSE-01 (a grant overlaps no held range), 02 (grant start, gap row, allocation; the gap row
//       alone of a fully trimmed tail, `log.lease.gap.write`; an allocation written alone, which only
//       a variant does, never decreases), 03 (unique
//       ids, reclaim of the lowest reclaimable row with attempt + 1, fenced ids never settle), 04,
//       05 (each advance recomputed; every settle advances in its transaction; a deletion written
//       alone, which only a variant does, removes exactly the settled rows below the cursor), 06, 07, 08 (skip
//       confirmed before the callback, with the attempt it skipped, > maxAttempts), 09, 10 (returned
//       lease content against the appended records; release of unreadable ranges), 11, 13 (truncation
//       writes once, throws after it), 14 (every skip advances in its transaction), 16
//       (`log.lease.disabled` and lease writes against the options, lease tables at `log.options`);
//       LSE-04 also from the workload: an `app.lease.outcome` ok matches a committed settle, a
//       LogLeaseError a rejection the log traced
//   at the end (quiescent, after heal): LSE-15 (every leasing consumer at nextOffset, no lease row
//       left; not for a log retired with migrate(none)), LSE-16 (no lease tables on objects never
//       configured with leases)
#pragma once

#include <cstdint>
#include <map>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/log_schema.h"
#include "properties/cold_loss.h"
#include "properties/durable_state.h"
#include "properties/object_checker.h"
#include "properties/store_reader.h"
#include "properties/table_mirror.h"

namespace durasim::properties {

class LeaseChecks final : public ObjectChecker {
 public:
  LeaseChecks(StoreReader reader, std::string className);

  // Faults have healed: from now on a cold put draws no lifecycle lag.
  void healed() { coldLoss_.healed(); }
  // End-of-run checks over every object of the class seen in the trace, at `now` (after heal).
  void finish(int64_t now);

 private:
  struct Row {
    std::string consumer;
    int64_t first = 0, last = 0;
    std::string state;  // active, pending, acked, skipped
    int64_t attempt = 0, expiresAt = 0;
    friend bool operator==(const Row&, const Row&) = default;
  };
  // The lease tables of one object as the writes describe them.
  struct Mirror {
    std::map<std::string, Row> rows;                      // batch id -> row
    std::map<std::string, int64_t> allocation, cursor;    // consumer -> offset
    std::set<std::string> manualCursor;                   // consumers whose cursor last moved by commit()
    std::set<std::string> fenced;                         // batch ids replaced by a reclaim

    // An edit a write event describes.
    using Edit = std::function<void(Mirror&)>;
    void apply(const Edit& edit) { edit(*this); }
  };
  // What a transaction did that counts once it is durable, or is forgotten if it vanishes.
  struct CommitNotes {
    std::vector<std::pair<std::string, int64_t>> poisons;  // matched poison skips (batch id, attempt)
    std::vector<int64_t> records;                          // offsets whose records its appends added
    void merge(CommitNotes&& other);
  };
  struct LeaseOptions {
    int64_t maxParallelism = 1, leaseMs = 0, maxBatchSize = 0;
    std::optional<int64_t> maxAttempts;
    bool onPoison = false;
  };
  // What the open transaction of the live incarnation did, by consumer.
  struct Touch {
    std::string id;                 // invariant of the first write that touched the consumer
    bool advanced = false;
    std::optional<std::string> needsAdvance;  // invariant demanding an advance in this transaction
    bool skipped = false;           // a skip (gap, truncation, poison) committed with this transaction
  };
  struct ObjectState {
    std::optional<LeaseOptions> options;  // of the current incarnation; nullopt = leases disabled
    bool optionsSeen = false, everLeases = false;
    bool cold = false;                    // the current incarnation has cold storage
    std::map<int64_t, int64_t> clockOffset;  // incarnation -> clock.incarnation_offset (runtime.md 11.2)
    DurableState<Mirror, Mirror::Edit, CommitNotes> state;
    std::map<std::string, Touch> touched;
    std::vector<EventFields> openAppends;                 // append writes of the open transaction
    std::vector<std::string> openSettles;                 // matched settles ("ack:id")
    std::map<std::string, int64_t> confirmedPoisons;      // batch id -> attempt of its durable skip
    std::set<std::string> settled, rejected, everIds, truncateWritten;
    std::map<int64_t, std::pair<std::string, std::string>> records;  // offset -> (key, payload)
  };

  void observe(EventType ev, const EventFields& e) override;
  std::string invariant_for(EventType ev) const override;
  ObjectState& object(const EventFields& e) { return objects_[label(e)]; }
  int64_t objectNow(const EventFields& e);

  void onOptions(const EventFields& e);
  void onCommit(const EventFields& e);
  void onConfirm(const EventFields& e);
  void onDurability(const EventFields& e);
  void discardOpen(ObjectState& obj);
  void poisonsDurable(ObjectState& obj, const CommitNotes& notes);
  void onLeaseWrite(const EventFields& e);
  void onFreshGrant(const EventFields& e, ObjectState& obj);
  void onReclaim(const EventFields& e, ObjectState& obj);
  void onLeaseNone(const EventFields& e);
  void onTailGapWrite(const EventFields& e);
  void onAllocateWrite(const EventFields& e);
  void onDeleteWrite(const EventFields& e);
  void onTruncateWrite(const EventFields& e);
  void onTruncated(const EventFields& e);
  void onUnreadable(const EventFields& e);
  void onReleaseWrite(const EventFields& e);
  void onPoisonWrite(const EventFields& e);
  void onPoisonCallback(const EventFields& e);
  void onSettleWrite(const EventFields& e, bool ack);
  void onSettleRejected(const EventFields& e, bool ack);
  void onAdvanceWrite(const EventFields& e);
  void onLease(const EventFields& e);
  void onOutcome(const EventFields& e);
  bool leaseEnabled(const EventFields& e, ObjectState& obj);
  void touch(ObjectState& obj, const std::string& consumer, const std::string& id);
  void demandAdvance(ObjectState& obj, const std::string& consumer, const std::string& id, bool skip);

  void checkStore(const std::string& object, ObjectState& obj, int64_t now);
  void checkMirror(const std::string& object, ObjectState& obj, const Mirror& stored);
  void checkShape(const std::string& object, const std::string& consumer, const Mirror& stored, int64_t now, const Touch* touch);
  Mirror readStore(const std::string& object);
  bool hasLeaseTables(const std::string& object);
  std::optional<std::string> readableAt(const std::string& object, const ObjectState& obj, int64_t offset, int64_t now);
  bool hasLogTable(const std::string& object);  // durability_log_seq: the log was not retired
  void learnRecords(const std::string& object, ObjectState& obj);

  StoreReader reader_;
  ObjectStates<ObjectState> objects_;
  // The stored lease tables of each object, kept current from the store's row changes, so that the
  // check at every commit touching a lease reads only the rows that commit changed.
  struct StoredTables {
    TableMirror leases{DURASIM_LOG_LEASES, "batch_id, consumer, first_offset, last_offset, state, attempt, expires_at"};
    TableMirror allocations{DURASIM_LOG_ALLOCATIONS, "consumer, allocated_offset"};
    TableMirror cursors{DURASIM_LOG_CURSORS, "consumer, \"offset\" AS o"};
  };
  ObjectStates<StoredTables> stored_;
  ColdLossWatch coldLoss_;
};

}  // namespace durasim::properties
