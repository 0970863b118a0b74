// SCH and ALM invariants (invariants-engine.md) over a run of objects that use the shared scheduler
// and named alarms. It observes the trace as it is recorded: the engine's probes ("sch.*", "alm.*"),
// the runtime's commit, confirmation and incarnation events; state checks read the object's live
// store at the instant of the event through a StoreReader, so they see exactly what the engine left.
//   [S] at commits: SCH-01 (no alarm while nothing is pending), SCH-02/04 (the stored alarm against an
//       independently computed next), ALM-05; at the write itself: ALM-03 (a fenced write against the
//       row as it was just before it), ALM-08 (the row a schedule wrote), ALM-10 (purge cutoff),
//       ALM-11 (cancel)
//   [H] SCH-03, 05, 06, 07, 08, 09, 10, 12, 13; ALM-01, 02, 04, 06, 07, 09, 12
//   [L] after heal: SCH-14 (every due pending row is taken up by a pass within a bound, below)
//   at the end (quiescent, after heal): SCH-01, SCH-11, SCH-14, ALM-13, ALM-14 (no row pending
//       that is due: a periodic alarm's next occurrence, due later, is within its bound)
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/runtime.h"
#include "properties/durable_state.h"
#include "properties/object_checker.h"
#include "properties/store_reader.h"
#include "properties/table_mirror.h"

namespace durasim::properties {

// What the checker must know of the application's alarm configuration.
struct AlarmPolicyView {
  std::function<int64_t(const std::string& name)> maxAttempts;
  // The allowed [min, max] delay of a retry after failed attempt `attempt`, or nullopt if any delay
  // is allowed.
  std::function<std::optional<std::pair<int64_t, int64_t>>(const std::string& name, int64_t attempt)> retryDelay;
  std::function<bool(const std::string& name)> policyInvalid;  // its retry policy output is invalid
};

class AlarmChecks final : public ObjectChecker {
 public:
  AlarmChecks(StoreReader reader, AlarmPolicyView policy, std::string className);

  // The scheduler options the workload states ("workload.config"); SCH-14's bound reads them.
  struct SchedulerView {
    int64_t alarmMinDelayMs = 0;
    int64_t alarmHandoffMs = 0;
  };

  // Faults healed at trace time `t`: from now on every pending row that is due must be taken up by
  // an alarm pass (SCH-14) within the bound of takeUpDeadline().
  void healed(int64_t t, const SchedulerView& scheduler);
  // End-of-run checks over every object of the class, at `now`, with their stored alarms.
  void finish(const std::map<std::string, std::optional<int64_t>>& storedAlarms, int64_t now, int64_t alarmMinDelayMs);

  static constexpr int64_t kPlatformLatenessMs = 60'000 + 64'000;  // alarm.late plus one uncounted retry
  static constexpr int64_t kAlarmLateMs = 60'000;        // alarm.late: a fire drawn before heal may still be late
  static constexpr int64_t kClockOffsetMs = 500;         // clock.incarnation_offset (arbitrary profile)

 private:
  using Occurrence = std::pair<std::string, std::string>;  // name, generation

  struct Reconcile {
    int64_t now = 0, minDelay = 0;
    int64_t seenAt = 0;                  // trace time of its probe
    // The object's clock when the commit that holds it happened: `now` plus the time that passed
    // until the commit (the object's clock may be offset from trace time under arbitrary faults).
    std::optional<int64_t> committedAt;
    std::optional<int64_t> next, before, written;
    bool deleted = false;
  };
  // A cancel or purge write whose commit may become durable even if its caller saw an error (ALM-13
  // counts the occurrences it removed as ended in a permitted way once it is durable).
  struct EndingWrite {
    bool purge = false;
    std::string name;    // cancel: the alarm name
    int64_t before = 0;  // purge: the cutoff
    uint64_t beganSeq = 0;
  };
  struct CommitNotes {  // what a commit of an incarnation holds
    std::vector<EndingWrite> endings;
    // Every reconcile of the segment (engine transactions with no suspension between them share one
    // commit, and each reconciles); the last one read the state the commit leaves.
    std::vector<Reconcile> reconciles;
    std::vector<std::pair<Occurrence, int64_t>> claims;  // claims made in this segment
    void merge(CommitNotes&& other);
  };
  // A row as the checker last read it (ALM-03 compares a fenced write with the row just before it).
  struct RowState {
    std::string generation, status;
    int64_t attempt = 0, nextAttemptAt = 0;
    std::optional<std::string> lastError, lastErrorName;
    bool operator==(const RowState&) const = default;
  };
  // SCH-14: a pending row (name, generation, attempt, due) seen after heal, and when it was first seen.
  struct TakeUp {
    int64_t due = 0, seenAt = 0;
  };
  using PendingKey = std::tuple<std::string, std::string, int64_t, int64_t>;
  struct PurgeExpectation {  // counted when a purge began
    int64_t older = 0, atCutoff = 0;
  };
  struct IncarnationState {
    DurableState<NoState, NoEdit, CommitNotes> commits;  // the open one, and those awaiting confirmation
    std::set<std::pair<Occurrence, int64_t>> confirmedClaims;
    std::vector<Reconcile> confirmedReconciles;
    std::optional<int64_t> lastDurableNext;
    std::optional<int64_t> lastDurableCommittedAt;  // when the reconcile that computed it committed
    bool sawDurable = false;
    std::optional<int64_t> timerNext;
    std::map<std::string, int64_t> running;  // name -> attempt of the running handler
    std::set<int64_t> heldPermits;
    int64_t lastGrantedTicket = 0;
    std::set<std::string> kinds;
    bool handedOff = false;
  };
  struct ObjectState {
    std::map<Occurrence, int64_t> handlerRuns;     // what the application's handler ran (ALM-01)
    std::map<Occurrence, int64_t> highestInvoked;
    std::set<Occurrence> failed;
    std::map<std::string, Occurrence> cancelledAt;  // name -> generation a durable cancel removed
    std::map<std::string, std::string> cancelBegin;  // name -> generation seen when a cancel began
    std::map<std::string, std::vector<std::string>> keysByGeneration;
    std::vector<Occurrence> durableSchedules;        // in return order
    std::map<Occurrence, int64_t> scheduleCreatedAt;
    std::set<Occurrence> succeeded;                  // a matched success delete
    std::set<Occurrence> handlerSucceeded;           // some handler run of it returned normally
    // Sequence numbers (event order) of the operations that may end an occurrence (ALM-13).
    std::map<std::string, uint64_t> beginSeq;                 // generation -> its schedule.begin
    std::map<std::string, uint64_t> lastScheduleBegin;        // name -> latest schedule.begin
    std::map<std::string, uint64_t> cancelBeginSeq;           // name -> latest cancel.begin
    std::map<std::string, uint64_t> lastDurableCancel;        // name -> cancel.begin of the latest durable cancel
    std::map<int64_t, uint64_t> purgeBeginSeq;                // before -> latest purge.begin
    std::vector<std::pair<uint64_t, int64_t>> durablePurges;  // (purge.begin sequence, before)
    std::map<std::string, RowState> rows;                     // the rows after the object's last event
    std::map<PendingKey, TakeUp> awaitingPass;                // SCH-14: due rows no pass has taken up yet
    int64_t platformRetryAt = 0;  // the latest retry time the runtime announced for a failed alarm run
  };

  void observe(EventType ev, const EventFields& e) override;
  void dispatch(EventType ev, const EventFields& e, const std::map<std::string, RowState>& rows);
  void onHandlerRan(const EventFields& e);
  static void stampCommitTime(std::vector<Reconcile>& reconciles, int64_t t);
  std::string invariant_for(EventType ev) const override;
  IncarnationState& incarnation(const EventFields& e);

  void onCommit(const EventFields& e);
  void onDurability(const EventFields& e);
  // A commit holding `notes` is durable: its removals count for ALM-13, its claims and reconciles
  // are confirmed.
  void notesDurable(const std::string& object, IncarnationState& inc, const CommitNotes& notes);
  void onConfirm(const EventFields& e);
  void onReconcile(const EventFields& e);
  void onReconcileDurable(const EventFields& e);
  void onPermit(const EventFields& e);
  void onClaim(const EventFields& e);
  void onInvoke(const EventFields& e);
  void onWrite(const EventFields& e, const std::map<std::string, RowState>& rows);
  void onSettle(const EventFields& e);
  void onPurgeBegin(const EventFields& e);
  void onPurgeWrite(const EventFields& e);
  void onCancelBegin(const EventFields& e);
  void onScheduleWrite(const EventFields& e);

  void checkWindow(const std::string& object, const Reconcile& r, std::optional<int64_t> alarm);
  // The object's rows as this event left them (refreshed from the row-change journal), or nullptr
  // when it holds no alarm table.
  const std::map<std::string, RowState>* currentRows(const std::string& object);
  // SCH-14: records the due pending rows of `object` not yet awaiting a pass, as seen at trace time t.
  void notePending(const std::string& object, int64_t t);
  void onPassStart(const std::string& object, int64_t t);
  // Reports every row of `object` still awaiting a pass whose deadline lies before trace time t.
  void judgeTakeUps(const std::string& object, int64_t t);
  int64_t takeUpDeadline(const ObjectState& obj, const TakeUp& takeUp) const;
  void checkRows(const std::string& object);
  std::optional<int64_t> independentNext(const std::string& object);
  std::optional<SqlRow> row(const std::string& object, const std::string& name);
  bool hasAlarmTable(const std::string& object);
  // Whether `object` holds the table of any participant kind of the scheduler.
  bool hasParticipantTable(const std::string& object);

  // One object's alarm rows, mirrored from the row-change journal and kept as RowStates.
  struct StoredRows {
    StoredRows();
    StoredRows(const StoredRows&) = delete;  // the mirror's index points back here
    StoredRows& operator=(const StoredRows&) = delete;
    std::map<std::string, RowState> rows;  // by name
    bool changed = true;                   // since ObjectState::rows last took them
    TableMirror mirror;
  };

  // The due times of the pending rows of one participant table of one object (their least is the
  // earliest), mirrored from the row-change journal.
  struct PendingTimes {
    PendingTimes(const std::string& table, const std::string& pending);
    PendingTimes(const PendingTimes&) = delete;  // the mirror's index points back here
    PendingTimes& operator=(const PendingTimes&) = delete;
    void count(const SqlRow& row, int delta);
    MirroredMinimum due;  // over the pending rows' due times
    TableMirror mirror;
  };

  StoreReader reader_;
  AlarmPolicyView policy_;
  std::map<std::pair<std::string, std::size_t>, PendingTimes> pendingTimes_;  // (object, participant)
  IncarnationStates<IncarnationState> incarnations_;
  ObjectStates<ObjectState> objects_;
  ObjectStates<StoredRows> stored_;
  // (object, incarnation, before): a purge is counted and checked within the incarnation that ran it.
  std::map<std::tuple<std::string, int64_t, int64_t>, PurgeExpectation> purgeExpected_;
  uint64_t seq_ = 0;  // events seen
  std::optional<int64_t> healedAt_;
  SchedulerView scheduler_;
};

}  // namespace durasim::properties
