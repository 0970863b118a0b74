// Determinism of whole runs (RT-01): 200 seeds of the core workload (25 under sanitizers) hash
// the same twice and all pass; replaying a saved trace (in memory or through a file) reproduces its hash;
// a choice log with one value changed makes the replay diverge, naming the first differing event.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <set>
#include <stdexcept>
#include <string>

#include "cli/seed_run.h"
#include "tests/test_files.h"
#include "traces/trace_file.h"

namespace durasim::cli {
namespace {

namespace fs = std::filesystem;
using durasim::testing::ScratchDir;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The sanitizer build (Debug, ASan, UBSan) runs ~50x slower: it checks memory safety on fewer seeds,
// the release build checks determinism on the full 200.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif
constexpr uint64_t kDeterminismSeeds = kSanitized ? 25 : 200;
constexpr uint64_t kReplaySeeds = kSanitized ? 5 : 20;

// The core workload (the World alone), whatever the default campaign runs.
workloads::RunConfig core_config() {
  workloads::RunConfig config;
  config.workload = "core";
  return config;
}


TEST(Determinism, TwoHundredSeedsHashTheSameTwiceAndPass) {
  const workloads::RunConfig config = core_config();
  ASSERT_EQ(config.safety_ms, workloads::kDefaultSafetyMs);
  std::set<uint64_t> hashes;
  for (uint64_t seed = 0; seed < kDeterminismSeeds; ++seed) {
    const SeedOutcome first = run_seed(config, seed);
    const SeedOutcome second = run_seed(config, seed);
    ASSERT_TRUE(first.passed()) << "seed " << seed << ": " << first.failure();
    ASSERT_EQ(first.hash, second.hash) << "seed " << seed << " is not deterministic";
    ASSERT_EQ(first.trace_events, second.trace_events) << "seed " << seed;
    ASSERT_EQ(first.executor_events, second.executor_events) << "seed " << seed;
    ASSERT_EQ(first.choices, second.choices) << "seed " << seed;
    EXPECT_GT(first.trace_events, 2u);
    EXPECT_GT(first.choices, 0u);
    hashes.insert(first.hash);
  }
  EXPECT_EQ(hashes.size(), kDeterminismSeeds) << "different seeds should give different runs";
}

TEST(Determinism, TraceIsTheSameWithAndWithoutKeepingIt) {
  const workloads::RunConfig config = core_config();
  traces::TraceFile trace;
  const SeedOutcome kept = run_seed(config, 9, &trace);
  const SeedOutcome plain = run_seed(config, 9);
  EXPECT_EQ(kept.hash, plain.hash);
  EXPECT_EQ(trace.hash, plain.hash);
  EXPECT_EQ(trace.events.size(), plain.trace_events);
  EXPECT_EQ(trace.choices.choices.size(), plain.choices);
}

TEST(Determinism, ReplayOfSavedTracesMatches) {
  const workloads::RunConfig config = core_config();
  for (uint64_t seed = 100; seed < 100 + kReplaySeeds; ++seed) {
    traces::TraceFile trace;
    const SeedOutcome run = run_seed(config, seed, &trace);
    const ReplayOutcome replayed = replay(trace);
    EXPECT_TRUE(replayed.matched) << "seed " << seed << ": "
                                  << (replayed.divergence ? replayed.divergence->describe()
                                                          : replayed.choice_divergence.value_or("hash differs"));
    EXPECT_FALSE(replayed.divergence.has_value());
    EXPECT_FALSE(replayed.choice_divergence.has_value());
    EXPECT_EQ(replayed.hash, run.hash) << "seed " << seed;
    EXPECT_EQ(replayed.hash, trace.hash);
    EXPECT_EQ(replayed.events, trace.events.size());
  }
}

TEST(Determinism, ReplayThroughATraceFileMatches) {
  ScratchDir dir("durasim_determinism_test");
  workloads::RunConfig config = core_config();
  config.options["workers"] = 12;
  config.safety_ms = 300'000;
  for (uint64_t seed : {3, 77}) {
    traces::TraceFile trace;
    const SeedOutcome run = run_seed(config, seed, &trace);
    const std::string path = dir.file("seed" + std::to_string(seed) + ".trace");
    traces::write_trace(path, trace);
    const traces::TraceFile loaded = traces::load_trace(path);
    const ReplayOutcome replayed = replay(loaded);
    EXPECT_TRUE(replayed.matched) << "seed " << seed;
    EXPECT_EQ(replayed.hash, run.hash);
  }
}

// The index of the first choice drawn from `stream` with a bound that leaves room for another value.
std::size_t first_choice_in(const sim::ChoiceLog& log, const std::string& stream) {
  for (std::size_t i = 0; i < log.choices.size(); ++i) {
    const sim::Choice& c = log.choices[i];
    if (log.streams.at(c.stream) == stream && c.bound > 1) return i;
  }
  return log.choices.size();
}

void tamper(sim::Choice& choice) {
  choice.value = (choice.value + 1) % choice.bound;
}

TEST(Determinism, TamperedChoiceMakesReplayDivergeAtANamedEvent) {
  const workloads::RunConfig config = core_config();
  for (uint64_t seed = 0; seed < 10; ++seed) {
    for (const std::string stream : {"workload.core", "executor.order"}) {
      traces::TraceFile trace;
      run_seed(config, seed, &trace);
      const std::size_t index = first_choice_in(trace.choices, stream);
      ASSERT_LT(index, trace.choices.choices.size()) << "seed " << seed << " never drew from " << stream;
      tamper(trace.choices.choices[index]);
      ASSERT_LT(trace.choices.choices[index].value, trace.choices.choices[index].bound) << "still within bound";

      const ReplayOutcome replayed = replay(trace);
      EXPECT_FALSE(replayed.matched) << "seed " << seed << ", " << stream << " choice #" << index;
      ASSERT_TRUE(replayed.divergence.has_value()) << "seed " << seed << ", " << stream;
      const traces::Divergence& d = *replayed.divergence;
      // The run's first two events (start, safety phase) precede every choice.
      EXPECT_GE(d.event_index, 2u);
      EXPECT_LT(d.event_index, trace.events.size());
      EXPECT_EQ(d.expected, trace.events[d.event_index]) << "the report must quote the recorded event";
      EXPECT_NE(d.actual, d.expected);
      const std::string text = d.describe();
      EXPECT_TRUE(contains(text, "event #" + std::to_string(d.event_index + 1))) << text;
      EXPECT_LT(replayed.events, trace.events.size()) << "replay stops at the first difference";
    }
  }
}

TEST(Determinism, DivergenceInALoadedTraceNamesItsLine) {
  ScratchDir dir("durasim_determinism_test");
  traces::TraceFile trace;
  run_seed(core_config(), 5, &trace);
  tamper(trace.choices.choices[first_choice_in(trace.choices, "workload.core")]);
  const std::string path = dir.file("tampered.trace");
  traces::write_trace(path, trace);  // the choice log is not covered by the event hash: it loads
  const traces::TraceFile loaded = traces::load_trace(path);

  const ReplayOutcome replayed = replay(loaded);
  ASSERT_TRUE(replayed.divergence.has_value());
  const traces::Divergence& d = *replayed.divergence;
  EXPECT_EQ(d.line, loaded.event_line_numbers.at(d.event_index));
  EXPECT_TRUE(contains(d.describe(), "(line " + std::to_string(d.line) + ")")) << d.describe();
}

TEST(Determinism, TruncatedChoiceLogDiverges) {
  traces::TraceFile trace;
  run_seed(core_config(), 6, &trace);
  trace.choices.choices.resize(trace.choices.choices.size() / 2);
  const ReplayOutcome replayed = replay(trace);
  EXPECT_FALSE(replayed.matched);
  ASSERT_TRUE(replayed.choice_divergence.has_value());
  EXPECT_TRUE(contains(*replayed.choice_divergence, "more choices than were recorded")) << *replayed.choice_divergence;
  EXPECT_TRUE(replayed.divergence.has_value()) << "a replay that stops early diverges at the next recorded event";
}

}  // namespace
}  // namespace durasim::cli
