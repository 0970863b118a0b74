// Seeds that larger sweeps than CI's found failing, each run again with its workload and fault
// profile and expected to pass, and a runaway workload that must end as a failure within the event
// bound instead of hanging. The mechanisms behind most seeds have unit tests of their own
// (alarm_runtime_test, runtime_checks_test, executor_test, scheduler_test); these keep the seeds
// themselves green. The seeds a checker misjudged are also required to still fire the fault that
// misled it: a seed that stops doing so tests nothing and must be replaced by one that does.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "cli/seed_run.h"
#include "sim/fault_points.h"
#include "sim/world.h"
#include "workloads/workload.h"

namespace durasim::cli {
namespace {

struct FoundSeed {
  const char* workload;
  const char* faults;
  uint64_t seed;
  const char* found;  // what the sweep saw before the fix
  nlohmann::json options = nlohmann::json::object();  // the workload's
};

const std::vector<FoundSeed>& found_seeds() {
  static const std::vector<FoundSeed> seeds = {
      {"alarms", "recoverable", 1343, "ALM-14: an alarm lost after a gate-timeout reset"},
      {"alarms", "recoverable", 3145, "ALM-14: an alarm lost after a gate-timeout reset"},
      {"log", "recoverable", 1091, "an alarm due at the liveness deadline that never fired"},
      {"log", "recoverable", 1628, "an alarm due at the liveness deadline that never fired"},
      {"runtime", "arbitrary", 11901, "a run that never ended (the alarm manager re-armed at one instant)"},
      {"runtime", "arbitrary", 11285, "RT-03: a duplicate of an early alarm run, itself early"},
      {"alarms", "arbitrary", 5715, "a run that never ended (a failed early run's retry before its time)"},
      {"alarms", "arbitrary", 5151, "RT-03: a second early run of one occurrence"},
      {"alarms", "arbitrary", 5657, "RT-03: a second early run of one occurrence"},
      {"alarms", "recoverable", 9159, "ALM-14: a coalesced alarm refresh that read the rows before a success delete"},
      {"alarms", "recoverable", 7316, "ALM-13: a cancel made durable by a reset's decision, its caller told of the reset"},
      {"alarms", "arbitrary", 391, "ALM-13: a cancel made durable by a reset's decision, its caller told of the reset"},
      {"alarms", "recoverable", 7642, "SCH-05: two reconciles of one commit, the checker kept only one"},
      {"log", "arbitrary", 854, "LOG-12: retention by age judged on every record while incarnation clocks were skewed"},
      {"runtime", "recoverable", 4, "RT-12: an abandoned alarm ran again after the commit of its delete failed",
       {{"failing_alarms", true}}},
  };
  return seeds;
}

TEST(SweepRegressions, SeedsLargerSweepsFoundNowPass) {
  for (const FoundSeed& found : found_seeds()) {
    workloads::RunConfig config;
    config.workload = found.workload;
    config.faults = found.faults;
    config.options = found.options;
    config.start_time = sim::kDefaultStartTime;  // every seed was found before the swarm drew start times
    const SeedOutcome outcome = run_seed(config, found.seed);
    EXPECT_TRUE(outcome.passed()) << found.workload << " seed " << found.seed << " under " << found.faults << " (found: " << found.found
                                  << "): " << outcome.failure();
    EXPECT_TRUE(outcome.tallies.by_id().count("RT-14")) << "RT-14 is checked in every workload";
  }
}

// Seeds of 1,000-seed sweeps per workload and profile, each failing on a checker's misjudgment
// around one fault; found under the swarm's drawn start times, so run with them.
struct MisjudgedSeed {
  const char* workload;
  const char* faults;
  uint64_t seed;
  sim::FaultKind fault;  // the fault the checker misjudged around
  const char* found;
};

TEST(SweepRegressions, SeedsACheckerMisjudgedPassAndStillFireTheirFault) {
  const MisjudgedSeed seeds[] = {
      {"log", "recoverable", 308, sim::FaultKind::rpc_reply_lost, "LOG-02: retries of one append batch in flight together"},
      {"mixed", "arbitrary", 349, sim::FaultKind::object_zombie, "EVT-44: an object.zombie's handler call after its reset"},
      {"events", "arbitrary", 235, sim::FaultKind::object_reset, "EVT-21: a durability decision between a raced pending add and its erase"},
      {"fanout", "arbitrary", 532, sim::FaultKind::clock_incarnation_offset, "FAN-16: pass times off the object's clock"},
  };
  for (const MisjudgedSeed& found : seeds) {
    workloads::RunConfig config;
    config.workload = found.workload;
    config.faults = found.faults;
    const SeedOutcome outcome = run_seed(config, found.seed);
    const std::string name = std::string(found.workload) + " seed " + std::to_string(found.seed) + " under " + found.faults + " (found: " + found.found + ")";
    EXPECT_TRUE(outcome.passed()) << name << ": " << outcome.failure();
    EXPECT_GT(outcome.faults.at(static_cast<std::size_t>(found.fault)).firings, 0u) << name << ": " << sim::fault_name(found.fault) << " no longer fires";
  }
}

// A workload whose only timer re-arms itself at the current instant for ever.
class RunawayWorkload final : public workloads::Workload {
 public:
  void setup(sim::World&, faults::FaultPlan&) override {}
  void start(sim::World& world) override { spin(world); }
  bool drained() const override { return false; }
  std::vector<std::string> pending() const override { return {"the spinning timer"}; }
  void check(sim::World&, sim::Tallies&) override {}
  nlohmann::json metrics() const override { return nlohmann::json::object(); }

 private:
  static void spin(sim::World& world) {
    world.executor().at(world.now(), [&world] { spin(world); });
  }
};

TEST(SweepRegressions, ARunawayWorkloadFailsWithinTheEventBound) {
  const workloads::WorkloadInfo runaway{"runaway", "spins at one instant",
                                        [](const nlohmann::json&) { return std::make_unique<RunawayWorkload>(); },
                                        {}};
  workloads::RunConfig config;
  config.workload = "runaway";
  config.limits.per_instant = 5'000;
  const SeedOutcome outcome = run_seed(runaway, config, 1);
  EXPECT_FALSE(outcome.passed());
  const std::string failure = outcome.failure();
  EXPECT_NE(failure.find("runaway: more than 5000 events at simulated time"), std::string::npos) << failure;
  EXPECT_NE(failure.find("RunawayWorkload::spin"), std::string::npos) << "names the event that repeats: " << failure;
  EXPECT_LE(outcome.executor_events, 5'000u);
}

}  // namespace
}  // namespace durasim::cli
