// The happens-before graph: nodes and edges kept as flat lists while the trace is recorded (O(1)
// amortised each), turned into a Boost.Graph compressed sparse row graph only to search it (the
// acyclicity check, drawing); witness paths by breadth-first search over the stretch they span.
#include "properties/happens_before.h"

#include <algorithm>
#include <deque>
#include <ostream>

#include <boost/graph/compressed_sparse_row_graph.hpp>
#include <boost/graph/depth_first_search.hpp>
#include <boost/graph/graphviz.hpp>

namespace durasim::properties {
namespace {

struct EdgeProp {
  HbEdge kind = HbEdge::program;
};
using Csr = boost::compressed_sparse_row_graph<boost::directedS, boost::no_property, EdgeProp, boost::no_property, uint32_t, uint32_t>;

// DOT label text: quotes and backslashes escaped.
std::string escaped(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '"' || c == '\\') out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

}  // namespace

const char* hb_edge_name(HbEdge kind) {
  switch (kind) {
    case HbEdge::program: return "program";
    case HbEdge::restart: return "restart";
    case HbEdge::message: return "message";
    case HbEdge::commit: return "commit";
    case HbEdge::reveal: return "reveal";
    case HbEdge::reads_from: return "reads-from";
    case HbEdge::real_time: return "real time";
  }
  return "?";
}

std::string describe(const std::vector<HbStep>& path) {
  std::string out;
  for (const HbStep& step : path) {
    out += step.label;
    if (step.next) {
      out += " -[";
      out += hb_edge_name(*step.next);
      out += "]-> ";
    }
  }
  if (!path.empty() && path.back().next) out += "(back to " + path.front().label + ")";
  return out;
}

HappensBefore::HappensBefore() = default;
HappensBefore::~HappensBefore() = default;

uint32_t HappensBefore::lookup(std::string_view s) {
  const auto found = nameIds_.find(s);
  if (found != nameIds_.end()) return found->second;
  const auto id = static_cast<uint32_t>(names_.size());
  names_.emplace_back(s);
  nameIds_.emplace(names_.back(), id);
  return id;
}

HappensBefore::Node HappensBefore::add(uint64_t index, int64_t t, std::string_view ev, std::string_view who) {
  // Events of one object or client come in runs: the last one's name is compared before hashing.
  if (lastWho_ == kNoName || names_[lastWho_] != who) lastWho_ = intern(who);
  nodes_.push_back(NodeInfo{index, t, intern(ev), lastWho_});
  return static_cast<Node>(nodes_.size() - 1);
}

void HappensBefore::edge(Node from, Node to, HbEdge kind) {
  if (from == kNone || to == kNone || from == to) return;
  // The event's own program-order edge was added just before: a more specific reason replaces it.
  if (!edges_.empty() && edges_.back().from == from && edges_.back().to == to) {
    if (edges_.back().kind == HbEdge::program) edges_.back().kind = kind;
    return;
  }
  edges_.push_back(EdgeInfo{from, to, kind});
}

std::string HappensBefore::label(Node n) const {
  const NodeInfo& info = nodes_[n];
  std::string out = "#" + std::to_string(info.index) + " t=" + std::to_string(info.t) + " ";
  out += names_[info.ev];
  if (!names_[info.who].empty()) {
    out += " ";
    out += names_[info.who];
  }
  return out;
}

std::vector<HbStep> HappensBefore::witness(Node from, Node to) const {
  const Node lo = std::min(from, to), hi = std::max(from, to);
  const std::size_t span = hi - lo + 1;
  // The edges within [lo, hi], as adjacency lists by a counting sort (O(E + span)).
  std::vector<uint32_t> start(span + 1, 0);
  edges_.each([&](const EdgeInfo& e) {
    if (e.from >= lo && e.from <= hi && e.to >= lo && e.to <= hi) ++start[e.from - lo + 1];
  });
  for (std::size_t i = 1; i <= span; ++i) start[i] += start[i - 1];
  std::vector<uint32_t> fill(start.begin(), start.end() - 1);
  std::vector<const EdgeInfo*> out(start[span]);
  edges_.each([&](const EdgeInfo& e) {
    if (e.from >= lo && e.from <= hi && e.to >= lo && e.to <= hi) out[fill[e.from - lo]++] = &e;
  });
  std::vector<const EdgeInfo*> via(span, nullptr);
  std::vector<bool> seen(span, false);
  std::deque<Node> queue{from};
  seen[from - lo] = true;
  while (!queue.empty() && !seen[to - lo]) {
    const Node n = queue.front();
    queue.pop_front();
    for (uint32_t i = start[n - lo]; i < start[n - lo + 1]; ++i) {
      const Node next = out[i]->to;
      if (seen[next - lo]) continue;
      seen[next - lo] = true;
      via[next - lo] = out[i];
      queue.push_back(next);
    }
  }
  std::vector<HbStep> path;
  if (!seen[to - lo]) {
    path.push_back(HbStep{nodes_[from].index, label(from), HbEdge::real_time});
    path.push_back(HbStep{nodes_[to].index, label(to), std::nullopt});
    return path;
  }
  path.push_back(HbStep{nodes_[to].index, label(to), std::nullopt});
  for (Node n = to; n != from;) {
    const EdgeInfo* e = via[n - lo];
    n = e->from;
    path.push_back(HbStep{nodes_[n].index, label(n), e->kind});
  }
  std::reverse(path.begin(), path.end());
  return path;
}

namespace {

Csr build_csr(std::size_t nodes, const std::vector<std::pair<uint32_t, uint32_t>>& pairs, const std::vector<EdgeProp>& props) {
  return Csr(boost::edges_are_unsorted_multi_pass, pairs.begin(), pairs.end(), props.begin(), static_cast<uint32_t>(nodes));
}

// Stops the search at the first back edge, remembering it and the tree edges that led there.
struct CycleFinder : boost::default_dfs_visitor {
  struct Found {};
  std::vector<uint32_t>* parent;
  std::vector<HbEdge>* parentKind;
  std::optional<std::pair<uint32_t, uint32_t>>* back;
  HbEdge* backKind;
  void tree_edge(Csr::edge_descriptor e, const Csr& g) const {
    (*parent)[boost::target(e, g)] = boost::source(e, g);
    (*parentKind)[boost::target(e, g)] = g[e].kind;
  }
  void back_edge(Csr::edge_descriptor e, const Csr& g) const {
    *back = std::make_pair(static_cast<uint32_t>(boost::source(e, g)), static_cast<uint32_t>(boost::target(e, g)));
    *backKind = g[e].kind;
    throw Found{};
  }
};

}  // namespace

std::optional<std::vector<HbStep>> HappensBefore::find_cycle() const {
  // Only a backward edge can close a cycle: a graph without one is acyclic, and the search is skipped.
  bool backward = false;
  edges_.each([&](const EdgeInfo& e) { backward = backward || e.from > e.to; });
  if (!backward) return std::nullopt;
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  std::vector<EdgeProp> props;
  pairs.reserve(edges_.size());
  props.reserve(edges_.size());
  edges_.each([&](const EdgeInfo& e) {
    pairs.emplace_back(e.from, e.to);
    props.push_back(EdgeProp{e.kind});
  });
  const Csr g = build_csr(nodes_.size(), pairs, props);
  std::vector<uint32_t> parent(nodes_.size(), kNone);
  std::vector<HbEdge> parentKind(nodes_.size(), HbEdge::program);
  std::optional<std::pair<uint32_t, uint32_t>> back;
  HbEdge backKind = HbEdge::program;
  CycleFinder finder;
  finder.parent = &parent;
  finder.parentKind = &parentKind;
  finder.back = &back;
  finder.backKind = &backKind;
  try {
    boost::depth_first_search(g, boost::visitor(finder));
  } catch (const CycleFinder::Found&) {
  }
  if (!back) return std::nullopt;
  // The tree path back->second ... back->first, then the back edge closes it.
  const auto [u, v] = *back;
  std::vector<HbStep> path;
  path.push_back(HbStep{nodes_[u].index, label(u), backKind});
  for (uint32_t n = u; n != v;) {
    const HbEdge kind = parentKind[n];
    n = parent[n];
    path.push_back(HbStep{nodes_[n].index, label(n), kind});
  }
  std::reverse(path.begin(), path.end());
  return path;
}

void HappensBefore::write_dot(std::ostream& out, const std::set<std::size_t>& marked) const {
  std::vector<std::pair<uint32_t, uint32_t>> pairs;
  std::vector<EdgeProp> props;
  edges_.each([&](const EdgeInfo& e) {
    pairs.emplace_back(e.from, e.to);
    props.push_back(EdgeProp{e.kind});
  });
  const Csr g = build_csr(nodes_.size(), pairs, props);
  const auto vertex = [&](std::ostream& o, uint32_t v) {
    o << "[label=\"" << escaped(label(v)) << "\"";
    if (marked.count(static_cast<std::size_t>(nodes_[v].index))) o << ", style=filled, fillcolor=\"#ffb3b3\", penwidth=2";
    o << "]";
  };
  const auto edge = [&](std::ostream& o, Csr::edge_descriptor e) {
    const HbEdge kind = g[e].kind;
    o << "[label=\"" << hb_edge_name(kind) << "\"";
    if (kind == HbEdge::reads_from) o << ", color=blue, fontcolor=blue";
    if (kind == HbEdge::reads_from && boost::source(e, g) > boost::target(e, g)) o << ", color=red, fontcolor=red, penwidth=2";
    o << "]";
  };
  const auto graph = [](std::ostream& o) { o << "rankdir=TB;\nnode [shape=box, fontname=\"monospace\", fontsize=10];\nedge [fontsize=9];\n"; };
  boost::write_graphviz(out, g, vertex, edge, graph);
}

}  // namespace durasim::properties
