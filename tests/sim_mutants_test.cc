// The simulator mutants of runtime.md 12 (sim/mutants.h), each run as `durasim mutants` runs it
// (its workload, faults and options from cli/variants.h): switched on, the invariant it breaks is
// violated in at least one of a few seeds known to expose it; switched off, the same seeds do not
// violate it. RT-01 and RT-23 are judged by a second run and a replay of each seed.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "cli/seed_run.h"
#include "cli/variants.h"
#include "sim/mutants.h"
#include "traces/trace_file.h"

namespace durasim {
namespace {

namespace m = sim::mutants;

struct MutantCase {
  std::string_view mutant;
  std::string_view invariant;    // the one runtime.md 12 names
  std::vector<uint64_t> seeds;   // at least one of them exposes the mutant
};

std::ostream& operator<<(std::ostream& out, const MutantCase& c) { return out << c.mutant; }

// The configuration `durasim mutants` runs `mutant` with, the mutant switched on or not.
workloads::RunConfig config_for(std::string_view mutant, bool on) {
  const cli::VariantInfo* info = cli::find_variant(mutant);
  EXPECT_NE(info, nullptr) << mutant;
  workloads::RunConfig config;
  if (!info) return config;
  config.workload = std::string(info->workload);
  config.faults = std::string(info->faults);
  config.options = info->options;
  if (on) config.variants = {std::string(mutant)};
  return config;
}

// How many times `invariant` was violated in `seed`, with the determinism checks when it is RT-01
// or RT-23; `failure` receives the first violation's message.
uint64_t violations(const workloads::RunConfig& config, uint64_t seed, std::string_view invariant, std::string& failure) {
  traces::TraceFile trace;
  cli::SeedOutcome outcome = cli::run_seed(config, seed, &trace);
  if (invariant == "RT-01" || invariant == "RT-23") cli::check_determinism(config, trace, outcome);
  const auto found = outcome.tallies.by_id().find(std::string(invariant));
  if (found == outcome.tallies.by_id().end() || found->second.violated == 0) return 0;
  failure = found->second.examples.front();
  return found->second.violated;
}

class SimMutants : public testing::TestWithParam<MutantCase> {};

TEST_P(SimMutants, BreaksItsInvariantOnlyWhenSwitchedOn) {
  const MutantCase& c = GetParam();
  uint64_t caught = 0;
  for (uint64_t seed : c.seeds) {
    std::string failure;
    EXPECT_EQ(violations(config_for(c.mutant, false), seed, c.invariant, failure), 0u)
        << c.invariant << " violated without " << c.mutant << " in seed " << seed << ": " << failure;
    caught += violations(config_for(c.mutant, true), seed, c.invariant, failure);
  }
  EXPECT_GT(caught, 0u) << c.mutant << " went unnoticed by " << c.invariant << " in every seed given";
}

INSTANTIATE_TEST_SUITE_P(
    RuntimeMd12, SimMutants,
    testing::Values(MutantCase{m::kWallClockLeak, "RT-01", {0}}, MutantCase{m::kUnrecordedChoice, "RT-23", {0}},
                    MutantCase{m::kClockStepBack, "RT-02", {5, 6}}, MutantCase{m::kAlarmFiresEarly, "RT-03", {0}},
                    MutantCase{m::kKeepOpenTxnOnReset, "RT-06", {0}}, MutantCase{m::kConfirmOutOfOrder, "RT-07", {0}},
                    MutantCase{m::kZombieStorageWrite, "RT-08", {15, 21}}, MutantCase{m::kUncountedFault, "RT-09", {0}},
                    MutantCase{m::kOutputGateBypass, "RT-10", {0}}, MutantCase{m::kInputGateLeak, "RT-11", {0, 1}},
                    MutantCase{m::kAlarmRetryOffByOne, "RT-12", {0}}, MutantCase{m::kMemorySurvivesReset, "RT-19", {0}},
                    MutantCase{m::kStatementErrorResets, "RT-26", {0}}),
    [](const testing::TestParamInfo<MutantCase>& info) {
      std::string name(info.param.mutant.substr(info.param.mutant.rfind('.') + 1));
      return name;
    });

// Every mutant of runtime.md 12 is covered above, and each is switched on by its own name only.
TEST(SimMutants, EveryMutantIsReadFromItsOwnName) {
  const std::vector<std::string_view> all = {m::kWallClockLeak,      m::kUnrecordedChoice,   m::kClockStepBack,
                                             m::kAlarmFiresEarly,    m::kKeepOpenTxnOnReset, m::kConfirmOutOfOrder,
                                             m::kZombieStorageWrite, m::kUncountedFault,     m::kOutputGateBypass,
                                             m::kInputGateLeak,      m::kAlarmRetryOffByOne, m::kMemorySurvivesReset,
                                             m::kStatementErrorResets};
  const auto count_on = [](const sim::ActiveMutants& a) {
    return a.wall_clock_leak + a.unrecorded_choice + a.clock_step_back + a.alarm_fires_early + a.keep_open_txn_on_reset +
           a.confirm_out_of_order + a.zombie_storage_write + a.uncounted_fault + a.output_gate_bypass + a.input_gate_leak +
           a.alarm_retry_off_by_one + a.memory_survives_reset + a.statement_error_resets;
  };
  EXPECT_EQ(count_on(sim::ActiveMutants::of({})), 0);
  EXPECT_EQ(count_on(sim::ActiveMutants::of({"log.lease_ack_three_units"})), 0);
  for (std::string_view name : all) {
    EXPECT_EQ(count_on(sim::ActiveMutants::of({std::string(name)})), 1) << name;
    ASSERT_NE(cli::find_variant(name), nullptr) << name;
  }
  std::set<std::string> every(all.begin(), all.end());
  EXPECT_EQ(count_on(sim::ActiveMutants::of(every)), 13);
}

}  // namespace
}  // namespace durasim
