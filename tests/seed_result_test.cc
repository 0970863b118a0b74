// A seed's record (cli/seed_result.h): it survives its JSON line unchanged, so a result that went
// through a worker's pipe or a shard file adds up exactly as one computed in place; its line holds
// the derived "violated" and "fired" fields; bytes that are not UTF-8 do not stop it being written;
// malformed records are refused naming the field.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/campaign.h"
#include "cli/seed_result.h"

namespace durasim::cli {
namespace {

SeedResult through_json(const SeedResult& result) { return seed_result_from_json(nlohmann::json::parse(json_line(to_json(result)))); }

SeedResult failing_result() {
  SeedResult r;
  r.workload = "outbox";
  r.seed = 12;
  r.hash = 0x0123456789abcdefULL;
  r.passed = false;
  r.failure = "OBX-14 violated 2x: a message";
  r.reproduce = "durasim run --workload outbox --seed 12";
  r.trace = "failures dir/outbox-seed-12.trace";
  r.invariants = {{"OBX-14", {5, 2}}, {"RT-02", {100, 0}}};
  for (std::size_t i = 0; i < r.faults.size(); ++i) r.faults[i].kind = static_cast<sim::FaultKind>(i);
  r.faults[static_cast<std::size_t>(sim::FaultKind::object_reset)] = {sim::FaultKind::object_reset, true, 0, 7, 2};
  r.executor_events = 10;
  r.trace_events = 9;
  r.simulated_ms = 600000;
  r.wall_s = 0.123456789012345;
  return r;
}

TEST(SeedResult, ARunSeedSurvivesItsJsonLine) {
  workloads::RunConfig config;
  config.workload = "core";
  const SeedResult result = seed_result("core", run_seed(config, 3));
  EXPECT_TRUE(result.passed) << result.failure;
  EXPECT_FALSE(result.invariants.empty());
  EXPECT_EQ(through_json(result), result);
}

TEST(SeedResult, AFailureSurvivesItsJsonLineWithDerivedFields) {
  const SeedResult r = failing_result();
  EXPECT_EQ(through_json(r), r);
  const nlohmann::json line = nlohmann::json::parse(json_line(to_json(r)));
  EXPECT_EQ(line["type"], "seed");
  EXPECT_EQ(line["hash"], "0123456789abcdef");
  EXPECT_EQ(line["violated"], (nlohmann::json{{"OBX-14", 2}}));
  EXPECT_EQ(line["fired"], nlohmann::json::array({"object.reset"}));
  EXPECT_EQ(line["faults"], (nlohmann::json{{"object.reset", {1, 7, 2}}}));
}

TEST(SeedResult, TextsNameTheSeedAndItsCommands) {
  const SeedResult r = failing_result();
  EXPECT_EQ(verbose_line(r), "seed 12 hash 0123456789abcdef events 9 simulated_ms 600000 FAILED");
  EXPECT_EQ(failure_text(r), "seed 12: OBX-14 violated 2x: a message\n"
                             "    reproduce: durasim run --workload outbox --seed 12\n"
                             "    replay: durasim replay 'failures dir/outbox-seed-12.trace'");
}

TEST(SeedResult, BytesThatAreNotUtf8AreReplacedNotFatal) {
  SeedResult r = failing_result();
  r.failure = "name \xFF\xFE";
  const SeedResult back = through_json(r);
  EXPECT_EQ(back.failure, "name \xEF\xBF\xBD\xEF\xBF\xBD");
}

TEST(SeedResult, MalformedRecordsAreRefusedNamingTheField) {
  const nlohmann::json good = nlohmann::json::parse(json_line(to_json(failing_result())));
  const auto refused = [&](const std::string& field, const nlohmann::json& value) {
    nlohmann::json bad = good;
    if (value.is_discarded()) bad.erase(field);
    else bad[field] = value;
    try {
      seed_result_from_json(bad);
      return std::string("accepted");
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
  };
  const nlohmann::json erased(nlohmann::json::value_t::discarded);
  EXPECT_NE(refused("seed", erased).find("'seed'"), std::string::npos);
  EXPECT_NE(refused("seed", -1).find("'seed'"), std::string::npos);
  EXPECT_NE(refused("hash", "xyz").find("'hash'"), std::string::npos);
  EXPECT_NE(refused("passed", true).find("disagree"), std::string::npos);
  EXPECT_NE(refused("invariants", {{"RT-02", {1}}}).find("RT-02"), std::string::npos);
  EXPECT_NE(refused("faults", {{"no.such_fault", {1, 1, 1}}}).find("no.such_fault"), std::string::npos);
  EXPECT_NE(refused("type", "summary").find("not a seed record"), std::string::npos);
  EXPECT_NE(refused("wall_s", "soon").find("'wall_s'"), std::string::npos);
}

TEST(SeedResult, TracePathsAndShellWords) {
  EXPECT_EQ(trace_path("out/{workload}-{seed}.trace", "log", 7), "out/log-7.trace");
  EXPECT_EQ(trace_path("t.trace", "log", 7), "t.trace");
  EXPECT_EQ(shell_word("plain/path-1.trace"), "plain/path-1.trace");
  EXPECT_EQ(shell_word("it's here"), "'it'\\''s here'");
}

}  // namespace
}  // namespace durasim::cli
