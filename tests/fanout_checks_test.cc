// The FAN checks (properties/fanout_checks.h) on the real fanout workload's event stream: a run
// without faults passes every check; a run whose stream is mutated on its way to the checker (one
// event changed, the store left as the engine wrote it) is caught by the check of the invariant the
// mutation breaks.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "properties/fanout_checks.h"
#include "sim/sqlite_store.h"
#include "tests/mutated_stream.h"

namespace durasim {
namespace {

using mutated::Checked;
using mutated::Mutation;
using nlohmann::json;

constexpr uint64_t kSeed = 3;

Checked run(Mutation mutation = {}) { return mutated::runMutated("fanout", {{"FAN", "Mailbox"}}, kSeed, std::move(mutation)); }

TEST(FanoutChecks, TheUnmutatedStreamPassesEveryCheck) {
  const Checked checked = run();
  EXPECT_EQ(checked.tallies.violations(), 0u) << checked.examples();
  for (const char* id : {"FAN-02", "FAN-03", "FAN-04", "FAN-05", "FAN-06", "FAN-07", "FAN-08", "FAN-09", "FAN-10", "FAN-13", "FAN-14", "FAN-15",
                         "FAN-16", "FAN-17", "FAN-18", "FAN-19", "FAN-21", "FAN-22", "FAN-23", "FAN-24", "FAN-25", "FAN-26"})
    EXPECT_GT(checked.tallies.by_id().count(id) ? checked.tallies.by_id().at(id).checked : 0u, 0u) << id << " was never checked";
}

using Case = mutated::MutationCase;

class FanoutCheckMutations : public ::testing::TestWithParam<Case> {};

TEST_P(FanoutCheckMutations, AreCaughtByTheirInvariant) {
  const Case& c = GetParam();
  const Checked checked = run(c.mutation);
  ASSERT_TRUE(checked.applied) << "the stream has no event to mutate";
  EXPECT_GT(checked.violations(c.caught_by), 0u) << checked.examples();
}

// The run's third enqueue claims seq 0 again, which its mailbox already committed (in this seed).
void reuseSeq(json& e) {
  for (json& m : e["messages"])
    if (!m["hit"].get<bool>()) m["seq"] = 0;
}
// A consumer that received an attempt nobody claimed.
void unclaimedAttempt(json& e) { e["attempt"] = e["attempt"].get<int64_t>() + 1; }
// A delivery identity that is not json([generation, target]).
void foreignIdentity(json& e) { e["delivery"] = "not an identity"; }

const Case kCases[] = {
    {"SeqReused", {"fan.enqueue.write", 2, reuseSeq}, "FAN-05"},
    {"ConsumerReceivesAnUnclaimedAttempt", {"app.fan.consume", 0, unclaimedAttempt}, "FAN-06"},
    {"StorageWriteOfAnUnknownIdentity", {"app.fan.stored", 0, foreignIdentity}, "FAN-19"},
    // A delivery identity of one target received by another.
    {"ConsumerReceivesAnotherTargetsIdentity", {"app.fan.consume", 0, [](json& e) { e["target"] = "archive"; }}, "FAN-19"},
    // The same delivery handed to the consumer under more attempt numbers than maxAttempts allows.
    {"MoreAttemptsThanTheBound", {"app.fan.consume", 0, [](json& e) { e["attempt"] = 99; }}, "FAN-07"},
    // A pass of a target begun while it runs already.
    {"SecondPassOfATarget", {"fan.pass.begin", 0, [](json&) {}, 2}, "FAN-15"},
    // A pass whose batch is claimed in two transactions.
    {"BatchClaimedTwice", {"fan.claim.write", 0, [](json&) {}, 2}, "FAN-23"},
    // A pass that read a row the spec's due query does not give.
    {"PassReadsARowThatIsNotDue", {"fan.due", 0, [](json& e) { e["rows"].push_back({{"row", "[\"x\",\"consumer\"]"}}); }}, "FAN-14"},
    // First due times reported for another creation time than the rows carry.
    {"FirstDueOffTheBatchWindow", {"fan.enqueue.write", 0, [](json& e) { e["at"] = e["at"].get<int64_t>() - 1'000'000; }}, "FAN-17"},
    // One delivery attempt settled twice.
    {"SettledTwice", {"app.fan.settle", 0, [](json& e) { e["result"] = "ok"; e["second"] = false; }, 2}, "FAN-09"},
    // A memoize that returned another value than its memo holds.
    {"MemoizeReturnsAnotherValue", {"app.fan.memo", 1, [](json& e) { e["value"] = -1; }}, "FAN-24"},
    // A delivery's memoized step computed again once its memo is stored.
    {"MemoizedStepComputedAgain", {"app.fan.memo", 0, [](json& e) { e["ev"] = "app.fan.memo.compute"; }}, "FAN-24"},
    // A malformed probe is a violation, not a crash.
    {"MalformedClaim", {"fan.claim.write", 0, [](json& e) { e.erase("target"); }}, "FAN-06"},
};

INSTANTIATE_TEST_SUITE_P(Stream, FanoutCheckMutations, ::testing::ValuesIn(kCases), [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------------------------
// Hand-made streams of object "Mailbox/a" over a bare store (no fanout tables: state checks idle).

class StreamRig {
 public:
  StreamRig()
      : checks_(properties::StoreReader{[this](const std::string&, std::string_view sql, const std::vector<SqlValue>& params) {
                  return store_.exec(sql, params);
                }},
                "Mailbox") {}

  void config(json fields) {
    fields["ev"] = "workload.config";
    fields["t"] = 0;
    checks_.record(fields);
  }
  // An event of the object's incarnation `incarnation`.
  void of(const char* ev, json fields, int64_t incarnation = 1) {
    fields["ev"] = ev;
    fields["t"] = ++t_;
    fields["object"] = "Mailbox/a";
    fields["incarnation"] = incarnation;
    checks_.record(fields);
  }
  void commit(int64_t incarnation = 1) { of("commit", {{"commit", ++commit_}}, incarnation); }
  void claim(int64_t attempt, int64_t incarnation = 1) {
    of("fan.claim.write",
       {{"target", "consumer"}, {"claimAt", 0}, {"deadline", 1}, {"claimed", json::array({row(attempt)})}, {"refused", json::array()}},
       incarnation);
  }
  void intent() { of("fan.dead.intent.write", {{"row", kRow}, {"generation", "g"}, {"attempt", 1}, {"reason", "explicit"}, {"at", 0}, {"error", nullptr}, {"matched", true}}); }
  // A message under `key` with body `payload`: new (generation "g<seq>") or, with `hit`, taken for
  // a duplicate of the live one.
  void enqueue(int64_t seq, int64_t incarnation = 1, const std::string& key = "k", const std::string& payload = "p", bool hit = false) {
    json m = {{"key", key}, {"id", key}, {"payload", payload}, {"targets", json::array({"consumer"})}, {"hit", hit}};
    if (!hit) {
      m["seq"] = seq;
      std::string generation = "g";
      generation += std::to_string(seq);
      m["generation"] = generation;
    }
    of("fan.enqueue.write", {{"messages", json::array({m})}, {"at", 0}, {"firstAttemptAt", 0}}, incarnation);
  }
  void finish() { checks_.finish(); }
  void healed() { checks_.healed(t_); }
  void skip(int64_t ms) { t_ += ms; }
  uint64_t violations(const std::string& id) const {
    const auto& tallies = checks_.tallies().by_id();
    return tallies.count(id) ? tallies.at(id).violated : 0;
  }
  uint64_t checked(const std::string& id) const {
    const auto& tallies = checks_.tallies().by_id();
    return tallies.count(id) ? tallies.at(id).checked : 0;
  }

  static constexpr const char* kRow = "[\"k\",\"consumer\"]";

 private:
  static json row(int64_t attempt) { return {{"row", kRow}, {"generation", "g"}, {"attempt", attempt}}; }

  sim::SqliteStore store_{sim::SqlEnvironment{[] { return uint64_t{7}; }, [] { return int64_t{0}; }}};
  properties::FanoutChecks checks_;
  int64_t t_ = 0;
  uint64_t commit_ = 0;
};

TEST(FanoutChecksStream, ARemovedRowClaimedAgainViolatesFan08) {
  StreamRig rig;
  rig.claim(1);
  rig.commit();
  rig.of("fan.ack.write", {{"row", StreamRig::kRow}, {"generation", "g"}, {"attempt", 1}, {"how", "ack"}, {"matched", true}});
  rig.commit();
  EXPECT_EQ(rig.violations("FAN-08"), 0u);
  rig.claim(2);
  EXPECT_EQ(rig.violations("FAN-08"), 1u);
}

TEST(FanoutChecksStream, ARemovalInATransactionThatFailedIsNotHeldAgainstALaterClaim) {
  StreamRig rig;
  rig.claim(1);
  rig.commit();
  rig.of("fan.ack.write", {{"row", StreamRig::kRow}, {"generation", "g"}, {"attempt", 1}, {"how", "ack"}, {"matched", true}});
  rig.of("commit.failed", {{"outcome", "definite"}});
  rig.claim(2);
  EXPECT_EQ(rig.checked("FAN-08"), 2u);
  EXPECT_EQ(rig.violations("FAN-08"), 0u);
}

TEST(FanoutChecksStream, AClaimOrAnAckOfADeadLetteredRowViolatesFan10AndFan25) {
  StreamRig rig;
  rig.claim(1);
  rig.commit();
  rig.intent();
  rig.commit();
  rig.claim(2);
  EXPECT_EQ(rig.violations("FAN-10"), 1u);
  rig.of("fan.ack.write", {{"row", StreamRig::kRow}, {"generation", "g"}, {"attempt", 1}, {"how", "ackOnReturn"}, {"matched", true}});
  EXPECT_EQ(rig.violations("FAN-25"), 1u);
}

TEST(FanoutChecksStream, ADlqRemovalBeforeTheDlqHeldTheEntryViolatesFan11) {
  StreamRig rig;
  rig.config({{"dlq", true}, {"maxAttempts", 3}});
  rig.intent();
  rig.commit();
  rig.of("fan.remove.write", {{"row", StreamRig::kRow}, {"generation", "g"}, {"attempt", 1}, {"why", "dlq"}, {"reason", "explicit"}, {"matched", true}});
  EXPECT_EQ(rig.violations("FAN-11"), 1u);
}

TEST(FanoutChecksStream, DeadLetterWritesWithoutADlqViolateFan12) {
  StreamRig rig;
  rig.config({{"dlq", false}, {"maxAttempts", 3}});
  rig.intent();
  EXPECT_EQ(rig.violations("FAN-12"), 1u);
  rig.of("fan.remove.write", {{"row", StreamRig::kRow}, {"generation", "g"}, {"attempt", 1}, {"why", "drop"}, {"reason", "exhausted"}, {"matched", true}});
  EXPECT_EQ(rig.violations("FAN-12"), 1u) << "a drop is what a fanout without a DLQ does";
}

// A workload composing several applications states one config per class (the mixed workload): the
// checker of Mailbox takes its options from the config naming Mailbox, or naming no class, and
// ignores another class's (an Account's maxBatchSize, a LogPartition's, ...).
TEST(FanoutChecksStream, AConfigNamingAnotherClassConfiguresNothing) {
  StreamRig rig;
  rig.config({{"class", "Mailbox"}, {"dlq", false}, {"maxAttempts", 3}});
  rig.config({{"class", "Account"}, {"dlq", true}, {"maxAttempts", 50}});
  rig.intent();
  EXPECT_EQ(rig.violations("FAN-12"), 1u) << "the Account's config did not give the mailbox a DLQ";
  rig.of("app.fan.stored", {{"mailbox", "Mailbox/a"}, {"delivery", "[\"g\",\"consumer\"]"}, {"target", "consumer"}, {"attempts", 2}, {"reason", "exhausted"}, {"created", true}});
  EXPECT_EQ(rig.violations("FAN-22"), 1u) << "maxAttempts is still the mailbox's 3";
}

TEST(FanoutChecksStream, AnExhaustedDeadLetterBelowMaxAttemptsViolatesFan22) {
  StreamRig rig;
  rig.config({{"dlq", true}, {"maxAttempts", 3}});
  rig.of("app.fan.stored", {{"mailbox", "Mailbox/a"}, {"delivery", "[\"g\",\"consumer\"]"}, {"target", "consumer"}, {"attempts", 2}, {"reason", "exhausted"}, {"created", true}});
  EXPECT_EQ(rig.violations("FAN-22"), 1u);
  rig.of("app.fan.stored", {{"mailbox", "Mailbox/a"}, {"delivery", "[\"g\",\"consumer\"]"}, {"target", "consumer"}, {"attempts", 3}, {"reason", "exhausted"}, {"created", false}});
  EXPECT_EQ(rig.violations("FAN-22"), 1u);
}

TEST(FanoutChecksStream, AutoAcknowledgingAfterAThrowOrAfterTheBatchClosedViolatesFan20) {
  StreamRig rig;
  rig.config({{"ackOnReturn", true}, {"dlq", true}, {"maxAttempts", 3}});
  const json handed = {{"target", "consumer"}, {"deliveries", json::array({{{"row", StreamRig::kRow}, {"delivery", "d"}, {"attempt", 1}}})}};
  const json acked = {{"row", StreamRig::kRow}, {"generation", "g"}, {"attempt", 1}, {"how", "ackOnReturn"}, {"matched", true}};
  rig.of("fan.deliver", handed);
  rig.of("fan.ack.write", acked);
  rig.of("fan.delivered", {{"target", "consumer"}, {"failed", false}, {"threw", false}, {"timedOut", false}});
  EXPECT_EQ(rig.violations("FAN-20"), 0u);
  rig.of("fan.deliver", handed);
  rig.of("fan.ack.write", acked);
  rig.of("fan.delivered", {{"target", "consumer"}, {"failed", true}, {"threw", true}, {"timedOut", false}});
  EXPECT_EQ(rig.violations("FAN-20"), 1u);
  rig.of("fan.ack.write", acked);  // the batch is closed
  EXPECT_EQ(rig.violations("FAN-20"), 2u);
}

TEST(FanoutChecksStream, ASeqThatVanishedWithAResetMayBeReusedButNotACommittedOne) {
  StreamRig rig;
  rig.enqueue(0);
  rig.commit();
  rig.of("durability", {{"kept", 0}, {"unconfirmed", 1}});
  rig.enqueue(0, 2);
  EXPECT_EQ(rig.violations("FAN-05"), 0u) << "the first seq 0 never became durable";
  rig.commit(2);
  rig.enqueue(0, 2, "k2");
  EXPECT_EQ(rig.violations("FAN-05"), 1u);
}

TEST(FanoutChecksStream, DedupAgainstTheLiveManifestIsFan03) {
  StreamRig rig;
  rig.enqueue(0);
  rig.commit();
  rig.enqueue(1, 1, "k", "p", /*hit=*/true);
  EXPECT_EQ(rig.violations("FAN-03"), 0u) << "the same work under a live key is a duplicate";
  rig.enqueue(1, 1, "k", "other", /*hit=*/true);
  EXPECT_EQ(rig.violations("FAN-03"), 1u) << "other work under a live key taken for a duplicate";
  rig.enqueue(1, 1, "k", "p", /*hit=*/false);
  EXPECT_EQ(rig.violations("FAN-03"), 2u) << "a second manifest under a live key";
  rig.enqueue(2, 1, "unknown", "p", /*hit=*/true);
  EXPECT_EQ(rig.violations("FAN-03"), 3u) << "a duplicate of nothing live";
}

TEST(FanoutChecksStream, AManifestWhoseRowsAreAllRemovedIsNoLongerLive) {
  StreamRig rig;
  rig.enqueue(0);
  rig.commit();
  rig.of("fan.ack.write", {{"row", StreamRig::kRow}, {"generation", "g0"}, {"attempt", 1}, {"how", "ack"}, {"matched", true}});
  rig.commit();
  rig.enqueue(1, 1, "k", "other");
  EXPECT_EQ(rig.violations("FAN-03"), 0u) << "the key is free again once its only row is removed";
}

TEST(FanoutChecksStream, AnIncarnationWithoutATargetNeitherClaimsNorRemovesItsRowsFan18) {
  StreamRig rig;
  rig.of("app.fan.targets", {{"mailbox", "Mailbox/a"}, {"targets", json::array({"archive"})}});
  rig.claim(1);
  EXPECT_EQ(rig.violations("FAN-18"), 1u);
  rig.of("fan.ack.write", {{"row", StreamRig::kRow}, {"generation", "g"}, {"attempt", 1}, {"how", "ack"}, {"matched", true}});
  EXPECT_EQ(rig.violations("FAN-18"), 2u);
  rig.of("fan.postpone.write", {{"target", "archive"}, {"rows", json::array()}, {"until", 0}});
  EXPECT_EQ(rig.violations("FAN-18"), 3u) << "rows of a configured target are never postponed";
  rig.of("app.fan.targets", {{"mailbox", "Mailbox/a"}, {"targets", json::array({"archive", "consumer"})}}, 2);
  rig.claim(2, 2);
  EXPECT_EQ(rig.violations("FAN-18"), 3u) << "the next incarnation has the target again";
}

TEST(FanoutChecksStream, ABatchClosesAtItsDeadlineAndNothingSettlesAfterItFan21) {
  StreamRig rig;
  rig.config({{"attemptTimeoutMs", 100}});
  const std::string delivery = R"(["g","consumer"])";
  rig.of("fan.deliver", {{"target", "consumer"}, {"deliveries", json::array({{{"row", StreamRig::kRow}, {"delivery", delivery}, {"attempt", 1}}})}});
  rig.of("fan.delivered", {{"target", "consumer"}, {"failed", true}, {"threw", false}, {"timedOut", true}});
  EXPECT_EQ(rig.violations("FAN-21"), 1u) << "timed out one tick after it was handed out, not at its deadline";
  rig.of("app.fan.settle", {{"mailbox", "Mailbox/a"}, {"delivery", delivery}, {"attempt", 1}, {"action", "ack"}, {"second", false},
                            {"sinceHandedOut", 1'000}, {"result", "ok"}});
  EXPECT_EQ(rig.violations("FAN-21"), 2u) << "an ack called after the timeout took effect";
  rig.of("fan.deliver", {{"target", "consumer"}, {"deliveries", json::array({{{"row", StreamRig::kRow}, {"delivery", delivery}, {"attempt", 2}}})}});
  rig.of("fan.delivered", {{"target", "consumer"}, {"failed", false}, {"threw", false}, {"timedOut", false}});
  EXPECT_EQ(rig.violations("FAN-21"), 2u) << "closed in time";
}

TEST(FanoutChecksStream, AnUnsettledTimedOutAttemptIsRetriedWithFanoutTimeoutErrorFan21) {
  StreamRig rig;
  rig.config({{"attemptTimeoutMs", 1}});
  const std::string delivery = R"(["g","consumer"])";
  auto timeOut = [&](int64_t attempt) {
    rig.of("fan.deliver", {{"target", "consumer"}, {"deliveries", json::array({{{"row", StreamRig::kRow}, {"delivery", delivery}, {"attempt", attempt}}})}});
    rig.of("fan.delivered", {{"target", "consumer"}, {"failed", true}, {"threw", false}, {"timedOut", true}});
  };
  auto retried = [&](int64_t attempt, const char* error) {
    rig.of("fan.retry.write", {{"row", StreamRig::kRow}, {"generation", "g"}, {"attempt", attempt}, {"next", 0},
                               {"error", {{"name", error}, {"message", "m"}}}, {"matched", true}});
  };
  timeOut(1);
  retried(1, "FanoutTimeoutError");
  timeOut(2);
  retried(2, "Retry");  // the consumer's own retry
  timeOut(3);
  retried(3, "Error");
  rig.finish();
  EXPECT_EQ(rig.violations("FAN-21"), 1u);
}

TEST(FanoutChecksStream, TheLastRemovalAfterHealComesWithinTheRetryBoundFan26) {
  for (const int64_t late : {int64_t{1'000}, int64_t{10'000'000}}) {
    StreamRig rig;
    rig.config({{"maxAttempts", 1}, {"attemptTimeoutMs", 1'000}});
    rig.healed();
    rig.enqueue(0);
    rig.commit();
    rig.skip(late);
    rig.of("fan.ack.write", {{"row", StreamRig::kRow}, {"generation", "g0"}, {"attempt", 1}, {"how", "ack"}, {"matched", true}});
    rig.commit();
    rig.finish();
    EXPECT_EQ(rig.violations("FAN-26"), late > 1'000 ? 1u : 0u) << "removed " << late << " ms after the enqueue";
  }
}

TEST(FanoutChecksStream, ALoadSnapshotCountsTheStoredRowsFan13) {
  mutated::Checked checked = mutated::runMutated("fanout", {{"FAN", "Mailbox"}}, kSeed,
                                                 {"app.fan.load", 2, [](json& e) { e["pendingDeliveries"] = e["pendingDeliveries"].get<int64_t>() + 1; }});
  ASSERT_TRUE(checked.applied);
  EXPECT_GT(checked.violations("FAN-13"), 0u) << checked.examples();
}

}  // namespace
}  // namespace durasim
