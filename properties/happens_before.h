// The happens-before checker (DESIGN.md, "Checking"): a graph of a run's history built as the trace
// is recorded, one node per event that takes part, edges for program order (per object incarnation
// and per client), messages (RPC call -> delivery -> reply), commit -> confirmation -> reveal through
// the output gate, and read-from (the write a read saw -> the read). It keeps LOG-09 (a read never
// returns a log record appended after it), LOG-07 (a page's offsets in the order of their appends),
// OBX-14 (a sink writes only a version whose stage came before) and FAN-06 (a consumer receives
// only an attempt whose claim came before): a read-from edge that points backwards closes a cycle,
// reported with its witness path (each event's trace index and a label).
// Building costs O(1) amortised per event; the acyclicity check at the end is one O(V+E) pass.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "properties/event_type.h"
#include "sim/tally.h"
#include "sim/trace_sink.h"

namespace durasim::properties {

// Why one event happens before another.
enum class HbEdge : uint8_t {
  program,     // the next event of the same object incarnation or client
  restart,     // an object's last event -> the start of its next incarnation
  message,     // rpc.call -> rpc.deliver -> rpc.reply / rpc.fail
  commit,      // commit -> its confirm
  reveal,      // confirm -> the output gate's release (`effect`) -> the reply a caller received
  reads_from,  // the write (or its commit) -> the read that returned what it wrote
  real_time,   // in witness paths only: a later event of the trace that no edge reaches
};
const char* hb_edge_name(HbEdge kind);

// One event of a witness path: where it is in the trace, what it is, and how it leads to the next.
struct HbStep {
  uint64_t index = 0;          // the event's position among the trace's events (0-based)
  std::string label;           // "#12 t=1000 log.read LogPartition/p0"
  std::optional<HbEdge> next;  // the edge to the next step (none on the last step of an open path)
};
std::string describe(const std::vector<HbStep>& path);

// The graph itself. Nodes are added in trace order, so a node's number orders it in real time; every
// edge but read-from points forward, and a cycle needs a read-from edge pointing backwards.
class HappensBefore {
 public:
  using Node = uint32_t;
  static constexpr Node kNone = UINT32_MAX;

  HappensBefore();
  ~HappensBefore();
  HappensBefore(const HappensBefore&) = delete;
  HappensBefore& operator=(const HappensBefore&) = delete;

  // A node for trace event `index` (non-decreasing across calls), at simulated time `t`, of type `ev`
  // on object or client `who`. O(1) amortised.
  Node add(uint64_t index, int64_t t, std::string_view ev, std::string_view who);
  // An edge; one end kNone adds nothing. O(1) amortised. An edge repeating the last one added keeps
  // one edge, of the more specific kind (a commit's confirm is also the next event of its object).
  void edge(Node from, Node to, HbEdge kind);

  std::size_t nodes() const { return nodes_.size(); }
  std::size_t edges() const { return edges_.size(); }
  uint64_t index_of(Node n) const { return nodes_[n].index; }
  std::string label(Node n) const;

  // A path from `from` to `to` along the edges added so far (breadth first over the nodes between
  // them, O(V+E) of that stretch), or, when there is none, the two events joined by real time.
  std::vector<HbStep> witness(Node from, Node to) const;
  // The first cycle a depth-first search finds (the topological check: O(V+E)), as a closed path
  // whose last step leads back to the first; nullopt when the graph is acyclic.
  std::optional<std::vector<HbStep>> find_cycle() const;

  // The graph as Graphviz DOT (boost::write_graphviz): node labels, edges labelled by kind, the
  // nodes whose trace index is in `marked` filled.
  void write_dot(std::ostream& out, const std::set<std::size_t>& marked) const;

 private:
  struct NodeInfo {
    uint64_t index;
    int64_t t;
    uint32_t ev;
    uint32_t who;
  };
  struct EdgeInfo {
    Node from, to;
    HbEdge kind;
  };
  // An append-only list in fixed chunks: growing never copies, and a run's memory is reused by the
  // allocator's small-object pages across runs instead of fresh pages for ever larger vectors (which
  // made 10x the history cost more than 10x the time in `durasim bench` (h)).
  template <class T>
  class Chunked {
   public:
    static constexpr std::size_t kChunk = 2048;
    void push_back(const T& value) {
      if (size_ % kChunk == 0) chunks_.push_back(std::make_unique<T[]>(kChunk));
      chunks_.back()[size_++ % kChunk] = value;
    }
    std::size_t size() const { return size_; }
    bool empty() const { return size_ == 0; }
    T& operator[](std::size_t i) { return chunks_[i / kChunk][i % kChunk]; }
    const T& operator[](std::size_t i) const { return chunks_[i / kChunk][i % kChunk]; }
    T& back() { return (*this)[size_ - 1]; }
    // Calls f(item) for every item, in order.
    template <class F>
    void each(F&& f) const {
      for (std::size_t c = 0; c < chunks_.size(); ++c) {
        const std::size_t n = std::min(kChunk, size_ - c * kChunk);
        for (std::size_t i = 0; i < n; ++i) f(chunks_[c][i]);
      }
    }

   private:
    std::vector<std::unique_ptr<T[]>> chunks_;
    std::size_t size_ = 0;
  };
  static constexpr uint32_t kNoName = UINT32_MAX;
  // The id of name `s`; the name found last for text at s's address is tried first (event types are
  // mostly string literals: one comparison of their text instead of a hash and a lookup).
  uint32_t intern(std::string_view s) {
    Recent& recent = recent_[(reinterpret_cast<std::uintptr_t>(s.data()) >> 3 ^ s.size()) % kRecent];
    if (recent.data == s.data() && recent.id != kNoName && names_[recent.id] == s) return recent.id;
    recent = Recent{s.data(), lookup(s)};
    return recent.id;
  }
  uint32_t lookup(std::string_view s);

  Chunked<NodeInfo> nodes_;
  Chunked<EdgeInfo> edges_;
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t, NameHash, std::equal_to<>> nameIds_;
  uint32_t lastWho_ = kNoName;  // the name of the last node's object or client
  struct Recent {
    const char* data = nullptr;
    uint32_t id = kNoName;
  };
  static constexpr std::size_t kRecent = 64;
  std::array<Recent, kRecent> recent_{};
};

// Builds a HappensBefore graph from trace events (docs/log-trace-events.md, docs/outbox-trace-events.md,
// docs/fanout-trace-events.md, the runtime's commit / confirm / effect / rpc.* events) and judges the
// read-from of log offsets, outbox versions and fanout claims as it goes, counting each judgement in
// `tallies`.
class HistoryGraph {
 public:
  struct Options {
    // The objects whose events take part ("Class/name" -> yes); empty: every object.
    std::function<bool(std::string_view)> follows;
    bool logOffsets = false;      // log.append.write -> log.read / log.lease / app.consume / app.log.probe (LOG-07, LOG-09)
    bool outboxVersions = false;  // obx.stage.write -> app.obx.sink.write (OBX-14)
    bool fanoutClaims = false;    // fan.claim.write -> app.fan.consume of that attempt (FAN-06)
    bool everyEvent = false;      // a node for every event, even one no edge reaches (for drawing)
  };
  // `tallies` (may be null: nothing counted) outlives the graph.
  HistoryGraph(Options options, sim::Tallies* tallies);

  // The trace's next event (its index is the number of events given before, plus `first_index`).
  // Reads what it can; a malformed event adds what it could read and nothing else.
  void observe(const sim::TraceEvent& event);
  void observe(const nlohmann::json& event) { observe(sim::TraceEvent(event)); }
  void set_first_index(uint64_t index) { next_index_ = index; }

  // The end of the run: reads that never met their write are violations, and the whole graph must
  // be acyclic (one check of each invariant the options judge, O(V+E)).
  void finish();

  const HappensBefore& graph() const { return graph_; }
  HappensBefore& graph() { return graph_; }

 private:
  using Node = HappensBefore::Node;
  struct Incarnation {
    Node last = HappensBefore::kNone;
    std::vector<Node> replies;        // the output gate's releases of replies, in order
    std::size_t repliesReceived = 0;  // replies callers received from calls delivered here
    std::vector<std::pair<int64_t, Node>> openOffsets;  // log offsets the open transaction wrote
    std::vector<std::string> openKeys;                 // outbox versions and fanout claims it wrote
  };
  struct Object {
    std::string label;
    std::map<int64_t, Incarnation> incarnations;
    int64_t live = 0;
    Node last = HappensBefore::kNone;
    std::vector<Node> commits, confirms;  // by commit number
    std::vector<Node> offsetSource;       // log offset -> the write (then commit) that made it
    std::unordered_map<int64_t, std::vector<Node>> waiting;  // offset -> reads before any write of it
  };
  struct Call {
    std::string to, from;
    Node call = HappensBefore::kNone, deliver = HappensBefore::kNone;
    int64_t incarnation = 0;
  };

  bool follows(std::string_view label) const { return !options_.follows || options_.follows(label); }
  Object& object(const std::string& label);
  // A node for the event being observed, of type `ev` on `who`.
  Node add(std::string_view ev, std::string_view who);
  void chain(Object& o, int64_t incarnation, Node n);
  void onObjectEvent(const EventFields& e, EventType ev, const std::string& label, int64_t incarnation);
  void onRpc(const EventFields& e, EventType ev);
  void onApp(const EventFields& e, EventType ev);
  // One read of `offset` of `o` by `reader`; `previous` is the source of the offset read just before
  // in the same page (kNone for the first).
  void readOffset(Object& o, int64_t offset, Node reader, Node& previous);
  void judgeReadFrom(const char* invariant, const char* subject, int64_t value, Node writer, Node reader);
  // A keyed write (an outbox version, a fanout claim) and a read of what it wrote, judged under
  // `invariant` (a string literal) once both are known; `subject` and `value` name it in messages.
  struct KeyedRead {
    const char* invariant;
    const char* subject;
    int64_t value;
    Node reader;
  };
  void writeKey(const std::string& key, Node writer);
  void readKey(const std::string& key, const KeyedRead& read);
  // The invariants this graph's options judge.
  std::vector<const char*> judged() const;

  Options options_;
  sim::Tallies* tallies_;
  HappensBefore graph_;
  uint64_t next_index_ = 0;
  int64_t eventTime_ = 0;  // the "t" of the event being observed (0: none)
  std::map<std::string, Object, std::less<>> objects_;
  Object* lastObject_ = nullptr;  // the one object() returned last
  std::unordered_map<uint64_t, Call> calls_;
  std::unordered_map<std::string, Node> clients_;  // client chain -> its last node
  std::unordered_map<std::string, Node> keySource_;                     // keyed write -> its source (its commit, once committed)
  std::unordered_map<std::string, std::vector<KeyedRead>> keyWaiting_;  // reads before any write of their key
  std::map<std::string_view, uint64_t> passes_;     // judgements that held, per invariant (counted at finish)
  std::map<std::string_view, uint64_t> witnessed_;  // violations given a witness path, per invariant
};

// The happens-before graph of trace events [first, last] (indexes into `events`, the parsed event
// lines of a trace, in order) as Graphviz DOT, written with boost::write_graphviz: one node per
// event (label: index, simulated time, event name, object/client), edges labelled by kind; the
// events in `marked` highlighted (the violation's witnesses). Edges from outside the region are dropped.
void write_happens_before_dot(std::ostream& out, const std::vector<nlohmann::json>& events, std::size_t first, std::size_t last,
                              const std::set<std::size_t>& marked);

}  // namespace durasim::properties
