// The outbox's executable spec (model/outbox_model.h) against outbox.md: versions across deletes,
// restaging, due order and batch size, fencing of claims, acknowledgements and reschedules by
// generation and attempt, postponement of an unattached channel, and the max-version sink.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "model/outbox_model.h"

namespace durasim::model {
namespace {

const OutboxModel::Key kX{"c", "x"};

std::vector<std::string> keysOf(const std::vector<OutboxRow>& rows) {
  std::vector<std::string> keys;
  for (const OutboxRow& row : rows) keys.push_back(row.key);
  return keys;
}

TEST(OutboxModel, VersionsKeepIncreasingAcrossAcknowledgedDeletes) {
  OutboxModel m;
  EXPECT_EQ(m.stage("c", "x", "1", "g1", 0, 0), 1);
  EXPECT_EQ(m.stage("d", "x", "1", "g2", 0, 0), 2) << "object-wide, across channels";
  EXPECT_TRUE(m.acknowledge(kX, "g1"));
  EXPECT_TRUE(m.acknowledge({"d", "x"}, "g2"));
  EXPECT_TRUE(m.rows().empty());
  EXPECT_EQ(m.stage("c", "x", "2", "g3", 0, 0), 3);
}

TEST(OutboxModel, RestagingReplacesTheRowWhateverItsState) {
  OutboxModel m;
  m.stage("c", "x", "1", "g1", 0, 0);
  ASSERT_TRUE(m.claim(kX, "g1", 0, 60'000));
  ASSERT_TRUE(m.reschedule(kX, "g1", 1, 5'000, "Error", "down"));
  m.stage("c", "x", "2", "g2", 100, 0);
  const OutboxRow& row = m.rows().at(kX);
  EXPECT_EQ(row.version, 2);
  EXPECT_EQ(row.generation, "g2");
  EXPECT_EQ(row.attempt, 0);
  EXPECT_EQ(row.nextAttemptAt, 100);
  EXPECT_FALSE(row.lastError.has_value());
}

TEST(OutboxModel, DueRowsAreFirstStagesBeforeRetriesInVersionOrderAtMostTheBatch) {
  OutboxModel m;
  m.stage("c", "a", "1", "ga", 0, 0);
  m.stage("c", "b", "1", "gb", 0, 0);
  m.stage("other", "z", "1", "gz", 0, 0);
  ASSERT_TRUE(m.claim({"c", "a"}, "ga", 0, 10));
  ASSERT_TRUE(m.reschedule({"c", "a"}, "ga", 1, 10, "Retry", "Retried by publisher"));
  m.stage("c", "c", "1", "gc", 5, 0);
  m.stage("c", "late", "1", "gl", 50, 0);
  EXPECT_EQ(keysOf(m.due("c", 20, 10)), (std::vector<std::string>{"b", "c", "a"}));
  EXPECT_EQ(keysOf(m.due("c", 20, 2)), (std::vector<std::string>{"b", "c"}));
}

TEST(OutboxModel, ClaimsReschedulesAndAcknowledgementsAreFenced) {
  OutboxModel m;
  m.stage("c", "x", "1", "g1", 0, 0);
  ASSERT_TRUE(m.claim(kX, "g1", 0, 60'000));
  EXPECT_FALSE(m.claim(kX, "g1", 0, 60'000)) << "the attempt moved on";
  m.stage("c", "x", "2", "g2", 10, 0);
  EXPECT_FALSE(m.reschedule(kX, "g1", 1, 99, "Error", "late")) << "restaged meanwhile";
  EXPECT_FALSE(m.acknowledge(kX, "g1")) << "an older publication never deletes the newer stage";
  EXPECT_EQ(m.rows().at(kX).generation, "g2");
  EXPECT_TRUE(m.acknowledge(kX, "g2"));
}

TEST(OutboxModel, AnUnattachedChannelsDueRowsArePostponedWithTheirAttempt) {
  OutboxModel m;
  m.stage("gone", "x", "1", "g1", 0, 0);
  m.stage("gone", "y", "1", "g2", 1, 1'000'000);  // due at 1,000,000
  m.stage("here", "z", "1", "g3", 0, 0);
  ASSERT_TRUE(m.claim({"gone", "x"}, "g1", 0, 10));
  EXPECT_EQ(m.postpone("gone", 100), 1);
  EXPECT_EQ(m.rows().at({"gone", "x"}).nextAttemptAt, 100 + kOutboxUnattachedDelayMs);
  EXPECT_EQ(m.rows().at({"gone", "x"}).attempt, 1);
  EXPECT_EQ(m.rows().at({"here", "z"}).nextAttemptAt, 0) << "other channels untouched";
  EXPECT_EQ(m.nextPendingAt(), 0);
}

TEST(OutboxModel, BatchDelayRoundsTheFirstDueTimeUp) {
  OutboxModel m;
  m.stage("c", "x", "1", "g1", 1'500, 1'000);
  m.stage("c", "y", "1", "g2", 2'000, 1'000);
  EXPECT_EQ(m.rows().at(kX).nextAttemptAt, 2'000);
  EXPECT_EQ(m.rows().at({"c", "y"}).nextAttemptAt, 2'000) << "a stage on the boundary is due at once";
}

TEST(OutboxModel, TheMaxVersionSinkNeverRegressesAndIgnoresRepeats) {
  MaxVersionSink sink;
  EXPECT_TRUE(sink.accept(kX, 2, "two"));
  EXPECT_FALSE(sink.accept(kX, 1, "one")) << "an old publication landing late";
  EXPECT_FALSE(sink.accept(kX, 2, "two")) << "a repeat after a crash";
  EXPECT_EQ(sink.held(kX), (MaxVersionSink::Held{2, "two"}));
  EXPECT_TRUE(sink.accept(kX, 5, "five"));
  EXPECT_FALSE(sink.held({"c", "other"}).has_value());
}

}  // namespace
}  // namespace durasim::model
