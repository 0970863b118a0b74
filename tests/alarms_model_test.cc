// Unit tests of the named-alarms model (model/alarms_model.h): every commit point with its fence
// (generation, attempt, status), failed as absorbing, replacement, the strict purge cutoff, the
// terminal triggers of ALM-06, the physical-alarm window of SCH-02 and the ALM-05 predicate.
#include "model/alarms_model.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

namespace durasim::model {
namespace {

constexpr int64_t kNow = 1'000'000;

AlarmPolicy fixedDelay(double ms, int64_t maxAttempts = kDefaultMaxAttempts) {
  AlarmPolicy policy;
  policy.maxAttempts = maxAttempts;
  policy.delay = [ms](int64_t) { return ms; };
  return policy;
}

int64_t maxFive(const std::string&) { return 5; }

// ---------------------------------------------------------------------------------------------
// schedule, replacement (ALM-08)

TEST(AlarmsModel, ScheduleCreatesAFreshPendingRow) {
  AlarmsModel m;
  m.schedule("a", kNow + 500, kNow, "g1");
  const AlarmRow* row = m.row("a");
  ASSERT_NE(row, nullptr);
  EXPECT_EQ(row->generation, "g1");
  EXPECT_EQ(row->status, AlarmStatus::pending);
  EXPECT_EQ(row->scheduledAt, kNow + 500);
  EXPECT_EQ(row->nextAttemptAt, kNow + 500);
  EXPECT_EQ(row->nextAttemptAtMax, kNow + 500);
  EXPECT_EQ(row->attempt, 0);
  EXPECT_FALSE(row->lastErrorName.has_value());
  EXPECT_EQ(row->createdAt, kNow);
}

TEST(AlarmsModel, ReplacementResetsAttemptErrorsAndGenerationWhateverTheStatus) {
  AlarmsModel m;
  m.setPolicy("a", fixedDelay(100, 1));
  m.schedule("a", kNow, kNow, "g1");
  ASSERT_EQ(m.claim("a", "g1"), 1);
  ASSERT_TRUE(m.fail("a", "g1", 1, ErrorKind::retryable, kNow + 5));
  ASSERT_EQ(m.row("a")->status, AlarmStatus::failed);

  m.schedule("a", kNow + 9000, kNow + 10, "g2");
  const AlarmRow* row = m.row("a");
  EXPECT_EQ(row->generation, "g2");
  EXPECT_EQ(row->status, AlarmStatus::pending);
  EXPECT_EQ(row->attempt, 0);
  EXPECT_FALSE(row->lastErrorName.has_value());
  EXPECT_EQ(row->nextAttemptAt, kNow + 9000);
  EXPECT_EQ(row->createdAt, kNow + 10);
  EXPECT_EQ(m.rows().size(), 1u);
}

TEST(AlarmsModel, AnOlderGenerationCanNeitherDeleteNorOverwriteItsReplacement) {
  AlarmsModel m;
  m.schedule("a", kNow, kNow, "g1");
  ASSERT_EQ(m.claim("a", "g1"), 1);
  m.schedule("a", kNow + 100, kNow + 1, "g2");
  EXPECT_FALSE(m.succeed("a", "g1", 1));
  EXPECT_FALSE(m.fail("a", "g1", 1, ErrorKind::nonRetryable, kNow + 2));
  EXPECT_FALSE(m.exhaust("a", "g1", kNow + 2));
  EXPECT_FALSE(m.claim("a", "g1").has_value());
  EXPECT_EQ(m.row("a")->generation, "g2");
  EXPECT_EQ(m.row("a")->attempt, 0);
  EXPECT_EQ(m.row("a")->status, AlarmStatus::pending);
}

TEST(AlarmsModel, ScheduleRejectsAnUnsafeTimeWithoutChangingAnything) {
  AlarmsModel m;
  m.schedule("a", 5, kNow, "g1");
  EXPECT_THROW(m.schedule("a", -1, kNow, "g2"), std::out_of_range);
  EXPECT_THROW(m.schedule("a", kMaxSafeInteger + 1, kNow, "g2"), std::out_of_range);
  EXPECT_EQ(m.row("a")->generation, "g1");
  EXPECT_NO_THROW(m.schedule("b", 0, kNow, "g3"));
  EXPECT_NO_THROW(m.schedule("c", kMaxSafeInteger, kNow, "g4"));
}

// ---------------------------------------------------------------------------------------------
// cancel (ALM-11), purge (ALM-10)

TEST(AlarmsModel, CancelDeletesAnyGenerationAndStatusAndSaysWhetherARowExisted) {
  AlarmsModel m;
  EXPECT_FALSE(m.cancel("a"));
  m.schedule("a", kNow, kNow, "g1");
  m.schedule("b", kNow, kNow, "g2");
  ASSERT_EQ(m.claim("b", "g2"), 1);
  ASSERT_TRUE(m.fail("b", "g2", 1, ErrorKind::nonRetryable, kNow));
  EXPECT_TRUE(m.cancel("a"));
  EXPECT_TRUE(m.cancel("b"));
  EXPECT_FALSE(m.cancel("a"));
  EXPECT_TRUE(m.rows().empty());
}

TEST(AlarmsModel, ACancelledRunningAttemptSettlesNothing) {
  AlarmsModel m;
  m.schedule("a", kNow, kNow, "g1");
  ASSERT_EQ(m.claim("a", "g1"), 1);
  ASSERT_TRUE(m.cancel("a"));
  EXPECT_FALSE(m.succeed("a", "g1", 1));
  EXPECT_FALSE(m.fail("a", "g1", 1, ErrorKind::retryable, kNow));
  EXPECT_TRUE(m.rows().empty());
}

TEST(AlarmsModel, PurgeCutoffIsStrict) {
  AlarmsModel m;
  m.schedule("a", kNow, 100, "g1");
  m.schedule("b", kNow, 200, "g2");
  m.schedule("c", kNow, 201, "g3");
  EXPECT_EQ(m.purgeBefore(100), 0);
  EXPECT_EQ(m.purgeBefore(200), 1);  // created_at 100 only; 200 == before survives
  EXPECT_EQ(m.row("a"), nullptr);
  EXPECT_NE(m.row("b"), nullptr);
  EXPECT_EQ(m.purgeBefore(202), 2);
  EXPECT_TRUE(m.rows().empty());
  EXPECT_EQ(m.purgeBefore(0), 0);
}

TEST(AlarmsModel, PurgeDeletesFailedRowsTooAndRejectsAnUnsafeCutoff) {
  AlarmsModel m;
  m.schedule("a", kNow, 100, "g1");
  ASSERT_EQ(m.claim("a", "g1"), 1);
  ASSERT_TRUE(m.fail("a", "g1", 1, ErrorKind::nonRetryable, kNow));
  EXPECT_THROW(m.purgeBefore(-1), std::out_of_range);
  EXPECT_THROW(m.purgeBefore(kMaxSafeInteger + 1), std::out_of_range);
  EXPECT_NE(m.row("a"), nullptr);
  EXPECT_EQ(m.purgeBefore(kMaxSafeInteger), 1);
}

// ---------------------------------------------------------------------------------------------
// claim, succeed (fencing by generation and attempt, ALM-03)

TEST(AlarmsModel, ClaimCountsAttemptsUpToMaxAndLeavesTheDueTimeAlone) {
  AlarmsModel m;
  m.schedule("a", kNow, kNow, "g1");
  for (int64_t expected = 1; expected <= 3; ++expected) EXPECT_EQ(m.claim("a", "g1", 3), expected);
  EXPECT_FALSE(m.claim("a", "g1", 3).has_value()) << "refused at attempt >= maxAttempts";
  EXPECT_EQ(m.row("a")->attempt, 3);
  EXPECT_EQ(m.row("a")->nextAttemptAt, kNow);
  EXPECT_EQ(m.row("a")->status, AlarmStatus::pending);
  EXPECT_EQ(m.claim("a", "g1", 4), 4) << "the bound is the caller's maxAttempts";
}

TEST(AlarmsModel, ClaimWithoutMaxUsesTheNamesPolicy) {
  AlarmsModel m;
  m.setPolicy("a", fixedDelay(1, 2));
  m.schedule("a", kNow, kNow, "g1");
  m.schedule("b", kNow, kNow, "g2");
  EXPECT_EQ(m.claim("a", "g1"), 1);
  EXPECT_EQ(m.claim("a", "g1"), 2);
  EXPECT_FALSE(m.claim("a", "g1").has_value());
  for (int64_t i = 1; i <= kDefaultMaxAttempts; ++i) EXPECT_EQ(m.claim("b", "g2"), i);
  EXPECT_FALSE(m.claim("b", "g2").has_value());
}

TEST(AlarmsModel, ClaimIsFencedByGenerationAndRowPresence) {
  AlarmsModel m;
  EXPECT_FALSE(m.claim("a", "g1", 5).has_value());
  m.schedule("a", kNow, kNow, "g1");
  EXPECT_FALSE(m.claim("a", "g0", 5).has_value());
  EXPECT_EQ(m.row("a")->attempt, 0);
}

TEST(AlarmsModel, SuccessDeletesOnlyTheCurrentAttemptOfTheCurrentGeneration) {
  AlarmsModel m;
  m.schedule("a", kNow, kNow, "g1");
  ASSERT_EQ(m.claim("a", "g1"), 1);
  ASSERT_EQ(m.claim("a", "g1"), 2);  // attempt 1 was lost in a crash: its late success is stale
  EXPECT_FALSE(m.succeed("a", "g1", 1));
  EXPECT_FALSE(m.succeed("a", "g2", 2));
  EXPECT_NE(m.row("a"), nullptr);
  EXPECT_TRUE(m.succeed("a", "g1", 2));
  EXPECT_EQ(m.row("a"), nullptr);
  EXPECT_FALSE(m.succeed("a", "g1", 2));
}

// ---------------------------------------------------------------------------------------------
// fail: retries and terminal triggers (ALM-06, SCH-13)

TEST(AlarmsModel, ARetryableFailureWithAFixedDelayIsRetriedAtNowPlusTheRoundedDelay) {
  AlarmsModel m;
  m.setPolicy("a", fixedDelay(1999.5));
  m.schedule("a", kNow, kNow, "g1");
  ASSERT_EQ(m.claim("a", "g1"), 1);
  EXPECT_TRUE(m.fail("a", "g1", 1, ErrorKind::retryable, kNow + 7, "TypeError"));
  const AlarmRow* row = m.row("a");
  EXPECT_EQ(row->status, AlarmStatus::pending);
  EXPECT_EQ(row->nextAttemptAt, kNow + 7 + 2000);
  EXPECT_EQ(row->nextAttemptAtMax, kNow + 7 + 2000);
  EXPECT_EQ(row->lastErrorName, "TypeError");
  EXPECT_EQ(row->attempt, 1);
  EXPECT_EQ(row->scheduledAt, kNow);
}

TEST(AlarmsModel, TheLastAllowedAttemptFailsTerminallyWithTheOriginalError) {
  AlarmsModel m;
  m.setPolicy("a", fixedDelay(1000, 2));
  m.schedule("a", kNow, kNow, "g1");
  ASSERT_EQ(m.claim("a", "g1"), 1);
  ASSERT_TRUE(m.fail("a", "g1", 1, ErrorKind::retryable, kNow));
  ASSERT_EQ(m.claim("a", "g1"), 2);
  EXPECT_TRUE(m.fail("a", "g1", 2, ErrorKind::retryable, kNow + 1000));
  const AlarmRow* row = m.row("a");
  EXPECT_EQ(row->status, AlarmStatus::failed);
  EXPECT_EQ(row->nextAttemptAt, kNow + 1000);
  EXPECT_EQ(row->lastErrorName, kErrorName);
}

TEST(AlarmsModel, NonRetryableIsTerminalAtOnce) {
  AlarmsModel m;
  m.setPolicy("a", fixedDelay(1000));
  m.schedule("a", kNow, kNow, "g1");
  ASSERT_EQ(m.claim("a", "g1"), 1);
  EXPECT_TRUE(m.fail("a", "g1", 1, ErrorKind::nonRetryable, kNow + 3));
  EXPECT_EQ(m.row("a")->status, AlarmStatus::failed);
  EXPECT_EQ(m.row("a")->nextAttemptAt, kNow + 3);
  EXPECT_EQ(m.row("a")->lastErrorName, kNonRetryableErrorName);
}

TEST(AlarmsModel, ATimeoutIsTerminalUnlessRetryTimeoutsIsSet) {
  AlarmsModel m;
  m.setPolicy("plain", fixedDelay(1000));
  AlarmPolicy retrying = fixedDelay(1000);
  retrying.retryTimeouts = true;
  m.setPolicy("retrying", retrying);
  m.schedule("plain", kNow, kNow, "g1");
  m.schedule("retrying", kNow, kNow, "g2");
  ASSERT_EQ(m.claim("plain", "g1"), 1);
  ASSERT_EQ(m.claim("retrying", "g2"), 1);
  EXPECT_TRUE(m.fail("plain", "g1", 1, ErrorKind::timeout, kNow + 10));
  EXPECT_TRUE(m.fail("retrying", "g2", 1, ErrorKind::timeout, kNow + 10));
  EXPECT_EQ(m.row("plain")->status, AlarmStatus::failed);
  EXPECT_EQ(m.row("plain")->lastErrorName, kTimeoutErrorName);
  EXPECT_EQ(m.row("retrying")->status, AlarmStatus::pending);
  EXPECT_EQ(m.row("retrying")->nextAttemptAt, kNow + 1010);
  EXPECT_EQ(m.row("retrying")->lastErrorName, kTimeoutErrorName);
}

TEST(AlarmsModel, AnUnusableDelayIsTerminalWithARetryPolicyError) {
  const std::vector<std::function<double(int64_t)>> bad = {
      [](int64_t) { return std::numeric_limits<double>::quiet_NaN(); },
      [](int64_t) { return std::numeric_limits<double>::infinity(); },
      [](int64_t) { return -0.1; },  // negative before rounding, although it rounds to 0
      [](int64_t) { return 1e300; },
      [](int64_t) -> double { throw std::runtime_error("delay failed"); },
  };
  for (std::size_t i = 0; i < bad.size(); ++i) {
    AlarmsModel m;
    AlarmPolicy policy;
    policy.delay = bad[i];
    m.setPolicy("a", policy);
    m.schedule("a", kNow, kNow, "g1");
    ASSERT_EQ(m.claim("a", "g1"), 1);
    EXPECT_TRUE(m.fail("a", "g1", 1, ErrorKind::retryable, kNow + 1)) << i;
    EXPECT_EQ(m.row("a")->status, AlarmStatus::failed) << i;
    EXPECT_EQ(m.row("a")->lastErrorName, kRetryPolicyErrorName) << i;
    EXPECT_EQ(m.row("a")->nextAttemptAt, kNow + 1) << i;
  }
}

TEST(AlarmsModel, ADelayPastTheSafeRangeFromNowIsTerminalButZeroIsARetry) {
  AlarmsModel m;
  m.setPolicy("edge", fixedDelay(10));
  m.setPolicy("zero", fixedDelay(0.4));  // rounds to 0
  m.schedule("edge", 0, 0, "g1");
  m.schedule("zero", 0, 0, "g2");
  ASSERT_EQ(m.claim("edge", "g1"), 1);
  ASSERT_EQ(m.claim("zero", "g2"), 1);
  EXPECT_TRUE(m.fail("edge", "g1", 1, ErrorKind::retryable, kMaxSafeInteger - 5));
  EXPECT_EQ(m.row("edge")->lastErrorName, kRetryPolicyErrorName);
  EXPECT_TRUE(m.fail("zero", "g2", 1, ErrorKind::retryable, kNow));
  EXPECT_EQ(m.row("zero")->status, AlarmStatus::pending);
  EXPECT_EQ(m.row("zero")->nextAttemptAt, kNow);
}

TEST(AlarmsModel, PolicyInvalidIsTerminalButTheAttemptBoundComesFirst) {
  AlarmsModel m;
  m.setPolicy("a", fixedDelay(1000, 1));
  m.setPolicy("b", fixedDelay(1000, 3));
  m.schedule("a", kNow, kNow, "g1");
  m.schedule("b", kNow, kNow, "g2");
  ASSERT_EQ(m.claim("a", "g1"), 1);
  ASSERT_EQ(m.claim("b", "g2"), 1);
  EXPECT_TRUE(m.fail("a", "g1", 1, ErrorKind::policyInvalid, kNow, "RangeError"));
  EXPECT_TRUE(m.fail("b", "g2", 1, ErrorKind::policyInvalid, kNow, "RangeError"));
  EXPECT_EQ(m.row("a")->lastErrorName, "RangeError") << "attempt >= maxAttempts: the original error";
  EXPECT_EQ(m.row("b")->lastErrorName, kRetryPolicyErrorName);
  EXPECT_EQ(m.row("b")->status, AlarmStatus::failed);
}

TEST(AlarmsModel, TheDefaultDelayLeavesARangeThatAnObservationPins) {
  EXPECT_EQ(defaultDelayRange(1), (TimeRange{500, 1000}));
  EXPECT_EQ(defaultDelayRange(2), (TimeRange{1000, 2000}));
  EXPECT_EQ(defaultDelayRange(10), (TimeRange{150000, 300000}));
  EXPECT_EQ(defaultDelayRange(60), (TimeRange{150000, 300000}));

  AlarmsModel m;
  m.schedule("a", kNow, kNow, "g1");
  ASSERT_EQ(m.claim("a", "g1"), 1);
  ASSERT_EQ(m.claim("a", "g1"), 2);
  ASSERT_TRUE(m.fail("a", "g1", 2, ErrorKind::retryable, kNow + 1));
  EXPECT_EQ(m.row("a")->nextAttemptAt, kNow + 1 + 1000);
  EXPECT_EQ(m.row("a")->nextAttemptAtMax, kNow + 1 + 2000);
  EXPECT_EQ(m.nextPending(), kNow + 1 + 1000) << "queries use the earliest possible time";
  EXPECT_FALSE(m.pinNextAttempt("a", "g1", kNow + 1 + 999));
  EXPECT_FALSE(m.pinNextAttempt("a", "g1", kNow + 1 + 2001));
  EXPECT_FALSE(m.pinNextAttempt("a", "g0", kNow + 1 + 1500));
  EXPECT_TRUE(m.pinNextAttempt("a", "g1", kNow + 1 + 1500));
  EXPECT_EQ(m.row("a")->nextAttemptAt, kNow + 1 + 1500);
  EXPECT_EQ(m.row("a")->nextAttemptAtMax, kNow + 1 + 1500);
}

TEST(AlarmsModel, DecideRetryStepsInOrder) {
  AlarmPolicy policy = fixedDelay(250, 3);
  EXPECT_EQ(decideRetry(policy, 1, ErrorKind::retryable, "E", 10).nextAttemptAt, (TimeRange{260, 260}));
  EXPECT_FALSE(decideRetry(policy, 2, ErrorKind::retryable, "E", 10).terminal);
  const RetryVerdict last = decideRetry(policy, 3, ErrorKind::retryable, "E", 10);
  EXPECT_TRUE(last.terminal);
  EXPECT_EQ(last.errorName, "E");
  EXPECT_EQ(last.nextAttemptAt, (TimeRange{10, 10}));
  EXPECT_EQ(decideRetry(policy, 1, ErrorKind::nonRetryable, "E", 10).errorName, kNonRetryableErrorName);
  policy.delay = [](int64_t attempt) -> double {
    if (attempt == 2) throw std::runtime_error("no");
    return 5;
  };
  EXPECT_EQ(decideRetry(policy, 2, ErrorKind::retryable, "E", 10).errorName, kRetryPolicyErrorName);
  EXPECT_EQ(decideRetry(policy, 3, ErrorKind::retryable, "E", 10).errorName, "E")
      << "the delay is not called at the bound";
}

TEST(AlarmsModel, FailIsFencedByGenerationAttemptAndStatus) {
  AlarmsModel m;
  m.setPolicy("a", fixedDelay(1000));
  m.schedule("a", kNow, kNow, "g1");
  ASSERT_EQ(m.claim("a", "g1"), 1);
  EXPECT_FALSE(m.fail("a", "g1", 2, ErrorKind::retryable, kNow));
  EXPECT_FALSE(m.fail("a", "gX", 1, ErrorKind::retryable, kNow));
  EXPECT_FALSE(m.fail("b", "g1", 1, ErrorKind::retryable, kNow));
  EXPECT_EQ(m.row("a")->lastErrorName, std::nullopt);
  EXPECT_TRUE(m.fail("a", "g1", 1, ErrorKind::retryable, kNow));
  ASSERT_EQ(m.claim("a", "g1"), 2);
  EXPECT_FALSE(m.fail("a", "g1", 1, ErrorKind::retryable, kNow + 1)) << "a stale attempt after a newer claim";
  EXPECT_TRUE(m.fail("a", "g1", 2, ErrorKind::nonRetryable, kNow + 1));
  EXPECT_FALSE(m.fail("a", "g1", 2, ErrorKind::retryable, kNow + 2)) << "a failed row is no longer pending";
  EXPECT_EQ(m.row("a")->lastErrorName, kNonRetryableErrorName);
}

// ---------------------------------------------------------------------------------------------
// failed is absorbing (ALM-04), exhaustion

TEST(AlarmsModel, FailedIsAbsorbingWithinAGeneration) {
  AlarmsModel m;
  m.schedule("a", kNow, kNow, "g1");
  ASSERT_EQ(m.claim("a", "g1"), 1);
  ASSERT_TRUE(m.fail("a", "g1", 1, ErrorKind::nonRetryable, kNow + 1));
  const AlarmRow before = *m.row("a");
  EXPECT_FALSE(m.claim("a", "g1", 100).has_value());
  EXPECT_FALSE(m.succeed("a", "g1", 1));
  EXPECT_FALSE(m.fail("a", "g1", 1, ErrorKind::retryable, kNow + 2));
  EXPECT_FALSE(m.exhaust("a", "g1", kNow + 2));
  EXPECT_EQ(*m.row("a"), before);
  EXPECT_EQ(m.nextPending(), std::nullopt);
  EXPECT_TRUE(m.dueNow(kNow + 100).empty());
}

TEST(AlarmsModel, ExhaustionNeedsAttemptAtTheBound) {
  AlarmsModel m;
  m.setPolicy("a", fixedDelay(1000, 2));
  m.schedule("a", kNow, kNow, "g1");
  ASSERT_EQ(m.claim("a", "g1"), 1);
  EXPECT_FALSE(m.exhaust("a", "g1", kNow));
  ASSERT_EQ(m.claim("a", "g1"), 2);  // the second attempt was lost: claimed, never settled
  EXPECT_FALSE(m.claim("a", "g1").has_value());
  EXPECT_FALSE(m.exhaust("a", "g2", kNow + 5));
  EXPECT_TRUE(m.exhaust("a", "g1", kNow + 5));
  const AlarmRow* row = m.row("a");
  EXPECT_EQ(row->status, AlarmStatus::failed);
  EXPECT_EQ(row->nextAttemptAt, kNow + 5);
  EXPECT_EQ(row->lastErrorName, kAttemptsExhaustedErrorName);
  EXPECT_EQ(row->attempt, 2);
  EXPECT_FALSE(m.exhaust("a", "g1", kNow + 6));
}

// ---------------------------------------------------------------------------------------------
// Queries: next pending, physical alarm window (SCH-01/02), due rows

TEST(AlarmsModel, NoPendingRowMeansNoAlarm) {
  AlarmsModel m;
  EXPECT_EQ(m.nextPending(), std::nullopt);
  EXPECT_EQ(m.physicalAlarmWindow(kNow, 15000), std::nullopt);
  EXPECT_EQ(m.nextToRun(), std::nullopt);
  m.schedule("a", kNow, kNow, "g1");
  ASSERT_EQ(m.claim("a", "g1"), 1);
  ASSERT_TRUE(m.fail("a", "g1", 1, ErrorKind::nonRetryable, kNow));
  EXPECT_EQ(m.physicalAlarmWindow(kNow, 15000), std::nullopt) << "failed rows do not drive the alarm";
}

TEST(AlarmsModel, TheAlarmWindowIsNextToTheLaterOfNextAndTheMinimumDelay) {
  AlarmsModel m;
  m.schedule("far", kNow + 60000, kNow, "g1");
  EXPECT_EQ(m.physicalAlarmWindow(kNow, 15000), (TimeRange{kNow + 60000, kNow + 60000}));
  m.schedule("near", kNow + 2000, kNow, "g2");
  EXPECT_EQ(m.physicalAlarmWindow(kNow, 15000), (TimeRange{kNow + 2000, kNow + 15000}));
  EXPECT_EQ(m.physicalAlarmWindow(kNow, 1000), (TimeRange{kNow + 2000, kNow + 2000}));
  m.schedule("overdue", kNow - 50, kNow, "g3");
  EXPECT_EQ(m.physicalAlarmWindow(kNow, 1000), (TimeRange{kNow - 50, kNow + 1000}));
}

TEST(AlarmsModel, DueNowOrdersByNextAttemptThenNameAndStopsAtTheLimit) {
  AlarmsModel m;
  m.schedule("b", kNow, kNow, "g1");
  m.schedule("a", kNow, kNow, "g2");
  m.schedule("c", kNow - 1, kNow, "g3");
  m.schedule("later", kNow + 1, kNow, "g4");
  EXPECT_EQ(m.dueNow(kNow), (std::vector<std::string>{"c", "a", "b"}));
  EXPECT_EQ(m.dueNow(kNow - 2), (std::vector<std::string>{}));
  EXPECT_EQ(m.nextToRun(), (AlarmsModel::NextRun{kNow - 1, "c"}));

  AlarmsModel many;
  for (int i = 0; i < 150; ++i) {
    char name[8], generation[8];
    std::snprintf(name, sizeof name, "n%03d", i);
    std::snprintf(generation, sizeof generation, "g%d", i);
    many.schedule(name, kNow - i % 3, kNow, generation);
  }
  const std::vector<std::string> due = many.dueNow(kNow);
  ASSERT_EQ(due.size(), kAlarmPassLimit);
  EXPECT_EQ(due.front(), "n002");  // next_attempt_at kNow - 2 first, then by name
  EXPECT_EQ(many.row(due.back())->nextAttemptAt, kNow - 1);
}

// ---------------------------------------------------------------------------------------------
// ALM-05

TEST(AlarmsModel, FieldConsistencyHoldsOverAnyRunOfOperations) {
  AlarmsModel m;
  m.setPolicy("f", fixedDelay(10, 2));
  m.schedule("f", kNow, kNow, "g1");
  m.schedule("o", kNow, kNow, "g2");
  EXPECT_EQ(m.fieldConsistency(maxFive), std::nullopt);
  ASSERT_EQ(m.claim("f", "g1"), 1);
  ASSERT_TRUE(m.fail("f", "g1", 1, ErrorKind::retryable, kNow));
  ASSERT_EQ(m.claim("f", "g1"), 2);
  ASSERT_TRUE(m.fail("f", "g1", 2, ErrorKind::retryable, kNow + 10));
  EXPECT_EQ(m.fieldConsistency([&](const std::string& name) { return m.maxAttemptsOf(name); }), std::nullopt);
}

TEST(AlarmsModel, FieldConsistencyNamesTheFirstViolation) {
  auto check = [](AlarmRow row, int64_t max = 5) {
    return AlarmsModel::fieldConsistency({row}, [max](const std::string&) { return max; });
  };
  AlarmRow ok;
  ok.name = "a";
  ok.generation = "g";
  ok.scheduledAt = ok.nextAttemptAt = ok.nextAttemptAtMax = 10;
  EXPECT_EQ(check(ok), std::nullopt);

  AlarmRow failedNoError = ok;
  failedNoError.status = AlarmStatus::failed;
  failedNoError.attempt = 1;
  ASSERT_TRUE(check(failedNoError).has_value());
  EXPECT_NE(check(failedNoError)->find("without last_error_name"), std::string::npos);

  AlarmRow failedUnclaimed = failedNoError;
  failedUnclaimed.lastErrorName = "Error";
  failedUnclaimed.attempt = 0;
  EXPECT_TRUE(check(failedUnclaimed).has_value());

  AlarmRow freshWithError = ok;
  freshWithError.lastErrorName = "Error";
  EXPECT_TRUE(check(freshWithError).has_value());

  AlarmRow freshMoved = ok;
  freshMoved.nextAttemptAt = freshMoved.nextAttemptAtMax = 11;
  EXPECT_TRUE(check(freshMoved).has_value());

  AlarmRow over = ok;
  over.attempt = 4;
  over.lastErrorName = "Error";
  over.nextAttemptAt = over.nextAttemptAtMax = 50;
  EXPECT_EQ(check(over, 4), std::nullopt);
  ASSERT_TRUE(check(over, 3).has_value());
  EXPECT_NE(check(over, 3)->find("ALM-05"), std::string::npos);

  EXPECT_EQ(AlarmsModel::fieldConsistency({ok, over}, maxFive), std::nullopt);
  EXPECT_TRUE(AlarmsModel::fieldConsistency({ok, freshWithError}, maxFive).has_value());
}

}  // namespace
}  // namespace durasim::model
