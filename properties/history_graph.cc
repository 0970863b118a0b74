// The happens-before graph of a recorded history, built event by event (see happens_before.h), and
// the read-from judgements of log offsets (LOG-07, LOG-09), outbox versions (OBX-14) and fanout
// claims (FAN-06). Each event
// costs O(1) amortised: map lookups on the few objects and the call in flight, one node, a few edges.
#include <algorithm>
#include <ostream>

#include "engine/fanout_events.h"
#include "engine/json_text.h"
#include "engine/log_events.h"
#include "engine/outbox_events.h"
#include "properties/happens_before.h"

namespace durasim::properties {
namespace {

using nlohmann::json;
namespace obx = outbox_events;
namespace fan = fanout_events;

constexpr int64_t kMaxIndexed = 100'000'000;  // offsets and commit numbers beyond this are malformed, not indexed
constexpr uint64_t kMaxWitnesses = sim::Tallies::kMaxExamples;  // violations given a witness path, per invariant

std::optional<int64_t> intField(const EventFields& e, std::string_view name) {
  const json* f = e.find(name);
  if (!f || !f->is_number_integer()) return std::nullopt;
  return f->get<int64_t>();
}
const std::string* textField(const EventFields& e, std::string_view name) {
  const json* f = e.find(name);
  return f && f->is_string() ? &f->get_ref<const std::string&>() : nullptr;
}

// The key of a keyed write: "<object>\n<part>\n<part>\n<number>". An outbox version: (account,
// channel, key, version); a fanout claim: (mailbox, "claim", delivery identity, attempt).
std::string writeKeyOf(const std::string& object, const std::string& part, const std::string& other, int64_t number) {
  std::string out = object;
  out += '\n';
  out += part;
  out += '\n';
  out += other;
  out += '\n';
  out += std::to_string(number);
  return out;
}
// A fanout delivery's identity, json([generation, target]) (fanout.md; FAN-19).
std::string deliveryOf(const json& generation, const std::string& target) {
  if (generation.is_string()) return jsonStringArray({generation.get_ref<const std::string&>(), target});
  return json::array({generation, target}).dump();
}

template <class Vec>
void grow(Vec& v, std::size_t n) {
  if (v.size() <= n) v.resize(n + 1, HappensBefore::kNone);
}

}  // namespace

HistoryGraph::HistoryGraph(Options options, sim::Tallies* tallies) : options_(std::move(options)), tallies_(tallies) {}

HistoryGraph::Object& HistoryGraph::object(const std::string& label) {
  // Events of one object come in runs; the map's nodes stay where they are (none is erased).
  if (lastObject_ && lastObject_->label == label) return *lastObject_;
  Object& o = objects_[label];
  if (o.label.empty()) o.label = label;
  lastObject_ = &o;
  return o;
}

HistoryGraph::Node HistoryGraph::add(std::string_view ev, std::string_view who) {
  return graph_.add(next_index_ - 1, eventTime_, ev, who);
}

void HistoryGraph::chain(Object& o, int64_t incarnation, Node n) {
  Incarnation& inc = o.incarnations[incarnation];
  graph_.edge(inc.last, n, HbEdge::program);
  inc.last = n;
  o.last = n;
}

void HistoryGraph::observe(const sim::TraceEvent& header) {
  ++next_index_;
  const EventType ev = header.type();
  if (ev.empty()) return;
  eventTime_ = header.has_t() ? header.t() : 0;
  const EventFields& event = header.fields();
  try {
    if (const std::string* label = header.object()) {
      if (follows(*label)) {
        if (const std::optional<int64_t> incarnation = intField(event, "incarnation")) return onObjectEvent(event, ev, *label, *incarnation);
      }
      if (options_.everyEvent) add(ev, *label);
      return;
    }
    if (ev.starts_with("rpc.")) return onRpc(event, ev);
    if (ev.starts_with("app.")) return onApp(event, ev);
    if (options_.everyEvent) add(ev, "");
  } catch (const json::exception&) {
    // A malformed event: the checkers that read it report it; the graph keeps what it had.
  }
}

void HistoryGraph::onObjectEvent(const EventFields& e, EventType ev, const std::string& label, int64_t incarnation) {
  Object& o = object(label);
  const Node n = add(ev, label);
  if (ev == "incarnation.start") {
    graph_.edge(o.last, n, HbEdge::restart);
    o.live = incarnation;
  }
  if (o.live == 0) o.live = incarnation;
  chain(o, incarnation, n);
  Incarnation& inc = o.incarnations[incarnation];
  if (ev == "commit") {
    const std::optional<int64_t> number = intField(e, "commit");
    if (number && *number > 0 && *number < kMaxIndexed) {
      grow(o.commits, static_cast<std::size_t>(*number));
      o.commits[static_cast<std::size_t>(*number)] = n;
    }
    // What the transaction wrote is read from its commit on.
    for (const auto& [offset, writer] : inc.openOffsets)
      if (o.offsetSource[static_cast<std::size_t>(offset)] == writer) o.offsetSource[static_cast<std::size_t>(offset)] = n;
    for (const std::string& key : inc.openKeys) keySource_[key] = n;
    inc.openOffsets.clear();
    inc.openKeys.clear();
    return;
  }
  if (ev == "commit.noop" || ev == "commit.failed" || ev == "incarnation.end") {
    inc.openOffsets.clear();
    inc.openKeys.clear();
    return;
  }
  if (ev == "confirm") {
    const std::optional<int64_t> number = intField(e, "commit");
    if (!number || *number <= 0 || *number >= kMaxIndexed) return;
    const auto k = static_cast<std::size_t>(*number);
    if (k < o.commits.size()) graph_.edge(o.commits[k], n, HbEdge::commit);
    grow(o.confirms, k);
    o.confirms[k] = n;
    return;
  }
  if (ev == "effect") {
    const std::optional<int64_t> required = intField(e, "required");
    if (required && *required > 0 && static_cast<std::size_t>(*required) < o.confirms.size())
      graph_.edge(o.confirms[static_cast<std::size_t>(*required)], n, HbEdge::reveal);
    const std::string* kind = textField(e, "kind");
    if (kind && *kind == "reply") inc.replies.push_back(n);
    return;
  }
  if (options_.logOffsets) {
    if (ev == log_events::kAppendWrite) {
      const int64_t first = e.at("first").get<int64_t>();
      for (const json& offset : e.at("offsets")) {
        const int64_t value = offset.get<int64_t>();
        if (value < first || value < 0 || value >= kMaxIndexed) continue;  // a dedup hit writes nothing
        grow(o.offsetSource, static_cast<std::size_t>(value));
        o.offsetSource[static_cast<std::size_t>(value)] = n;
        inc.openOffsets.emplace_back(value, n);
        if (o.waiting.empty()) continue;
        const auto waiting = o.waiting.find(value);
        if (waiting == o.waiting.end()) continue;
        for (const Node reader : waiting->second) judgeReadFrom("LOG-09", "offset", value, n, reader);
        o.waiting.erase(waiting);
      }
      return;
    }
    if (ev == log_events::kRead || ev == log_events::kLease) {
      Node previous = HappensBefore::kNone;
      for (const json& offset : e.at("offsets")) readOffset(o, offset.get<int64_t>(), n, previous);
      return;
    }
  }
  if (options_.outboxVersions) {
    if (ev == obx::kStageWrite) {
      const std::string key = writeKeyOf(label, e.at("channel").get<std::string>(), e.at("key").get<std::string>(), e.at("version").get<int64_t>());
      writeKey(key, n);
      inc.openKeys.push_back(key);
      return;
    }
    if (ev == obx::kAppSinkWrite) {
      const int64_t version = e.at("version").get<int64_t>();
      readKey(writeKeyOf(e.at("source").get<std::string>(), e.at("channel").get<std::string>(), e.at("key").get<std::string>(), version),
              KeyedRead{"OBX-14", "version", version, n});
      return;
    }
  }
  if (options_.fanoutClaims) {
    if (ev == fan::kClaimWrite) {
      const std::string target = e.at("target").get<std::string>();
      for (const json& claimed : e.at("claimed")) {
        const std::string key = writeKeyOf(label, "claim", deliveryOf(claimed.at("generation"), target), claimed.at("attempt").get<int64_t>());
        writeKey(key, n);
        inc.openKeys.push_back(key);
      }
      return;
    }
    if (ev == fan::kAppConsume) {
      const int64_t attempt = e.at("attempt").get<int64_t>();
      readKey(writeKeyOf(e.at("mailbox").get<std::string>(), "claim", e.at("delivery").get<std::string>(), attempt),
              KeyedRead{"FAN-06", "the claim of attempt", attempt, n});
      return;
    }
  }
}

void HistoryGraph::onRpc(const EventFields& e, EventType ev) {
  const std::optional<int64_t> id = intField(e, "call");
  if (!id) {
    if (options_.everyEvent) add(ev, "");
    return;
  }
  const auto call = static_cast<uint64_t>(*id);
  if (ev == "rpc.call") {
    const std::string* to = textField(e, "to");
    const std::string* from = textField(e, "from");
    const bool callerFollowed = from && *from != "client" && follows(*from);
    if (!to || (!follows(*to) && !callerFollowed)) {
      if (options_.everyEvent) add(ev, from ? *from : "");
      return;
    }
    const Node n = add(ev, from ? *from : "");
    if (callerFollowed) {
      Object& caller = object(*from);
      chain(caller, caller.live, n);
    }
    Call& c = calls_[call];
    c.to = *to;
    c.from = from ? *from : "";
    c.call = n;
    return;
  }
  const auto found = calls_.find(call);
  if (found == calls_.end()) {
    if (options_.everyEvent) add(ev, "");
    return;
  }
  Call& c = found->second;
  if (ev == "rpc.deliver") {
    const Node n = add(ev, c.to);
    c.incarnation = intField(e, "incarnation").value_or(0);
    chain(object(c.to), c.incarnation, n);
    graph_.edge(c.call, n, HbEdge::message);
    c.deliver = n;
    return;
  }
  if (ev != "rpc.reply" && ev != "rpc.fail") {
    if (options_.everyEvent) add(ev, c.from);
    return;
  }
  // The caller receives the answer (a reply the callee's gate released, or the failure).
  const Node n = add(ev, c.from);
  graph_.edge(c.deliver != HappensBefore::kNone ? c.deliver : c.call, n, HbEdge::message);
  if (ev == "rpc.reply" && c.deliver != HappensBefore::kNone) {
    // The k-th reply received from an incarnation needed the k-th release of its output gate.
    Incarnation& callee = object(c.to).incarnations[c.incarnation];
    const std::size_t k = callee.repliesReceived++;
    if (k < callee.replies.size()) graph_.edge(callee.replies[k], n, HbEdge::reveal);
  }
  if (!c.from.empty() && c.from != "client" && follows(c.from)) {
    Object& caller = object(c.from);
    chain(caller, caller.live, n);
  }
  calls_.erase(found);
}

void HistoryGraph::onApp(const EventFields& e, EventType ev) {
  const std::string* partition = textField(e, "partition");
  if (partition && !follows(*partition)) {
    if (options_.everyEvent) add(ev, *partition);
    return;
  }
  // The client whose program order the event continues: a consumer group, a producer, a leaser.
  std::string client;
  for (const char* field : {"group", "producer", "consumer"})
    if (const json* f = e.find(field); f && !f->is_null()) {
      client = field;
      client += ' ';
      client += f->is_string() ? f->get_ref<const std::string&>() : f->dump();
      break;
    }
  const bool read = options_.logOffsets && partition && (ev == log_events::kAppConsume || ev == log_events::kAppProbe);
  if (client.empty() && !read && !options_.everyEvent) return;
  const Node n = add(ev, !client.empty() ? client : partition ? *partition : std::string());
  if (!client.empty()) {
    Node& last = clients_.try_emplace(client, HappensBefore::kNone).first->second;
    graph_.edge(last, n, HbEdge::program);
    last = n;
  }
  if (!read) return;
  Object& o = object(*partition);
  Node previous = HappensBefore::kNone;
  if (ev == log_events::kAppConsume) {
    for (const json& offset : e.at("offsets")) readOffset(o, offset.get<int64_t>(), n, previous);
  } else if (const json* records = e.find("records")) {
    for (const json& record : *records) readOffset(o, record.at("offset").get<int64_t>(), n, previous);
  }
}

void HistoryGraph::readOffset(Object& o, int64_t offset, Node reader, Node& previous) {
  const Node source =
      offset >= 0 && static_cast<std::size_t>(offset) < o.offsetSource.size() ? o.offsetSource[static_cast<std::size_t>(offset)] : HappensBefore::kNone;
  if (source == HappensBefore::kNone) {
    if (offset >= 0 && offset < kMaxIndexed) o.waiting[offset].push_back(reader);
    else judgeReadFrom("LOG-09", "offset", offset, HappensBefore::kNone, reader);
    previous = HappensBefore::kNone;
    return;
  }
  judgeReadFrom("LOG-09", "offset", offset, source, reader);
  // LOG-07: the page's offsets come in the order of their appends.
  if (previous != HappensBefore::kNone && tallies_) {
    if (previous <= source) {
      ++passes_["LOG-07"];
    } else {
      const bool witnessed = witnessed_["LOG-07"]++ < kMaxWitnesses;
      tallies_->check("LOG-07", false, [&] {
        return graph_.label(reader) + " returned offset " + std::to_string(offset) + " after an offset appended later: the append of " +
               std::to_string(offset) + " happens before the other's" + (witnessed ? ", witness: " + describe(graph_.witness(source, previous)) : "");
      });
    }
  }
  previous = source;
}

void HistoryGraph::judgeReadFrom(const char* invariant, const char* subject, int64_t value, Node writer, Node reader) {
  graph_.edge(writer, reader, HbEdge::reads_from);
  if (!tallies_) return;
  if (writer != HappensBefore::kNone && writer < reader) {
    ++passes_[invariant];
    return;
  }
  const bool witnessed = witnessed_[invariant]++ < kMaxWitnesses;
  tallies_->check(invariant, false, [&] {
    const std::string what = graph_.label(reader) + " read " + subject + " " + std::to_string(value);
    if (writer == HappensBefore::kNone) return what + ", which nothing wrote before the run ended";
    std::string message = what + ", written only later by " + graph_.label(writer);
    if (!witnessed) return message;
    std::vector<HbStep> path = graph_.witness(reader, writer);
    const bool cycle = path.front().next != HbEdge::real_time;
    if (cycle) path.back().next = HbEdge::reads_from;
    return message + (cycle ? ": read-from closes the cycle " : ": the read precedes the write in real time ") + describe(path);
  });
}

void HistoryGraph::writeKey(const std::string& key, Node writer) {
  keySource_[key] = writer;
  if (keyWaiting_.empty()) return;
  const auto waiting = keyWaiting_.find(key);
  if (waiting == keyWaiting_.end()) return;
  for (const KeyedRead& read : waiting->second) judgeReadFrom(read.invariant, read.subject, read.value, writer, read.reader);
  keyWaiting_.erase(waiting);
}

void HistoryGraph::readKey(const std::string& key, const KeyedRead& read) {
  const auto source = keySource_.find(key);
  if (source == keySource_.end()) {
    keyWaiting_[key].push_back(read);
    return;
  }
  judgeReadFrom(read.invariant, read.subject, read.value, source->second, read.reader);
}

std::vector<const char*> HistoryGraph::judged() const {
  std::vector<const char*> invariants;
  if (options_.logOffsets) invariants.push_back("LOG-09");
  if (options_.outboxVersions) invariants.push_back("OBX-14");
  if (options_.fanoutClaims) invariants.push_back("FAN-06");
  return invariants;
}

void HistoryGraph::finish() {
  for (auto& [label, o] : objects_) {
    for (const auto& [offset, readers] : o.waiting)
      for (const Node reader : readers) judgeReadFrom("LOG-09", "offset", offset, HappensBefore::kNone, reader);
    o.waiting.clear();
  }
  for (const auto& [key, reads] : keyWaiting_)
    for (const KeyedRead& read : reads) judgeReadFrom(read.invariant, read.subject, read.value, HappensBefore::kNone, read.reader);
  keyWaiting_.clear();
  if (!tallies_) return;
  for (const auto& [invariant, passes] : passes_) tallies_->add(std::string(invariant), passes, 0, "");
  passes_.clear();
  // The whole history is acyclic: one check per invariant these edges feed.
  const std::optional<std::vector<HbStep>> cycle = graph_.find_cycle();
  for (const char* invariant : judged())
    tallies_->check(invariant, !cycle, [&] { return "the happens-before graph has a cycle: " + describe(*cycle); });
}

void write_happens_before_dot(std::ostream& out, const std::vector<nlohmann::json>& events, std::size_t first, std::size_t last,
                              const std::set<std::size_t>& marked) {
  HistoryGraph::Options options;
  options.logOffsets = true;
  options.outboxVersions = true;
  options.fanoutClaims = true;
  options.everyEvent = true;
  HistoryGraph history(options, nullptr);
  history.set_first_index(first);
  for (std::size_t i = first; i <= last && i < events.size(); ++i) history.observe(events[i]);
  history.graph().write_dot(out, marked);
}

}  // namespace durasim::properties
