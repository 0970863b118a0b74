// The mixed workload end to end: seeds pass and drain, every family it declares judges something
// (the checks of every capability are on in one world), every appended record travels the whole
// chain (forwarded to a mailbox, applied by an account, its event on the bus, the account's
// balances at the sink summing to the records), each application's config names its class, a seed
// hashes the same twice, and bad options are rejected.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/seed_run.h"
#include "traces/trace_file.h"
#include "workloads/workload.h"

namespace durasim::cli {
namespace {

workloads::RunConfig mixedConfig(nlohmann::json options = nlohmann::json::object()) {
  workloads::RunConfig config;
  config.workload = "mixed";
  config.options = std::move(options);
  return config;
}

std::vector<nlohmann::json> eventsOf(const traces::TraceFile& trace, const std::string& type) {
  std::vector<nlohmann::json> events;
  for (const std::string& line : trace.events) {
    nlohmann::json event = nlohmann::json::parse(line);
    if (event.at("ev") == type) events.push_back(std::move(event));
  }
  return events;
}

TEST(MixedWorkload, SeedsPassAndEveryDeclaredFamilyJudgesSomething) {
  std::map<std::string, uint64_t> checkedPerFamily;
  for (uint64_t seed = 0; seed < 3; ++seed) {
    const SeedOutcome outcome = run_seed(mixedConfig(), seed);
    EXPECT_TRUE(outcome.passed()) << "seed " << seed << ": " << outcome.failure();
    EXPECT_TRUE(outcome.phases.drained) << "seed " << seed;
    EXPECT_GT(outcome.phases.metrics.at("appended").get<int64_t>(), 0) << "seed " << seed;
    for (const auto& [id, tally] : outcome.tallies.by_id()) checkedPerFamily[id.substr(0, id.find('-'))] += tally.checked;
  }
  const workloads::WorkloadInfo* info = workloads::find_workload("mixed");
  ASSERT_NE(info, nullptr);
  std::set<std::string> families;
  for (const workloads::CheckedFamily& family : info->families) families.insert(family.family);
  for (const char* family : {"RT", "SCH", "ALM", "LOG", "LSE", "RTE", "FAN", "OBX", "EVT"})
    EXPECT_TRUE(families.count(family)) << family << " is not declared";
  for (const std::string& family : families) EXPECT_GT(checkedPerFamily[family], 0u) << family << " judged nothing";
}

// Every record a producer was told was appended reached the bus under its own id, and the sink's
// balances (the drain condition) sum to the records the partitions hold. Each application states its
// config with its class.
TEST(MixedWorkload, EveryAppendedRecordTravelsTheWholeChain) {
  traces::TraceFile trace;
  const SeedOutcome outcome = run_seed(mixedConfig(), 5, &trace);
  ASSERT_TRUE(outcome.passed()) << outcome.failure();
  std::set<std::string> appended;
  for (const nlohmann::json& produce : eventsOf(trace, "app.produce")) {
    const std::string label = produce.at("partition").get<std::string>();  // "LogPartition/p<i>"
    for (const nlohmann::json& offset : produce.at("offsets"))
      appended.insert(label.substr(label.find('/') + 1) + ":" + std::to_string(offset.get<int64_t>()));
  }
  ASSERT_FALSE(appended.empty());
  std::set<std::string> emitted;
  for (const nlohmann::json& emit : eventsOf(trace, "app.evt.emitted"))
    if (emit.at("ok").get<bool>()) emitted.insert(emit.at("id").get<std::string>());
  for (const std::string& record : appended) EXPECT_TRUE(emitted.count(record)) << record << " never reached the bus";
  EXPECT_GE(outcome.phases.metrics.at("forwarded").get<int64_t>(), static_cast<int64_t>(appended.size()));
  EXPECT_FALSE(eventsOf(trace, "app.obx.sink.write").empty());
  std::set<std::string> classes;
  for (const nlohmann::json& config : eventsOf(trace, "workload.config")) classes.insert(config.at("class").get<std::string>());
  EXPECT_EQ(classes, (std::set<std::string>{"Account", "Bus", "LogPartition", "Mailbox"}));
}

TEST(MixedWorkload, SameSeedSameHash) {
  const workloads::RunConfig config = mixedConfig({{"ops", 2}});
  EXPECT_EQ(run_seed(config, 9).hash, run_seed(config, 9).hash);
  EXPECT_NE(run_seed(config, 9).hash, run_seed(config, 10).hash);
}

TEST(MixedWorkload, BadOptionsAreRejected) {
  for (const nlohmann::json& options : {nlohmann::json{{"accounts", 2}}, nlohmann::json{{"mailboxes", 0}}, nlohmann::json{{"leasers", -1}}}) {
    EXPECT_THROW(validate(mixedConfig(options)), std::invalid_argument) << options.dump();
  }
  EXPECT_NO_THROW(validate(mixedConfig({{"leasers", 0}, {"partitions", 1}, {"mailboxes", 1}})));
}

}  // namespace
}  // namespace durasim::cli
