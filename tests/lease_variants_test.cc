// The lease variants of hazards.md (H4-H8, engine/variants.h) on the real DurabilityLog: for each
// flag one deterministic scenario, run with the flag off and on, whose outcome shows the reference
// behaviour only with the flag on (two writes for a fresh lease, advance from zero, a batch-limited
// advance, skips without advance, an ack in three units, truncation that blocks, settlement by any
// consumer).
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/errors.h"
#include "engine/log.h"
#include "engine/variants.h"
#include "tests/log_test_rig.h"

namespace durasim::rt_test {
namespace {

const std::string kC = "c";
const std::string kD = "d";

// A LogRig whose objects run with `flag` switched on, or with no variant when `on` is false.
sim::RuntimeOptions withVariant(std::string_view flag, bool on) {
  sim::RuntimeOptions options;
  if (on) options.variants.insert(std::string(flag));
  return options;
}

// The lease as [first, last, attempt], "none", or [error name, requested, oldest] for a truncation,
// or the name of another error; `ids` collects the batch ids granted.
Task<json> leaseOf(LogHost& h, const std::string& consumer, std::vector<std::string>* ids = nullptr,
                   std::optional<int64_t> limit = std::nullopt) {
  try {
    Task<std::optional<LogLease>> t = h.log.lease(consumer, limit);
    std::optional<LogLease> lease = co_await t;
    if (!lease) co_return json("none");
    if (ids) ids->push_back(lease->batchId);
    co_return json{lease->firstOffset, lease->lastOffset, lease->attempt};
  } catch (const LogTruncatedError& e) {
    co_return json{"LogTruncatedError", e.requestedOffset(), e.oldestOffset()};
  } catch (const DurabilityError& e) {
    co_return json(e.name());
  }
}

Task<void> appendN(LogHost& h, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    Task<EnqueueResult<std::vector<int64_t>>> t = h.log.append(rec(json(i)));
    EnqueueResult<std::vector<int64_t>> r = co_await t;
    EXPECT_TRUE(r.success);
  }
}

Task<void> trimLog(LogHost& h) {
  Task<int64_t> t = h.log.trim();
  co_await t;
}

LogOptions leased(int64_t maxParallelism, int64_t maxBatchSize = 2) {
  LogOptions o;
  o.maxBatchSize = maxBatchSize;
  o.leases = LogLeaseOptions{};
  o.leases->maxParallelism = maxParallelism;
  o.leases->leaseMs = 1'000;
  return o;
}

// Runs every script as its own call on object "a", the i-th sent `delays[i]` ms after the first
// (strictly increasing, so they arrive in this order), and returns their results.
json runTogether(LogRig& rig, const std::vector<int64_t>& delays, std::vector<LogScript> scripts) {
  std::vector<LogScript>* queue = &scripts;
  std::size_t next = 0;
  std::size_t* turn = &next;
  rig.env.script = [queue, turn](LogHost& h) -> Task<json> {
    LogScript script = (*queue)[(*turn)++];
    Task<json> running = script(h);
    co_return co_await running;
  };
  std::vector<CallPtr> calls;
  for (int64_t delay : delays) calls.push_back(rig.Rig::call(kLogClass, "a", "run", json::object(), delay));
  rig.run_for(5'000);
  json results = json::array();
  for (const CallPtr& call : calls) {
    EXPECT_TRUE(call->ok) << call->error;
    results.push_back(call->value);
  }
  return results;
}

// ---------------------------------------------------------------------------------------------
// H4 log.lease_two_write_allocation: a second lease() during the first one's cold read gets the
// same range, because the first wrote nothing before loading its records.

struct SlowColdStore {
  std::map<std::string, std::vector<LogRecord>> segments;
  LogHost* host = nullptr;  // set by the first script; reads sleep on its clock
};

Task<std::string> storeSegment(SlowColdStore* cold, LogSegment segment) {
  const std::string locator = "seg-" + std::to_string(segment.firstOffset);
  cold->segments[locator] = segment.records;
  co_return locator;
}

Task<std::optional<std::vector<LogRecord>>> readSegmentSlowly(SlowColdStore* cold, std::string locator) {
  Task<void> waiting = cold->host->ctx.clock.sleepFor(50);
  co_await waiting;
  co_return cold->segments.at(locator);
}

json leaseDuringAColdRead(bool on) {
  LogRig rig(withVariant(variants::kLeaseTwoWriteAllocation, on));
  SlowColdStore cold;
  SlowColdStore* store = &cold;
  rig.env.options = leased(2, 3);
  rig.env.options.retention = LogRetention{std::nullopt, 1, std::nullopt};
  rig.env.options.cold = LogColdStorage{[store](const LogSegment& s) { return storeSegment(store, s); },
                                        [store](const std::string& l) { return readSegmentSlowly(store, l); }};
  rig.run([store](LogHost& h) -> Task<json> {
    store->host = &h;
    co_await appendN(h, 4);
    co_await trimLog(h);  // [0, 2] flushed to a cold segment
    co_return json(nullptr);
  });
  return runTogether(rig, {0, 10}, {[](LogHost& h) { return leaseOf(h, kC); }, [](LogHost& h) { return leaseOf(h, kC); }});
}

TEST(LeaseVariants, TwoWriteAllocationHandsOutARangeTwiceDuringAColdRead) {
  EXPECT_EQ(leaseDuringAColdRead(false), (json{json{0, 2, 1}, json{3, 3, 1}}));
  EXPECT_EQ(leaseDuringAColdRead(true), (json{json{0, 2, 1}, json{0, 2, 1}}));
}

// ---------------------------------------------------------------------------------------------
// H5 log.lease_advance_from_zero: offsets trimmed before the first lease get no gap row, and the
// cursor of a consumer without one never leaves 0.

json leaseAboveATrimmedStart(bool on) {
  LogRig rig(withVariant(variants::kLeaseAdvanceFromZero, on));
  rig.env.options = leased(1);
  rig.env.options.retention = LogRetention{std::nullopt, 2, std::nullopt};
  return rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 5);
    co_await trimLog(h);  // oldest 3
    std::vector<std::string> ids;
    json lease = co_await leaseOf(h, kC, &ids);
    json cursor = co_await cursorOf(h, kC);
    json ack = co_await settleOf(h, true, kC, ids.at(0));
    json acked = co_await cursorOf(h, kC);
    json rows = co_await rowsOf(h, kC);
    co_return json{lease, cursor, ack, acked, rows};
  });
}

TEST(LeaseVariants, AdvanceFromZeroLeavesTrimmedOffsetsUncoveredAndTheCursorStuck) {
  EXPECT_EQ(leaseAboveATrimmedStart(false), (json{json{3, 4, 1}, 3, "ok", 5, json::array()}));
  EXPECT_EQ(leaseAboveATrimmedStart(true), (json{json{3, 4, 1}, nullptr, "ok", nullptr, json::array({json{3, 4, "acked", 1}})}));
}

// ---------------------------------------------------------------------------------------------
// H6 log.lease_advance_batch_limited: an ack walks at most maxBatchSize rows, so a long settled
// run is committed only part of the way.

json ackAfterALongSettledRun(bool on) {
  LogRig rig(withVariant(variants::kLeaseAdvanceBatchLimited, on));
  rig.env.options = leased(4);
  return rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 8);
    std::vector<std::string> ids;
    for (int i = 0; i < 4; ++i) co_await leaseOf(h, kC, &ids);  // [0, 1] [2, 3] [4, 5] [6, 7]
    for (int i = 3; i >= 0; --i) co_await settleOf(h, true, kC, ids.at(static_cast<std::size_t>(i)));
    json cursor = co_await cursorOf(h, kC);
    json rows = co_await rowsOf(h, kC);
    co_return json{cursor, rows};
  });
}

TEST(LeaseVariants, BatchLimitedAdvanceStopsAfterMaxBatchSizeRows) {
  EXPECT_EQ(ackAfterALongSettledRun(false), (json{8, json::array()}));
  EXPECT_EQ(ackAfterALongSettledRun(true), (json{4, json{json{4, 5, "acked", 1}, json{6, 7, "acked", 1}}}));
}

// ---------------------------------------------------------------------------------------------
// H6 log.lease_skip_without_advance: a gap row (and every other skip) leaves the cursor where it
// was until some later ack advances it.

json gapRowThenCursor(bool on) {
  LogRig rig(withVariant(variants::kLeaseSkipWithoutAdvance, on));
  rig.env.options = leased(1);
  rig.env.options.retention = LogRetention{std::nullopt, 2, std::nullopt};
  return rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 5);
    co_await trimLog(h);  // oldest 3: the first lease needs a gap row [0, 2]
    json lease = co_await leaseOf(h, kC);
    json cursor = co_await cursorOf(h, kC);
    json rows = co_await rowsOf(h, kC);
    co_return json{lease, cursor, rows};
  });
}

TEST(LeaseVariants, SkipWithoutAdvanceLeavesTheCursorBelowAGapRow) {
  EXPECT_EQ(gapRowThenCursor(false), (json{json{3, 4, 1}, 3, json::array({json{3, 4, "active", 1}})}));
  EXPECT_EQ(gapRowThenCursor(true), (json{json{3, 4, 1}, nullptr, json{json{0, 2, "skipped", 0}, json{3, 4, "active", 1}}}));
}

// ---------------------------------------------------------------------------------------------
// H6 log.lease_ack_three_units: between the settle write and the cursor write another call sees an
// acked row with the cursor not moved; both end in the same state.

json readDuringAnAck(bool on) {
  LogRig rig(withVariant(variants::kLeaseAckThreeUnits, on));
  rig.faults.set_latency(LatencyKind::confirm, 10);
  rig.env.options = leased(1);
  auto ids = std::make_shared<std::vector<std::string>>();
  std::vector<std::string>* granted = ids.get();
  rig.run([granted](LogHost& h) -> Task<json> {
    co_await appendN(h, 2);
    co_return co_await leaseOf(h, kC, granted);
  });
  const std::string batchId = ids->at(0);
  const std::size_t commitsBefore = rig.sink.count("commit");
  json during = runTogether(rig, {0, 5}, {[batchId](LogHost& h) { return settleOf(h, true, kC, batchId); }, [](LogHost& h) -> Task<json> {
                                            json cursor = co_await cursorOf(h, kC);
                                            json rows = co_await rowsOf(h, kC);
                                            co_return json{cursor, rows};
                                          }});
  const std::size_t commits = rig.sink.count("commit") - commitsBefore;
  json after = rig.run([](LogHost& h) -> Task<json> {
    json cursor = co_await cursorOf(h, kC);
    json rows = co_await rowsOf(h, kC);
    co_return json{cursor, rows};
  });
  return json{during, commits, after};
}

TEST(LeaseVariants, AckInThreeUnitsShowsAnAckedRowBelowAnUnmovedCursor) {
  EXPECT_EQ(readDuringAnAck(false), (json{json{"ok", json{2, json::array()}}, 1, json{2, json::array()}}));
  EXPECT_EQ(readDuringAnAck(true), (json{json{"ok", json{nullptr, json::array({json{0, 1, "acked", 1}})}}, 3, json{2, json::array()}}));
}

// ---------------------------------------------------------------------------------------------
// H7/H23 log.lease_truncation_blocks: a trimmed range throws every time it is reclaimed and is never
// skipped, so the consumer is blocked.

json reclaimATrimmedRange(bool on) {
  LogRig rig(withVariant(variants::kLeaseTruncationBlocks, on));
  rig.env.options = leased(1);
  rig.env.options.retention = LogRetention{std::nullopt, 1, std::nullopt};
  return rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 2);
    std::vector<std::string> ids;
    co_await leaseOf(h, kC, &ids);  // [0, 1]
    co_await settleOf(h, false, kC, ids.at(0));
    co_await appendN(h, 2);
    co_await trimLog(h);  // oldest 3: the whole range is trimmed
    json truncated = co_await leaseOf(h, kC);
    json rows = co_await rowsOf(h, kC);
    co_await h.ctx.clock.sleepFor(1'000);  // any held lease expires
    json next = co_await leaseOf(h, kC);
    co_return json{truncated, rows, next};
  });
}

TEST(LeaseVariants, TruncationBlocksThrowsOnEveryReclaimAndNeverSkips) {
  EXPECT_EQ(reclaimATrimmedRange(false), (json{json{"LogTruncatedError", 0, 3}, json::array(), json{3, 3, 1}}));
  EXPECT_EQ(reclaimATrimmedRange(true),
            (json{json{"LogTruncatedError", 0, 3}, json::array({json{0, 1, "active", 2}}), json{"LogTruncatedError", 0, 3}}));
}

// ---------------------------------------------------------------------------------------------
// H8 log.lease_settle_ignores_consumer: another consumer's name settles the lease.

json ackUnderAnotherName(bool on) {
  LogRig rig(withVariant(variants::kLeaseSettleIgnoresConsumer, on));
  rig.env.options = leased(1);
  return rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 2);
    std::vector<std::string> ids;
    co_await leaseOf(h, kC, &ids);
    json ack = co_await settleOf(h, true, kD, ids.at(0));
    json rows = co_await rowsOf(h, kC);
    json cursor = co_await cursorOf(h, kC);
    co_return json{ack, rows, cursor};
  });
}

TEST(LeaseVariants, SettleIgnoresConsumerLetsAnotherNameAckTheLease) {
  EXPECT_EQ(ackUnderAnotherName(false), (json{"LogLeaseError", json::array({json{0, 1, "active", 1}}), nullptr}));
  EXPECT_EQ(ackUnderAnotherName(true), (json{"ok", json::array({json{0, 1, "acked", 1}}), nullptr}));
}

}  // namespace
}  // namespace durasim::rt_test
