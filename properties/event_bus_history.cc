// The EVT history checks: emits (EVT-01, 02, 03, 25), passes and handler calls (EVT-04, 07, 08,
// 11, 12, 13, 14, 17, 20, 22, 41, 44), failures (EVT-18, 19, 23, 24, 31, 33, 34), releases and
// listings (EVT-26, 27, 29, 30, 32, 42), the poll loop (EVT-38) and log lines (EVT-43); see
// event_bus_checks.h. Every write a probe reports is staged for its transaction's commit.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ranges>
#include <utility>

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

constexpr int64_t kPageSize = 50;          // events.md 1
constexpr int kReleaseCasTries = 5;        // events.md 9.2
constexpr int64_t kMaxSafe = model::kEventsMaxSafeInteger;
constexpr int64_t kReleaseUnreturned = -1;  // a release written whose call has not returned yet

std::string who(const std::string& label, const std::string& topic, const std::string& consumer, const std::string& id) {
  std::string s = label;
  s += " (";
  s += topic;
  s += ", ";
  s += consumer;
  s += ", ";
  s += id;
  s += ")";
  return s;
}

// The slots of one consumer in a set or map of slots, visited in id order: at(id) for ascending ids
// finds each id's slot, walking the range once.
template <typename Slots>
class SlotWalk {
 public:
  SlotWalk(const Slots& slots, const std::string& topic, const std::string& consumer)
      : slots_(slots), topic_(topic), consumer_(consumer), next_(slots.lower_bound(std::tie(topic, consumer, kNoId))) {}
  std::optional<typename Slots::const_iterator> at(const std::string& id) {
    while (mine() && std::get<2>(key()) < id) ++next_;
    if (mine() && std::get<2>(key()) == id) return next_;
    return std::nullopt;
  }

 private:
  static inline const std::string kNoId;
  const auto& key() const {
    if constexpr (requires { next_->first; }) return next_->first;
    else return *next_;
  }
  bool mine() const { return next_ != slots_.end() && std::get<0>(key()) == topic_ && std::get<1>(key()) == consumer_; }

  const Slots& slots_;
  const std::string& topic_;
  const std::string& consumer_;
  typename Slots::const_iterator next_;
};

std::optional<json> present(const json& v) { return v.is_null() ? std::nullopt : std::optional<json>(v); }
bool quarantined(const std::optional<json>& dead) { return dead && !(dead->is_object() && dead->contains("releasedAt")); }
std::optional<int64_t> intOf(const std::optional<json>& record, const char* field) {
  if (!record || !record->is_object() || !record->contains(field) || !record->at(field).is_number_integer()) return std::nullopt;
  return record->at(field).get<int64_t>();
}
// StoredAttempts as read (events.md 4.4): n and nextAt; a bare integer k is k failures, due now.
int64_t attemptsN(const std::optional<json>& att) {
  if (att && att->is_number_integer()) return att->get<int64_t>();
  return intOf(att, "n").value_or(0);
}
int64_t nextAtOf(const std::optional<json>& att) { return att && att->is_number_integer() ? 0 : intOf(att, "nextAt").value_or(0); }
int64_t releasesOf(const std::optional<json>& dead) { return intOf(dead, "releases").value_or(0); }
// The dead-letter status of events.md 4.4 ("" when there is no dead record).
std::string statusOf(const std::optional<json>& dead, bool acked) {
  if (acked) return "delivered";
  if (!dead) return "";
  return quarantined(dead) ? "quarantined" : "released";
}
std::string invariantOfOutcome(const std::string& outcome) {
  if (outcome == "releasedDuringAttempt") return "EVT-31";
  if (outcome == "alreadyDelivered") return "EVT-33";
  if (outcome == "attemptRaced") return "EVT-19";
  return "EVT-18";
}
std::string logOfOutcome(const std::string& outcome) {
  if (outcome == "retrying") return "events.handler.retrying";
  if (outcome == "quarantined") return "events.handler.quarantined";
  if (outcome == "releasedDuringAttempt") return "events.handler.released_during_attempt";
  if (outcome == "alreadyDelivered") return "events.handler.already_delivered";
  return "events.attempt.write_raced";
}

}  // namespace

void EventBusChecks::onProbe(EventType ev, const std::string& label, Bus& b, const EventFields& e) {
  // Store work of the object while passes run (EVT-17, EVT-41, EVT-11); a handler's own report and
  // the loop's probes read nothing.
  const bool loop = ev.substr(0, 9) == "evt.loop." || ev.substr(0, 9) == "evt.tick.";
  if (ev.substr(0, 8) != "app.evt." && ev != ev::kOptions && !loop) {
    const std::optional<int64_t> pass = e.contains("pass") ? std::optional<int64_t>(num(e, "pass")) : std::nullopt;
    if (ev == ev::kReleaseWrite || ev == ev::kRelease) {
      const Consumer released{e.value("topic", ""), e.value("consumer", "")};
      markConcurrent(b, pass, &released);
    } else {
      markConcurrent(b, pass, nullptr);
    }
  }
  if (ev != ev::kQuarantineWrite && ev != ev::kFailureWrite) b.delayWarning.clear();
  if (loop) return onLoop(ev, label, b, e);  // the most frequent probes, first
  if (ev == ev::kOptions) return onOptions(b, e);
  if (ev == ev::kRejected) return onRejected(label, e);
  if (ev == ev::kEmitWrite) return onEmit(label, b, e);
  if (ev == ev::kEmitRefused) return onEmitRefused(label, e);
  if (ev == ev::kAppEmitted) return onEmitted(label, b, e);
  if (ev == ev::kPollBegin) return onPollBegin(label, b, e);
  if (ev == ev::kExamine) return onExamine(label, b, e);
  if (ev == ev::kInvoke) return onInvoke(label, b, e);
  if (ev == ev::kAppHandle) return onHandle(label, b, e);
  if (ev == ev::kHandled) return onHandled(b, e);
  if (ev == ev::kAckWrite) return onAck(label, b, e);
  if (ev == ev::kFailureWrite) return onFailure(label, b, e);
  if (ev == ev::kQuarantineWrite) return onQuarantine(label, b, e);
  if (ev == ev::kCursorWrite) return onCursor(label, b, e);
  if (ev == ev::kPollEnd) return onPollEnd(label, b, e);
  if (ev == ev::kReleaseWrite) return onReleaseWrite(label, b, e);
  if (ev == ev::kRelease) return onRelease(label, b, e);
  if (ev == ev::kList) return onList(label, e);
}

void EventBusChecks::markConcurrent(Bus& b, std::optional<int64_t> pass, const Consumer* releaseOf) {
  for (auto& [id, p] : b.passes) {
    if (pass && *pass == id) continue;
    p.concurrent = true;
    if (releaseOf && p.consumer == *releaseOf) p.released = true;
  }
}

// The options a consumer of this incarnation was built with (used where workload.config has none).
void EventBusChecks::onOptions(Bus& b, const EventFields& e) {
  ConsumerConfig c;
  const json& max = e.at("maxAttempts");
  c.maxAttempts = max.is_number() ? max.get<double>() : max == "inf" ? INFINITY : NAN;
  const json& delay = e.at("retryDelay");
  c.retry = delay.is_number() ? "fixed" : delay.get<std::string>();
  if (delay.is_number()) c.retryMs = static_cast<int64_t>(std::llround(delay.get<double>()));
  c.pollMs = num(e, "pollMs");
  c.maxPollMs = num(e, "maxPollMs");
  c.backoff = e.at("backoff").get<bool>();
  b.options[{text(e, "topic"), text(e, "consumer")}] = c;
}

// ---------------------------------------------------------------------------------------------
// emit (events.md 5)

// EVT-01: one record per id, an existing one found again; EVT-03: a new record within maxDepth.
void EventBusChecks::onEmit(const std::string& label, Bus& b, const EventFields& e) {
  const std::string topic = text(e, "topic"), id = text(e, "id");
  const int64_t seq = num(e, "seq");
  const auto& log = b.state.staged().log;
  const auto found = log.find({topic, id});
  if (!e.at("inserted").get<bool>()) {
    tallies_.check("EVT-01", found != log.end() && found->second.first == seq, [&] {
      return label + " emit of " + topic + "/" + id + " found a record at seq " + str(seq) + ", none was written there";
    });
    return;
  }
  tallies_.check("EVT-01", found == log.end(), [&] { return label + " appended a second record of " + topic + "/" + id + " at seq " + str(seq); });
  if (const std::optional<int64_t> maxDepth = optInt(e.at("maxDepth"))) {
    const int64_t stored = this->stored(label).count(keysOf(topic, "").log());
    tallies_.check("EVT-03", stored <= *maxDepth, [&] {
      return label + " appended " + topic + "/" + id + " leaving " + str(stored) + " records, maxDepth " + str(*maxDepth);
    });
  }
  b.state.stage(Edit{Edit::Kind::record, topic, "", id, text(e, "payload"), seq});
}

// EVT-03: a refusal reports depth == maxDepth, for an id not stored, on a full topic.
void EventBusChecks::onEmitRefused(const std::string& label, const EventFields& e) {
  const std::string topic = text(e, "topic"), id = text(e, "id");
  const int64_t depth = num(e, "depth"), maxDepth = num(e, "maxDepth");
  const std::string ns = keysOf(topic, "").log();
  const bool stored = logEntry(label, ns, id).has_value();
  const int64_t count = this->stored(label).count(ns);
  tallies_.check("EVT-03", depth == maxDepth && !stored && count >= maxDepth, [&] {
    return label + " refused " + topic + "/" + id + " reporting depth " + str(depth) + " (maxDepth " + str(maxDepth) + ", " + str(count) +
           " stored" + (stored ? ", the id already stored" : "") + ")";
  });
}

// EVT-02: a returned emit's record is durable, with its first payload (EVT-01); EVT-25: a refused
// emit of an empty topic or id threw TypeError and stored nothing.
void EventBusChecks::onEmitted(const std::string& label, Bus& b, const EventFields& e) {
  const std::string topic = text(e, "topic"), id = text(e, "id");
  if (!e.at("ok").get<bool>()) {
    // An emit without an id reports "" too: only an empty topic, or a refusal, is judged.
    if (!topic.empty() && e.at("error") != "TypeError") return;
    const bool stored = logEntry(label, keysOf(topic, "").log(), id).has_value();
    tallies_.check("EVT-25", e.at("error") == "TypeError" && !stored, [&] {
      return label + " emit of topic '" + topic + "' id '" + id + "' ended with " + e.at("error").dump() + (stored ? ", a record stored" : "");
    });
    return;
  }
  const auto& durable = b.state.durable().log;
  const auto first = durable.find({topic, id});
  tallies_.check("EVT-02", first != durable.end(), [&] { return label + " emit of " + topic + "/" + id + " returned before its record was durable"; });
  const auto stored = logEntry(label, keysOf(topic, "").log(), id);
  tallies_.check("EVT-01", stored && first != durable.end() && stored->second == first->second.second, [&] {
    return label + " emit of " + topic + "/" + id + " returned; the store holds " + (stored ? stored->second : std::string("nothing")) + ", the first payload " +
           (first != durable.end() ? first->second.second : std::string("none"));
  });
  b.returned.insert({topic, id});
}

// EVT-25: a refusal throws the class and message of events.md 5 / 6.1.
void EventBusChecks::onRejected(const std::string& label, const EventFields& e) {
  static const std::set<std::string> kMessages = {
      "event topic must be a non-empty string", "event id must be a non-empty string", "maxDepth must be a non-negative integer",
      "event payload is not serializable", "event handler must be callable", "consumer name is required", "pollMs must be a positive integer",
      "maxPollMs must be an integer >= pollMs", "maxAttempts must be a positive integer or Infinity",
      "retryDelayMs must be a finite non-negative number of milliseconds", "handlerTimeoutMs must be a positive integer"};
  const std::string message = text(e, "message"), error = text(e, "error");
  const bool topicFirst = !text(e, "topic").empty() || message == "event topic must be a non-empty string";
  const bool typed = message.find("must be a non-empty") != std::string::npos || message.find("required") != std::string::npos ||
                     message.find("callable") != std::string::npos || message.find("serializable") != std::string::npos;
  tallies_.check("EVT-25", kMessages.count(message) && topicFirst && error == (typed ? "TypeError" : "RangeError"), [&] {
    return label + " refused " + text(e, "op") + " of topic '" + text(e, "topic") + "' with " + error + ": " + message;
  });
}

// ---------------------------------------------------------------------------------------------
// Passes (events.md 6.4-6.5)

void EventBusChecks::onPollBegin(const std::string& label, Bus& b, const EventFields& e) {
  const int64_t id = num(e, "pass");
  Pass p;
  p.consumer = {text(e, "topic"), text(e, "consumer")};
  p.begin = num(e, "t");
  p.offset = num(e, "at") - p.begin;
  b.offset = p.offset;
  p.afterHeal = healedAt_ && p.begin >= *healedAt_;
  const Keys& keys = keysOf(p.consumer.first, p.consumer.second);
  p.pendingAtBegin = stored(label).count(keys.pending());
  const Facts& facts = b.state.staged();
  const auto records = facts.bySeq.find(p.consumer.first);
  if (records != facts.bySeq.end() && !records->second.empty()) p.maxSeqAtBegin = records->second.rbegin()->first;
  for (auto& [other, q] : b.passes) {
    p.concurrent = q.concurrent = true;
    if (q.consumer == p.consumer) {
      p.shared = q.shared = true;
      b.overlapped.insert(p.consumer);
    }
  }
  // EVT-11: after heal, what a healthy pass must deliver: every event not acked, quarantined or
  // waiting. The topic's events and the consumer's slots are walked together in id order.
  if (p.afterHeal && records != facts.bySeq.end()) {
    const auto& [topic, consumer] = p.consumer;
    SlotWalk acks(facts.acks, topic, consumer);
    SlotWalk dead(facts.dead, topic, consumer);
    SlotWalk attempts(facts.attempts, topic, consumer);
    const int64_t now = num(e, "at");
    for (auto it = facts.log.lower_bound({topic, ""}); it != facts.log.end() && it->first.first == topic; ++it) {
      const std::string& event = it->first.second;
      if (acks.at(event)) continue;
      if (const auto d = dead.at(event); d && quarantined((*d)->second)) continue;
      if (const auto a = attempts.at(event); a && nextAtOf((*a)->second) > now) continue;
      p.healthyDue.insert(p.healthyDue.end(), event);
    }
  }
  if (const auto polling = b.polling.find(p.consumer); polling != b.polling.end() && polling->second.tickOf) {
    polling->second.loops[*polling->second.tickOf].pass = id;
    polling->second.tickOf.reset();
  }
  b.passes[id] = std::move(p);
}

// EVT-12: each examined event's decision is the one the stored records give at that instant.
void EventBusChecks::onExamine(const std::string& label, Bus& b, const EventFields& e) {
  const auto found = b.passes.find(num(e, "pass"));
  if (found == b.passes.end()) return;
  Pass& p = found->second;
  const std::string topic = text(e, "topic"), consumer = text(e, "consumer"), id = text(e, "id"), phase = text(e, "phase"),
                    decision = text(e, "decision");
  const Keys& keys = keysOf(topic, consumer);
  const int64_t now = num(e, "t") + p.offset;
  const bool waiting = nextAtOf(kv(label, keys.attempts(id))) > now;
  const bool acked = kv(label, keys.ack(id)).has_value();
  const bool held = quarantined(kv(label, keys.dead(id)));
  std::string expected;
  if (phase == "pending") {
    p.seen.insert(id);
    if (decision == "waiting") p.waiting.insert(id);
    expected = waiting ? "waiting" : acked ? "acked" : held ? "quarantined" : !logEntry(label, keys.log(), id) ? "gone" : "due";
  } else {
    ++p.newRecords;
    expected = p.seen.count(id) ? "seen" : acked ? "acked" : held ? "quarantined" : waiting ? "waiting" : "due";
  }
  tallies_.check("EVT-12", decision == expected, [&] {
    return who(label, topic, consumer, id) + " pass " + str(num(e, "pass")) + " " + phase + " phase decided " + decision + ", the store says " + expected;
  });
  if (decision != "due") return;
  tallies_.check("EVT-12", !p.due, [&] { return label + " pass " + str(num(e, "pass")) + " never called the handler for due event " + *p.due; });
  p.due = id;
}

// A handler call starts: EVT-13 (not acked), EVT-20 (not quarantined), EVT-22 (due), EVT-12 (the
// due event just examined, once per pass), EVT-04 (an event of the consumer's topic).
void EventBusChecks::onInvoke(const std::string& label, Bus& b, const EventFields& e) {
  const int64_t pass = num(e, "pass");
  const std::string topic = text(e, "topic"), consumer = text(e, "consumer"), id = text(e, "id");
  const Keys& keys = keysOf(topic, consumer);
  const auto name = [&] { return who(label, topic, consumer, id); };
  const std::optional<json> att = kv(label, keys.attempts(id)), dead = kv(label, keys.dead(id));
  const auto found = b.passes.find(pass);
  const int64_t now = num(e, "t") + (found != b.passes.end() ? found->second.offset : b.offset);
  tallies_.check("EVT-13", !kv(label, keys.ack(id)), [&] { return name() + " handler called although the ack marker is stored"; });
  tallies_.check("EVT-20", !quarantined(dead), [&] { return name() + " handler called while quarantined: " + dead->dump(); });
  tallies_.check("EVT-22", nextAtOf(att) <= now, [&] { return name() + " handler called at " + str(now) + " before nextAt " + str(nextAtOf(att)); });
  const auto stored = logEntry(label, keys.log(), id);
  tallies_.check("EVT-04", stored && stored->first == num(e, "seq"), [&] {
    return name() + " handler called with seq " + str(num(e, "seq")) + ", the topic's log holds " + (stored ? "seq " + str(stored->first) : std::string("no such event"));
  });
  tallies_.check("EVT-19", num(e, "attempt") == attemptsN(att) + 1, [&] {
    return name() + " attempt " + str(num(e, "attempt")) + " started over the stored attempt record " + (att ? att->dump() : std::string("absent"));
  });
  tallies_.check("EVT-31", text(e, "stamp") == model::eventsStamp(dead), [&] {
    return name() + " call started with stamp " + text(e, "stamp") + ", the stored dead record's is " + model::eventsStamp(dead);
  });
  const Slot slot{topic, consumer, id};
  ++b.inFlight[slot];
  ++b.streak[slot];
  if (const auto awaiting = b.awaitingRelease.find(slot); awaiting != b.awaitingRelease.end()) {
    if (awaiting->second >= 0) tallies_.check("EVT-26", true, [] { return std::string(); });
    b.awaitingRelease.erase(awaiting);
  }
  if (found == b.passes.end()) return;
  Pass& p = found->second;
  tallies_.check("EVT-12", p.due == id && ++p.invoked[id] == 1, [&] {
    return name() + " pass " + str(pass) + " called the handler " + (p.due == id ? "a second time" : "for an event it did not examine as due");
  });
  p.due.reset();
  p.invokes[id] = Invoke{id, text(e, "stamp"), num(e, "t")};
}

// What a handler received (app.evt.handle): EVT-04 (a call of its consumer for that event of its
// topic is running), EVT-44 (the stored first payload).
void EventBusChecks::onHandle(const std::string& label, Bus& b, const EventFields& e) {
  const std::string topic = text(e, "topic"), consumer = text(e, "consumer"), id = text(e, "id");
  const Slot slot{topic, consumer, id};
  const auto name = [&] { return who(label, topic, consumer, id); };
  int64_t& calls = b.inFlight[slot];
  tallies_.check("EVT-04", calls > 0, [&] { return name() + " handler received an event no call of its consumer and topic was made with"; });
  calls = std::max<int64_t>(calls - 1, 0);
  const auto stored = logEntry(label, keysOf(topic, "").log(), id);
  const json payload = stored ? deserialize(stored->second) : json();
  tallies_.check("EVT-44", stored && payload == e.at("payload"), [&] {
    return name() + " handler received " + e.at("payload").dump() + ", the stored payload is " + (stored ? stored->second : std::string("absent"));
  });
  if (!e.at("failed").get<bool>()) {
    ++b.successes[slot];
    return;
  }
  b.handlerFailed = true;
  b.failedCalls.insert(slot);
}

void EventBusChecks::onHandled(Bus& b, const EventFields& e) {
  const bool ok = e.at("ok").get<bool>() && !e.at("timedOut").get<bool>();
  if (!ok) {
    b.handlerFailed = true;
    b.failedCalls.insert({text(e, "topic"), text(e, "consumer"), text(e, "id")});
  }
  const auto pass = b.passes.find(num(e, "pass"));
  if (pass == b.passes.end()) return;
  pass->second.failure = pass->second.failure || !ok;
  const auto call = pass->second.invokes.find(text(e, "id"));
  if (call == pass->second.invokes.end()) return;
  call->second.handled = true;
  call->second.handledOk = ok;
}

// EVT-08: an ack write follows a call of its pass that the handler ended normally, in time;
// EVT-07: it creates the marker exactly when none was stored.
void EventBusChecks::onAck(const std::string& label, Bus& b, const EventFields& e) {
  const std::string topic = text(e, "topic"), consumer = text(e, "consumer"), id = text(e, "id");
  const Slot slot{topic, consumer, id};
  const auto pass = b.passes.find(num(e, "pass"));
  const Invoke* call = nullptr;
  if (pass != b.passes.end())
    if (const auto found = pass->second.invokes.find(id); found != pass->second.invokes.end()) call = &found->second;
  const bool reported = b.successes[slot] > b.ackWrites[slot]++;
  tallies_.check("EVT-08", call && reported && call->handledOk, [&] {
    return who(label, topic, consumer, id) + " pass " + str(num(e, "pass")) + " wrote the ack marker " +
           (!call ? "without calling the handler" : !reported ? "with no success the handler reported" : "after a failed or timed-out call");
  });
  const bool won = e.at("won").get<bool>();
  tallies_.check("EVT-07", won == !b.state.staged().acks.count(slot), [&] {
    return who(label, topic, consumer, id) + (won ? " created a second ack marker" : " lost the insert of an ack marker none held");
  });
  if (!won) return;
  b.state.stage(Edit{Edit::Kind::ack, topic, consumer, id, true});
  b.awaitingRelease.erase(slot);
  if (pass == b.passes.end()) return;
  ++pass->second.won;
  ++pass->second.acked[id];
}

// ---------------------------------------------------------------------------------------------
// Failures (events.md 6.6, 8.2)

// The failure record: its outcome from the records as the transaction found them (EVT-18, EVT-19,
// EVT-31, EVT-33), the attempt record written (EVT-19, EVT-23, EVT-24, EVT-34), the delay warning
// (EVT-24) and the log line it owes (EVT-43).
void EventBusChecks::onFailure(const std::string& label, Bus& b, const EventFields& e) {
  const std::string topic = text(e, "topic"), consumer = text(e, "consumer"), id = text(e, "id"), outcome = text(e, "outcome");
  const Slot slot{topic, consumer, id};
  const auto name = [&] { return who(label, topic, consumer, id); };
  const std::optional<json> written = present(e.at("attempts"));
  if (e.contains("step")) {  // events.failure_two_step: the reference's separate steps
    if (text(e, "step") == "attempts" && written) b.state.stage(Edit{Edit::Kind::attempts, topic, consumer, id, *written});
    if (b.quarantine) b.state.stage(*std::exchange(b.quarantine, std::nullopt));
    return;
  }
  const Facts& facts = b.state.staged();
  const auto pass = b.passes.find(num(e, "pass"));
  const Invoke* call = nullptr;
  if (pass != b.passes.end())
    if (const auto found = pass->second.invokes.find(id); found != pass->second.invokes.end()) call = &found->second;
  const auto deadAt = facts.dead.find(slot);
  const auto attAt = facts.attempts.find(slot);
  const std::optional<json> dead = deadAt == facts.dead.end() ? std::nullopt : std::optional<json>(deadAt->second);
  const std::optional<json> att = attAt == facts.attempts.end() ? std::nullopt : std::optional<json>(attAt->second);
  const ConsumerConfig& conf = config(b, {topic, consumer});
  const int64_t n = num(e, "n");
  std::string expected;
  if (call && model::eventsStamp(dead) != call->stamp) expected = "releasedDuringAttempt";
  else if (facts.acks.count(slot)) expected = "alreadyDelivered";
  else if (att != present(e.at("expected"))) expected = "attemptRaced";
  else expected = static_cast<double>(n) >= conf.maxAttempts ? "quarantined" : "retrying";
  // A discarded attempt writes no attempt or dead record (EVT-31, EVT-33, EVT-19).
  if (outcome != "retrying" && outcome != "quarantined")
    tallies_.check(invariantOfOutcome(outcome), !written && !b.quarantine, [&] { return name() + " discarded attempt (" + outcome + ") wrote records"; });
  if (call) {
    tallies_.check(invariantOfOutcome(expected), outcome == expected, [&] {
      return name() + " failure recorded as " + outcome + ", the records give " + expected + " (attempt record " + (att ? att->dump() : std::string("absent")) +
             ", dead " + (dead ? dead->dump() : std::string("absent")) + ")";
    });
  }
  tallies_.check("EVT-19", n == attemptsN(present(e.at("expected"))) + 1, [&] {
    return name() + " counted failure " + str(n) + " over attempt record " + e.at("expected").dump();
  });
  // EVT-24: the warning of a delay function that gave no valid delay, and no other.
  const bool invalid = conf.retry == "invalid";
  if (conf.retry != "function")
    tallies_.check("EVT-24", invalid ? b.delayWarning == "events.retry_delay.invalid" : b.delayWarning.empty(), [&] {
      return name() + " failure " + str(n) + " of a " + conf.retry + " retry policy logged " + (b.delayWarning.empty() ? std::string("no delay warning") : b.delayWarning);
    });
  b.delayWarning.clear();
  b.expectedLog = logOfOutcome(outcome);
  if (written) {
    const int64_t now = num(e, "t") + (pass != b.passes.end() ? pass->second.offset : b.offset);
    const int64_t delay = delayFor(conf, n);
    json next = {{"n", n}, {"firstAt", intOf(att, "firstAt").value_or(now)}, {"nextAt", std::min(now + delay, kMaxSafe)}};
    if (att && att->is_object() && att->contains("gen") && att->at("gen").is_string()) next["gen"] = att->at("gen");
    const int64_t nextAt = intOf(written, "nextAt").value_or(-1);
    tallies_.check("EVT-24", nextAt >= now && nextAt <= kMaxSafe, [&] { return name() + " failure at " + str(now) + " set nextAt " + str(nextAt); });
    if (conf.retry == "function") next["nextAt"] = nextAt;
    tallies_.check("EVT-23", *written == next, [&] { return name() + " failure " + str(n) + " at " + str(now) + " wrote " + written->dump() + ", expected " + next.dump(); });
    if (now == 0 || next["firstAt"] == 0)
      tallies_.check("EVT-34", written->contains("firstAt") && written->at("firstAt") == next["firstAt"], [&] {
        return name() + " failure at time 0 wrote " + written->dump();
      });
    b.state.stage(Edit{Edit::Kind::attempts, topic, consumer, id, *written});
  }
  if (b.quarantine) b.state.stage(*std::exchange(b.quarantine, std::nullopt));
  if (outcome != "quarantined") return;
  // EVT-18: without resets or a second poller, the handler was called maxAttempts times in the streak.
  if (!b.streakUnsure.count(slot) && !b.overlapped.count({topic, consumer}) && std::isfinite(conf.maxAttempts))
    tallies_.check("EVT-18", static_cast<double>(b.streak[slot]) == conf.maxAttempts, [&] {
      return name() + " quarantined after " + str(b.streak[slot]) + " handler calls in its streak, maxAttempts " + str(static_cast<int64_t>(conf.maxAttempts));
    });
  b.streak[slot] = 0;
  b.streakUnsure.erase(slot);
}

// The dead record a quarantine writes: EVT-18 (attempts == maxAttempts), EVT-33 (a call failed, no
// ack marker), EVT-30 (releases kept), EVT-32 (from none or released only).
void EventBusChecks::onQuarantine(const std::string& label, Bus& b, const EventFields& e) {
  const std::string topic = text(e, "topic"), consumer = text(e, "consumer"), id = text(e, "id");
  const Slot slot{topic, consumer, id};
  const auto name = [&] { return who(label, topic, consumer, id); };
  const json& dead = e.at("dead");
  const Facts& facts = b.state.staged();
  const auto prior = facts.dead.find(slot);
  const std::optional<json> before = prior == facts.dead.end() ? std::nullopt : std::optional<json>(prior->second);
  const ConsumerConfig& conf = config(b, {topic, consumer});
  const int64_t attempts = intOf(dead, "attempts").value_or(-1);
  tallies_.check("EVT-18", static_cast<double>(attempts) == conf.maxAttempts, [&] {
    return name() + " quarantined with attempts " + str(attempts) + ", maxAttempts " + (std::isfinite(conf.maxAttempts) ? str(static_cast<int64_t>(conf.maxAttempts)) : "inf");
  });
  const bool acked = facts.acks.count(slot) || kv(label, keysOf(topic, consumer).ack(id)).has_value();
  tallies_.check("EVT-33", b.failedCalls.count(slot) && !acked, [&] {
    return name() + " quarantined " + (acked ? "while its ack marker is stored" : "without any failed handler call");
  });
  tallies_.check("EVT-30", releasesOf(dead) == releasesOf(before), [&] {
    return name() + " quarantine wrote releases " + str(releasesOf(dead)) + " over " + str(releasesOf(before));
  });
  tallies_.check("EVT-32", !quarantined(before) && !dead.contains("releasedAt"), [&] {
    return name() + " quarantined " + dead.dump() + " over " + (before ? before->dump() : std::string("none"));
  });
  b.quarantine = Edit{Edit::Kind::dead, topic, consumer, id, dead};
}

// EVT-16: the cursor never moves back (except the reference's rewind on a release's rescan).
void EventBusChecks::onCursor(const std::string& label, Bus& b, const EventFields& e) {
  if (!e.at("moved").get<bool>()) return;
  const Consumer c{text(e, "topic"), text(e, "consumer")};
  const int64_t to = num(e, "to");
  const auto& cursor = b.state.staged().cursor;
  const int64_t from = cursor.count(c) ? cursor.at(c) : 0;
  if (!e.at("rewind").get<bool>())
    tallies_.check("EVT-16", to > from, [&] { return label + " moved the cursor of (" + c.first + ", " + c.second + ") from " + str(from) + " to " + str(to); });
  b.state.stage(Edit{Edit::Kind::cursor, c.first, c.second, "", json(), to});
}

// A pass ended: EVT-07 (it returns its won inserts); completed: EVT-12 (no due event left
// uncalled), EVT-14 (the frontier past every record it found), EVT-41 (the pending index), EVT-17
// (cost), EVT-11 (healthy passes after heal), EVT-26 (a release before it was called in it).
void EventBusChecks::onPollEnd(const std::string& label, Bus& b, const EventFields& e) {
  const int64_t id = num(e, "pass");
  const auto found = b.passes.find(id);
  if (found == b.passes.end()) return;
  const Pass p = std::move(found->second);
  b.passes.erase(found);
  const auto& [topic, consumer] = p.consumer;
  const auto name = [&] { return label + " (" + topic + ", " + consumer + ") pass " + str(id); };
  if (const auto polling = b.polling.find(p.consumer); polling != b.polling.end())
    for (auto& [generation, loop] : polling->second.loops)
      if (loop.pass == id) loop.progressed = p.won > 0 && e.at("failed").is_null();
  tallies_.check("EVT-07", num(e, "delivered") == p.won, [&] { return name() + " returned " + str(num(e, "delivered")) + " having created " + str(p.won) + " ack markers"; });
  if (!e.at("failed").is_null()) return;
  tallies_.check("EVT-12", !p.due, [&] { return name() + " never called the handler for due event " + *p.due; });
  const Keys& keys = keysOf(topic, consumer);
  const std::optional<json> cursor = kv(label, keys.cursor());
  const int64_t frontier = cursor && cursor->is_string() ? std::strtoll(cursor->get<std::string>().c_str(), nullptr, 10) : 0;
  tallies_.check("EVT-14", frontier >= p.maxSeqAtBegin, [&] {
    return name() + " completed with its frontier at " + str(frontier) + ", before seq " + str(p.maxSeqAtBegin) + " appended before it began";
  });
  // EVT-41: each pending entry names an event of the topic below the frontier; with one poller and
  // no release, none is stale.
  const Facts& facts = b.state.staged();
  for (const auto& [event, seq] : entries(label, keys.pending())) {
    const auto rec = facts.log.find({topic, event});
    const bool ours = rec != facts.log.end() && rec->second.first == seq && seq <= frontier;
    // An entry the pass found waiting is examined no further (events.md 6.4 A1), stale or not.
    const bool stale = !p.shared && !p.released && !p.waiting.count(event) && (kv(label, keys.ack(event)) || quarantined(kv(label, keys.dead(event))));
    tallies_.check("EVT-41", ours && !stale, [&] {
      return name() + " left pending entry " + event + " (seq " + str(seq) + ")" + (ours ? " acked or quarantined" : " naming no event of the topic at or below the frontier");
    });
  }
  if (!p.concurrent) {
    const json& reads = e.at("reads");
    const int64_t w = p.pendingAtBegin, n = p.newRecords;
    const int64_t lists = num(reads, "lists"), gets = num(reads, "gets");
    const int64_t maxLists = 2 + w / kPageSize + n / kPageSize, maxGets = 1 + (n + kPageSize - 1) / kPageSize + 6 * (w + n);
    tallies_.check("EVT-17", lists <= maxLists && gets <= maxGets, [&] {
      return name() + " with " + str(w) + " pending entries and " + str(n) + " new records made " + str(lists) + " lists and " + str(gets) + " gets (bounds " +
             str(maxLists) + ", " + str(maxGets) + ")";
    });
    if (p.afterHeal && !p.failure && !p.released) {
      std::vector<std::string> missed;
      for (const std::string& event : p.healthyDue)
        if (p.acked.count(event) != 1 || p.invoked.count(event) != 1) missed.push_back(event);
      tallies_.check("EVT-11", missed.empty(), [&] { return name() + " (healthy, after heal) did not deliver exactly once " + json(missed).dump(); });
    }
  }
  for (const auto& [slot, at] : b.awaitingRelease) {
    if (std::get<0>(slot) != topic || std::get<1>(slot) != consumer || at < 0 || at > p.begin) continue;
    tallies_.check("EVT-26", false, [&] { return name() + " began after the release of " + std::get<2>(slot) + " at " + str(at) + " and never called it"; });
  }
  std::erase_if(b.awaitingRelease, [&](const auto& entry) {
    return std::get<0>(entry.first) == topic && std::get<1>(entry.first) == consumer && entry.second >= 0 && entry.second <= p.begin;
  });
}

// ---------------------------------------------------------------------------------------------
// Releases and listings (events.md 9)

// A release's unit: EVT-32 (only a dead, undelivered event), EVT-30 (releases + 1), EVT-29 (a
// released event again), EVT-19 (the reset: n 0, due now, gen the new stamp), EVT-34 (at time 0).
void EventBusChecks::onReleaseWrite(const std::string& label, Bus& b, const EventFields& e) {
  const std::string topic = text(e, "topic"), consumer = text(e, "consumer"), id = text(e, "id");
  const Slot slot{topic, consumer, id};
  const auto name = [&] { return who(label, topic, consumer, id); };
  const std::optional<json> dead = present(e.at("dead")), reset = present(e.at("attempts"));
  const Facts& facts = b.state.staged();
  if (dead) {
    const auto prior = facts.dead.find(slot);
    const std::optional<json> before = prior == facts.dead.end() ? std::nullopt : std::optional<json>(prior->second);
    tallies_.check("EVT-32", before && !facts.acks.count(slot) && dead->contains("releasedAt"), [&] {
      return name() + " released " + dead->dump() + " over " + (before ? before->dump() : std::string("no dead record")) + (facts.acks.count(slot) ? ", delivered" : "");
    });
    tallies_.check("EVT-30", releasesOf(dead) == releasesOf(before) + 1, [&] {
      return name() + " release wrote releases " + str(releasesOf(dead)) + " over " + str(releasesOf(before));
    });
    if (before && !quarantined(before))
      tallies_.check("EVT-29", releasesOf(dead) == releasesOf(before) + 1 && dead->contains("releasedAt"), [&] {
        return name() + " re-release wrote " + dead->dump() + " over " + before->dump();
      });
    if (intOf(dead, "releasedAt") == 0)
      tallies_.check("EVT-34", statusOf(dead, false) == "released", [&] { return name() + " release at time 0 wrote " + dead->dump(); });
    b.state.stage(Edit{Edit::Kind::dead, topic, consumer, id, *dead, 0, true});
    // Due to its next pass once the release returns (EVT-26); a new streak (EVT-18).
    if (!facts.acks.count(slot)) b.awaitingRelease[slot] = kReleaseUnreturned;
    b.streak[slot] = 0;
    b.streakUnsure.erase(slot);
  }
  if (reset) {
    const std::optional<json> stamped = dead ? dead : [&]() -> std::optional<json> {
      const auto prior = facts.dead.find(slot);
      return prior == facts.dead.end() ? std::nullopt : std::optional<json>(prior->second);
    }();
    const json expected = {{"n", 0}, {"nextAt", 0}, {"gen", model::eventsStamp(stamped)}};
    tallies_.check("EVT-19", *reset == expected, [&] { return name() + " release reset the attempt record to " + reset->dump() + ", expected " + expected.dump(); });
    b.state.stage(Edit{Edit::Kind::attempts, topic, consumer, id, *reset});
  }
}

// releaseDeadEvent returned: EVT-27 (its outcome against the stored records), EVT-43 (a contended
// release's warning); a released event is due to its next pass (EVT-26) and counted (EVT-30).
void EventBusChecks::onRelease(const std::string& label, Bus& b, const EventFields& e) {
  const std::string topic = text(e, "topic"), consumer = text(e, "consumer"), id = text(e, "id"), outcome = text(e, "outcome");
  const Slot slot{topic, consumer, id};
  const Keys& keys = keysOf(topic, consumer);
  const std::optional<json> dead = kv(label, keys.dead(id));
  const bool acked = kv(label, keys.ack(id)).has_value();
  bool ok = true;
  if (outcome == "notQuarantined") ok = !dead;
  else if (outcome == "alreadyDelivered") ok = dead && acked;
  else if (outcome == "contended") ok = dead && num(e, "tries") == kReleaseCasTries;
  else ok = dead && releasesOf(dead) >= 1;
  tallies_.check("EVT-27", ok, [&] {
    return who(label, topic, consumer, id) + " release returned " + outcome + " after " + str(num(e, "tries")) + " tries; stored dead record " +
           (dead ? dead->dump() : std::string("absent")) + (acked ? ", acked" : "");
  });
  if (outcome == "contended")
    tallies_.check("EVT-43", b.lastLog == "events.release.abandoned", [&] { return who(label, topic, consumer, id) + " contended release logged no events.release.abandoned"; });
  if (outcome != "released") return;
  ++b.releasedCalls[slot];
  if (const auto awaiting = b.awaitingRelease.find(slot); awaiting != b.awaitingRelease.end()) awaiting->second = num(e, "t");
}

// EVT-42: a listing is exactly the dead records of the consumer still in the log, in log order, with
// the status rule and the records' counts, at the cost of the dead-letter index.
void EventBusChecks::onList(const std::string& label, const EventFields& e) {
  const std::string topic = text(e, "topic"), consumer = text(e, "consumer");
  const Keys& keys = keysOf(topic, consumer);
  const std::map<std::string, int64_t> index = entries(label, keys.deadIndex());
  std::vector<std::pair<int64_t, json>> expected;
  for (const auto& [id, seq] : index) {
    const std::optional<json> dead = kv(label, keys.dead(id));
    const auto rec = logEntry(label, keys.log(), id);
    if (!dead || !rec) continue;
    expected.emplace_back(rec->first, json{{"id", id}, {"seq", rec->first}, {"status", statusOf(dead, kv(label, keys.ack(id)).has_value())},
                                           {"attempts", intOf(dead, "attempts").value_or(0)}, {"releases", releasesOf(dead)}});
  }
  std::sort(expected.begin(), expected.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  json listing = json::array();
  for (auto& [seq, entry] : expected) listing.push_back(std::move(entry));
  const int64_t d = static_cast<int64_t>(index.size());
  const int64_t lists = num(e.at("reads"), "lists"), gets = num(e.at("reads"), "gets");
  tallies_.check("EVT-42", e.at("events") == listing && lists == d / kPageSize + 1 && gets <= 3 * d, [&] {
    return label + " listed (" + topic + ", " + consumer + ") as " + e.at("events").dump() + " with " + str(lists) + " lists and " + str(gets) +
           " gets; the store gives " + listing.dump() + " over " + str(d) + " dead-letter entries";
  });
}

// ---------------------------------------------------------------------------------------------
// The poll loop (events.md 7) and log lines (events.md 10)

// EVT-38: one tick of a consumer at a time, none after stop, each after its gap; the gap after a
// tick pollMs if it created an ack, else doubled up to maxPollMs (pollMs without backoff).
void EventBusChecks::onLoop(EventType ev, const std::string& label, Bus& b, const EventFields& e) {
  const ConsumerView c{textRef(e, "topic"), textRef(e, "consumer")};
  const int64_t generation = num(e, "generation"), t = num(e, "t");
  const ConsumerConfig& conf = config(b, c);
  const auto name = [&] { return label + " (" + std::string(c.first) + ", " + std::string(c.second) + ") loop " + str(generation); };
  auto polling = b.polling.find(c);
  if (polling == b.polling.end()) polling = b.polling.emplace(Consumer(c.first, c.second), Polling()).first;
  Polling& consumer = polling->second;
  Loop& loop = consumer.loops[generation];
  if (ev == ev::kLoopStart) {
    loop = Loop{conf.pollMs, t, false, false, false, std::nullopt};
    consumer.interval = conf.pollMs;
  } else if (ev == ev::kLoopStop) {
    loop.stopped = true;
  } else if (ev == ev::kTickSkipped) {
    loop.gap = conf.pollMs;
    loop.anchor = t;
  } else if (ev == ev::kTickBegin) {
    const bool overlap = std::ranges::any_of(consumer.loops, [](const auto& l) { return l.second.ticking; });
    tallies_.check("EVT-38", !overlap && !loop.stopped && num(e, "gap") == loop.gap && t - loop.anchor >= loop.gap, [&] {
      return name() + " tick at " + str(t) + " after a gap of " + str(num(e, "gap")) + (overlap ? " while another tick runs" : "") +
             (loop.stopped ? " after stop" : "") + "; expected a gap of " + str(loop.gap) + " from " + str(loop.anchor);
    });
    loop.ticking = true;
    loop.progressed = false;
    loop.pass.reset();
    consumer.tickOf = generation;
  } else if (ev == ev::kTickEnd) {
    const int64_t next = !conf.backoff || loop.progressed ? conf.pollMs : std::min(consumer.interval * 2, conf.maxPollMs);
    tallies_.check("EVT-38", num(e, "next") == next, [&] {
      return name() + " tick " + (loop.progressed ? "that created an ack" : "that created none") + " set the next gap " + str(num(e, "next")) + ", expected " + str(next);
    });
    consumer.interval = num(e, "next");
    loop = Loop{num(e, "next"), t, false, loop.stopped, false, std::nullopt};
  }
}

// EVT-43: the log line a failure owes comes next, at its level; warnings and errors count for EVT-36.
void EventBusChecks::onLog(const std::string& label, Bus& b, const EventFields& e) {
  const std::string event = text(e, "event"), level = text(e, "level");
  if (event.substr(0, 7) == "events." && (level == "warn" || level == "error")) b.warned = true;
  if (event.substr(0, 19) == "events.retry_delay.") b.delayWarning = event;
  if (b.expectedLog) {
    const std::string expected = *b.expectedLog;
    const bool quarantine = expected == "events.handler.quarantined";
    const std::string message = e.at("fields").value("message", "");
    tallies_.check("EVT-43", event == expected && level == (quarantine ? "error" : "warn") && (!quarantine || message.find("QUARANTINED") != std::string::npos), [&] {
      return label + " logged " + level + " " + event + " (" + message + ") where a failure owed " + expected;
    });
    b.expectedLog.reset();
  }
  b.lastLog = event;
}

void EventBusChecks::healed(int64_t t) { healedAt_ = t; }

}  // namespace durasim::properties
