// LogPartition over RPC on the simulated runtime without faults: the append envelope and its
// definite rejections, library errors crossing RPC with their fields (LogTruncatedError,
// LogLeaseError, TypeError without the leases option), cold segments under their keys and read back,
// forgetColdBefore turning a flushed range into truncation, the "retention" alarm that trims and
// stops re-arming once no hot record remains, `retire`, after which no incarnation has a log, and
// `ping`, the application's own envelope.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/runtime_test_harness.h"
#include "workloads/log_partition.h"

namespace durasim::workloads {
namespace {

using nlohmann::json;

LogPartitionConfig config(bool leases, bool cold) {
  LogPartitionConfig c;
  c.maxBatchSize = 5;
  c.retention.maxRecords = 3;
  c.cold = cold;
  if (leases) c.leases = PartitionLeasePlan{2, 5'000, std::nullopt, false, false};
  c.retentionSweepMs = 3'600'000;  // explicit trim() calls only, unless a test shortens it
  return c;
}

struct PartitionRig {
  explicit PartitionRig(const LogPartitionConfig& c) {
    rig.runtime.define_class(LogPartition::kClass, [c](ObjectContext& ctx) { return std::make_unique<LogPartition>(ctx, c); });
  }
  // Calls `method` on p0 and runs until it answered; the RPC itself must succeed.
  json call(const std::string& method, json args = json::object()) {
    rt_test::CallPtr out = rig.call(LogPartition::kClass, "p0", method, std::move(args));
    rig.world.run_until(rig.world.now() + 60'000, [&] { return !out->done; });
    EXPECT_TRUE(out->done && out->ok) << method << ": " << out->error;
    return out->value;
  }
  json append(int first, int count) {
    json records = json::array();
    for (int i = first; i < first + count; ++i) {
      std::string key = "k";
      key += std::to_string(i);
      records.push_back({{"key", key}, {"body", {{"seq", i}}}});
    }
    return call("append", {{"records", records}});
  }
  rt_test::Rig rig;
};

TEST(LogPartition, AppendAnswersTheEnvelope) {
  PartitionRig p(config(false, false));
  const json ok = p.append(0, 3);
  EXPECT_TRUE(ok.at("success").get<bool>());
  EXPECT_EQ(ok.at("value"), json({0, 1, 2}));
  EXPECT_TRUE(ok.at("load").contains("outbound"));
  const EnqueueResult<std::vector<int64_t>> parsed = appendResultFromJson(ok);
  EXPECT_EQ(parsed.value, (std::vector<int64_t>{0, 1, 2}));

  const json again = p.append(1, 2);  // the same keys: the original offsets, nothing new
  EXPECT_EQ(again.at("value"), json({1, 2}));
  const json empty = p.call("append", {{"records", json::array()}});
  EXPECT_FALSE(empty.at("success").get<bool>());
  EXPECT_EQ(empty.at("error").at("name"), "LogAppendError");
  EXPECT_FALSE(p.append(10, 6).at("success").get<bool>());  // over maxBatchSize
  EXPECT_EQ(p.call("bounds").at("result").at("nextOffset"), 3);
}

TEST(LogPartition, TruncationCrossesRpcWithItsFields) {
  PartitionRig p(config(false, false));
  p.append(0, 5);
  EXPECT_EQ(p.call("trim").at("result"), 2);  // maxRecords 3, no cold: deleted
  const json truncated = p.call("read", {{"from", 0}});
  ASSERT_TRUE(truncated.contains("error")) << truncated.dump();
  EXPECT_EQ(truncated.at("error").at("name"), "LogTruncatedError");
  EXPECT_EQ(truncated.at("error").at("requestedOffset"), 0);
  EXPECT_EQ(truncated.at("error").at("oldestOffset"), 2);
  const json page = p.call("read", {{"from", 2}, {"limit", 10}});
  EXPECT_EQ(page.at("result").at("nextOffset"), 5);
  EXPECT_EQ(page.at("result").at("records").size(), 3u);
}

TEST(LogPartition, LeaseCallsWithoutTheLeasesOptionAreTypeErrors) {
  PartitionRig p(config(false, false));
  p.append(0, 2);
  for (const char* method : {"lease", "leases"}) {
    const json reply = p.call(method, {{"consumer", "L0"}});
    ASSERT_TRUE(reply.contains("error")) << reply.dump();
    EXPECT_EQ(reply.at("error").at("name"), "TypeError");
  }
  const json ack = p.call("ack", {{"consumer", "L0"}, {"batchId", "b"}});
  EXPECT_EQ(ack.at("error").at("name"), "TypeError");
}

TEST(LogPartition, LeaseSettlementsAndTheirRefusals) {
  PartitionRig p(config(true, false));
  p.append(0, 4);
  const json lease = p.call("lease", {{"consumer", "L0"}, {"limit", 2}}).at("result");
  ASSERT_FALSE(lease.is_null());
  EXPECT_EQ(lease.at("firstOffset"), 0);
  EXPECT_EQ(lease.at("lastOffset"), 1);
  EXPECT_EQ(lease.at("records").size(), 2u);
  const std::string batchId = lease.at("batchId").get<std::string>();

  const json wrong = p.call("ack", {{"consumer", "L0-other"}, {"batchId", batchId}});
  EXPECT_EQ(wrong.at("error").at("name"), "LogLeaseError");
  EXPECT_EQ(wrong.at("error").at("batchId"), batchId);
  EXPECT_TRUE(p.call("ack", {{"consumer", "L0"}, {"batchId", batchId}}).contains("result"));
  EXPECT_EQ(p.call("ack", {{"consumer", "L0"}, {"batchId", batchId}}).at("error").at("name"), "LogLeaseError");
  EXPECT_EQ(p.call("cursor", {{"consumer", "L0"}}).at("result"), 2);
  EXPECT_TRUE(p.call("leases", {{"consumer", "L0"}}).at("result").is_array());
}

TEST(LogPartition, ColdSegmentsAreKeyedReadBackAndForgotten) {
  PartitionRig p(config(false, true));
  p.append(0, 5);
  EXPECT_EQ(p.call("trim").at("result"), 2);
  sim::ColdStore& cold = p.rig.runtime.cold_store();
  EXPECT_TRUE(cold.head(kLogBucket, segmentKey("p0", 0, 1), p.rig.world.now()).has_value());
  const json page = p.call("read", {{"from", 0}});
  ASSERT_TRUE(page.contains("result")) << page.dump();
  EXPECT_EQ(page.at("result").at("records").at(1).at("key"), "k1");
  EXPECT_EQ(p.call("bounds").at("result").at("hotOffset"), 2);

  EXPECT_EQ(p.call("forgetColdBefore", {{"offset", 2}}).at("result"), 1);
  EXPECT_EQ(p.call("read", {{"from", 0}}).at("error").at("name"), "LogTruncatedError");
}

TEST(LogPartition, RetentionAlarmTrimsAndStopsWhenNothingIsHot) {
  LogPartitionConfig c = config(false, false);
  c.retention = LogRetention{1'000, std::nullopt, std::nullopt};  // maxAgeMs only: everything ages out
  c.retentionSweepMs = 5'000;
  PartitionRig p(c);
  p.append(0, 3);
  p.rig.run_for(120'000);
  const json bounds = p.call("bounds").at("result");
  EXPECT_EQ(bounds.at("hotOffset"), 3);
  EXPECT_EQ(bounds.at("nextOffset"), 3);
  EXPECT_TRUE(p.rig.runtime.world().stores().live(durasim::sim::object_label(LogPartition::kClass, "p0"), "SELECT * FROM app_partition").toVector().empty())
      << "the sweep flag is cleared once no hot record remains";
}

int64_t logTables(PartitionRig& p) {
  return p.rig.runtime.world()
      .stores()
      .live(durasim::sim::object_label(LogPartition::kClass, "p0"),
            "SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name LIKE 'durability_log%'")
      .one()
      .int64("n");
}

TEST(LogPartition, RetireRemovesTheLogForGood) {
  PartitionRig p(config(true, true));
  p.append(0, 4);
  ASSERT_EQ(logTables(p), 7);  // the log's five tables and the two of its leases
  EXPECT_TRUE(p.call("retire").at("result").is_null());
  EXPECT_EQ(logTables(p), 0);
  EXPECT_EQ(p.call("bounds").at("error").at("name"), kPartitionRetired);
  EXPECT_EQ(p.call("append", {{"records", json::array({{{"body", 1}}})}}).at("error").at("name"), kPartitionRetired);
  EXPECT_TRUE(p.call("retire").at("result").is_null());  // idempotent
  p.rig.run_for(600'000);  // the object is evicted: its next incarnation constructs no log
  EXPECT_EQ(p.call("lease", {{"consumer", "L0"}}).at("error").at("name"), kPartitionRetired);
  EXPECT_GE(p.rig.status(durasim::sim::object_label(LogPartition::kClass, "p0"))->incarnations, 2);
  EXPECT_EQ(logTables(p), 0);
}

// An append's envelope counts the append itself in flight; a ping's is taken outside any append.
TEST(LogPartition, PingAnswersAnEnvelopeOfItsOwn) {
  PartitionRig p(config(true, true));
  const json appended = p.append(0, 2);
  EXPECT_EQ(appended.at("load").at("inbound").at("inFlight"), 1);
  const json ping = p.call("ping");
  EXPECT_EQ(ping.at("success"), true);
  EXPECT_EQ(ping.at("value"), json::array());
  EXPECT_EQ(ping.at("load").at("inbound").at("inFlight"), 0);
  EXPECT_EQ(ping.at("load").at("inbound").at("completed"), 1);
  EXPECT_TRUE(p.call("retire").at("result").is_null());
  const json retired = p.call("ping");
  EXPECT_EQ(retired.at("success"), true);
  EXPECT_EQ(retired.at("load").at("outbound").at("pendingDeliveries"), 0);
}

TEST(LogPartition, SegmentKeysRoundTrip) {
  const std::optional<SegmentRange> range = parseSegmentKey(segmentKey("p3", 120, 139));
  ASSERT_TRUE(range.has_value());
  EXPECT_EQ(range->partition, "p3");
  EXPECT_EQ(range->first, 120);
  EXPECT_EQ(range->last, 139);
  EXPECT_FALSE(parseSegmentKey("other/p3/1-2").has_value());
  EXPECT_FALSE(parseSegmentKey("segments/p3/x-2").has_value());
}

}  // namespace
}  // namespace durasim::workloads
