// The event bus's executable spec; see events_model.h.
#include "model/events_model.h"

#include <algorithm>

namespace durasim::model {

using nlohmann::json;

namespace {

std::optional<int64_t> intOf(const json& record, const char* name) {
  if (!record.is_object() || !record.contains(name) || !record.at(name).is_number_integer()) return std::nullopt;
  return record.at(name).get<int64_t>();
}

bool quarantined(const std::optional<json>& dead) { return dead && !dead->contains("releasedAt"); }

std::optional<json> find(const std::map<std::string, json>& m, const std::string& id) {
  const auto it = m.find(id);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

}  // namespace

int64_t eventsDefaultDelay(int64_t n) {
  if (n >= 7) return kEventsRetryCapMs;
  return std::min<int64_t>(kEventsRetryBaseMs << (std::max<int64_t>(n, 1) - 1), kEventsRetryCapMs);
}

std::string eventsStamp(const std::optional<json>& dead) {
  if (!dead) return "0@-";
  const std::optional<int64_t> at = intOf(*dead, "releasedAt");
  return std::to_string(intOf(*dead, "releases").value_or(0)) + "@" + (at ? std::to_string(*at) : std::string("-"));
}

EventsModel::EmitResult EventsModel::emit(const std::string& topic, const std::string& id, const std::string& payload,
                                          std::optional<int64_t> maxDepth) {
  std::vector<EvtRecord>& log = topics_[topic];
  EmitResult out;
  for (const EvtRecord& r : log)
    if (r.id == id) return out;
  out.depth = static_cast<int64_t>(log.size());
  if (maxDepth && out.depth >= *maxDepth) {
    out.depth = std::min(out.depth, *maxDepth);
    out.refused = true;
    return out;
  }
  log.push_back(EvtRecord{++lastSeq_, id, payload});
  out.inserted = true;
  return out;
}

int64_t EventsModel::appendIndex(std::map<std::string, int64_t>& index, const std::string& id) {
  const auto it = index.find(id);
  if (it != index.end()) return it->second;
  return index[id] = ++lastSeq_;
}

void EventsModel::invoke(const EvtConsumerConfig& c, EvtConsumer& s, const EvtRecord& r, bool fromIndex, int64_t now,
                         const std::function<bool(const std::string&)>& fails, PollResult& out) {
  out.calls.push_back(r.id);
  if (!fails(r.id)) {  // events.md 6.5: the marker, and the index entry it settles
    s.acked.insert(r.id);
    if (fromIndex) s.pending.erase(r.id);
    ++out.delivered;
    return;
  }
  // events.md 6.6 (one poller: no release or delivery can land during the call)
  const std::optional<json> att = find(s.attempts, r.id);
  const int64_t n = (att && att->is_number_integer() ? att->get<int64_t>() : att ? intOf(*att, "n").value_or(0) : 0) + 1;
  const int64_t delay = c.delay ? c.delay(n) : eventsDefaultDelay(n);
  json next = {{"n", n}, {"nextAt", std::min(now + delay, kEventsMaxSafeInteger)}};
  const std::optional<int64_t> firstAt = att ? intOf(*att, "firstAt") : std::nullopt;
  next["firstAt"] = firstAt ? *firstAt : now;
  if (att && att->is_object() && att->contains("gen") && att->at("gen").is_string()) next["gen"] = att->at("gen");
  s.attempts[r.id] = next;
  const std::string error = "boom " + r.id;
  if (static_cast<double>(n) >= c.maxAttempts) {
    json dead = {{"error", error}, {"attempts", n}, {"at", now}, {"seq", r.seq}};
    if (const std::optional<json> was = find(s.dead, r.id))
      if (const std::optional<int64_t> releases = intOf(*was, "releases")) dead["releases"] = *releases;
    s.dead[r.id] = dead;
    appendIndex(s.deadIndex, r.id);
    s.pending.erase(r.id);
    return;
  }
  appendIndex(s.pending, r.id);
}

EventsModel::PollResult EventsModel::poll(const EvtConsumerConfig& c, int64_t now, const std::function<bool(const std::string&)>& fails) {
  EvtConsumer& s = state(c.topic, c.name);
  PollResult out;
  const std::vector<EvtRecord>& log = topics_[c.topic];
  auto recordOf = [&](const std::string& id) -> const EvtRecord* {
    for (const EvtRecord& r : log)
      if (r.id == id) return &r;
    return nullptr;
  };
  // Phase A, in index order (the entries as they stand when the pass reaches them).
  std::vector<std::pair<int64_t, std::string>> order;
  for (const auto& [id, seq] : s.pending) order.emplace_back(seq, id);
  std::sort(order.begin(), order.end());
  std::set<std::string> seen;
  for (const auto& [seq, id] : order) {
    seen.insert(id);
    const std::optional<json> att = find(s.attempts, id);
    if (att && intOf(*att, "nextAt").value_or(0) > now) continue;
    if (s.acked.count(id) || quarantined(find(s.dead, id))) {
      s.pending.erase(id);
      continue;
    }
    const EvtRecord* r = recordOf(id);
    if (!r) {
      s.pending.erase(id);
      continue;
    }
    invoke(c, s, *r, true, now, fails, out);
  }
  // Phase B, the records past the frontier.
  for (const EvtRecord& r : log) {
    if (r.seq <= s.frontier) continue;
    if (!seen.count(r.id) && !s.acked.count(r.id) && !quarantined(find(s.dead, r.id))) {
      const std::optional<json> att = find(s.attempts, r.id);
      if (att && intOf(*att, "nextAt").value_or(0) > now)
        appendIndex(s.pending, r.id);
      else
        invoke(c, s, r, false, now, fails, out);
    }
  }
  if (!log.empty()) s.frontier = std::max(s.frontier, log.back().seq);
  return out;
}

EventsModel::Release EventsModel::release(const std::string& topic, const std::string& consumer, const std::string& id, int64_t now) {
  EvtConsumer& s = state(topic, consumer);
  const auto dead = s.dead.find(id);
  if (dead == s.dead.end()) return Release::notQuarantined;
  if (s.acked.count(id)) return Release::alreadyDelivered;
  json released = dead->second;
  released["releasedAt"] = now;
  released["releases"] = intOf(dead->second, "releases").value_or(0) + 1;
  s.attempts[id] = json{{"n", 0}, {"nextAt", 0}, {"gen", eventsStamp(released)}};
  s.dead[id] = released;
  appendIndex(s.pending, id);
  return Release::released;
}

std::vector<EventsModel::Dead> EventsModel::listDead(const std::string& topic, const std::string& consumer) const {
  std::vector<Dead> out;
  const auto s = consumers_.find({topic, consumer});
  const auto log = topics_.find(topic);
  if (s == consumers_.end() || log == topics_.end()) return out;
  for (const EvtRecord& r : log->second) {
    const auto dead = s->second.dead.find(r.id);
    if (dead == s->second.dead.end()) continue;
    const std::string status = s->second.acked.count(r.id) ? "delivered" : dead->second.contains("releasedAt") ? "released" : "quarantined";
    out.push_back(Dead{r.id, status, intOf(dead->second, "attempts").value_or(0), intOf(dead->second, "releases").value_or(0)});
  }
  return out;
}

}  // namespace durasim::model
