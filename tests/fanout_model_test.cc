// The fanout model (model/fanout_model.h) against fanout.md: enqueue, dedup and conflicts, the
// fenced commit points, the due order, the first due time and the accounting predicate.
#include <gtest/gtest.h>

#include <string>
#include <tuple>
#include <vector>

#include "model/fanout_model.h"

namespace durasim::model {
namespace {

const std::vector<std::string> kTargets{"a", "b"};

std::string rowOf(const std::string& key, const std::string& target) {
  FanoutDelivery row;
  row.key = key;
  row.target = target;
  return row.rowId();
}

TEST(FanoutModel, FirstAttemptAtRoundsUpToTheBatchWindow) {
  EXPECT_EQ(firstAttemptAt(1234, 0), 1234);
  EXPECT_EQ(firstAttemptAt(1000, 1000), 1000) << "a time on a boundary is due at once";
  EXPECT_EQ(firstAttemptAt(1001, 1000), 2000);
  EXPECT_EQ(firstAttemptAt(1999, 1000), 2000);
  EXPECT_EQ(firstAttemptAt(0, 250), 0);
}

TEST(FanoutModel, EnqueueIsAllOrNothingWithDedupHitsAndConflicts) {
  FanoutModel m;
  FanoutModel::Enqueued first = m.enqueue({{"m1", "k1", "p1"}, {"m2", "k2", "p2"}}, kTargets, 10, 0, {"g1", "g2"});
  EXPECT_FALSE(first.rejected);
  EXPECT_EQ(first.registeredRows.size(), 4u);
  EXPECT_EQ(m.manifests().at("k2").seq, 1);
  EXPECT_EQ(m.pendingCount(), 4);
  // A hit writes nothing; the seq counter moves only for new manifests.
  FanoutModel::Enqueued hit = m.enqueue({{"m1", "k1", "p1"}, {"m3", "k3", "p3"}}, kTargets, 20, 0, {"x", "g3"});
  EXPECT_FALSE(hit.rejected);
  EXPECT_EQ(hit.registeredRows.size(), 2u);
  EXPECT_EQ(m.manifests().at("k1").generation, "g1");
  EXPECT_EQ(m.manifests().at("k3").seq, 2);
  // Different work under a live key (another payload, id or target set) rejects the whole batch.
  const auto before = m.deliveries();
  for (const auto& [id, payload, targets] : std::vector<std::tuple<std::string, std::string, std::vector<std::string>>>{
           {"m1", "other", kTargets}, {"other", "p1", kTargets}, {"m1", "p1", {"a"}}}) {
    FanoutModel::Enqueued conflict = m.enqueue({{"m9", "k9", "p9"}, {id, "k1", payload}}, targets, 30, 0, {"g9", "g10"});
    EXPECT_TRUE(conflict.rejected);
    EXPECT_EQ(conflict.conflictKey, "k1");
    EXPECT_EQ(m.deliveries(), before);
    EXPECT_EQ(m.nextSeq(), 3);
  }
}

TEST(FanoutModel, ClaimsAreFencedAndBoundedByMaxAttempts) {
  FanoutModel m;
  m.enqueue({{"m1", "k1", "p"}}, {"a"}, 0, 0, {"g1"});
  const std::string row = rowOf("k1", "a");
  EXPECT_EQ(m.claim(row, "g1", 0, 2, 500), 1);
  EXPECT_EQ(m.delivery(row)->nextAttemptAt, 500);
  EXPECT_EQ(m.claim(row, "g1", 0, 2, 600), std::nullopt) << "the listed attempt is stale";
  EXPECT_EQ(m.claim(row, "other", 1, 2, 600), std::nullopt) << "another generation";
  EXPECT_EQ(m.claim(row, "g1", 1, 2, 600), 2);
  EXPECT_EQ(m.claim(row, "g1", 2, 2, 700), std::nullopt) << "attempt >= maxAttempts is never claimed";
}

TEST(FanoutModel, RemovalsKeepTheManifestAccountingAndThePhaseGate) {
  FanoutModel m;
  m.enqueue({{"m1", "k1", "p"}}, kTargets, 0, 0, {"g1"});
  const std::string a = rowOf("k1", "a"), b = rowOf("k1", "b");
  m.claim(a, "g1", 0, 5, 100);
  m.claim(b, "g1", 0, 5, 100);
  EXPECT_FALSE(m.ack(a, "g1", 2)) << "a stale attempt";
  EXPECT_TRUE(m.ack(a, "g1", 1));
  EXPECT_EQ(m.manifests().at("k1").remaining, 1);
  EXPECT_TRUE(m.deadLetterIntent(b, "g1", 1, "explicit", 50, 60, std::nullopt));
  EXPECT_EQ(m.delivery(b)->nextAttemptAt, 60 + kFanoutDlqRetryMs);
  EXPECT_FALSE(m.ack(b, "g1", 1)) << "an ack never removes a dead_letter row";
  EXPECT_FALSE(m.retry(b, "g1", 1, 0, "Error", "x")) << "nor does a retry turn it back";
  EXPECT_EQ(m.claim(b, "g1", 1, 5, 0), std::nullopt) << "nor a claim";
  EXPECT_TRUE(m.deadLetterIntent(b, "g1", 1, "explicit", 50, 70, std::nullopt)) << "the intent may repeat";
  EXPECT_TRUE(m.removeDeadLettered(b, "g1", 1));
  EXPECT_TRUE(m.manifests().empty()) << "the manifest goes with its last row";
  EXPECT_EQ(FanoutModel::accounting(m.manifests(), m.deliveries()), std::nullopt);
}

TEST(FanoutModel, DueOrderPutsFirstDeliveriesAheadOfRetriesInSeqOrder) {
  FanoutModel m;
  m.enqueue({{"r1", "r1", "p"}, {"r2", "r2", "p"}}, {"a"}, 0, 0, {"g1", "g2"});
  m.claim(rowOf("r1", "a"), "g1", 0, 5, 10);
  m.claim(rowOf("r2", "a"), "g2", 0, 5, 10);
  m.enqueue({{"f1", "f1", "p"}, {"f2", "f2", "p"}}, {"a"}, 5, 0, {"g3", "g4"});
  std::vector<std::string> keys;
  for (const FanoutDelivery* d : m.due("a", 20, 3)) keys.push_back(d->key);
  EXPECT_EQ(keys, (std::vector<std::string>{"f1", "f2", "r1"}));
  EXPECT_TRUE(m.due("b", 20, 3).empty());
  EXPECT_EQ(m.due("a", 4, 10).size(), 0u) << "nothing due before its time";
}

TEST(FanoutModel, AccountingFindsEachKindOfDisagreement) {
  FanoutModel m;
  m.enqueue({{"m1", "k1", "p"}}, kTargets, 0, 0, {"g1"});
  auto manifests = m.manifests();
  auto deliveries = m.deliveries();
  EXPECT_EQ(FanoutModel::accounting(manifests, deliveries), std::nullopt);
  auto wrongCount = manifests;
  wrongCount.at("k1").remaining = 3;
  EXPECT_EQ(FanoutModel::accounting(wrongCount, deliveries), "manifest k1 has remaining 3 for 2 live rows");
  auto orphan = deliveries;
  orphan.erase(rowOf("k1", "a"));
  FanoutDelivery stray = deliveries.at(rowOf("k1", "a"));
  stray.key = "gone";
  orphan[stray.rowId()] = stray;
  EXPECT_EQ(FanoutModel::accounting(manifests, orphan), "delivery row " + stray.rowId() + " has no manifest");
  auto otherGeneration = deliveries;
  otherGeneration.at(rowOf("k1", "b")).generation = "g0";
  EXPECT_EQ(FanoutModel::accounting(manifests, otherGeneration), "delivery row " + rowOf("k1", "b") + " is of generation g0, its manifest of g1");
  auto foreignTarget = deliveries;
  FanoutDelivery c = deliveries.at(rowOf("k1", "b"));
  foreignTarget.erase(rowOf("k1", "b"));
  c.target = "c";
  foreignTarget[c.rowId()] = c;
  // FAN-04 is told from FAN-02 by this wording.
  EXPECT_EQ(FanoutModel::accounting(manifests, foreignTarget), "manifest k1 has a row for c, which is not among its targets");
  auto twoRowsOneTarget = foreignTarget;
  twoRowsOneTarget.erase(c.rowId());
  FanoutDelivery again = deliveries.at(rowOf("k1", "a"));
  again.generation = "g1";
  twoRowsOneTarget["another id of (k1, a)"] = again;
  EXPECT_EQ(FanoutModel::accounting(manifests, twoRowsOneTarget), "manifest k1 has remaining 2 for 1 live rows") << "rows count by distinct target";
}

}  // namespace
}  // namespace durasim::model
