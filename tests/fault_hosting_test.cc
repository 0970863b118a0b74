// The faults each workload declares it hosts (WorkloadInfo::hosts, docs/fault-episodes.md): a fault
// outside the declaration never has an opportunity in the workload (so leaving it out loses
// nothing) and is never enabled; a declared fault has opportunities in some seed (so the
// declaration is not wider than the workload), cold.vanish excepted: its opportunities come once per
// simulated hour at an instant drawn per run, inside the default 10-minute safety phase in about one
// seed in six.
#include <gtest/gtest.h>

#include <array>
#include <string>

#include "cli/seed_run.h"
#include "faults/atlas.h"
#include "workloads/workload.h"

namespace durasim {
namespace {

constexpr uint64_t kSeeds = 6;

class FaultHosting : public ::testing::TestWithParam<std::string> {};

TEST_P(FaultHosting, OpportunitiesArisePreciselyForTheDeclaredFaults) {
  const workloads::WorkloadInfo& info = *workloads::find_workload(GetParam());
  workloads::RunConfig config;
  config.workload = info.name;
  config.faults = "arbitrary";
  std::array<uint64_t, sim::kFaultKindCount> opportunities{};
  for (uint64_t seed = 0; seed < kSeeds; ++seed) {
    const cli::SeedOutcome outcome = cli::run_seed(config, seed);
    for (const faults::FaultCount& count : outcome.faults) {
      const auto i = static_cast<std::size_t>(count.kind);
      opportunities[i] += count.opportunities;
      if (!info.hosts.test(i)) {
        EXPECT_FALSE(count.enabled) << info.name << " seed " << seed << " enabled " << sim::fault_name(count.kind);
      }
    }
  }
  for (std::size_t i = 0; i < sim::kFaultKindCount; ++i) {
    const auto kind = static_cast<sim::FaultKind>(i);
    if (!info.hosts.test(i)) {
      EXPECT_EQ(opportunities[i], 0u) << info.name << " offers " << sim::fault_name(kind) << " without declaring it";
    } else if (kind != sim::FaultKind::cold_vanish) {
      EXPECT_GT(opportunities[i], 0u) << info.name << " declares " << sim::fault_name(kind) << " but never offers it";
    }
  }
}

std::vector<std::string> every_workload() {
  std::vector<std::string> names;
  for (const workloads::WorkloadInfo& info : workloads::workload_registry()) names.push_back(info.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(EveryWorkload, FaultHosting, ::testing::ValuesIn(every_workload()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(FaultSets, NameFaultsByIdOrPrefix) {
  const faults::FaultSet cold = faults::faults_named({"cold"});
  EXPECT_TRUE(cold.test(static_cast<std::size_t>(sim::FaultKind::cold_vanish)));
  EXPECT_FALSE(cold.test(static_cast<std::size_t>(sim::FaultKind::episode_cold_outage)));
  EXPECT_EQ(faults::faults_named({"rpc.partition"}).count(), 1u);
  EXPECT_EQ(faults::every_fault_but({"episode"}).count(), sim::kFaultKindCount - 4);
  EXPECT_THROW(faults::faults_named({"stor"}), std::invalid_argument);
}

}  // namespace
}  // namespace durasim
