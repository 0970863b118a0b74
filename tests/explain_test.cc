// `durasim explain` (cli/explain.h) and the timeline under it (traces/timeline.h): a failure trace
// of the outbox's naive sink is explained with its violation placed at a witness event; its HTML
// page is self-contained and loads in headless Chromium without a script error (the bootstrap
// installs Chromium, so a missing browser fails the test); the timeline classifies RPC outcomes as
// the caller sees them; a violation is placed at the event being observed when it was found.
#include <gtest/gtest.h>

#include <regex>
#include <string>
#include <vector>

#include "sim/tally.h"
#include "sim/world.h"
#include "tests/test_files.h"
#include "traces/timeline.h"

namespace durasim {
namespace {

using testing::ProcessResult;
using testing::ScratchDir;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

class ExplainTest : public ::testing::Test {
 protected:
  // A failing trace of the naive sink (OBX-14), saved once for the suite.
  static void SetUpTestSuite() {
    scratch_ = new ScratchDir("durasim_explain_test");
    const ProcessResult run = durasim("run --workload outbox --variant sink.last_writer_wins --seeds 0..19 --save-trace '" +
                                      scratch_->file("o{seed}.trace") + "'");
    std::smatch failed;
    if (!std::regex_search(run.out, failed, std::regex("FAILED seed ([0-9]+): OBX-14"))) return;
    std::string name = "o";
    name += failed[1].str();
    name += ".trace";
    trace_ = scratch_->file(name);
  }
  static void TearDownTestSuite() {
    delete scratch_;
    scratch_ = nullptr;
  }
  void SetUp() override { ASSERT_FALSE(trace_.empty()) << "the naive sink regresses (OBX-14) in some seed of 0..19"; }

  static ProcessResult durasim(const std::string& args) { return testing::run_process(std::string("'") + DURASIM_BINARY + "' " + args, scratch_->path()); }

  static ScratchDir* scratch_;
  static std::string trace_;
};
ScratchDir* ExplainTest::scratch_ = nullptr;
std::string ExplainTest::trace_;

TEST_F(ExplainTest, PlacesTheViolationAtItsWitness) {
  const ProcessResult r = durasim("explain '" + trace_ + "' --around 20");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "replay: matches the trace")) << r.out;
  std::smatch placed;
  ASSERT_TRUE(std::regex_search(r.out, placed, std::regex("OBX-14 x[0-9]+ at #([0-9]+)"))) << r.out;
  EXPECT_TRUE(contains(r.out, ">> #" + placed[1].str() + " ")) << "the witness row is marked: " << r.out;
  // 41 rows at most: the witness and 20 either side.
  int rows = 0;
  for (const std::string& line : testing::split_lines(r.out))
    if (std::regex_search(line, std::regex("^(>>| \\*|   ) #[0-9]+ "))) ++rows;
  EXPECT_GT(rows, 0);
  EXPECT_LE(rows, 41) << r.out;
  EXPECT_TRUE(contains(r.out, "OutboxSink/s0")) << r.out;
}

TEST_F(ExplainTest, HtmlPageLoadsInHeadlessChromiumWithoutScriptErrors) {
  const std::string html = scratch_->file("page.html");
  const ProcessResult r = durasim("explain '" + trace_ + "' --around 60 --html '" + html + "'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string page = testing::read_text(html);
  EXPECT_TRUE(contains(page, "class=\"k-op")) << "rows carry their kind";
  EXPECT_TRUE(contains(page, " witness")) << "the witness row is highlighted";
  EXPECT_FALSE(std::regex_search(page, std::regex("(src|href)=\"(https?:)?//"))) << "nothing is fetched: the page is self-contained";
  const ProcessResult browser = testing::run_process(
      "chromium --headless --no-sandbox --disable-gpu --enable-logging=stderr --v=0 --dump-dom 'file://" + html + "'", scratch_->path());
  ASSERT_EQ(browser.code, 0) << "headless Chromium (installed by scripts/bootstrap.sh) did not run: " << browser.err;
  std::smatch ready;
  ASSERT_TRUE(std::regex_search(browser.out, ready, std::regex("<body data-ready=\"([0-9]+)\""))) << "the page's script did not finish";
  EXPECT_GT(std::stoi(ready[1].str()), 0);
  EXPECT_FALSE(contains(browser.err, "Uncaught")) << browser.err;
}

// The region's happens-before graph is DOT that Graphviz renders (the bootstrap installs it).
TEST_F(ExplainTest, DotGraphRendersWithGraphviz) {
  const std::string dot = scratch_->file("region.dot"), svg = scratch_->file("region.svg");
  const ProcessResult r = durasim("explain '" + trace_ + "' --around 25 --dot '" + dot + "'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const std::string graph = testing::read_text(dot);
  EXPECT_TRUE(contains(graph, "digraph")) << graph.substr(0, 200);
  const ProcessResult rendered = testing::run_process("dot -Tsvg '" + dot + "' -o '" + svg + "'", scratch_->path());
  ASSERT_EQ(rendered.code, 0) << rendered.err;
  EXPECT_TRUE(contains(testing::read_text(svg), "<svg")) << "Graphviz drew nothing";
}

TEST_F(ExplainTest, RefusesAMissingOrTruncatedTrace) {
  EXPECT_EQ(durasim("explain '" + scratch_->file("absent.trace") + "'").code, 2);
  const std::string truncated = scratch_->file("truncated.trace");
  const std::string text = testing::read_text(trace_);
  testing::write_text(truncated, text.substr(0, text.size() / 2));
  const ProcessResult r = durasim("explain '" + truncated + "'");
  EXPECT_EQ(r.code, 2) << r.out;
  EXPECT_TRUE(contains(r.err, "durasim explain: ")) << r.err;
}

// ---------------------------------------------------------------------------------------------
// The timeline

std::vector<traces::TimelineRow> timeline(const std::vector<std::string>& lines) { return traces::build_timeline(lines); }

TEST(Timeline, RpcOutcomesAreWhatTheCallerCanConclude) {
  const auto rows = timeline({
      R"({"ev":"rpc.call","call":1,"from":"client","to":"A/a","method":"m","stub":1,"t":5})",
      R"({"ev":"rpc.deliver","call":1,"to":"A/a","incarnation":2,"stub":1,"t":6})",
      R"({"ev":"rpc.fail","call":1,"how":"reply_lost","error":"Network connection lost.","stub":1,"t":7})",
      R"({"ev":"rpc.call","call":2,"from":"client","to":"A/a","method":"m","stub":2,"t":8})",
      R"({"ev":"rpc.fail","call":2,"how":"error","error":"broken.reset; Durable Object was reset","stub":2,"t":9})",
      R"({"ev":"rpc.call","call":3,"from":"client","to":"A/a","method":"m","stub":3,"t":10})",
      R"({"ev":"rpc.fail","call":3,"how":"not_delivered","error":"Durable Object is overloaded. Too many requests queued.","stub":3,"t":11})",
      R"({"ev":"rpc.call","call":4,"from":"B/b","to":"A/a","method":"m","stub":4,"t":12})",
      R"({"ev":"rpc.reply","call":4,"ok":false,"t":13})",
      R"({"ev":"rpc.call","call":5,"from":"client","to":"A/a","method":"m","stub":5,"t":14})",
      R"({"ev":"rpc.reply","call":5,"ok":true,"t":15})",
  });
  ASSERT_EQ(rows.size(), 11u);
  EXPECT_EQ(rows[1].lane, "A/a");
  EXPECT_EQ(rows[1].incarnation, 2);
  EXPECT_EQ(rows[2].lane, "client") << "a reply belongs to its caller's lane";
  EXPECT_EQ(rows[2].outcome, "uncertain");
  EXPECT_EQ(rows[4].outcome, "uncertain") << "a reset during the call: it may have run";
  EXPECT_EQ(rows[6].outcome, "definite error") << "a refusal never ran";
  EXPECT_EQ(rows[8].lane, "B/b");
  EXPECT_EQ(rows[8].outcome, "definite error");
  EXPECT_EQ(rows[10].outcome, "ok");
  for (const auto& row : rows) EXPECT_EQ(row.kind, traces::RowKind::operation);
}

TEST(Timeline, FaultsResetsAlarmsAndCommitsHaveTheirKinds) {
  const auto rows = timeline({
      R"({"ev":"fault","fault":"rpc.stall","point":"reply","object":"A/a","incarnation":0,"details":{"delay":5},"t":1})",
      R"({"ev":"incarnation.end","object":"A/a","incarnation":1,"reset":true,"cause":"storage.critical","t":2})",
      R"({"ev":"alarm.run","object":"A/a","incarnation":2,"retryCount":0,"scheduled":2,"t":3})",
      R"({"ev":"commit","object":"A/a","incarnation":2,"commit":4,"changes":"x","alarm":null,"t":4})",
      R"({"ev":"confirm","object":"A/a","incarnation":2,"commit":4,"t":5})",
      R"({"ev":"phase","phase":"heal","t":6})",
      "not json",
  });
  ASSERT_EQ(rows.size(), 7u);
  EXPECT_EQ(rows[0].kind, traces::RowKind::fault);
  EXPECT_TRUE(contains(rows[0].text, "rpc.stall")) << rows[0].text;
  EXPECT_EQ(rows[1].kind, traces::RowKind::lifecycle);
  EXPECT_TRUE(contains(rows[1].text, "RESET")) << rows[1].text;
  EXPECT_EQ(rows[2].kind, traces::RowKind::alarm);
  EXPECT_EQ(rows[3].kind, traces::RowKind::storage);
  EXPECT_EQ(rows[4].text, "confirm commit 4");
  EXPECT_EQ(rows[5].kind, traces::RowKind::phase);
  EXPECT_EQ(rows[6].kind, traces::RowKind::other);
  EXPECT_EQ(traces::relative_time(1'234, 1'000), "+0.234 s");
  EXPECT_EQ(traces::relative_time(62'500, 0), "+62.500 s");
}

// A violation found while an observer handles an event is placed at that event's index.
TEST(ViolationPlace, IsTheEventBeingObserved) {
  class NullSink final : public sim::TraceSink {
   public:
    void record(const sim::TraceEvent&) override {}
  };
  class FailsOnThird final : public sim::TraceSink {
   public:
    void record(const sim::TraceEvent&) override { tallies.check("X-01", ++seen != 3, [] { return std::string("third"); }); }
    sim::Tallies tallies;
    int seen = 0;
  };
  NullSink sink;
  FailsOnThird observer;
  sim::World world(0, sim::RandomSource::recording(1), sink);
  world.observe(observer);
  for (int i = 0; i < 5; ++i) world.emit("e");
  const sim::InvariantTally& tally = observer.tallies.by_id().at("X-01");
  EXPECT_EQ(tally.violated, 1u);
  EXPECT_EQ(tally.first_violation_event, 2u);
}

}  // namespace
}  // namespace durasim
