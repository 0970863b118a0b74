// The log workload end to end: seeds pass through the workload runner, a seed's trace hash is the
// same twice, the `app.*` events carry the fields of docs/log-trace-events.md, invalid batches and
// lease calls without the leases option get their definite answers, and bad options are rejected
// with a clear error.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/seed_run.h"
#include "traces/trace_file.h"

namespace durasim::cli {
namespace {

workloads::RunConfig logConfig(nlohmann::json options = nlohmann::json::object()) {
  workloads::RunConfig config;
  config.workload = "log";
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

void expectFields(const nlohmann::json& event, const std::vector<std::string>& fields) {
  for (const std::string& field : fields) EXPECT_TRUE(event.contains(field)) << event.dump() << " lacks " << field;
}

TEST(LogWorkload, SeedsPassEndToEnd) {
  for (uint64_t seed = 0; seed < 4; ++seed) {
    const SeedOutcome outcome = run_seed(logConfig(), seed);
    EXPECT_TRUE(outcome.passed()) << "seed " << seed << ": " << outcome.failure();
    EXPECT_TRUE(outcome.phases.drained) << "seed " << seed;
    EXPECT_GT(outcome.phases.metrics.at("appended").get<int64_t>(), 0) << "seed " << seed;
    EXPECT_GT(outcome.phases.metrics.at("consumed").get<int64_t>(), 0) << "seed " << seed;
  }
}

TEST(LogWorkload, SameSeedSameHash) {
  const workloads::RunConfig config = logConfig();
  for (uint64_t seed : {7u, 8u}) {
    const SeedOutcome first = run_seed(config, seed);
    const SeedOutcome second = run_seed(config, seed);
    EXPECT_EQ(first.hash, second.hash) << "seed " << seed;
    EXPECT_EQ(first.trace_events, second.trace_events) << "seed " << seed;
    EXPECT_EQ(first.choices, second.choices) << "seed " << seed;
  }
  EXPECT_NE(run_seed(config, 7).hash, run_seed(config, 8).hash);
}

TEST(LogWorkload, AppEventsCarryTheContractFields) {
  std::map<std::string, int> seen;
  for (uint64_t seed = 0; seed < 6; ++seed) {
    traces::TraceFile trace;
    run_seed(logConfig(), seed, &trace);
    for (const nlohmann::json& e : eventsOf(trace, "app.produce")) {
      expectFields(e, {"partition", "producer", "keys", "offsets"});
      EXPECT_EQ(e.at("keys").size(), e.at("offsets").size()) << e.dump();
      EXPECT_EQ(e.at("partition").get<std::string>().rfind("LogPartition/", 0), 0u) << e.dump();
      ++seen["app.produce"];
    }
    for (const nlohmann::json& e : eventsOf(trace, "app.consume")) {
      expectFields(e, {"partition", "group", "from", "offsets"});
      EXPECT_GE(e.at("offsets").at(0).get<int64_t>(), e.at("from").get<int64_t>()) << e.dump();
      ++seen["app.consume"];
    }
    for (const nlohmann::json& e : eventsOf(trace, "app.consume.truncated")) {
      expectFields(e, {"partition", "group", "requested", "oldest"});
      EXPECT_GT(e.at("oldest").get<int64_t>(), e.at("requested").get<int64_t>()) << e.dump();
      ++seen["app.consume.truncated"];
    }
    for (const nlohmann::json& e : eventsOf(trace, "app.lease.outcome")) {
      expectFields(e, {"partition", "consumer", "batchId", "first", "last", "outcome", "result"});
      EXPECT_TRUE(std::set<std::string>({"ack", "nack", "stall"}).count(e.at("outcome").get<std::string>())) << e.dump();
      EXPECT_TRUE(std::set<std::string>({"ok", "LogLeaseError", "uncertain", "PartitionRetired"}).count(e.at("result").get<std::string>()))
          << e.dump();
      EXPECT_LE(e.at("first").get<int64_t>(), e.at("last").get<int64_t>()) << e.dump();
      ++seen["app.lease.outcome"];
    }
    for (const nlohmann::json& e : eventsOf(trace, "app.cold.lifecycle")) {
      expectFields(e, {"partition", "offset"});
      ++seen["app.cold.lifecycle"];
    }
    for (const nlohmann::json& e : eventsOf(trace, "app.log.retired")) {
      expectFields(e, {"partition"});
      ++seen["app.log.retired"];
    }
  }
  EXPECT_GT(seen["app.produce"], 0);
  EXPECT_GT(seen["app.consume"], 0);
  EXPECT_GT(seen["app.consume.truncated"], 0);
  EXPECT_GT(seen["app.lease.outcome"], 0);
  EXPECT_GT(seen["app.log.retired"], 0);
}

TEST(LogWorkload, DefiniteAnswersTheWorkloadExpects) {
  uint64_t invalidRejected = 0, disabledRefused = 0;
  for (uint64_t seed = 0; seed < 6; ++seed) {
    const SeedOutcome outcome = run_seed(logConfig(), seed);
    const auto& by_id = outcome.tallies.by_id();
    if (by_id.count("LOG-14")) {
      EXPECT_EQ(by_id.at("LOG-14").violated, 0u) << "seed " << seed;
      invalidRejected += by_id.at("LOG-14").checked;
    }
    if (by_id.count("LSE-16")) {
      EXPECT_EQ(by_id.at("LSE-16").violated, 0u) << "seed " << seed;
      disabledRefused += by_id.at("LSE-16").checked;
    }
  }
  EXPECT_GT(invalidRejected, 0u) << "no invalid batch was answered in six seeds";
  EXPECT_GT(disabledRefused, 0u) << "no lease call reached the partition without leases in six seeds";
}

TEST(LogWorkload, SmallerShapesRun) {
  const SeedOutcome outcome = run_seed(logConfig({{"partitions", 1}, {"producers", 1}, {"groups", 1}, {"leasers", 0}, {"ops", 5}}), 3);
  EXPECT_TRUE(outcome.passed()) << outcome.failure();
}

void expectRejected(const nlohmann::json& options, const std::string& message) {
  try {
    validate(logConfig(options));
    ADD_FAILURE() << options.dump() << " was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find(message), std::string::npos) << e.what();
  }
}

TEST(LogWorkload, InvalidOptionsAreRejectedClearly) {
  expectRejected({{"partition", 2}}, "log workload has no option 'partition'");
  expectRejected({{"partitions", 0}}, "log workload option 'partitions' must be a positive integer");
  expectRejected({{"ops", "many"}}, "log workload option 'ops' must be a positive integer");
  expectRejected({{"groups", -1}}, "log workload option 'groups' must be a non-negative integer");
  expectRejected({{"leasers", 1.5}}, "log workload option 'leasers' must be a non-negative integer");
  EXPECT_NO_THROW(validate(logConfig({{"partitions", 2}, {"groups", 0}})));
}

}  // namespace
}  // namespace durasim::cli
