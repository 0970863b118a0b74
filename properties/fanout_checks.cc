// The FAN checks; see fanout_checks.h.
#include "properties/fanout_checks.h"

#include <algorithm>
#include <tuple>
#include <variant>
#include <utility>

#include "engine/fanout_events.h"
#include "engine/fanout_schema.h"
#include "engine/json_text.h"
#include "model/alarms_model.h"
#include "model/fanout_model.h"
#include "properties/event_fields.h"

namespace durasim::properties {
namespace {

using nlohmann::json;
using namespace fields;

constexpr int64_t kWakeSlackMs = 60'000;
constexpr char kExplicitRetryError[] = "Retry";  // the error a consumer's retry() records (fanout.md 5.2)

std::string deliveryOf(const std::string& generation, const std::string& target) { return jsonStringArray({generation, target}); }

// The target of a delivery row id, json([key, target]).
std::string targetOfRow(const std::string& row) { return parseJson(row).at(1).get<std::string>(); }

// A stored value compared as SQLite compares it with an integer or a text parameter in the WHERE
// clauses the mirror scans stand for: NULL matches nothing; numbers compare by value; text and
// blobs sort after every number (never before a time) and equal only the same text.
bool lessThan(const SqlValue& v, int64_t t, bool orEqual) {
  if (const int64_t* i = std::get_if<int64_t>(&v)) return orEqual ? *i <= t : *i < t;
  if (const double* d = std::get_if<double>(&v)) return orEqual ? *d <= static_cast<double>(t) : *d < static_cast<double>(t);
  return false;
}
bool textEquals(const SqlValue& v, const std::string& text) {
  const std::string* stored = std::get_if<std::string>(&v);
  return stored && *stored == text;
}
bool textDiffers(const SqlValue& v, const std::string& text) { return !std::holds_alternative<SqlNull>(v) && !textEquals(v, text); }
// FAN-10 of one delivery row: its dead-letter reason and time are set exactly in the dead_letter
// phase. False also for a phase that is not text (checkRows then reads every row, and reports it).
bool deadLetterFieldsAgree(const SqlRow& row) {
  const std::string* phase = std::get_if<std::string>(&row.at("phase"));
  if (phase == nullptr) return false;
  const bool dead = *phase == "dead_letter";
  return dead == !row.isNull("dead_letter_reason") && dead == !row.isNull("dead_lettered_at");
}
// A delivery row of `target` due by `now` (WHERE target_id = ? AND next_attempt_at <= ?).
bool dueFor(const SqlRow& row, const std::string& target, int64_t now) {
  return textEquals(row.at("target_id"), target) && lessThan(row.at("next_attempt_at"), now, true);
}

}  // namespace

FanoutChecks::FanoutChecks(StoreReader reader, std::string className)
    : ObjectChecker(std::move(className)),
      reader_(std::move(reader)),
      history_(HistoryGraph::Options{.follows = {}, .fanoutClaims = true}, &tallies_) {}

void FanoutChecks::Facts::apply(const CommitNotes& notes) {
  for (int64_t seq : notes.seqs) maxSeq = std::max(maxSeq, seq);
  deadLettered.insert(notes.intents.begin(), notes.intents.end());
  removed.insert(notes.removals.begin(), notes.removals.end());
  for (const Manifest& m : notes.created) live[m.key] = m;
  for (const RowKey& row : notes.removals) {
    const json id = parseJson(row.first);
    const auto manifest = live.find(id.at(0).get<std::string>());
    if (manifest == live.end() || manifest->second.generation != row.second) continue;
    manifest->second.open.erase(id.at(1).get<std::string>());
    if (manifest->second.open.empty()) live.erase(manifest);
  }
}

void FanoutChecks::CommitNotes::merge(CommitNotes&& other) {
  seqs.insert(seqs.end(), other.seqs.begin(), other.seqs.end());
  claims.insert(claims.end(), other.claims.begin(), other.claims.end());
  intents.insert(intents.end(), other.intents.begin(), other.intents.end());
  removals.insert(removals.end(), other.removals.begin(), other.removals.end());
  created.insert(created.end(), other.created.begin(), other.created.end());
}

std::string FanoutChecks::invariant_for(EventType ev) const {
  if (ev == fanout_events::kEnqueueWrite) return "FAN-05";
  if (ev == fanout_events::kClaimWrite || ev == fanout_events::kAppConsume) return "FAN-06";
  if (ev == fanout_events::kAckWrite) return "FAN-25";
  if (ev == fanout_events::kRemoveWrite || ev == fanout_events::kDeadIntentWrite) return "FAN-11";
  if (ev == fanout_events::kAppStored) return "FAN-19";
  return "FAN-02";
}

FanoutChecks::IncarnationState& FanoutChecks::incarnation(const EventFields& e) { return incarnations_.at(label(e), num(e, "incarnation")); }

// Asked by most handlers: answered once per event (tables change only between events).
bool FanoutChecks::hasTables(const std::string& object) const {
  auto& [askedAt, has] = hasTables_[object];
  if (askedAt != checked_) {
    has = reader_.hasTable(object, DURASIM_FANOUT_MESSAGES) && reader_.hasTable(object, DURASIM_FANOUT_DELIVERIES);
    askedAt = checked_;
  }
  return has;
}

const std::map<int64_t, SqlRow>& FanoutChecks::rowsNow(const std::string& object, TableMirror StoredRows::*table) {
  TableMirror& mirror = stored_[object].*table;
  mirror.refresh(reader_, object);
  return mirror.rows();
}

void FanoutChecks::observe(EventType ev, const EventFields& e) {
  ++checked_;
  history_.observe(observing());
  if (ev == "workload.config") {
    if (config_of_class(e, className_)) onConfig(e);
    return;
  }
  // What happened outside the object, reported by the consumer and by the cold writes.
  if (ev == fanout_events::kAppConsume) {
    const std::string mailbox = text(e, "mailbox");
    if (!of_class(mailbox, className_)) return;
    checkIdentity(mailbox, text(e, "delivery"), text(e, "target"));
    onReceived(mailbox, text(e, "delivery"), num(e, "attempt"), "the consumer");
    return;
  }
  if (ev == fanout_events::kAppStored) {
    if (of_class(text(e, "mailbox"), className_)) onStored(e);
    return;
  }
  if (ev == fanout_events::kAppSettle) {
    if (of_class(text(e, "mailbox"), className_)) onSettled(e);
    return;
  }
  if (ev == fanout_events::kAppMemoCompute || ev == fanout_events::kAppMemo) {
    if (of_class(text(e, "mailbox"), className_)) onMemo(e, ev == fanout_events::kAppMemoCompute);
    return;
  }
  if (!mine(e) || !e.contains("incarnation")) return;
  IncarnationState& inc = incarnation(e);
  const std::string& object = label(e);
  if (!inc.watches.empty() && hasTables(object)) judgeIsolation(e, inc);
  if (ev == fanout_events::kAppTargets) {
    inc.configured = e.at("targets").get<std::set<std::string>>();
    return;
  }
  if (ev == fanout_events::kAppLoad) return onLoad(e);
  if (ev == "fault") {
    // A failed statement rolls back its savepoint without a trace event: the writes noted so far
    // may not have happened, so the commit checks them against the store (validated()).
    if (text(e, "fault") == "storage.statement_error") inc.commits.statement_failed();
    if (text(e, "fault") == "clock.incarnation_offset") inc.clockOffset = num(e.at("details"), "offset");
    return;
  }
  if (ev == "commit") return onCommit(e);
  if (ev == "commit.noop") {
    const CommitNotes notes = inc.commits.notes() = validated(object, inc);
    inc.commits.commit_unchanged([&](const auto& txn) { objects_[object].durable.apply(txn.notes); });
    return committed(object, notes, num(e, "t"));
  }
  if (ev == "confirm") {
    inc.commits.confirm(e.at("commit").get<uint64_t>(), [&](const auto& txn) { objects_[object].durable.apply(txn.notes); });
    return;
  }
  if (ev == "durability") return onDurability(e);
  if (ev == "commit.failed" || ev == "incarnation.end") {
    inc.watches.clear();  // a broken incarnation runs no more passes
    return inc.commits.roll_back();
  }
  if (ev == fanout_events::kEnqueueWrite) {
    checkFirstDue(e);
    checkDedup(e, inc);
    return onEnqueueWrite(e, inc);
  }
  if (ev == fanout_events::kClaimWrite) {
    const std::string target = text(e, "target");
    PassState& pass = inc.passes[target];
    if (pass.openSince)
      tallies_.check("FAN-23", ++pass.claims <= 1, [&] {
        return object + " claimed the batch of one pass of " + target + " in " + str(pass.claims) + " transactions";
      });
    tallies_.check("FAN-18", configured(inc, target) || e.at("claimed").empty(), [&] {
      return object + " claimed rows of " + target + ", a target this incarnation was built without";
    });
    return onClaimWrite(e, inc);
  }
  if (ev == fanout_events::kPassBegin) return onPassBegin(e, inc);
  if (ev == fanout_events::kPassEnd) return onPassEnd(e, inc);
  if (ev == fanout_events::kDue) {
    if (!configured(inc, text(e, "target"))) onUnconfiguredDue(e, inc);
    return onDue(e);
  }
  if (ev == fanout_events::kPostponeWrite) return onPostponeWrite(e, inc);
  if (ev == fanout_events::kDeliver) return onDeliver(e, inc);
  if (ev == fanout_events::kDelivered) return onDelivered(e, inc);
  if (ev == fanout_events::kAckWrite) return onAckWrite(e, inc);
  if (ev == fanout_events::kRemoveWrite) return onRemoveWrite(e, inc);
  if (ev == fanout_events::kRetryWrite) return onRetryWritten(e);
  if (ev == fanout_events::kDeadIntentWrite && e.at("matched").get<bool>()) {
    tallies_.check("FAN-12", dlq_.value_or(true), [&] { return object + " wrote a dead-letter intent without a DLQ"; });
    checkConfiguredRemoval(e, inc, "dead-lettered");
    inc.commits.notes().intents.push_back({text(e, "row"), text(e, "generation")});
  }
}

bool FanoutChecks::configured(const IncarnationState& inc, const std::string& target) const {
  return !inc.configured || inc.configured->count(target) > 0;
}

// FAN-18: a row of a target the incarnation was built without is never removed or dead-lettered.
void FanoutChecks::checkConfiguredRemoval(const EventFields& e, const IncarnationState& inc, const char* what) {
  const std::string row = text(e, "row");
  const std::string target = targetOfRow(row);
  tallies_.check("FAN-18", configured(inc, target), [&] {
    return label(e) + " " + what + " row " + row + " of " + target + ", a target this incarnation was built without";
  });
}

void FanoutChecks::onConfig(const EventFields& e) {
  if (e.contains("maxAttempts")) maxAttempts_ = num(e, "maxAttempts");
  if (e.contains("dlq")) dlq_ = e.at("dlq").get<bool>();
  if (e.contains("maxBatchSize")) maxBatchSize_ = num(e, "maxBatchSize");
  if (e.contains("batchDelayMs")) batchDelayMs_ = num(e, "batchDelayMs");
  if (e.contains("attemptTimeoutMs")) attemptTimeoutMs_ = num(e, "attemptTimeoutMs");
  if (e.contains("ackOnReturn")) ackOnReturn_ = e.at("ackOnReturn").get<bool>();
}

// ---------------------------------------------------------------------------------------------
// Commits

void FanoutChecks::onCommit(const EventFields& e) {
  const std::string object = label(e);
  IncarnationState& inc = incarnation(e);
  const CommitNotes notes = inc.commits.notes() = validated(object, inc);
  inc.commits.commit(e.at("commit").get<uint64_t>());
  committed(object, notes, num(e, "t"));
  if (hasTables(object)) checkRows(object);
}

// The open transaction's notes as its commit keeps them (they replace the notes it carries on to
// confirmation). After a failed statement some of its
// writes were undone with their savepoint: a removal counts only if the row is gone, an intent only
// if the row is in its dead_letter phase (or gone), a seq only up to the stored counter. Claims are
// kept (a claim that did not happen can only make FAN-06 more lenient).
FanoutChecks::CommitNotes FanoutChecks::validated(const std::string& object, IncarnationState& inc) {
  CommitNotes notes = inc.commits.notes();
  if (!inc.commits.uncertain() || !hasTables(object)) return notes;
  auto phaseOf = [&](const RowKey& row) -> std::optional<std::string> {
    std::optional<SqlRow> r =
        reader_(object, "SELECT phase FROM " DURASIM_FANOUT_DELIVERIES " WHERE id = ? AND generation_id = ?", {row.first, row.second}).next();
    return r ? std::optional<std::string>(r->text("phase")) : std::nullopt;
  };
  std::erase_if(notes.removals, [&](const RowKey& row) { return phaseOf(row).has_value(); });
  std::erase_if(notes.intents, [&](const RowKey& row) {
    const std::optional<std::string> phase = phaseOf(row);
    return phase && *phase != "dead_letter";
  });
  const int64_t counter = reader_(object, "SELECT next_seq FROM " DURASIM_FANOUT_SEQ).one().int64("next_seq");
  std::erase_if(notes.seqs, [&](int64_t seq) { return seq >= counter; });
  std::erase_if(notes.created, [&](const Manifest& m) {
    return !reader_(object, "SELECT key FROM " DURASIM_FANOUT_MESSAGES " WHERE key = ? AND generation_id = ?", {m.key, m.generation}).next();
  });
  return notes;
}

void FanoutChecks::committed(const std::string& object, const CommitNotes& notes, int64_t at) {
  ObjectState& obj = objects_[object];
  obj.local.apply(notes);
  for (const Claim& claim : notes.claims) obj.claimed[claim.delivery].insert(claim.attempt);
  if (!notes.created.empty()) obj.lastEnqueueAt = at;
  for (const Manifest& m : notes.created) obj.generations[m.generation] = m.open;
  if (!notes.removals.empty()) obj.lastRemovalAt = at;
}

// The incarnation ended: its first `kept` unconfirmed commits are durable, and the next incarnation
// opens the durable state. (Claims stay known: a claim that vanished reached no target, since the
// engine hands a delivery out only once its claim is durable.)
void FanoutChecks::onDurability(const EventFields& e) {
  ObjectState& obj = objects_[label(e)];
  const auto kept = static_cast<std::size_t>(std::max<int64_t>(num(e, "kept"), 0));
  incarnation(e).commits.decide(kept, [&](const auto& txn) { obj.durable.apply(txn.notes); }, [](const auto&) {});
  obj.local = obj.durable;
}

FanoutChecks::StoredRows::StoredRows()
    : messages(DURASIM_FANOUT_MESSAGES, "key, id, targets, remaining, seq, generation_id",
               TableMirror::Index{[this](int64_t, const SqlRow& r) { account.eraseManifest(r.text("key")); },
                                  [this](int64_t, const SqlRow& r) {
                                    model::FanoutManifest m;
                                    m.key = r.text("key");
                                    m.id = r.text("id");
                                    m.targets = parseJson(r.text("targets")).get<std::vector<std::string>>();
                                    m.remaining = r.int64("remaining");
                                    m.seq = r.int64("seq");
                                    m.generation = r.text("generation_id");
                                    account.putManifest(std::move(m));
                                  }}),
      deliveryRows(DURASIM_FANOUT_DELIVERIES,
                   "id, message_key, target_id, generation_id, phase, dead_letter_reason, dead_lettered_at, attempt, seq, next_attempt_at, "
                   "last_error, last_error_name",
                   // The disagreements counted first, where nothing throws: every row the mirror
                   // keeps is counted in and out once, even one whose text columns are malformed.
                   TableMirror::Index{[this](int64_t, const SqlRow& r) {
                                        if (!deadLetterFieldsAgree(r)) --deadLetterDisagreements;
                                        account.eraseDelivery(r.text("id"));
                                        const auto of = deliveriesOf.find(std::tie(r.text("message_key"), r.text("target_id"), r.text("generation_id")));
                                        if (of != deliveriesOf.end() && --of->second == 0) deliveriesOf.erase(of);
                                      },
                                      [this](int64_t, const SqlRow& r) {
                                        if (!deadLetterFieldsAgree(r)) ++deadLetterDisagreements;
                                        model::FanoutDelivery d;
                                        d.key = r.text("message_key");
                                        d.target = r.text("target_id");
                                        d.generation = r.text("generation_id");
                                        ++deliveriesOf[{d.key, d.target, d.generation}];
                                        account.putDelivery(r.text("id"), std::move(d));
                                      }}),
      memos(DURASIM_FANOUT_MEMOS, "message_key, target_id, generation_id, step, value") {}

// FAN-02 / FAN-04 over the rows as this commit left them; FAN-10: a reason only in dead_letter phase.
// While every row's dead-letter fields agree (the mirror counts those that do not as they change),
// FAN-10 counts one passed check per row without reading them again.
void FanoutChecks::checkRows(const std::string& object) {
  StoredRows& rows = stored_[object];
  rows.messages.refresh(reader_, object);
  rows.deliveryRows.refresh(reader_, object);
  if (rows.deadLetterDisagreements == 0) {
    if (!rows.deliveryRows.rows().empty()) tallies_.add("FAN-10", rows.deliveryRows.rows().size(), 0, "");
  } else {
    for (const auto& [rowid, r] : rows.deliveryRows.rows()) {
      const std::string& phase = r.text("phase");  // a phase that is not text throws, as any malformed column
      tallies_.check("FAN-10", deadLetterFieldsAgree(r), [&] {
        return object + " row " + r.text("id") + " in phase " + phase + " has dead-letter fields that disagree";
      });
    }
  }
  const std::optional<std::string> fault = rows.account.fault();
  const bool foreignTarget = fault && fault->find("not among its targets") != std::string::npos;
  tallies_.check("FAN-02", !fault || foreignTarget, [&] { return object + ": " + *fault; });
  tallies_.check("FAN-04", !foreignTarget, [&] { return object + ": " + *fault; });
  rows.memos.refresh(reader_, object);
  if (!rows.memos.exists()) return;
  // FAN-24: no memo row outlives its delivery row.
  const auto orphaned = std::find_if(rows.memos.rows().begin(), rows.memos.rows().end(), [&](const auto& memo) {
    const SqlRow& m = memo.second;
    return !rows.deliveriesOf.count(std::tie(m.text("message_key"), m.text("target_id"), m.text("generation_id")));
  });
  const SqlRow* orphan = orphaned == rows.memos.rows().end() ? nullptr : &orphaned->second;
  tallies_.check("FAN-24", !orphan, [&] {
    return object + " keeps the memo " + orphan->text("step") + " of " + orphan->text("message_key") + " for " + orphan->text("target_id") +
           " without its delivery row";
  });
}

// ---------------------------------------------------------------------------------------------
// Writes (staged in the transaction's notes; they count once it commits)

// FAN-05: every new manifest's seq lies above every seq committed before it, and above the ones
// this transaction assigned already.
void FanoutChecks::onEnqueueWrite(const EventFields& e, IncarnationState& inc) {
  const std::string& object = label(e);
  ObjectState& obj = objects_[object];
  CommitNotes& notes = inc.commits.notes();
  for (const json& m : e.at("messages")) {
    if (m.at("hit").get<bool>()) continue;
    const int64_t seq = num(m, "seq");
    int64_t above = obj.local.maxSeq;
    for (int64_t staged : notes.seqs) above = std::max(above, staged);
    tallies_.check("FAN-05", seq > above, [&] {
      return object + " gave manifest " + text(m, "key") + " seq " + str(seq) + ", not above " + str(above) + " already used";
    });
    notes.seqs.push_back(seq);
  }
}

// FAN-03: while a key's manifest is live (committed locally, or staged earlier in this transaction),
// a message under the key is the same work (id, payload, targets) and creates nothing; a message
// under a key with no live manifest is not taken for a duplicate.
void FanoutChecks::checkDedup(const EventFields& e, IncarnationState& inc) {
  const std::string& object = label(e);
  const Facts& facts = objects_[object].local;
  CommitNotes& notes = inc.commits.notes();
  for (const json& m : e.at("messages")) {
    const std::string key = text(m, "key");
    const Manifest* live = nullptr;
    for (const Manifest& staged : notes.created)
      if (staged.key == key) live = &staged;
    if (!live)
      if (const auto found = facts.live.find(key); found != facts.live.end()) live = &found->second;
    const bool hit = m.at("hit").get<bool>();
    if (live) {
      tallies_.check("FAN-03", live->id == text(m, "id") && live->payload == text(m, "payload") && live->targets == m.at("targets"), [&] {
        return object + " accepted other work under key " + key + " while its manifest " + live->generation + " is live";
      });
      tallies_.check("FAN-03", hit, [&] { return object + " created a second manifest under key " + key + " while " + live->generation + " is live"; });
    } else {
      tallies_.check("FAN-03", !hit, [&] { return object + " took a message under key " + key + " for a duplicate although no manifest of it is live"; });
    }
    if (hit) continue;
    Manifest created{key, text(m, "generation"), text(m, "id"), text(m, "payload"), m.at("targets"), {}};
    created.open = m.at("targets").get<std::set<std::string>>();
    notes.created.push_back(std::move(created));
  }
}

// FAN-15: one pass per target at a time. FAN-16: the runDue that begins a pass begins one for every
// target with rows in the same instant (or finds it running); so watch the rows of the other
// targets that were due before this instant (a row written in this instant may postdate the
// runDue's reading of the targets: its own enqueue's pass takes it up), and which targets have a
// pass open in this instant.
void FanoutChecks::onPassBegin(const EventFields& e, IncarnationState& inc) {
  const std::string& object = label(e);
  const std::string target = text(e, "target");
  const int64_t now = num(e, "t") + inc.clockOffset;  // on the clock of the stored due times
  PassState& pass = inc.passes[target];
  tallies_.check("FAN-15", !pass.openSince, [&] { return object + " began a second pass of " + target; });
  pass.openSince = now;
  pass.claims = 0;
  for (IsolationWatch& watch : inc.watches) watch.openInInstant.insert(target);
  if (!hasTables(object)) return;
  IsolationWatch watch{target, now, {}, {}};
  for (const auto& [other, state] : inc.passes)
    if (state.openSince) watch.openInInstant.insert(other);
  for (const auto& [rowid, r] : rowsNow(object, &StoredRows::deliveryRows)) {
    if (!textDiffers(r.at("target_id"), target) || !lessThan(r.at("next_attempt_at"), now, false)) continue;
    // A row that came due while a pass of its own target ran waits for that target's next pass,
    // not for this one.
    const PassState& own = inc.passes[r.text("target_id")];
    if (own.openSince || own.lastEnd >= r.int64("next_attempt_at")) continue;
    watch.due.push_back(WatchedRow{r.text("target_id"), r.text("id"), r.text("generation_id"), r.int64("attempt"), r.int64("next_attempt_at")});
  }
  if (!watch.due.empty()) inc.watches.push_back(std::move(watch));
}

void FanoutChecks::onPassEnd(const EventFields& e, IncarnationState& inc) {
  PassState& pass = inc.passes[text(e, "target")];
  pass.openSince.reset();
  pass.lastEnd = num(e, "t") + inc.clockOffset;
}

// FAN-16, once the instant a pass began is over: a row of another target that was due then (and
// not while a pass of its own target ran), whose target had no pass open in that instant, must not
// still wait untouched.
void FanoutChecks::judgeIsolation(const EventFields& e, IncarnationState& inc) {
  const int64_t now = num(e, "t") + inc.clockOffset;
  const std::string& object = label(e);
  const std::map<int64_t, SqlRow>* rows = nullptr;  // read once, at the first row judged
  std::erase_if(inc.watches, [&](const IsolationWatch& watch) {
    if (watch.began >= now) return false;
    for (const WatchedRow& row : watch.due) {
      bool untouched = false;
      if (!watch.openInInstant.count(row.target)) {
        if (!rows) rows = &rowsNow(object, &StoredRows::deliveryRows);
        const auto stored = std::find_if(rows->begin(), rows->end(), [&](const auto& kept) {
          return textEquals(kept.second.at("id"), row.id) && textEquals(kept.second.at("generation_id"), row.generation);
        });
        untouched = stored != rows->end() && stored->second.int64("attempt") == row.attempt && stored->second.int64("next_attempt_at") == row.next;
      }
      tallies_.check("FAN-16", !untouched, [&] {
        return object + " row " + row.id + " of " + row.target + ", due at " + str(row.next) + ", had no pass of its target when a pass of " +
               watch.target + " began at " + str(watch.began) + " and still waits at " + str(now);
      });
    }
    return true;
  });
}

// FAN-18: the due rows of a target this incarnation was built without, as the store holds them.
void FanoutChecks::onUnconfiguredDue(const EventFields& e, IncarnationState& inc) {
  const std::string& object = label(e);
  if (!hasTables(object)) return;
  const std::string target = text(e, "target");
  auto& [now, rows] = inc.unconfiguredDue[target];
  now = num(e, "now");
  rows.clear();
  for (const auto& [rowid, r] : rowsNow(object, &StoredRows::deliveryRows))
    if (dueFor(r, target, now)) rows[r.text("id")] = Unconfigured{r.int64("attempt"), r.optText("last_error"), r.optText("last_error_name")};
}

// FAN-18: only rows of a target the incarnation lacks are postponed, each by 60 s from its pass,
// keeping its attempt and last error.
void FanoutChecks::onPostponeWrite(const EventFields& e, IncarnationState& inc) {
  const std::string& object = label(e);
  const std::string target = text(e, "target");
  const auto due = inc.unconfiguredDue.find(target);
  tallies_.check("FAN-18", !configured(inc, target) && due != inc.unconfiguredDue.end(), [&] {
    return object + " postponed rows of " + target + ", a target it is configured with";
  });
  if (due == inc.unconfiguredDue.end() || !hasTables(object)) return;
  const auto& [now, rows] = due->second;
  for (const json& id : e.at("rows")) {
    const std::string row = id.get<std::string>();
    const auto before = rows.find(row);
    const std::optional<SqlRow> after =
        reader_(object, "SELECT attempt, next_attempt_at, last_error, last_error_name FROM " DURASIM_FANOUT_DELIVERIES " WHERE id = ?", {row}).next();
    const bool kept = before != rows.end() && after && after->int64("attempt") == before->second.attempt &&
                      after->optText("last_error") == before->second.error && after->optText("last_error_name") == before->second.errorName &&
                      after->int64("next_attempt_at") == now + model::kFanoutRemovedTargetDelayMs;
    tallies_.check("FAN-18", kept, [&] {
      return object + " postponed row " + row + " of unconfigured " + target + " otherwise than by " + str(model::kFanoutRemovedTargetDelayMs) +
             " ms from " + str(now) + " with its attempt and error kept";
    });
  }
}

void FanoutChecks::onClaimWrite(const EventFields& e, IncarnationState& inc) {
  const std::string& object = label(e);
  ObjectState& obj = objects_[object];
  const std::string target = text(e, "target");
  for (const json& c : e.at("claimed")) {
    const RowKey row{text(c, "row"), text(c, "generation")};
    const int64_t attempt = num(c, "attempt");
    tallies_.check("FAN-10", !obj.local.deadLettered.count(row), [&] { return object + " claimed dead-lettered row " + row.first; });
    tallies_.check("FAN-08", !obj.local.removed.count(row), [&] { return object + " claimed removed row " + row.first; });
    if (maxAttempts_)
      tallies_.check("FAN-22", attempt <= *maxAttempts_, [&] {
        return object + " claimed row " + row.first + " for attempt " + str(attempt) + " of " + str(*maxAttempts_);
      });
    inc.commits.notes().claims.push_back(Claim{row, deliveryOf(row.second, target), attempt});
  }
}

// FAN-25: an acknowledgement never removes a row whose dead-letter intent committed. FAN-20: an
// ackOnReturn removal belongs to an open batch of a target configured with it.
void FanoutChecks::onAckWrite(const EventFields& e, IncarnationState& inc) {
  if (!e.at("matched").get<bool>()) return;
  const RowKey row{text(e, "row"), text(e, "generation")};
  checkConfiguredRemoval(e, inc, "acknowledged");
  if (text(e, "how") == "ackOnReturn") {
    const std::string target = targetOfRow(row.first);
    const auto batch = inc.batches.find(target);
    const bool open = batch != inc.batches.end() && batch->second.rows.count({row.first, num(e, "attempt")}) > 0;
    tallies_.check("FAN-20", ackOnReturn_.value_or(true) && open, [&] {
      return label(e) + " acknowledged row " + row.first + " on return outside an open batch of a target with ackOnReturn";
    });
    if (open) batch->second.autoAcked = true;
  }
  tallies_.check("FAN-25", !objects_[label(e)].local.deadLettered.count(row), [&] {
    return label(e) + " " + text(e, "how") + " removed dead-lettered row " + row.first;
  });
  inc.commits.notes().removals.push_back(row);
}

// FAN-11: with a DLQ, a dead-lettered row is removed only once the DLQ holds its entry; FAN-12:
// without one, terminal rows are dropped.
void FanoutChecks::onRemoveWrite(const EventFields& e, IncarnationState& inc) {
  if (!e.at("matched").get<bool>()) return;
  const std::string& object = label(e);
  const RowKey row{text(e, "row"), text(e, "generation")};
  const bool viaDlq = text(e, "why") == "dlq";
  checkConfiguredRemoval(e, inc, "removed");
  if (dlq_)
    tallies_.check("FAN-12", viaDlq == *dlq_, [&] {
      return object + (viaDlq ? " removed row " + row.first + " after a DLQ write without a DLQ" : " dropped row " + row.first + " although it has a DLQ");
    });
  if (viaDlq) {
    const std::string delivery = deliveryOf(row.second, targetOfRow(row.first));
    tallies_.check("FAN-11", objects_[object].inDlq.count(delivery) > 0, [&] {
      return object + " removed dead-lettered row " + row.first + " before the DLQ held " + delivery;
    });
  }
  inc.commits.notes().removals.push_back(row);
}

// FAN-17: a new delivery row is first due at ceil(created_at / b) * b, as the model computes it.
void FanoutChecks::checkFirstDue(const EventFields& e) {
  if (!batchDelayMs_ || !hasTables(label(e))) return;
  const int64_t at = num(e, "at");
  const int64_t expected = model::firstAttemptAt(at, *batchDelayMs_);
  // The rows of each new manifest, key -> generation -> its rows by rowid, from one scan.
  using RowsOf = std::map<std::string, std::map<std::string, std::vector<const SqlRow*>, std::less<>>, std::less<>>;
  RowsOf rowsOf;
  for (const json& m : e.at("messages"))
    if (!m.at("hit").get<bool>()) rowsOf[text(m, "key")][text(m, "generation")];
  if (rowsOf.empty()) return;
  for (const auto& [rowid, r] : rowsNow(label(e), &StoredRows::deliveryRows)) {
    const std::string* key = std::get_if<std::string>(&r.at("message_key"));
    const std::string* generation = std::get_if<std::string>(&r.at("generation_id"));
    const auto ofKey = key ? rowsOf.find(*key) : rowsOf.end();
    if (ofKey == rowsOf.end() || !generation) continue;
    if (const auto rows = ofKey->second.find(*generation); rows != ofKey->second.end()) rows->second.push_back(&r);
  }
  for (const json& m : e.at("messages")) {
    if (m.at("hit").get<bool>()) continue;
    for (const SqlRow* r : rowsOf.at(text(m, "key")).at(text(m, "generation")))
      tallies_.check("FAN-17", r->int64("next_attempt_at") == expected, [&] {
        return label(e) + " row " + r->text("id") + " created at " + str(at) + " is first due at " + str(r->int64("next_attempt_at")) +
               ", not " + str(expected) + " (batchDelayMs " + str(*batchDelayMs_) + ")";
      });
  }
}

// FAN-20: a batch whose deliver threw acknowledged nothing on return; one whose deadline passed
// acknowledges nothing afterwards (the batch is closed: onAckWrite finds no open batch).
// FAN-21: a batch closes by its deadline, attemptTimeoutMs after it was handed out, and one that
// timed out closes exactly then.
void FanoutChecks::onDelivered(const EventFields& e, IncarnationState& inc) {
  const std::string target = text(e, "target");
  const auto batch = inc.batches.find(target);
  if (batch == inc.batches.end()) return;
  tallies_.check("FAN-20", !(e.at("threw").get<bool>() && batch->second.autoAcked), [&] {
    return label(e) + " acknowledged on return a batch of " + target + " whose deliver threw";
  });
  if (attemptTimeoutMs_) {
    const int64_t now = num(e, "t"), deadline = batch->second.handedAt + *attemptTimeoutMs_;
    const bool timedOut = e.at("timedOut").get<bool>();
    tallies_.check("FAN-21", timedOut ? now == deadline : now <= deadline, [&] {
      return label(e) + " closed a batch of " + target + " handed out at " + str(batch->second.handedAt) + " at " + str(now) +
             (timedOut ? " as timed out" : "") + ", its deadline being " + str(deadline);
    });
    if (timedOut)
      for (const auto& [row, delivery] : batch->second.rows) objects_[label(e)].timedOut[{delivery, row.second}] = TimedOut{now, num(e, "incarnation"), false, {}};
  }
  inc.batches.erase(batch);
}

void FanoutChecks::onDeliver(const EventFields& e, IncarnationState& inc) {
  Batch& batch = inc.batches[text(e, "target")] = Batch{};
  batch.handedAt = num(e, "t");
  for (const json& d : e.at("deliveries")) batch.rows[{text(d, "row"), num(d, "attempt")}] = text(d, "delivery");
}

// FAN-21: the error a retry of a timed-out attempt gave, when the incarnation that timed it out
// wrote it and the consumer's own retry did not (that records "Retry"). (A dead-letter intent of an
// exhausted row may come from a pass that found its deadline passed first, with the row's last
// stored error: it is not judged here.)
void FanoutChecks::onRetryWritten(const EventFields& e) {
  if (!e.at("matched").get<bool>()) return;
  std::map<DeliveryAttempt, TimedOut>& timedOuts = objects_[label(e)].timedOut;
  const auto timedOut = timedOuts.find({deliveryOf(text(e, "generation"), targetOfRow(text(e, "row"))), num(e, "attempt")});
  if (timedOut == timedOuts.end() || timedOut->second.incarnation != num(e, "incarnation")) return;
  const json& error = e.at("error");
  const std::string name = error.is_object() ? text(error, "name") : "(none)";
  if (name == kExplicitRetryError) return;
  timedOut->second.retryErrors.push_back(name);
}

// FAN-13: a load snapshot the application answers with counts the delivery rows stored now.
void FanoutChecks::onLoad(const EventFields& e) {
  const std::string& object = label(e);
  if (!hasTables(object)) return;
  const auto stored = static_cast<int64_t>(rowsNow(object, &StoredRows::deliveryRows).size());
  tallies_.check("FAN-13", num(e, "pendingDeliveries") == stored, [&] {
    return object + " answered pendingDeliveries " + str(num(e, "pendingDeliveries")) + " while it stores " + str(stored) + " delivery rows";
  });
}

// FAN-24: a memoized step runs only while no memo of it is stored; memoize returns the stored value.
void FanoutChecks::onMemo(const EventFields& e, bool computed) {
  const std::string mailbox = text(e, "mailbox");
  if (!reader_.hasTable(mailbox, DURASIM_FANOUT_MEMOS)) return;
  const json identity = parseJson(text(e, "delivery"));
  const std::string generation = identity.at(0).get<std::string>(), target = identity.at(1).get<std::string>(), step = text(e, "step");
  const std::map<int64_t, SqlRow>& memos = rowsNow(mailbox, &StoredRows::memos);
  const auto found = std::find_if(memos.begin(), memos.end(), [&](const auto& memo) {
    const SqlRow& m = memo.second;
    return textEquals(m.at("generation_id"), generation) && textEquals(m.at("target_id"), target) && textEquals(m.at("step"), step);
  });
  const SqlRow* stored = found == memos.end() ? nullptr : &found->second;
  if (computed) {
    tallies_.check("FAN-24", !stored, [&] {
      return mailbox + " computed step " + text(e, "step") + " of " + text(e, "delivery") + " attempt " + str(num(e, "attempt")) +
             " again although its memo is stored";
    });
    return;
  }
  if (!stored) return;
  // The stored form of a value (conventions.md): {"kind": "value", "value": v}.
  tallies_.check("FAN-24", parseJson(stored->text("value")).at("value") == e.at("value"), [&] {
    return mailbox + " memoize of " + text(e, "step") + " for " + text(e, "delivery") + " returned " + e.at("value").dump() + ", the memo holds " +
           stored->text("value");
  });
}

// FAN-14: the rows a pass read are the due rows of its target in the spec's order (first deliveries
// by seq, then retries by seq), at most maxBatchSize, computed from the store as the pass saw it.
void FanoutChecks::onDue(const EventFields& e) {
  const std::string& object = label(e);
  if (!maxBatchSize_ || !hasTables(object)) return;
  struct Due {
    bool retry;
    int64_t seq;
    std::string row;
  };
  std::vector<Due> due;
  const std::string target = text(e, "target");
  const int64_t now = num(e, "now");
  for (const auto& [rowid, r] : rowsNow(object, &StoredRows::deliveryRows))
    if (dueFor(r, target, now)) due.push_back(Due{r.int64("attempt") != 0, r.int64("seq"), r.text("id")});
  std::sort(due.begin(), due.end(), [](const Due& a, const Due& b) { return std::tie(a.retry, a.seq) < std::tie(b.retry, b.seq); });
  if (static_cast<int64_t>(due.size()) > *maxBatchSize_) due.resize(static_cast<std::size_t>(*maxBatchSize_));
  std::vector<std::string> expected, listed;
  for (const Due& d : due) expected.push_back(d.row);
  for (const json& r : e.at("rows")) listed.push_back(text(r, "row"));
  tallies_.check("FAN-14", listed == expected, [&] {
    return object + " pass of " + text(e, "target") + " read " + json(listed).dump() + ", not the due rows " + json(expected).dump();
  });
}

// ---------------------------------------------------------------------------------------------
// Effects outside the object

// FAN-06 / FAN-19: a target receives attempt k of a delivery only after a committed claim of that
// attempt under that identity; FAN-07: at most maxAttempts attempts of one delivery reach it.
void FanoutChecks::onReceived(const std::string& mailbox, const std::string& delivery, int64_t attempt, const char* what) {
  ObjectState& obj = objects_[mailbox];
  const auto claimed = obj.claimed.find(delivery);
  tallies_.check("FAN-06", claimed != obj.claimed.end() && claimed->second.count(attempt) > 0, [&] {
    return std::string(what) + " received attempt " + str(attempt) + " of " + mailbox + " delivery " + delivery +
           " without a committed claim of it";
  });
  std::set<int64_t>& attempts = obj.delivered[delivery];
  attempts.insert(attempt);
  if (maxAttempts_)
    tallies_.check("FAN-07", static_cast<int64_t>(attempts.size()) <= *maxAttempts_ && attempt <= *maxAttempts_, [&] {
      return mailbox + " delivery " + delivery + " reached its target in " + str(static_cast<int64_t>(attempts.size())) +
             " attempts (attempt " + str(attempt) + "), more than maxAttempts " + str(*maxAttempts_);
    });
}

// FAN-19: a delivery identity is json([generation, target]) of a manifest this object created, for
// `target`, the target that received it or that the stored message names.
void FanoutChecks::checkIdentity(const std::string& mailbox, const std::string& delivery, const std::string& target) {
  json identity;
  try {
    identity = parseJson(delivery);
  } catch (const json::exception&) {
  }
  const bool shaped = identity.is_array() && identity.size() == 2 && identity[0].is_string() && identity[1].is_string();
  const ObjectState& obj = objects_[mailbox];
  const auto created = shaped ? obj.generations.find(identity[0].get<std::string>()) : obj.generations.end();
  const bool known = created != obj.generations.end() && created->second.count(identity[1].get<std::string>()) > 0;
  tallies_.check("FAN-19", known && identity[1] == target, [&] {
    return mailbox + " handed out " + delivery + " for " + target + ", not json([generation, target]) of a delivery it created";
  });
}

void FanoutChecks::onStored(const EventFields& e) {
  const std::string mailbox = text(e, "mailbox");
  const std::string delivery = text(e, "delivery");
  const int64_t attempts = num(e, "attempts");
  const bool deadLetter = e.contains("reason");
  checkIdentity(mailbox, delivery, text(e, "target"));
  if (!deadLetter) return onReceived(mailbox, delivery, attempts, "the storage target");  // an archive write
  // A DLQ write: the entry is there now (created, or refused because it already was).
  tallies_.check("FAN-12", dlq_.value_or(true), [&] { return mailbox + " wrote to a DLQ it does not have"; });
  objects_[mailbox].inDlq.insert(delivery);
  if (text(e, "reason") == "exhausted" && maxAttempts_)
    tallies_.check("FAN-22", attempts == *maxAttempts_, [&] {
      return mailbox + " dead-lettered " + delivery + " as exhausted after " + str(attempts) + " attempts, not maxAttempts " + str(*maxAttempts_);
    });
}

// FAN-09: a repeated settlement call fails with FanoutSettlementError, an invalid delay with
// RangeError, and at most one settlement of one delivery attempt takes effect.
void FanoutChecks::onSettled(const EventFields& e) {
  const std::string mailbox = text(e, "mailbox");
  const std::string result = text(e, "result");
  const bool invalidDelay = e.contains("delayMs") && num(e, "delayMs") < 0;  // refused before anything else
  if (invalidDelay)
    tallies_.check("FAN-09", result == "RangeError", [&] { return mailbox + " retry(" + str(num(e, "delayMs")) + ") got " + result; });
  else if (e.at("second").get<bool>())
    tallies_.check("FAN-09", result == "FanoutSettlementError", [&] {
      return mailbox + " repeated " + text(e, "action") + " on " + text(e, "delivery") + " and got " + result;
    });
  if (result != "ok") return;
  const DeliveryAttempt attempt{text(e, "delivery"), num(e, "attempt")};
  if (const auto timedOut = objects_[mailbox].timedOut.find(attempt); timedOut != objects_[mailbox].timedOut.end()) {
    // The call's delay since the batch was handed out, on the caller's clock (an incarnation's clock
    // may be offset from the world's).
    const int64_t since = num(e, "sinceHandedOut");
    tallies_.check("FAN-21", since <= *attemptTimeoutMs_, [&] {
      return mailbox + " " + text(e, "action") + " of " + attempt.first + " attempt " + str(attempt.second) + " called " + str(since) +
             " ms after its batch was handed out took effect after the batch timed out at " + str(timedOut->second.at);
    });
    timedOut->second.settledBefore = true;
  }
  int64_t& count = objects_[mailbox].settled[attempt];
  tallies_.check("FAN-09", ++count == 1, [&] {
    return mailbox + " settled attempt " + str(num(e, "attempt")) + " of " + text(e, "delivery") + " " + str(count) + " times";
  });
}

// ---------------------------------------------------------------------------------------------
// The end of the run

// FAN-26's bound (invariants-engine.md): every attempt's longest backoff and deadline, plus a
// DLQ retry, a removed target's postponement and the alarm that wakes the object.
int64_t FanoutChecks::retryBoundMs() const {
  int64_t bound = model::kFanoutDlqRetryMs + model::kFanoutRemovedTargetDelayMs + kWakeSlackMs;
  for (int64_t attempt = 1; attempt <= *maxAttempts_; ++attempt) bound += model::defaultDelayRange(attempt).hi + *attemptTimeoutMs_;
  return bound;
}

void FanoutChecks::finish() {
  ++checked_;
  history_.finish();
  for (const auto& [object, obj] : objects_.all()) {
    // FAN-21: an attempt left unsettled by its deadline is retried with FanoutTimeoutError.
    for (const auto& [attempt, timedOut] : obj.timedOut) {
      if (timedOut.settledBefore) continue;
      for (const std::string& name : timedOut.retryErrors)
        tallies_.check("FAN-21", name == "FanoutTimeoutError", [&] {
          return object + " retried " + attempt.first + " attempt " + str(attempt.second) + ", unsettled when it timed out, with " + name;
        });
    }
    if (healedAt_ && maxAttempts_ && attemptTimeoutMs_) {
      const int64_t from = std::max(*healedAt_, obj.lastEnqueueAt);
      tallies_.check("FAN-26", obj.lastRemovalAt <= from + retryBoundMs(), [&] {
        return object + " removed its last delivery at " + str(obj.lastRemovalAt) + ", later than " + str(retryBoundMs()) + " ms after " + str(from);
      });
    }
    if (!hasTables(object)) continue;
    const int64_t left = reader_(object, "SELECT count(*) AS n FROM " DURASIM_FANOUT_DELIVERIES).one().int64("n");
    tallies_.check("FAN-26", left == 0, [&] { return object + " still holds " + str(left) + " deliveries after heal"; });
  }
}

}  // namespace durasim::properties
