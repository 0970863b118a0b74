// Unit tests of the retained-log model (model/log_model.h), rule by rule of log.md: options, append
// with hot dedup (in-batch duplicates share one offset and store the last body), rejections, read
// shape and truncation, forward-only cursors, trim by each limit with the partial-progress rule, the
// flush intent and rehydration, forgetColdBefore, and every lease rule of §7.
#include "model/log_model.h"

#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace durasim::model {
namespace {

constexpr int64_t kNow = 1'000'000;
constexpr int64_t kLeaseMs = 1'000;

// "<prefix><i>", appended rather than concatenated (g++ 12 misreports the latter under -Wrestrict).
std::string numbered(const char* prefix, int64_t i) {
  std::string text = prefix;
  text += std::to_string(i);
  return text;
}

// Cold storage kept in memory: write stores under "seg-<first>", failing `failWrites` writes (after
// storing, as a lost reply) and returning "" for `emptyLocators` writes; `gone` locators read nullopt.
struct FakeCold {
  std::map<std::string, std::vector<Record>> stored;
  std::vector<std::pair<int64_t, int64_t>> writes;
  int failWrites = 0, emptyLocators = 0;
  std::map<std::string, bool> gone;
};

ColdStorage coldOf(const std::shared_ptr<FakeCold>& cold) {
  ColdStorage storage;
  storage.write = [cold](int64_t first, int64_t last, const std::vector<Record>& records) {
    cold->writes.emplace_back(first, last);
    const std::string locator = numbered("seg-", first);
    cold->stored[locator] = records;
    if (cold->failWrites > 0) {
      --cold->failWrites;
      return ColdWrite{std::nullopt, LogError{"Error", "cold write lost"}};
    }
    if (cold->emptyLocators > 0) {
      --cold->emptyLocators;
      return ColdWrite{std::string(), {}};
    }
    return ColdWrite{locator, {}};
  };
  storage.read = [cold](const std::string& locator) -> std::optional<std::vector<Record>> {
    if (cold->gone[locator] || !cold->stored.count(locator)) return std::nullopt;
    return cold->stored.at(locator);
  };
  return storage;
}

AppendInput in(const std::string& payload, std::optional<std::string> key = std::nullopt) {
  return AppendInput{std::move(key), payload};
}

// Appends `n` keyed records "k<i>" with payload "p<i>" for i in [from, from + n).
void fill(LogModel& m, int from, int n, int64_t now = kNow) {
  for (int i = from; i < from + n; ++i)
    ASSERT_TRUE(m.append({in(numbered("p", i), numbered("k", i))}, now).ok());
}

LogModelOptions leaseOptions(int64_t maxParallelism = 1, std::optional<int64_t> maxAttempts = std::nullopt,
                             bool onPoison = false) {
  LogModelOptions o;
  o.leases = LeaseOptions{maxParallelism, kLeaseMs, maxAttempts, onPoison};
  return o;
}

LeaseIds ids(const std::string& id) { return LeaseIds{id, id + "-gap", id + "-cut"}; }

// ---------------------------------------------------------------------------------------------
// Options (log.md 1)

TEST(LogModel, OptionsAreValidatedWithTheDottedNameInOrder) {
  LogModelOptions o;
  EXPECT_FALSE(LogModel::validate(o));
  o.maxBatchSize = 0;
  EXPECT_EQ(LogModel::validate(o)->message, "maxBatchSize must be a positive integer");
  o.maxBatchSize = 10;
  o.retention = Retention{std::nullopt, -1, std::nullopt};
  EXPECT_EQ(*LogModel::validate(o), LogError::range("retention.maxRecords must be a positive integer"));
  o.retention = Retention{std::nullopt, std::nullopt, kMaxLogBytes + 1};
  EXPECT_EQ(LogModel::validate(o)->message, "retention.maxBytes must not exceed 1073741824 bytes");
  o.retention = Retention{std::nullopt, std::nullopt, kMaxLogBytes};
  EXPECT_FALSE(LogModel::validate(o));
  o.leases = LeaseOptions{1, 0, std::nullopt, false};
  EXPECT_EQ(LogModel::validate(o)->message, "leases.leaseMs must be a positive integer");
  o.leases = LeaseOptions{1, 10, 0, false};
  EXPECT_EQ(LogModel::validate(o)->message, "leases.maxAttempts must be a positive integer");
  EXPECT_THROW(LogModel{o}, std::invalid_argument);
}

// ---------------------------------------------------------------------------------------------
// Append (log.md 3)

TEST(LogModel, AppendAssignsDenseOffsetsAndDrawsAUuidPerKeylessInput) {
  LogModel m;
  const auto r = m.append({in("\"a\""), in("\"bb\"", "k"), in("\"c\"")}, kNow, {"u1", "u2"});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value.offsets, (std::vector<int64_t>{0, 1, 2}));
  EXPECT_EQ(r.value.keys, (std::vector<std::string>{"u1", "k", "u2"}));
  EXPECT_EQ(r.value.newRecords, 3);
  EXPECT_EQ(m.nextOffset(), 3);
  EXPECT_EQ(m.totalBytes(), 3 + 4 + 3);
  EXPECT_EQ(m.records().at(1), (Record{1, "k", "\"bb\"", 4, kNow}));
  EXPECT_THROW(m.append({in("x"), in("y")}, kNow, {"only-one"}), std::invalid_argument);
}

TEST(LogModel, ADedupHitKeepsItsOffsetAndWritesNothing) {
  LogModel m;
  fill(m, 0, 2);
  const auto r = m.append({in("other", "k1"), in("p0", "k0")}, kNow + 5);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value.offsets, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(r.value.newRecords, 0);
  EXPECT_EQ(m.nextOffset(), 2);
  EXPECT_EQ(m.records().at(1).payload, "p1");  // the original body stays
  EXPECT_EQ(m.records().at(1).appendedAt, kNow);
}

TEST(LogModel, DuplicatesWithinABatchShareOneOffsetAndStoreTheLastBody) {
  LogModel m;
  fill(m, 0, 1);
  const auto r = m.append({in("first", "a"), in("x", "b"), in("hit", "k0"), in("second", "a"), in("y", "b"), in("last", "a")},
                          kNow);
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r.value.offsets, (std::vector<int64_t>{1, 2, 0, 1, 2, 1}));
  EXPECT_EQ(r.value.newRecords, 2);
  EXPECT_EQ(m.records().at(1).payload, "last");
  EXPECT_EQ(m.records().at(1).bytes, 4);
  EXPECT_EQ(m.records().at(2).payload, "y");
  EXPECT_EQ(m.totalBytes(), 2 + 4 + 1);
}

TEST(LogModel, RejectionsComeInSpecOrderAndWriteNothing) {
  LogModelOptions o;
  o.maxBatchSize = 2;
  LogModel m(o);
  EXPECT_EQ(*m.append({}, kNow).error, LogError::append("Append requires at least one record"));
  EXPECT_EQ(m.append({in("a"), in("b"), in("c")}, kNow).error->message, "Append accepts at most 2 records");
  // An empty key is reported before an unserializable body, wherever each sits in the batch.
  EXPECT_EQ(m.append({AppendInput{std::nullopt, std::nullopt}, in("b", "")}, kNow).error->message,
            "Deduplication key must be a non-empty string");
  EXPECT_EQ(m.append({in("a", "k"), AppendInput{"j", std::nullopt}}, kNow).error->message,
            "Record body is not serializable JSON");
  EXPECT_EQ(m.nextOffset(), 0);
  EXPECT_TRUE(m.records().empty());
}

TEST(LogModel, ATrimmedKeyCreatesANewRecord) {
  LogModelOptions o;
  o.retention = Retention{std::nullopt, 1, std::nullopt};
  LogModel m(o);
  fill(m, 0, 2);
  ASSERT_EQ(m.trim(kNow).value, 1);
  const auto r = m.append({in("again", "k0")}, kNow);
  EXPECT_EQ(r.value.offsets, (std::vector<int64_t>{2}));
  EXPECT_EQ(r.value.newRecords, 1);
}

// ---------------------------------------------------------------------------------------------
// Read and bounds (log.md 4)

TEST(LogModel, ReadPagesAreCappedAndReportNextOffsetAndLag) {
  LogModelOptions o;
  o.maxBatchSize = 3;
  LogModel m(o);
  fill(m, 0, 5);
  auto page = m.read(1, 10);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page.value.records.size(), 3u);
  EXPECT_EQ(page.value.records.front().offset, 1);
  EXPECT_EQ(page.value.nextOffset, 4);
  EXPECT_EQ(page.value.lag, 1);
  page = m.read(4, 1);
  EXPECT_EQ(page.value.records.size(), 1u);
  EXPECT_EQ(page.value.lag, 0);
  page = m.read(9);
  EXPECT_TRUE(page.value.records.empty());
  EXPECT_EQ(page.value.nextOffset, 9);  // max(from, nextOffset)
  EXPECT_EQ(m.read(5).value.nextOffset, 5);
}

TEST(LogModel, ReadArgumentErrorsAndTruncationCarryTheirFields) {
  LogModelOptions o;
  o.retention = Retention{std::nullopt, 2, std::nullopt};
  LogModel m(o);
  fill(m, 0, 5);
  EXPECT_EQ(*m.read(0, 0).error, LogError::range("limit must be a positive integer"));
  EXPECT_EQ(*m.read(-1).error, LogError::append("Offset must be a non-negative integer"));
  EXPECT_EQ(*m.read(-1, 0).error, LogError::range("limit must be a positive integer"));  // limit first
  ASSERT_EQ(m.trim(kNow).value, 3);
  EXPECT_EQ(m.bounds(), (Bounds{3, 3, 5}));
  const LogError e = *m.read(1).error;
  EXPECT_EQ(e.name, kLogTruncatedError);
  EXPECT_EQ(e.requested, 1);
  EXPECT_EQ(e.oldest, 3);
  EXPECT_EQ(e.message, "Log offset 1 was trimmed; the oldest retained offset is 3");
}

TEST(LogModel, RehydrationUsesOneSegmentAndReportsALostOneAsTruncation) {
  auto cold = std::make_shared<FakeCold>();
  LogModelOptions o;
  o.maxBatchSize = 2;
  o.retention = Retention{std::nullopt, 1, std::nullopt};
  o.cold = coldOf(cold);
  LogModel m(o);
  fill(m, 0, 5);
  ASSERT_EQ(m.trim(kNow).value, 4);  // two passes: segments [0,1] and [2,3]
  EXPECT_EQ(cold->writes, (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {2, 3}}));
  EXPECT_EQ(m.bounds(), (Bounds{0, 4, 5}));
  auto page = m.read(1, 2);
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page.value.records.size(), 1u);  // ends at the segment's last offset
  EXPECT_EQ(page.value.records[0].payload, "p1");
  EXPECT_EQ(page.value.nextOffset, 2);
  EXPECT_EQ(page.value.lag, 3);
  cold->gone["seg-2"] = true;
  EXPECT_EQ(*m.read(3).error, LogError::truncated(3, 4));
  EXPECT_EQ(*m.read(2).error, LogError::truncated(2, 4));
  ASSERT_EQ(m.forgetColdBefore(2).value, 1);
  EXPECT_EQ(m.bounds().oldestOffset, 2);
  EXPECT_EQ(*m.read(1).error, LogError::truncated(1, 2));
}

TEST(LogModel, ForgettingSegmentsMovesTheOldestOffsetAndKeepsLaterSegmentsReadable) {
  auto cold = std::make_shared<FakeCold>();
  LogModelOptions o;
  o.maxBatchSize = 2;
  o.retention = Retention{std::nullopt, 1, std::nullopt};
  o.cold = coldOf(cold);
  LogModel m(o);
  fill(m, 0, 7);
  ASSERT_EQ(m.trim(kNow).value, 6);  // [0,1] [2,3] [4,5]
  ASSERT_EQ(m.forgetColdBefore(4).value, 2);
  EXPECT_EQ(m.bounds(), (Bounds{4, 6, 7}));
  // A segment whose index row survives while an earlier one was forgotten serves only its range.
  EXPECT_EQ(m.read(5).value.records.size(), 1u);
  EXPECT_EQ(*m.forgetColdBefore(-1).error, LogError::append("Offset must be a non-negative integer"));
}

// ---------------------------------------------------------------------------------------------
// Cursors (log.md 5)

TEST(LogModel, CommitsMoveForwardOnly) {
  LogModel m;
  EXPECT_FALSE(m.cursor("c"));
  EXPECT_TRUE(m.commit("c", 5, kNow).value);
  EXPECT_FALSE(m.commit("c", 5, kNow + 1).value);
  EXPECT_FALSE(m.commit("c", 2, kNow + 2).value);
  EXPECT_EQ(m.cursors().at("c"), (Cursor{5, kNow}));
  EXPECT_TRUE(m.commit("c", 100, kNow + 3).value);  // past nextOffset: accepted
  EXPECT_EQ(m.cursors().at("c"), (Cursor{100, kNow + 3}));
  EXPECT_EQ(*m.commit("c", -1, kNow).error, LogError::append("Offset must be a non-negative integer"));
  EXPECT_TRUE(m.commit("d", 0, kNow).value);  // a first commit inserts even at 0
  EXPECT_EQ(m.backlog(), 0);                  // nextOffset 0 - min cursor 0
}

TEST(LogModel, BacklogIsNextOffsetMinusTheLowestCursor) {
  LogModel m;
  fill(m, 0, 6);
  EXPECT_EQ(m.backlog(), 0);
  m.commit("a", 4, kNow);
  m.commit("b", 1, kNow);
  EXPECT_EQ(m.backlog(), 5);
}

// ---------------------------------------------------------------------------------------------
// Trim (log.md 6)

TEST(LogModel, TrimWithoutALimitRemovesNothing) {
  LogModelOptions o;
  o.retention = Retention{};
  LogModel m(o);
  fill(m, 0, 3);
  EXPECT_EQ(m.trim(kNow).value, 0);
  EXPECT_FALSE(m.planTrimPass(kNow));
  EXPECT_EQ(m.records().size(), 3u);
}

TEST(LogModel, TrimByMaxRecordsLoopsOverPassesOfMaxBatchSize) {
  LogModelOptions o;
  o.maxBatchSize = 2;
  o.retention = Retention{std::nullopt, 2, std::nullopt};
  LogModel m(o);
  fill(m, 0, 7);
  EXPECT_EQ(m.trim(kNow).value, 5);
  EXPECT_EQ(m.bounds(), (Bounds{5, 5, 7}));
  EXPECT_EQ(m.totalBytes(), 4);
}

TEST(LogModel, TrimByMaxBytesTestsTheExcessBeforeEachRow) {
  LogModelOptions o;
  o.retention = Retention{std::nullopt, std::nullopt, 5};
  LogModel m(o);
  ASSERT_TRUE(m.append({in("aaa", "a"), in("bb", "b"), in("c", "c"), in("dd", "d")}, kNow).ok());  // 8 bytes
  // over = 3: row a expires (over 3 -> 0), row b does not (over is 0 before it).
  EXPECT_EQ(m.trim(kNow).value, 1);
  EXPECT_EQ(m.totalBytes(), 5);
  EXPECT_EQ(m.bounds().hotOffset, 1);
}

TEST(LogModel, TrimByAgeTakesTheLongestExpiringPrefix) {
  LogModelOptions o;
  o.retention = Retention{100, std::nullopt, std::nullopt};
  LogModel m(o);
  fill(m, 0, 2, kNow);
  fill(m, 2, 1, kNow + 50);
  fill(m, 3, 1, kNow);  // old, but behind a young record: not in the prefix
  EXPECT_EQ(m.trim(kNow + 100).value, 0);  // appended_at < cutoff is strict
  EXPECT_EQ(m.trim(kNow + 101).value, 2);
  EXPECT_EQ(m.bounds().hotOffset, 2);
  EXPECT_EQ(m.trim(kNow + 151).value, 2);
}

TEST(LogModel, APassThatDeletesFewerRowsThanItsRangeEndsTheTrim) {
  // Another writer (here: a second trim of the same rows) removed the range's rows while this
  // pass's cold write was in flight: its final transaction deletes nothing.
  auto cold = std::make_shared<FakeCold>();
  LogModelOptions o;
  o.maxBatchSize = 2;
  o.retention = Retention{std::nullopt, 1, std::nullopt};
  o.cold = coldOf(cold);
  LogModel m(o);
  fill(m, 0, 5);
  const std::optional<TrimRange> stale = m.planTrimPass(kNow);
  ASSERT_TRUE(stale);
  m.beginFlush(*stale, kNow);
  ASSERT_EQ(m.trim(kNow).value, 4);  // resumes the intent [0,1], then [2,3]
  EXPECT_EQ(m.finishFlush(*stale, "seg-0", kNow), 0);
  EXPECT_LT(0u, stale->records.size());
  EXPECT_EQ(m.segments().size(), 2u);
}

TEST(LogModel, AFailedColdWriteKeepsTheIntentAndTheNextTrimRewritesTheSameRange) {
  auto cold = std::make_shared<FakeCold>();
  LogModelOptions o;
  o.maxBatchSize = 10;
  o.retention = Retention{std::nullopt, 3, std::nullopt};
  o.cold = coldOf(cold);
  LogModel m(o);
  fill(m, 0, 5);
  cold->failWrites = 1;
  EXPECT_EQ(*m.trim(kNow).error, (LogError{"Error", "cold write lost"}));
  EXPECT_EQ(m.flush(), (FlushIntent{0, 1, kNow}));
  EXPECT_EQ(m.records().size(), 5u);
  fill(m, 5, 3);  // more records now expire, but the intent's range comes first
  cold->emptyLocators = 1;
  EXPECT_EQ(*m.trim(kNow + 1).error, LogError::type("Cold storage must return a non-empty locator"));
  EXPECT_EQ(m.flush(), (FlushIntent{0, 1, kNow}));
  EXPECT_EQ(m.trim(kNow + 2).value, 5);
  EXPECT_EQ(cold->writes, (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {0, 1}, {0, 1}, {2, 4}}));
  EXPECT_FALSE(m.flush());
  EXPECT_EQ(m.segments().at(0), (Segment{0, 1, "seg-0", 4, kNow + 2}));
  EXPECT_EQ(m.segments().at(2).bytes, 6);
}

// A trim without cold storage deletes the intent's first offset, so it drops the intent in the same
// step; with cold storage back, nothing stale is flushed (docs/decisions.md).
TEST(LogModel, ATrimWithoutColdDropsTheIntent) {
  auto cold = std::make_shared<FakeCold>();
  LogModelOptions o;
  o.retention = Retention{std::nullopt, 2, std::nullopt};
  o.cold = coldOf(cold);
  LogModel m(o);
  fill(m, 0, 4);
  cold->failWrites = 1;
  ASSERT_FALSE(m.trim(kNow).ok());
  ASSERT_TRUE(m.flush());
  LogModelOptions withoutCold = o;
  withoutCold.cold.reset();
  m.reconfigure(withoutCold);
  EXPECT_EQ(m.trim(kNow).value, 2);
  EXPECT_FALSE(m.flush());
  EXPECT_TRUE(m.segments().empty());
  m.reconfigure(o);
  fill(m, 4, 1);
  EXPECT_EQ(m.trim(kNow).value, 1);
  EXPECT_EQ(cold->writes, (std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {2, 2}}));
  EXPECT_EQ(m.bounds().oldestOffset, 2);
}

// ---------------------------------------------------------------------------------------------
// Leases (log.md 7)

TEST(LogModel, LeaseMethodsRequireTheOptionAndAConsumer) {
  LogModel plain;
  EXPECT_EQ(*plain.lease("c", std::nullopt, kNow, ids("b")).error, LogError::type("Leases require the leases option"));
  EXPECT_EQ(plain.ack("c", "b", kNow).error->name, kTypeError);
  EXPECT_EQ(plain.nack("c", "b", kNow).error->name, kTypeError);
  EXPECT_EQ(plain.leases("c").error->name, kTypeError);
  LogModel m(leaseOptions());
  EXPECT_EQ(*m.lease("", 0, kNow, ids("b")).error, LogError::append("Consumer must be a non-empty string"));
  EXPECT_EQ(*m.lease("c", 0, kNow, ids("b")).error, LogError::range("limit must be a positive integer"));
  EXPECT_EQ(m.leases("").error->message, "Consumer must be a non-empty string");
}

TEST(LogModel, AFreshLeaseStartsAtTheAllocationAndRespectsMaxParallelism) {
  LogModel m(leaseOptions(2));
  fill(m, 0, 10);
  EXPECT_EQ(m.freshLeaseStart("c"), 0);
  auto first = m.lease("c", 3, kNow, ids("b1"));
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(first.value.lease);
  const Lease& l1 = *first.value.lease;
  EXPECT_EQ(l1.firstOffset, 0);
  EXPECT_EQ(l1.lastOffset, 2);
  EXPECT_EQ(l1.attempt, 1);
  EXPECT_EQ(l1.expiresAt, kNow + kLeaseMs);
  EXPECT_FALSE(l1.reclaimed);
  EXPECT_EQ(l1.records.size(), 3u);
  EXPECT_EQ(m.allocations().at("c"), 3);
  EXPECT_EQ(m.freshLeaseStart("c"), 3);
  EXPECT_EQ(m.lease("c", 3, kNow, ids("b2")).value.lease->firstOffset, 3);
  const auto third = m.lease("c", 3, kNow, ids("b3"));
  EXPECT_FALSE(third.value.lease);
  EXPECT_EQ(third.value.why, NoLease::parallelism);
  EXPECT_EQ(m.heldCount("c", kNow), 2);
  // Another consumer has its own allocation.
  EXPECT_EQ(m.lease("d", std::nullopt, kNow, ids("d1")).value.lease->lastOffset, 9);
  EXPECT_EQ(m.lease("d", std::nullopt, kNow, ids("d2")).value.why, NoLease::empty);  // one lease took [0,9]
}

TEST(LogModel, NothingUnleasedIsEmpty) {
  LogModel m(leaseOptions(3));
  EXPECT_EQ(m.lease("c", std::nullopt, kNow, ids("b0")).value.why, NoLease::empty);
  fill(m, 0, 2);
  ASSERT_TRUE(m.lease("c", std::nullopt, kNow, ids("b1")).value.lease);
  EXPECT_EQ(m.lease("c", std::nullopt, kNow, ids("b2")).value.why, NoLease::empty);
  EXPECT_FALSE(m.freshLeaseStart("c"));
}

TEST(LogModel, AckAdvancesTheCursorOnlyOverAContiguousSettledRun) {
  LogModel m(leaseOptions(3));
  fill(m, 0, 6);
  ASSERT_TRUE(m.lease("c", 2, kNow, ids("b1")).ok());
  ASSERT_TRUE(m.lease("c", 2, kNow, ids("b2")).ok());
  ASSERT_TRUE(m.lease("c", 2, kNow, ids("b3")).ok());
  EXPECT_TRUE(m.ack("c", "b2", kNow).ok());
  EXPECT_FALSE(m.cursor("c"));  // [0,1] still held
  EXPECT_EQ(m.advancePreview("c").to, std::nullopt);
  ASSERT_TRUE(m.nack("c", "b1", kNow).ok());
  EXPECT_FALSE(m.cursor("c"));  // pending does not settle
  const auto again = m.lease("c", 2, kNow, ids("b4"));  // reclaims [0,1]
  ASSERT_TRUE(again.value.lease);
  EXPECT_TRUE(again.value.lease->reclaimed);
  EXPECT_EQ(again.value.lease->attempt, 2);
  EXPECT_TRUE(m.ack("c", "b4", kNow + 1).ok());
  EXPECT_EQ(m.cursors().at("c"), (Cursor{4, kNow + 1}));
  ASSERT_EQ(m.leases("c").value.size(), 1u);  // the settled rows below 4 are deleted
  EXPECT_EQ(m.leases("c").value[0].batchId, "b3");
}

TEST(LogModel, SettlementsRequireAnActiveRowOfThatConsumer) {
  LogModel m(leaseOptions(2));
  fill(m, 0, 4);
  ASSERT_TRUE(m.lease("c", 2, kNow, ids("b1")).ok());
  EXPECT_EQ(*m.ack("d", "b1", kNow).error, LogError::lease("b1"));
  EXPECT_EQ(m.ack("d", "b1", kNow).error->message, "Log lease \"b1\" is not held");
  EXPECT_EQ(*m.nack("c", "nope", kNow).error, LogError::lease("nope"));
  ASSERT_TRUE(m.nack("c", "b1", kNow).ok());
  EXPECT_EQ(*m.nack("c", "b1", kNow).error, LogError::lease("b1"));  // pending, not active
  EXPECT_EQ(*m.ack("c", "b1", kNow).error, LogError::lease("b1"));
  const std::vector<LeaseRow> rows = m.leases("c").value;
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].state, LeaseState::pending);
  EXPECT_EQ(rows[0].expiresAt, 0);
}

TEST(LogModel, AnExpiredLeaseCanBeAckedUntilReclaimedAndTheReclaimFencesTheOldId) {
  LogModel m(leaseOptions(1));
  fill(m, 0, 4);
  ASSERT_TRUE(m.lease("c", 2, kNow, ids("b1")).ok());
  const int64_t later = kNow + kLeaseMs;  // expires_at <= now: reclaimable, no longer held
  EXPECT_EQ(m.heldCount("c", later), 0);
  EXPECT_TRUE(m.firstReclaimable("c", later));
  EXPECT_TRUE(m.ack("c", "b1", later).ok());
  EXPECT_EQ(m.cursor("c"), 2);

  ASSERT_TRUE(m.lease("c", 2, later, ids("b2")).ok());
  const auto reclaim = m.lease("c", 2, later + kLeaseMs, ids("b3"));
  ASSERT_TRUE(reclaim.value.lease);
  EXPECT_EQ(reclaim.value.lease->batchId, "b3");
  EXPECT_EQ(reclaim.value.lease->firstOffset, 2);
  EXPECT_EQ(reclaim.value.lease->attempt, 2);
  EXPECT_EQ(reclaim.value.lease->expiresAt, later + 2 * kLeaseMs);
  EXPECT_FALSE(m.leaseRows().count("b2"));
  EXPECT_EQ(*m.ack("c", "b2", later + kLeaseMs).error, LogError::lease("b2"));
  EXPECT_TRUE(m.ack("c", "b3", later + kLeaseMs).ok());
  EXPECT_EQ(m.cursor("c"), 4);
}

TEST(LogModel, ReclaimsAreNotLimitedByMaxParallelismAndComeLowestFirst) {
  LogModel m(leaseOptions(2));
  fill(m, 0, 6);
  ASSERT_TRUE(m.lease("c", 2, kNow, ids("b1")).ok());
  ASSERT_TRUE(m.lease("c", 2, kNow, ids("b2")).ok());
  ASSERT_TRUE(m.nack("c", "b2", kNow).ok());
  ASSERT_TRUE(m.nack("c", "b1", kNow).ok());
  EXPECT_EQ(m.heldCount("c", kNow), 2);  // pending rows are held
  const auto r = m.lease("c", 2, kNow, ids("b3"));
  ASSERT_TRUE(r.value.lease);
  EXPECT_EQ(r.value.lease->firstOffset, 0);
  EXPECT_TRUE(r.value.lease->reclaimed);
}

TEST(LogModel, AGapRowCoversOffsetsTrimmedBeforeAnyoneLeasedThem) {
  LogModelOptions o = leaseOptions(1);
  o.retention = Retention{std::nullopt, 2, std::nullopt};
  LogModel m(o);
  fill(m, 0, 5);
  ASSERT_EQ(m.trim(kNow).value, 3);
  EXPECT_EQ(m.freshLeaseStart("c"), 3);
  const auto r = m.lease("c", std::nullopt, kNow, ids("b1"));
  ASSERT_TRUE(r.value.lease);
  EXPECT_EQ(r.value.lease->firstOffset, 3);
  // The gap row [0, 2] was settled at once: advance moved the cursor to 3 and deleted it.
  EXPECT_EQ(m.cursors().at("c"), (Cursor{3, kNow}));
  ASSERT_EQ(m.leases("c").value.size(), 1u);
  EXPECT_FALSE(m.leaseRows().count("b1-gap"));
}

TEST(LogModel, AGapRowAboveTheCursorStaysUntilTheCursorReachesIt) {
  LogModelOptions o = leaseOptions(2);
  o.retention = Retention{std::nullopt, 2, std::nullopt};
  LogModel m(o);
  fill(m, 0, 3);
  ASSERT_TRUE(m.lease("c", 1, kNow, ids("b1")).ok());  // [0,0] held, allocation 1
  fill(m, 3, 3);
  ASSERT_EQ(m.trim(kNow).value, 4);  // hot [4,5]
  const auto r = m.lease("c", 1, kNow, ids("b2"));
  ASSERT_TRUE(r.value.lease);
  EXPECT_EQ(r.value.lease->firstOffset, 4);
  const LeaseRow& gap = m.leaseRows().at("b2-gap");
  EXPECT_EQ(gap, (LeaseRow{"b2-gap", "c", 1, 3, LeaseState::skipped, 0, 0, kNow}));
  EXPECT_FALSE(m.cursor("c"));
}

TEST(LogModel, PoisonSkipsAReclaimedRangePastMaxAttempts) {
  LogModel m(leaseOptions(1, 2, true));
  fill(m, 0, 4);
  ASSERT_TRUE(m.lease("c", 2, kNow, ids("b1")).ok());
  ASSERT_TRUE(m.nack("c", "b1", kNow).ok());
  ASSERT_EQ(m.lease("c", 2, kNow, ids("b2")).value.lease->attempt, 2);
  ASSERT_TRUE(m.nack("c", "b2", kNow).ok());
  const auto r = m.lease("c", 2, kNow, ids("b3"));
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r.value.lease);
  EXPECT_EQ(r.value.why, NoLease::poisoned);
  ASSERT_TRUE(r.value.poisonCallback);
  EXPECT_EQ(r.value.poisonCallback->attempt, 3);
  EXPECT_EQ(r.value.poisonCallback->batchId, "b3");
  EXPECT_EQ(r.value.poisonCallback->records.size(), 2u);
  EXPECT_EQ(m.cursor("c"), 2);  // skipped, then advanced over
  EXPECT_EQ(m.lease("c", 2, kNow, ids("b4")).value.lease->firstOffset, 2);
}

TEST(LogModel, MaxAttemptsWithoutOnPoisonRedeliversForever) {
  LogModel m(leaseOptions(1, 1, false));
  fill(m, 0, 2);
  ASSERT_TRUE(m.lease("c", 2, kNow, ids("b0")).ok());
  for (int i = 1; i <= 4; ++i) {
    const std::string id = numbered("b", i);
    ASSERT_TRUE(m.nack("c", numbered("b", i - 1), kNow).ok());
    const auto r = m.lease("c", 2, kNow, ids(id));
    ASSERT_TRUE(r.value.lease) << i;
    EXPECT_EQ(r.value.lease->attempt, i + 1);
  }
}

TEST(LogModel, AReclaimedLeaseWhosePrefixWasTrimmedKeepsItsTailPending) {
  LogModelOptions o = leaseOptions(1);
  o.retention = Retention{std::nullopt, 3, std::nullopt};
  LogModel m(o);
  fill(m, 0, 5);
  ASSERT_TRUE(m.lease("c", 5, kNow, ids("b1")).ok());  // [0,4]
  ASSERT_TRUE(m.nack("c", "b1", kNow).ok());
  ASSERT_EQ(m.trim(kNow).value, 2);  // hot [2,4]
  const auto r = m.lease("c", 5, kNow + 7, ids("b2"));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(*r.error, LogError::truncated(0, 2));
  EXPECT_EQ(m.leaseRows().at("b2"), (LeaseRow{"b2", "c", 2, 4, LeaseState::pending, 1, 0, kNow}));
  // The skipped row [0,1] was advanced over and deleted.
  EXPECT_FALSE(m.leaseRows().count("b2-cut"));
  EXPECT_EQ(m.cursors().at("c"), (Cursor{2, kNow + 7}));
  // The next lease reclaims the tail with attempt 2.
  const auto next = m.lease("c", 5, kNow + 8, ids("b3"));
  ASSERT_TRUE(next.value.lease);
  EXPECT_EQ(next.value.lease->firstOffset, 2);
  EXPECT_EQ(next.value.lease->attempt, 2);
  EXPECT_EQ(next.value.lease->records.size(), 3u);
}

TEST(LogModel, AReclaimedLeaseTrimmedWhollyIsSkipped) {
  LogModelOptions o = leaseOptions(1);
  o.retention = Retention{std::nullopt, 1, std::nullopt};
  LogModel m(o);
  fill(m, 0, 4);
  ASSERT_TRUE(m.lease("c", 2, kNow, ids("b1")).ok());  // [0,1]
  ASSERT_TRUE(m.nack("c", "b1", kNow).ok());
  ASSERT_EQ(m.trim(kNow).value, 3);
  EXPECT_EQ(*m.lease("c", 2, kNow, ids("b2")).error, LogError::truncated(0, 3));
  EXPECT_TRUE(m.leases("c").value.empty());
  EXPECT_EQ(m.cursor("c"), 2);
  // Next: a fresh lease with a gap row [2,2].
  const auto next = m.lease("c", 2, kNow, ids("b3"));
  ASSERT_TRUE(next.value.lease);
  EXPECT_EQ(next.value.lease->firstOffset, 3);
  EXPECT_EQ(m.cursor("c"), 3);
}

TEST(LogModel, ATruncatedPrefixBelowAHeldRangeDoesNotMoveTheCursor) {
  LogModelOptions o = leaseOptions(2);
  o.retention = Retention{std::nullopt, 2, std::nullopt};
  LogModel m(o);
  fill(m, 0, 6);
  ASSERT_TRUE(m.lease("c", 2, kNow, ids("b1")).ok());  // [0,1] active
  ASSERT_TRUE(m.lease("c", 3, kNow, ids("b2")).ok());  // [2,4]
  ASSERT_TRUE(m.nack("c", "b2", kNow).ok());
  ASSERT_EQ(m.trim(kNow).value, 4);  // hot [4,5]
  EXPECT_EQ(*m.lease("c", 3, kNow, ids("b3")).error, LogError::truncated(2, 4));
  // The skipped [2,3] sits behind the held [0,1]: nothing advances.
  EXPECT_FALSE(m.cursor("c"));
  EXPECT_EQ(m.leaseRows().at("b3-cut"), (LeaseRow{"b3-cut", "c", 2, 3, LeaseState::skipped, 0, 0, kNow}));
  EXPECT_EQ(m.leaseRows().at("b3").firstOffset, 4);
  EXPECT_TRUE(m.ack("c", "b1", kNow).ok());
  EXPECT_EQ(m.cursor("c"), 4);  // over acked [0,1] and skipped [2,3], stops at pending [4,4]
}

TEST(LogModel, AnUnreadableOffsetReleasesTheLease) {
  auto cold = std::make_shared<FakeCold>();
  LogModelOptions o = leaseOptions(1);
  o.retention = Retention{std::nullopt, 2, std::nullopt};
  o.cold = coldOf(cold);
  LogModel m(o);
  fill(m, 0, 5);
  ASSERT_EQ(m.trim(kNow).value, 3);  // segment [0,2], hot [3,4]
  cold->gone["seg-0"] = true;
  const auto r = m.lease("c", 4, kNow, ids("b1"));  // [0,2], capped at the segment
  EXPECT_EQ(*r.error, LogError::truncated(0, 3));
  EXPECT_EQ(m.leaseRows().at("b1"), (LeaseRow{"b1", "c", 0, 2, LeaseState::pending, 0, 0, kNow}));
  cold->gone["seg-0"] = false;
  const auto again = m.lease("c", 4, kNow, ids("b2"));
  ASSERT_TRUE(again.value.lease);
  EXPECT_EQ(again.value.lease->attempt, 1);
  EXPECT_EQ(again.value.lease->records.size(), 3u);
  EXPECT_EQ(again.value.lease->records[2].payload, "p2");
}

TEST(LogModel, AFreshLeaseBelowTheHotOffsetIsCappedAtItsSegmentOrTheHotOffset) {
  auto cold = std::make_shared<FakeCold>();
  LogModelOptions o = leaseOptions(3);
  o.maxBatchSize = 2;
  o.retention = Retention{std::nullopt, 1, std::nullopt};
  o.cold = coldOf(cold);
  LogModel m(o);
  fill(m, 0, 5);
  ASSERT_EQ(m.trim(kNow).value, 4);  // [0,1] [2,3], hot [4]
  ASSERT_EQ(m.lease("c", 1, kNow, ids("b1")).value.lease->lastOffset, 0);
  const auto r = m.lease("c", 10, kNow, ids("b2"));
  ASSERT_TRUE(r.value.lease);
  EXPECT_EQ(r.value.lease->firstOffset, 1);
  EXPECT_EQ(r.value.lease->lastOffset, 1);  // capped at segment [0,1]
  ASSERT_EQ(m.forgetColdBefore(4).value, 2);
  EXPECT_EQ(m.bounds(), (Bounds{4, 4, 5}));
}

TEST(LogModel, AdvanceDeletesSettledRowsBelowAManuallyCommittedCursor) {
  LogModel m(leaseOptions(2));
  fill(m, 0, 6);
  ASSERT_TRUE(m.lease("c", 2, kNow, ids("b1")).ok());
  ASSERT_TRUE(m.lease("c", 2, kNow, ids("b2")).ok());
  ASSERT_TRUE(m.commit("c", 5, kNow).value);
  EXPECT_TRUE(m.ack("c", "b2", kNow).ok());  // [2,3] below 5: deleted; cursor unchanged
  EXPECT_EQ(m.cursor("c"), 5);
  EXPECT_FALSE(m.leaseRows().count("b2"));
  EXPECT_TRUE(m.leaseRows().count("b1"));
  EXPECT_EQ(m.freshLeaseStart("c"), 5);
}

TEST(LogModel, AdvancePreviewReportsTheCursorMoveAndTheRowsItWouldDelete) {
  LogModel m(leaseOptions(3));
  fill(m, 0, 6);
  ASSERT_TRUE(m.lease("c", 2, kNow, ids("b1")).ok());
  ASSERT_TRUE(m.lease("c", 2, kNow, ids("b2")).ok());
  ASSERT_TRUE(m.ack("c", "b2", kNow).ok());
  AdvanceResult preview = m.advancePreview("c");
  EXPECT_EQ(preview.before, std::nullopt);
  EXPECT_EQ(preview.to, std::nullopt);
  EXPECT_EQ(preview.deleted, 0);
  ASSERT_TRUE(m.ack("c", "b1", kNow).ok());
  ASSERT_TRUE(m.commit("c", 1, kNow).ok());  // ignored: the ack already moved it to 4
  EXPECT_EQ(m.cursor("c"), 4);
  preview = m.advancePreview("c");
  EXPECT_EQ(preview.before, 4);
  EXPECT_EQ(preview.to, 4);
  EXPECT_EQ(preview.deleted, 0);
}

// The steps of lease(), as a checker following the engine's transactions uses them.
TEST(LogModel, LeaseStepsWriteOnlyWhileTheRowStillMatches) {
  LogModelOptions o = leaseOptions(1, 1, true);
  o.retention = Retention{std::nullopt, 1, std::nullopt};
  LogModel m(o);
  fill(m, 0, 4);
  LogModel::Grant grant = m.grantLease("c", 2, kNow, ids("b1"));
  ASSERT_TRUE(grant.lease);
  Lease lease = *grant.lease;
  EXPECT_FALSE(m.truncateLease(lease, kNow, "cut"));  // nothing trimmed yet
  // A nack (by another poller) and a trim happen before this poller's truncation check: the row no
  // longer matches, so nothing is written, but the error is still raised.
  ASSERT_TRUE(m.nack("c", "b1", kNow).ok());
  ASSERT_EQ(m.trim(kNow).value, 3);
  const auto before = m.leaseRows();
  EXPECT_EQ(*m.truncateLease(lease, kNow, "cut"), LogError::truncated(0, 3));
  EXPECT_EQ(m.leaseRows(), before);
  // Reclaimed with attempt 2 > maxAttempts 1: poisoned; the skip matches once.
  LogModel::Grant again = m.grantLease("c", 2, kNow, ids("b2"));
  ASSERT_TRUE(again.lease);
  EXPECT_TRUE(m.isPoisoned(*again.lease));
  EXPECT_TRUE(m.skipPoisoned(*again.lease, kNow));
  EXPECT_FALSE(m.skipPoisoned(*again.lease, kNow));
  EXPECT_FALSE(m.isPoisoned(*grant.lease));  // a fresh grant is never poisoned
}

TEST(LogModel, ReadingAFencedLeaseThatCannotBeProducedReleasesNothing) {
  auto cold = std::make_shared<FakeCold>();
  LogModelOptions o = leaseOptions(2);
  o.retention = Retention{std::nullopt, 2, std::nullopt};
  o.cold = coldOf(cold);
  LogModel m(o);
  fill(m, 0, 4);
  LogModel::Grant grant = m.grantLease("c", 4, kNow, ids("b1"));  // [0,3], all hot
  ASSERT_TRUE(grant.lease);
  ASSERT_EQ(m.trim(kNow).value, 2);  // [0,1] flushed after the grant: rehydrated
  Lease lease = *grant.lease;
  ASSERT_FALSE(m.readLeaseRecords(lease));
  ASSERT_EQ(lease.records.size(), 4u);
  EXPECT_EQ(lease.records[1].payload, "p1");
  cold->gone["seg-0"] = true;
  ASSERT_TRUE(m.ack("c", "b1", kNow).ok());
  EXPECT_EQ(*m.readLeaseRecords(lease), LogError::truncated(0, 2));
  EXPECT_TRUE(lease.records.empty());
  EXPECT_EQ(m.cursor("c"), 4);
}

}  // namespace
}  // namespace durasim::model
