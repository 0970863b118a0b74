// The OBX checks; see outbox_checks.h.
#include "properties/outbox_checks.h"

#include <algorithm>
#include <cstdlib>
#include <iterator>

#include "engine/alarms_schema.h"
#include "engine/fanout_schema.h"
#include "engine/migrations.h"
#include "engine/outbox_events.h"
#include "engine/outbox_schema.h"
#include "engine/scheduler_events.h"
#include "model/alarms_model.h"
#include "model/fanout_model.h"
#include "model/outbox_model.h"
#include "properties/alarm_checks.h"
#include "properties/event_fields.h"

namespace durasim::properties {
namespace {

using nlohmann::json;
using namespace fields;
namespace obx = outbox_events;

// The application's own table (workloads/account.h), which removing the outbox schema must keep.
constexpr char kApplicationTable[] = "account_balances";
// OBX-16's bound per backlog batch: the longest default retry delay (outbox.md 1), then the
// publish deadline and the alarm's minimum delay.
constexpr int64_t kMaxRetryDelayMs = 300'000;
// The pending rows of every scheduler participant (scheduler.md 3.1), for the SCH-02 window.
constexpr const char* kPendingNext[] = {
    "SELECT MIN(next_attempt_at) AS next FROM " DURASIM_OUTBOX,
    "SELECT MIN(next_attempt_at) AS next FROM " DURASIM_ALARMS " WHERE status = 'pending'",
    "SELECT MIN(next_attempt_at) AS next FROM " DURASIM_FANOUT_DELIVERIES " WHERE status = 'pending'",
};
constexpr const char* kPendingTables[] = {DURASIM_OUTBOX, DURASIM_ALARMS, DURASIM_FANOUT_DELIVERIES};

std::string named(const std::pair<std::string, std::string>& row) { return row.first + "/" + row.second; }

// Whether an event of an object of the class feeds a check: the outbox's and the application's
// events, the runtime's storage events and the reconciles.
bool followed(EventType ev) {
  constexpr std::string_view kApp = "app.obx.";
  return ev.substr(0, obx::kPrefix.size()) == obx::kPrefix || ev.substr(0, kApp.size()) == kApp || ev == "fault" || ev == "commit" ||
         ev == "commit.noop" || ev == "confirm" || ev == "durability" || ev == "commit.failed" || ev == "incarnation.end" ||
         ev == scheduler_events::kReconcile;
}

}  // namespace

OutboxChecks::OutboxChecks(StoreReader reader, std::string className)
    : ObjectChecker(std::move(className)),
      reader_(std::move(reader)),
      history_(HistoryGraph::Options{.follows = [this](std::string_view label) { return of_class(label, className_) || of_class(label, obx::kSinkClass); },
                                     .outboxVersions = true},
               &tallies_) {}

void OutboxChecks::Facts::apply(const Write& w) {
  using Kind = Write::Kind;
  const auto row = rows.find(w.row);
  const bool same = row != rows.end() && row->second.generation == w.generation;
  switch (w.kind) {
    case Kind::stage:
    case Kind::abortedStage:
      maxVersion = std::max(maxVersion, w.version);
      rows[w.row] = Write::Stored{w.generation, w.value, w.version, 0, w.due};
      last[w.row] = Stage{w.version, w.value, w.at};
      return;
    case Kind::claim:
      if (same && row->second.attempt + 1 == w.attempt) {
        row->second.attempt = w.attempt;
        row->second.due = w.due;
      }
      return;
    case Kind::ack:
      if (same) rows.erase(row);
      return;
    case Kind::retry:
      if (same && row->second.attempt == w.attempt) row->second.due = w.due;
      return;
    case Kind::postpone:
      for (auto& [key, stored] : rows)
        if (key.first == w.row.first && stored.due <= w.now) stored.due = w.due;
      return;
    case Kind::dropSchema:  // migrate(none): versions start again at 1 (outbox.md 8)
      *this = Facts{};
      return;
    case Kind::resync:
      rows = w.rows;
      return;
  }
}

std::string OutboxChecks::invariant_for(EventType ev) const {
  if (ev == obx::kStageWrite) return "OBX-01";
  if (ev == obx::kAppAborted) return "OBX-04";
  if (ev == obx::kClaimWrite) return "OBX-08";
  if (ev == obx::kPublish) return "OBX-06";
  if (ev == obx::kOptions) return "OBX-07";
  if (ev == obx::kSettleWrite) return "OBX-10";
  if (ev == obx::kPassBegin || ev == obx::kPassEnd) return "OBX-12";
  if (ev == obx::kPostponeWrite || ev == obx::kAppChannels) return "OBX-13";
  if (ev == obx::kAppSinkWrite) return "OBX-14";
  if (ev == "workload.config") return "OBX-16";
  if (ev == obx::kMark || ev == obx::kPublished) return "OBX-18";
  if (ev == obx::kAppMigratedNone) return "OBX-19";
  if (ev == scheduler_events::kReconcile) return "OBX-20";
  return "OBX-03";
}

OutboxChecks::IncarnationState& OutboxChecks::incarnation(const EventFields& e) { return incarnations_.at(label(e), num(e, "incarnation")); }

bool OutboxChecks::hasTables(const std::string& object) const {
  return reader_.hasTable(object, DURASIM_OUTBOX) && reader_.hasTable(object, DURASIM_OUTBOX_SEQ);
}

bool OutboxChecks::attached(const IncarnationState& inc, const std::string& channel) const {
  return inc.channels ? inc.channels->count(channel) > 0 : inc.options.count(channel) > 0;
}

OutboxChecks::Options OutboxChecks::optionsOf(const IncarnationState& inc, const std::string& channel) const {
  const auto found = inc.options.find(channel);
  return found != inc.options.end() ? found->second : config_;
}

std::optional<OutboxChecks::Write::Stored> OutboxChecks::storedRow(const std::string& object, const Key& row) {
  if (!hasTables(object)) return std::nullopt;
  const std::optional<SqlRow> r = reader_(object,
                                          "SELECT version, value, generation_id, attempt, next_attempt_at FROM " DURASIM_OUTBOX
                                          " WHERE channel = ? AND key = ?",
                                          {row.first, row.second})
                                      .next();
  if (!r) return std::nullopt;
  return Write::Stored{r->text("generation_id"), r->text("value"), r->int64("version"), r->int64("attempt"), r->int64("next_attempt_at")};
}

void OutboxChecks::observe(EventType ev, const EventFields& e) {
  history_.observe(observing());
  if (ev == "workload.config") {
    if (config_of_class(e, className_)) onConfig(e);
    return;
  }
  const json* object = e.find("object");
  if (object && object->is_string() && of_class(object->get_ref<const std::string&>(), obx::kSinkClass)) return onSink(ev, e);
  if (!followed(ev) || !mine(e) || !e.contains("incarnation")) return;
  IncarnationState& inc = incarnation(e);
  ObjectState& obj = objects_[label(e)];
  auto durable = [&](const auto& txn) { onDurable(obj, txn.edits); };
  if (ev == "fault") {
    // A failed statement rolls back its savepoint without a trace event: the writes noted so far
    // may not have happened, so the commit reads them back from the store (validated()).
    if (text(e, "fault") == "storage.statement_error") inc.uncertain = true;
    return;
  }
  if (ev == "commit" || ev == "commit.noop") return onCommit(e, ev == "commit.noop");
  if (ev == "confirm") return obj.commits.confirm(e.at("commit").get<uint64_t>(), durable);
  if (ev == "durability") return obj.commits.decide(static_cast<std::size_t>(std::max<int64_t>(num(e, "kept"), 0)), durable, [](const auto&) {});
  if (ev == "commit.failed" || ev == "incarnation.end") {
    inc.open.clear();
    inc.uncertain = inc.engineWrites = false;
    inc.reconcile.reset();
    return;
  }
  if (ev == scheduler_events::kReconcile) {
    inc.reconcile = Reconcile{num(e, "now"), num(e, "min_delay"), optInt(e.at("before")), optInt(e.at("written"))};
    return;
  }
  if (ev == obx::kOptions) {
    inc.options[text(e, "channel")] = Options{num(e, "maxBatchSize"), num(e, "batchDelayMs"), num(e, "attemptTimeoutMs")};
    return;
  }
  if (ev == obx::kAppChannels) {
    inc.channels = e.at("channels").get<std::set<std::string>>();
    return;
  }
  if (ev == obx::kStageWrite) return onStage(e, inc);
  if (ev == obx::kAppAborted) return onAborted(e, inc);
  if (ev == obx::kAppMigratedNone) return onMigratedNone(e, inc);
  if (ev == obx::kClaimWrite) return onClaim(e, inc);
  if (ev == obx::kPublish) return onPublish(e, inc);
  if (ev == obx::kMark) return onMark(e, inc);
  if (ev == obx::kSettleWrite) return onSettle(e, inc);
  if (ev == obx::kPostponeWrite) return onPostpone(e, inc);
  if (ev == obx::kPassBegin) {
    // OBX-12: at most one pass per channel per incarnation.
    const std::string channel = text(e, "channel");
    tallies_.check("OBX-12", inc.passes.insert(channel).second, [&] { return label(e) + " began a second pass of channel " + channel; });
  } else if (ev == obx::kPassEnd) {
    inc.passes.erase(text(e, "channel"));
  } else if (ev == obx::kPublished) {
    const auto batch = inc.batches.find(text(e, "channel"));
    if (batch == inc.batches.end()) return;
    batch->second.closed = true;
    batch->second.failed = e.at("threw").get<bool>() || e.at("timedOut").get<bool>();
  }
}

void OutboxChecks::onConfig(const EventFields& e) {
  if (e.contains("channels")) channels_ = strings(e, "channels");
  config_.maxBatchSize = e.value("maxBatchSize", config_.maxBatchSize);
  config_.batchDelayMs = e.value("batchDelayMs", config_.batchDelayMs);
  config_.attemptTimeoutMs = e.value("attemptTimeoutMs", config_.attemptTimeoutMs);
  alarmMinDelayMs_ = e.value("alarmMinDelayMs", alarmMinDelayMs_);
  if (!e.contains("retry")) return;
  retryKind_ = text(e.at("retry"), "kind");
  if (retryKind_ == "fixed") retryDelayMs_ = num(e.at("retry"), "delayMs");
}

// ---------------------------------------------------------------------------------------------
// Commits of an object: its writes count, and the rows it left are judged

void OutboxChecks::onCommit(const EventFields& e, bool unchanged) {
  const std::string& object = label(e);
  IncarnationState& inc = incarnation(e);
  ObjectState& obj = objects_[object];
  const bool uncertain = inc.uncertain;
  const std::optional<Reconcile> reconcile = inc.reconcile;
  const std::vector<Write> writes = validated(object, inc, num(e, "t"));
  // A stage, claim, settlement or postponement it holds (judged only when no failed statement may
  // have undone part of the transaction).
  const bool outboxCommit = !uncertain && (inc.engineWrites || std::any_of(writes.begin(), writes.end(), [](const Write& w) {
                                             return w.kind == Write::Kind::stage || w.kind == Write::Kind::abortedStage;
                                           }));
  inc.open.clear();
  inc.uncertain = inc.engineWrites = false;
  inc.reconcile.reset();
  for (const Write& w : writes) obj.commits.stage(w);
  const bool tables = hasTables(object);
  // The rows the commit left, against its writes; a difference is reported once, then taken over.
  // (A commit without outbox writes changes no row; a row it changed all the same is found at the
  // next commit that has some.)
  if (tables && outboxCommit)
    if (std::optional<Write> resync = checkRows(object, writes)) obj.commits.stage(std::move(*resync));
  uint64_t commit = 0;
  if (unchanged) {
    obj.commits.commit_unchanged([&](const auto& txn) { onDurable(obj, txn.edits); });
  } else {
    commit = e.at("commit").get<uint64_t>();
    obj.commits.commit(commit);
  }
  // The claim of a pass: the batch its publish must carry.
  for (const Write& w : writes) {
    if (w.kind != Write::Kind::claim) continue;
    Batch& batch = inc.batches[w.row.first];
    if (batch.commit != commit || batch.published) {
      batch = Batch{};
      batch.commit = commit;
    }
    batch.entries[w.row.second] = Claimed{w.generation, w.version, w.attempt};
  }
  if (!tables) return;
  if (!outboxCommit) return;
  // OBX-20: a stage, claim, settlement or postponement reconciles the alarm in its transaction.
  tallies_.check("OBX-20", reconcile.has_value(), [&] { return object + " committed outbox writes without reconciling the alarm"; });
  if (!reconcile) return;
  // A commit that changed nothing leaves the alarm the reconcile wrote or found.
  const std::optional<int64_t> alarm = unchanged ? (reconcile->written ? reconcile->written : reconcile->before) : optInt(e.at("alarm"));
  checkAlarm(object, *reconcile, alarm);
}

// The open transaction's writes as its commit keeps them. After a failed statement some of them
// were undone with their savepoint: a stage counts if the store still holds it (or a later write of
// this transaction replaced it) below the stored counter, a claim if its row holds it, and the rows
// themselves are taken from the store.
std::vector<OutboxChecks::Write> OutboxChecks::validated(const std::string& object, IncarnationState& inc, int64_t at) {
  std::vector<Write> writes = std::move(inc.open);
  for (Write& w : writes) w.at = at;
  if (!inc.uncertain || !hasTables(object)) return writes;
  Write resync;
  resync.kind = Write::Kind::resync;
  resync.rows = readRows(object);
  const int64_t counter = reader_(object, "SELECT next_version FROM " DURASIM_OUTBOX_SEQ " WHERE id = 1").one().int64("next_version");
  std::vector<Write> kept;
  for (std::size_t i = 0; i < writes.size(); ++i) {
    const Write& w = writes[i];
    const auto stored = resync.rows.find(w.row);
    const bool holds = stored != resync.rows.end() && stored->second.generation == w.generation;
    const bool replaced = std::any_of(writes.begin() + static_cast<std::ptrdiff_t>(i) + 1, writes.end(),
                                      [&](const Write& later) { return later.row == w.row && later.kind == Write::Kind::stage; });
    const bool stage = w.kind == Write::Kind::stage || w.kind == Write::Kind::abortedStage;
    if ((stage && w.version < counter && (holds || replaced)) || (w.kind == Write::Kind::claim && holds && stored->second.attempt == w.attempt))
      kept.push_back(w);
  }
  kept.push_back(std::move(resync));
  return kept;
}

// A commit is durable: the stages it holds are what a sink may store (OBX-14), even after a later
// migrate(none) (a publication in flight may still land).
void OutboxChecks::onDurable(ObjectState& obj, const std::vector<Write>& writes) {
  for (const Write& w : writes)
    if (w.kind == Write::Kind::stage) obj.history[w.row][w.version] = w.value;
}

// Every stored row of the object.
std::map<OutboxChecks::Key, OutboxChecks::Write::Stored> OutboxChecks::readRows(const std::string& object) {
  std::map<Key, Write::Stored> rows;
  for (const SqlRow& r :
       reader_(object, "SELECT channel, key, version, value, generation_id, attempt, next_attempt_at FROM " DURASIM_OUTBOX).toVector())
    rows[{r.text("channel"), r.text("key")}] =
        Write::Stored{r.text("generation_id"), r.text("value"), r.int64("version"), r.int64("attempt"), r.int64("next_attempt_at")};
  return rows;
}

// The rows a commit left, against the writes it commits (staged): OBX-02, 03, 04, 05, 09. Returns
// the stored rows to take over when they differ from what the writes give.
std::optional<OutboxChecks::Write> OutboxChecks::checkRows(const std::string& object, const std::vector<Write>& writes) {
  const Facts& facts = objects_[object].commits.staged();
  Write resync;
  resync.kind = Write::Kind::resync;
  resync.rows = readRows(object);
  const std::map<Key, Write::Stored>& stored = resync.rows;
  std::set<int64_t> versions;
  bool unique = true;
  int64_t highest = 0;
  for (const auto& [key, row] : stored) {
    unique = versions.insert(row.version).second && unique;
    highest = std::max(highest, row.version);
    // OBX-03: a row holds its key's last committed stage (the row that stage wrote, while the
    // writes keep it).
    const auto expected = facts.rows.find(key);
    const auto last = facts.last.find(key);
    const bool holds = expected != facts.rows.end()
                           ? expected->second.version == row.version && expected->second.value == row.value &&
                                 expected->second.generation == row.generation
                           : last != facts.last.end() && last->second.version == row.version && last->second.value == row.value;
    tallies_.check("OBX-03", holds, [&] {
      return object + " row " + named(key) + " holds version " + str(row.version) + " generation " + row.generation + " value " + row.value +
             ", the last committed stage is " +
             (expected != facts.rows.end() ? str(expected->second.version) + " generation " + expected->second.generation + " value " + expected->second.value
              : last != facts.last.end()   ? str(last->second.version) + " value " + last->second.value
                                           : std::string("none"));
    });
  }
  // OBX-02: the counter lies above every row and every committed version; versions are unique.
  const int64_t counter = reader_(object, "SELECT next_version FROM " DURASIM_OUTBOX_SEQ " WHERE id = 1").one().int64("next_version");
  tallies_.check("OBX-02", unique && counter > highest && counter > facts.maxVersion, [&] {
    return object + " counter next_version " + str(counter) + " against row versions up to " + str(highest) + (unique ? "" : " (repeated)") +
           " and committed versions up to " + str(facts.maxVersion);
  });
  // OBX-04: a stage of an aborted application transaction that committed on its own left its row.
  for (const Write& w : writes) {
    if (w.kind != Write::Kind::abortedStage) continue;
    const auto row = stored.find(w.row);
    tallies_.check("OBX-04", row == stored.end() || row->second.generation != w.generation, [&] {
      return object + " stores version " + str(w.version) + " of " + named(w.row) + ", staged by an aborted application transaction";
    });
  }
  // OBX-05 / OBX-09: a row the writes keep is still stored; an acknowledgement of another
  // generation must not have removed it, and nothing else removes rows.
  for (const Write& w : writes) {
    if (w.kind != Write::Kind::ack) continue;
    const auto kept = facts.rows.find(w.row);
    tallies_.check("OBX-05", kept == facts.rows.end() || stored.count(w.row) > 0, [&] {
      return object + " acknowledgement of " + named(w.row) + " generation " + w.generation + " deleted the row of newer generation " +
             kept->second.generation + " (version " + str(kept->second.version) + ")";
    });
  }
  std::vector<std::string> vanished;
  for (const auto& [key, row] : facts.rows) {
    const bool acked = std::any_of(writes.begin(), writes.end(), [&](const Write& w) { return w.kind == Write::Kind::ack && w.row == key; });
    if (!stored.count(key) && !acked) vanished.push_back(named(key) + " version " + str(row.version));
  }
  tallies_.check("OBX-09", vanished.empty(), [&] {
    return object + " no longer stores " + json(vanished).dump() + " although no acknowledgement of it committed";
  });
  if (stored == facts.rows) return std::nullopt;
  return resync;
}

// OBX-20: SCH-02 after the commit, `next` read from every participant's pending rows.
void OutboxChecks::checkAlarm(const std::string& object, const Reconcile& r, std::optional<int64_t> alarm) {
  std::optional<int64_t> next;
  for (std::size_t i = 0; i < std::size(kPendingTables); ++i) {
    if (!reader_.hasTable(object, kPendingTables[i])) continue;
    const std::optional<int64_t> earliest = reader_(object, kPendingNext[i]).one().optInt64("next");
    if (earliest && (!next || *earliest < *next)) next = earliest;
  }
  if (!next) {
    // While the platform's alarm handler runs, the firing alarm is hidden from the reconcile
    // (runtime.md 7.3), and the runtime deletes it when the handler succeeds.
    const bool hidden = !r.before && !r.written;
    tallies_.check("OBX-20", !alarm || hidden, [&] { return object + " keeps an alarm at " + str(alarm) + " with no row pending"; });
    return;
  }
  const int64_t target = std::max(*next, r.now + r.minDelay);
  tallies_.check("OBX-20", alarm && *next <= *alarm && *alarm <= target, [&] {
    return object + " committed outbox writes leaving the alarm at " + str(alarm) + ", outside [" + str(*next) + ", " + str(target) + "]";
  });
}

// ---------------------------------------------------------------------------------------------
// Writes (each counts once its transaction commits)

// OBX-01: a version above every committed one and every one this transaction staged before; OBX-11:
// the row first due on the batch window; OBX-04: not a stage an aborted transaction reported.
void OutboxChecks::onStage(const EventFields& e, IncarnationState& inc) {
  const std::string& object = label(e);
  ObjectState& obj = objects_[object];
  Write w;
  w.row = {text(e, "channel"), text(e, "key")};
  w.generation = text(e, "generation");
  w.value = text(e, "value");
  w.version = num(e, "version");
  w.due = num(e, "firstAttemptAt");
  if (const auto late = obj.lateAborts.find(w.row); late != obj.lateAborts.end()) {
    tallies_.check("OBX-04", false, [&] {
      return object + " staged " + named(w.row) + " version " + str(w.version) + " after the application transaction that staged it aborted";
    });
    w.kind = Write::Kind::abortedStage;
    if (--late->second == 0) obj.lateAborts.erase(late);
  }
  int64_t above = obj.commits.local().maxVersion;
  if (!inc.uncertain)  // after a failed statement, a version of an undone stage may be given again
    for (const Write& staged : inc.open)
      if (staged.kind == Write::Kind::stage) above = std::max(above, staged.version);
  tallies_.check("OBX-01", w.version > above, [&] {
    return object + " staged " + named(w.row) + " at version " + str(w.version) + ", not above " + str(above) + " committed or staged before";
  });
  const int64_t at = num(e, "at");
  const int64_t expected = model::firstAttemptAt(at, optionsOf(inc, w.row.first).batchDelayMs);
  const std::optional<Write::Stored> row = storedRow(object, w.row);
  tallies_.check("OBX-11", w.due == expected && (!hasTables(object) || (row && row->due == expected && row->attempt == 0)), [&] {
    return object + " stage of " + named(w.row) + " at " + str(at) + " is first due at " + str(row ? std::optional<int64_t>(row->due) : std::nullopt) +
           " (reported " + str(w.due) + "), not " + str(expected);
  });
  inc.open.push_back(std::move(w));
}

// OBX-04: the stages an aborted application transaction made are gone with it: their writes leave
// the open transaction, and the store shows neither their rows nor their versions in the counter. A
// stage it reported that the transaction did not hold was made elsewhere: its later write is caught.
void OutboxChecks::onAborted(const EventFields& e, IncarnationState& inc) {
  const std::string& object = label(e);
  ObjectState& obj = objects_[object];
  for (const json& s : e.at("staged")) {
    const Key key{text(s, "channel"), text(s, "key")};
    const int64_t version = num(s, "version");
    const auto staged = std::find_if(inc.open.rbegin(), inc.open.rend(),
                                     [&](const Write& w) { return w.kind == Write::Kind::stage && w.row == key && w.version == version; });
    if (staged != inc.open.rend()) inc.open.erase(std::next(staged).base());
    else ++obj.lateAborts[key];
    if (!hasTables(object)) continue;
    const std::optional<Write::Stored> row = storedRow(object, key);
    const int64_t counter = reader_(object, "SELECT next_version FROM " DURASIM_OUTBOX_SEQ " WHERE id = 1").one().int64("next_version");
    tallies_.check("OBX-04", (!row || row->version != version) && counter <= version, [&] {
      return object + " still shows version " + str(version) + " of " + named(key) + " after its application transaction aborted (row version " +
             str(row ? std::optional<int64_t>(row->version) : std::nullopt) + ", counter " + str(counter) + ")";
    });
  }
}

// OBX-19: migrate(none) removed both outbox tables and the outbox's history rows, and kept the
// application's table. From then on the account has no outbox.
void OutboxChecks::onMigratedNone(const EventFields& e, IncarnationState& inc) {
  const std::string& object = label(e);
  objects_[object].retired = true;
  const bool outbox = reader_.hasTable(object, DURASIM_OUTBOX), seq = reader_.hasTable(object, DURASIM_OUTBOX_SEQ);
  const int64_t history =
      reader_.hasTable(object, DURASIM_MIGRATIONS)
          ? reader_(object, "SELECT count(*) AS n FROM " DURASIM_MIGRATIONS " WHERE capability = ?", {std::string("outbox")}).one().int64("n")
          : 0;
  const bool application = reader_.hasTable(object, kApplicationTable);
  tallies_.check("OBX-19", !outbox && !seq && history == 0 && application, [&] {
    return object + " after migrate(none): outbox table " + (outbox ? "kept" : "gone") + ", counter " + (seq ? "kept" : "gone") + ", " +
           str(history) + " outbox history rows, application table " + (application ? "kept" : "gone");
  });
  Write drop;
  drop.kind = Write::Kind::dropSchema;
  inc.open.push_back(std::move(drop));
}

// OBX-06: a claim takes the committed row of that generation and version, at its next attempt;
// OBX-08: only a due row, due again at claimAt + attemptTimeoutMs; OBX-12: a row of its own channel;
// OBX-13: only on an attached channel.
void OutboxChecks::onClaim(const EventFields& e, IncarnationState& inc) {
  inc.engineWrites = true;
  const std::string& object = label(e);
  const std::string channel = text(e, "channel");
  const int64_t claimAt = num(e, "claimAt"), deadline = num(e, "deadline");
  const Options options = optionsOf(inc, channel);
  const json& claimed = e.at("claimed");
  tallies_.check("OBX-13", attached(inc, channel) || claimed.empty(), [&] { return object + " claimed rows of unattached channel " + channel; });
  tallies_.check("OBX-08", deadline == claimAt + options.attemptTimeoutMs, [&] {
    return object + " claim of " + channel + " at " + str(claimAt) + " set deadline " + str(deadline) + ", attemptTimeoutMs being " +
           str(options.attemptTimeoutMs);
  });
  const Facts& facts = objects_[object].commits.local();
  for (const json& c : claimed) {
    Write w;
    w.kind = Write::Kind::claim;
    w.row = {channel, text(c, "key")};
    w.generation = text(c, "generation");
    w.version = num(c, "version");
    w.attempt = num(c, "attempt");
    w.due = deadline;
    const auto before = facts.rows.find(w.row);
    const bool committed = before != facts.rows.end() && before->second.generation == w.generation;
    tallies_.check("OBX-06", committed && before->second.version == w.version && before->second.attempt + 1 == w.attempt, [&] {
      return object + " claimed " + named(w.row) + " version " + str(w.version) + " generation " + w.generation + " for attempt " + str(w.attempt) +
             ", not its committed row's next attempt";
    });
    // OBX-12: the claim of one channel takes no row of another.
    const auto foreign = std::find_if(facts.rows.begin(), facts.rows.end(), [&](const auto& row) {
      return row.first.first != channel && row.first.second == w.row.second && row.second.generation == w.generation;
    });
    tallies_.check("OBX-12", foreign == facts.rows.end(), [&] {
      return object + " pass of " + channel + " claimed " + named(foreign->first) + " version " + str(foreign->second.version);
    });
    if (committed)
      tallies_.check("OBX-08", before->second.due <= claimAt, [&] {
        return object + " claimed " + named(w.row) + " at " + str(claimAt) + " before it was due at " + str(before->second.due);
      });
    if (hasTables(object)) {
      const std::optional<Write::Stored> row = storedRow(object, w.row);
      tallies_.check("OBX-08", row && row->generation == w.generation && row->attempt == w.attempt && row->due == deadline, [&] {
        return object + " claimed row " + named(w.row) + " is not stored at attempt " + str(w.attempt) + " due at " + str(deadline);
      });
    }
    inc.open.push_back(std::move(w));
  }
}

// OBX-07: 1..maxBatchSize entries, each key once; OBX-06: exactly the pass's committed claim;
// OBX-12: within a pass of the channel; OBX-13: of an attached channel; OBX-17: the claim durable
// before the call, and no outbox write open while it runs.
void OutboxChecks::onPublish(const EventFields& e, IncarnationState& inc) {
  const std::string& object = label(e);
  const std::string channel = text(e, "channel");
  const json& entries = e.at("entries");
  const int64_t size = static_cast<int64_t>(entries.size());
  const int64_t maxBatchSize = optionsOf(inc, channel).maxBatchSize;
  std::set<std::string> keys;
  for (const json& entry : entries) keys.insert(text(entry, "key"));
  tallies_.check("OBX-07", size >= 1 && size <= maxBatchSize && static_cast<int64_t>(keys.size()) == size, [&] {
    return object + " published " + str(size) + " entries (" + str(static_cast<int64_t>(keys.size())) + " keys) on " + channel +
           ", maxBatchSize being " + str(maxBatchSize);
  });
  tallies_.check("OBX-12", inc.passes.count(channel) > 0, [&] { return object + " published on " + channel + " outside a pass of it"; });
  tallies_.check("OBX-13", attached(inc, channel), [&] { return object + " published on unattached channel " + channel; });
  const auto batch = inc.batches.find(channel);
  bool claimed = batch != inc.batches.end() && !batch->second.published && batch->second.entries.size() == entries.size();
  for (const json& entry : entries) {
    if (!claimed) break;
    const auto found = batch->second.entries.find(text(entry, "key"));
    claimed = found != batch->second.entries.end() && found->second.version == num(entry, "version") && found->second.attempt == num(entry, "attempt");
  }
  tallies_.check("OBX-06", claimed, [&] { return object + " published " + entries.dump() + " on " + channel + ", not the committed claim of its pass"; });
  if (batch == inc.batches.end()) return;
  const auto& unconfirmed = objects_[object].commits.unconfirmed();
  const bool durable = unconfirmed.empty() || unconfirmed.front().commit > batch->second.commit;
  tallies_.check("OBX-17", durable && inc.open.empty(), [&] {
    return object + " published on " + channel + (durable ? " with outbox writes open" : " before its claim commit was durable");
  });
  batch->second.published = true;
}

// OBX-18: a mark is accepted only while its batch is open; the last explicit delay given counts.
void OutboxChecks::onMark(const EventFields& e, IncarnationState& inc) {
  if (!e.at("refused").is_null()) return;
  const std::string& object = label(e);
  const std::string channel = text(e, "channel"), key = text(e, "key");
  const int64_t version = num(e, "version");
  const auto batch = inc.batches.find(channel);
  const bool open = batch != inc.batches.end() && batch->second.published && !batch->second.closed && batch->second.entries.count(key) > 0 &&
                    batch->second.entries.at(key).version == version;
  tallies_.check("OBX-18", open, [&] { return object + " accepted a retry mark of " + channel + "/" + key + " version " + str(version) + " outside an open batch"; });
  if (!open) return;
  std::optional<int64_t>& delay = batch->second.marks[key];
  if (!e.at("delayMs").is_null()) delay = num(e, "delayMs");
}

// OBX-05: an acknowledgement carries its entry's claimed generation; OBX-10: entries of a failed
// batch and marked entries are rescheduled by their delay, never acknowledged; OBX-13: no
// acknowledgement on an unattached channel.
void OutboxChecks::onSettle(const EventFields& e, IncarnationState& inc) {
  inc.engineWrites = true;
  const std::string& object = label(e);
  const std::string channel = text(e, "channel");
  const int64_t at = num(e, "at");
  const auto found = inc.batches.find(channel);
  const Batch* batch = found != inc.batches.end() && found->second.closed ? &found->second : nullptr;
  const json& acked = e.at("acked");
  tallies_.check("OBX-13", attached(inc, channel) || acked.empty(), [&] { return object + " acknowledged rows of unattached channel " + channel; });
  for (const json& a : acked) {
    Write w;
    w.kind = Write::Kind::ack;
    w.row = {channel, text(a, "key")};
    w.generation = text(a, "generation");
    const auto entry = batch ? batch->entries.find(w.row.second) : std::map<std::string, Claimed>::const_iterator();
    tallies_.check("OBX-05", batch && entry != batch->entries.end() && entry->second.generation == w.generation, [&] {
      return object + " acknowledged " + named(w.row) + " generation " + w.generation + ", not an entry of its closed batch";
    });
    tallies_.check("OBX-10", batch && !batch->failed && !batch->marks.count(w.row.second), [&] {
      return object + " acknowledged " + named(w.row) + " although its batch failed or the entry was marked for retry";
    });
    inc.open.push_back(std::move(w));
  }
  const Facts& facts = objects_[object].commits.local();
  for (const json& r : e.at("retried")) {
    Write w;
    w.kind = Write::Kind::retry;
    w.row = {channel, text(r, "key")};
    w.generation = text(r, "generation");
    w.attempt = num(r, "attempt");
    w.due = num(r, "next");
    if (batch) checkRetryDelay(object, r, *batch, at);
    else tallies_.check("OBX-10", false, [&] { return object + " rescheduled " + named(w.row) + " outside a closed batch"; });
    const auto before = facts.rows.find(w.row);
    if (hasTables(object) && before != facts.rows.end() && before->second.generation == w.generation && before->second.attempt == w.attempt) {
      const std::optional<Write::Stored> row = storedRow(object, w.row);
      tallies_.check("OBX-10", row && row->due == w.due, [&] {
        return object + " rescheduled " + named(w.row) + " to " + str(w.due) + " but the row is due at " + str(row ? std::optional<int64_t>(row->due) : std::nullopt);
      });
    }
    inc.open.push_back(std::move(w));
  }
}

// OBX-10: next = at + delay; an explicit mark's delay exactly, a fixed policy's exactly, otherwise
// the default's bounds for the claimed attempt (an invalid policy falls back to the default).
void OutboxChecks::checkRetryDelay(const std::string& object, const json& retried, const Batch& batch, int64_t at) {
  const std::string key = text(retried, "key");
  const int64_t attempt = num(retried, "attempt"), delay = num(retried, "next") - at;
  const auto mark = batch.marks.find(key);
  std::optional<int64_t> exact;
  if (mark != batch.marks.end() && mark->second) exact = mark->second;
  else if (retryKind_ == "fixed") exact = retryDelayMs_;
  const model::TimeRange allowed = exact ? model::TimeRange{*exact, *exact} : model::defaultDelayRange(attempt);
  tallies_.check("OBX-10", allowed.contains(delay), [&] {
    return object + " rescheduled " + key + " attempt " + str(attempt) + " by " + str(delay) + " ms, not in [" + str(allowed.lo) + ", " + str(allowed.hi) +
           "] (" + (mark != batch.marks.end() && mark->second ? "explicit mark" : retryKind_ + " policy") + ")";
  });
}

// OBX-13: only a channel the incarnation does not attach is postponed: its due rows by exactly
// 60000 ms from the pass, attempt kept, the others untouched.
void OutboxChecks::onPostpone(const EventFields& e, IncarnationState& inc) {
  inc.engineWrites = true;
  const std::string& object = label(e);
  const std::string channel = text(e, "channel");
  const int64_t until = num(e, "until"), now = until - model::kOutboxUnattachedDelayMs;
  tallies_.check("OBX-13", !attached(inc, channel) && std::abs(now - num(e, "t")) <= AlarmChecks::kClockOffsetMs, [&] {
    return object + " postponed channel " + channel + " until " + str(until) + " at " + str(num(e, "t")) +
           (attached(inc, channel) ? ", a channel it attaches" : "");
  });
  Write w;
  w.kind = Write::Kind::postpone;
  w.row = {channel, ""};
  w.due = until;
  w.now = now;
  if (hasTables(object)) {
    const Facts& facts = objects_[object].commits.local();
    int64_t due = 0;
    for (const SqlRow& r : reader_(object, "SELECT key, generation_id, attempt, next_attempt_at FROM " DURASIM_OUTBOX " WHERE channel = ?", {channel}).toVector()) {
      const Key key{channel, r.text("key")};
      const auto before = facts.rows.find(key);
      if (before == facts.rows.end() || before->second.generation != r.text("generation_id")) continue;
      const bool wasDue = before->second.due <= now;
      due += wasDue ? 1 : 0;
      const int64_t expected = wasDue ? until : before->second.due;
      tallies_.check("OBX-13", r.int64("attempt") == before->second.attempt && r.int64("next_attempt_at") == expected, [&] {
        return object + " postponement left " + named(key) + " at attempt " + str(r.int64("attempt")) + " due " + str(r.int64("next_attempt_at")) +
               ", not attempt " + str(before->second.attempt) + " due " + str(expected);
      });
    }
    tallies_.check("OBX-13", num(e, "postponed") == due, [&] {
      return object + " postponed " + str(num(e, "postponed")) + " rows of " + channel + ", " + str(due) + " were due";
    });
  }
  inc.open.push_back(std::move(w));
}

// ---------------------------------------------------------------------------------------------
// The sink (OBX-14, OBX-15), judged from the rows it stores at its commits

void OutboxChecks::onSink(EventType ev, const EventFields& e) {
  if (!e.contains("incarnation")) return;
  SinkState& sink = sinks_[label(e)];
  const int64_t incarnation = num(e, "incarnation");
  if (ev == obx::kAppSinkWrite) {
    const std::string source = text(e, "source");
    if (of_class(source, className_)) sink.open[incarnation].insert({source, text(e, "channel"), text(e, "key")});
  } else if (ev == "commit") {
    onSinkCommit(e, false);
  } else if (ev == "commit.noop") {
    onSinkCommit(e, true);
  } else if (ev == "confirm") {
    sink.commits.confirm(e.at("commit").get<uint64_t>());
  } else if (ev == "durability") {
    sink.commits.decide(static_cast<std::size_t>(std::max<int64_t>(num(e, "kept"), 0)));
  } else if (ev == "commit.failed" || ev == "incarnation.end") {
    sink.open.erase(incarnation);
  }
}

// OBX-14: per (source, channel, key) the stored version never decreases, and what is stored is a
// durable committed stage of that source; OBX-15: counted where the sink skipped versions.
void OutboxChecks::onSinkCommit(const EventFields& e, bool unchanged) {
  const std::string& label = ObjectChecker::label(e);
  SinkState& sink = sinks_[label];
  const std::set<SinkKey> written = std::move(sink.open[num(e, "incarnation")]);
  sink.open.erase(num(e, "incarnation"));
  const SinkFacts& facts = sink.commits.local();
  for (const SinkKey& key : written) {
    const auto& [source, channel, name] = key;
    const std::optional<SqlRow> r = reader_(label, std::string("SELECT version, value FROM ") + std::string(obx::kSinkTable) +
                                                       " WHERE source = ? AND channel = ? AND key = ?",
                                            {source, channel, name})
                                        .next();
    if (!r) continue;
    const SinkFacts::Held held{r->int64("version"), r->text("value"), num(e, "t")};
    const auto before = facts.held.find(key);
    if (before != facts.held.end() && before->second.version == held.version && before->second.value == held.value) continue;
    const int64_t prior = before != facts.held.end() ? before->second.version : 0;
    const std::string what = label + " holds " + source + " " + channel + "/" + name + " version " + str(held.version);
    tallies_.check("OBX-14", held.version >= prior, [&] { return what + " after version " + str(prior); });
    const std::map<int64_t, std::string>& history = objects_[source].history[{channel, name}];
    const auto stage = history.find(held.version);
    tallies_.check("OBX-14", stage != history.end() && stage->second == held.value, [&] {
      return what + " value " + held.value + ", " + (stage == history.end() ? "never a durable stage" : "the stage's value being " + stage->second);
    });
    if (stage != history.end() && history.upper_bound(prior) != stage) tallies_.check("OBX-15", true, [] { return std::string(); });
    sink.commits.stage({key, held});
  }
  if (unchanged) sink.commits.commit_unchanged();
  else sink.commits.commit(e.at("commit").get<uint64_t>());
}

// ---------------------------------------------------------------------------------------------
// Heal and the end of the run

// OBX-16's backlog: the batches needed to publish every row each account holds at heal.
void OutboxChecks::healed(int64_t t) {
  healedAt_ = t;
  for (auto& [object, obj] : objects_) {
    std::map<std::string, int64_t> rows;
    for (const auto& [key, row] : obj.commits.local().rows) ++rows[key.first];
    int64_t batches = 0;
    for (const auto& [channel, n] : rows) batches += (n + std::max<int64_t>(config_.maxBatchSize, 1) - 1) / std::max<int64_t>(config_.maxBatchSize, 1);
    obj.backlogBatches = std::max<int64_t>(batches, 1);
  }
}

// OBX-16: every key a live account ever staged on a configured channel converged: the sink holds
// its last committed stage, the account holds no row of it, and the sink's last write of it came
// within the bound after heal (or after that stage, if later).
void OutboxChecks::finish() {
  history_.finish();
  const int64_t perBatch = kMaxRetryDelayMs + config_.attemptTimeoutMs + alarmMinDelayMs_;
  for (const auto& [object, obj] : objects_) {
    if (obj.retired) continue;
    const bool tables = hasTables(object);
    for (const auto& [key, stage] : obj.commits.local().last) {
      if (std::find(channels_.begin(), channels_.end(), key.first) == channels_.end()) continue;
      const SinkKey sinkKey{object, key.first, key.second};
      std::optional<SinkFacts::Held> held;
      for (const auto& [sink, state] : sinks_) {
        const std::optional<SqlRow> r = reader_(sink, std::string("SELECT version, value FROM ") + std::string(obx::kSinkTable) +
                                                          " WHERE source = ? AND channel = ? AND key = ?",
                                                {object, key.first, key.second})
                                            .next();
        const auto written = state.commits.local().held.find(sinkKey);
        if (r) held = SinkFacts::Held{r->int64("version"), r->text("value"), written != state.commits.local().held.end() ? written->second.at : 0};
      }
      const bool row = tables && storedRow(object, key).has_value();
      tallies_.check("OBX-16", held && held->version == stage.version && held->value == stage.value && !row, [&] {
        return object + " " + named(key) + ": the sink holds " + (held ? "version " + str(held->version) + " value " + held->value : std::string("nothing")) +
               ", the last committed stage is version " + str(stage.version) + " value " + stage.value + (row ? ", and the outbox still holds a row" : "");
      });
      if (!healedAt_ || !held) continue;
      const int64_t from = std::max(*healedAt_, stage.at), deadline = from + perBatch * obj.backlogBatches;
      tallies_.check("OBX-16", held->at <= deadline, [&] {
        return object + " " + named(key) + " reached the sink at " + str(held->at) + ", after " + str(deadline) + " (" + str(obj.backlogBatches) +
               " backlog batches from " + str(from) + ")";
      });
    }
  }
}

}  // namespace durasim::properties
