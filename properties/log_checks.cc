// LOG checks; see log_checks.h.
#include "properties/log_checks.h"

#include <algorithm>
#include <memory>

#include "engine/alarms_events.h"
#include "engine/log_events.h"
#include "engine/log_schema.h"
#include "engine/scheduler_events.h"
#include "properties/event_fields.h"
#include "properties/schema_check.h"

namespace durasim::properties {

namespace {
using nlohmann::json;
using namespace fields;

// log.md 3 step 1: the definite rejections of append.
bool definiteRejection(const std::string& message) {
  return message == "Append requires at least one record" || message.rfind("Append accepts at most ", 0) == 0 ||
         message == "Deduplication key must be a non-empty string" || message == "Record body is not serializable JSON";
}

// Events emitted inside a storage transaction: the `.write` ones (but `log.cold.write`, which
// announces the call to the cold store) and the trim transaction's three.
bool isWrite(EventType ev) {
  if (!ev.starts_with(log_events::kPrefix) || ev == log_events::kColdWrite) return false;
  return (ev.size() > 6 && ev.ends_with(".write")) || ev == log_events::kTrimDelete || ev == log_events::kTrimIntent ||
         ev == log_events::kTrimFlush;
}

// A stored value in a violation message: an integer as itself, anything else by its type.
std::string sqlText(const SqlValue& v) {
  if (const int64_t* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  return std::holds_alternative<SqlNull>(v) ? "NULL" : "a non-integer";
}

}  // namespace

LogChecks::LogChecks(StoreReader reader, std::string className)
    : ObjectChecker(std::move(className)),
      reader_(std::move(reader)),
      history_(HistoryGraph::Options{.follows = [this](std::string_view label) { return of_class(label, className_); }, .logOffsets = true}, &tallies_) {
  for (int i = 1; i <= 18; ++i) tallies_.declare(std::string("LOG-") + (i < 10 ? "0" : "") + std::to_string(i));
  tallies_.declare("SCH-11");
}

void LogChecks::observe(EventType name, const EventFields& e) {
  history_.observe(observing());
  coldLoss_.observe(name, e);
  if (name == "fault") return onFault(e);
  if (name == log_events::kAppProduce || name == log_events::kAppConsume || name == log_events::kAppProbe ||
      name == log_events::kAppProbeDone)
    return onApp(name, e);
  if (name == log_events::kAppLogRetired) return onRetired(e);
  if (!mine(e)) return;
  // The platform's alarm firing changes the stored alarm between commits (LOG-17 re-learns it).
  if (name.starts_with("alarm.")) objects_[text(e, "object")].alarmKnown = false;
  if (e.contains("incarnation")) dispatch(name, e);
}

// The events each check reads: a malformed one is a violation of the check it feeds.
std::string LogChecks::invariant_for(EventType ev) const {
  if (ev == log_events::kAppendWrite || ev == "commit" || ev == log_events::kAppend) return "LOG-01";
  if (ev == log_events::kAppProduce || ev == log_events::kAppendRejected) return "LOG-03";
  if (ev == log_events::kCommitWrite || ev == log_events::kAdvanceWrite) return "LOG-06";
  if (ev == log_events::kRead) return "LOG-07";
  if (ev == log_events::kReadTruncated || ev == log_events::kAppConsume) return "LOG-08";
  if (ev == log_events::kLoad) return "LOG-13";
  if (ev == log_events::kOptions || ev == log_events::kTrimEnd) return "LOG-12";
  if (ev == log_events::kForgetWrite) return "LOG-15";
  if (ev == "fault" || ev == "cold.call" || ev == log_events::kAppProbe || ev == log_events::kAppProbeDone) return "LOG-16";
  if (ev == log_events::kColdWrite) return "LOG-11";
  if (ev == log_events::kAppLogRetired) return "SCH-11";
  return "LOG-10";
}

void LogChecks::onFault(const EventFields& e) {
  if (text(e, "fault") == "clock.incarnation_offset" && num(e.at("details"), "offset") != 0) clockSkewed_.insert(text(e, "object"));
}

void LogChecks::dispatch(EventType ev, const EventFields& e) {
  const std::string& object = textRef(e, "object");
  ObjectState& s = objects_[object];
  const int64_t incarnation = num(e, "incarnation");
  if (ev == "incarnation.start") {
    s.incarnation = incarnation;
    s.appendWrites.clear();
    resetOpen(s);
    return;
  }
  if (ev == "durability") return onDurability(s, e);
  if (ev == "confirm") return onConfirm(s, e);
  if (incarnation != s.incarnation && s.incarnation != 0) return;  // a zombie: its storage is gone
  if (s.incarnation == 0) s.incarnation = incarnation;
  if (ev == "commit") return onCommit(s, object, e);
  if (ev == "commit.noop") {
    s.state.commit_unchanged();
    s.schedulerTouched = false;
    return;
  }
  if (ev == "commit.failed" || ev == "incarnation.end") {
    if (ev == "incarnation.end") s.alarmKnown = false;
    return resetOpen(s);
  }
  if (ev.starts_with(scheduler_events::kPrefix) || ev.starts_with(alarms_events::kPrefix)) {
    s.schedulerTouched = true;
    return;
  }
  if (isWrite(ev)) return onWrite(s, object, ev, e);
  if (ev == log_events::kOptions) return onOptions(s, e);
  if (ev == log_events::kAppend) return onAppend(s, object, e);
  if (ev == log_events::kAppendRejected) return onRejected(s, object, e);
  if (ev == log_events::kRead) return onRead(s, object, e);
  if (ev == log_events::kReadTruncated) return onReadTruncated(s, object, e);
  if (ev == log_events::kLoad) return onLoad(object, e);
  if (ev == log_events::kTrimBegin) {
    s.trimBegunAt = num(e, "now");
    s.trimAfterHeal = s.trimAfterHeal || healed_;
    s.appendedDuringTrim = false;
    return;
  }
  if (ev == log_events::kTrimEnd) return onTrimEnd(s, object, e);
  if (ev == log_events::kColdWrite) return onColdWrite(s, object, e);
  if (ev == log_events::kColdFailed) return onColdFailed(object, e);
  if (ev == log_events::kLease) return observeRecords(s, object, e, true);
}

void LogChecks::resetOpen(ObjectState& s) {
  s.state.roll_back();
  s.schedulerTouched = false;
}

void LogChecks::onOptions(ObjectState& s, const EventFields& e) {
  Options o;
  o.maxBatchSize = num(e, "maxBatchSize");
  const json& retention = e.at("retention");
  o.retention = !retention.is_null();
  if (o.retention) {
    o.maxAgeMs = optInt(retention.at("maxAgeMs"));
    o.maxRecords = optInt(retention.at("maxRecords"));
    o.maxBytes = optInt(retention.at("maxBytes"));
  }
  o.cold = e.at("cold").get<bool>();
  s.coldAlways = s.coldAlways && o.cold;
  s.options = o;
}

// ---------------------------------------------------------------------------------------------
// Writes, commits and durability

void LogChecks::View::apply(const EventFields& w) {
  View& v = *this;
  const EventType ev(textRef(w, "ev"));
  if (ev == log_events::kAppendWrite) {
    const std::vector<std::string> keys = strings(w, "keys");
    const std::vector<int64_t> offsets = ints(w, "offsets");
    const int64_t first = num(w, "first");
    for (std::size_t i = 0; i < keys.size() && i < offsets.size(); ++i)
      if (offsets[i] >= first && !v.records.count(offsets[i])) {
        v.records[offsets[i]] = keys[i];
        v.keys[keys[i]] = offsets[i];
      }
    v.next = std::max(v.next, num(w, "next"));
  } else if (ev == log_events::kCommitWrite) {
    if (w.at("moved").get<bool>()) v.cursors[text(w, "consumer")] = num(w, "offset");
  } else if (ev == log_events::kAdvanceWrite) {
    if (const std::optional<int64_t> to = optInt(w.at("to"))) {
      int64_t& cursor = v.cursors[text(w, "consumer")];
      cursor = std::max(cursor, *to);
    }
  } else if (ev == log_events::kTrimDelete || ev == log_events::kTrimFlush) {
    const int64_t last = num(w, "last");
    for (int64_t o = v.hotFrom; o <= last && o < v.next; ++o)
      if (auto r = v.records.find(o); r != v.records.end()) v.keys.erase(r->second);
    v.hotFrom = std::max(v.hotFrom, last + 1);
    v.flush.reset();  // a deletion without cold drops a stale intent too (docs/decisions.md)
    if (ev == log_events::kTrimFlush) v.segments[num(w, "first")] = Segment{last, text(w, "locator")};
  } else if (ev == log_events::kTrimSegmentWrite) {
    v.segments[num(w, "first")] = Segment{num(w, "last"), text(w, "locator")};
  } else if (ev == log_events::kTrimIntent) {
    v.flush = std::make_pair(num(w, "first"), num(w, "last"));
  } else if (ev == log_events::kForgetWrite) {
    const int64_t offset = num(w, "offset");
    for (auto it = v.segments.begin(); it != v.segments.end();) it = it->second.last < offset ? v.segments.erase(it) : std::next(it);
  }
}

void LogChecks::onWrite(ObjectState& s, const std::string& object, EventType ev, const EventFields& e) {
  if (ev == log_events::kAppendWrite) {
    checkAppendWrite(object, s.state.staged(), e);
    s.appendWrites.emplace_back(strings(e, "keys"), ints(e, "offsets"));
    if (s.trimBegunAt) s.appendedDuringTrim = true;
  } else if (ev == log_events::kCommitWrite) {
    const std::string consumer = text(e, "consumer");
    const auto& cursors = s.state.staged().cursors;
    const auto it = cursors.find(consumer);
    const bool forward = it == cursors.end() || num(e, "offset") > it->second;
    tallies_.check("LOG-06", e.at("moved").get<bool>() == forward, [&] {
      return object + " commit(" + consumer + ", " + str(num(e, "offset")) + ") moved=" + e.at("moved").dump() + " over cursor " +
             (it == cursors.end() ? std::string("none") : str(it->second));
    });
  } else if (ev == log_events::kForgetWrite) {
    const int64_t offset = num(e, "offset");
    const auto& segments = s.state.staged().segments;
    const auto below = std::count_if(segments.begin(), segments.end(), [&](const auto& seg) { return seg.second.last < offset; });
    tallies_.check("LOG-15", num(e, "forgotten") == below, [&] {
      return object + " forgetColdBefore(" + str(offset) + ") removed " + str(num(e, "forgotten")) + " segments, " + str(below) + " lie below";
    });
  } else if (ev == log_events::kTrimDelete || ev == log_events::kTrimIntent || ev == log_events::kTrimFlush) {
    checkTrimWrite(object, s, ev, e);
  }
  s.state.stage(e);
}

// LOG-01 and LOG-02 against the offsets and hot keys the transaction started from.
void LogChecks::checkAppendWrite(const std::string& object, const View& staged, const EventFields& e) {
  const std::vector<std::string> keys = strings(e, "keys");
  const std::vector<int64_t> offsets = ints(e, "offsets");
  const int64_t first = num(e, "first"), next = num(e, "next"), fresh = num(e, "new");
  tallies_.check("LOG-01", first == staged.next && next == first + fresh && fresh >= 0, [&] {
    return object + " append allocated [" + str(first) + ", " + str(next) + ") for " + str(fresh) + " new keys; next_offset was " + str(staged.next);
  });
  std::map<std::string, int64_t> assigned;
  int64_t expectedNext = first;
  bool ok = keys.size() == offsets.size();
  for (std::size_t i = 0; ok && i < keys.size(); ++i) {
    int64_t expected;
    if (auto a = assigned.find(keys[i]); a != assigned.end()) expected = a->second;
    else if (auto hot = staged.keys.find(keys[i]); hot != staged.keys.end()) expected = hot->second;
    else expected = expectedNext++;
    assigned[keys[i]] = expected;
    ok = offsets[i] == expected;
  }
  tallies_.check("LOG-02", ok && expectedNext - first == fresh, [&] {
    return object + " append of keys " + e.at("keys").dump() + " got offsets " + e.at("offsets").dump() + " (first " + str(first) +
           "); dedup against the hot keys gives " + str(expectedNext - first) + " new records";
  });
}

// LOG-10 and LOG-11 on the trim transaction's writes.
void LogChecks::checkTrimWrite(const std::string& object, const ObjectState& s, EventType ev, const EventFields& e) {
  const int64_t first = num(e, "first"), last = num(e, "last");
  const View& v = s.state.staged();
  if (ev == log_events::kTrimIntent) {
    tallies_.check("LOG-11", !v.flush && first == v.hotFrom && first <= last && last < v.next, [&] {
      return object + " recorded flush intent [" + str(first) + ", " + str(last) + "] over hot [" + str(v.hotFrom) + ", " + str(v.next) + ")" +
             (v.flush ? " while another intent was open" : "");
    });
    return;
  }
  const bool cold = s.options && s.options->cold;
  const bool prefix = first == v.hotFrom && first <= last && last < v.next && num(e, "deleted") == last - first + 1;
  if (ev == log_events::kTrimDelete) {
    tallies_.check("LOG-10", prefix && !cold, [&] {
      return object + " deleted hot [" + str(first) + ", " + str(last) + "] (" + str(num(e, "deleted")) + " rows) over hot [" + str(v.hotFrom) +
             ", " + str(v.next) + ")" + (cold ? " without flushing to the configured cold store" : "");
    });
  } else {
    tallies_.check("LOG-10", prefix && v.flush == std::make_pair(first, last), [&] {
      return object + " flushed [" + str(first) + ", " + str(last) + "] deleting " + str(num(e, "deleted")) + " rows over hot [" + str(v.hotFrom) +
             ", " + str(v.next) + "), flush intent " + (v.flush ? json::array({v.flush->first, v.flush->second}).dump() : std::string("none"));
    });
  }
}

void LogChecks::onCommit(ObjectState& s, const std::string& object, const EventFields& e) {
  const uint64_t commit = e.at("commit").get<uint64_t>();
  const bool logOnly = !s.state.open_edits().empty() && !s.schedulerTouched;
  s.state.commit(commit);
  s.schedulerTouched = false;
  const std::vector<EventFields>& writes = s.state.unconfirmed().back().edits;
  for (const EventFields& w : writes)
    if (w.at("ev") == log_events::kTrimIntent) s.flushSettled = false;
  // LOG-17: log writes alone never move the physical alarm.
  const json& alarm = e.at("alarm");
  if (logOnly && s.alarmKnown)
    tallies_.check("LOG-17", alarm == *s.lastAlarm, [&] { return object + " log commit moved the alarm from " + s.lastAlarm->dump() + " to " + alarm.dump(); });
  s.lastAlarm = alarm;
  s.alarmKnown = true;
  if (hasLogTables(object)) checkState(s, object, writes);
}

void LogChecks::onConfirm(ObjectState& s, const EventFields& e) {
  s.state.confirm(e.at("commit").get<uint64_t>());
}

// The incarnation ended with unconfirmed commits: a prefix of `kept` of them survives.
void LogChecks::onDurability(ObjectState& s, const EventFields& e) {
  const auto kept = static_cast<std::size_t>(num(e, "kept"));
  if (kept < s.state.unconfirmed().size()) s.flushSettled = false;
  s.state.decide(kept);
  s.schedulerTouched = false;
  // What was shown of a record survives when its offset's record did.
  const auto& durable = s.state.durable().records;
  std::erase_if(s.known, [&](const auto& entry) {
    const auto record = durable.find(entry.first);
    return record == durable.end() || record->second != entry.second.key;
  });
  s.alarmKnown = false;
}

// ---------------------------------------------------------------------------------------------
// State at a commit

bool LogChecks::hasLogTables(const std::string& object) {
  return reader_.hasTable(object, DURASIM_LOG_SEQ);
}

namespace {

// A hot row's part of LOG-05's totals: its byte count, and whether that is not its payload's.
int64_t heldBytesOf(const SqlRow& row, std::size_t bytes) {
  const int64_t* stored = std::get_if<int64_t>(&row[bytes]);
  return stored ? *stored : 0;
}
bool wrongCountOf(const SqlRow& row, std::size_t bytes, std::size_t length) {
  return !std::holds_alternative<int64_t>(row[bytes]) || row[bytes] != row[length];
}

}  // namespace

LogChecks::StoredLog::StoredLog()
    : records(DURASIM_LOG_RECORDS, kRecordColumns,
              TableMirror::Index{[this](int64_t, const SqlRow& row) {
                                   heldBytes -= heldBytesOf(row, kBytes);
                                   wrongRows -= wrongCountOf(row, kBytes, kLength);
                                   oldestAppend.count(row[kAppendedAt], -1);
                                 },
                                 [this](int64_t, const SqlRow& row) {
                                   heldBytes += heldBytesOf(row, kBytes);
                                   wrongRows += wrongCountOf(row, kBytes, kLength);
                                   oldestAppend.count(row[kAppendedAt], +1);
                                 }}),
      segments(DURASIM_LOG_SEGMENTS, "last_offset, locator"),
      cursors(DURASIM_LOG_CURSORS, "consumer, \"offset\" AS o"),
      seq(DURASIM_LOG_SEQ, "next_offset, total_bytes") {}

// The one row of the sequence table (next_offset, total_bytes).
const SqlRow& LogChecks::sequenceRow(const std::string& object) {
  const SqlRow* row = storedSequenceRow(object);
  if (!row) throw SqlError("expected exactly one row, got 0");
  return *row;
}

const SqlRow* LogChecks::storedSequenceRow(const std::string& object) {
  TableMirror& seq = stored(object).seq;
  seq.refresh(reader_, object);
  const auto row = seq.rows().find(1);
  return row == seq.rows().end() ? nullptr : &row->second;
}

// The bounds as the store holds them: the sequence row, the least hot offset and the least
// segment (the offsets and first_offset are their tables' rowids).
LogChecks::Bounds LogChecks::storeBounds(const std::string& object) {
  const SqlRow& row = sequenceRow(object);
  StoredLog& t = stored(object);
  t.records.refresh(reader_, object);
  t.segments.refresh(reader_, object);
  Bounds b;
  b.next = row.int64("next_offset");
  b.totalBytes = row.int64("total_bytes");
  b.hot = t.records.rows().empty() ? b.next : t.records.rows().begin()->first;
  b.oldest = std::min(t.segments.rows().empty() ? b.hot : t.segments.rows().begin()->first, b.hot);
  return b;
}

std::map<int64_t, LogChecks::Segment> LogChecks::storeSegments(const std::string& object) {
  TableMirror& segments = stored(object).segments;
  segments.refresh(reader_, object);
  std::map<int64_t, Segment> out;
  for (const auto& [first, r] : segments.rows()) out.emplace_hint(out.end(), first, Segment{r.int64("last_offset"), r.text("locator")});
  return out;
}

void LogChecks::checkState(ObjectState& s, const std::string& object, const std::vector<EventFields>& writes) {
  const View& v = s.state.local();
  const Bounds b = storeBounds(object);
  const StoredLog& t = stored(object);
  const std::map<int64_t, SqlRow>& rows = t.records.rows();
  const auto count = static_cast<int64_t>(rows.size());
  const int64_t heldBytes = t.heldBytes, wrong = t.wrongRows;
  tallies_.check("LOG-01", b.next == v.next, [&] { return object + " next_offset " + str(b.next) + ", the committed appends allocated up to " + str(v.next); });
  tallies_.check("LOG-04", b.oldest <= b.hot && b.hot <= b.next && count == b.next - b.hot, [&] {
    return object + " bounds oldest " + str(b.oldest) + ", hot " + str(b.hot) + ", next " + str(b.next) + " with " + str(count) + " hot rows";
  });
  tallies_.check("LOG-05", b.totalBytes == heldBytes && b.totalBytes >= 0 && wrong == 0, [&] {
    return object + " total_bytes " + str(b.totalBytes) + " but the hot rows hold " + str(heldBytes) + " (" + str(wrong) +
           " rows with a wrong byte count)";
  });
  // LOG-03: the hot rows are exactly what the committed writes left, with their keys. LOG-02: each
  // new record holds the payload size of its key's last occurrence in the batch.
  std::map<int64_t, int64_t> written;  // new offset -> bytes of its key's last occurrence
  for (const EventFields& w : writes)
    if (w.at("ev") == log_events::kAppendWrite) {
      const std::vector<int64_t> offsets = ints(w, "offsets"), bytes = ints(w, "bytes");
      for (std::size_t i = 0; i < offsets.size() && i < bytes.size(); ++i)
        if (offsets[i] >= num(w, "first")) written[offsets[i]] = bytes[i];
    }
  bool keysOk = true;
  for (const auto& [o, bytes] : written) {
    const auto row = rows.find(o);
    const auto known = v.records.find(o);
    const std::string* key = row != rows.end() ? std::get_if<std::string>(&row->second[kDedupKey]) : nullptr;
    keysOk = keysOk && key && known != v.records.end() && *key == known->second;
    if (row == rows.end()) continue;
    const SqlValue& stored = row->second[kBytes];
    tallies_.check("LOG-02", stored == SqlValue(bytes), [&] {
      return object + " offset " + str(o) + " holds " + sqlText(stored) + " payload bytes, its key's last occurrence had " + str(bytes);
    });
  }
  const int64_t hotFrom = std::min(v.hotFrom, v.next);
  tallies_.check("LOG-03", keysOk && b.hot == hotFrom && count == v.next - hotFrom, [&] {
    return object + " holds hot [" + str(b.hot) + ", " + str(b.next) + ") with " + str(count) + " rows; the committed writes leave [" + str(hotFrom) +
           ", " + str(v.next) + ")" + (keysOk ? "" : ", and an appended offset lacks its key");
  });
  // LOG-06: the cursors as committed, none below its durable value.
  stored(object).cursors.refresh(reader_, object);
  std::map<std::string, int64_t> cursors;
  for (const auto& [rowid, r] : t.cursors.rows()) cursors[r.text("consumer")] = r.int64("o");
  bool cursorsOk = cursors == v.cursors;
  for (const auto& [consumer, offset] : s.state.durable().cursors) cursorsOk = cursorsOk && cursors.count(consumer) && cursors[consumer] >= offset;
  tallies_.check("LOG-06", cursorsOk, [&] { return object + " stored cursors differ from the committed ones or fell below a durable one"; });
  // LOG-10: the segments as flushed and forgotten.
  const std::map<int64_t, Segment> segments = storeSegments(object);
  tallies_.check("LOG-10", segments == v.segments, [&] {
    return object + " holds " + str(static_cast<int64_t>(segments.size())) + " segments; the committed flushes leave " + str(static_cast<int64_t>(v.segments.size()));
  });
  // LOG-15 and LOG-16 on the segment index.
  bool disjoint = true, contiguous = true;
  std::optional<int64_t> previousLast;
  for (const auto& [first, seg] : segments) {
    disjoint = disjoint && first <= seg.last && seg.last < b.hot && (!previousLast || first > *previousLast);
    contiguous = contiguous && (!previousLast || first == *previousLast + 1);
    previousLast = seg.last;
  }
  if (previousLast) contiguous = contiguous && *previousLast + 1 == b.hot;
  tallies_.check("LOG-15", disjoint && (!s.coldAlways || contiguous), [&] {
    return object + " segment index overlaps, reaches hotOffset " + str(b.hot) + ", or has a gap while cold stayed configured";
  });
  if (s.coldAlways)
    tallies_.check("LOG-16", contiguous && (segments.empty() ? b.oldest == b.hot : segments.begin()->first == b.oldest), [&] {
      return object + " offsets in [" + str(b.oldest) + ", " + str(b.hot) + ") are not all covered by segments";
    });
}

// ---------------------------------------------------------------------------------------------
// API events

void LogChecks::onAppend(ObjectState& s, const std::string& object, const EventFields& e) {
  const std::vector<std::string> keys = strings(e, "keys");
  const std::vector<int64_t> offsets = ints(e, "offsets");
  // A write of these keys in this incarnation that gave these offsets and no reply has claimed yet
  // (a write of dedup hits only commits nothing). Retries of one batch can be in flight together
  // and get different offsets (a retry after retention trimmed a key gives it a new one), and a
  // reply can wait at the output gate past a later retry's write: each reply claims a write of its
  // own, so every reply has its write and no write answers twice.
  auto match = std::find(s.appendWrites.rbegin(), s.appendWrites.rend(), std::pair(keys, offsets));
  const bool found = match != s.appendWrites.rend();
  tallies_.check("LOG-02", found, [&] {
    const auto latest = std::find_if(s.appendWrites.rbegin(), s.appendWrites.rend(), [&](const auto& w) { return w.first == keys; });
    return object + " append of " + e.at("keys").dump() + " returned " + e.at("offsets").dump() + ", its write gave " +
           (latest != s.appendWrites.rend() ? json(latest->second).dump() : std::string("nothing"));
  });
  if (found) s.appendWrites.erase(std::next(match).base());
}

void LogChecks::onRejected(ObjectState& s, const std::string& object, const EventFields& e) {
  const std::string message = text(e, "message");
  tallies_.check("LOG-14", definiteRejection(message), [&] { return object + " rejected an append with an unexpected message: " + message; });
  if (!hasLogTables(object)) return;
  const Bounds b = storeBounds(object);
  // (A transaction that changed nothing has no commit event: its writes stay staged, harmlessly.)
  tallies_.check("LOG-03", b.next == s.state.staged().next, [&] {
    return object + " rejected an append but next_offset is " + str(b.next) + " (committed " + str(s.state.local().next) + ")";
  });
}

void LogChecks::observeRecords(ObjectState& s, const std::string& object, const EventFields& e, bool withBodies) {
  const std::vector<int64_t> offsets = ints(e, "offsets");
  const std::vector<std::string> keys = strings(e, "keys");
  const std::vector<std::string> bodies = withBodies ? strings(e, "bodies") : std::vector<std::string>{};
  bool ok = keys.size() == offsets.size() && (!withBodies || bodies.size() == offsets.size());
  for (std::size_t i = 0; ok && i < offsets.size(); ++i) {
    Record& known = s.known[offsets[i]];
    if (known.key.empty()) known.key = keys[i];
    ok = known.key == keys[i] && (!withBodies || !known.body || *known.body == bodies[i]);
    if (withBodies && ok) known.body = bodies[i];
  }
  tallies_.check("LOG-09", ok, [&] { return object + " " + text(e, "ev") + " showed offsets " + e.at("offsets").dump() + " with a key or body unlike before"; });
}

// LOG-04, LOG-07, LOG-08 and LOG-09 on a returned page.
void LogChecks::onRead(ObjectState& s, const std::string& object, const EventFields& e) {
  const int64_t from = num(e, "from"), capped = num(e, "capped"), nextOffset = num(e, "nextOffset"), lag = num(e, "lag");
  const int64_t oldest = num(e, "oldest"), hot = num(e, "hot"), next = num(e, "next");
  const std::vector<int64_t> offsets = ints(e, "offsets");
  tallies_.check("LOG-04", oldest <= hot && hot <= next, [&] { return object + " read saw bounds " + str(oldest) + " <= " + str(hot) + " <= " + str(next) + " violated"; });
  // A hot read suspends nowhere: the bounds it used are the stored ones, hot offsets [hot, next).
  if (from >= hot && hasLogTables(object)) {
    const Bounds b = storeBounds(object);
    tallies_.check("LOG-04", b.oldest == oldest && b.hot == hot && b.next == next, [&] {
      return object + " read from " + str(from) + " used bounds " + str(oldest) + "/" + str(hot) + "/" + str(next) + ", the store holds " +
             str(b.oldest) + "/" + str(b.hot) + "/" + str(b.next);
    });
  }
  const std::optional<int64_t> limit = optInt(e.at("limit"));
  const int64_t maxBatch = s.options ? s.options->maxBatchSize : capped;
  bool shape = capped == std::min(limit.value_or(maxBatch), maxBatch) && static_cast<int64_t>(offsets.size()) <= capped;
  for (std::size_t i = 0; i < offsets.size(); ++i) shape = shape && offsets[i] == offsets.front() + static_cast<int64_t>(i);
  const int64_t expectedNext = offsets.empty() ? std::max(from, next) : offsets.back() + 1;
  shape = shape && nextOffset == expectedNext && lag == std::max<int64_t>(0, next - nextOffset);
  if (from >= hot && from < next) shape = shape && static_cast<int64_t>(offsets.size()) == std::min(capped, next - from);
  tallies_.check("LOG-07", shape, [&] {
    return object + " read(" + str(from) + ", " + str(limit) + ") returned offsets " + e.at("offsets").dump() + ", nextOffset " + str(nextOffset) +
           ", lag " + str(lag) + " (capped " + str(capped) + ", bounds " + str(oldest) + "/" + str(hot) + "/" + str(next) + ")";
  });
  tallies_.check("LOG-08", from >= oldest && (from >= next ? offsets.empty() : !offsets.empty() && offsets.front() == from), [&] {
    return object + " read from " + str(from) + " returned " + e.at("offsets").dump() + " with oldest " + str(oldest) + ", next " + str(next) +
           ": a silent gap or a missing truncation error";
  });
  observeRecords(s, object, e, true);
}

// LOG-08 and LOG-16 on a truncation error, against the store at that instant.
void LogChecks::onReadTruncated(ObjectState& s, const std::string& object, const EventFields& e) {
  const int64_t from = num(e, "from"), requested = num(e, "requested"), oldest = num(e, "oldest");
  const Bounds b = storeBounds(object);
  // The read computed its bounds before awaiting the cold store; they can only have risen since.
  tallies_.check("LOG-08", requested == from && oldest > from && oldest <= std::max(from + 1, b.hot), [&] {
    return object + " LogTruncatedError(" + str(requested) + ", " + str(oldest) + ") for a read from " + str(from) + " with bounds " + str(b.oldest) +
           "/" + str(b.hot) + "/" + str(b.next);
  });
  tallies_.check("LOG-16", truncationExcused(s, object, from, e.value("t", int64_t{0})), [&] {
    return object + " could not read offset " + str(from) + " though it is retained and the cold store lost nothing of it";
  });
}

bool LogChecks::truncationExcused(const ObjectState& s, const std::string& object, int64_t from, int64_t now) {
  if (from < storeBounds(object).oldest) return true;
  // A run that once trimmed without cold may have left offsets below hotOffset in no segment.
  if (!s.options || !s.options->cold || !s.coldAlways) return true;
  // The flushed offset was not rehydrated: only a cold store that lost the segment excuses it.
  std::optional<Segment> holder;
  for (const auto& [first, seg] : storeSegments(object))
    if (first <= from && from <= seg.last) holder = seg;
  return holder && coldLoss_.lossPossible(holder->locator, now);
}

void LogChecks::onLoad(const std::string& object, const EventFields& e) {
  if (!hasLogTables(object)) return;
  const int64_t next = sequenceRow(object).int64("next_offset");
  TableMirror& cursors = stored(object).cursors;
  cursors.refresh(reader_, object);
  std::optional<int64_t> least;
  for (const auto& [rowid, r] : cursors.rows()) least = std::min(least.value_or(r.int64("o")), r.int64("o"));
  const int64_t backlog = least ? std::max<int64_t>(0, next - *least) : 0;
  tallies_.check("LOG-13", num(e, "pendingDeliveries") == backlog, [&] {
    return object + " load reported " + str(num(e, "pendingDeliveries")) + " pending deliveries, the cursors give " + str(backlog);
  });
}

// LOG-12 and LOG-18 when trim() returns.
void LogChecks::onTrimEnd(ObjectState& s, const std::string& object, const EventFields& e) {
  const int64_t now = num(e, "now");
  const bool concurrent = s.appendedDuringTrim;
  s.trimBegunAt.reset();
  if (!s.options || !s.options->retention || !hasLogTables(object)) return;
  const Options& o = *s.options;
  // Trim expires the longest expiring prefix in offset order (log.md 6 step 2). With one clock,
  // appended_at rises with the offset and the first record is the oldest; once incarnations ran on
  // skewed clocks (clock.incarnation_offset) only the first record is promised (docs/decisions.md).
  const bool skewed = clockSkewed_.count(object) > 0;
  const SqlRow r = trimFigures(object, skewed);
  if (!concurrent) {
    const std::optional<int64_t> oldestAt = r.optInt64("oldest");
    tallies_.check("LOG-12", (!o.maxRecords || r.int64("n") <= *o.maxRecords) && (!o.maxBytes || r.int64("total") <= *o.maxBytes) &&
                                 (!o.maxAgeMs || !oldestAt || *oldestAt >= now - *o.maxAgeMs),
                   [&] {
                     return object + " after trim at " + str(now) + ": " + str(r.int64("n")) + " records, " + str(r.int64("total")) +
                            " bytes, " + (skewed ? "the first" : "the oldest") + " appended at " + str(oldestAt);
                   });
  }
  if (!o.cold) return;
  const int64_t intents = reader_(object, "SELECT COUNT(*) AS n FROM " DURASIM_LOG_FLUSH).one().int64("n");
  tallies_.check("LOG-18", intents == 0, [&] { return object + " trim returned with a flush intent left"; });
  s.flushSettled = true;
}

// What a trim left, as LOG-12 reads it: the hot rows (n), the oldest one's append time (on skewed
// clocks the first one's: oldest) and the stored byte total (total), as the store's aggregates give
// them; from the mirrored rows when they give the same.
SqlRow LogChecks::trimFigures(const std::string& object, bool skewed) {
  if (std::optional<SqlRow> mirrored = trimFiguresFromMirrors(object, skewed)) return std::move(*mirrored);
  return reader_(object, skewed ? "SELECT COUNT(*) AS n, (SELECT appended_at FROM " DURASIM_LOG_RECORDS " ORDER BY \"offset\" LIMIT 1) AS oldest, "
                                  "(SELECT total_bytes FROM " DURASIM_LOG_SEQ " WHERE id = 1) AS total FROM " DURASIM_LOG_RECORDS
                                : "SELECT COUNT(*) AS n, MIN(appended_at) AS oldest, (SELECT total_bytes FROM " DURASIM_LOG_SEQ
                                  " WHERE id = 1) AS total FROM " DURASIM_LOG_RECORDS)
      .one();
}

// The mirrors agree with the aggregates while every append time is an integer or NULL (MIN over
// anything else compares as SQLite does) and the sequence row holds an integer total; otherwise
// nullopt, and the statement answers.
std::optional<SqlRow> LogChecks::trimFiguresFromMirrors(const std::string& object, bool skewed) {
  StoredLog& t = stored(object);
  t.records.refresh(reader_, object);
  const SqlRow* sequence = storedSequenceRow(object);
  if (!t.oldestAppend.regular() || !sequence || !std::holds_alternative<int64_t>(sequence->at("total_bytes"))) return std::nullopt;
  SqlValue oldest = SqlNull{};
  if (skewed) {
    if (!t.records.rows().empty()) oldest = t.records.rows().begin()->second[kAppendedAt];
  } else if (const std::optional<int64_t> least = t.oldestAppend.least()) {
    oldest = *least;
  }
  static const auto kColumns = std::make_shared<const std::vector<std::string>>(std::vector<std::string>{"n", "oldest", "total"});
  return SqlRow(kColumns, {static_cast<int64_t>(t.records.rows().size()), std::move(oldest), sequence->at("total_bytes")});
}

// LOG-11 and LOG-09 on what is handed to cold.write.
void LogChecks::onColdWrite(ObjectState& s, const std::string& object, const EventFields& e) {
  const int64_t first = num(e, "first"), last = num(e, "last");
  const std::vector<int64_t> offsets = ints(e, "offsets");
  const View& local = s.state.local();
  bool ok = local.flush == std::make_pair(first, last) && static_cast<int64_t>(offsets.size()) == last - first + 1;
  for (std::size_t i = 0; ok && i < offsets.size(); ++i) ok = offsets[i] == first + static_cast<int64_t>(i);
  for (const auto& [segFirst, seg] : local.segments) ok = ok && (last < segFirst || first > seg.last);
  const auto previous = s.coldWrites.find(first);
  const bool same = previous == s.coldWrites.end() ||
                    (previous->second.at("last") == e.at("last") && previous->second.at("keys") == e.at("keys") && previous->second.at("bodies") == e.at("bodies"));
  tallies_.check("LOG-11", ok && same, [&] {
    return object + " cold.write [" + str(first) + ", " + str(last) + "] " +
           (same ? "does not match the flush intent or overlaps a committed segment" : "differs from the earlier write of the same first offset");
  });
  if (previous == s.coldWrites.end()) s.coldWrites[first] = e;
  observeRecords(s, object, e, true);
}

// LOG-10: a failed cold write leaves the records hot and the intent in place.
void LogChecks::onColdFailed(const std::string& object, const EventFields& e) {
  const int64_t first = num(e, "first"), last = num(e, "last");
  const int64_t hot = reader_(object, "SELECT COUNT(*) AS n FROM " DURASIM_LOG_RECORDS " WHERE \"offset\" BETWEEN ? AND ?", {first, last}).one().int64("n");
  const std::optional<SqlRow> intent = reader_(object, "SELECT first_offset, last_offset FROM " DURASIM_LOG_FLUSH).next();
  tallies_.check("LOG-10", hot == last - first + 1 && intent && intent->int64("first_offset") == first && intent->int64("last_offset") == last, [&] {
    return object + " cold.write of [" + str(first) + ", " + str(last) + "] failed, leaving " + str(hot) + " of its records hot" +
           (intent ? "" : " and no flush intent");
  });
}

// ---------------------------------------------------------------------------------------------
// Workload events

void LogChecks::onApp(EventType ev, const EventFields& e) {
  if (!e.contains("partition")) return;
  const std::string partition = text(e, "partition");
  if (!of_class(partition, className_)) return;
  ObjectState& s = objects_[partition];
  if (ev == log_events::kAppProduce) {
    // LOG-03: an acknowledged append is durable, at the offsets returned, with its keys.
    const std::vector<std::string> keys = strings(e, "keys");
    const std::vector<int64_t> offsets = ints(e, "offsets");
    static const json kNoBodies;
    const json* found = e.find("bodies");
    const json& bodies = found ? *found : kNoBodies;
    bool ok = keys.size() == offsets.size();
    for (std::size_t i = 0; ok && i < keys.size(); ++i) {
      const View& durable = s.state.durable();
      const auto known = durable.records.find(offsets[i]);
      ok = offsets[i] < durable.next && known != durable.records.end() && known->second == keys[i];
      // In input order: a key repeated in the batch leaves its last body.
      s.produced[offsets[i]] = Produced{keys[i], bodies.is_array() && i < bodies.size() ? bodies[i] : json()};
    }
    tallies_.check("LOG-03", ok, [&] { return partition + " acknowledged offsets " + e.at("offsets").dump() + " that are not durable with their keys"; });
    return;
  }
  if (ev == log_events::kAppProbe) return onProbe(s, partition, e);
  if (ev == log_events::kAppProbeDone) return onProbeDone(s, partition, e);
  if (ev != log_events::kAppConsume) return;
  // LOG-08: a group sees every retained offset; what it never saw must lie below oldestOffset.
  GroupCursor& g = groups_[{partition, text(e, "group")}];
  const int64_t from = num(e, "from");
  const std::vector<int64_t> offsets = ints(e, "offsets");
  if (from > g.seenUpTo && hasLogTables(partition)) {
    const int64_t oldest = storeBounds(partition).oldest;
    // Offsets still indexed may be skipped only when their segment may be gone from the cold store.
    int64_t covered = std::max(g.seenUpTo, oldest);
    for (const auto& [first, seg] : storeSegments(partition))
      if (first <= covered && covered <= seg.last && coldLoss_.lossPossible(seg.locator, e.value("t", int64_t{0}))) covered = seg.last + 1;
    tallies_.check("LOG-08", from <= covered, [&] {
      return partition + " group " + text(e, "group") + " read from " + str(from) + " having seen only up to " + str(g.seenUpTo) + ", with oldest " +
             str(oldest) + ": offsets skipped";
    });
  }
  bool ordered = true;
  for (std::size_t i = 0; i < offsets.size(); ++i) ordered = ordered && offsets[i] == from + static_cast<int64_t>(i);
  tallies_.check("LOG-08", ordered, [&] { return partition + " group " + text(e, "group") + " got " + e.at("offsets").dump() + " from " + str(from); });
  g.seenUpTo = std::max(g.seenUpTo, offsets.empty() ? from : offsets.back() + 1);
}

// LOG-16, the read probe: offset `from` read back alone, as produced, or lost only as allowed.
void LogChecks::onProbe(ObjectState& s, const std::string& object, const EventFields& e) {
  const int64_t from = num(e, "from");
  if (!e.contains("records")) {
    s.probed.insert(from);
    tallies_.check("LOG-16", hasLogTables(object) && truncationExcused(s, object, from, e.value("t", int64_t{0})), [&] {
      return object + " read probe of offset " + str(from) + " threw LogTruncatedError(" + str(num(e, "requested")) + ", " + str(num(e, "oldest")) +
             ") though it is retained and the cold store lost nothing of it";
    });
    return;
  }
  const json& records = e.at("records");
  bool ok = records.size() == 1 && num(records[0], "offset") == from;
  if (ok) {
    const std::string key = text(records[0], "key");
    if (const auto p = s.produced.find(from); p != s.produced.end()) {
      ok = p->second.key == key && (p->second.body.is_null() || p->second.body == records[0].at("body"));
    } else {  // appended by an attempt whose answer was lost: its key as the append wrote it
      const auto& written = s.state.durable().records;
      const auto w = written.find(from);
      ok = w != written.end() && w->second == key;
    }
  }
  if (ok) s.probed.insert(from);
  tallies_.check("LOG-16", ok, [&] { return object + " read probe of offset " + str(from) + " returned " + records.dump() + ", not the record produced there"; });
}

// LOG-16: the probe read back every offset the log still keeps of the range it probed.
void LogChecks::onProbeDone(ObjectState& s, const std::string& object, const EventFields& e) {
  if (!hasLogTables(object)) return;
  const Bounds b = storeBounds(object);
  std::optional<int64_t> missed;
  for (int64_t o = std::max(b.oldest, num(e, "oldest")); !missed && o < num(e, "next"); ++o)
    if (!s.probed.count(o)) missed = o;
  tallies_.check("LOG-16", !missed, [&] { return object + " read probe did not read back retained offset " + str(missed); });
}

// SCH-11 when the application reports that it retired a log: the schema as stored right then.
void LogChecks::onRetired(const EventFields& e) {
  const std::string partition = text(e, "partition");
  if (of_class(partition, className_)) checkSchema(partition);
}

void LogChecks::checkSchema(const std::string& object) {
  const std::optional<std::string> fault = schemaFault(reader_, object, logCapabilities());
  tallies_.check("SCH-11", !fault, [&] { return object + " schema: " + *fault; });
}

// ---------------------------------------------------------------------------------------------
// The end of the run

void LogChecks::finish() {
  history_.finish();
  for (auto& [object, s] : objects_.all()) {
    checkSchema(object);
    if (!hasLogTables(object)) continue;
    checkState(s, object, {});
    const Bounds b = storeBounds(object);
    const std::map<int64_t, Segment> segments = storeSegments(object);
    // LOG-03: every acknowledged offset not yet trimmed is hot with its key, or in a segment.
    for (const auto& [offset, produced] : s.produced) {
      const std::string& key = produced.key;
      if (offset < b.oldest) continue;
      bool readable = false;
      if (offset >= b.hot) {
        const std::optional<SqlRow> row = reader_(object, "SELECT dedup_key FROM " DURASIM_LOG_RECORDS " WHERE \"offset\" = ?", {offset}).next();
        readable = row && row->text("dedup_key") == key;
      } else {
        for (const auto& [first, seg] : segments) readable = readable || (first <= offset && offset <= seg.last);
      }
      tallies_.check("LOG-03", readable, [&] { return object + " lost acknowledged offset " + str(offset) + " (key " + key + ")"; });
    }
    // A trim that began after heal finished any flush intent (or threw, which nothing excuses then).
    if (s.options && s.options->cold && (s.flushSettled || s.trimAfterHeal)) {
      const int64_t intents = reader_(object, "SELECT COUNT(*) AS n FROM " DURASIM_LOG_FLUSH).one().int64("n");
      tallies_.check("LOG-18", intents == 0, [&] {
        return object + " ends with a flush intent after " + (s.flushSettled ? "its last trim completed" : "a trim began with the faults healed");
      });
    }
  }
}

}  // namespace durasim::properties
