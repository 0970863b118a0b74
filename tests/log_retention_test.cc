// DurabilityLog retention and cold segments (log.md 6, 6.1; errors-and-contract.md 2-3) on the
// simulated runtime: each retention limit alone, oldest-first trimming in passes, the partial-progress
// rule, serialized trim calls, the cold flush order (intent, cold.write, one final transaction), a failed
// or empty-locator write leaving the intent so the same range is rewritten, rehydrating reads of flushed
// offsets, forgetColdBefore and the truncation it exposes, bounds that stay ordered, a flush intent
// dropped by a trim without cold storage, and the reference flush of variant H20
// (log.segment_flush_two_units) appearing only with its flag. Cold storage is an in-memory fake keyed
// by locator.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/conventions.h"
#include "engine/errors.h"
#include "engine/log.h"
#include "engine/runtime_errors.h"
#include "engine/scheduler.h"
#include "engine/variants.h"
#include "sim/trace_sink.h"
#include "tests/log_test_rig.h"

namespace durasim::rt_test {
namespace {

// In-memory cold store. `failWrites` throws that many writes after storing them (the cold write
// happened, the final transaction did not); `emptyLocators` returns "" for that many writes.
struct FakeCold {
  std::map<std::string, std::vector<LogRecord>> segments;
  std::vector<json> writes;  // [first, last, record count] per call
  int64_t failWrites = 0;
  int64_t emptyLocators = 0;
  bool gone = false;       // read returns nullopt
  int64_t writeDelayMs = 0;
  int64_t inFlight = 0, maxInFlight = 0;
  Clock* clock = nullptr;
  std::function<void()> onWrite;  // runs inside write, before it completes
};

Task<std::string> fakeWrite(std::shared_ptr<FakeCold> cold, LogSegment segment) {
  ++cold->inFlight;
  cold->maxInFlight = std::max(cold->maxInFlight, cold->inFlight);
  if (cold->writeDelayMs > 0 && cold->clock) co_await cold->clock->sleepFor(cold->writeDelayMs);
  --cold->inFlight;
  cold->writes.push_back(json{segment.firstOffset, segment.lastOffset, segment.records.size()});
  if (cold->onWrite) cold->onWrite();
  const std::string locator = "seg-" + std::to_string(segment.firstOffset);
  cold->segments[locator] = segment.records;
  if (cold->failWrites > 0) {
    --cold->failWrites;
    throw std::runtime_error("cold write lost");
  }
  if (cold->emptyLocators > 0) {
    --cold->emptyLocators;
    co_return std::string();
  }
  co_return locator;
}

Task<std::optional<std::vector<LogRecord>>> fakeRead(std::shared_ptr<FakeCold> cold, std::string locator) {
  if (cold->gone) co_return std::nullopt;
  auto it = cold->segments.find(locator);
  if (it == cold->segments.end()) co_return std::nullopt;
  co_return it->second;
}

LogColdStorage coldOf(const std::shared_ptr<FakeCold>& cold) {
  LogColdStorage storage;
  storage.write = [cold](const LogSegment& s) { return fakeWrite(cold, s); };
  storage.read = [cold](const std::string& l) { return fakeRead(cold, l); };
  return storage;
}

Task<void> appendAll(LogHost& h, const std::vector<LogAppendInput>& records) {
  std::vector<LogAppendInput> copy = records;
  Task<EnqueueResult<std::vector<int64_t>>> t = h.log.append(std::move(copy));
  EnqueueResult<std::vector<int64_t>> r = co_await t;
  EXPECT_TRUE(r.success);
}

// Stored bytes of one record with an integer body of two digits (10..99): all such records are equal.
int64_t recordBytes() { return static_cast<int64_t>(serialize(json(10))->size()); }

// Appends bodies first, first + 1, ..., first + n - 1.
Task<void> appendRange(LogHost& h, int64_t first, int64_t n) {
  std::vector<LogAppendInput> batch;
  for (int64_t i = 0; i < n; ++i) batch.push_back(rec(first + i));
  co_await appendAll(h, batch);
}

json boundsJson(const LogBounds& b) { return json{b.oldestOffset, b.hotOffset, b.nextOffset}; }

json offsetsOf(const LogPage& p) {
  json out = json::array();
  for (const LogRecord& r : p.records) out.push_back(r.offset);
  return out;
}

LogOptions withRetention(std::optional<int64_t> maxAgeMs, std::optional<int64_t> maxRecords, std::optional<int64_t> maxBytes) {
  LogOptions o;
  o.retention = LogRetention{maxAgeMs, maxRecords, maxBytes};
  return o;
}

int64_t totalBytes(LogRig& rig) {
  return rig.runtime.world().stores().live(durasim::sim::object_label(kLogClass, "a"), "SELECT total_bytes AS n FROM durability_log_seq WHERE id = 1").one().int64("n");
}

// ---------------------------------------------------------------------------------------------
// LogTrim

TEST(LogTrim, WithoutRetentionReturnsZeroAndKeepsEverything) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendRange(h, 10, 3);
    const int64_t removed = co_await h.log.trim();
    co_return json{removed};
  });
  EXPECT_EQ(out, (json{0}));
  EXPECT_EQ(rig.count("SELECT COUNT(*) AS n FROM durability_log_records"), 3);
}

TEST(LogTrim, MaxRecordsAloneRemovesTheExcessOldestFirst) {
  LogRig rig;
  rig.env.options = withRetention(std::nullopt, 2, std::nullopt);
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendRange(h, 10, 5);
    const int64_t removed = co_await h.log.trim();
    LogBounds b = co_await h.log.bounds();
    LogPage p = co_await h.log.read(3);
    co_return json{removed, boundsJson(b), offsetsOf(p)};
  });
  EXPECT_EQ(out, (json{3, json{3, 3, 5}, json{3, 4}}));
  EXPECT_EQ(totalBytes(rig), 2 * recordBytes());
}

TEST(LogTrim, MaxBytesAloneRemovesOldestUntilWithinBudget) {
  LogRig rig;
  const int64_t b = recordBytes();
  rig.env.options = withRetention(std::nullopt, std::nullopt, 2 * b + 1);
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendRange(h, 10, 5);  // 5 records of b bytes: 3b - 1 over the budget
    const int64_t removed = co_await h.log.trim();
    LogBounds b = co_await h.log.bounds();
    co_return json{removed, boundsJson(b)};
  });
  EXPECT_EQ(out, (json{3, json{3, 3, 5}}));
  EXPECT_EQ(totalBytes(rig), 2 * b);
}

TEST(LogTrim, MaxAgeAloneRemovesRecordsOlderThanTheCutoff) {
  LogRig rig;
  rig.env.options = withRetention(500, std::nullopt, std::nullopt);
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendRange(h, 10, 2);
    co_await h.ctx.clock.sleepFor(1'000);
    co_await appendRange(h, 20, 2);
    const int64_t removed = co_await h.log.trim();
    const int64_t again = co_await h.log.trim();
    LogBounds b = co_await h.log.bounds();
    co_return json{removed, again, boundsJson(b)};
  });
  EXPECT_EQ(out, (json{2, 0, json{2, 2, 4}}));
}

TEST(LogTrim, OldestFirstInPassesOfMaxBatchSize) {
  LogRig rig;
  rig.env.options = withRetention(std::nullopt, 2, std::nullopt);
  rig.env.options.maxBatchSize = 2;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendRange(h, 10, 2);
    co_await appendRange(h, 12, 2);
    co_await appendRange(h, 14, 2);
    co_await appendRange(h, 16, 1);
    const int64_t removed = co_await h.log.trim();
    LogBounds b = co_await h.log.bounds();
    LogPage p = co_await h.log.read(5);
    co_return json{removed, boundsJson(b), offsetsOf(p), p.records.front().body};
  });
  EXPECT_EQ(out, (json{5, json{5, 5, 7}, json{5, 6}, 15}));
}

TEST(LogTrim, StopsWhenAPassDeletesFewerRowsThanItsRange) {
  LogRig rig;
  auto cold = std::make_shared<FakeCold>();
  rig.env.options = withRetention(std::nullopt, 1, std::nullopt);
  rig.env.options.maxBatchSize = 2;
  rig.env.options.cold = coldOf(cold);
  const json out = rig.run([cold](LogHost& h) -> Task<json> {
    co_await appendRange(h, 10, 2);
    co_await appendRange(h, 12, 2);
    ObjectStorage* storage = &h.ctx.storage;
    cold->onWrite = [storage] { storage->exec("DELETE FROM durability_log_records WHERE \"offset\" = 1"); };  // another writer
    const int64_t removed = co_await h.log.trim();
    cold->onWrite = nullptr;
    LogBounds b = co_await h.log.bounds();
    co_return json{removed, boundsJson(b)};
  });
  // Range [0, 1] deleted only offset 0 (1 < 2): trim returns after that pass though 2 records remain.
  EXPECT_EQ(out, (json{1, json{0, 2, 4}}));
  EXPECT_EQ(json(cold->writes), (json::array({json{0, 1, 2}})));
}

TEST(LogTrim, ConcurrentCallsAreSerialized) {
  LogRig rig;
  auto cold = std::make_shared<FakeCold>();
  cold->writeDelayMs = 100;
  rig.env.options = withRetention(std::nullopt, 1, std::nullopt);
  rig.env.options.cold = coldOf(cold);
  const json out = rig.run([cold](LogHost& h) -> Task<json> {
    cold->clock = &h.ctx.clock;
    co_await appendRange(h, 10, 4);
    std::vector<Task<int64_t>> both;
    both.push_back(h.log.trim());
    both.push_back(h.log.trim());
    Task<std::vector<int64_t>> joined = when_all(std::move(both));
    std::vector<int64_t> removed = co_await joined;
    co_return json{removed, cold->maxInFlight};
  });
  EXPECT_EQ(out, (json{json{3, 0}, 1}));
  EXPECT_EQ(json(cold->writes), (json::array({json{0, 2, 3}})));
}

// ---------------------------------------------------------------------------------------------
// LogCold

TEST(LogCold, FlushWritesIntentThenColdThenSegmentAndDeletionTogether) {
  LogRig rig;
  auto cold = std::make_shared<FakeCold>();
  rig.env.options = withRetention(std::nullopt, 2, std::nullopt);
  rig.env.options.cold = coldOf(cold);
  auto during = std::make_shared<json>();
  const json out = rig.run([cold, during](LogHost& h) -> Task<json> {
    co_await appendRange(h, 10, 5);
    ObjectStorage* storage = &h.ctx.storage;
    cold->onWrite = [storage, during] {
      SqlRow r = storage
                     ->exec("SELECT (SELECT first_offset || '-' || last_offset FROM durability_log_flush) AS intent,"
                            " (SELECT COUNT(*) FROM durability_log_records) AS hot,"
                            " (SELECT COUNT(*) FROM durability_log_segments) AS segs")
                     .one();
      *during = json{r.text("intent"), r.int64("hot"), r.int64("segs")};
    };
    const int64_t removed = co_await h.log.trim();
    cold->onWrite = nullptr;
    co_return json{removed};
  });
  EXPECT_EQ(out, (json{3}));
  // While cold.write ran: intent [0, 2] stored, all records still hot, no segment yet.
  EXPECT_EQ(*during, (json{"0-2", 5, 0}));
  EXPECT_EQ(json(cold->writes), (json::array({json{0, 2, 3}})));
  const SqlRow seg = rig.runtime.world().stores().live(durasim::sim::object_label(kLogClass, "a"), "SELECT * FROM durability_log_segments").one();
  EXPECT_EQ(seg.int64("first_offset"), 0);
  EXPECT_EQ(seg.int64("last_offset"), 2);
  EXPECT_EQ(seg.text("locator"), "seg-0");
  EXPECT_EQ(seg.int64("bytes"), 3 * recordBytes());
  EXPECT_EQ(rig.count("SELECT COUNT(*) AS n FROM durability_log_flush"), 0);
  EXPECT_EQ(rig.count("SELECT COUNT(*) AS n FROM durability_log_records"), 2);
  EXPECT_EQ(totalBytes(rig), 2 * recordBytes());
}

TEST(LogCold, FailureAfterColdWriteKeepsIntentAndRewritesTheSameRange) {
  LogRig rig;
  auto cold = std::make_shared<FakeCold>();
  cold->failWrites = 1;
  rig.env.options = withRetention(std::nullopt, 2, std::nullopt);
  rig.env.options.cold = coldOf(cold);
  const json first = rig.run([](LogHost& h) -> Task<json> {
    co_await appendRange(h, 10, 5);
    try {
      co_await h.log.trim();
    } catch (const std::runtime_error& e) {
      co_return json(e.what());
    }
    co_return json(nullptr);
  });
  EXPECT_EQ(first, json("cold write lost"));
  EXPECT_EQ(rig.count("SELECT COUNT(*) AS n FROM durability_log_flush WHERE first_offset = 0 AND last_offset = 2"), 1);
  EXPECT_EQ(rig.count("SELECT COUNT(*) AS n FROM durability_log_records"), 5);
  EXPECT_EQ(rig.count("SELECT COUNT(*) AS n FROM durability_log_segments"), 0);
  const json second = rig.run([](LogHost& h) -> Task<json> {
    co_await appendRange(h, 20, 3);  // more records would change a freshly chosen range
    const int64_t removed = co_await h.log.trim();
    LogBounds b = co_await h.log.bounds();
    co_return json{removed, boundsJson(b)};
  });
  // The retry writes exactly [0, 2] again (from the intent), then trims the rest in a new pass.
  EXPECT_EQ(json(cold->writes), (json{json{0, 2, 3}, json{0, 2, 3}, json{3, 5, 3}}));
  EXPECT_EQ(second, (json{6, json{0, 6, 8}}));
  EXPECT_EQ(rig.count("SELECT COUNT(*) AS n FROM durability_log_flush"), 0);
  EXPECT_EQ(rig.count("SELECT COUNT(*) AS n FROM durability_log_segments"), 2);
}

TEST(LogCold, EmptyLocatorThrowsTypeErrorAndKeepsTheIntent) {
  LogRig rig;
  auto cold = std::make_shared<FakeCold>();
  cold->emptyLocators = 1;
  rig.env.options = withRetention(std::nullopt, 1, std::nullopt);
  rig.env.options.cold = coldOf(cold);
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendRange(h, 10, 3);
    json error;
    try {
      co_await h.log.trim();
    } catch (const TypeError& e) {
      error = json{e.name(), e.what()};
    }
    const int64_t hot = h.ctx.storage.exec("SELECT COUNT(*) AS n FROM durability_log_records").one().int64("n");
    const int64_t intent = h.ctx.storage.exec("SELECT COUNT(*) AS n FROM durability_log_flush").one().int64("n");
    const int64_t removed = co_await h.log.trim();
    co_return json{error, hot, intent, removed};
  });
  EXPECT_EQ(out, (json{json{"TypeError", "Cold storage must return a non-empty locator"}, 3, 1, 2}));
  EXPECT_EQ(json(cold->writes), (json{json{0, 1, 2}, json{0, 1, 2}}));
}

TEST(LogCold, ReadsOfFlushedOffsetsRehydrateFromTheSegment) {
  LogRig rig;
  auto cold = std::make_shared<FakeCold>();
  rig.env.options = withRetention(std::nullopt, 2, std::nullopt);
  rig.env.options.cold = coldOf(cold);
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::vector<LogAppendInput> a{rec(10, "k0"), rec(11, "k1"), rec(12, "k2"), rec(13, "k3"), rec(14, "k4")};
    co_await appendAll(h, a);
    co_await h.log.trim();
    LogPage cold = co_await h.log.read(1);
    LogPage hot = co_await h.log.read(3);
    json bodies = json::array();
    for (const LogRecord& r : cold.records) bodies.push_back(json{r.offset, r.deduplicationKey, r.body});
    co_return json{bodies, cold.nextOffset, cold.lag, offsetsOf(hot)};
  });
  // The page ends at the segment's last offset (2); lag counts up to nextOffset 5.
  EXPECT_EQ(out, (json{json{json{1, "k1", 11}, json{2, "k2", 12}}, 3, 2, json{3, 4}}));
}

TEST(LogCold, BoundsStayOrderedThroughFlushes) {
  LogRig rig;
  auto cold = std::make_shared<FakeCold>();
  rig.env.options = withRetention(std::nullopt, 2, std::nullopt);
  rig.env.options.maxBatchSize = 3;
  rig.env.options.cold = coldOf(cold);
  const json out = rig.run([](LogHost& h) -> Task<json> {
    json all = json::array();
    for (int64_t round = 0; round < 3; ++round) {
      co_await appendRange(h, 10 + 3 * round, 3);
      co_await h.log.trim();
      LogBounds b = co_await h.log.bounds();
      all.push_back(boundsJson(b));
    }
    co_return all;
  });
  EXPECT_EQ(out, (json{json{0, 1, 3}, json{0, 4, 6}, json{0, 7, 9}}));
  for (const json& b : out) {
    EXPECT_LE(b[0].get<int64_t>(), b[1].get<int64_t>());
    EXPECT_LE(b[1].get<int64_t>(), b[2].get<int64_t>());
  }
}

// ---------------------------------------------------------------------------------------------
// LogForget

TEST(LogForget, RemovesIndexEntriesSoReadsThrowTruncated) {
  LogRig rig;
  auto cold = std::make_shared<FakeCold>();
  rig.env.options = withRetention(std::nullopt, 1, std::nullopt);
  rig.env.options.maxBatchSize = 2;
  rig.env.options.cold = coldOf(cold);
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendRange(h, 10, 2);
    co_await appendRange(h, 12, 2);
    co_await appendRange(h, 14, 1);
    const int64_t removed = co_await h.log.trim();  // segments [0, 1] and [2, 3]
    const int64_t forgotten = co_await h.log.forgetColdBefore(2);
    LogBounds b = co_await h.log.bounds();
    json error;
    try {
      co_await h.log.read(0);
    } catch (const LogTruncatedError& e) {
      error = json{e.requestedOffset(), e.oldestOffset()};
    }
    LogPage p = co_await h.log.read(2);
    co_return json{removed, forgotten, boundsJson(b), error, offsetsOf(p)};
  });
  EXPECT_EQ(out, (json{4, 1, json{2, 4, 5}, json{0, 2}, json{2, 3}}));
  EXPECT_EQ(rig.count("SELECT COUNT(*) AS n FROM durability_log_segments"), 1);
}

TEST(LogForget, ForgettingEverySegmentLeavesOnlyHotRecordsReadable) {
  LogRig rig;
  auto cold = std::make_shared<FakeCold>();
  rig.env.options = withRetention(std::nullopt, 1, std::nullopt);
  rig.env.options.cold = coldOf(cold);
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendRange(h, 10, 3);
    co_await h.log.trim();
    const int64_t none = co_await h.log.forgetColdBefore(0);
    const int64_t all = co_await h.log.forgetColdBefore(100);
    LogBounds b = co_await h.log.bounds();
    json error;
    try {
      co_await h.log.read(1);
    } catch (const LogTruncatedError& e) {
      error = json{e.what(), e.requestedOffset(), e.oldestOffset()};
    }
    co_return json{none, all, boundsJson(b), error};
  });
  EXPECT_EQ(out, (json{0, 1, json{2, 2, 3}, json{"Log offset 1 was trimmed; the oldest retained offset is 2", 1, 2}}));
}

TEST(LogForget, NegativeOffsetThrowsLogAppendError) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    try {
      co_await h.log.forgetColdBefore(-1);
    } catch (const LogAppendError& e) {
      co_return json{e.name(), e.what()};
    }
    co_return json(nullptr);
  });
  EXPECT_EQ(out, (json{"LogAppendError", "Offset must be a non-negative integer"}));
}

TEST(LogForget, IndexedSegmentGoneFromColdStorageSurfacesAsTruncation) {
  LogRig rig;
  auto cold = std::make_shared<FakeCold>();
  rig.env.options = withRetention(std::nullopt, 1, std::nullopt);
  rig.env.options.cold = coldOf(cold);
  const json out = rig.run([cold](LogHost& h) -> Task<json> {
    co_await appendRange(h, 10, 4);
    co_await h.log.trim();
    cold->gone = true;
    try {
      co_await h.log.read(1);
    } catch (const LogTruncatedError& e) {
      co_return json{e.requestedOffset(), e.oldestOffset()};
    }
    co_return json(nullptr);
  });
  EXPECT_EQ(out, (json{1, 3}));
}

// ---------------------------------------------------------------------------------------------
// A flush intent met by a trim without cold storage (docs/decisions.md)

// Cold storage is configured, a flush fails and leaves its intent; a redeploy without cold storage
// deletes the range; then cold storage is configured again. The stale intent must not come back as
// an empty segment that lowers oldestOffset below records nobody can read or lease.
TEST(LogColdIntent, TrimWithoutColdDropsAPendingFlushIntent) {
  LogRig rig;
  auto cold = std::make_shared<FakeCold>();
  cold->failWrites = 1;
  rig.env.options = withRetention(std::nullopt, 2, std::nullopt);
  rig.env.options.cold = coldOf(cold);
  rig.env.options.leases = LogLeaseOptions{};
  rig.env.options.leases->maxParallelism = 2;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendRange(h, 10, 5);
    try {
      co_await h.log.trim();  // intent [0, 2]; cold.write fails
    } catch (const std::runtime_error&) {
    }
    const auto intents = [&h] { return h.ctx.storage.exec("SELECT COUNT(*) AS n FROM durability_log_flush").one().int64("n"); };
    const int64_t intentBefore = intents();
    DurabilityLog withoutCold(h.scheduler, withRetention(std::nullopt, 2, std::nullopt));
    Task<int64_t> deleting = withoutCold.trim();  // deletes [0, 2]
    const int64_t deleted = co_await deleting;
    const int64_t intentAfter = intents();
    co_await appendRange(h, 20, 1);
    co_await h.log.trim();  // cold storage again
    LogBounds b = co_await h.log.bounds();
    json leased = json::array();
    for (int call = 0; call < 2; ++call) {
      try {
        Task<std::optional<LogLease>> leasing = h.log.lease("c");
        const std::optional<LogLease> lease = co_await leasing;
        leased.push_back(lease ? json{lease->firstOffset, lease->lastOffset} : json(nullptr));
      } catch (const LogTruncatedError& e) {
        leased.push_back(e.name());
      }
    }
    co_return json{intentBefore, deleted, intentAfter, boundsJson(b), leased};
  });
  EXPECT_EQ(out, (json{1, 3, 0, json{3, 4, 6}, json{json{3, 3}, json{4, 5}}}));
  // No empty segment was written: the failed [0, 2], then the fresh range from the hot offset.
  EXPECT_EQ(json(cold->writes), (json{json{0, 2, 3}, json{3, 3, 1}}));
}

// ---------------------------------------------------------------------------------------------
// Variant H20 (log.segment_flush_two_units): each reference behaviour appears only with the flag

std::set<std::string> withFlag(bool on) {
  return on ? std::set<std::string>{std::string(variants::kSegmentFlushTwoUnits)} : std::set<std::string>{};
}

// A first flush whose cold.write fails, more appends, and a second trim; returns the cold writes
// and, per write, the flush intents stored while it ran.
json flushAfterAFailure(bool flag) {
  LogRig rig(withFlag(flag));
  auto cold = std::make_shared<FakeCold>();
  cold->failWrites = 1;
  rig.env.options = withRetention(std::nullopt, 2, std::nullopt);
  rig.env.options.cold = coldOf(cold);
  auto intents = std::make_shared<json>(json::array());
  rig.run([cold, intents](LogHost& h) -> Task<json> {
    ObjectStorage* storage = &h.ctx.storage;
    cold->onWrite = [storage, intents] {
      intents->push_back(storage->exec("SELECT COUNT(*) AS n FROM durability_log_flush").one().int64("n"));
    };
    co_await appendRange(h, 10, 5);
    try {
      co_await h.log.trim();
    } catch (const std::runtime_error&) {
    }
    co_await appendRange(h, 20, 3);
    co_await h.log.trim();
    cold->onWrite = nullptr;
    co_return json(nullptr);
  });
  return json{cold->writes, *intents};
}

TEST(LogVariantH20, NoIntentAndARecomputedRangeOnlyWithTheFlag) {
  // Log.md 6: the retry rewrites exactly [0, 2] from the intent, then flushes [3, 5].
  EXPECT_EQ(flushAfterAFailure(false), (json{json{json{0, 2, 3}, json{0, 2, 3}, json{3, 5, 3}}, json{1, 1, 1}}));
  // Reference: no intent, so the retry chooses [0, 5] afresh: first offset 0 flushed with two ranges.
  EXPECT_EQ(flushAfterAFailure(true), (json{json{json{0, 2, 3}, json{0, 5, 6}}, json{0, 0}}));
}

// Records, at every commit of the rig's object, whether the store indexes a segment that reaches a
// record that is still hot (what a crash between two flush writes would leave behind).
struct SegmentOverHotWatch : sim::TraceSink {
  explicit SegmentOverHotWatch(LogRig& r) : rig(r) {}
  void record(const sim::TraceEvent& e) override {
    if (!e.is("commit") || !rig.hasTable("durability_log_segments")) return;
    seen = seen || rig.count("SELECT COUNT(*) AS n FROM durability_log_segments"
                             " WHERE last_offset >= (SELECT MIN(\"offset\") FROM durability_log_records)") > 0;
  }
  LogRig& rig;
  bool seen = false;
};

bool segmentSeenOverHotRecords(bool flag) {
  LogRig rig(withFlag(flag));
  SegmentOverHotWatch watch(rig);
  rig.world.observe(watch);
  rig.env.options = withRetention(std::nullopt, 2, std::nullopt);
  rig.env.options.cold = coldOf(std::make_shared<FakeCold>());
  rig.run([](LogHost& h) -> Task<json> {
    co_await appendRange(h, 10, 5);
    co_await h.log.trim();
    co_return json(nullptr);
  });
  EXPECT_EQ(rig.count("SELECT COUNT(*) AS n FROM durability_log_records"), 2);
  return watch.seen;
}

TEST(LogVariantH20, SegmentRowAndDeletionCommitApartOnlyWithTheFlag) {
  EXPECT_FALSE(segmentSeenOverHotRecords(false));
  EXPECT_TRUE(segmentSeenOverHotRecords(true));
}

// Two indexed segments hold offset 6: [0, 9] under "long" and [5, 9] under "short" (as a re-flush
// of a shorter range could leave them). log.md 4.2 reads the latest-starting one.
json readOfOverlappingSegments(bool flag) {
  LogRig rig(withFlag(flag));
  auto cold = std::make_shared<FakeCold>();
  for (int64_t o = 0; o < 10; ++o) {
    const std::string key = std::to_string(o);
    cold->segments["long"].push_back(LogRecord{o, key, json("long"), 0});
    if (o >= 5) cold->segments["short"].push_back(LogRecord{o, key, json("short"), 0});
  }
  rig.env.options.cold = coldOf(cold);
  return rig.run([](LogHost& h) -> Task<json> {
    h.ctx.storage.exec("UPDATE durability_log_seq SET next_offset = 10");
    h.ctx.storage.exec("INSERT INTO durability_log_segments VALUES (0, 9, 'long', 0, 0), (5, 9, 'short', 0, 0)");
    Task<LogPage> reading = h.log.read(6, 1);
    const LogPage page = co_await reading;
    co_return page.records.at(0).body;
  });
}

TEST(LogVariantH20, SegmentLookupIgnoresTheStartOnlyWithTheFlag) {
  EXPECT_EQ(readOfOverlappingSegments(false), json("short"));
  EXPECT_EQ(readOfOverlappingSegments(true), json("long"));
}

}  // namespace
}  // namespace durasim::rt_test
