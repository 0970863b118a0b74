// Research variants from the command line (cli/variants.h, cli/mutants.h): names are checked, a
// variant is written to the trace header and replayed, `durasim mutants --list` names every one, and
// a violation is timed by the World that found it (sim/tally.h).
#include <gtest/gtest.h>

#include <sstream>
#include <string>

#include "cli/commands.h"
#include "cli/mutants.h"
#include "cli/variants.h"
#include "sim/world.h"
#include "traces/recorder.h"
#include "workloads/run_config.h"

namespace durasim {
namespace {


TEST(Variants, EveryRegisteredVariantHasItsContractAndExpectedInvariants) {
  ASSERT_FALSE(cli::variant_registry().empty());
  for (const cli::VariantInfo& v : cli::variant_registry()) {
    EXPECT_FALSE(v.breaks.empty()) << v.name;
    EXPECT_FALSE(v.expected.empty()) << v.name;
    EXPECT_EQ(cli::find_variant(v.name), &v);
    EXPECT_TRUE(!v.workload.empty() || !v.why_unreachable.empty()) << v.name << " is neither exercised nor explained";
  }
  EXPECT_EQ(cli::find_variant("log.no_such_flag"), nullptr);
  EXPECT_THROW(cli::require_known_variant("log.no_such_flag"), std::invalid_argument);
}

TEST(Variants, RunConfigCarriesVariantsOnlyWhenSome) {
  workloads::RunConfig config;
  EXPECT_FALSE(config.to_json().contains("variants"));  // default traces keep their header
  config.variants = {"log.lease_ack_three_units", "sim.mutant.clock_step_back"};
  const workloads::RunConfig back = workloads::RunConfig::from_json(config.to_json());
  EXPECT_EQ(back.variants, config.variants);
  EXPECT_THROW(workloads::RunConfig::from_json({{"variants", "log.lease_ack_three_units"}}), std::invalid_argument);
  EXPECT_THROW(workloads::RunConfig::from_json({{"variants", {1}}}), std::invalid_argument);
}

TEST(Variants, UnknownVariantIsBadInputForRunAndMutants) {
  cli::RunOptions run;
  run.seed = 1;
  run.variants = {"log.no_such_flag"};
  std::ostringstream out, err;
  EXPECT_EQ(cli::run_command(run, out, err), cli::kExitBadInput);
  EXPECT_NE(err.str().find("unknown variant 'log.no_such_flag'"), std::string::npos) << err.str();
  cli::MutantsOptions mutants;
  mutants.variants = {"log.no_such_flag"};
  std::ostringstream out2, err2;
  EXPECT_EQ(cli::mutants_command(mutants, out2, err2), cli::kExitBadInput);
  EXPECT_NE(err2.str().find("unknown variant"), std::string::npos) << err2.str();
}

TEST(Variants, MutantsListNamesEveryVariant) {
  cli::MutantsOptions options;
  options.list = true;
  std::ostringstream out, err;
  EXPECT_EQ(cli::mutants_command(options, out, err), cli::kExitOk);
  for (const cli::VariantInfo& v : cli::variant_registry()) EXPECT_NE(out.str().find(std::string(v.name)), std::string::npos) << v.name;
}

TEST(Variants, TheWorldHoldsTheRunsVariants) {
  traces::Recorder recorder(false);
  sim::World world(0, sim::RandomSource::recording(1), recorder);
  world.set_variants({"log.lease_ack_three_units"});
  EXPECT_TRUE(world.has_variant("log.lease_ack_three_units"));
  EXPECT_FALSE(world.has_variant("log.lease_truncation_blocks"));
}

TEST(Variants, AViolationIsTimedByTheWorldAliveOnItsThread) {
  sim::Tallies outside;
  outside.check("RT-02", false, [] { return "no world"; });
  EXPECT_FALSE(outside.by_id().at("RT-02").first_violation_ms.has_value());
  traces::Recorder recorder(false);
  sim::World world(5'000, sim::RandomSource::recording(1), recorder);
  sim::Tallies tallies;
  tallies.check("RT-02", true, [] { return ""; });
  EXPECT_FALSE(tallies.by_id().at("RT-02").first_violation_ms.has_value());
  world.executor().at(5'250, [&] { tallies.check("RT-02", false, [] { return "late"; }); });
  world.executor().at(5'900, [&] { tallies.check("RT-02", false, [] { return "later"; }); });
  world.run_until(10'000, [] { return true; });
  EXPECT_EQ(tallies.by_id().at("RT-02").first_violation_ms, 5'250);
  sim::Tallies merged;
  merged.merge(outside);
  merged.merge(tallies);
  EXPECT_EQ(merged.by_id().at("RT-02").first_violation_ms, 5'250);
}

}  // namespace
}  // namespace durasim
