// LOG invariants (invariants-engine.md), and SCH-11 for the log's schema, over a run of objects of
// one class that hold a DurabilityLog.
// It observes the trace as it is recorded: the log's `log.*` events and the workload's `app.*` events
// (docs/log-trace-events.md), the runtime's commit, confirm, durability and incarnation events, and
// the cold-store faults. A `.write` event takes effect with the next `commit` of its incarnation; the
// checker keeps three views of each log (model of log.md 2): `staged` (what the open transaction
// holds), `local` (every commit so far) and `durable` (confirmed commits, plus the prefix of
// unconfirmed ones a `durability` event says was kept). State checks read the object's live store
// through a StoreReader at the instant of the event.
//   [S] at every commit: LOG-01 (next_offset as allocated), LOG-02 (a new record holds the payload size
//       of its key's last occurrence in the batch), LOG-03 (the hot rows are exactly those the
//       committed appends left: nothing lost, nothing partial), LOG-04, LOG-05, LOG-06 (stored cursors
//       as committed, never below the durable ones), LOG-10 (segments as flushed), LOG-15, LOG-16
//       (while cold stays configured, segments cover [oldestOffset, hotOffset) without a gap), LOG-17
//       (a commit of log writes alone leaves the physical alarm as it was)
//   [S] at events: LOG-04 (a hot read, which suspends nowhere, used the stored bounds), LOG-03 (a
//       rejected append changed nothing), LOG-10 (a failed cold.write removed
//       nothing), LOG-12 and LOG-18 (at trim.end: retention met, no flush intent left), LOG-13 (load)
//   [H] LOG-01 and LOG-02 (each append write against the staged offsets and hot keys; each returned
//       append against its write), LOG-03 (every offset an app.produce acknowledged is durable with its
//       key), LOG-06 (each cursor write moves iff forward), LOG-07 (page shape), LOG-08 (a page starts
//       at `from`, truncation errors carry the right fields, every consumer group sees each retained
//       offset: a gap in what a group has read is allowed only below oldestOffset, or over a segment
//       the cold store may have lost, see LOG-16), LOG-09 (key and
//       body of an offset agree across appends, reads, cold writes and leases), LOG-10 (deletes and
//       flushes remove the hot prefix, never with cold configured a plain delete), LOG-11 (cold.write
//       ranges match the flush intent, never overlap a committed segment, and a re-flush of a first
//       offset repeats the same records), LOG-14 (rejection messages), LOG-16 (a read of an offset in
//       [oldestOffset, hotOffset) fails only when the cold store may have lost the segment (ColdLossWatch): a
//       cold.vanish fault named its key, or the put that stored it drew a lifecycle lag that has
//       elapsed (the `fault` cold.lifecycle_lag event just before its `cold.call` put; after heal no
//       lag is drawn, so a put then may be removed at once); or when cold
//       is not configured, or was not in some incarnation)
//   [H] LOG-16 read probe (`app.log.probe`, the workload reads each retained offset back once its
//       producers are done): every offset answers with one record at that offset, the key and body
//       its producer appended (the last occurrence's body), or with a LogTruncatedError only as
//       above; at `app.log.probe.done` every offset still in [oldestOffset, nextOffset) was read back
//   at the end (quiescent, after heal): LOG-03 (acknowledged offsets still readable unless trimmed),
//       LOG-15/16 on the final state, LOG-18 (no flush row after a completed trim, nor once a trim
//       began after heal: it must have finished any flush intent)
//   [H] happens-before (properties/happens_before.h): LOG-09 (each offset a read, lease, consumed page
//       or probe returned reads from the append that wrote it, which happens before the read; the
//       run's graph is acyclic), LOG-07 (a page's offsets come in the order of their appends)
//   SCH-11 for the log's two capabilities (properties/schema_check.h: tables iff migration recorded,
//       lease tables only with the log's) at the end, and when the application reports that it
//       retired a log (`app.log.retired`): what the H19 variant leaves behind
// Under the H20 variant the segment row and the deletion commit apart (`log.trim.segment.write`,
// then `log.trim.delete`): the views follow each write; the checks judge the states they leave.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/log_schema.h"
#include "engine/runtime.h"
#include "properties/cold_loss.h"
#include "properties/durable_state.h"
#include "properties/happens_before.h"
#include "properties/object_checker.h"
#include "properties/store_reader.h"
#include "properties/table_mirror.h"

namespace durasim::properties {

class LogChecks final : public ObjectChecker {
 public:
  LogChecks(StoreReader reader, std::string className);

  // Faults have healed: from now on a put draws no lifecycle lag (its lag is 0).
  void healed() {
    coldLoss_.healed();
    healed_ = true;
  }
  // End-of-run checks over every log object seen (after heal, nothing in flight).
  void finish();

 private:
  // What some event showed of an offset's record.
  struct Record {
    std::string key;
    std::optional<std::string> body;  // serialize(body), once some event showed it
  };
  struct Segment {
    int64_t last = 0;
    std::string locator;
    friend bool operator==(const Segment&, const Segment&) = default;
  };
  // One view of a log's durable tables (log.md 2), as the write events built it.
  struct View {
    int64_t next = 0;
    int64_t hotFrom = 0;                     // hot offsets are [hotFrom, next)
    std::map<int64_t, std::string> records;  // every allocated offset, trimmed ones included -> its key
    std::map<std::string, int64_t> keys;     // hot dedup keys
    std::map<int64_t, Segment> segments;     // first_offset -> segment
    std::map<std::string, int64_t> cursors;
    std::optional<std::pair<int64_t, int64_t>> flush;

    // Applies one write event (no checks).
    void apply(const EventFields& write);
  };
  // What a producer appended at an offset: its key and (the last occurrence's) body.
  struct Produced {
    std::string key;
    nlohmann::json body;  // null when the event did not say
  };
  struct Options {
    int64_t maxBatchSize = 100;
    std::optional<int64_t> maxAgeMs, maxRecords, maxBytes;
    bool retention = false;
    bool cold = false;
  };
  // What the checks keep of each hot row, after its rowid (its offset): the stored byte count, the
  // payload's real length in bytes, the dedup key, the append time.
  static constexpr const char* kRecordColumns = "bytes, length(CAST(payload AS BLOB)) AS len, dedup_key, appended_at";
  enum RecordColumn : std::size_t { kBytes = 1, kLength = 2, kDedupKey = 3, kAppendedAt = 4 };
  struct ObjectState {
    DurableState<View, EventFields> state;     // edits: the write events
    std::map<int64_t, Record> known;           // offset -> what reads and cold writes showed of it
    std::optional<Options> options;
    bool coldAlways = true;                  // every incarnation so far configured cold
    int64_t incarnation = 0;                 // the live one
    bool schedulerTouched = false;           // the open segment has scheduler or alarm events
    // (keys, offsets) of this incarnation's append writes whose append has not returned yet
    std::vector<std::pair<std::vector<std::string>, std::vector<int64_t>>> appendWrites;
    std::optional<nlohmann::json> lastAlarm; // the alarm of the last commit, when known
    bool alarmKnown = false;
    std::map<int64_t, EventFields> coldWrites;  // first -> the first cold.write event for it
    std::optional<int64_t> trimBegunAt;
    bool appendedDuringTrim = false;
    bool flushSettled = false;               // the last trim completed and nothing was lost since
    std::map<int64_t, Produced> produced;    // offset -> what an app.produce acknowledged there
    std::set<int64_t> probed;                // offsets the read probe read back (or found lost)
    bool trimAfterHeal = false;              // a trim began after the faults healed
  };
  // One object's stored log tables as the state checks read them, each mirrored from the row-change
  // journal where it is read: the hot rows (columns: kRecordColumns) with the running totals LOG-05
  // compares, the segment index, the cursors and the sequence row.
  struct StoredLog {
    StoredLog();
    StoredLog(const StoredLog&) = delete;  // the records mirror's index points back here
    StoredLog& operator=(const StoredLog&) = delete;
    int64_t heldBytes = 0;  // the byte counts of the hot rows
    int64_t wrongRows = 0;  // hot rows whose byte count is not their payload's
    MirroredMinimum oldestAppend;  // over the hot rows' append times
    TableMirror records, segments, cursors, seq;
  };
  struct GroupCursor {
    int64_t seenUpTo = 0;  // every offset below was seen or trimmed
  };

  void observe(EventType ev, const EventFields& e) override;
  std::string invariant_for(EventType ev) const override;
  void dispatch(EventType ev, const EventFields& e);
  void onApp(EventType ev, const EventFields& e);
  void onFault(const EventFields& e);
  void onRetired(const EventFields& e);
  void onProbe(ObjectState& s, const std::string& object, const EventFields& e);
  void onProbeDone(ObjectState& s, const std::string& object, const EventFields& e);
  // LOG-16: whether a LogTruncatedError for `from` at World time `now` is allowed by the store as it
  // is: `from` was trimmed, cold storage was not always configured, or its segment may be lost.
  bool truncationExcused(const ObjectState& s, const std::string& object, int64_t from, int64_t now);
  void checkSchema(const std::string& object);

  void onWrite(ObjectState& s, const std::string& object, EventType ev, const EventFields& e);
  void onCommit(ObjectState& s, const std::string& object, const EventFields& e);
  void onConfirm(ObjectState& s, const EventFields& e);
  void onDurability(ObjectState& s, const EventFields& e);
  void resetOpen(ObjectState& s);

  void checkAppendWrite(const std::string& object, const View& staged, const EventFields& e);
  void checkTrimWrite(const std::string& object, const ObjectState& s, EventType ev, const EventFields& e);
  void onAppend(ObjectState& s, const std::string& object, const EventFields& e);
  void onRejected(ObjectState& s, const std::string& object, const EventFields& e);
  void onRead(ObjectState& s, const std::string& object, const EventFields& e);
  void onReadTruncated(ObjectState& s, const std::string& object, const EventFields& e);
  void onLoad(const std::string& object, const EventFields& e);
  void onTrimEnd(ObjectState& s, const std::string& object, const EventFields& e);
  SqlRow trimFigures(const std::string& object, bool skewed);
  std::optional<SqlRow> trimFiguresFromMirrors(const std::string& object, bool skewed);
  void onColdWrite(ObjectState& s, const std::string& object, const EventFields& e);
  void onColdFailed(const std::string& object, const EventFields& e);
  void onOptions(ObjectState& s, const EventFields& e);
  // LOG-09: key and body shown for offsets agree with what is known of them.
  void observeRecords(ObjectState& s, const std::string& object, const EventFields& e, bool withBodies);

  // State checks at a commit (and at the end).
  void checkState(ObjectState& s, const std::string& object, const std::vector<EventFields>& writes);
  bool hasLogTables(const std::string& object);
  struct Bounds {
    int64_t oldest = 0, hot = 0, next = 0;
    int64_t totalBytes = 0;  // the stored total_bytes
  };
  Bounds storeBounds(const std::string& object);
  StoredLog& stored(const std::string& object) { return stored_[object]; }
  const SqlRow& sequenceRow(const std::string& object);
  const SqlRow* storedSequenceRow(const std::string& object);  // null when the table has no row 1
  std::map<int64_t, Segment> storeSegments(const std::string& object);
  StoreReader reader_;
  ObjectStates<ObjectState> objects_;
  ObjectStates<StoredLog> stored_;
  std::map<std::pair<std::string, std::string>, GroupCursor> groups_;  // (partition, group)
  std::set<std::string> clockSkewed_;             // objects an incarnation of which ran on an offset clock
  ColdLossWatch coldLoss_;                        // which segments the cold store may have lost
  bool healed_ = false;
  // LOG-09 (every read, lease, consumed page and probe of an offset reads from an append that
  // happens before it) and LOG-07 (a page's offsets in the order of their appends), judged on the
  // happens-before graph of the class's objects and their clients (properties/happens_before.h).
  HistoryGraph history_;
};

}  // namespace durasim::properties
