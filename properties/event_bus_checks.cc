// The EVT checks: events followed, commits and durability decisions, and the checks of stored state
// (EVT-01, 02, 05, 06, 07, 09, 10, 15, 16, 21, 23, 25, 28, 30, 32, 35, 36); see event_bus_checks.h.
// The history checks are in event_bus_history.cc.
#include <algorithm>
#include <cmath>

#include "engine/conventions.h"
#include "engine/event_bus_events.h"
#include "engine/event_bus_schema.h"
#include "engine/events_keys.h"
#include "model/events_model.h"
#include "properties/event_bus_checks.h"
#include "properties/event_fields.h"

namespace durasim::properties {
namespace {

using nlohmann::json;
using namespace fields;
namespace ev = event_bus_events;
using events::Keys;

std::string slotName(const std::string& topic, const std::string& consumer, const std::string& id) {
  std::string s = "(";
  s += topic;
  s += ", ";
  s += consumer;
  s += ", ";
  s += id;
  s += ")";
  return s;
}

bool quarantined(const std::optional<json>& dead) { return dead && !(dead->is_object() && dead->contains("releasedAt")); }
bool released(const std::optional<json>& dead) { return dead && dead->is_object() && dead->contains("releasedAt"); }
int64_t releasesOf(const json& dead) {
  return dead.is_object() && dead.contains("releases") && dead.at("releases").is_number_integer() ? dead.at("releases").get<int64_t>() : 0;
}
std::string show(const std::optional<json>& v) { return v ? v->dump() : std::string("absent"); }

}  // namespace

EventBusChecks::EventBusChecks(StoreReader reader, std::string className) : ObjectChecker(std::move(className)), reader_(std::move(reader)) {}

void EventBusChecks::Facts::apply(const Edit& e) {
  const Slot slot{e.topic, e.consumer, e.id};
  switch (e.kind) {
    case Edit::Kind::record:
      log[{e.topic, e.id}] = {e.seq, e.value.get<std::string>()};
      bySeq[e.topic][e.seq] = e.id;
      return;
    case Edit::Kind::ack:
      if (e.value.get<bool>()) acks.insert(slot);
      else acks.erase(slot);
      return;
    case Edit::Kind::attempts:
      attempts[slot] = e.value;
      return;
    case Edit::Kind::dead:
      dead[slot] = e.value;
      if (e.release) ++releases[slot];
      return;
    case Edit::Kind::cursor:
      cursor[{e.topic, e.consumer}] = e.seq;
      return;
  }
}

std::string EventBusChecks::invariant_for(EventType ev) const {
  if (ev == ev::kEmitWrite || ev == ev::kEmit) return "EVT-01";
  if (ev == ev::kAppEmitted) return "EVT-02";
  if (ev == ev::kEmitRefused) return "EVT-03";
  if (ev == ev::kAppHandle) return "EVT-44";
  if (ev == ev::kAckWrite) return "EVT-08";
  if (ev == ev::kExamine) return "EVT-12";
  if (ev == ev::kInvoke) return "EVT-13";
  if (ev == ev::kCursorWrite) return "EVT-16";
  if (ev == ev::kPollEnd || ev == ev::kPollBegin) return "EVT-14";
  if (ev == ev::kFailureWrite || ev == ev::kQuarantineWrite || ev == ev::kHandled) return "EVT-18";
  if (ev == ev::kRejected) return "EVT-25";
  if (ev == ev::kRelease || ev == ev::kReleaseWrite) return "EVT-27";
  if (ev == ev::kList) return "EVT-42";
  if (ev == "log") return "EVT-43";
  if (ev == "workload.config" || ev == ev::kOptions) return "EVT-18";
  if (ev.substr(0, 9) == "evt.loop." || ev.substr(0, 9) == "evt.tick.") return "EVT-38";
  return "EVT-15";
}

void EventBusChecks::observe(EventType ev, const EventFields& e) {
  ++checked_;
  if (ev == "workload.config") {
    if (config_of_class(e, className_)) onConfig(e);
    return;
  }
  if (!mine(e) || !e.contains("incarnation")) return;
  const std::string& object = label(e);
  const int64_t incarnation = num(e, "incarnation");
  Bus& b = bus(object, incarnation);
  const bool probe = ev.substr(0, ev::kPrefix.size()) == ev::kPrefix || ev.substr(0, 8) == "app.evt.";
  // What an ended or replaced incarnation still runs (object.zombie) cannot reach storage (RT-08
  // judges that): not followed. Its passes would end over writes its reset rolled back, its
  // handlers receive events those writes had stored.
  if (incarnation < b.incarnation || (incarnation == b.incarnation && b.ended)) return;
  if (ev != "log") {
    // EVT-43: a failure's log line comes right after its write.
    if (b.expectedLog && (probe || ev == "commit" || ev == "incarnation.end")) {
      tallies_.check("EVT-43", false, [&] { return object + " logged no " + *b.expectedLog + " after its failure record (next: " + std::string(ev) + ")"; });
      b.expectedLog.reset();
    }
    if (probe) {
      onProbe(ev, object, b, e);
      b.lastLog.clear();
    }
  }
  if (ev == "log") return onLog(object, b, e);
  if (ev == "fault") {
    if (text(e, "fault") == "storage.statement_error") b.unsure = true;
    b.faulted = true;
    // A call whose failure a fault kept from being recorded is not counted (EVT-18).
    for (const auto& [slot, calls] : b.streak) b.streakUnsure.insert(slot);
    return;
  }
  if (incarnation != b.incarnation) return;  // a replaced incarnation's storage events (RT-08's)
  if (ev == "commit" || ev == "commit.noop") return onCommit(object, b, e, ev == "commit.noop");
  if (ev == "confirm") return b.state.confirm(e.at("commit").get<uint64_t>());
  if (ev == "durability") return onDurability(object, b, std::max<int64_t>(num(e, "kept"), 0));
  if (ev == "commit.failed" || ev == "incarnation.end") {
    b.state.roll_back();
    b.unsure = false;
  }
  if (ev == "incarnation.end") b.ended = true;
}

EventBusChecks::Bus& EventBusChecks::bus(const std::string& label, int64_t incarnation) {
  Bus& b = objects_[label];
  if (incarnation > b.incarnation) {
    // A new incarnation: what the last one ran is gone with it.
    b.incarnation = incarnation;
    b.ended = false;
    b.passes.clear();
    b.inFlight.clear();
    b.successes.clear();
    b.ackWrites.clear();
    b.quarantine.reset();
    b.polling.clear();
    b.expectedLog.reset();
    for (const auto& [slot, calls] : b.streak) b.streakUnsure.insert(slot);
  }
  return b;
}

// "workload.config": the consumers' options, keyed by (topic, name).
void EventBusChecks::onConfig(const EventFields& e) {
  if (e.contains("buses")) buses_ = strings(e, "buses");
  if (!e.contains("consumers")) return;
  for (const json& c : e.at("consumers")) {
    ConsumerConfig conf;
    const json& max = c.at("maxAttempts");
    conf.maxAttempts = max.is_string() ? INFINITY : max.get<double>();
    const json& retry = c.at("retry");
    conf.retry = text(retry, "kind");
    if (conf.retry == "fixed") conf.retryMs = num(retry, "delayMs");
    if (conf.retry == "linear") conf.retryMs = num(retry, "stepMs");
    conf.pollMs = c.value("pollMs", conf.pollMs);
    conf.backoff = c.value("backoff", conf.backoff);
    conf.maxPollMs = c.contains("maxPollMs") && !c.at("maxPollMs").is_null() ? num(c, "maxPollMs") : conf.pollMs * 32;
    configs_[{text(c, "topic"), text(c, "name")}] = conf;
  }
}

const EventBusChecks::ConsumerConfig& EventBusChecks::config(const Bus& b, const ConsumerView& c) const {
  static const ConsumerConfig kDefault;
  if (const auto found = configs_.find(c); found != configs_.end()) return found->second;
  if (const auto found = b.options.find(c); found != b.options.end()) return found->second;
  return kDefault;
}

// events.md 8.2, from the consumer's configured policy (nullopt: a function the checker cannot see).
int64_t EventBusChecks::delayFor(const ConsumerConfig& c, int64_t n) const {
  if (c.retry == "fixed") return c.retryMs;
  if (c.retry == "linear") return c.retryMs * n;
  return model::eventsDefaultDelay(n);
}

std::vector<EventBusChecks::Consumer> EventBusChecks::consumersOf(const std::string& label) const {
  std::vector<Consumer> out;
  const auto found = objects_.find(label);
  if (found != objects_.end())
    for (const auto& [c, options] : found->second.options) out.push_back(c);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Reading the store

const StoredBus& EventBusChecks::stored(const std::string& label) const {
  auto& [bus, checkedAt] = stored_.try_emplace(label).first->second;
  if (checkedAt != checked_) {
    bus.refresh(reader_, label);
    checkedAt = checked_;
  }
  return bus;
}

const Keys& EventBusChecks::keysOf(std::string_view topic, std::string_view consumer) const {
  auto byTopic = keys_.find(topic);
  if (byTopic == keys_.end()) byTopic = keys_.emplace(std::string(topic), std::map<std::string, Keys, std::less<>>()).first;
  auto found = byTopic->second.find(consumer);
  if (found == byTopic->second.end()) found = byTopic->second.emplace(std::string(consumer), Keys(topic, consumer, true)).first;
  return found->second;
}

std::optional<json> EventBusChecks::kv(const std::string& label, const std::string& key) const { return stored(label).value(key); }

std::optional<std::pair<int64_t, std::string>> EventBusChecks::logEntry(const std::string& label, const std::string& ns, const std::string& id) const {
  return stored(label).entry(ns, id);
}

// The records of one namespace: id -> seq (of the record for a topic log, the payload's for an index).
std::map<std::string, int64_t> EventBusChecks::entries(const std::string& label, const std::string& ns) const { return stored(label).entries(ns); }

std::map<std::string, json> EventBusChecks::valuesUnder(const std::string& label, const std::string& prefix) const {
  return stored(label).valuesUnder(prefix);
}

std::set<std::string> EventBusChecks::keysUnder(const std::string& label, const std::string& prefix) const { return stored(label).keysUnder(prefix); }

// ---------------------------------------------------------------------------------------------
// Commits and durability decisions

void EventBusChecks::onCommit(const std::string& label, Bus& b, const EventFields& e, bool unchanged) {
  const std::vector<Edit> edits = b.state.open_edits();
  // After a failed statement the writes reported may be partly undone: judged at the next commit.
  if (!edits.empty() && !b.unsure) {
    checkStored(label, b, edits);
    checkAcks(label, b);
  }
  b.unsure = false;
  if (unchanged) b.state.commit_unchanged();
  else b.state.commit(e.at("commit").get<uint64_t>());
}

// The rows the transaction's writes name, as stored, against what the writes leave.
void EventBusChecks::checkStored(const std::string& label, Bus& b, const std::vector<Edit>& edits) {
  const Facts& facts = b.state.staged();
  const Facts& before = b.state.local();
  std::set<Slot> slots, deadWritten;
  for (const Edit& w : edits) {
    const Keys& keys = keysOf(w.topic, w.consumer);
    const Slot slot{w.topic, w.consumer, w.id};
    switch (w.kind) {
      case Edit::Kind::record: {
        const auto stored = logEntry(label, keys.log(), w.id);
        const auto& first = facts.log.at({w.topic, w.id});
        tallies_.check("EVT-01", stored && stored->first == first.first && stored->second == first.second, [&] {
          return label + " stores " + (stored ? "seq " + str(stored->first) + " payload " + stored->second : std::string("no record")) + " for " +
                 w.topic + "/" + w.id + ", its first emit wrote seq " + str(first.first) + " payload " + first.second;
        });
        break;
      }
      case Edit::Kind::ack:
        tallies_.check("EVT-07", kv(label, keys.ack(w.id)).has_value(), [&] {
          return label + " reported the ack marker of " + slotName(w.topic, w.consumer, w.id) + " created, none is stored";
        });
        slots.insert(slot);
        break;
      case Edit::Kind::attempts: {
        const std::optional<json> stored = kv(label, keys.attempts(w.id));
        const auto expected = facts.attempts.find(slot);
        tallies_.check("EVT-23", expected != facts.attempts.end() && stored == expected->second, [&] {
          return label + " stores attempt record " + show(stored) + " for " + slotName(w.topic, w.consumer, w.id) + ", its writes leave " +
                 (expected != facts.attempts.end() ? expected->second.dump() : std::string("none"));
        });
        slots.insert(slot);
        break;
      }
      case Edit::Kind::dead: {
        const std::optional<json> stored = kv(label, keys.dead(w.id));
        const auto expected = facts.dead.find(slot);
        tallies_.check("EVT-32", expected != facts.dead.end() && stored == expected->second, [&] {
          return label + " stores dead record " + show(stored) + " for " + slotName(w.topic, w.consumer, w.id) + ", its writes leave " +
                 (expected != facts.dead.end() ? expected->second.dump() : std::string("none"));
        });
        slots.insert(slot);
        deadWritten.insert(slot);
        break;
      }
      case Edit::Kind::cursor: {
        const std::optional<json> stored = kv(label, keys.cursor());
        const int64_t value = stored && stored->is_string() ? std::strtoll(stored->get<std::string>().c_str(), nullptr, 10) : 0;
        const auto prior = before.cursor.find({w.topic, w.consumer});
        const int64_t from = prior == before.cursor.end() ? 0 : prior->second;
        const std::optional<SqlRow> issued = reader_(label, "SELECT seq FROM sqlite_sequence WHERE name = ?", {std::string(DURASIM_EVENTS_LOG)}).next();
        const int64_t top = issued ? issued->int64("seq") : 0;
        tallies_.check("EVT-16", value == facts.cursor.at({w.topic, w.consumer}) && value >= from && value <= top, [&] {
          return label + " stores cursor " + show(stored) + " of (" + w.topic + ", " + w.consumer + "), reported " +
                 str(facts.cursor.at({w.topic, w.consumer})) + ", committed before " + str(from) + ", highest seq issued " + str(top);
        });
        // EVT-15: every event the frontier passed is accounted for.
        const auto topic = facts.bySeq.find(w.topic);
        if (topic == facts.bySeq.end()) break;
        for (auto it = topic->second.upper_bound(from); it != topic->second.end() && it->first <= value; ++it)
          checkAccounted(label, facts, {w.topic, w.consumer, it->second}, "EVT-15");
        break;
      }
    }
  }
  for (const Slot& slot : slots) checkSlot(label, facts, slot, deadWritten.count(slot) > 0);
}

// EVT-07 / EVT-09: the stored ack markers are exactly the won inserts committed so far.
void EventBusChecks::checkAcks(const std::string& label, Bus& b) {
  const StoredBus& tables = stored(label);
  if (!tables.hasKv()) return;
  const int64_t acks = tables.countUnder(events::keys::kAck);
  const int64_t expected = static_cast<int64_t>(b.state.staged().acks.size() + b.strayAcks.size());
  if (acks == expected) {
    tallies_.check("EVT-09", true, [] { return std::string(); });
    return;
  }
  std::set<std::string> written = b.strayAcks;
  for (const Slot& s : b.state.staged().acks) written.insert(keysOf(std::get<0>(s), std::get<1>(s)).ack(std::get<2>(s)));
  const std::set<std::string> keys = keysUnder(label, std::string(events::keys::kAck));
  std::vector<std::string> extra, missing;
  std::set_difference(keys.begin(), keys.end(), written.begin(), written.end(), std::back_inserter(extra));
  std::set_difference(written.begin(), written.end(), keys.begin(), keys.end(), std::back_inserter(missing));
  tallies_.check("EVT-09", extra.empty(), [&] {
    return label + " stores ack markers " + json(extra).dump() + " no successful handler call inserted";
  });
  tallies_.check("EVT-07", missing.empty(), [&] { return label + " lost the ack markers " + json(missing).dump(); });
  // Taken over, so that each difference is reported once.
  b.strayAcks.insert(extra.begin(), extra.end());
  for (const Slot& s : b.state.staged().acks)
    if (!keys.count(keysOf(std::get<0>(s), std::get<1>(s)).ack(std::get<2>(s))))
      b.state.stage(Edit{Edit::Kind::ack, std::get<0>(s), std::get<1>(s), std::get<2>(s), false});
}

// One slot's stored records after a transaction that wrote them: EVT-28, EVT-15, and EVT-21 if
// the transaction wrote its dead record. EVT-21 binds the transaction that quarantines: a call of
// a concurrent pass that fails later finds its attempt record changed (attemptRaced) and adds the
// event to the pending index again, which the next pass erases as quarantined; a store seen
// between the two (at a durability decision) legitimately holds both.
void EventBusChecks::checkSlot(const std::string& label, const Facts& facts, const Slot& slot, bool deadWritten) {
  const auto& [topic, consumer, id] = slot;
  const Keys& keys = keysOf(topic, consumer);
  const std::optional<json> att = kv(label, keys.attempts(id)), dead = kv(label, keys.dead(id));
  const bool acked = kv(label, keys.ack(id)).has_value();
  const bool pending = logEntry(label, keys.pending(), id).has_value();
  if (deadWritten && quarantined(dead))
    tallies_.check("EVT-21", !pending, [&] { return label + " keeps quarantined " + slotName(topic, consumer, id) + " in the pending index"; });
  if (att && att->is_object() && att->contains("gen") && att->at("gen").is_string()) {
    const std::string gen = att->at("gen").get<std::string>();
    const int64_t count = std::strtoll(gen.substr(0, gen.find('@')).c_str(), nullptr, 10);
    tallies_.check("EVT-28", dead && releasesOf(*dead) >= count, [&] {
      return label + " attempt record " + att->dump() + " of " + slotName(topic, consumer, id) + " names a release the dead record " + show(dead) +
             " does not hold";
    });
  }
  if (released(dead) && !acked) {
    const bool stamped = att && att->is_object() && att->value("gen", std::string()) == model::eventsStamp(dead);
    tallies_.check("EVT-28", stamped && pending, [&] {
      return label + " released " + slotName(topic, consumer, id) + " (" + dead->dump() + ") with attempt record " + show(att) +
             (pending ? "" : " and no pending entry");
    });
  }
  checkAccounted(label, facts, slot, "EVT-15");
}

// EVT-15: an event at or below the frontier is acked, quarantined, or in the pending index.
void EventBusChecks::checkAccounted(const std::string& label, const Facts& facts, const Slot& slot, const char* id) {
  const auto& [topic, consumer, event] = slot;
  const auto rec = facts.log.find({topic, event});
  const auto cursor = facts.cursor.find({topic, consumer});
  if (rec == facts.log.end() || cursor == facts.cursor.end() || rec->second.first > cursor->second) return;
  const Keys& keys = keysOf(topic, consumer);
  const bool ok = kv(label, keys.ack(event)).has_value() || quarantined(kv(label, keys.dead(event))) || logEntry(label, keys.pending(), event).has_value();
  tallies_.check(id, ok, [&] {
    return label + " frontier " + str(cursor->second) + " of (" + topic + ", " + consumer + ") passed event " + event + " (seq " + str(rec->second.first) +
           "), neither acked, quarantined nor pending";
  });
}

// A durability decision: the live store is the durable state the next incarnation opens.
void EventBusChecks::onDurability(const std::string& label, Bus& b, int64_t kept) {
  b.state.decide(static_cast<std::size_t>(kept));
  b.unsure = false;
  checkWhole(label, b);
}

// Over the whole store of an object: EVT-02, EVT-15, EVT-21, EVT-28, the ack count, and every
// attempt and dead record (EVT-19, EVT-32).
void EventBusChecks::checkWhole(const std::string& label, Bus& b) {
  for (const auto& [topic, id] : b.returned) {
    const bool stored = logEntry(label, keysOf(topic, "").log(), id).has_value();
    tallies_.check("EVT-02", stored, [&] { return label + " no longer stores " + topic + "/" + id + ", whose emit returned"; });
  }
  const Facts& facts = b.state.staged();
  for (const auto& [topic, consumer] : consumersOf(label)) {
    const auto records = facts.bySeq.find(topic);
    if (records == facts.bySeq.end()) continue;
    for (const auto& [seq, id] : records->second) {
      const Slot slot{topic, consumer, id};
      if (facts.dead.count(slot) || facts.attempts.count(slot)) checkSlot(label, facts, slot, false);
      else checkAccounted(label, facts, slot, "EVT-15");
    }
  }
  checkAcks(label, b);
  // Every stored attempt and dead record is the one the reported writes leave: nothing else (a
  // release that returned false, say) changed one.
  std::map<std::string, json> dead, attempts;
  for (const auto& [slot, value] : facts.dead) dead[keysOf(std::get<0>(slot), std::get<1>(slot)).dead(std::get<2>(slot))] = value;
  for (const auto& [slot, value] : facts.attempts)
    attempts[keysOf(std::get<0>(slot), std::get<1>(slot)).attempts(std::get<2>(slot))] = value;
  auto compare = [&](const char* id, const std::string& prefix, const std::map<std::string, json>& expected) {
    const std::map<std::string, json> stored = valuesUnder(label, prefix);
    std::vector<std::string> differ;
    for (const auto& [key, value] : stored)
      if (!expected.count(key) || expected.at(key) != value) differ.push_back(key + " = " + value.dump());
    for (const auto& [key, value] : expected)
      if (!stored.count(key)) differ.push_back(key + " absent");
    tallies_.check(id, differ.empty(), [&] { return label + " stores records no reported write left: " + json(differ).dump(); });
  };
  compare("EVT-32", std::string(events::keys::kDead), dead);
  compare("EVT-19", std::string(events::keys::kAttempts), attempts);
}

// ---------------------------------------------------------------------------------------------
// The end of the run

namespace {

// Whether `key` is well formed by events.md 4 alone (not by the engine's own encoder): its family
// prefix, then exactly the family's number of ':'-separated components (topic; topic, consumer; or
// topic, consumer, id), each escaped: '%' only as "%25" or "%3A".
bool wellFormedBusKey(std::string_view key) {
  static const std::pair<std::string_view, std::size_t> kFamilies[] = {
      {"evt:", 1}, {"evtpend:", 2}, {"evtdlq:", 2}, {"evtcursor:", 2}, {"evtrescan:", 2}, {"evtack:", 3}, {"evtatt:", 3}, {"evtdead:", 3}};
  for (const auto& [prefix, parts] : kFamilies) {
    if (key.substr(0, prefix.size()) != prefix) continue;
    const std::string_view rest = key.substr(prefix.size());
    if (static_cast<std::size_t>(std::count(rest.begin(), rest.end(), ':')) + 1 != parts) return false;
    for (std::size_t at = rest.find('%'); at != std::string_view::npos; at = rest.find('%', at + 1))
      if (rest.substr(at, 3) != "%25" && rest.substr(at, 3) != "%3A") return false;
    return true;
  }
  return false;
}

}  // namespace

// EVT-05 / EVT-06: every stored bus key is well formed and one a configured consumer's writes
// name, and each consumer's markers are exactly its own won inserts.
void EventBusChecks::checkKeys(const std::string& label, const Facts& facts) {
  std::map<std::string, std::pair<std::string, Slot>> expected;  // key -> (family, slot)
  std::set<std::string> namespaces;
  for (const auto& [topic, consumer] : consumersOf(label)) {
    const Keys& keys = keysOf(topic, consumer);
    expected[keys.cursor()] = {"cursor", {topic, consumer, ""}};
    namespaces.insert({keys.log(), keys.pending(), keys.deadIndex()});
    const auto records = facts.bySeq.find(topic);
    if (records == facts.bySeq.end()) continue;
    for (const auto& [seq, id] : records->second) {
      expected[keys.ack(id)] = {"ack", {topic, consumer, id}};
      expected[keys.attempts(id)] = {"attempts", {topic, consumer, id}};
      expected[keys.dead(id)] = {"dead", {topic, consumer, id}};
    }
  }
  std::vector<std::string> foreign, stolen;
  for (const std::string& key : keysUnder(label, "evt:")) foreign.push_back(key);  // no KV key is in the log family
  for (const char* family : {"evtack:", "evtatt:", "evtdead:", "evtcursor:", "evtrescan:"})
    for (const std::string& key : keysUnder(label, family)) {
      const auto found = expected.find(key);
      if (found == expected.end() || !wellFormedBusKey(key)) {
        foreign.push_back(key);
      } else if (found->second.first == "ack" && !facts.acks.count(found->second.second)) {
        stolen.push_back(key);
      }
    }
  if (reader_.hasTable(label, DURASIM_EVENTS_LOG))
    for (const SqlRow& r : reader_(label, "SELECT DISTINCT ns FROM " DURASIM_EVENTS_LOG " WHERE ns >= 'evt' AND ns < 'evu'").toVector())
      if (!namespaces.count(r.text("ns")) || !wellFormedBusKey(r.text("ns"))) foreign.push_back(r.text("ns"));
  tallies_.check("EVT-05", foreign.empty(), [&] {
    return label + " stores bus keys or namespaces that are malformed or of no configured consumer and event: " + json(foreign).dump();
  });
  tallies_.check("EVT-06", stolen.empty(), [&] { return label + " stores ack markers their consumer never inserted: " + json(stolen).dump(); });
}

void EventBusChecks::finish() {
  ++checked_;
  for (auto& [label, b] : objects_) {
    const Facts& facts = b.state.local();
    checkWhole(label, b);
    checkKeys(label, facts);
    // EVT-01: every stored record holds its first committed payload.
    for (const auto& [event, rec] : facts.log) {
      const auto stored = logEntry(label, keysOf(event.first, "").log(), event.second);
      tallies_.check("EVT-01", stored && stored->second == rec.second, [&] {
        return label + " stores " + (stored ? stored->second : std::string("nothing")) + " for " + event.first + "/" + event.second + ", first payload " + rec.second;
      });
    }
    // EVT-25: nothing of a refused emit (empty topic or id) is stored.
    if (reader_.hasTable(label, DURASIM_EVENTS_LOG)) {
      const int64_t refused =
          reader_(label, "SELECT count(*) AS n FROM " DURASIM_EVENTS_LOG " WHERE ns = ? OR (id = '' AND ns >= 'evt:' AND ns < 'evt;')", {std::string("evt:")})
              .one()
              .int64("n");
      tallies_.check("EVT-25", refused == 0, [&] { return label + " stores " + str(refused) + " records with an empty topic or id"; });
    }
    // EVT-30: dead.releases counts the committed releases, at least every one reported.
    for (const auto& [slot, dead] : facts.dead) {
      const auto& [topic, consumer, id] = slot;
      const std::optional<json> stored = kv(label, keysOf(topic, consumer).dead(id));
      const int64_t writes = facts.releases.count(slot) ? facts.releases.at(slot) : 0;
      const int64_t calls = b.releasedCalls.count(slot) ? b.releasedCalls.at(slot) : 0;
      tallies_.check("EVT-30", stored && releasesOf(*stored) == writes && writes >= calls, [&] {
        return label + " dead record " + show(stored) + " of " + slotName(topic, consumer, id) + " against " + str(writes) + " committed releases, " +
               str(calls) + " reported released";
      });
      tallies_.check("EVT-32", stored.has_value(), [&] { return label + " deleted the dead record of " + slotName(topic, consumer, id); });
    }
    // EVT-10 / EVT-35: every event acked (or quarantined) by every consumer of its topic.
    for (const auto& [topic, consumer] : consumersOf(label)) {
      const Keys& keys = keysOf(topic, consumer);
      const std::set<std::string> acks = keysUnder(label, std::string(events::keys::kAck) + events::enc(topic) + ":" + events::enc(consumer) + ":");
      std::vector<std::string> undelivered, unsettled;
      for (const auto& [id, seq] : entries(label, keys.log())) {
        if (acks.count(keys.ack(id))) continue;
        undelivered.push_back(id);
        if (!quarantined(kv(label, keys.dead(id)))) unsettled.push_back(id);
      }
      tallies_.check("EVT-10", undelivered.empty(), [&] {
        return label + " (" + topic + ", " + consumer + ") never delivered " + json(undelivered).dump();
      });
      tallies_.check("EVT-35", unsettled.empty(), [&] {
        return label + " (" + topic + ", " + consumer + ") neither delivered nor quarantined " + json(unsettled).dump();
      });
    }
    // EVT-36: a run whose handlers never failed wrote only markers and cursors, and logged nothing
    // (a tick a fault made fail logs its warning: warnings count only on an object no fault hit).
    if (!b.handlerFailed) {
      std::vector<std::string> extra;
      for (const char* family : {"evtatt:", "evtdead:", "evtrescan:"})
        for (const std::string& key : keysUnder(label, family)) extra.push_back(key);
      if (reader_.hasTable(label, DURASIM_EVENTS_LOG))
        for (const SqlRow& r : reader_(label, "SELECT ns, id FROM " DURASIM_EVENTS_LOG " WHERE ns >= 'evtdlq:' AND ns < 'evtpend;'").toVector())
          if (r.text("ns").substr(0, 7) == "evtdlq:" || r.text("ns").substr(0, 8) == "evtpend:") extra.push_back(r.text("ns") + "/" + r.text("id"));
      const bool warned = b.warned && !b.faulted;
      tallies_.check("EVT-36", extra.empty() && !warned, [&] {
        return label + " with no handler failure stores " + json(extra).dump() + (warned ? " and logged a warning or error" : "");
      });
    }
  }
}

}  // namespace durasim::properties
