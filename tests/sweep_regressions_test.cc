// Seeds that wide sweeps (1,000 seeds per workload and profile, beyond CI's) found failing, each on
// a checker's misjudgment, pinned: every one passes, and still fires the fault that misled the
// checker (a seed that stops doing so tests nothing and must be replaced by one that does).
//  - log 308, recoverable: retries of one append batch (lost replies) in flight together (LOG-02);
//  - mixed 349, arbitrary: an object.zombie's handler call after its reset (EVT-44);
//  - events 235, arbitrary: a durability decision between a raced pending add and its erase (EVT-21);
//  - fanout 532, arbitrary: a pass on an incarnation with clock.incarnation_offset (FAN-16).
#include <gtest/gtest.h>

#include <cstdint>
#include <ostream>
#include <string>

#include "cli/seed_run.h"
#include "sim/fault_points.h"
#include "workloads/workload.h"

namespace durasim::cli {
namespace {

struct Pinned {
  const char* workload;
  const char* faults;
  uint64_t seed;
  sim::FaultKind fault;  // the fault the checker misjudged around
};

void PrintTo(const Pinned& p, std::ostream* os) { *os << p.workload << " seed " << p.seed << " (" << p.faults << ")"; }

class SweepRegressions : public ::testing::TestWithParam<Pinned> {};

TEST_P(SweepRegressions, PassesAndStillFiresItsFault) {
  const Pinned& p = GetParam();
  workloads::RunConfig config;
  config.workload = p.workload;
  config.faults = p.faults;
  const SeedOutcome outcome = run_seed(config, p.seed);
  EXPECT_TRUE(outcome.passed()) << outcome.failure();
  EXPECT_GT(outcome.faults.at(static_cast<std::size_t>(p.fault)).firings, 0u) << sim::fault_name(p.fault) << " no longer fires";
}

INSTANTIATE_TEST_SUITE_P(Seeds, SweepRegressions,
                         ::testing::Values(Pinned{"log", "recoverable", 308, sim::FaultKind::rpc_reply_lost},
                                           Pinned{"mixed", "arbitrary", 349, sim::FaultKind::object_zombie},
                                           Pinned{"events", "arbitrary", 235, sim::FaultKind::object_reset},
                                           Pinned{"fanout", "arbitrary", 532, sim::FaultKind::clock_incarnation_offset}),
                         [](const auto& info) { return std::string(info.param.workload) + std::to_string(info.param.seed); });

}  // namespace
}  // namespace durasim::cli
