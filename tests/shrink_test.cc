// The shrinker (cli/shrink.h): a forgiving run of a complete choice log is the recorded run; a
// failing outbox trace (the naive sink, sink.last_writer_wins) shrinks to fewer choices and events
// and the ordinary replay reproduces its violation; the same input and --max-runs give the same
// result; a forgiving run notes where each client operation starts, and the shrinker deletes
// operations whole, down to a handful; a passing trace has nothing to shrink; the default output name.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "cli/seed_run.h"
#include "cli/shrink.h"
#include "tests/test_files.h"
#include "traces/trace_file.h"

namespace durasim::cli {
namespace {

constexpr uint64_t kMaxRuns = 25;  // candidate runs per shrink: a fraction of a second each

workloads::RunConfig naive_sink_config() {
  workloads::RunConfig config;
  config.workload = "outbox";
  config.variants.insert("sink.last_writer_wins");
  return config;
}

// The first of seeds 0..19 whose outbox run with the naive sink fails, with its trace.
struct Failing {
  uint64_t seed = 0;
  traces::TraceFile trace;
  std::vector<std::string> violated;
};

const Failing& failing_trace() {
  static const Failing failing = [] {
    Failing found;
    for (uint64_t seed = 0; seed < 20; ++seed) {
      traces::TraceFile trace;
      const SeedOutcome outcome = run_seed(naive_sink_config(), seed, &trace);
      if (outcome.passed()) continue;
      found.seed = seed;
      found.trace = std::move(trace);
      found.violated = failing_invariants(outcome);
      return found;
    }
    return found;
  }();
  return failing;
}

bool shares_one(const std::vector<std::string>& a, const std::vector<std::string>& b) {
  for (const std::string& id : a)
    for (const std::string& other : b)
      if (id == other) return true;
  return false;
}

TEST(Shrink, ForgivingRunOfACompleteLogIsTheRecordedRun) {
  const Failing& failing = failing_trace();
  ASSERT_FALSE(failing.violated.empty()) << "no seed in 0..19 fails with the naive sink";
  const ForgivingRun run =
      run_forgiving(naive_sink_config(), failing.seed, failing.trace.choices, [] { return true; });
  EXPECT_EQ(run.outcome.hash, failing.trace.hash);
  EXPECT_EQ(run.outcome.trace_events, failing.trace.events.size());
  EXPECT_EQ(run.drawn, failing.trace.choices);
  EXPECT_EQ(run.simplest.size(), run.drawn.choices.size());
  EXPECT_EQ(failing_invariants(run.outcome), failing.violated);
}

TEST(Shrink, FailingTraceShrinksAndReplaysToTheSameViolation) {
  const Failing& failing = failing_trace();
  ASSERT_FALSE(failing.violated.empty());
  ShrinkLimits limits;
  limits.max_runs = kMaxRuns;
  limits.budget_seconds = 600;  // --max-runs decides where it stops
  const ShrinkResult result = shrink_trace(failing.trace, limits);
  EXPECT_EQ(result.stopped, "--max-runs");
  EXPECT_EQ(result.runs, kMaxRuns);
  EXPECT_GT(result.accepted, 0u);
  EXPECT_EQ(result.before.choices, failing.trace.choices.choices.size());
  EXPECT_EQ(result.before.events, failing.trace.events.size());
  EXPECT_LT(result.after.choices, result.before.choices);
  EXPECT_LT(result.after.events, result.before.events);
  EXPECT_EQ(result.after.choices, result.trace.choices.choices.size());

  // Through a file, as `durasim replay` reads it.
  testing::ScratchDir dir("durasim_shrink_test");
  const std::string path = dir.file("shrunk.trace");
  traces::write_trace(path, result.trace);
  const ReplayOutcome replayed = replay(traces::load_trace(path));
  EXPECT_TRUE(replayed.matched) << (replayed.divergence ? replayed.divergence->describe() : replayed.choice_divergence.value_or(""));
  EXPECT_EQ(replayed.hash, result.trace.hash);
  EXPECT_FALSE(replayed.run.passed());
  EXPECT_TRUE(shares_one(failing_invariants(replayed.run), failing.violated))
      << "kept failing: " << replayed.run.failure() << "; the original violated " << failing.violated.front();

  // The same input and run bound give the same trace: wall time only decides where a budget stops.
  const ShrinkResult again = shrink_trace(failing.trace, limits);
  EXPECT_EQ(again.trace.hash, result.trace.hash);
  EXPECT_EQ(again.trace.config, result.trace.config);
  EXPECT_EQ(again.accepted, result.accepted);
}

TEST(Shrink, ForgivingRunNotesWhereEachOperationStarts) {
  const Failing& failing = failing_trace();
  ASSERT_FALSE(failing.violated.empty());
  const ForgivingRun run = run_forgiving(naive_sink_config(), failing.seed, failing.trace.choices, [] { return true; });
  ASSERT_FALSE(run.units.empty());
  for (const std::size_t unit : run.units) {
    ASSERT_LT(unit, run.drawn.choices.size());
    const sim::Choice& opening = run.drawn.choices[unit];
    EXPECT_EQ(opening.bound, 2u);
    const std::string& stream = run.drawn.streams[opening.stream];
    EXPECT_TRUE(stream.rfind("workload.outbox.client.", 0) == 0 || stream == "workload.outbox.retirer") << stream;
  }
}

// Deleting whole operations, not only spans of choices, brings the naive sink's failure down to a
// handful of client operations within a fixed number of candidate runs.
// Deleting operations whole takes a naive-sink run of about 80 operations down to a handful. How far
// 600 candidate runs get depends on the seed: a regression that needs a key's sixteenth version keeps
// sixteen stages (seed 2 stops at 27 operations), one between versions 1 and 2 needs two or three
// (seeds 7 and 10). Seed 7 stands for the second kind.
TEST(Shrink, OperationsAreDeletedWhole) {
  Failing failing;
  failing.seed = 7;
  const SeedOutcome outcome = run_seed(naive_sink_config(), failing.seed, &failing.trace);
  failing.violated = failing_invariants(outcome);
  ASSERT_FALSE(failing.violated.empty()) << "naive sink seed 7 no longer fails: pick another seed whose regression is between versions 1 and 2";
  ShrinkLimits limits;
  limits.max_runs = 600;
  limits.budget_seconds = 600;
  const ShrinkResult result = shrink_trace(failing.trace, limits);
  ASSERT_TRUE(result.before.operations && result.after.operations);
  EXPECT_GE(*result.before.operations, 50u);
  EXPECT_LE(*result.after.operations, 10u) << "from " << *result.before.operations;
  const ReplayOutcome replayed = replay(result.trace);
  EXPECT_TRUE(replayed.matched);
  EXPECT_TRUE(shares_one(failing_invariants(replayed.run), failing.violated)) << replayed.run.failure();
}

TEST(Shrink, PassingTraceHasNothingToShrink) {
  traces::TraceFile trace;
  workloads::RunConfig config;
  config.workload = "core";
  ASSERT_TRUE(run_seed(config, 1, &trace).passed());
  try {
    shrink_trace(trace, ShrinkLimits{});
    FAIL() << "a passing trace was shrunk";
  } catch (const ShrinkError& e) {
    EXPECT_NE(std::string(e.what()).find("nothing to shrink"), std::string::npos) << e.what();
  }
}

TEST(Shrink, TraceThatDoesNotReproduceIsRefused) {
  traces::TraceFile trace = failing_trace().trace;
  ASSERT_FALSE(trace.events.empty());
  trace.hash ^= 1;  // as if recorded by another build
  EXPECT_THROW(shrink_trace(trace, ShrinkLimits{}), ShrinkError);
}

TEST(Shrink, DefaultOutputPutsShrunkBeforeTheExtension) {
  EXPECT_EQ(default_shrink_output("x3.jsonl"), "x3.shrunk.jsonl");
  EXPECT_EQ(default_shrink_output("dir/seed-7.trace"), "dir/seed-7.shrunk.trace");
  EXPECT_EQ(default_shrink_output("trace"), "trace.shrunk");
  EXPECT_EQ(default_shrink_output("a.b/trace"), "a.b/trace.shrunk");
  EXPECT_EQ(default_shrink_output(".hidden"), ".hidden.shrunk");
}

}  // namespace
}  // namespace durasim::cli
