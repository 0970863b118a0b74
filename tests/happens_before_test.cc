// The happens-before checker (properties/happens_before.h): hand-built histories with a read-from
// cycle and with a page whose offsets come out of append order are reported with their witness
// paths (LOG-09, LOG-07, OBX-14, FAN-06); real runs of the log, outbox and fanout workloads pass with
// the checks counted; mutated log and fanout streams (a read of an offset appended after it, a
// consumer receiving an attempt before its claim) are caught with witness paths; the DOT drawing
// of a recorded trace parses (rendered with `dot -Tsvg` when Graphviz is installed).
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/seed_run.h"
#include "properties/happens_before.h"
#include "tests/mutated_stream.h"
#include "traces/trace_file.h"

namespace durasim::properties {
namespace {

using nlohmann::json;

// A log history fed straight to a HistoryGraph: events get trace indexes 0, 1, 2, ...
struct Hand {
  sim::Tallies tallies;
  HistoryGraph history{HistoryGraph::Options{.follows = {}, .logOffsets = true, .outboxVersions = true}, &tallies};
  int64_t t = 1000;
  uint64_t commits = 0;

  void emit(json e) {
    e["t"] = t++;
    history.observe(e);
  }
  void object(json e) {
    e["object"] = "LogPartition/p0";
    e["incarnation"] = 1;
    emit(std::move(e));
  }
  // One append transaction of `offsets` (all new), committed and confirmed.
  void append(const std::vector<int64_t>& offsets) {
    object({{"ev", "log.append.write"}, {"offsets", offsets}, {"first", offsets.front()}, {"next", offsets.back() + 1}});
    object({{"ev", "commit"}, {"commit", ++commits}});
    object({{"ev", "confirm"}, {"commit", commits}});
  }
  void read(const std::vector<int64_t>& offsets) { object({{"ev", "log.read"}, {"offsets", offsets}}); }
  uint64_t violations(const std::string& id) const {
    const auto found = tallies.by_id().find(id);
    return found == tallies.by_id().end() ? 0 : found->second.violated;
  }
  uint64_t checked(const std::string& id) const {
    const auto found = tallies.by_id().find(id);
    return found == tallies.by_id().end() ? 0 : found->second.checked;
  }
  std::string example(const std::string& id) const {
    const auto found = tallies.by_id().find(id);
    return found == tallies.by_id().end() || found->second.examples.empty() ? "" : found->second.examples.front();
  }
};

TEST(HappensBefore, GraphCycleHasItsWitnessPath) {
  HappensBefore g;
  const auto a = g.add(10, 1, "log.read", "P/a"), b = g.add(11, 2, "log.append.write", "P/a"), c = g.add(12, 3, "commit", "P/a");
  g.edge(a, b, HbEdge::program);
  g.edge(b, c, HbEdge::program);
  EXPECT_FALSE(g.find_cycle());
  g.edge(c, a, HbEdge::reads_from);
  const auto cycle = g.find_cycle();
  ASSERT_TRUE(cycle);
  ASSERT_EQ(cycle->size(), 3u);
  EXPECT_EQ((*cycle)[0].index, 10u);
  EXPECT_EQ((*cycle)[1].index, 11u);
  EXPECT_EQ((*cycle)[2].index, 12u);
  EXPECT_EQ((*cycle)[2].next, HbEdge::reads_from);
  EXPECT_EQ((*cycle)[0].label, "#10 t=1 log.read P/a");
  // The witness of a pair with no path between them is the two events in real time.
  const auto d = g.add(13, 4, "log.read", "P/b");
  const auto apart = g.witness(a, d);
  ASSERT_EQ(apart.size(), 2u);
  EXPECT_EQ(apart[0].next, HbEdge::real_time);
}

TEST(HappensBefore, CorrectLogHistoryPasses) {
  Hand h;
  h.object({{"ev", "incarnation.start"}});
  h.append({0, 1});
  h.read({0, 1});
  h.append({2});
  h.read({1, 2});
  h.emit({{"ev", "app.consume"}, {"partition", "LogPartition/p0"}, {"group", "g0"}, {"from", 0}, {"offsets", {0, 1, 2}}});
  h.history.finish();
  EXPECT_EQ(h.tallies.violations(), 0u) << h.example("LOG-09") << h.example("LOG-07");
  EXPECT_EQ(h.checked("LOG-09"), 8u);  // 7 offsets read, and the graph's acyclicity
  EXPECT_EQ(h.checked("LOG-07"), 4u);  // consecutive pairs of the pages
}

TEST(HappensBefore, ReadOfALaterAppendIsACycle) {
  Hand h;
  h.object({{"ev", "incarnation.start"}});  // #0
  h.append({0});                            // #1 write, #2 commit, #3 confirm
  h.read({0, 1});                           // #4: offset 1 is not appended yet
  h.append({1});                            // #5 write, #6 commit, #7 confirm
  h.history.finish();
  EXPECT_EQ(h.violations("LOG-09"), 2u);  // the read-from judgement and the graph's acyclicity
  const std::string message = h.example("LOG-09");
  EXPECT_NE(message.find("#4 t=1004 log.read LogPartition/p0 read offset 1, written only later by #5"), std::string::npos) << message;
  EXPECT_NE(message.find("read-from closes the cycle #4 t=1004 log.read LogPartition/p0 -[program]-> #5 t=1005 log.append.write "
                         "LogPartition/p0 -[reads-from]-> (back to #4"),
            std::string::npos)
      << message;
  const auto cycle = h.history.graph().find_cycle();
  ASSERT_TRUE(cycle);
  EXPECT_EQ(cycle->front().index, 4u);
  EXPECT_EQ(cycle->back().index, 5u);
}

TEST(HappensBefore, OffsetsReadOutOfAppendOrder) {
  Hand h;
  h.object({{"ev", "incarnation.start"}});  // #0
  h.append({0});                            // #1..#3
  h.append({1});                            // #4..#6
  h.read({1, 0});                           // #7: offset 0 after offset 1
  h.history.finish();
  EXPECT_EQ(h.violations("LOG-07"), 1u);
  EXPECT_EQ(h.violations("LOG-09"), 0u);
  const std::string message = h.example("LOG-07");
  EXPECT_NE(message.find("#7 t=1007 log.read LogPartition/p0 returned offset 0 after an offset appended later"), std::string::npos) << message;
  // The witness: offset 0's commit happens before offset 1's, along the object's program order.
  EXPECT_NE(message.find("witness: #2 t=1002 commit LogPartition/p0 -[commit]-> #3 t=1003 confirm LogPartition/p0 -[program]-> #4 t=1004 "
                         "log.append.write LogPartition/p0 -[program]-> #5 t=1005 commit LogPartition/p0"),
            std::string::npos)
      << message;
}

TEST(HappensBefore, ReadOfAnOffsetNeverAppended) {
  Hand h;
  h.object({{"ev", "incarnation.start"}});
  h.read({3});
  h.history.finish();
  EXPECT_EQ(h.violations("LOG-09"), 1u);
  EXPECT_NE(h.example("LOG-09").find("read offset 3, which nothing wrote before the run ended"), std::string::npos) << h.example("LOG-09");
}

TEST(HappensBefore, MessagesAndTheOutputGateOrderAReply) {
  Hand h;
  h.object({{"ev", "incarnation.start"}});                                                                      // #0
  h.emit({{"ev", "rpc.call"}, {"call", 7}, {"from", "client"}, {"to", "LogPartition/p0"}, {"stub", 6}});          // #1
  h.emit({{"ev", "rpc.deliver"}, {"call", 7}, {"to", "LogPartition/p0"}, {"incarnation", 1}, {"stub", 6}});       // #2
  h.append({0});                                                                                                // #3..#5
  h.object({{"ev", "effect"}, {"kind", "reply"}, {"required", 1}, {"produced", 1}, {"confirmed", 1}});            // #6
  h.emit({{"ev", "rpc.reply"}, {"call", 7}, {"ok", true}});                                                     // #7
  EXPECT_EQ(describe(h.history.graph().witness(1, 7)),
            "#1 t=1001 rpc.call client -[message]-> #2 t=1002 rpc.deliver LogPartition/p0 -[message]-> #7 t=1007 rpc.reply client");
  // The reply also waited for the commit before it: commit -> confirm -> the gate's release -> the reply.
  EXPECT_EQ(describe(h.history.graph().witness(3, 7)),
            "#3 t=1003 log.append.write LogPartition/p0 -[program]-> #4 t=1004 commit LogPartition/p0 -[commit]-> #5 t=1005 confirm "
            "LogPartition/p0 -[reveal]-> #6 t=1006 effect LogPartition/p0 -[reveal]-> #7 t=1007 rpc.reply client");
}

TEST(HappensBefore, OutboxSinkWriteBeforeItsStage) {
  sim::Tallies tallies;
  HistoryGraph history{HistoryGraph::Options{.follows = {}, .outboxVersions = true}, &tallies};
  const auto account = [](json e) {
    e["object"] = "Account/a";
    e["incarnation"] = 1;
    return e;
  };
  const auto sink = [](json e) {
    e["object"] = "OutboxSink/s";
    e["incarnation"] = 1;
    return e;
  };
  history.observe(account({{"ev", "obx.stage.write"}, {"channel", "c"}, {"key", "k"}, {"version", 1}, {"t", 1}}));
  history.observe(account({{"ev", "commit"}, {"commit", 1}, {"t", 1}}));
  history.observe(sink({{"ev", "app.obx.sink.write"}, {"source", "Account/a"}, {"channel", "c"}, {"key", "k"}, {"version", 1}, {"t", 2}}));
  history.observe(sink({{"ev", "app.obx.sink.write"}, {"source", "Account/a"}, {"channel", "c"}, {"key", "k"}, {"version", 2}, {"t", 3}}));
  history.observe(account({{"ev", "obx.stage.write"}, {"channel", "c"}, {"key", "k"}, {"version", 2}, {"t", 4}}));
  history.finish();
  const sim::InvariantTally& obx14 = tallies.by_id().at("OBX-14");
  EXPECT_EQ(obx14.checked, 3u);  // two sink writes and the acyclicity
  EXPECT_EQ(obx14.violated, 1u);
  ASSERT_FALSE(obx14.examples.empty());
  EXPECT_NE(obx14.examples[0].find("#3 t=3 app.obx.sink.write OutboxSink/s read version 2, written only later by #4 t=4 obx.stage.write Account/a"),
            std::string::npos)
      << obx14.examples[0];
}

TEST(HappensBefore, FanoutConsumerReceivesAnAttemptBeforeItsClaim) {
  sim::Tallies tallies;
  HistoryGraph history{HistoryGraph::Options{.follows = {}, .fanoutClaims = true}, &tallies};
  const auto in = [](const char* object, json e) {
    e["object"] = object;
    e["incarnation"] = 1;
    return e;
  };
  const json claimed = json::array({{{"row", "[\"m1\",\"consumer\"]"}, {"generation", "g1"}, {"attempt", 1}}});
  const auto consume = [](int64_t attempt, int64_t t) {
    return json{{"ev", "app.fan.consume"}, {"mailbox", "Mailbox/m"}, {"target", "consumer"}, {"delivery", "[\"g1\",\"consumer\"]"},
                {"id", "m1"},           {"attempt", attempt},     {"t", t}};
  };
  history.observe(in("Mailbox/m", {{"ev", "fan.claim.write"}, {"target", "consumer"}, {"claimed", claimed}, {"t", 1}}));  // #0
  history.observe(in("Mailbox/m", {{"ev", "commit"}, {"commit", 1}, {"t", 1}}));                                       // #1
  history.observe(in("FanoutConsumer/c", consume(1, 2)));                                                               // #2: claimed
  history.observe(in("FanoutConsumer/c", consume(2, 3)));                                                               // #3: not yet
  json reclaimed = claimed;
  reclaimed[0]["attempt"] = 2;
  history.observe(in("Mailbox/m", {{"ev", "fan.claim.write"}, {"target", "consumer"}, {"claimed", reclaimed}, {"t", 4}}));  // #4
  history.finish();
  const sim::InvariantTally& fan06 = tallies.by_id().at("FAN-06");
  EXPECT_EQ(fan06.checked, 3u);  // two receipts and the acyclicity
  EXPECT_EQ(fan06.violated, 1u);
  ASSERT_FALSE(fan06.examples.empty());
  EXPECT_NE(fan06.examples[0].find("#3 t=3 app.fan.consume FanoutConsumer/c read the claim of attempt 2, written only later by #4 t=4 "
                                   "fan.claim.write Mailbox/m"),
            std::string::npos)
      << fan06.examples[0];
}

// Real runs: the checks are made, and nothing is violated.
uint64_t checkedIn(const sim::Tallies& tallies, const std::string& id) {
  const auto found = tallies.by_id().find(id);
  return found == tallies.by_id().end() ? 0 : found->second.checked;
}
uint64_t violatedIn(const sim::Tallies& tallies, const std::string& id) {
  const auto found = tallies.by_id().find(id);
  return found == tallies.by_id().end() ? 0 : found->second.violated;
}

TEST(HappensBeforeRuns, LogWorkloadSeedsPass) {
  workloads::RunConfig config;
  config.workload = "log";
  for (uint64_t seed = 0; seed <= 4; ++seed) {
    const cli::SeedOutcome outcome = cli::run_seed(config, seed);
    EXPECT_TRUE(outcome.passed()) << "seed " << seed << ": " << outcome.failure();
    EXPECT_GT(checkedIn(outcome.tallies, "LOG-09"), 100u) << "seed " << seed;
    EXPECT_GT(checkedIn(outcome.tallies, "LOG-07"), 10u) << "seed " << seed;
    EXPECT_EQ(violatedIn(outcome.tallies, "LOG-09") + violatedIn(outcome.tallies, "LOG-07"), 0u) << "seed " << seed;
  }
}

// Seeds 0..2 of `workload` pass, each with more than `atLeast` checks of `invariant`.
void expectSeedsPassChecking(const char* workload, const char* invariant, uint64_t atLeast) {
  workloads::RunConfig config;
  config.workload = workload;
  for (uint64_t seed = 0; seed <= 2; ++seed) {
    const cli::SeedOutcome outcome = cli::run_seed(config, seed);
    EXPECT_TRUE(outcome.passed()) << workload << " seed " << seed << ": " << outcome.failure();
    EXPECT_GT(checkedIn(outcome.tallies, invariant), atLeast) << workload << " seed " << seed;
  }
}

TEST(HappensBeforeRuns, OutboxWorkloadSeedsPass) { expectSeedsPassChecking("outbox", "OBX-14", 0); }

TEST(HappensBeforeRuns, FanoutWorkloadSeedsPass) { expectSeedsPassChecking("fanout", "FAN-06", 10); }

TEST(HappensBeforeRuns, MutatedConsumerReceiptBeforeItsClaimIsCaught) {
  // The fifth receipt claims the attempt after the one it got: its claim comes later, if at all.
  mutated::Mutation mutation{"app.fan.consume", 4, [](json& e) { e["attempt"] = e.at("attempt").get<int64_t>() + 1; }};
  const mutated::Checked checked = mutated::runMutated("fanout", {{"FAN", "Mailbox"}}, 3, mutation);
  ASSERT_TRUE(checked.applied);
  EXPECT_GT(checked.violations("FAN-06"), 0u) << checked.examples();
  EXPECT_NE(checked.examples().find("read the claim of attempt"), std::string::npos) << checked.examples();
}

TEST(HappensBeforeRuns, MutatedReadOfALaterAppendIsCaught) {
  // The tenth page read also claims the log's next offset, which a later append writes.
  mutated::Mutation mutation{"log.read", 10, [](json& e) { e["offsets"].push_back(e.at("next")); }};
  const mutated::Checked checked = mutated::runMutated("log", {{"LOG", "LogPartition"}}, 3, mutation);
  ASSERT_TRUE(checked.applied);
  EXPECT_GT(checked.violations("LOG-09"), 0u) << checked.examples();
  EXPECT_NE(checked.examples().find("written only later by"), std::string::npos) << checked.examples();
  EXPECT_NE(checked.examples().find("read-from closes the cycle"), std::string::npos) << checked.examples();
}

TEST(HappensBeforeDot, RecordedTraceDrawsAndParses) {
  workloads::RunConfig config;
  config.workload = "log";
  traces::TraceFile trace;
  cli::run_seed(config, 1, &trace);
  std::vector<json> events;
  for (const std::string& line : trace.events) events.push_back(json::parse(line));
  ASSERT_GT(events.size(), 400u);
  std::ostringstream dot;
  write_happens_before_dot(dot, events, 200, 399, {250, 260});
  const std::string text = dot.str();
  EXPECT_EQ(text.rfind("digraph", 0), 0u) << text.substr(0, 200);
  EXPECT_NE(text.find("#250 t="), std::string::npos);
  EXPECT_NE(text.find("fillcolor"), std::string::npos);
  EXPECT_NE(text.find("label=\"message\""), std::string::npos);
  EXPECT_EQ(text.find("#199 "), std::string::npos);  // nothing outside the region
  EXPECT_EQ(text.find("#400 "), std::string::npos);
  if (std::system("command -v dot >/dev/null 2>&1") != 0) GTEST_SKIP() << "Graphviz `dot` is not installed";
  const std::string path = ::testing::TempDir() + "happens_before_test.dot";
  std::ofstream(path) << text;
  const std::string command = "dot -Tsvg '" + path + "' -o '" + path + ".svg'";
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  std::ifstream svg(path + ".svg");
  std::stringstream rendered;
  rendered << svg.rdbuf();
  EXPECT_NE(rendered.str().find("<svg"), std::string::npos);
  std::remove(path.c_str());
  std::remove((path + ".svg").c_str());
}

}  // namespace
}  // namespace durasim::properties
