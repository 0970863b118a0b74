// Runtime history checks over the event stream; see runtime_checks.h.
#include "properties/runtime_checks.h"

#include <algorithm>

#include "engine/runtime_events.h"
#include "sim/fault_points.h"

namespace durasim::properties {
namespace {

// runtime.md 1 and 7.4, restated here rather than taken from sim/alarm_retry.h so that a change to
// the simulator's schedule cannot silently change the check.
constexpr int64_t kAlarmRetryBaseMs = 2'000;
constexpr int64_t kAlarmMaxCountedRetries = 6;  // 7 attempts in all
constexpr int kAlarmBackoffMaxExponent = 9;
constexpr int64_t kAlarmJitterDivisor = 4;

std::string str(int64_t v) { return std::to_string(v); }
std::string str(uint64_t v) { return std::to_string(v); }

// "<object> incarnation <n>"
std::string who(const std::string& label, int64_t number) { return label + " incarnation " + str(number); }

// The invariant a malformed event of type `ev` would have fed.
const char* id_for(EventType ev) {
  if (ev == "alarm.run" || ev == "alarm.failure" || ev == "alarm.success") return "RT-12";
  if (ev == "commit" || ev == "confirm" || ev == "durability") return "RT-07";
  if (ev == "effect" || ev == "effect.dropped") return "RT-10";
  if (ev == "rpc.call" || ev == "rpc.deliver" || ev == "rpc.reply") return "RT-15";
  if (ev == "rpc.fail") return "RT-16";
  if (ev == "cold.call") return "RT-22";
  if (ev == "fault") return "RT-09";
  if (ev == runtime_events::kCanary) return "RT-19";
  if (ev == runtime_events::kSlept) return "RT-25";
  if (ev == "phase") return "RT-24";
  return "RT-19";
}

}  // namespace

void RuntimeChecks::record(const sim::TraceEvent& header) {
  const EventType ev = header.type();
  if (ev.empty()) return;
  const EventFields& event = header.fields();
  try {
    const int64_t t = header.t();
    if (ev == "incarnation.start") on_incarnation_start(event, t);
    else if (ev == "incarnation.end") on_incarnation_end(event, t);
    else if (ev == "commit") on_commit(event);
    else if (ev == "confirm") on_confirm(event);
    else if (ev == "durability") on_durability(event);
    else if (ev == "effect") on_effect(event, false);
    else if (ev == "effect.dropped") on_effect(event, true);
    else if (ev == "alarm.run") on_alarm_run(event, t);
    else if (ev == "alarm.success") on_alarm_end(event, t, true);
    else if (ev == "alarm.failure") on_alarm_end(event, t, false);
    else if (ev == "rpc.call") on_rpc_call(event);
    else if (ev == "rpc.deliver") on_rpc_deliver(event);
    else if (ev == "rpc.reply") on_rpc_reply(event);
    else if (ev == "rpc.fail") on_rpc_fail(event);
    else if (ev == "cold.call") on_cold_call(event, t);
    else if (ev == "fault") on_fault(event);
    else if (ev == "phase") on_phase(event, t);
    else if (ev == runtime_events::kCanary) on_canary(event);
    else if (ev == runtime_events::kSlept) on_slept(event);

    // RT-19: every event tagged with an object's incarnation (the start and end are checked above).
    if (ev != "incarnation.start" && ev != "incarnation.end") {
      const std::string* label = header.object();
      if (ev == "rpc.deliver") {
        const nlohmann::json* to = event.find("to");
        label = to && to->is_string() ? &to->get_ref<const std::string&>() : nullptr;
      }
      const nlohmann::json* number = label ? event.find("incarnation") : nullptr;
      if (number && number->is_number_integer() && number->get<int64_t>() > 0)
        check_not_after_end(ev, *label, number->get<int64_t>(), t);
    }
  } catch (const nlohmann::json::exception& e) {
    tallies_.check(id_for(ev), false, [&] { return "malformed '" + std::string(ev) + "' event " + event.dump() + ": " + e.what(); });
  }
}

// ---------------------------------------------------------------------------------------------
// Incarnations (RT-08, RT-19)

void RuntimeChecks::on_incarnation_start(const EventFields& e, int64_t t) {
  const std::string label = e.at("object").get<std::string>();
  const int64_t number = e.at("incarnation").get<int64_t>();
  ObjectState& o = object(label);
  tallies_.check("RT-08", !o.live && number > o.last_started, [&] {
    return who(label, number) + " started at t=" + str(t) +
           (o.live ? " while incarnation " + str(*o.live) + " was live" : " after incarnation " + str(o.last_started));
  });
  o.live = number;
  o.last_started = std::max(o.last_started, number);
  incarnation(label, number);
}

void RuntimeChecks::on_incarnation_end(const EventFields& e, int64_t t) {
  const std::string label = e.at("object").get<std::string>();
  const int64_t number = e.at("incarnation").get<int64_t>();
  ObjectState& o = object(label);
  IncarnationState& inc = incarnation(label, number);
  tallies_.check("RT-19", o.live == number && !inc.ended_at, [&] {
    return who(label, number) + " ended at t=" + str(t) + (inc.ended_at ? " a second time" : " but was not live");
  });
  // RT-07: every commit still unconfirmed at the end was settled by a durability decision.
  const auto& unconfirmed = o.alarm.unconfirmed();
  tallies_.check("RT-07", unconfirmed.empty(), [&] {
    return who(label, number) + " ended at t=" + str(t) + " with " + str(uint64_t{unconfirmed.size()}) +
           " unconfirmed commits (first " + str(unconfirmed.front().commit) + ") and no durability decision";
  });
  o.alarm.decide(0);
  if (!inc.ended_at) inc.ended_at = t;
  if (o.live == number) o.live.reset();
  // RT-04: an alarm run of this incarnation ends with it.
  if (o.alarm_running == number) o.alarm_running.reset();
}

void RuntimeChecks::check_not_after_end(EventType ev, const std::string& label, int64_t number, int64_t t) {
  const IncarnationState* found = incarnations_.find(label, number);
  if (found == nullptr || !found->ended_at) {
    tallies_.check("RT-19", true, [] { return std::string(); });
    return;
  }
  const IncarnationState& inc = *found;
  const int64_t end = *inc.ended_at;
  if (inc.zombie && t <= end + kShutdownGraceMs) return;  // object.zombie keeps it running (runtime.md 6.3)
  const bool dropped_at_end = ev == "effect.dropped" && t == end;
  tallies_.check("RT-19", dropped_at_end, [&] {
    return std::string("'").append(ev).append("' of ") + who(label, number) + " at t=" + str(t) + " after its end at t=" + str(end);
  });
}

// ---------------------------------------------------------------------------------------------
// Commits and confirmations (RT-07, RT-08)

void RuntimeChecks::on_commit(const EventFields& e) {
  const std::string label = e.at("object").get<std::string>();
  const int64_t number = e.at("incarnation").get<int64_t>();
  const uint64_t commit = e.at("commit").get<uint64_t>();
  ObjectState& o = object(label);
  tallies_.check("RT-08", o.live == number, [&] {
    return "commit " + str(commit) + " of " + who(label, number) + " while " +
           (o.live ? "incarnation " + str(*o.live) + " is live" : "no incarnation is live");
  });
  tallies_.check("RT-07", commit > o.last_commit, [&] {
    return label + " commit " + str(commit) + " follows commit " + str(o.last_commit);
  });
  tallies_.check("RT-18", o.poisoned != number, [&] {
    return "commit " + str(commit) + " of " + who(label, number) + " after a critical error poisoned its storage";
  });
  o.last_commit = std::max(o.last_commit, commit);
  const nlohmann::json& alarm = e.at("alarm");
  o.alarm.stage(alarm.is_null() ? std::nullopt : std::optional<int64_t>(alarm.get<int64_t>()));
  o.alarm.commit(commit);
}

void RuntimeChecks::on_confirm(const EventFields& e) {
  const std::string label = e.at("object").get<std::string>();
  const int64_t number = e.at("incarnation").get<int64_t>();
  const uint64_t commit = e.at("commit").get<uint64_t>();
  ObjectState& o = object(label);
  tallies_.check("RT-08", o.live == number, [&] {
    return "confirmation of commit " + str(commit) + " by " + who(label, number) + " while " +
           (o.live ? "incarnation " + str(*o.live) + " is live" : "no incarnation is live");
  });
  const auto& unconfirmed = o.alarm.unconfirmed();
  const bool in_order = !unconfirmed.empty() && unconfirmed.front().commit == commit && commit > o.last_confirm;
  tallies_.check("RT-07", in_order && !o.vanished.count(commit), [&] {
    if (o.vanished.count(commit)) return label + " confirmed commit " + str(commit) + ", which a durability decision dropped";
    if (unconfirmed.empty()) return label + " confirmed commit " + str(commit) + " with no commit awaiting confirmation";
    return label + " confirmed commit " + str(commit) + " before commit " + str(unconfirmed.front().commit) +
           " (last confirmed " + str(o.last_confirm) + ")";
  });
  o.alarm.confirm(commit);
  o.last_confirm = std::max(o.last_confirm, commit);
  o.durable = std::max(o.durable, commit);
}

void RuntimeChecks::on_durability(const EventFields& e) {
  const std::string label = e.at("object").get<std::string>();
  const int64_t kept = e.at("kept").get<int64_t>();
  const int64_t unconfirmed = e.at("unconfirmed").get<int64_t>();
  ObjectState& o = object(label);
  const auto pending = static_cast<int64_t>(o.alarm.unconfirmed().size());
  tallies_.check("RT-07", 0 <= kept && kept <= unconfirmed && unconfirmed == pending, [&] {
    return label + " durability decision keeps " + str(kept) + " of " + str(unconfirmed) + " unconfirmed commits; the trace shows " +
           str(pending) + " awaiting confirmation";
  });
  // The next incarnation opens the durable state.
  o.alarm.decide(
      static_cast<std::size_t>(std::clamp<int64_t>(kept, 0, pending)), [&](const auto& c) { o.durable = std::max(o.durable, c.commit); },
      [&](const auto& c) { o.vanished.insert(c.commit); });
}

// ---------------------------------------------------------------------------------------------
// Output gate (RT-10)

void RuntimeChecks::on_effect(const EventFields& e, bool dropped) {
  const std::string label = e.at("object").get<std::string>();
  const int64_t number = e.at("incarnation").get<int64_t>();
  const uint64_t produced = e.at("produced").get<uint64_t>();
  const uint64_t required = e.at("required").get<uint64_t>();
  const uint64_t confirmed = e.at("confirmed").get<uint64_t>();
  const std::string kind = e.at("kind").get<std::string>();
  ObjectState& o = object(label);
  IncarnationState& inc = incarnation(label, number);
  const std::string what = kind + " effect #" + str(produced) + " of " + who(label, number);
  if (dropped) {
    tallies_.check("RT-10", !inc.released.count(produced) && !inc.dropped.count(produced),
                   [&] { return what + " dropped after it was " + (inc.released.count(produced) ? "released" : "dropped"); });
    inc.dropped.insert(produced);
    return;
  }
  std::string problem;
  if (required > o.durable) problem = "released while it waits for commit " + str(required) + " and the last confirmed is " + str(o.durable);
  else if (confirmed != o.durable) problem = "reports last confirmed commit " + str(confirmed) + " but the trace shows " + str(o.durable);
  else if (inc.dropped.count(produced)) problem = "released after it was dropped";
  else if (produced <= inc.last_released) problem = "released after effect #" + str(inc.last_released);
  else if (inc.ended_at) problem = "released after the incarnation ended at t=" + str(*inc.ended_at);
  tallies_.check("RT-10", problem.empty(), [&] { return what + " " + problem; });
  tallies_.check("RT-18", o.poisoned != number, [&] { return what + " left after a critical error broke the gate"; });
  inc.released.insert(produced);
  inc.last_released = std::max(inc.last_released, produced);
  if (kind == "reply") ++o.replies_released;
}

// ---------------------------------------------------------------------------------------------
// Alarms (RT-03, RT-04, RT-12)

void RuntimeChecks::on_alarm_run(const EventFields& e, int64_t t) {
  const std::string label = e.at("object").get<std::string>();
  const int64_t number = e.at("incarnation").get<int64_t>();
  const int64_t scheduled = e.at("scheduled").get<int64_t>();
  const int64_t retry_count = e.at("retryCount").get<int64_t>();
  ObjectState& o = object(label);
  const std::string what = label + " alarm run for " + str(scheduled) + " at t=" + str(t);

  // alarm.early (arbitrary profile) runs one handler of the scheduled time it was drawn for early.
  const auto early = o.early_fires.find(scheduled);
  if (t < scheduled && early != o.early_fires.end()) o.early_fires.erase(early);
  else tallies_.check("RT-03", t >= scheduled, [&] { return what + ": before its scheduled time"; });

  tallies_.check("RT-04", !o.alarm_running, [&] {
    return what + " in " + who(label, number) + " while the run in incarnation " + str(*o.alarm_running) + " has not finished";
  });
  o.alarm_running = number;

  const auto found = o.occurrences.find(scheduled);
  const Occurrence* occurrence = found == o.occurrences.end() ? nullptr : &found->second;
  const int64_t expected = occurrence ? occurrence->counted : 0;
  std::string problem;
  if (occurrence && occurrence->abandoned) problem = "after the occurrence was abandoned";
  else if (retry_count != expected) problem = "has retryCount " + str(retry_count) + " after " + str(expected) + " counted failures";
  else if (occurrence && occurrence->next && t < *occurrence->next) problem = "is before the announced retry at " + str(*occurrence->next);
  tallies_.check("RT-12", problem.empty(), [&] { return what + " " + problem; });

  // RT-14: due at its time, or at the retry announced for it, and not while the previous run lasted.
  int64_t due = scheduled;
  if (occurrence && occurrence->next) due = std::max(due, *occurrence->next);
  if (o.last_alarm_end) due = std::max(due, o.last_alarm_end->at);
  tallies_.check("RT-14", o.alarm_lost || t - due <= kAlarmMaxLateMs, [&] {
    return what + " is " + str(t - due) + " ms after it was due at " + str(due);
  });
}

void RuntimeChecks::on_alarm_end(const EventFields& e, int64_t t, bool success) {
  const std::string label = e.at("object").get<std::string>();
  const int64_t scheduled = e.at("scheduled").get<int64_t>();
  ObjectState& o = object(label);
  o.alarm_running.reset();  // RT-04: the run (if any) is over
  o.last_alarm_end = AlarmEnd{scheduled, t};
  if (success || e.value("superseded", false)) {
    // A success, or a new alarm set or deleted by the failed handler, ends the occurrence's retries.
    const auto found = o.occurrences.find(scheduled);
    if (found != o.occurrences.end() && !found->second.abandoned) o.occurrences.erase(found);
    return;
  }
  // A failure: replay runtime.md 7.4 (counted failures bounded at 6 retries; uncounted ones for ever).
  const bool counted = e.at("counted").get<bool>();
  const int64_t retry_count = e.at("retryCount").get<int64_t>();
  const bool abandoned = e.value("abandoned", false);
  Occurrence& occ = o.occurrences[scheduled];
  const std::string what = label + " alarm failure for " + str(scheduled) + " at t=" + str(t);
  if (occ.abandoned) {
    tallies_.check("RT-12", false, [&] { return what + " after the occurrence was abandoned"; });
    return;
  }
  bool abandon = false;
  if (counted) {
    if (occ.last_uncounted) occ.exponent = 0;
    occ.counted += 1;
    occ.last_uncounted = false;
    abandon = occ.counted > kAlarmMaxCountedRetries;
  } else {
    occ.last_uncounted = true;
  }
  std::string problem;
  if (retry_count != occ.counted) problem = "reports retryCount " + str(retry_count) + " but " + str(occ.counted) + " counted failures happened";
  if (abandon || abandoned) {
    if (problem.empty() && abandon != abandoned)
      problem = abandoned ? "abandoned after " + str(occ.counted) + " counted failures (" + (counted ? "counted" : "uncounted") + ")"
                          : "not abandoned after " + str(occ.counted) + " counted failures";
    tallies_.check("RT-12", problem.empty(), [&] { return what + " " + problem; });
    occ.abandoned = true;
    occ.next.reset();
    return;
  }
  const int64_t delay = e.at("delay").get<int64_t>();
  const int64_t jitter = e.at("jitter").get<int64_t>();
  const int64_t next = e.at("next").get<int64_t>();
  const int64_t expected_delay = kAlarmRetryBaseMs << occ.exponent;
  occ.exponent = std::min(occ.exponent + 1, kAlarmBackoffMaxExponent);
  if (!problem.empty()) {
  } else if (delay != expected_delay) {
    problem = "delay " + str(delay) + " but the schedule gives " + str(expected_delay);
  } else if (jitter < 0 || jitter > delay / kAlarmJitterDivisor) {
    problem = "jitter " + str(jitter) + " outside [0, " + str(delay / kAlarmJitterDivisor) + "]";
  } else if (next != t + delay + jitter) {
    problem = "next " + str(next) + " != t + delay + jitter = " + str(t + delay + jitter);
  }
  tallies_.check("RT-12", problem.empty(), [&] { return what + " " + problem; });
  occ.next = next;
}

// ---------------------------------------------------------------------------------------------
// RPC (RT-15, RT-16)

void RuntimeChecks::on_rpc_call(const EventFields& e) {
  const uint64_t call = e.at("call").get<uint64_t>();
  CallState& c = calls_[call];
  c.stub = e.at("stub").get<uint64_t>();
  c.to = e.at("to").get<std::string>();
  c.index = stubs_[c.stub].calls++;
}

void RuntimeChecks::on_rpc_deliver(const EventFields& e) {
  const uint64_t call = e.at("call").get<uint64_t>();
  const auto found = calls_.find(call);
  if (found == calls_.end()) {
    tallies_.check("RT-16", false, [&] { return "call " + str(call) + " delivered but never made"; });
    return;
  }
  CallState& c = found->second;
  StubState& stub = stubs_[c.stub];
  if (c.deliveries == 0) {  // a repeated delivery of the same call is RT-16's concern, not ordering
    tallies_.check("RT-15", !stub.last_delivered || c.index > *stub.last_delivered, [&] {
      return "call " + str(call) + " (number " + str(c.index + 1) + " on stub " + str(c.stub) +
             ") delivered after call number " + str(*stub.last_delivered + 1) + " of that stub";
    });
    stub.last_delivered = std::max(stub.last_delivered.value_or(0), c.index);
  }
  std::string problem;
  if (c.failed && (*c.failed == "not_delivered" || *c.failed == "request_lost"))
    problem = "delivered after it failed with " + *c.failed;
  else if (c.deliveries > 0)
    problem = "delivered a second time";
  if (problem == "delivered a second time" && object(c.to).duplicate_deliveries > 0) {
    --object(c.to).duplicate_deliveries;  // rpc.duplicate_delivery (arbitrary profile)
    ++c.duplicates;
    problem.clear();
  }
  tallies_.check("RT-16", problem.empty(), [&] { return "call " + str(call) + " to " + c.to + " " + problem; });
  ++c.deliveries;
}

void RuntimeChecks::on_rpc_reply(const EventFields& e) {
  const uint64_t call = e.at("call").get<uint64_t>();
  const auto found = calls_.find(call);
  // RT-10: the callee's answer left through its output gate, which released one reply more (each
  // release is checked and counted at its "effect" event; one that never happened is a violation).
  if (found != calls_.end()) {
    ObjectState& callee = object(found->second.to);
    if (++callee.replies_received > callee.replies_released)
      tallies_.check("RT-10", false, [&] {
        return "call " + str(call) + " received a reply from " + found->second.to + ", whose output gate released " +
               str(callee.replies_released) + " replies for " + str(callee.replies_received) + " received";
      });
  }
  if (!e.at("ok").get<bool>()) return;
  const bool dead = found != calls_.end() && stubs_[found->second.stub].failed;
  tallies_.check("RT-15", !dead, [&] {
    return "call " + str(call) + " replied successfully on stub " + str(found->second.stub) + " after a call on it failed";
  });
}

void RuntimeChecks::on_rpc_fail(const EventFields& e) {
  const uint64_t call = e.at("call").get<uint64_t>();
  const std::string how = e.at("how").get<std::string>();
  CallState& c = calls_[call];
  stubs_[e.at("stub").get<uint64_t>()].failed = true;
  std::string problem;
  if ((how == "not_delivered" || how == "request_lost") && c.deliveries != 0)
    problem = "failed with " + how + " but was delivered";
  else if (how == "reply_lost" && c.deliveries - c.duplicates != 1)
    problem = "failed with reply_lost but was delivered " + str(c.deliveries) + " times";
  else if (c.failed)
    problem = "failed twice";
  tallies_.check("RT-16", problem.empty(), [&] { return "call " + str(call) + " to " + c.to + " " + problem; });
  c.failed = how;
}

// ---------------------------------------------------------------------------------------------
// Cold store (RT-22) and faults (RT-09, exemptions)

void RuntimeChecks::on_cold_call(const EventFields& e, int64_t t) {
  const std::string op = e.at("op").get<std::string>();
  if (op != "put" && op != "delete") return;
  const std::string outcome = e.at("outcome").get<std::string>();
  if (outcome != "ok" && outcome != "reply_lost") return;
  if (!e.value("applied", true)) return;  // a put whose precondition failed wrote nothing
  const std::pair<std::string, std::string> key{e.at("bucket").get<std::string>(), e.at("key").get<std::string>()};
  const auto last = cold_last_write_.find(key);
  tallies_.check("RT-22", last == cold_last_write_.end() || t - last->second >= kColdWriteIntervalMs, [&] {
    return "accepted " + op + " of " + key.first + "/" + key.second + " at t=" + str(t) + ", " + str(t - last->second) +
           " ms after the previous accepted write";
  });
  cold_last_write_[key] = t;
}

void RuntimeChecks::on_fault(const EventFields& e) {
  const std::string fault = e.at("fault").get<std::string>();
  ++fault_events_[fault];
  const nlohmann::json* label = e.find("object");
  if (!label || !label->is_string() || label->get_ref<const std::string&>().empty()) return;
  const std::string& object_label = label->get_ref<const std::string&>();
  if (fault == "alarm.early") object(object_label).early_fires.insert(e.at("details").at("scheduled").get<int64_t>());
  else if (fault == "rpc.duplicate_delivery") ++object(object_label).duplicate_deliveries;
  else if (fault == "object.zombie") incarnation(object_label, e.value("incarnation", int64_t{0})).zombie = true;
  else if (fault == "storage.critical") object(object_label).poisoned = e.value("incarnation", int64_t{0});
  else if (fault == "alarm.lost") object(object_label).alarm_lost = true;
}

// RT-19: the memory reporting the canary was set up by the incarnation now running.
void RuntimeChecks::on_canary(const EventFields& e) {
  const std::string label = e.at("object").get<std::string>();
  const int64_t number = e.at("incarnation").get<int64_t>();
  const int64_t born = e.at(runtime_events::kBorn).get<int64_t>();
  tallies_.check("RT-19", born == number, [&] {
    return who(label, number) + " runs on memory set up by incarnation " + str(born);
  });
}

// RT-25: a sleep never resumes before the time asked for, on the sleeper's own clock.
void RuntimeChecks::on_slept(const EventFields& e) {
  const int64_t asked = e.at(runtime_events::kAsked).get<int64_t>();
  const int64_t ms = e.at(runtime_events::kSleptMs).get<int64_t>();
  const int64_t woke = e.at(runtime_events::kWoke).get<int64_t>();
  tallies_.check("RT-25", woke >= asked + ms, [&] {
    return e.at("object").get<std::string>() + " incarnation " + str(e.at("incarnation").get<int64_t>()) + " slept " + str(ms) +
           " ms from " + str(asked) + " and woke at " + str(woke);
  });
}

// ---------------------------------------------------------------------------------------------
// Liveness at the check phase (RT-14, RT-24)

void RuntimeChecks::on_phase(const EventFields& e, int64_t t) {
  if (e.at("phase").get<std::string>() != "check") return;
  check_liveness(t, e.at("idle").get<bool>());
}

// A stored alarm whose time passed must have run: by the time of the check, no later than
// kAlarmMaxLateMs after its time or after the retry its last failure announced (runtime.md 7.2,
// 7.4); and at all, once the executor has nothing left that could run it.
void RuntimeChecks::check_liveness(int64_t t, bool idle) {
  for (const auto& [label, o] : objects_) {
    std::string overdue;
    const std::optional<int64_t>& stored = o.alarm.local().at;
    if (stored && !o.alarm_running && !o.alarm_lost) {
      const int64_t scheduled = *stored;
      const auto occurrence = o.occurrences.find(scheduled);
      const bool abandoned = occurrence != o.occurrences.end() && occurrence->second.abandoned;
      int64_t due = scheduled;
      if (occurrence != o.occurrences.end() && occurrence->second.next) due = std::max(due, *occurrence->second.next);
      if (o.last_alarm_end && o.last_alarm_end->scheduled == scheduled) due = std::max(due, o.last_alarm_end->at);
      const bool late = idle ? due <= t : t - due > kAlarmMaxLateMs;
      if (late && !abandoned) {
        overdue = label + " stores an alarm for " + str(scheduled) + ", due since " + str(due) + ", that has not run by t=" +
                  str(t) + (idle ? " and nothing is left to run it" : "");
      }
    }
    tallies_.check("RT-14", overdue.empty(), [&] { return overdue; });
    tallies_.check("RT-24", overdue.empty(), [&] { return overdue; });
    if (idle) {
      const auto& unconfirmed = o.alarm.unconfirmed();
      tallies_.check("RT-24", unconfirmed.empty(), [&] {
        return label + " commit " + str(unconfirmed.front().commit) + " still awaits confirmation at t=" + str(t) +
               " and nothing is left to confirm it";
      });
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Reports

void RuntimeChecks::report(sim::Tallies& tallies) const { tallies.merge(tallies_); }

void RuntimeChecks::report_faults(sim::Tallies& tallies, const faults::FaultAccounting& accounting) const {
  std::set<std::string> known;
  for (const faults::FaultCount& count : accounting) {
    const std::string id(sim::fault_name(count.kind));
    known.insert(id);
    const auto found = fault_events_.find(id);
    const uint64_t events = found == fault_events_.end() ? 0 : found->second;
    tallies.check("RT-09", events == count.firings, [&] {
      return "fault " + id + " fired " + str(count.firings) + " times but " + str(events) + " fault events were recorded";
    });
  }
  for (const auto& [id, events] : fault_events_)
    if (!known.count(id))
      tallies.check("RT-09", false, [&] { return str(events) + " fault events name the unknown fault " + id; });
}

}  // namespace durasim::properties
