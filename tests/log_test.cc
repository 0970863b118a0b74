// DurabilityLog (log.md 1-5, 8; errors-and-contract.md 2) on the simulated runtime: option checks,
// migrations (and the H19 variant of migrate(none)), atomic deduplicated appends and their
// rejections, reads, bounds, forward-only cursors and the load backlog. Each test drives one object
// call and checks what it returned or stored.
#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/errors.h"
#include "engine/log.h"
#include "engine/scheduler.h"
#include "engine/variants.h"
#include "tests/log_test_rig.h"

namespace durasim::rt_test {
namespace {

json resultJson(const EnqueueResult<std::vector<int64_t>>& r) {
  json out{{"success", r.success}, {"backlog", r.load.outbound.pendingDeliveries}};
  if (r.value) out["value"] = *r.value;
  if (r.error) out["error"] = json{{"name", r.error->name}, {"message", r.error->message}};
  return out;
}

Task<json> appendAll(LogHost& h, const std::vector<LogAppendInput>& records) {
  std::vector<LogAppendInput> copy = records;
  Task<EnqueueResult<std::vector<int64_t>>> t = h.log.append(std::move(copy));
  EnqueueResult<std::vector<int64_t>> r = co_await t;
  co_return resultJson(r);
}

json pageJson(const LogPage& p) {
  json records = json::array();
  for (const LogRecord& r : p.records) records.push_back(json{{"offset", r.offset}, {"key", r.deduplicationKey}, {"body", r.body}});
  return json{{"records", records}, {"next", p.nextOffset}, {"lag", p.lag}};
}

// Constructs a second log with `options` inside the object; returns the error message or "ok".
json construct(LogRig& rig, LogOptions options) {
  auto shared = std::make_shared<LogOptions>(std::move(options));
  return rig.run([shared](LogHost& h) -> Task<json> {
    try {
      DurabilityLog other(h.scheduler, *shared);
    } catch (const RangeError& e) {
      co_return json{{"name", e.name()}, {"message", e.what()}};
    }
    co_return json("ok");
  });
}

// ---------------------------------------------------------------------------------------------

TEST(LogOptions, RejectsNonPositiveMaxBatchSize) {
  LogRig rig;
  LogOptions o;
  o.maxBatchSize = 0;
  EXPECT_EQ(construct(rig, o), (json{{"name", "RangeError"}, {"message", "maxBatchSize must be a positive integer"}}));
}

TEST(LogOptions, RejectsNonPositiveRetentionFieldsWithDottedNames) {
  LogRig rig;
  LogOptions a;
  a.retention = LogRetention{0, std::nullopt, std::nullopt};
  EXPECT_EQ(construct(rig, a).at("message"), "retention.maxAgeMs must be a positive integer");
  LogOptions b;
  b.retention = LogRetention{std::nullopt, -1, std::nullopt};
  EXPECT_EQ(construct(rig, b).at("message"), "retention.maxRecords must be a positive integer");
  LogOptions c;
  c.retention = LogRetention{std::nullopt, std::nullopt, 0};
  EXPECT_EQ(construct(rig, c).at("message"), "retention.maxBytes must be a positive integer");
}

TEST(LogOptions, RejectsMaxBytesAboveOneGiB) {
  LogRig rig;
  LogOptions o;
  o.retention = LogRetention{std::nullopt, std::nullopt, kMaxLogBytes + 1};
  EXPECT_EQ(construct(rig, o).at("message"), "retention.maxBytes must not exceed 1073741824 bytes");
  LogOptions exact;
  exact.retention = LogRetention{std::nullopt, std::nullopt, kMaxLogBytes};
  EXPECT_EQ(construct(rig, exact), json("ok"));
}

TEST(LogOptions, RejectsNonPositiveLeaseFields) {
  LogRig rig;
  LogOptions a;
  a.leases = LogLeaseOptions{};
  a.leases->maxParallelism = 0;
  EXPECT_EQ(construct(rig, a).at("message"), "leases.maxParallelism must be a positive integer");
  LogOptions b;
  b.leases = LogLeaseOptions{};
  b.leases->leaseMs = 0;
  EXPECT_EQ(construct(rig, b).at("message"), "leases.leaseMs must be a positive integer");
  LogOptions c;
  c.leases = LogLeaseOptions{};
  c.leases->maxAttempts = 0;
  EXPECT_EQ(construct(rig, c).at("message"), "leases.maxAttempts must be a positive integer");
  EXPECT_FALSE(rig.hasTable("durability_log_leases"));
}

TEST(LogMigrations, ConstructorCreatesLogTablesButNoLeaseTablesByDefault) {
  LogRig rig;
  rig.run([](LogHost&) -> Task<json> { co_return json(nullptr); });
  for (const char* t : {"durability_log_records", "durability_log_cursors", "durability_log_segments", "durability_log_seq",
                        "durability_log_flush"})
    EXPECT_TRUE(rig.hasTable(t)) << t;
  EXPECT_FALSE(rig.hasTable("durability_log_leases"));
  EXPECT_FALSE(rig.hasTable("durability_log_allocations"));
  EXPECT_EQ(rig.count("SELECT next_offset + total_bytes AS n FROM durability_log_seq"), 0);
}

TEST(LogMigrations, LeaseOptionCreatesLeaseTables) {
  LogRig rig;
  rig.env.options.leases = LogLeaseOptions{};
  rig.run([](LogHost&) -> Task<json> { co_return json(nullptr); });
  EXPECT_TRUE(rig.hasTable("durability_log_leases"));
  EXPECT_TRUE(rig.hasTable("durability_log_allocations"));
}

TEST(LogMigrations, NoneRevertsLeasesThenLogAndLatestAppliesLogOnly) {
  LogRig rig;
  rig.env.options.leases = LogLeaseOptions{};
  const json out = rig.run([](LogHost& h) -> Task<json> {
    MigrationResult down = DurabilityLog::migrate(h.ctx.storage, MigrationTarget::none());
    MigrationResult up = DurabilityLog::migrate(h.ctx.storage, MigrationTarget::latest());
    co_return json{{"down", down.rolledBack}, {"up", up.applied}};
  });
  EXPECT_EQ(out.at("down"), (json{"durability_0007_create_log_leases", "durability_0006_create_log"}));
  EXPECT_EQ(out.at("up"), (json{"durability_0006_create_log"}));
  EXPECT_TRUE(rig.hasTable("durability_log_records"));
  EXPECT_FALSE(rig.hasTable("durability_log_leases"));
}

// Variant H19 (log.migrate_null_keeps_lease_tables): migrate(ctx, none()) on a log that used leases.
json retireLeasedLog(std::set<std::string> variants) {
  LogRig rig(std::move(variants));
  rig.env.options.leases = LogLeaseOptions{};
  const json rolledBack = rig.run([](LogHost& h) -> Task<json> {
    MigrationResult down = DurabilityLog::migrate(h.ctx, MigrationTarget::none());
    co_return json(down.rolledBack);
  });
  return json{rolledBack, rig.hasTable("durability_log_records"), rig.hasTable("durability_log_leases"),
              rig.hasTable("durability_log_allocations")};
}

TEST(LogMigrations, NoneThroughTheContextLeavesLeaseTablesOnlyWithTheH19Flag) {
  EXPECT_EQ(retireLeasedLog({}), (json{json{"durability_0007_create_log_leases", "durability_0006_create_log"}, false, false, false}));
  EXPECT_EQ(retireLeasedLog({std::string(variants::kMigrateNullKeepsLeaseTables)}),
            (json{json{"durability_0006_create_log"}, false, true, true}));
}

TEST(LogAppend, AssignsDenseOffsetsInInputOrder) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::vector<LogAppendInput> a{rec(1), rec(2), rec(3)};
    json first = co_await appendAll(h, a);
    const std::vector<LogAppendInput> b{rec(4)};
    json second = co_await appendAll(h, b);
    co_return json{first, second};
  });
  EXPECT_EQ(out[0].at("value"), (json{0, 1, 2}));
  EXPECT_EQ(out[1].at("value"), (json{3}));
  EXPECT_EQ(rig.count("SELECT next_offset AS n FROM durability_log_seq"), 4);
  EXPECT_EQ(rig.count("SELECT total_bytes - (SELECT SUM(bytes) FROM durability_log_records) AS n FROM durability_log_seq"), 0);
}

TEST(LogAppend, SingleRecordOverloadAppendsOne) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const LogAppendInput one = rec(json{{"x", 1}}, "k");
    Task<EnqueueResult<std::vector<int64_t>>> t = h.log.append(one);
    EnqueueResult<std::vector<int64_t>> r = co_await t;
    co_return resultJson(r);
  });
  EXPECT_EQ(out.at("value"), (json{0}));
}

TEST(LogAppend, DedupHitReturnsOriginalOffsetAndWritesNothing) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::vector<LogAppendInput> a{rec(1, "a"), rec(2, "b")};
    co_await appendAll(h, a);
    const std::vector<LogAppendInput> b{rec(9, "b"), rec(3, "c")};
    json second = co_await appendAll(h, b);
    co_return second;
  });
  EXPECT_EQ(out.at("value"), (json{1, 2}));
  EXPECT_EQ(rig.count("SELECT COUNT(*) AS n FROM durability_log_records"), 3);
  EXPECT_EQ(rig.count("SELECT payload LIKE '%2%' AS n FROM durability_log_records WHERE dedup_key = 'b'"), 1);
}

TEST(LogAppend, DuplicatesInOneBatchShareOffsetAndKeepLastPayload) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::vector<LogAppendInput> a{rec("first", "x"), rec("other"), rec("last", "x")};
    json r = co_await appendAll(h, a);
    LogPage p = co_await h.log.read(0);
    co_return json{r, pageJson(p)};
  });
  EXPECT_EQ(out[0].at("value"), (json{0, 1, 0}));
  EXPECT_EQ(out[1].at("records")[0].at("body"), "last");
  EXPECT_EQ(out[1].at("records")[0].at("key"), "x");
  EXPECT_EQ(out[1].at("records").size(), 2u);
}

// Each definite rejection returns LogAppendError and writes nothing.
json rejection(LogRig& rig, std::shared_ptr<std::vector<LogAppendInput>> batch) {
  return rig.run([batch](LogHost& h) -> Task<json> {
    json r = co_await appendAll(h, *batch);
    co_return r;
  });
}

TEST(LogAppend, RejectsEmptyBatch) {
  LogRig rig;
  const json r = rejection(rig, std::make_shared<std::vector<LogAppendInput>>());
  EXPECT_EQ(r.at("success"), false);
  EXPECT_EQ(r.at("error"), (json{{"name", "LogAppendError"}, {"message", "Append requires at least one record"}}));
  EXPECT_FALSE(r.contains("value"));
}

TEST(LogAppend, RejectsOversizedBatchAtConfiguredLimit) {
  LogRig rig;
  rig.env.options.maxBatchSize = 2;
  const json r = rejection(rig, std::make_shared<std::vector<LogAppendInput>>(std::vector<LogAppendInput>{rec(1), rec(2), rec(3)}));
  EXPECT_EQ(r.at("error").at("message"), "Append accepts at most 2 records");
  EXPECT_EQ(rig.count("SELECT COUNT(*) AS n FROM durability_log_records"), 0);
}

TEST(LogAppend, DefaultMaxBatchSizeIs100) {
  LogRig rig;
  const json r = rejection(rig, std::make_shared<std::vector<LogAppendInput>>(101, rec(1)));
  EXPECT_EQ(r.at("error").at("message"), "Append accepts at most 100 records");
  const json ok = rejection(rig, std::make_shared<std::vector<LogAppendInput>>(100, rec(1)));
  EXPECT_EQ(ok.at("success"), true);
}

TEST(LogAppend, RejectsEmptyDeduplicationKeyAndWritesNothing) {
  LogRig rig;
  const json r = rejection(rig, std::make_shared<std::vector<LogAppendInput>>(std::vector<LogAppendInput>{rec(1, "ok"), rec(2, "")}));
  EXPECT_EQ(r.at("error").at("message"), "Deduplication key must be a non-empty string");
  EXPECT_EQ(rig.count("SELECT COUNT(*) AS n FROM durability_log_records"), 0);
}

TEST(LogAppend, RejectsUnserializableBodyAndWritesNothing) {
  LogRig rig;
  const json r = rejection(rig, std::make_shared<std::vector<LogAppendInput>>(
                                    std::vector<LogAppendInput>{rec(1), rec(json(std::numeric_limits<double>::quiet_NaN()))}));
  EXPECT_EQ(r.at("error").at("message"), "Record body is not serializable JSON");
  EXPECT_EQ(rig.count("SELECT COUNT(*) AS n FROM durability_log_records"), 0);
  EXPECT_EQ(rig.count("SELECT next_offset AS n FROM durability_log_seq"), 0);
}

TEST(LogRead, ReturnsRecordsFromOffsetWithLagAndNextOffset) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::vector<LogAppendInput> a{rec("a"), rec("b"), rec("c"), rec("d")};
    co_await appendAll(h, a);
    LogPage p = co_await h.log.read(1, 2);
    co_return pageJson(p);
  });
  EXPECT_EQ(out.at("records").size(), 2u);
  EXPECT_EQ(out.at("records")[0].at("offset"), 1);
  EXPECT_EQ(out.at("records")[1].at("body"), "c");
  EXPECT_EQ(out.at("next"), 3);
  EXPECT_EQ(out.at("lag"), 1);
}

TEST(LogRead, LimitIsCappedAtMaxBatchSize) {
  LogRig rig;
  rig.env.options.maxBatchSize = 2;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::vector<LogAppendInput> a{rec(1), rec(2)};
    co_await appendAll(h, a);
    co_await appendAll(h, a);
    LogPage p = co_await h.log.read(0, 50);
    co_return pageJson(p);
  });
  EXPECT_EQ(out.at("records").size(), 2u);
  EXPECT_EQ(out.at("lag"), 2);
}

TEST(LogRead, EmptyPageNextOffsetIsMaxOfFromAndNext) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::vector<LogAppendInput> a{rec(1)};
    co_await appendAll(h, a);
    LogPage atEnd = co_await h.log.read(1);
    LogPage past = co_await h.log.read(7);
    co_return json{pageJson(atEnd), pageJson(past)};
  });
  EXPECT_EQ(out[0].at("next"), 1);
  EXPECT_EQ(out[1].at("next"), 7);
  EXPECT_EQ(out[1].at("lag"), 0);
}

TEST(LogRead, ThrowsOnNonPositiveLimitAndNegativeOffset) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    json errors = json::array();
    try {
      co_await h.log.read(0, 0);
    } catch (const RangeError& e) {
      errors.push_back(json{e.name(), e.what()});
    }
    try {
      co_await h.log.read(-1);
    } catch (const LogAppendError& e) {
      errors.push_back(json{e.name(), e.what()});
    }
    co_return errors;
  });
  EXPECT_EQ(out, json::array({json::array({"RangeError", "limit must be a positive integer"}),
                             json::array({"LogAppendError", "Offset must be a non-negative integer"})}));
}

TEST(LogRead, BelowOldestThrowsLogTruncatedError) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::vector<LogAppendInput> a{rec(1), rec(2), rec(3)};
    co_await appendAll(h, a);
    h.ctx.storage.exec("DELETE FROM durability_log_records WHERE \"offset\" < 2");
    try {
      co_await h.log.read(1);
    } catch (const LogTruncatedError& e) {
      co_return json{e.what(), e.requestedOffset(), e.oldestOffset()};
    }
    co_return json(nullptr);
  });
  EXPECT_EQ(out, (json{"Log offset 1 was trimmed; the oldest retained offset is 2", 1, 2}));
}

TEST(LogRead, FlushedOffsetWithoutColdStorageThrowsTruncated) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::vector<LogAppendInput> a{rec(1), rec(2), rec(3)};
    co_await appendAll(h, a);
    h.ctx.storage.exec("DELETE FROM durability_log_records WHERE \"offset\" < 2");
    h.ctx.storage.exec("INSERT INTO durability_log_segments VALUES (0, 1, 'loc', 2, 0)");
    try {
      co_await h.log.read(0);
    } catch (const LogTruncatedError& e) {
      co_return json{e.requestedOffset(), e.oldestOffset()};
    }
    co_return json(nullptr);
  });
  EXPECT_EQ(out, (json{0, 2}));
}

TEST(LogBounds, EmptyLogHasAllBoundsAtNextOffset) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    LogBounds b = co_await h.log.bounds();
    co_return json{b.oldestOffset, b.hotOffset, b.nextOffset};
  });
  EXPECT_EQ(out, (json{0, 0, 0}));
}

TEST(LogBounds, OrderedOldestHotNext) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::vector<LogAppendInput> a{rec(1), rec(2), rec(3), rec(4)};
    co_await appendAll(h, a);
    h.ctx.storage.exec("DELETE FROM durability_log_records WHERE \"offset\" < 2");
    h.ctx.storage.exec("INSERT INTO durability_log_segments VALUES (1, 1, 'loc', 1, 0)");
    LogBounds b = co_await h.log.bounds();
    co_return json{b.oldestOffset, b.hotOffset, b.nextOffset};
  });
  EXPECT_EQ(out, (json{1, 2, 4}));
}

TEST(LogCursor, AbsentUntilFirstCommit) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::string k_c = "c";
    Task<std::optional<int64_t>> reading = h.log.cursor(k_c);
    std::optional<int64_t> before = co_await reading;
    Task<void> committing = h.log.commit(k_c, 3);
    co_await committing;
    Task<std::optional<int64_t>> rereading = h.log.cursor(k_c);
    std::optional<int64_t> after = co_await rereading;
    co_return json{before.has_value(), after.value_or(-1)};
  });
  EXPECT_EQ(out, (json{false, 3}));
}

TEST(LogCursor, CommitOnlyMovesForwardAndAcceptsPastNext) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::string k_c = "c";
    Task<void> first = h.log.commit(k_c, 5);
    co_await first;
    Task<void> backwards = h.log.commit(k_c, 2);
    co_await backwards;
    Task<std::optional<int64_t>> readBehind = h.log.cursor(k_c);
    std::optional<int64_t> behind = co_await readBehind;
    Task<void> again = h.log.commit(k_c, 5);
    co_await again;
    Task<std::optional<int64_t>> readSame = h.log.cursor(k_c);
    std::optional<int64_t> same = co_await readSame;
    Task<void> far = h.log.commit(k_c, 1000);
    co_await far;
    Task<std::optional<int64_t>> readMoved = h.log.cursor(k_c);
    std::optional<int64_t> moved = co_await readMoved;
    co_return json{*behind, *same, *moved};
  });
  EXPECT_EQ(out, (json{5, 5, 1000}));
}

TEST(LogCursor, NegativeCommitThrowsAndWritesNothing) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::string k_c = "c";
    try {
      Task<void> committing = h.log.commit(k_c, -1);
      co_await committing;
    } catch (const LogAppendError& e) {
      co_return json(e.what());
    }
    co_return json(nullptr);
  });
  EXPECT_EQ(out, "Offset must be a non-negative integer");
  EXPECT_EQ(rig.count("SELECT COUNT(*) AS n FROM durability_log_cursors"), 0);
}

TEST(LogCursor, CursorsAreSortedByConsumer) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::string k_alpha = "alpha";
    const std::string k_zeta = "zeta";
    Task<void> zeta = h.log.commit(k_zeta, 1);
    co_await zeta;
    Task<void> alpha = h.log.commit(k_alpha, 2);
    co_await alpha;
    std::map<std::string, int64_t> all = co_await h.log.cursors();
    json list = json::array();
    for (const auto& [c, o] : all) list.push_back(json{c, o});
    co_return list;
  });
  EXPECT_EQ(out, json::array({json::array({"alpha", 2}), json::array({"zeta", 1})}));
}

TEST(LogLoad, BacklogIsFromFurthestBehindCursor) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::string k_fast = "fast";
    const std::string k_slow = "slow";
    LoadSnapshot none = co_await h.log.load();
    const std::vector<LogAppendInput> a{rec(1), rec(2), rec(3), rec(4), rec(5)};
    json appended = co_await appendAll(h, a);
    Task<void> fast = h.log.commit(k_fast, 4);
    co_await fast;
    Task<void> slow = h.log.commit(k_slow, 1);
    co_await slow;
    LoadSnapshot some = co_await h.log.load();
    co_return json{none.outbound.pendingDeliveries, appended.at("backlog"), some.outbound.pendingDeliveries};
  });
  EXPECT_EQ(out, (json{0, 0, 4}));
}

}  // namespace
}  // namespace durasim::rt_test
