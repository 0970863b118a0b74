// Determinism of the runtime workload under recoverable faults (RT-01): 200 seeds (10 under
// sanitizers) hash the same twice and all pass their checks; replaying saved traces from their
// choice logs, with the seed withheld, reproduces their hashes (RT-23).
#include <gtest/gtest.h>

#include "cli/seed_run.h"

namespace durasim::cli {
namespace {

#if defined(__SANITIZE_ADDRESS__)
constexpr uint64_t kSeeds = 10;
#else
constexpr uint64_t kSeeds = 200;
#endif
constexpr uint64_t kReplayed = 10;

workloads::RunConfig runtime_config() {
  workloads::RunConfig config;
  config.workload = "runtime";
  config.faults = "recoverable";
  return config;
}

TEST(RuntimeDeterminism, SeedsHashTheSameTwiceAndPass) {
  const workloads::RunConfig config = runtime_config();
  uint64_t faults_fired = 0;
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    const SeedOutcome first = run_seed(config, seed);
    const SeedOutcome second = run_seed(config, seed);
    ASSERT_TRUE(first.passed()) << "seed " << seed << ": " << first.failure();
    ASSERT_EQ(first.hash, second.hash) << "seed " << seed << " is not deterministic";
    ASSERT_EQ(first.choices, second.choices) << "seed " << seed;
    for (const auto& count : first.faults) faults_fired += count.firings;
  }
  EXPECT_GT(faults_fired, kSeeds) << "the recoverable profile should inject faults in these seeds";
}

TEST(RuntimeDeterminism, ReplayFromChoicesReproducesTheHash) {
  const workloads::RunConfig config = runtime_config();
  for (uint64_t seed = 0; seed < kReplayed; ++seed) {
    traces::TraceFile trace;
    const SeedOutcome outcome = run_seed(config, seed, &trace);
    const ReplayOutcome replayed = replay(trace);
    ASSERT_TRUE(replayed.matched) << "seed " << seed << ": "
                                  << (replayed.divergence ? replayed.divergence->describe() : replayed.choice_divergence.value_or("hash differs"));
    EXPECT_EQ(replayed.hash, outcome.hash);
  }
}

}  // namespace
}  // namespace durasim::cli
