// The OBX checks (properties/outbox_checks.h): the outbox workload's stream without faults passes
// every check; a stream mutated on its way to the checker (one event changed, the stores left as
// the engine wrote them) is caught by the check of the invariant the mutation breaks; the state
// checks catch the calibration variants from the stored rows; hand-made streams show the checks
// that need a particular order of events.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "cli/seed_run.h"
#include "engine/outbox_events.h"
#include "engine/outbox_schema.h"
#include "properties/outbox_checks.h"
#include "sim/sqlite_store.h"
#include "tests/mutated_stream.h"

namespace durasim {
namespace {

using mutated::Checked;
using mutated::Mutation;
using nlohmann::json;

constexpr uint64_t kSeed = 2;

Checked run(Mutation mutation = {}) { return mutated::runMutated("outbox", {{"OBX", "Account"}}, kSeed, std::move(mutation)); }

TEST(OutboxChecks, TheUnmutatedStreamPassesEveryCheck) {
  const Checked checked = run();
  EXPECT_EQ(checked.tallies.violations(), 0u) << checked.examples();
  for (const char* id : {"OBX-01", "OBX-02", "OBX-03", "OBX-04", "OBX-05", "OBX-06", "OBX-07", "OBX-08", "OBX-09", "OBX-10", "OBX-11",
                         "OBX-12", "OBX-14", "OBX-16", "OBX-17", "OBX-20"})
    EXPECT_GT(checked.tallies.by_id().count(id) ? checked.tallies.by_id().at(id).checked : 0u, 0u) << id << " was never checked";
}

using Case = mutated::MutationCase;

class OutboxCheckMutations : public ::testing::TestWithParam<Case> {};

TEST_P(OutboxCheckMutations, AreCaughtByTheirInvariant) {
  const Case& c = GetParam();
  const Checked checked = run(c.mutation);
  ASSERT_TRUE(checked.applied) << "the stream has no event to mutate";
  EXPECT_GT(checked.violations(c.caught_by), 0u) << checked.examples();
}

int64_t numberOf(const json& e, const char* field) { return e.at(field).get<int64_t>(); }

// The first settlement acknowledging an entry reschedules it instead, a day later.
void ackBecomesLateRetry(json& e) {
  const json acked = e["acked"].at(0);
  e["retried"].push_back({{"key", acked["key"]}, {"generation", acked["generation"]}, {"attempt", 1}, {"next", numberOf(e, "at") + 86'400'000},
                          {"error", {{"name", "Retry"}, {"message", "m"}}}, {"matched", true}});
  e["acked"].erase(0);
}

const Case kCases[] = {
    // A second stage reusing the first one's version.
    {"VersionReused", {"obx.stage.write", 1, [](json& e) { e["version"] = 1; }}, "OBX-01"},
    // A stage reported far above the counter the store keeps.
    {"VersionAboveTheCounter", {"obx.stage.write", 0, [](json& e) { e["version"] = 1'000; }}, "OBX-02"},
    // A stage reported with another value than the row it wrote.
    {"StageValueNotStored", {"obx.stage.write", 0, [](json& e) { e["value"] = "{}"; }}, "OBX-03"},
    // An aborted transaction reports a stage its transaction did not hold: the next stage of the key
    // is taken for it, written after the abort.
    {"StageAfterItsAbort", {std::string(outbox_events::kAppAborted), 0, [](json& e) { e["staged"][0]["version"] = 1'000'000; }}, "OBX-04"},
    // An acknowledgement carrying another generation than its entry's.
    {"AckOfAnotherGeneration", {"obx.settle.write", 0, [](json& e) { e["acked"].at(0)["generation"] = "other"; }}, "OBX-05"},
    // A publish call with an attempt its claim did not make.
    {"PublishedAttemptNotClaimed", {"obx.publish", 0, [](json& e) { e["entries"][0]["attempt"] = 7; }}, "OBX-06"},
    // A publish call carrying one key twice.
    {"KeyTwiceInABatch", {"obx.publish", 0, [](json& e) { e["entries"].push_back(e["entries"][0]); }}, "OBX-07"},
    // A claim whose deadline is not claimAt + attemptTimeoutMs.
    {"ClaimDeadlineOff", {"obx.claim.write", 0, [](json& e) { e["deadline"] = numberOf(e, "deadline") + 1; }}, "OBX-08"},
    // A settlement whose acknowledgement is not reported: the row is gone all the same.
    {"RowGoneWithoutAck", {"obx.settle.write", 0, [](json& e) { e["acked"] = json::array(); }}, "OBX-09"},
    // A retry a day later than any policy gives.
    {"RetryDelayOutOfBounds", {"obx.settle.write", 0, ackBecomesLateRetry}, "OBX-10"},
    // A first due time off the batch window.
    {"FirstDueOffTheWindow", {"obx.stage.write", 0, [](json& e) { e["firstAttemptAt"] = numberOf(e, "firstAttemptAt") - 1; }}, "OBX-11"},
    // A claim of one channel reporting the row of another.
    {"ClaimOfAnotherChannelsRow", {"obx.claim.write", 0, [](json& e) { e["channel"] = "elsewhere"; }}, "OBX-12"},
    // A second pass of a channel begun while the first runs.
    {"SecondPassOfAChannel", {"obx.pass.begin", 0, [](json&) {}, 2}, "OBX-12"},
    // An incarnation that says it attaches no channel, and claims rows all the same.
    {"ClaimOnAnUnattachedChannel", {std::string(outbox_events::kAppChannels), 0, [](json& e) { e["channels"] = json::array(); }}, "OBX-13"},
    // A reconcile that ran far in the past: the alarm it left lies after its window.
    {"AlarmOutsideTheWindow", {"sch.reconcile", 0, [](json& e) { e["now"] = numberOf(e, "now") - 1'000'000'000; }}, "OBX-20"},
    // A malformed probe is a violation, not a crash.
    {"MalformedStage", {"obx.stage.write", 0, [](json& e) { e.erase("key"); }}, "OBX-01"},
};

INSTANTIATE_TEST_SUITE_P(Stream, OutboxCheckMutations, ::testing::ValuesIn(kCases), [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------------------------
// The calibration variants, caught from the stored rows and the sink within the first seeds (the
// first catching seed moves when the workload changes; the bound is what the test holds)

constexpr uint64_t kVariantSeeds = 20;

struct VariantCase {
  const char* variant;
  const char* faults;
  const char* caught_by;
};

class OutboxVariants : public ::testing::TestWithParam<VariantCase> {};

TEST_P(OutboxVariants, AreCaughtByTheirInvariant) {
  const VariantCase& c = GetParam();
  workloads::RunConfig config;
  config.workload = "outbox";
  config.faults = c.faults;
  config.variants = {c.variant};
  bool caught = false;
  for (uint64_t seed = 0; seed < kVariantSeeds && !caught; ++seed) {
    const cli::SeedOutcome outcome = cli::run_seed(config, seed);
    const auto found = outcome.tallies.by_id().find(c.caught_by);
    caught = found != outcome.tallies.by_id().end() && found->second.violated > 0;
  }
  EXPECT_TRUE(caught) << c.variant << " not caught by " << c.caught_by << " in seeds 0.." << kVariantSeeds - 1;
}

const VariantCase kVariants[] = {
    {"outbox.version_from_rows", "none", "OBX-02"},
    {"outbox.stage_own_transaction", "none", "OBX-04"},
    {"outbox.ack_ignores_generation", "none", "OBX-05"},
    {"outbox.give_up_after_max_attempts", "recoverable", "OBX-09"},  // five failed publishes need faults
    {"sink.last_writer_wins", "none", "OBX-14"},
};

INSTANTIATE_TEST_SUITE_P(Variant, OutboxVariants, ::testing::ValuesIn(kVariants), [](const auto& info) {
  std::string name = info.param.caught_by;
  name.erase(name.find('-'), 1);
  return name;
});

// ---------------------------------------------------------------------------------------------
// Hand-made streams of object "Account/a" over a bare store (no outbox tables: state checks idle)

class StreamRig {
 public:
  StreamRig()
      : checks_(properties::StoreReader{[this](const std::string&, std::string_view sql, const std::vector<SqlValue>& params) {
                  return store_.exec(sql, params);
                }},
                "Account") {
    config({{"channels", json::array({"ledger"})}, {"maxBatchSize", 2}, {"attemptTimeoutMs", 100}, {"alarmMinDelayMs", 10}, {"retry", {{"kind", "default"}}}});
    of(std::string(outbox_events::kAppChannels), {{"account", "Account/a"}, {"channels", json::array({"ledger"})}});
  }

  void config(json fields) {
    fields["ev"] = "workload.config";
    fields["t"] = 0;
    checks_.record(fields);
  }
  void of(const std::string& ev, json fields, int64_t incarnation = 1) {
    fields["ev"] = ev;
    fields["t"] = ++t_;
    fields["object"] = "Account/a";
    fields["incarnation"] = incarnation;
    checks_.record(fields);
  }
  void commit(int64_t incarnation = 1) { of("commit", {{"commit", ++commit_}, {"alarm", nullptr}}, incarnation); }
  void confirm() { of("confirm", {{"commit", commit_}}); }
  void stage(int64_t version, int64_t incarnation = 1) {
    of("obx.stage.write", {{"channel", "ledger"}, {"key", "k"}, {"version", version}, {"generation", generation(version)}, {"value", "v"},
                           {"at", 0}, {"firstAttemptAt", 0}},
       incarnation);
  }
  // A pass of "ledger" claiming version `version` (committed), and its publish call.
  void claimAndPublish(int64_t version) {
    of("obx.pass.begin", {{"channel", "ledger"}});
    of("obx.claim.write", {{"channel", "ledger"}, {"claimAt", 0}, {"deadline", 100},
                           {"claimed", json::array({{{"key", "k"}, {"version", version}, {"generation", generation(version)}, {"attempt", 1}}})}});
    commit();
  }
  void publish(int64_t version) {
    of("obx.publish", {{"channel", "ledger"}, {"entries", json::array({{{"key", "k"}, {"version", version}, {"attempt", 1}}})}});
  }
  void finish() { checks_.finish(); }
  void createTable(const char* table) {
    std::string sql = "CREATE TABLE ";
    sql += table;
    sql += " (x INTEGER)";
    store_.exec(sql, {});
  }
  uint64_t violations(const std::string& id) const {
    const auto& tallies = checks_.tallies().by_id();
    return tallies.count(id) ? tallies.at(id).violated : 0;
  }
  uint64_t checked(const std::string& id) const {
    const auto& tallies = checks_.tallies().by_id();
    return tallies.count(id) ? tallies.at(id).checked : 0;
  }

 private:
  static std::string generation(int64_t version) {
    std::string g = "g";
    g += std::to_string(version);
    return g;
  }

  sim::SqliteStore store_{sim::SqlEnvironment{[] { return uint64_t{7}; }, [] { return int64_t{0}; }}};
  properties::OutboxChecks checks_;
  int64_t t_ = 0;
  uint64_t commit_ = 0;
};

TEST(OutboxChecksStream, AVersionThatVanishedWithAResetMayBeGivenAgainButNotACommittedOne) {
  StreamRig rig;
  rig.stage(1);
  rig.commit();
  rig.of("durability", {{"kept", 0}, {"unconfirmed", 1}});
  rig.stage(1, 2);
  EXPECT_EQ(rig.violations("OBX-01"), 0u) << "the first version 1 never became durable";
  rig.commit(2);
  rig.stage(1, 2);
  EXPECT_EQ(rig.violations("OBX-01"), 1u);
}

TEST(OutboxChecksStream, AnAbortedStageLeavesTheTransactionAndItsVersionMayBeGivenAgain) {
  StreamRig rig;
  rig.stage(1);
  rig.of(std::string(outbox_events::kAppAborted), {{"account", "Account/a"}, {"staged", json::array({{{"channel", "ledger"}, {"key", "k"}, {"version", 1}}})}});
  rig.stage(1);
  EXPECT_EQ(rig.violations("OBX-01"), 0u);
  EXPECT_EQ(rig.violations("OBX-04"), 0u) << "a stage of a later transaction";
}

TEST(OutboxChecksStream, APublishBeforeItsClaimIsDurableViolatesObx17) {
  StreamRig rig;
  rig.stage(1);
  rig.commit();
  rig.claimAndPublish(1);
  rig.publish(1);
  EXPECT_EQ(rig.violations("OBX-17"), 1u) << "the claim commit is not confirmed";
  EXPECT_EQ(rig.violations("OBX-06"), 0u);
}

TEST(OutboxChecksStream, AMarkAcceptedAfterItsBatchClosedViolatesObx18) {
  StreamRig rig;
  rig.stage(1);
  rig.commit();
  rig.claimAndPublish(1);
  rig.confirm();
  rig.publish(1);
  const json mark = {{"channel", "ledger"}, {"key", "k"}, {"version", 1}, {"delayMs", nullptr}, {"refused", nullptr}};
  rig.of("obx.mark", mark);
  EXPECT_EQ(rig.violations("OBX-18"), 0u);
  rig.of("obx.published", {{"channel", "ledger"}, {"threw", false}, {"timedOut", true}});
  rig.of("obx.mark", mark);
  EXPECT_EQ(rig.violations("OBX-18"), 1u);
}

TEST(OutboxChecksStream, AMarkedEntryIsRescheduledByItsExplicitDelayObx10) {
  StreamRig rig;
  rig.stage(1);
  rig.commit();
  rig.claimAndPublish(1);
  rig.confirm();
  rig.publish(1);
  rig.of("obx.mark", {{"channel", "ledger"}, {"key", "k"}, {"version", 1}, {"delayMs", 700}, {"refused", nullptr}});
  rig.of("obx.mark", {{"channel", "ledger"}, {"key", "k"}, {"version", 1}, {"delayMs", nullptr}, {"refused", nullptr}});
  rig.of("obx.published", {{"channel", "ledger"}, {"threw", false}, {"timedOut", false}});
  auto settle = [&](int64_t next) {
    rig.of("obx.settle.write", {{"channel", "ledger"}, {"at", 1'000}, {"acked", json::array()},
                                {"retried", json::array({{{"key", "k"}, {"generation", "g1"}, {"attempt", 1}, {"next", next},
                                                          {"error", {{"name", "Retry"}, {"message", "m"}}}, {"matched", true}}})}});
  };
  settle(1'700);
  EXPECT_EQ(rig.violations("OBX-10"), 0u) << "a mark without a delay keeps the earlier one";
  settle(1'701);
  EXPECT_EQ(rig.violations("OBX-10"), 1u);
}

TEST(OutboxChecksStream, SchemaRemovalThatKeepsAnOutboxTableViolatesObx19) {
  StreamRig rig;
  rig.createTable("account_balances");
  rig.of(std::string(outbox_events::kAppMigratedNone), {{"account", "Account/a"}});
  EXPECT_EQ(rig.checked("OBX-19"), 1u);
  EXPECT_EQ(rig.violations("OBX-19"), 0u);
  rig.createTable(DURASIM_OUTBOX_SEQ);
  rig.of(std::string(outbox_events::kAppMigratedNone), {{"account", "Account/a"}}, 2);
  EXPECT_EQ(rig.violations("OBX-19"), 1u);
}

TEST(OutboxChecksStream, AKeyTheSinkNeverReceivedViolatesObx16UnlessTheAccountRetired) {
  StreamRig rig;
  rig.stage(1);
  rig.commit();
  rig.finish();
  EXPECT_EQ(rig.violations("OBX-16"), 1u);
  StreamRig retired;
  retired.stage(1);
  retired.commit();
  retired.of(std::string(outbox_events::kAppMigratedNone), {{"account", "Account/a"}}, 2);
  retired.finish();
  EXPECT_EQ(retired.checked("OBX-16"), 0u);
}

}  // namespace
}  // namespace durasim
