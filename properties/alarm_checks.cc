// SCH and ALM checks; see alarm_checks.h.
#include "properties/alarm_checks.h"

#include <algorithm>

#include "engine/alarms_events.h"
#include "engine/alarms_schema.h"
#include "engine/fanout_schema.h"
#include "engine/migrations.h"
#include "engine/outbox_schema.h"
#include "engine/scheduler_events.h"
#include "properties/event_fields.h"

namespace durasim::properties {

namespace {

// The tables whose pending rows drive the object's alarm (scheduler.md 3.1), one per participant kind,
// each with what makes a row pending (every outbox row is) and the statement reading its earliest
// pending due time.
struct ParticipantTable {
  const char* table;
  const char* pending;
  const char* earliestPending;
};
constexpr ParticipantTable kParticipantTables[] = {
    {DURASIM_ALARMS, "status = 'pending'", "SELECT MIN(next_attempt_at) AS next FROM " DURASIM_ALARMS " WHERE status = 'pending'"},
    {DURASIM_FANOUT_DELIVERIES, "status = 'pending'", "SELECT MIN(next_attempt_at) AS next FROM " DURASIM_FANOUT_DELIVERIES " WHERE status = 'pending'"},
    {DURASIM_OUTBOX, "1", "SELECT MIN(next_attempt_at) AS next FROM " DURASIM_OUTBOX},
};
using nlohmann::json;
using namespace fields;

constexpr std::string_view kKeyPrefix = "durability-alarm:v1:";
}  // namespace

AlarmChecks::AlarmChecks(StoreReader reader, AlarmPolicyView policy, std::string className)
    : ObjectChecker(std::move(className)), reader_(std::move(reader)), policy_(std::move(policy)) {}

void AlarmChecks::CommitNotes::merge(CommitNotes&& other) {
  endings.insert(endings.end(), other.endings.begin(), other.endings.end());
  reconciles.insert(reconciles.end(), other.reconciles.begin(), other.reconciles.end());
  claims.insert(claims.end(), other.claims.begin(), other.claims.end());
}

// The events each check reads: a malformed one is a violation of the check it feeds.
std::string AlarmChecks::invariant_for(EventType ev) const {
  if (ev == "commit" || ev == "commit.noop" || ev == scheduler_events::kReconcile) return "SCH-02";
  if (ev == scheduler_events::kReconcileDurable) return "SCH-05";
  if (ev == scheduler_events::kTimerArm || ev == scheduler_events::kTimerFire || ev == scheduler_events::kTimerCancel) return "SCH-06";
  if (ev == scheduler_events::kPermit || ev == alarms_events::kRelease) return "SCH-07";
  if (ev == scheduler_events::kHandoff) return "SCH-10";
  if (ev == scheduler_events::kParticipant || ev == scheduler_events::kAppAttach) return "SCH-09";
  if (ev == scheduler_events::kAppMigrate) return "SCH-12";
  if (ev == alarms_events::kAppHandler) return "ALM-01";
  if (ev.starts_with(scheduler_events::kPrefix)) return "SCH-08";
  if (ev.starts_with(alarms_events::kPurge)) return "ALM-10";
  if (ev.starts_with(alarms_events::kCancel)) return "ALM-11";
  if (ev.starts_with(alarms_events::kSchedule)) return "ALM-08";
  return "ALM-13";
}

AlarmChecks::IncarnationState& AlarmChecks::incarnation(const EventFields& e) { return incarnations_.at(label(e), num(e, "incarnation")); }

void AlarmChecks::observe(EventType ev, const EventFields& e) {
  if (!mine(e)) return;
  const std::string& object = label(e);
  if (ev == "alarm.failure" && e.contains("next")) {  // the runtime retries a failed alarm run then
    int64_t& retryAt = objects_[object].platformRetryAt;
    retryAt = std::max(retryAt, num(e, "next"));
    return;
  }
  if (!e.contains("incarnation")) return;
  ++seq_;
  // The rows as this event left them: a write is judged against them and the rows kept from the
  // object's previous event.
  static const std::map<std::string, RowState> kNoRows;
  const std::map<std::string, RowState>* rows = currentRows(object);
  dispatch(ev, e, rows ? *rows : kNoRows);
  if (!rows) return;
  ObjectState& obj = objects_[object];
  if (StoredRows& stored = stored_[object]; stored.changed) {
    obj.rows = stored.rows;
    stored.changed = false;
  }
  if (!healedAt_) return;
  const int64_t t = num(e, "t");
  judgeTakeUps(object, t);  // before this event's pass counts: a pass after the deadline is too late
  if (ev == "commit" || ev == "commit.noop") notePending(object, t);
  if (ev == scheduler_events::kAlarmStart) onPassStart(object, t);
}

void AlarmChecks::dispatch(EventType ev, const EventFields& e, const std::map<std::string, RowState>& rows) {
  IncarnationState& inc = incarnation(e);
  if (ev == "commit") return onCommit(e);
  if (ev == "commit.noop") {
    std::vector<Reconcile>& reconciles = inc.commits.notes().reconciles;
    stampCommitTime(reconciles, num(e, "t"));
    if (!reconciles.empty()) {
      // Nothing changed, so the stored alarm is what the reconcile wrote or found (runtime.md 7.3:
      // a running platform handler hides the firing alarm, which then stays as it was).
      const Reconcile& r = reconciles.back();
      checkWindow(label(e), r, r.written ? r.written : r.before);
    }
    // What it did is durable with the last commit before it (its hooks wait for that one).
    inc.commits.commit_unchanged([&](const auto& txn) { notesDurable(label(e), inc, txn.notes); });
    return;
  }
  if (ev == "confirm") return onConfirm(e);
  if (ev == "durability") return onDurability(e);
  // After an incarnation's end its state is kept, not erased: a zombie's frames (object.zombie)
  // run on and still probe under this key.
  if (ev == "commit.failed" || ev == "incarnation.end") return inc.commits.roll_back();
  if (ev == scheduler_events::kReconcile) return onReconcile(e);
  if (ev == scheduler_events::kReconcileDurable) return onReconcileDurable(e);
  if (ev == scheduler_events::kPermit) return onPermit(e);
  if (ev == alarms_events::kClaim) return onClaim(e);
  if (ev == alarms_events::kInvoke) return onInvoke(e);
  if (ev == alarms_events::kWrite) return onWrite(e, rows);
  if (ev == alarms_events::kSettle) return onSettle(e);
  if (ev == alarms_events::kPurgeBegin) return onPurgeBegin(e);
  if (ev == alarms_events::kPurgeWrite) return onPurgeWrite(e);
  if (ev == alarms_events::kCancelBegin) return onCancelBegin(e);
  if (ev == alarms_events::kScheduleWrite) return onScheduleWrite(e);
  ObjectState& obj = objects_[label(e)];
  if (ev == scheduler_events::kTimerArm) {
    const int64_t next = num(e, "next");
    // Judged against the time the reconcile committed, not the arm-time clock the engine reads: a
    // next at or past commit time + alarmMinDelayMs was written as the physical alarm, which fires.
    const std::optional<int64_t> committedAt = inc.lastDurableCommittedAt;
    tallies_.check("SCH-06",
                   inc.sawDurable && inc.lastDurableNext == next && committedAt && next < *committedAt + num(e, "min_delay"), [&] {
                     return label(e) + " armed an early timer for " + str(next) + " at " + str(num(e, "now")) +
                            "; the last committed reconcile's next is " + str(inc.lastDurableNext) + ", committed at " + str(committedAt);
                   });
    inc.timerNext = next;
  } else if (ev == scheduler_events::kTimerFire) {
    tallies_.check("SCH-06", num(e, "now") >= num(e, "next"), [&] {
      return label(e) + " early timer for " + str(num(e, "next")) + " fired at " + str(num(e, "now"));
    });
    inc.timerNext.reset();
  } else if (ev == scheduler_events::kTimerCancel) {
    inc.timerNext.reset();
  } else if (ev == scheduler_events::kHandoff) {
    const int64_t limit = num(e, "now") + num(e, "min_delay");
    const std::optional<int64_t> alarm = e.at("written").is_null() ? optInt(e.at("before")) : optInt(e.at("written"));
    tallies_.check("SCH-10", alarm && *alarm <= limit, [&] {
      return label(e) + " handed off with the alarm at " + str(alarm) + ", later than now + alarmMinDelayMs = " + str(limit);
    });
    if (!e.at("written").is_null())
      tallies_.check("SCH-03", num(e, "written") >= limit, [&] { return label(e) + " handoff wrote an alarm too early"; });
    inc.handedOff = true;
  } else if (ev == scheduler_events::kParticipant) {
    const std::string kind = text(e, "kind");
    const bool accepted = e.at("accepted").get<bool>();
    tallies_.check("SCH-09", accepted != (inc.kinds.count(kind) > 0), [&] {
      return label(e) + (accepted ? " accepted a second participant of kind " : " refused the first participant of kind ") + kind;
    });
    if (accepted) inc.kinds.insert(kind);
  } else if (ev == scheduler_events::kAppAttach) {
    tallies_.check("SCH-09", e.at("second_scheduler_refused").get<bool>() && e.at("second_alarms_refused").get<bool>(),
                   [&] { return label(e) + " accepted a second scheduler or a second alarms participant"; });
  } else if (ev == scheduler_events::kAppMigrate) {
    tallies_.check("SCH-12", num(e, "applied") == 0 && num(e, "rolled_back") == 0,
                   [&] { return label(e) + " migrate(latest) on a migrated store changed the schema"; });
  } else if (ev == alarms_events::kAppHandler) {
    onHandlerRan(e);
  } else if (ev == alarms_events::kCancelWrite) {
    const std::string name = text(e, "name");
    tallies_.check("ALM-11", !row(label(e), name), [&] { return label(e) + " cancel(" + name + ") left its row"; });
    inc.commits.notes().endings.push_back(EndingWrite{false, name, 0, obj.cancelBeginSeq[name]});
  } else if (ev == alarms_events::kScheduleBegin) {
    obj.lastScheduleBegin[text(e, "name")] = seq_;
    obj.beginSeq[text(e, "generation")] = seq_;
  } else if (ev == alarms_events::kSchedule) {
    const Occurrence occurrence{text(e, "name"), text(e, "generation")};
    obj.durableSchedules.push_back(occurrence);
    obj.scheduleCreatedAt[occurrence] = num(e, "created_at");
  } else if (ev == alarms_events::kCancel) {
    const std::string name = text(e, "name");
    if (e.at("deleted").get<bool>() && obj.cancelBegin.count(name)) obj.cancelledAt[name] = {name, obj.cancelBegin[name]};
    obj.lastDurableCancel[name] = std::max(obj.lastDurableCancel[name], obj.cancelBeginSeq[name]);
  } else if (ev == alarms_events::kPurge) {
    const int64_t before = num(e, "before");
    obj.durablePurges.emplace_back(obj.purgeBeginSeq[before], before);
    // The count returned is the write's own count, checked against the rows at onPurgeWrite.
  } else if (ev == alarms_events::kHandlerEnd) {
    const std::string name = text(e, "name");
    if (inc.running.count(name) && inc.running[name] == num(e, "attempt")) inc.running.erase(name);
    const std::string generation = text(e, "key").substr(kKeyPrefix.size());
    if (!e.at("failed").get<bool>()) obj.handlerSucceeded.insert({name, generation});
  } else if (ev == alarms_events::kRelease) {
    const std::string name = text(e, "name");
    tallies_.check("SCH-08", inc.running.count(name) == 0, [&] {
      return label(e) + " released the permit and lock of " + name + " while its handler still runs";
    });
  }
}

// ---------------------------------------------------------------------------------------------
// Commits: the state the engine left, read independently

void AlarmChecks::onCommit(const EventFields& e) {
  const std::string object = label(e);
  IncarnationState& inc = incarnation(e);
  std::vector<Reconcile>& reconciles = inc.commits.notes().reconciles;
  if (!reconciles.empty()) checkWindow(object, reconciles.back(), optInt(e.at("alarm")));
  stampCommitTime(reconciles, num(e, "t"));
  inc.commits.commit(e.at("commit").get<uint64_t>());
  checkRows(object);
}

// The reconciles of a segment commit (or join the last commit, for a no-op) when the segment ends.
void AlarmChecks::stampCommitTime(std::vector<Reconcile>& reconciles, int64_t t) {
  for (Reconcile& r : reconciles)
    if (!r.committedAt) r.committedAt = r.now + (t - r.seenAt);
}

void AlarmChecks::notesDurable(const std::string& object, IncarnationState& inc, const CommitNotes& notes) {
  for (const auto& claim : notes.claims) inc.confirmedClaims.insert(claim);
  inc.confirmedReconciles.insert(inc.confirmedReconciles.end(), notes.reconciles.begin(), notes.reconciles.end());
  ObjectState& obj = objects_[object];
  for (const EndingWrite& w : notes.endings) {
    if (w.purge) {
      obj.durablePurges.emplace_back(w.beganSeq, w.before);
    } else {
      uint64_t& last = obj.lastDurableCancel[w.name];
      last = std::max(last, w.beganSeq);
    }
  }
}

// The incarnation ended with unconfirmed commits: the first `kept` of them are durable.
void AlarmChecks::onDurability(const EventFields& e) {
  IncarnationState& inc = incarnation(e);
  const auto kept = static_cast<std::size_t>(std::max<int64_t>(num(e, "kept"), 0));
  inc.commits.decide(kept, [&](const auto& txn) { notesDurable(label(e), inc, txn.notes); }, [](const auto&) {});
}

void AlarmChecks::onConfirm(const EventFields& e) {
  IncarnationState& inc = incarnation(e);
  inc.commits.confirm(e.at("commit").get<uint64_t>(), [&](const auto& txn) { notesDurable(label(e), inc, txn.notes); });
}

void AlarmChecks::checkWindow(const std::string& object, const Reconcile& r, std::optional<int64_t> alarm) {
  if (!hasParticipantTable(object)) return;
  const std::optional<int64_t> next = independentNext(object);
  tallies_.check("SCH-02", next == r.next, [&] {
    return object + " reconcile computed next " + str(r.next) + " but the committed rows give " + str(next);
  });
  if (!next) {
    // While the platform's alarm handler runs, getAlarm() hides the firing alarm (runtime.md 7.3): the
    // engine could not see it, and the runtime deletes it when the handler succeeds.
    // SCH-01 at every commit that reconciled, not only at quiescence: nothing pending, no alarm.
    const bool hidden = !r.before && !r.written;
    tallies_.check("SCH-01", !alarm || hidden, [&] { return object + " keeps an alarm at " + str(alarm) + " with nothing pending"; });
    return;
  }
  const int64_t target = std::max(*next, r.now + r.minDelay);
  tallies_.check("SCH-02", alarm && *next <= *alarm && *alarm <= target, [&] {
    return object + " committed alarm " + str(alarm) + " outside [" + str(*next) + ", " + str(target) + "]";
  });
  if (r.before && *r.before >= *next && *r.before <= target)
    tallies_.check("SCH-04", alarm == r.before && !r.written, [&] {
      return object + " moved an alarm already in the window from " + str(r.before) + " to " + str(alarm);
    });
}

// ALM-05 over every row of the object (as observe read them for this event; none without the table).
void AlarmChecks::checkRows(const std::string& object) {
  const StoredRows& stored = stored_[object];
  if (!stored.mirror.exists()) return;
  for (const auto& [name, r] : stored.rows) {
    const bool failed = r.status == "failed";
    const bool ok = (!failed || r.lastErrorName) && (failed || r.attempt != 0 || (!r.lastError && !r.lastErrorName)) &&
                    r.attempt <= policy_.maxAttempts(name);
    tallies_.check("ALM-05", ok, [&] {
      return object + " row " + name + " is inconsistent: status " + r.status + ", attempt " + str(r.attempt);
    });
  }
}

// scheduler.md 3.1: the earliest due time over the pending rows of every participant kind the object
// holds (named alarms, fanout deliveries).
std::optional<int64_t> AlarmChecks::independentNext(const std::string& object) {
  std::optional<int64_t> next;
  for (std::size_t i = 0; i < std::size(kParticipantTables); ++i) {
    const ParticipantTable& participant = kParticipantTables[i];
    PendingTimes& times = pendingTimes_.try_emplace({object, i}, participant.table, participant.pending).first->second;
    times.mirror.refresh(reader_, object);
    if (!times.mirror.exists()) continue;
    // MIN over anything but integers and NULLs compares as SQLite does: the statement answers.
    const std::optional<int64_t> earliest =
        times.due.regular() ? times.due.least() : reader_(object, participant.earliestPending).one().optInt64("next");
    if (earliest && (!next || *earliest < *next)) next = earliest;
  }
  return next;
}

AlarmChecks::PendingTimes::PendingTimes(const std::string& table, const std::string& pending)
    : mirror(table, "(" + pending + ") AS pending, next_attempt_at AS next",
             TableMirror::Index{[this](int64_t, const SqlRow& r) { count(r, -1); }, [this](int64_t, const SqlRow& r) { count(r, +1); }}) {}

// The row's due time enters (+1) or leaves (-1) `due` when the row is pending (SQLite's truth: a
// non-zero integer).
void AlarmChecks::PendingTimes::count(const SqlRow& r, int delta) {
  const int64_t* pending = std::get_if<int64_t>(&r.at("pending"));
  if (pending && *pending != 0) due.count(r.at("next"), delta);
}

bool AlarmChecks::hasParticipantTable(const std::string& object) {
  return std::any_of(std::begin(kParticipantTables), std::end(kParticipantTables),
                     [&](const ParticipantTable& participant) { return reader_.hasTable(object, participant.table); });
}

AlarmChecks::StoredRows::StoredRows()
    : mirror(DURASIM_ALARMS, "name, generation_id, status, attempt, next_attempt_at, last_error, last_error_name",
             TableMirror::Index{[this](int64_t, const SqlRow& r) {
                                  rows.erase(r.text("name"));
                                  changed = true;
                                },
                                [this](int64_t, const SqlRow& r) {
                                  rows[r.text("name")] = RowState{r.text("generation_id"), r.text("status"), r.int64("attempt"),
                                                                  r.int64("next_attempt_at"), r.optText("last_error"), r.optText("last_error_name")};
                                  changed = true;
                                }}) {}

const std::map<std::string, AlarmChecks::RowState>* AlarmChecks::currentRows(const std::string& object) {
  StoredRows& stored = stored_[object];
  stored.mirror.refresh(reader_, object);
  return stored.mirror.exists() ? &stored.rows : nullptr;
}

std::optional<SqlRow> AlarmChecks::row(const std::string& object, const std::string& name) {
  return reader_(object, "SELECT * FROM " DURASIM_ALARMS " WHERE name = ?", {name}).next();
}

bool AlarmChecks::hasAlarmTable(const std::string& object) { return reader_.hasTable(object, DURASIM_ALARMS); }

// ---------------------------------------------------------------------------------------------
// Scheduler probes

void AlarmChecks::onReconcile(const EventFields& e) {
  Reconcile r;
  r.now = num(e, "now");
  r.seenAt = num(e, "t");
  r.minDelay = num(e, "min_delay");
  r.next = optInt(e.at("next"));
  r.before = optInt(e.at("before"));
  r.written = optInt(e.at("written"));
  r.deleted = e.at("deleted").get<bool>();
  if (r.written)
    tallies_.check("SCH-03", *r.written >= r.now + r.minDelay, [&] {
      return label(e) + " reconcile wrote alarm " + str(r.written) + " before now + alarmMinDelayMs = " + str(r.now + r.minDelay);
    });
  incarnation(e).commits.notes().reconciles.push_back(r);
}

// SCH-05: only a reconcile whose commit is durable may arm the early timer.
void AlarmChecks::onReconcileDurable(const EventFields& e) {
  IncarnationState& inc = incarnation(e);
  const int64_t at = num(e, "reconciled_at");
  const std::optional<int64_t> next = optInt(e.at("next"));
  auto it = std::find_if(inc.confirmedReconciles.begin(), inc.confirmedReconciles.end(),
                         [&](const Reconcile& r) { return r.now == at && r.next == next; });
  const bool committed = it != inc.confirmedReconciles.end();
  tallies_.check("SCH-05", committed, [&] {
    return label(e) + " ran the after-commit step of a reconcile at " + str(at) + " that never committed";
  });
  inc.lastDurableCommittedAt = committed ? it->committedAt : std::nullopt;
  if (committed) inc.confirmedReconciles.erase(it);
  inc.lastDurableNext = next;
  inc.sawDurable = true;
}

void AlarmChecks::onPermit(const EventFields& e) {
  IncarnationState& inc = incarnation(e);
  const std::string op = text(e, "op");
  const int64_t permit = num(e, "permit");
  if (op == "acquire") {
    inc.heldPermits.insert(permit);
  } else if (op == "release" || op == "handoff") {
    tallies_.check("SCH-07", inc.heldPermits.erase(permit) == 1,
                   [&] { return label(e) + " released permit " + str(permit) + " that it did not hold"; });
    if (op == "handoff") {
      inc.heldPermits.insert(num(e, "granted"));
      const int64_t ticket = num(e, "ticket");
      tallies_.check("SCH-07", ticket == inc.lastGrantedTicket + 1, [&] {
        return label(e) + " granted a permit to waiter " + str(ticket) + " before waiter " + str(inc.lastGrantedTicket + 1);
      });
      inc.lastGrantedTicket = ticket;
    }
  }
  const int64_t held = static_cast<int64_t>(inc.heldPermits.size());
  tallies_.check("SCH-07", num(e, "free") + held == num(e, "capacity") && held <= num(e, "capacity"), [&] {
    return label(e) + " permits: free " + str(num(e, "free")) + " + held " + str(held) + " != capacity " + str(num(e, "capacity"));
  });
}

// ---------------------------------------------------------------------------------------------
// Named-alarm probes

void AlarmChecks::onClaim(const EventFields& e) {
  const std::string object = label(e);
  ObjectState& obj = objects_[object];
  const Occurrence occurrence{text(e, "name"), text(e, "generation")};
  const int64_t attempt = num(e, "attempt");
  const std::optional<SqlRow> r = row(object, occurrence.first);
  tallies_.check("ALM-12", r && num(e, "now") >= r->int64("next_attempt_at"), [&] {
    return object + " claimed " + occurrence.first + " at " + str(num(e, "now")) + " before it was due at " +
           (r ? str(r->int64("next_attempt_at")) : std::string("?"));
  });
  const int64_t highest = obj.highestInvoked.count(occurrence) ? obj.highestInvoked[occurrence] : 0;
  tallies_.check("ALM-02", r && r->int64("attempt") == attempt && attempt > highest, [&] {
    return object + " claim of " + occurrence.first + " attempt " + str(attempt) + " after invoked attempt " + str(highest);
  });
  tallies_.check("ALM-04", obj.failed.count(occurrence) == 0,
                 [&] { return object + " claimed " + occurrence.first + " after its generation failed"; });
  tallies_.check("ALM-11", !obj.cancelledAt.count(occurrence.first) || obj.cancelledAt[occurrence.first] != occurrence,
                 [&] { return object + " claimed a cancelled generation of " + occurrence.first; });
  incarnation(e).commits.notes().claims.emplace_back(occurrence, attempt);
}

// ALM-01 counts what the application's handler actually ran, not what the engine says it invoked.
void AlarmChecks::onHandlerRan(const EventFields& e) {
  const std::string object = label(e), name = text(e, "name"), key = text(e, "key");
  const std::string generation = key.rfind(kKeyPrefix, 0) == 0 ? key.substr(kKeyPrefix.size()) : key;
  const int64_t runs = ++objects_[object].handlerRuns[{name, generation}];
  tallies_.check("ALM-01", runs <= policy_.maxAttempts(name), [&] {
    return object + " ran the handler of " + name + " " + str(runs) + " times in one generation (max " + str(policy_.maxAttempts(name)) + ")";
  });
}

void AlarmChecks::onInvoke(const EventFields& e) {
  const std::string object = label(e);
  ObjectState& obj = objects_[object];
  IncarnationState& inc = incarnation(e);
  const std::string name = text(e, "name");
  const Occurrence occurrence{name, text(e, "generation")};
  const int64_t attempt = num(e, "attempt");
  tallies_.check("ALM-02",
                 inc.confirmedClaims.count({occurrence, attempt}) > 0 && e.at("is_retry").get<bool>() == (attempt > 1) &&
                     num(e, "retry_count") == attempt - 1,
                 [&] { return object + " invoked " + name + " attempt " + str(attempt) + " without a confirmed claim of it"; });
  tallies_.check("ALM-07", inc.running.count(name) == 0, [&] {
    return object + " started a handler of " + name + " while attempt " + str(inc.running[name]) + " still runs";
  });
  const std::string key = text(e, "key");
  auto& keys = obj.keysByGeneration[occurrence.second];
  if (std::find(keys.begin(), keys.end(), key) == keys.end()) keys.push_back(key);
  tallies_.check("ALM-09", key == std::string(kKeyPrefix) + occurrence.second && keys.size() == 1,
                 [&] { return object + " idempotency key " + key + " does not name generation " + occurrence.second; });
  inc.running[name] = attempt;
  obj.highestInvoked[occurrence] = std::max(obj.highestInvoked[occurrence], attempt);
}

// ALM-03: a fenced write changes exactly the row its generation and attempt name, as the row was
// just before it (read after the object's previous event: every alarm-table write probes) into `rows`
// (as the write left them), and a
// stale one changes nothing at all.
void AlarmChecks::onWrite(const EventFields& e, const std::map<std::string, RowState>& rows) {
  const std::string object = label(e);
  ObjectState& obj = objects_[object];
  const std::string name = text(e, "name"), generation = text(e, "generation"), write = text(e, "write");
  const int64_t attempt = num(e, "attempt");
  const bool matched = e.at("matched").get<bool>();
  const auto found = obj.rows.find(name);
  const std::optional<RowState> before = found == obj.rows.end() ? std::nullopt : std::optional<RowState>(found->second);
  const auto left = rows.find(name);
  const std::optional<RowState> after = left == rows.end() ? std::nullopt : std::optional<RowState>(left->second);
  const bool fenced = before && before->generation == generation && before->status == "pending" &&
                      (write == "exhaust" ? before->attempt >= policy_.maxAttempts(name) : before->attempt == attempt);
  bool ok;
  if (!fenced)
    ok = after == before;
  else if (write == "delete")
    ok = !after;
  else
    ok = after && after->generation == generation && after->status == text(e, "status") && after->attempt == before->attempt;
  if (write == "delete" && matched) obj.succeeded.insert({name, generation});
  tallies_.check("ALM-03", ok, [&] {
    return object + " " + write + " write of " + name + " generation " + generation + " attempt " + str(attempt) +
           (fenced ? " did not write its own row" : " changed a row its fence does not match") + " (row before: " +
           (before ? before->generation + " " + before->status + " attempt " + str(before->attempt) : std::string("none")) + ")";
  });
}

void AlarmChecks::onSettle(const EventFields& e) {
  const std::string object = label(e);
  ObjectState& obj = objects_[object];
  const std::string name = text(e, "name");
  const Occurrence occurrence{name, text(e, "generation")};
  const int64_t attempt = num(e, "attempt");
  const int64_t max = num(e, "max_attempts");
  const bool matched = e.at("matched").get<bool>();
  if (text(e, "write") == "exhaust") {
    tallies_.check("ALM-06", attempt >= max, [&] { return object + " exhausted " + name + " at attempt " + str(attempt) + " < " + str(max); });
  } else {
    const std::string error = text(e, "error_name");
    const bool terminal = e.at("terminal").get<bool>();
    const bool nonRetryable = error == "NonRetryableError";
    const bool timeout = error == "DurableAlarmTimeoutError" && !e.at("retry_timeouts").get<bool>();
    const bool expected = nonRetryable || attempt >= max || timeout || error == "DurableRetryPolicyError";
    tallies_.check("ALM-06", terminal == expected, [&] {
      return object + " failure of " + name + " attempt " + str(attempt) + " (" + error + ") was " + (terminal ? "" : "not ") + "terminal";
    });
    if (policy_.policyInvalid(name) && !(nonRetryable || attempt >= max || timeout))
      tallies_.check("SCH-13", terminal && error == "DurableRetryPolicyError",
                     [&] { return object + " invalid retry policy of " + name + " did not end it with DurableRetryPolicyError"; });
    if (!terminal) {
      const int64_t now = num(e, "now"), next = num(e, "next_attempt_at");
      const auto range = policy_.retryDelay(name, attempt);
      tallies_.check("SCH-13", next >= now && (!range || (next - now >= range->first && next - now <= range->second)), [&] {
        return object + " retry of " + name + " after attempt " + str(attempt) + " delayed " + str(next - now) + " ms" +
               (range ? ", allowed [" + str(range->first) + ", " + str(range->second) + "]" : std::string());
      });
    }
    if (!terminal) return;
  }
  if (matched) {
    tallies_.check("ALM-04", obj.failed.insert(occurrence).second, [&] { return object + " failed " + name + " twice"; });
  }
}

void AlarmChecks::onPurgeBegin(const EventFields& e) {
  const std::string object = label(e);
  const int64_t before = num(e, "before");
  objects_[object].purgeBeginSeq[before] = seq_;
  if (!hasAlarmTable(object)) return;
  PurgeExpectation& expected = purgeExpected_[{object, num(e, "incarnation"), before}];
  expected.older = reader_(object, "SELECT count(*) AS n FROM " DURASIM_ALARMS " WHERE created_at < ?", {before}).one().int64("n");
  expected.atCutoff = reader_(object, "SELECT count(*) AS n FROM " DURASIM_ALARMS " WHERE created_at = ?", {before}).one().int64("n");
}

// ALM-10 at the delete itself: nothing older is left, everything at the cutoff is.
void AlarmChecks::onPurgeWrite(const EventFields& e) {
  const std::string object = label(e);
  const int64_t before = num(e, "before");
  incarnation(e).commits.notes().endings.push_back(EndingWrite{true, "", before, objects_[object].purgeBeginSeq[before]});
  auto it = purgeExpected_.find({object, num(e, "incarnation"), before});
  if (it == purgeExpected_.end()) return;
  const int64_t older = reader_(object, "SELECT count(*) AS n FROM " DURASIM_ALARMS " WHERE created_at < ?", {before}).one().int64("n");
  const int64_t at = reader_(object, "SELECT count(*) AS n FROM " DURASIM_ALARMS " WHERE created_at = ?", {before}).one().int64("n");
  tallies_.check("ALM-10", older == 0 && at == it->second.atCutoff && num(e, "count") == it->second.older, [&] {
    return object + " purgeBefore(" + str(before) + ") deleted " + str(num(e, "count")) + " of " + str(it->second.older) +
           " older rows, left " + str(older) + ", and kept " + str(at) + " of " + str(it->second.atCutoff) + " rows at the cutoff";
  });
}

void AlarmChecks::onCancelBegin(const EventFields& e) {
  const std::string object = label(e);
  const std::string name = text(e, "name");
  objects_[object].cancelBeginSeq[name] = seq_;
  if (!hasAlarmTable(object)) return;
  if (const std::optional<SqlRow> r = row(object, name)) objects_[object].cancelBegin[name] = r->text("generation_id");
}

// ALM-08 at the write itself: exactly the new occurrence's row.
void AlarmChecks::onScheduleWrite(const EventFields& e) {
  const std::string object = label(e);
  const std::string name = text(e, "name");
  const std::optional<SqlRow> r = row(object, name);
  const bool ok = r && r->text("generation_id") == text(e, "generation") && r->int64("attempt") == 0 &&
                  r->text("status") == "pending" && r->int64("scheduled_at") == num(e, "scheduled") &&
                  r->int64("next_attempt_at") == num(e, "scheduled") && r->int64("created_at") == num(e, "created_at") &&
                  r->isNull("last_error") && r->isNull("last_error_name");
  tallies_.check("ALM-08", ok, [&] {
    return object + " schedule of " + name + " at " + str(num(e, "scheduled")) + " did not leave exactly the new occurrence's row";
  });
}

// ---------------------------------------------------------------------------------------------
// SCH-14 after heal: every pending row is taken up by an alarm pass that starts at or after its due
// time, no later than takeUpDeadline(). A pass that finds the row's name still running waits for it
// and a later pass takes the row up; a claim gives the row a new attempt, which awaits the next pass.

void AlarmChecks::healed(int64_t t, const SchedulerView& scheduler) {
  healedAt_ = t;
  scheduler_ = scheduler;
  for (const auto& [object, obj] : objects_.all())
    if (hasAlarmTable(object)) notePending(object, t);
}

void AlarmChecks::notePending(const std::string& object, int64_t t) {
  ObjectState& obj = objects_[object];
  std::map<PendingKey, TakeUp> awaiting;
  for (const auto& [name, r] : obj.rows) {
    if (r.status != "pending") continue;
    const PendingKey key{name, r.generation, r.attempt, r.nextAttemptAt};
    const auto known = obj.awaitingPass.find(key);
    awaiting[key] = known != obj.awaitingPass.end() ? known->second : TakeUp{r.nextAttemptAt, t};
  }
  obj.awaitingPass = std::move(awaiting);  // rows no longer pending, or changed, were taken up
}

void AlarmChecks::onPassStart(const std::string& object, int64_t t) {
  std::map<PendingKey, TakeUp>& awaiting = objects_[object].awaitingPass;
  std::erase_if(awaiting, [&](const auto& entry) {
    const bool takenUp = entry.second.due <= t + kClockOffsetMs;
    if (takenUp) tallies_.check("SCH-14", true, [] { return std::string(); });
    return takenUp;
  });
}

// The row's due time, or when it was first seen pending after heal, or the runtime's retry of a
// failed alarm run, whichever is latest; then the physical alarm's delay (alarmMinDelayMs, SCH-02),
// one alarm run of the object still in progress (it returns by alarmHandoffMs, SCH-10) and a clock
// offset. A fire drawn late before heal may still be pending up to kAlarmLateMs after it.
int64_t AlarmChecks::takeUpDeadline(const ObjectState& obj, const TakeUp& takeUp) const {
  const int64_t ready = std::max({takeUp.due, takeUp.seenAt, obj.platformRetryAt, *healedAt_ + kAlarmLateMs});
  return ready + scheduler_.alarmMinDelayMs + scheduler_.alarmHandoffMs + kClockOffsetMs;
}

void AlarmChecks::judgeTakeUps(const std::string& object, int64_t t) {
  ObjectState& obj = objects_[object];
  for (auto it = obj.awaitingPass.begin(); it != obj.awaitingPass.end();) {
    const int64_t deadline = takeUpDeadline(obj, it->second);
    if (deadline >= t) {
      ++it;
      continue;
    }
    tallies_.check("SCH-14", false, [&] {
      return object + " row " + std::get<0>(it->first) + " attempt " + str(std::get<2>(it->first)) + " due at " + str(it->second.due) +
             " was taken up by no alarm pass by " + str(deadline) + " (first seen pending at " + str(it->second.seenAt) + ")";
    });
    it = obj.awaitingPass.erase(it);
  }
}

// ---------------------------------------------------------------------------------------------
// The end of the run

void AlarmChecks::finish(const std::map<std::string, std::optional<int64_t>>& storedAlarms, int64_t now, int64_t alarmMinDelayMs) {
  for (const auto& [object, alarm] : storedAlarms) {
    // SCH-11: the alarms table exists iff its migration is recorded; the history table iff it has rows.
    const bool history = reader_(object, "SELECT count(*) AS n FROM sqlite_master WHERE name = '" DURASIM_MIGRATIONS "'").one().int64("n") > 0;
    const int64_t historyRows = history ? reader_(object, "SELECT count(*) AS n FROM " DURASIM_MIGRATIONS).one().int64("n") : 0;
    const bool recorded =
        history &&
        reader_(object, "SELECT count(*) AS n FROM " DURASIM_MIGRATIONS " WHERE name = '" DURASIM_ALARMS_MIGRATION "'").one().int64("n") > 0;
    const bool table = hasAlarmTable(object);
    tallies_.check("SCH-11", table == recorded && history == (historyRows > 0), [&] {
      return object + " schema: alarms table " + (table ? "present" : "absent") + ", migration " + (recorded ? "recorded" : "not recorded");
    });
    if (!hasParticipantTable(object)) continue;
    // SCH-01 at quiescence and SCH-14 nothing overdue, over every participant's rows.
    const std::optional<int64_t> next = independentNext(object);
    tallies_.check("SCH-01", alarm.has_value() == next.has_value(), [&] {
      return object + " at quiescence: alarm " + str(alarm) + " but the earliest pending row is " + str(next);
    });
    tallies_.check("SCH-14", !next || *next > now - alarmMinDelayMs - kPlatformLatenessMs, [&] {
      return object + " pending row due at " + str(next) + " was never taken up (now " + str(now) + ")";
    });
    if (!table) continue;
    // ALM-14 nothing left pending after heal that is due: an application that re-arms a periodic
    // alarm from its handler (the log's retention sweep) always has its next occurrence pending,
    // and one due later than now is within its bound.
    if (healedAt_) judgeTakeUps(object, now);
    std::map<std::string, std::pair<std::string, std::string>> rows;  // name -> (generation, status)
    for (const SqlRow& r : reader_(object, "SELECT name, generation_id, status, next_attempt_at FROM " DURASIM_ALARMS).toVector()) {
      rows[r.text("name")] = {r.text("generation_id"), r.text("status")};
      tallies_.check("ALM-14", r.text("status") != "pending" || r.int64("next_attempt_at") > now, [&] {
        return object + " " + r.text("name") + " still pending after heal, due at " + str(r.int64("next_attempt_at"));
      });
    }
    ObjectState& obj = objects_[object];
    // ALM-13: every occurrence whose schedule returned ended in one of the permitted ways.
    for (const Occurrence& occurrence : obj.durableSchedules) {
      const auto& [name, generation] = occurrence;
      const int64_t createdAt = obj.scheduleCreatedAt[occurrence];
      const uint64_t began = obj.beginSeq[generation];
      const bool stillThere = rows.count(name) && rows[name].first == generation;
      const bool replaced = obj.lastScheduleBegin[name] > began;
      const bool cancelled = obj.lastDurableCancel.count(name) && obj.lastDurableCancel[name] > began;
      const bool purged = std::any_of(obj.durablePurges.begin(), obj.durablePurges.end(),
                                      [&](const auto& p) { return p.first > began && p.second > createdAt; });
      const bool resolved = obj.succeeded.count(occurrence) || stillThere || replaced || cancelled || purged;
      tallies_.check("ALM-13", resolved, [&] { return object + " occurrence " + generation + " of " + name + " vanished"; });
      // ALM-14: an occurrence whose handler succeeded is not left behind.
      if (obj.handlerSucceeded.count(occurrence))
        tallies_.check("ALM-14", !(stillThere && rows[name].second == "pending"),
                       [&] { return object + " " + name + " succeeded but its row is still pending"; });
    }
  }
}

}  // namespace durasim::properties
