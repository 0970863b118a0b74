// Figure (h) of `durasim bench`: the happens-before checker (properties/happens_before.h) on a
// synthetic log history of N operations, timed end to end (events fed one by one as the recorder
// would, then the end-of-run check). The history is the log workload's shape: clients call
// partitions over RPC, appends commit and confirm, replies leave through the output gate, reads
// and consumed pages read offsets appended before them, and a partition restarts now and then.
// The checker must be linear: 10x the operations may cost at most 12x the time.
#include "cli/bench.h"

#include <chrono>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "properties/happens_before.h"
#include "properties/object_checker.h"
#include "sim/tally.h"

namespace durasim::cli {
namespace {

using nlohmann::json;

constexpr int kPartitions = 4;
constexpr int kClients = 4;                 // producers, and as many consumer groups
constexpr int64_t kRestartEvery = 1'000;    // operations between two restarts of some partition
constexpr std::size_t kPageSize = 3;        // offsets a read returns (the last ones appended)

// Feeds `operations` operations of a well-behaved history to `sink`; returns the number of events.
template <class Sink>
int64_t synthetic_history(int64_t operations, Sink&& sink) {
  struct Partition {
    std::string label;
    int64_t incarnation = 1, next = 0;
    uint64_t commits = 0;
  };
  std::vector<Partition> partitions(kPartitions);
  for (int p = 0; p < kPartitions; ++p) partitions[static_cast<std::size_t>(p)].label = "LogPartition/p" + std::to_string(p);
  json call = {{"ev", "rpc.call"}, {"from", "client"}, {"method", "append"}, {"stub", 0}, {"call", 0}, {"to", ""}, {"t", 0}};
  json deliver = {{"ev", "rpc.deliver"}, {"stub", 0}, {"call", 0}, {"to", ""}, {"incarnation", 0}, {"t", 0}};
  json reply = {{"ev", "rpc.reply"}, {"ok", true}, {"call", 0}, {"t", 0}};
  json object = {{"ev", ""}, {"object", ""}, {"incarnation", 0}, {"t", 0}};
  json app = {{"ev", ""}, {"partition", ""}, {"t", 0}};
  int64_t events = 0, t = 1'700'000'000'000;
  uint64_t calls = 0;
  const auto emit = [&](json& e) {
    e["t"] = ++t;
    sink(e);
    ++events;
  };
  for (int64_t op = 0; op < operations; ++op) {
    Partition& p = partitions[static_cast<std::size_t>(op % kPartitions)];
    const bool append = (op / kPartitions) % 2 == 0 || p.next == 0;
    const uint64_t id = ++calls;
    call["call"] = deliver["call"] = reply["call"] = id;
    call["method"] = append ? "append" : "read";
    call["to"] = deliver["to"] = object["object"] = app["partition"] = p.label;
    deliver["incarnation"] = object["incarnation"] = p.incarnation;
    emit(call);
    emit(deliver);
    json offsets = json::array();
    if (append) {
      object["ev"] = "log.append.write";
      object["first"] = p.next;
      object["next"] = p.next + 1;
      object["offsets"] = json::array({p.next});
      emit(object);
      offsets.push_back(p.next++);
      object.erase("first");
      object.erase("next");
      object.erase("offsets");
      object["ev"] = "commit";
      object["commit"] = ++p.commits;
      emit(object);
      object["ev"] = "confirm";
      emit(object);
      object.erase("commit");
    } else {
      for (int64_t o = std::max<int64_t>(0, p.next - static_cast<int64_t>(kPageSize)); o < p.next; ++o) offsets.push_back(o);
      object["ev"] = "log.read";
      object["offsets"] = offsets;
      emit(object);
      object.erase("offsets");
    }
    object["ev"] = "effect";
    object["kind"] = "reply";
    object["required"] = p.commits;
    emit(object);
    object.erase("kind");
    object.erase("required");
    emit(reply);
    const std::string client = std::to_string((op / kPartitions) % kClients);
    app["ev"] = append ? "app.produce" : "app.consume";
    app.erase(append ? "group" : "producer");
    app[append ? "producer" : "group"] = append ? "p" + client : "g" + client;
    app["offsets"] = offsets;
    emit(app);
    if (op % kRestartEvery == kRestartEvery - 1) {
      object["ev"] = "incarnation.end";
      emit(object);
      object["incarnation"] = ++p.incarnation;
      object["ev"] = "incarnation.start";
      emit(object);
    }
  }
  return events;
}

}  // namespace

HappensBeforeCost measure_happens_before(int64_t operations) {
  HappensBeforeCost cost;
  cost.operations = operations;
  sim::Tallies tallies;
  const auto start = std::chrono::steady_clock::now();
  {
    properties::HistoryGraph history(
        properties::HistoryGraph::Options{.follows = [](std::string_view label) { return properties::of_class(label, "LogPartition"); }, .logOffsets = true},
        &tallies);
    cost.events = synthetic_history(operations, [&](const json& e) { history.observe(e); });
    history.finish();
    cost.nodes = static_cast<int64_t>(history.graph().nodes());
    cost.edges = static_cast<int64_t>(history.graph().edges());
  }
  cost.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const auto& [id, tally] : tallies.by_id()) {
    cost.checks += tally.checked;
    cost.violations += tally.violated;
  }
  return cost;
}

}  // namespace durasim::cli
