// LSE checks; see lease_checks.h.
#include "properties/lease_checks.h"

#include <algorithm>

#include "engine/log_events.h"
#include "engine/log_schema.h"
#include "model/log_model.h"
#include "properties/event_fields.h"

namespace durasim::properties {

namespace {
using nlohmann::json;
using namespace fields;

std::optional<int64_t> optNum(const EventFields& e, const char* field) {
  const json* it = e.find(field);
  if (!it || it->is_null()) return std::nullopt;
  return it->get<int64_t>();
}
bool flag(const EventFields& e, const char* field) {
  const json* it = e.find(field);
  return it && it->is_boolean() && it->get<bool>();
}
template <class Map, class Key>
std::optional<int64_t> lookup(const Map& m, const Key& k) {
  auto it = m.find(k);
  return it == m.end() ? std::nullopt : std::optional<int64_t>(it->second);
}
std::string range(int64_t first, int64_t last) { return "[" + str(first) + ", " + str(last) + "]"; }

// An ack or nack, written or rejected.
bool settlement(EventType ev) {
  return ev == log_events::kAckWrite || ev == log_events::kNackWrite || ev == log_events::kAckRejected || ev == log_events::kNackRejected;
}
bool settledState(const std::string& state) { return state == "acked" || state == "skipped"; }
bool heldState(const std::string& state, int64_t expiresAt, int64_t now) {
  return state == "pending" || (state == "active" && expiresAt > now);
}
// A released or truncated row goes back to pending, its attempt not counted.
template <class Row>
void release(Row& row) {
  row.state = "pending";
  row.expiresAt = 0;
  row.attempt -= 1;
}
bool reclaimableState(const std::string& state, int64_t expiresAt, int64_t now) {
  return state == "pending" || (state == "active" && expiresAt <= now);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// The mirror's queries and the advance it predicts (log.md 7.4)

namespace {

// A lease row as rowsOf lists it: its batch id and the row, where the map holds them.
template <class Row>
struct RowRef {
  const std::string* id;
  const Row* row;
};

// The rows of `consumer`, by first offset then batch id. The references die with the map's entries.
template <class Row>
std::vector<RowRef<Row>> rowsOf(const std::map<std::string, Row>& rows, const std::string& consumer) {
  std::vector<RowRef<Row>> out;
  for (const auto& [id, row] : rows)
    if (row.consumer == consumer) out.push_back({&id, &row});
  std::sort(out.begin(), out.end(), [](const RowRef<Row>& a, const RowRef<Row>& b) {
    return a.row->first != b.row->first ? a.row->first < b.row->first : *a.id < *b.id;
  });
  return out;
}

// The same rows, by value and in the same order.
template <class Row>
bool sameRows(const std::vector<RowRef<Row>>& a, const std::vector<RowRef<Row>>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const RowRef<Row>& x, const RowRef<Row>& y) { return *x.id == *y.id && *x.row == *y.row; });
}

// The advance the mirror's rows imply (the model's statement of log.md 7.4).
template <class Mirror>
model::AdvanceResult predictAdvance(const Mirror& m, const std::string& consumer) {
  std::vector<model::AdvanceRow> rows;
  for (const auto& [id, row] : rowsOf(m.rows, consumer)) rows.push_back({row->first, row->last, settledState(row->state)});
  return model::advanceOver(lookup(m.cursor, consumer), rows);
}

}  // namespace

LeaseChecks::LeaseChecks(StoreReader reader, std::string className) : ObjectChecker(std::move(className)), reader_(std::move(reader)) {
  for (int i = 1; i <= 16; ++i) tallies_.declare(std::string("LSE-") + (i < 10 ? "0" : "") + std::to_string(i));
}

// The object's clock at the event: the World's time plus its incarnation's offset, if any.
int64_t LeaseChecks::objectNow(const EventFields& e) {
  const std::optional<int64_t> offset = lookup(object(e).clockOffset, num(e, "incarnation"));
  return num(e, "t") + offset.value_or(0);
}

void LeaseChecks::CommitNotes::merge(CommitNotes&& other) {
  poisons.insert(poisons.end(), other.poisons.begin(), other.poisons.end());
  records.insert(records.end(), other.records.begin(), other.records.end());
}

// The events each check reads: a malformed one is a violation of the check it feeds.
std::string LeaseChecks::invariant_for(EventType ev) const {
  if (ev == log_events::kOptions || ev == log_events::kLeaseDisabled) return "LSE-16";
  if (ev == log_events::kLeaseWrite || ev == log_events::kLeaseGapWrite || ev == log_events::kLeaseAllocateWrite) return "LSE-02";
  if (ev == log_events::kLeaseNone) return "LSE-06";
  if (ev == log_events::kLeaseTruncateWrite || ev == log_events::kLeaseTruncated || ev == log_events::kLeaseUnreadable) return "LSE-13";
  if (ev == log_events::kLeaseReleaseWrite || ev == log_events::kLease) return "LSE-10";
  if (ev == log_events::kLeasePoisonWrite || ev == log_events::kPoisonCallback) return "LSE-08";
  if (ev == log_events::kCommitWrite || ev == log_events::kAdvanceWrite || ev == log_events::kLeaseDeleteWrite) return "LSE-05";
  if (ev == log_events::kAppLeaseOutcome || settlement(ev)) return "LSE-04";
  return "LSE-09";
}

void LeaseChecks::observe(EventType ev, const EventFields& e) {
  coldLoss_.observe(ev, e);
  if (ev == log_events::kAppLeaseOutcome) return onOutcome(e);
  if (!mine(e) || !e.contains("incarnation")) return;
  if (ev == "commit" || ev == "commit.noop") return onCommit(e);
  if (ev == "fault") {
    // A failed statement rolls back its savepoint without a trace event: the writes described so
    // far may not have happened, so the next commit resynchronises the mirror instead of judging it.
    const std::string fault = text(e, "fault");
    if (fault == "storage.statement_error") object(e).state.statement_failed();
    if (fault == "clock.incarnation_offset") object(e).clockOffset[num(e, "incarnation")] = num(e.at("details"), "offset");
    return;
  }
  if (ev == "confirm") return onConfirm(e);
  if (ev == "durability") return onDurability(e);
  if (ev == "commit.failed" || ev == "incarnation.end") return discardOpen(object(e));
  if (ev == log_events::kOptions) return onOptions(e);
  if (ev == log_events::kAppendWrite) {
    object(e).openAppends.push_back(e);
    return;
  }
  if (ev == log_events::kCommitWrite) {
    ObjectState& obj = object(e);
    if (!flag(e, "moved")) return;
    const std::string consumer = text(e, "consumer");
    obj.state.stage([consumer, offset = num(e, "offset")](Mirror& m) {
      m.cursor[consumer] = offset;
      m.manualCursor.insert(consumer);
    });
    touch(obj, consumer, "LSE-05");
    return;
  }
  if (ev == log_events::kLeaseDisabled) {
    const ObjectState& obj = object(e);
    tallies_.check("LSE-16", !obj.options.has_value(), [&] {
      return label(e) + " threw the disabled-leases TypeError from " + text(e, "method") + " with the leases option set";
    });
    return;
  }
  const bool leaseProbe = ev.starts_with(log_events::kLease) || settlement(ev) || ev == log_events::kPoisonCallback ||
                          ev == log_events::kPoisonFailed || ev == log_events::kAdvanceWrite;
  if (!leaseProbe) return;
  if (!leaseEnabled(e, object(e))) return;
  if (ev == log_events::kLeaseWrite) return onLeaseWrite(e);
  if (ev == log_events::kLeaseNone) return onLeaseNone(e);
  if (ev == log_events::kLeaseGapWrite) return onTailGapWrite(e);
  if (ev == log_events::kLeaseAllocateWrite) return onAllocateWrite(e);
  if (ev == log_events::kLeaseDeleteWrite) return onDeleteWrite(e);
  if (ev == log_events::kLeaseTruncateWrite) return onTruncateWrite(e);
  if (ev == log_events::kLeaseTruncated) return onTruncated(e);
  if (ev == log_events::kLeaseUnreadable) return onUnreadable(e);
  if (ev == log_events::kLeaseReleaseWrite) return onReleaseWrite(e);
  if (ev == log_events::kLeasePoisonWrite) return onPoisonWrite(e);
  if (ev == log_events::kPoisonCallback) return onPoisonCallback(e);
  if (ev == log_events::kAckWrite) return onSettleWrite(e, true);
  if (ev == log_events::kNackWrite) return onSettleWrite(e, false);
  if (ev == log_events::kAckRejected) return onSettleRejected(e, true);
  if (ev == log_events::kNackRejected) return onSettleRejected(e, false);
  if (ev == log_events::kAdvanceWrite) return onAdvanceWrite(e);
  if (ev == log_events::kLease) return onLease(e);
}

// LSE-16 [H]: lease probes only come from a log with the leases option (the disabled TypeError is
// thrown before anything is probed).
bool LeaseChecks::leaseEnabled(const EventFields& e, ObjectState& obj) {
  return tallies_.check("LSE-16", obj.options.has_value(), [&] {
    return label(e) + " emitted " + text(e, "ev") + " without the leases option";
  });
}

void LeaseChecks::touch(ObjectState& obj, const std::string& consumer, const std::string& id) {
  Touch& t = obj.touched[consumer];
  if (t.id.empty()) t.id = id;
}

void LeaseChecks::demandAdvance(ObjectState& obj, const std::string& consumer, const std::string& id, bool skip) {
  Touch& t = obj.touched[consumer];
  if (!t.needsAdvance) t.needsAdvance = id;
  t.skipped = t.skipped || skip;
}

// ---------------------------------------------------------------------------------------------
// Options, commits, confirmations, durability decisions

void LeaseChecks::onOptions(const EventFields& e) {
  const std::string object = label(e);
  ObjectState& obj = objects_[object];
  obj.optionsSeen = true;
  obj.cold = flag(e, "cold");
  const json& leases = e.at("leases");
  if (leases.is_null()) {
    obj.options.reset();
    if (!obj.everLeases)
      tallies_.check("LSE-16", !hasLeaseTables(object), [&] { return object + " has lease tables but was never given the leases option"; });
    return;
  }
  LeaseOptions o;
  o.maxParallelism = num(leases, "maxParallelism");
  o.leaseMs = num(leases, "leaseMs");
  o.maxAttempts = optNum(leases, "maxAttempts");
  o.onPoison = flag(leases, "onPoison");
  o.maxBatchSize = num(e, "maxBatchSize");
  obj.options = o;
  obj.everLeases = true;
  tallies_.check("LSE-16", hasLeaseTables(object), [&] { return object + " has the leases option but no lease tables"; });
}

void LeaseChecks::onCommit(const EventFields& e) {
  const std::string object = label(e);
  ObjectState& obj = objects_[object];
  const bool numbered = textRef(e, "ev") == "commit";
  const uint64_t commit = numbered ? e.at("commit").get<uint64_t>() : 0;
  for (const auto& [consumer, t] : obj.touched) {
    if (!t.needsAdvance || obj.state.uncertain()) continue;
    tallies_.check(*t.needsAdvance, t.advanced, [&] {
      return object + " committed a " + (t.skipped ? "skip" : "settle") + " of " + consumer + " without advancing its cursor in the same transaction";
    });
  }
  if (!obj.touched.empty() && obj.options && hasLeaseTables(object)) checkStore(object, obj, objectNow(e));
  if (obj.options) learnRecords(object, obj);
  if (numbered)
    obj.state.commit(commit);
  else
    obj.state.commit_unchanged([&](const auto& txn) { poisonsDurable(obj, txn.notes); });
  obj.settled.insert(obj.openSettles.begin(), obj.openSettles.end());
  obj.touched.clear();
  obj.openAppends.clear();
  obj.openSettles.clear();
}

void LeaseChecks::onConfirm(const EventFields& e) {
  ObjectState& obj = object(e);
  obj.state.confirm(e.at("commit").get<uint64_t>(), [&](const auto& txn) { poisonsDurable(obj, txn.notes); });
}

void LeaseChecks::poisonsDurable(ObjectState& obj, const CommitNotes& notes) {
  for (const auto& [batchId, attempt] : notes.poisons) obj.confirmedPoisons[batchId] = attempt;
}

// The first `kept` unconfirmed commits survive, the others vanish (runtime.md 4.5).
void LeaseChecks::onDurability(const EventFields& e) {
  ObjectState& obj = object(e);
  discardOpen(obj);
  obj.state.decide(
      static_cast<std::size_t>(num(e, "kept")), [&](const auto& txn) { poisonsDurable(obj, txn.notes); },
      [&](const auto& txn) {
        for (int64_t offset : txn.notes.records) obj.records.erase(offset);
      });
}

void LeaseChecks::discardOpen(ObjectState& obj) {
  obj.state.roll_back();
  obj.touched.clear();
  obj.openAppends.clear();
  obj.openSettles.clear();
}

// The records each committed append added, as stored (LSE-10 compares leases against them).
void LeaseChecks::learnRecords(const std::string& object, ObjectState& obj) {
  for (const EventFields& a : obj.openAppends) {
    const int64_t first = num(a, "first"), next = num(a, "next");
    if (next <= first) continue;
    const char* sql = "SELECT \"offset\" AS o, dedup_key, payload FROM " DURASIM_LOG_RECORDS " WHERE \"offset\" >= ? AND \"offset\" < ?";
    for (const SqlRow& r : reader_(object, sql, {first, next}).toVector()) {
      obj.records[r.int64("o")] = {r.text("dedup_key"), r.text("payload")};
      obj.state.notes().records.push_back(r.int64("o"));
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Transaction A: grants and reclaims (log.md 7.1)

void LeaseChecks::onLeaseWrite(const EventFields& e) {
  ObjectState& obj = object(e);
  if (flag(e, "reclaimed"))
    onReclaim(e, obj);
  else
    onFreshGrant(e, obj);
}

void LeaseChecks::onFreshGrant(const EventFields& e, ObjectState& obj) {
  const std::string object = label(e);
  const std::string consumer = text(e, "consumer"), batchId = text(e, "batchId");
  const LeaseOptions& o = *obj.options;
  const Mirror& m = obj.state.staged();
  const int64_t now = objectNow(e);
  const int64_t first = num(e, "first"), last = num(e, "last");
  int64_t held = 0;
  bool reclaimable = false;
  for (const auto& [id, row] : rowsOf(m.rows, consumer)) {
    held += heldState(row->state, row->expiresAt, now) ? 1 : 0;
    reclaimable = reclaimable || reclaimableState(row->state, row->expiresAt, now);
    if (heldState(row->state, row->expiresAt, now))
      tallies_.check("LSE-01", last < row->first || first > row->last, [&] {
        return object + " granted " + consumer + " " + range(first, last) + " overlapping held lease " + *id + " " + range(row->first, row->last);
      });
  }
  tallies_.check("LSE-06", !reclaimable && held < o.maxParallelism && num(e, "held") == held, [&] {
    return object + " granted a fresh lease to " + consumer + " holding " + str(held) + " (event says " + str(num(e, "held")) +
           ") of maxParallelism " + str(o.maxParallelism) + (reclaimable ? " with a reclaimable row left" : "");
  });
  const std::optional<int64_t> cursor = lookup(m.cursor, consumer), allocation = lookup(m.allocation, consumer);
  const int64_t base = std::max(cursor.value_or(0), allocation.value_or(0));
  const int64_t from = std::max(num(e, "oldest"), base);
  const bool gap = from > base;
  const json& gapField = e.at("gap");
  const bool reportedGap = gapField.is_array() && gapField.size() == 2;
  const bool gapOk = gap ? reportedGap && gapField[0].get<int64_t>() == base && gapField[1].get<int64_t>() == from - 1 : gapField.is_null();
  const int64_t hot = num(e, "hot"), next = num(e, "next");
  const bool shape = last >= first && last < next && last - first + 1 <= o.maxBatchSize && (first >= hot || last < hot) &&
                     num(e, "attempt") == 1 && num(e, "expiresAt") == now + o.leaseMs;
  tallies_.check("LSE-02", optNum(e, "cursor") == cursor && optNum(e, "allocation") == allocation && num(e, "base") == base &&
                               first == from && gapOk && shape,
                 [&] {
                   return object + " fresh lease of " + consumer + " " + range(first, last) + " with cursor " + str(cursor) +
                          ", allocation " + str(allocation) + ", oldest " + str(num(e, "oldest")) + ": expected to start at " + str(from) +
                          (gapOk ? "" : " with a gap row " + range(base, from - 1)) + (shape ? "" : ", a range within the log and maxBatchSize");
                 });
  tallies_.check("LSE-03", obj.everIds.insert(batchId).second && (!reportedGap || obj.everIds.insert(text(e, "gapBatchId")).second),
                 [&] { return object + " reused batch id " + batchId + " (or its gap row's id)"; });
  if (reportedGap) {
    const Row gapRow{consumer, gapField[0].get<int64_t>(), gapField[1].get<int64_t>(), "skipped", 0, 0};
    obj.state.stage([gapId = text(e, "gapBatchId"), gapRow](Mirror& mirror) { mirror.rows[gapId] = gapRow; });
    demandAdvance(obj, consumer, "LSE-14", true);
  }
  obj.state.stage([batchId, row = Row{consumer, first, last, "active", 1, num(e, "expiresAt")}](Mirror& mirror) {
    mirror.rows[batchId] = row;
    mirror.allocation[row.consumer] = row.last + 1;
  });
  touch(obj, consumer, "LSE-02");
}

void LeaseChecks::onReclaim(const EventFields& e, ObjectState& obj) {
  const std::string object = label(e);
  const std::string consumer = text(e, "consumer"), batchId = text(e, "batchId"), previous = text(e, "previousBatchId");
  const Mirror& m = obj.state.staged();
  const int64_t now = objectNow(e);
  const int64_t first = num(e, "first"), last = num(e, "last"), attempt = num(e, "attempt");
  std::optional<std::string> lowest;
  for (const auto& [id, row] : rowsOf(m.rows, consumer)) {
    if (!lowest && reclaimableState(row->state, row->expiresAt, now)) lowest = *id;
    if (*id != previous && heldState(row->state, row->expiresAt, now))
      tallies_.check("LSE-01", last < row->first || first > row->last, [&] {
        return object + " reclaimed " + range(first, last) + " for " + consumer + " overlapping held lease " + *id;
      });
  }
  auto prev = m.rows.find(previous);
  const bool ok = prev != m.rows.end() && lowest == previous && prev->second.first == first && prev->second.last == last &&
                  attempt == prev->second.attempt + 1 && batchId != previous && num(e, "expiresAt") == now + obj.options->leaseMs;
  tallies_.check("LSE-03", ok && obj.everIds.insert(batchId).second, [&] {
    return object + " reclaim of " + previous + " as " + batchId + " " + range(first, last) + " attempt " + str(attempt) +
           (prev == m.rows.end() ? ": no such row" : ", the row has attempt " + str(prev->second.attempt) + " range " + range(prev->second.first, prev->second.last)) +
           "; the lowest reclaimable row is " + lowest.value_or("none");
  });
  obj.state.stage([previous, batchId, row = Row{consumer, first, last, "active", attempt, num(e, "expiresAt")}](Mirror& mirror) {
    mirror.rows.erase(previous);
    mirror.rows[batchId] = row;
    mirror.fenced.insert(previous);
  });
  touch(obj, consumer, "LSE-03");
}

void LeaseChecks::onLeaseNone(const EventFields& e) {
  ObjectState& obj = object(e);
  const std::string consumer = text(e, "consumer"), reason = text(e, "reason");
  const int64_t now = objectNow(e);
  int64_t held = 0;
  bool reclaimable = false;
  for (const auto& [id, row] : rowsOf(obj.state.staged().rows, consumer)) {
    held += heldState(row->state, row->expiresAt, now) ? 1 : 0;
    reclaimable = reclaimable || reclaimableState(row->state, row->expiresAt, now);
  }
  const bool atLimit = held >= obj.options->maxParallelism;
  tallies_.check("LSE-06", !reclaimable && (reason == "parallelism") == atLimit, [&] {
    return label(e) + " granted " + consumer + " nothing (" + reason + ") holding " + str(held) + " of " + str(obj.options->maxParallelism) +
           (reclaimable ? " with a reclaimable row" : "");
  });
}

// Nothing left to lease but offsets from `base` on were trimmed: the gap row alone, the allocation at
// its end, and an advance (docs/decisions.md, "A fully trimmed tail is still covered").
void LeaseChecks::onTailGapWrite(const EventFields& e) {
  ObjectState& obj = object(e);
  const std::string object = label(e);
  const std::string consumer = text(e, "consumer");
  const Mirror& m = obj.state.staged();
  const int64_t now = objectNow(e);
  int64_t held = 0;
  bool reclaimable = false;
  for (const auto& [id, row] : rowsOf(m.rows, consumer)) {
    held += heldState(row->state, row->expiresAt, now) ? 1 : 0;
    reclaimable = reclaimable || reclaimableState(row->state, row->expiresAt, now);
  }
  tallies_.check("LSE-06", !reclaimable && held < obj.options->maxParallelism, [&] {
    return object + " covered the trimmed tail of " + consumer + " holding " + str(held) + (reclaimable ? " with a reclaimable row" : "");
  });
  const json& gap = e.at("gap");
  const int64_t first = gap.at(0).get<int64_t>(), last = gap.at(1).get<int64_t>(), allocation = num(e, "allocation");
  const std::optional<int64_t> cursor = lookup(m.cursor, consumer), before = lookup(m.allocation, consumer);
  const int64_t base = std::max(cursor.value_or(0), before.value_or(0));
  tallies_.check("LSE-02", first == base && last >= first && allocation == last + 1, [&] {
    return object + " tail gap row " + range(first, last) + " of " + consumer + " with allocation " + str(allocation) + " after " +
           str(before) + ": expected to start at " + str(base) + " and end just below the allocation";
  });
  const std::string gapId = text(e, "gapBatchId");
  tallies_.check("LSE-03", obj.everIds.insert(gapId).second, [&] { return object + " reused batch id " + gapId + " for a tail gap row"; });
  obj.state.stage([gapId, row = Row{consumer, first, last, "skipped", 0, 0}, allocation](Mirror& mirror) {
    mirror.rows[gapId] = row;
    mirror.allocation[row.consumer] = allocation;
  });
  demandAdvance(obj, consumer, "LSE-14", true);
  touch(obj, consumer, "LSE-02");
}

// An allocation written on its own (variant log.lease_two_write_allocation): it never decreases.
void LeaseChecks::onAllocateWrite(const EventFields& e) {
  ObjectState& obj = object(e);
  const std::string consumer = text(e, "consumer");
  const int64_t allocation = num(e, "allocation");
  const std::optional<int64_t> before = lookup(obj.state.staged().allocation, consumer);
  tallies_.check("LSE-02", allocation >= before.value_or(0), [&] {
    return label(e) + " moved the allocation of " + consumer + " down from " + str(before) + " to " + str(allocation);
  });
  obj.state.stage([consumer, allocation](Mirror& mirror) { mirror.allocation[consumer] = allocation; });
  touch(obj, consumer, "LSE-02");
}

// ---------------------------------------------------------------------------------------------
// Truncation, release, poison (log.md 7.1 step 4, 7.2)

void LeaseChecks::onTruncateWrite(const EventFields& e) {
  ObjectState& obj = object(e);
  const std::string consumer = text(e, "consumer"), batchId = text(e, "batchId");
  const int64_t first = num(e, "first"), last = num(e, "last"), oldest = num(e, "oldest");
  const bool whole = flag(e, "whole");
  const Mirror& m = obj.state.staged();
  auto it = m.rows.find(batchId);
  const bool matches = it != m.rows.end() && it->second.state == "active" && it->second.consumer == consumer &&
                       it->second.first == first && it->second.last == last;
  const bool newId = whole || obj.everIds.insert(text(e, "skippedBatchId")).second;
  tallies_.check("LSE-13", matches && first < oldest && whole == (last < oldest) && newId, [&] {
    return label(e) + " truncation of " + batchId + " " + range(first, last) + " at oldest " + str(oldest) + (whole ? " (whole)" : "") +
           (matches ? "" : " does not match an active row") + (newId ? "" : " reused a batch id");
  });
  if (it != m.rows.end()) {
    if (whole || last < oldest) {
      obj.state.stage([batchId](Mirror& mirror) { mirror.rows.at(batchId).state = "skipped"; });
    } else {
      obj.state.stage([batchId, skippedId = text(e, "skippedBatchId"), skipped = Row{consumer, first, oldest - 1, "skipped", 0, 0}](Mirror& mirror) {
        mirror.rows[skippedId] = skipped;
        Row& row = mirror.rows.at(batchId);
        row.first = skipped.last + 1;
        row.state = "pending";
        row.expiresAt = 0;
        row.attempt -= 1;
      });
    }
  }
  obj.truncateWritten.insert(batchId);
  demandAdvance(obj, consumer, "LSE-14", true);
  touch(obj, consumer, "LSE-13");
}

// LSE-13: a truncation error follows its truncation write, unless the row had been fenced.
void LeaseChecks::onTruncated(const EventFields& e) {
  ObjectState& obj = object(e);
  const std::string batchId = text(e, "batchId");
  const auto& rows = obj.state.staged().rows;
  auto it = rows.find(batchId);
  const bool stillActive = it != rows.end() && it->second.state == "active";
  tallies_.check("LSE-13", obj.truncateWritten.count(batchId) > 0 || !stillActive, [&] {
    return label(e) + " threw LogTruncatedError(" + str(num(e, "requested")) + ", " + str(num(e, "oldest")) + ") for " + batchId +
           " without moving the trimmed offsets into a skipped row";
  });
}

// LSE-13: LogTruncatedError for an offset that could not be read is raised only when it really
// could not: no hot row holds it and no segment the cold store still has.
void LeaseChecks::onUnreadable(const EventFields& e) {
  const int64_t offset = num(e, "requested");
  const std::optional<std::string> where = readableAt(label(e), object(e), offset, num(e, "t"));
  tallies_.check("LSE-13", !where, [&] {
    return label(e) + " threw LogTruncatedError(" + str(offset) + ", " + str(num(e, "oldest")) + ") for " + text(e, "batchId") +
           " though offset " + str(offset) + " is still readable (" + where.value_or("") + ")";
  });
}

void LeaseChecks::onReleaseWrite(const EventFields& e) {
  ObjectState& obj = object(e);
  const std::string consumer = text(e, "consumer"), batchId = text(e, "batchId");
  const int64_t missing = num(e, "missing");
  const auto& rows = obj.state.staged().rows;
  auto it = rows.find(batchId);
  const bool ok = it != rows.end() && it->second.state == "active" && it->second.consumer == consumer &&
                  missing >= it->second.first && missing <= it->second.last;
  tallies_.check("LSE-10", ok, [&] {
    return label(e) + " released " + batchId + " for unreadable offset " + str(missing) + " but it is not an active lease holding it";
  });
  const std::optional<std::string> where = readableAt(label(e), obj, missing, num(e, "t"));
  tallies_.check("LSE-10", !where, [&] {
    return label(e) + " released " + batchId + " for offset " + str(missing) + " that is still readable (" + where.value_or("") + ")";
  });
  if (it != rows.end()) obj.state.stage([batchId](Mirror& mirror) { release(mirror.rows.at(batchId)); });
  touch(obj, consumer, "LSE-10");
}

void LeaseChecks::onPoisonWrite(const EventFields& e) {
  ObjectState& obj = object(e);
  const LeaseOptions& o = *obj.options;
  const std::string consumer = text(e, "consumer"), batchId = text(e, "batchId");
  const int64_t attempt = num(e, "attempt");
  tallies_.check("LSE-07", o.onPoison, [&] { return label(e) + " skipped poisoned " + batchId + " without an onPoison handler"; });
  const auto& rows = obj.state.staged().rows;
  auto it = rows.find(batchId);
  const bool active = it != rows.end() && it->second.state == "active" && it->second.consumer == consumer;
  tallies_.check("LSE-08", o.maxAttempts && attempt > *o.maxAttempts && flag(e, "matched") == active, [&] {
    return label(e) + " poison skip of " + batchId + " attempt " + str(attempt) + " (maxAttempts " + str(o.maxAttempts) + "), matched " +
           (flag(e, "matched") ? "true" : "false") + " against an " + (active ? "active" : "absent") + " row";
  });
  if (!flag(e, "matched")) return;
  if (it != rows.end()) obj.state.stage([batchId](Mirror& mirror) { mirror.rows.at(batchId).state = "skipped"; });
  obj.state.notes().poisons.emplace_back(batchId, attempt);
  demandAdvance(obj, consumer, "LSE-14", true);
  touch(obj, consumer, "LSE-08");
}

// LSE-08: the callback runs only after its skip is durable, with the attempt it skipped. That is
// maxAttempts + 1 unless a crash lost an earlier skip of the range after its reclaim had committed.
void LeaseChecks::onPoisonCallback(const EventFields& e) {
  ObjectState& obj = object(e);
  const std::string batchId = text(e, "batchId");
  const std::optional<int64_t> skipped = lookup(obj.confirmedPoisons, batchId);
  tallies_.check("LSE-08", skipped && num(e, "attempt") == *skipped, [&] {
    return label(e) + " ran onPoison for " + batchId + " attempt " + str(num(e, "attempt")) +
           (skipped ? " after skipping attempt " + str(skipped) : " before its skip was durable");
  });
}

// ---------------------------------------------------------------------------------------------
// Settlement and advance (log.md 7.3, 7.4)

void LeaseChecks::onSettleWrite(const EventFields& e, bool ack) {
  ObjectState& obj = object(e);
  const std::string object = label(e);
  const std::string consumer = text(e, "consumer"), batchId = text(e, "batchId");
  const char* verb = ack ? "ack" : "nack";
  const Mirror& m = obj.state.staged();
  auto it = m.rows.find(batchId);
  tallies_.check("LSE-03", m.fenced.count(batchId) == 0,
                 [&] { return object + " " + verb + " of " + batchId + " matched after a reclaim had replaced it"; });
  tallies_.check("LSE-04", it != m.rows.end() && it->second.state == "active", [&] {
    return object + " " + verb + " of " + batchId + " matched a " + (it == m.rows.end() ? std::string("missing") : it->second.state) + " lease";
  });
  if (it != m.rows.end()) {
    tallies_.check("LSE-11", it->second.consumer == consumer, [&] {
      return object + " " + verb + " by " + consumer + " settled " + batchId + " of " + it->second.consumer;
    });
    tallies_.check("LSE-09", it->second.consumer == consumer, [&] {
      return object + " " + verb + " by " + consumer + " changed the lease " + batchId + " of " + it->second.consumer;
    });
    if (it->second.consumer != consumer) touch(obj, it->second.consumer, "LSE-09");
    obj.state.stage([batchId, ack](Mirror& mirror) {
      Row& row = mirror.rows.at(batchId);
      row.state = ack ? "acked" : "pending";
      if (!ack) row.expiresAt = 0;
    });
  }
  if (ack) demandAdvance(obj, consumer, "LSE-05", false);
  obj.openSettles.push_back(std::string(verb) + ":" + batchId);
  touch(obj, consumer, "LSE-04");
}

void LeaseChecks::onSettleRejected(const EventFields& e, bool ack) {
  ObjectState& obj = object(e);
  const std::string consumer = text(e, "consumer"), batchId = text(e, "batchId");
  const Mirror& m = obj.state.staged();
  auto it = m.rows.find(batchId);
  const bool settleable = it != m.rows.end() && it->second.state == "active" && it->second.consumer == consumer;
  std::string id = "LSE-04";
  if (m.fenced.count(batchId)) id = "LSE-03";
  else if (it != m.rows.end() && it->second.consumer != consumer) id = "LSE-11";
  tallies_.check(id, !settleable, [&] {
    return label(e) + " rejected " + (ack ? "ack" : "nack") + " of the active lease " + batchId + " of " + consumer;
  });
  obj.rejected.insert(batchId);
}

// LSE-05 [H]: the advance recomputed from the mirror (log.md 7.4).
void LeaseChecks::onAdvanceWrite(const EventFields& e) {
  ObjectState& obj = object(e);
  const std::string consumer = text(e, "consumer");
  const Mirror& m = obj.state.staged();
  const model::AdvanceResult a = predictAdvance(m, consumer);
  const bool predicted = tallies_.check("LSE-05", optNum(e, "cursor") == a.before && optNum(e, "to") == a.to && num(e, "deleted") == a.deleted, [&] {
    return label(e) + " advance of " + consumer + " from " + str(optNum(e, "cursor")) + " to " + str(optNum(e, "to")) + " deleting " +
           str(num(e, "deleted")) + "; the settled run from " + str(a.before) + " gives " + str(a.to) + " deleting " + str(a.deleted);
  });
  // The stored rows will then differ from the predicted ones: that is this advance's fault, whatever
  // touched the consumer first in the transaction.
  if (!predicted) obj.touched[consumer].id = "LSE-05";
  obj.state.stage([consumer, a](Mirror& mirror) {
    if (a.to && a.to != a.before) {
      mirror.cursor[consumer] = *a.to;
      mirror.manualCursor.erase(consumer);
    }
    std::erase_if(mirror.rows, [&](const auto& entry) {
      const Row& row = entry.second;
      return row.consumer == consumer && settledState(row.state) && row.last < a.to.value_or(0);
    });
  });
  obj.touched[consumer].advanced = true;
  touch(obj, consumer, "LSE-05");
}

// Settled rows deleted on their own (variant log.lease_ack_three_units): only rows below the cursor,
// and exactly the settled ones there.
void LeaseChecks::onDeleteWrite(const EventFields& e) {
  ObjectState& obj = object(e);
  const std::string consumer = text(e, "consumer");
  const int64_t below = num(e, "below");
  const Mirror& m = obj.state.staged();
  const std::optional<int64_t> cursor = lookup(m.cursor, consumer);
  int64_t settledBelow = 0;
  for (const auto& [id, row] : rowsOf(m.rows, consumer)) settledBelow += settledState(row->state) && row->last < below ? 1 : 0;
  tallies_.check("LSE-05", below <= cursor.value_or(0) && num(e, "deleted") == settledBelow, [&] {
    return label(e) + " deleted " + str(num(e, "deleted")) + " settled rows of " + consumer + " below " + str(below) + " with cursor " +
           str(cursor) + "; " + str(settledBelow) + " settled rows lie below it";
  });
  obj.state.stage([consumer, below](Mirror& mirror) {
    std::erase_if(mirror.rows, [&](const auto& entry) {
      const Row& row = entry.second;
      return row.consumer == consumer && settledState(row.state) && row.last < below;
    });
  });
  touch(obj, consumer, "LSE-05");
}

// LSE-10: a returned lease is a committed grant and carries exactly the records of its range.
void LeaseChecks::onLease(const EventFields& e) {
  ObjectState& obj = object(e);
  const std::string object = label(e);
  const std::string consumer = text(e, "consumer"), batchId = text(e, "batchId");
  const int64_t first = num(e, "first"), last = num(e, "last"), attempt = num(e, "attempt");
  const Mirror& m = obj.state.staged();
  auto it = m.rows.find(batchId);
  const bool fenced = m.fenced.count(batchId) > 0;
  const bool granted = it != m.rows.end() && it->second.consumer == consumer && it->second.first == first && it->second.last == last &&
                       it->second.attempt == attempt && it->second.expiresAt == num(e, "expiresAt");
  const json& offsets = e.at("offsets");
  const json& keys = e.at("keys");
  const json& bodies = e.at("bodies");
  bool content = offsets.size() == static_cast<std::size_t>(last - first + 1) && keys.size() == offsets.size() && bodies.size() == offsets.size();
  std::string wrong;
  for (std::size_t i = 0; content && i < offsets.size(); ++i) {
    const int64_t offset = offsets[i].get<int64_t>();
    content = offset == first + static_cast<int64_t>(i);
    auto known = obj.records.find(offset);
    if (content && known != obj.records.end())
      content = known->second.first == keys[i].get<std::string>() && known->second.second == bodies[i].get<std::string>();
    if (!content) wrong = " at offset " + str(offset);
  }
  tallies_.check("LSE-10", (granted || fenced) && content, [&] {
    return object + " returned lease " + batchId + " " + range(first, last) + " attempt " + str(attempt) +
           (granted || fenced ? "" : " that matches no committed grant") + (content ? "" : " with wrong records" + wrong);
  });
  const LeaseOptions& o = *obj.options;
  if (!flag(e, "reclaimed") || !o.maxAttempts || attempt <= *o.maxAttempts) return;
  if (o.onPoison)
    tallies_.check("LSE-08", false, [&] { return object + " returned " + batchId + " at attempt " + str(attempt) + " instead of skipping it as poisoned"; });
  else
    tallies_.check("LSE-07", true, [] { return std::string(); });
}

// The workload's view: an ack or nack that returned normally matched its lease; one that threw
// LogLeaseError was rejected by the log.
void LeaseChecks::onOutcome(const EventFields& e) {
  const std::string partition = text(e, "partition");
  const std::string object = partition.find('/') == std::string::npos ? className_ + "/" + partition : partition;
  ObjectState* found = objects_.find(object);
  if (!found) return;
  const std::string outcome = text(e, "outcome"), result = text(e, "result"), batchId = text(e, "batchId");
  if (outcome != "ack" && outcome != "nack") return;
  ObjectState& obj = *found;
  if (result == "ok")
    tallies_.check("LSE-04", obj.settled.count(outcome + ":" + batchId) > 0,
                   [&] { return object + " " + outcome + " of " + batchId + " returned normally without a committed settle"; });
  else if (result == "LogLeaseError")
    tallies_.check("LSE-04", obj.rejected.count(batchId) > 0,
                   [&] { return object + " " + outcome + " of " + batchId + " threw LogLeaseError that the log never raised"; });
}

// ---------------------------------------------------------------------------------------------
// State at commits

LeaseChecks::Mirror LeaseChecks::readStore(const std::string& object) {
  StoredTables& tables = stored_[object];
  tables.leases.refresh(reader_, object);
  tables.allocations.refresh(reader_, object);
  tables.cursors.refresh(reader_, object);
  Mirror stored;
  for (const auto& [rowid, r] : tables.leases.rows())
    stored.rows[r.text("batch_id")] =
        Row{r.text("consumer"), r.int64("first_offset"), r.int64("last_offset"), r.text("state"), r.int64("attempt"), r.int64("expires_at")};
  for (const auto& [rowid, r] : tables.allocations.rows()) stored.allocation[r.text("consumer")] = r.int64("allocated_offset");
  for (const auto& [rowid, r] : tables.cursors.rows()) stored.cursor[r.text("consumer")] = r.int64("o");
  return stored;
}

// Where offset `offset` of `object` can be read at World time `now`: "hot", or the locator of the
// indexed segment holding it when cold storage is configured and the cold store cannot have lost
// that segment; nullopt when it cannot be read.
std::optional<std::string> LeaseChecks::readableAt(const std::string& object, const ObjectState& obj, int64_t offset, int64_t now) {
  if (reader_(object, "SELECT 1 AS hit FROM " DURASIM_LOG_RECORDS " WHERE \"offset\" = ?", {offset}).next()) return "hot";
  if (!obj.cold) return std::nullopt;
  std::optional<SqlRow> segment = reader_(object,
                                          "SELECT locator FROM " DURASIM_LOG_SEGMENTS
                                          " WHERE first_offset <= ? AND last_offset >= ? ORDER BY first_offset DESC LIMIT 1",
                                          {offset, offset})
                                      .next();
  if (!segment || coldLoss_.lossPossible(segment->text("locator"), now)) return std::nullopt;
  return "in the cold segment " + segment->text("locator");
}

bool LeaseChecks::hasLeaseTables(const std::string& object) {
  return reader_.hasTable(object, DURASIM_LOG_LEASES) && reader_.hasTable(object, DURASIM_LOG_ALLOCATIONS);
}

bool LeaseChecks::hasLogTable(const std::string& object) {
  return reader_.hasTable(object, DURASIM_LOG_SEQ);
}

void LeaseChecks::checkStore(const std::string& object, ObjectState& obj, int64_t now) {
  const Mirror stored = readStore(object);
  checkMirror(object, obj, stored);
  std::set<std::string> consumers;
  for (const auto& [id, row] : stored.rows) consumers.insert(row.consumer);
  for (const auto& [consumer, offset] : stored.allocation) consumers.insert(consumer);
  for (const std::string& consumer : consumers) {
    auto t = obj.touched.find(consumer);
    checkShape(object, consumer, stored, now, t == obj.touched.end() ? nullptr : &t->second);
  }
}

// The stored rows, allocation and cursor of each consumer against the mirror; the mirror then
// follows the store so that one divergence is reported once.
void LeaseChecks::checkMirror(const std::string& object, ObjectState& obj, const Mirror& stored) {
  const Mirror& m = obj.state.staged();
  std::set<std::string> consumers;
  for (const Mirror* side : {&stored, static_cast<const Mirror*>(&m)}) {
    for (const auto& [id, row] : side->rows) consumers.insert(row.consumer);
    for (const auto& [consumer, offset] : side->allocation) consumers.insert(consumer);
  }
  for (const std::string& consumer : consumers) {
    const auto storedRows = rowsOf(stored.rows, consumer), mirrorRows = rowsOf(m.rows, consumer);
    const std::optional<int64_t> storedAllocation = lookup(stored.allocation, consumer), mirrorAllocation = lookup(m.allocation, consumer);
    const std::optional<int64_t> storedCursor = lookup(stored.cursor, consumer), mirrorCursor = lookup(m.cursor, consumer);
    auto t = obj.touched.find(consumer);
    const std::string id = t == obj.touched.end() ? "LSE-09" : t->second.id;
    const bool rowsEqual = sameRows(storedRows, mirrorRows);
    const bool ok = rowsEqual && storedAllocation == mirrorAllocation && storedCursor == mirrorCursor;
    if (!obj.state.uncertain()) tallies_.check(id, ok, [&] {
      std::string what = !rowsEqual ? "lease rows (" + str(static_cast<int64_t>(storedRows.size())) + " stored, " +
                                          str(static_cast<int64_t>(mirrorRows.size())) + " written)"
                                    : storedAllocation != mirrorAllocation
                                          ? "allocation " + str(storedAllocation) + " (written " + str(mirrorAllocation) + ")"
                                          : "cursor " + str(storedCursor) + " (written " + str(mirrorCursor) + ")";
      return object + " consumer " + consumer + (t == obj.touched.end() ? " untouched by the commit" : "") + " has stored " + what;
    });
    if (ok) continue;
    std::vector<std::pair<std::string, Row>> rows;  // the stored rows outlive `stored`: copies
    for (const auto& [id2, row] : storedRows) rows.emplace_back(*id2, *row);
    obj.state.stage([consumer, rows = std::move(rows), storedAllocation, storedCursor](Mirror& mirror) {
      std::erase_if(mirror.rows, [&](const auto& entry) { return entry.second.consumer == consumer; });
      for (const auto& [id2, row] : rows) {
        mirror.rows[id2] = row;
        mirror.fenced.erase(id2);
      }
      if (storedAllocation) mirror.allocation[consumer] = *storedAllocation; else mirror.allocation.erase(consumer);
      if (storedCursor) mirror.cursor[consumer] = *storedCursor; else mirror.cursor.erase(consumer);
    });
  }
}

// LSE-01, LSE-05, LSE-12, LSE-14 over the stored rows of one consumer.
void LeaseChecks::checkShape(const std::string& object, const std::string& consumer, const Mirror& stored, int64_t now, const Touch* touch) {
  const auto rows = rowsOf(stored.rows, consumer);
  std::optional<RowRef<Row>> lastHeld;
  for (const RowRef<Row>& held : rows) {
    const Row& row = *held.row;
    if (!heldState(row.state, row.expiresAt, now)) continue;
    if (lastHeld)
      tallies_.check("LSE-01", row.first > lastHeld->row->last, [&] {
        return object + " " + consumer + " holds " + *lastHeld->id + " " + range(lastHeld->row->first, lastHeld->row->last) + " and " + *held.id +
               " " + range(row.first, row.last);
      });
    lastHeld = held;
  }
  const std::optional<int64_t> cursor = lookup(stored.cursor, consumer);
  if (const std::optional<int64_t> allocation = lookup(stored.allocation, consumer)) {
    int64_t x = cursor.value_or(0);
    for (const auto& [id, row] : rows) {
      if (row->last < x) continue;
      if (row->first > x) break;
      x = row->last + 1;
    }
    tallies_.check("LSE-12", x >= *allocation, [&] {
      return object + " " + consumer + " offset " + str(x) + " below allocation " + str(*allocation) + " is neither below cursor " + str(cursor) +
             " nor in a lease row";
    });
  }
  if (objects_[object].state.staged().manualCursor.count(consumer)) return;  // commit() may move a cursor anywhere
  const int64_t at = cursor.value_or(0);
  std::string passed, stale, resting;
  for (const auto& [id, row] : rows) {
    if (!settledState(row->state) && row->first < at) passed = *id + " " + range(row->first, row->last) + " " + row->state;
    if (settledState(row->state) && row->last < at) stale = *id;
    if (settledState(row->state) && row->first <= at && at <= row->last) resting = *id + " " + range(row->first, row->last) + " " + row->state;
  }
  tallies_.check("LSE-05", passed.empty() && stale.empty(), [&] {
    return object + " " + consumer + " cursor " + str(at) + (passed.empty() ? "" : " passed the unsettled row " + passed) +
           (stale.empty() ? "" : " kept the settled row " + stale + " below it");
  });
  tallies_.check(touch && touch->skipped ? "LSE-14" : "LSE-05", resting.empty(), [&] {
    return object + " " + consumer + " cursor " + str(at) + " stops at the settled row " + resting;
  });
}

// ---------------------------------------------------------------------------------------------
// The end of the run

void LeaseChecks::finish(int64_t now) {
  for (const auto& [object, obj] : objects_.all()) {
    if (!obj.optionsSeen) continue;
    const bool tables = hasLeaseTables(object);
    if (!obj.everLeases) {
      tallies_.check("LSE-16", !tables, [&] { return object + " ends with lease tables but never had the leases option"; });
      continue;
    }
    if (!tables || !hasLogTable(object)) continue;  // a retired log (H19 leaves lease tables: SCH-11's)
    const Mirror stored = readStore(object);
    const int64_t next = reader_(object, "SELECT next_offset AS n FROM " DURASIM_LOG_SEQ).one().int64("n");
    for (const auto& [consumer, allocation] : stored.allocation) {
      const std::optional<int64_t> cursor = lookup(stored.cursor, consumer);
      const auto rows = rowsOf(stored.rows, consumer);
      tallies_.check("LSE-15", cursor == next && rows.empty(), [&] {
        return object + " " + consumer + " at " + str(now) + " ends with cursor " + str(cursor) + " of next offset " + str(next) + " and " +
               str(static_cast<int64_t>(rows.size())) + " lease rows left" +
               (rows.empty() ? "" : ", the first " + range(rows.front().row->first, rows.front().row->last) + " " + rows.front().row->state);
      });
    }
  }
}

}  // namespace durasim::properties
