// RTE checks; see routing_checks.h.
#include "properties/routing_checks.h"


#include "engine/routing_events.h"
#include "properties/event_fields.h"

namespace durasim::properties {

namespace {
using nlohmann::json;
using namespace fields;

constexpr std::size_t kMaxShards = 1024;       // routing.md 3.1 step 5
constexpr int64_t kWindowMs = 60000;           // routing.md 1 and 3.1 step 1

std::string pushName(const EventFields& e) { return "push " + str(num(e, "push")); }

std::string flag(const json& value) { return value.is_null() ? "none" : value.dump(); }

}  // namespace

RoutingChecks::RoutingChecks() {
  for (const char* id : {"RTE-01", "RTE-02", "RTE-03", "RTE-04", "RTE-05", "RTE-06", "RTE-07", "RTE-08", "RTE-09", "RTE-10", "RTE-11"})
    tallies_.declare(id);
}

void RoutingChecks::record(const sim::TraceEvent& event) {
  const EventType name = event.type();
  const EventFields& e = event.fields();
  if (name.starts_with(routing_events::kAppPrefix)) return onApp(name, e);
  if (name.starts_with(routing_events::kAppLoadPrefix)) return onAppLoad(name, e);
  if (!name.starts_with(routing_events::kPrefix)) return;
  const std::string label = e.contains("client") && e.at("client").is_string() ? e.at("client").get<std::string>() : "";
  Client& client = clients_[label];
  try {
    if (name == routing_events::kPushBegin) return onBegin(client, e);
    if (name == routing_events::kSelect) return onSelect(client, e);
    if (name == routing_events::kPushRefused) return onRefused(client, e);
    if (name == routing_events::kInvokeStart) return onInvoke(client, e);
    if (name == routing_events::kReply || name == routing_events::kLateFailure) return onReply(client, e);
    if (name == routing_events::kPushFailed) return onFailed(client, e);
    if (name == routing_events::kObserve) return onObserve(client, e);
    if (name == routing_events::kResize) return onResize(client, e);
    if (name == routing_events::kPushReturn) return onReturn(client, e);
  } catch (const json::exception& error) {
    tallies_.check(invariantFor(name), false, [&] { return "malformed '" + std::string(name) + "' event " + e.dump() + ": " + error.what(); });
  }
}

// The events each check reads: a malformed one is a violation of the check it feeds.
const char* RoutingChecks::invariantFor(EventType ev) {
  if (ev == routing_events::kSelect) return "RTE-07";
  if (ev == routing_events::kObserve) return "RTE-05";
  if (ev == routing_events::kResize) return "RTE-06";
  if (ev == routing_events::kPushRefused) return "RTE-10";
  if (ev == routing_events::kReply || ev == routing_events::kPushReturn) return "RTE-09";
  if (ev == routing_events::kPushFailed || ev == routing_events::kLateFailure) return "RTE-03";
  return "RTE-01";
}

RoutingChecks::Push* RoutingChecks::push(Client& client, const EventFields& e, const char* id) {
  auto it = client.pushes.find(num(e, "push"));
  const bool known = it != client.pushes.end();
  tallies_.check(id, known, [&] { return e.at("ev").get<std::string>() + " of " + pushName(e) + " that never began"; });
  return known ? &it->second : nullptr;
}

// RTE-04 and RTE-06 on the state the push saw.
void RoutingChecks::onBegin(Client& client, const EventFields& e) {
  const int64_t now = num(e, "now");
  Push p;
  p.custom = e.at("custom").get<bool>();
  p.timeoutMs = optInt(e.at("timeoutMs"));
  p.width = num(e, "width");
  // An object's shards come in key order, as the map keeps them: each goes in at its end.
  for (const auto& [shard, load] : e.at("observed").items()) p.observed.emplace_hint(p.observed.end(), shard, model::shardLoadFromJson(load));
  bool fresh = p.observed.size() <= kMaxShards;
  for (const auto& [shard, load] : p.observed) fresh = fresh && now - load.observedAt < kWindowMs;
  tallies_.check("RTE-04", fresh, [&] { return pushName(e) + " saw " + str(static_cast<int64_t>(p.observed.size())) + " observations, or one older than the window"; });
  // The client's map equals the model's once the stale entries are pruned.
  bool same = true;
  for (auto it = client.stored.begin(); it != client.stored.end();) {
    const auto seen = p.observed.find(it->first);
    if (seen == p.observed.end()) {
      same = same && now - it->second >= kWindowMs;
      it = client.stored.erase(it);
    } else {
      same = same && seen->second.observedAt == it->second;
      ++it;
    }
  }
  for (const auto& [shard, load] : p.observed) same = same && client.stored.count(shard) > 0;
  tallies_.check("RTE-04", same, [&] { return pushName(e) + " saw observations that differ from the loads recorded (a fresh one dropped or one appeared)"; });
  const std::optional<int64_t> last = optInt(e.at("lastResizeAt"));
  tallies_.check("RTE-06", p.width >= 1 && p.width == client.width.width && last == client.width.lastResizeAt, [&] {
    return pushName(e) + " saw width " + str(p.width) + " (last resize " + str(last) + "), the resizes give " + str(client.width.width) +
           " (" + str(client.width.lastResizeAt) + ")";
  });
  const int64_t id = num(e, "push");
  tallies_.check("RTE-01", client.pushes.count(id) == 0, [&] { return pushName(e) + " began twice"; });
  client.pushes[id] = std::move(p);
}

// RTE-07: the default selection recomputed from the recorded draws.
void RoutingChecks::onSelect(Client& client, const EventFields& e) {
  Push* p = push(client, e, "RTE-07");
  if (!p) return;
  const std::string shard = e.at("shard").get<std::string>();
  p->shard = shard;
  if (p->custom) return;
  const json& draws = e.at("draws");
  const bool drawn = draws.is_array() && draws.size() == 2;
  const std::string expected = drawn ? model::selectShard(p->observed, p->width, draws[0].get<double>(), draws[1].get<double>()) : "";
  tallies_.check("RTE-07", drawn && shard == expected && e.at("hint").is_null(), [&] {
    return pushName(e) + " selected " + shard + " at width " + str(p->width) + "; the rule picks " + expected + " from draws " + draws.dump();
  });
}

void RoutingChecks::onRefused(Client& client, const EventFields& e) {
  Push* p = push(client, e, "RTE-10");
  if (!p) return;
  tallies_.check("RTE-10", p->invokes == 0, [&] { return pushName(e) + " was refused after invoking"; });
  p->refused = true;
}

// RTE-01 and RTE-10: one invoke, to the selected non-empty shard.
void RoutingChecks::onInvoke(Client& client, const EventFields& e) {
  Push* p = push(client, e, "RTE-01");
  if (!p) return;
  const std::string shard = e.at("shard").get<std::string>();
  ++p->invokes;
  tallies_.check("RTE-10", !shard.empty() && !p->refused, [&] { return pushName(e) + " invoked with an empty or refused shard"; });
  tallies_.check("RTE-01", p->invokes == 1 && p->shard == shard, [&] {
    return pushName(e) + " invoke " + str(p->invokes) + " on " + shard + " (selected " + p->shard.value_or("nothing") + ")";
  });
  p->invokeStartedAt = num(e, "now");
}

// RTE-08 on the counters of a reply's snapshot. (observedAt is the object's clock, which need not
// agree with the client's.)
void RoutingChecks::checkLoadShape(const std::string& where, const json& load) {
  bool ok = num(load, "windowMs") == kWindowMs;
  for (const char* direction : {"inbound", "outbound"}) {
    const json& d = load.at(direction);
    const int64_t completed = num(d, "completed");
    const json& average = d.at("averageProcessingMs");
    ok = ok && num(d, "inFlight") >= 0 && completed >= 0 && average.is_null() == (completed == 0) &&
         (average.is_null() || average.get<double>() >= 0);
  }
  tallies_.check("RTE-08", ok, [&] { return where + " carries an impossible load snapshot " + load.dump(); });
}

void RoutingChecks::onReply(Client& client, const EventFields& e) {
  Push* p = push(client, e, "RTE-09");
  if (!p) return;
  const bool late = e.at("ev") == routing_events::kLateFailure || e.at("late").get<bool>();
  if (late) {
    tallies_.check("RTE-11", p->failed == "timeout" && !p->reply, [&] { return pushName(e) + " had a late outcome without having timed out"; });
    return;
  }
  const bool success = e.at("success").get<bool>();
  tallies_.check("RTE-09", e.at("value").get<bool>() == success && e.at("error").get<bool>() == !success,
                 [&] { return pushName(e) + " reply has success " + (success ? "true" : "false") + " but value/error do not match"; });
  checkLoadShape(pushName(e), e.at("load"));
  tallies_.check("RTE-01", p->invokes == 1 && !p->failed, [&] { return pushName(e) + " got a reply after " + str(p->invokes) + " invokes"; });
  if (p->timeoutMs && p->invokeStartedAt)
    tallies_.check("RTE-11", num(e, "now") - *p->invokeStartedAt <= *p->timeoutMs, [&] {
      return pushName(e) + " accepted a reply " + str(num(e, "now") - *p->invokeStartedAt) + " ms after invoke, past its timeout";
    });
  p->reply = e;
}

// RTE-03 and RTE-11: an uncertain outcome records nothing; a timeout comes no earlier than timeoutMs.
void RoutingChecks::onFailed(Client& client, const EventFields& e) {
  Push* p = push(client, e, "RTE-03");
  if (!p) return;
  const std::string outcome = e.at("outcome").get<std::string>();
  tallies_.check("RTE-03", !p->observedReply && !p->reply && p->invokes == 1,
                 [&] { return pushName(e) + " failed (" + outcome + ") after recording a reply, or without one invoke"; });
  if (outcome == "timeout") {
    const int64_t now = num(e, "now");
    tallies_.check("RTE-11", p->timeoutMs && p->invokeStartedAt && now - *p->invokeStartedAt >= *p->timeoutMs, [&] {
      return pushName(e) + " timed out at " + str(now) + ", invoke started at " + str(p->invokeStartedAt) + ", timeout " + str(p->timeoutMs);
    });
  }
  p->failed = outcome;
}

// RTE-02, RTE-03, RTE-05 and RTE-04 at each recorded load.
void RoutingChecks::onObserve(Client& client, const EventFields& e) {
  Push* p = push(client, e, "RTE-05");
  if (!p) return;
  const std::string shard = e.at("shard").get<std::string>();
  const int64_t observedAt = num(e, "observedAt"), now = num(e, "now");
  tallies_.check("RTE-03", !p->failed, [&] { return pushName(e) + " recorded a load after it failed (" + *p->failed + ")"; });
  tallies_.check("RTE-02", p->reply && p->reply->at("shard") == shard && num(p->reply->at("load"), "observedAt") == observedAt && !p->observedReply,
                 [&] { return pushName(e) + " recorded a load that is not its reply's"; });
  p->observedReply = true;
  const std::optional<int64_t> stored = optInt(e.at("stored"));
  auto held = client.stored.find(shard);
  // An entry the model holds but the client does not may have been pruned as stale meanwhile.
  const bool heldMatches = held == client.stored.end() ? !stored
                                                       : (stored == held->second || (!stored && now - held->second >= kWindowMs));
  const bool kept = e.at("kept").get<bool>();
  tallies_.check("RTE-05", heldMatches && kept == (!stored || observedAt >= *stored), [&] {
    return pushName(e) + " load of " + shard + " at " + str(observedAt) + (kept ? " replaced " : " did not replace ") + "the stored " +
           str(stored) + " (model holds " + (held == client.stored.end() ? std::string("none") : str(held->second)) + ")";
  });
  if (kept) client.stored[shard] = observedAt;
  const json& evicted = e.at("evicted");
  const auto size = e.at("size").get<std::size_t>();
  bool bounded = size <= kMaxShards && (evicted.empty() || size == kMaxShards);
  for (const json& gone : evicted) {
    bounded = bounded && gone != shard;
    client.stored.erase(gone.get<std::string>());
  }
  tallies_.check("RTE-04", bounded, [&] { return pushName(e) + " left " + str(static_cast<int64_t>(size)) + " observations, evicting " + evicted.dump(); });
}

// RTE-06: the resize equals the model's, the load being the push's reply.
void RoutingChecks::onResize(Client& client, const EventFields& e) {
  Push* p = push(client, e, "RTE-06");
  if (!p) return;
  const model::ShardLoad load = model::shardLoadFromJson(e.at("load"));
  const model::WidthState before{num(e, "before"), optInt(e.at("lastResizeBefore"))};
  const model::WidthState after{num(e, "after"), optInt(e.at("lastResizeAfter"))};
  const model::WidthState expected = model::resizeWidth(client.width, load, num(e, "now"), num(e, "softBacklogLimit"));
  tallies_.check("RTE-06", !p->custom && !p->failed && p->observedReply && before == client.width && after == expected && after.width >= 1, [&] {
    return pushName(e) + " resized width " + str(before.width) + " -> " + str(after.width) + " (last resize " + str(after.lastResizeAt) +
           "); the rule gives " + str(expected.width) + " (" + str(expected.lastResizeAt) + ") from " + str(client.width.width);
  });
  client.width = after;
}

void RoutingChecks::onReturn(Client& client, const EventFields& e) {
  Push* p = push(client, e, "RTE-02");
  if (!p) return;
  const bool success = e.at("success").get<bool>();
  tallies_.check("RTE-02", p->reply && p->reply->at("success").get<bool>() == success && p->observedReply && !p->returned,
                 [&] { return pushName(e) + " returned success " + (success ? "true" : "false") + " unlike its reply, or without recording it"; });
  p->returned = true;
}

// ---------------------------------------------------------------------------------------------
// The application's side of each call

void RoutingChecks::onApp(EventType name, const EventFields& e) {
  const char* id = name == routing_events::kAppPushed ? "RTE-02" : "RTE-01";
  try {
    const int64_t callId = num(e, "call"), t = num(e, "t");
    if (name == routing_events::kAppPush) {
      tallies_.check("RTE-01", calls_.count(callId) == 0, [&] { return "call " + str(callId) + " was pushed twice"; });
      AppCall& call = calls_[callId];
      call.faulty = e.at("faulty").get<bool>();
      call.timeoutMs = optInt(e.at("timeoutMs"));
      return;
    }
    AppCall& call = calls_[callId];
    if (name == routing_events::kAppInvoke) {
      ++call.invokes;
      tallies_.check("RTE-10", !call.faulty, [&] { return "call " + str(callId) + " named no shard, yet its invoke function ran"; });
      tallies_.check("RTE-01", call.invokes == 1 && !call.pushed, [&] {
        return "call " + str(callId) + " ran its invoke function " + (call.pushed ? "after its push returned" : "a second time");
      });
      call.invokedAt = t;
    } else if (name == routing_events::kAppInvoked) {
      call.returnedAt = t;
      call.threw = e.at("threw").get<bool>();
      call.success = call.threw ? json() : json(e.at("success").get<bool>());
    } else if (name == routing_events::kAppPushed) {
      onAppPushed(call, e);
    }
  } catch (const json::exception& error) {
    tallies_.check(id, false, [&] { return "malformed '" + std::string(name) + "' event " + e.dump() + ": " + error.what(); });
  }
}

void RoutingChecks::onAppPushed(AppCall& call, const EventFields& e) {
  const std::string where = "call " + str(num(e, "call"));
  const std::string outcome = e.at("outcome").get<std::string>();
  const int64_t t = num(e, "t");
  call.pushed = true;
  tallies_.check("RTE-10", call.faulty == (outcome == "refused") && (outcome != "refused" || call.invokes == 0), [&] {
    return where + (call.faulty ? " named no shard" : " named a shard") + " and got outcome '" + outcome + "' after " +
           str(call.invokes) + " invokes";
  });
  if (outcome == "refused") return;
  tallies_.check("RTE-01", call.invokes == 1, [&] { return where + " returned '" + outcome + "' after " + str(call.invokes) + " invokes"; });
  if (!call.invokedAt) return;
  const std::optional<int64_t> took = call.returnedAt ? std::optional<int64_t>(*call.returnedAt - *call.invokedAt) : std::nullopt;
  if (outcome == "reply") {
    const json& success = e.at("success");
    tallies_.check("RTE-03", call.returnedAt && !call.threw, [&] { return where + " returned a reply, yet its invoke " + (call.threw ? "threw" : "had not returned"); });
    tallies_.check("RTE-02", !call.threw && success == call.success, [&] {
      return where + " returned success " + flag(success) + "; its invoke returned success " + flag(call.success);
    });
    tallies_.check("RTE-11", !call.timeoutMs || !took || *took <= *call.timeoutMs, [&] {
      return where + " returned a reply that came " + str(took) + " ms after invoke, past its timeout of " + str(call.timeoutMs);
    });
  } else if (outcome == "threw") {
    tallies_.check("RTE-03", call.threw, [&] { return where + " threw, yet its invoke " + (call.returnedAt ? "returned a reply" : "had not returned"); });
  } else if (outcome == "timeout") {
    const int64_t waited = t - *call.invokedAt;
    tallies_.check("RTE-11", call.timeoutMs && waited >= *call.timeoutMs && (!took || *took >= *call.timeoutMs), [&] {
      return where + " timed out " + str(waited) + " ms after invoke (timeout " + str(call.timeoutMs) + "), its invoke returned after " + str(took);
    });
  }
}

// RTE-08: what the application read of its RoutingLoad equals the spec's window over its samples.
void RoutingChecks::onAppLoad(EventType name, const EventFields& e) {
  try {
    model::LoadWindowModel& window = windows_[{e.at("object").get<std::string>(), num(e, "incarnation")}];
    const int64_t now = num(e, "now");
    if (name == routing_events::kAppLoadBegin) return window.begin(num(e, "sample"), now);
    if (name == routing_events::kAppLoadFinish) return window.finish(num(e, "sample"), now);
    if (name != routing_events::kAppLoadRead) return;
    const model::LoadWindowModel::View expected = window.snapshot(now);
    const json& average = e.at("averageProcessingMs");
    const bool same = num(e, "inFlight") == expected.inFlight && num(e, "completed") == expected.completed &&
                      average.is_null() == !expected.averageMs && (average.is_null() || average.get<double>() == *expected.averageMs);
    tallies_.check("RTE-08", same, [&] {
      return e.at("object").get<std::string>() + " read outbound load " + e.dump() + "; its samples give inFlight " + str(expected.inFlight) +
             ", completed " + str(expected.completed) + ", average " + (expected.averageMs ? std::to_string(*expected.averageMs) : "none");
    });
  } catch (const json::exception& error) {
    tallies_.check("RTE-08", false, [&] { return "malformed '" + std::string(name) + "' event " + e.dump() + ": " + error.what(); });
  }
}

void RoutingChecks::finish() {
  for (const auto& [id, call] : calls_)
    tallies_.check("RTE-01", !call.pushed || call.faulty || call.invokes == 1,
                   [&] { return "call " + str(id) + " ran its invoke function " + str(call.invokes) + " times"; });
  for (const auto& [label, client] : clients_)
    for (const auto& [id, p] : client.pushes)
      tallies_.check("RTE-01", p.refused || p.invokes == 1,
                     [&] { return "client " + label + " push " + str(id) + " invoked " + str(p.invokes) + " times"; });
}

}  // namespace durasim::properties
