// DurabilityLog leases (log.md 7; hazards H4-H8) on the simulated runtime: the opt-in and argument
// errors, fresh leases from max(oldest, cursor, allocation) bounded by maxParallelism, reclaim with a
// fresh batch id and attempt + 1 (fencing the old id; also at the lease's exact deadline), ack/nack settling only active leases of the
// named consumer, the contiguous cursor walk, poison skips made durable before onPoison, gap rows for
// offsets trimmed before anyone leased them, truncation of a leased range surfacing once, rehydrated
// and unreadable lease records (and records a trim flushes while the bounds commit awaits its
// confirmation, which stay readable), and leases surviving a reset of the object.
#include <gtest/gtest.h>

#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/buggify.h"
#include "engine/errors.h"
#include "engine/log.h"
#include "engine/runtime_errors.h"
#include "tests/log_test_rig.h"

namespace durasim::rt_test {
namespace {

const std::string kC = "c";
const std::string kD = "d";

// The lease as [first, last, attempt], "none", or the name of the error lease() threw; `ids` collects
// batch ids in grant order.
Task<json> leaseOf(LogHost& h, const std::string& consumer, std::vector<std::string>* ids = nullptr,
                   std::optional<int64_t> limit = std::nullopt) {
  try {
    Task<std::optional<LogLease>> t = h.log.lease(consumer, limit);
    std::optional<LogLease> lease = co_await t;
    if (!lease) co_return json("none");
    if (ids) ids->push_back(lease->batchId);
    json offsets = json::array();
    for (const LogRecord& r : lease->records) offsets.push_back(r.offset);
    EXPECT_EQ(offsets.size(), static_cast<std::size_t>(lease->lastOffset - lease->firstOffset + 1));
    co_return json{lease->firstOffset, lease->lastOffset, lease->attempt};
  } catch (const LogTruncatedError& e) {
    co_return json{"LogTruncatedError", e.requestedOffset(), e.oldestOffset()};
  } catch (const DurabilityError& e) {
    co_return json(e.name());
  } catch (const std::exception& e) {
    co_return json(std::string("other: ") + e.what());
  }
}

// Appends n records, one per call, with bodies 10 + offset when the log started empty.
Task<void> appendN(LogHost& h, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    Task<LogBounds> tb = h.log.bounds();
    const LogBounds b = co_await tb;
    Task<EnqueueResult<std::vector<int64_t>>> t = h.log.append(rec(json(10 + b.nextOffset)));
    EnqueueResult<std::vector<int64_t>> r = co_await t;
    EXPECT_TRUE(r.success);
  }
}

LogOptions leased(int64_t maxParallelism = 1, int64_t maxBatchSize = 2) {
  LogOptions o;
  o.maxBatchSize = maxBatchSize;
  o.leases = LogLeaseOptions{};
  o.leases->maxParallelism = maxParallelism;
  return o;
}

// ---------------------------------------------------------------------------------------------
// Opt-in and arguments

TEST(LogLeaseOptIn, EveryLeaseMethodThrowsTypeErrorWithoutTheOption) {
  LogRig rig;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    json names = json::array();
    names.push_back(co_await leaseOf(h, kC));
    names.push_back(co_await settleOf(h, true, kC, kD));
    names.push_back(co_await settleOf(h, false, kC, kD));
    try {
      co_await rowsOf(h, kC);
    } catch (const TypeError& e) {
      names.push_back(e.what());
    }
    co_return names;
  });
  EXPECT_EQ(out, (json{"TypeError", "TypeError", "TypeError", "Leases require the leases option"}));
  EXPECT_FALSE(rig.hasTable("durability_log_leases"));
}

TEST(LogLeaseArguments, EmptyConsumerAndNonPositiveLimitAreRejected) {
  LogRig rig;
  rig.env.options = leased();
  const json out = rig.run([](LogHost& h) -> Task<json> {
    const std::string empty;
    json a = co_await leaseOf(h, empty);
    json b = co_await settleOf(h, true, empty, kD);
    json c = co_await leaseOf(h, kC, nullptr, 0);
    co_return json{a, b, c};
  });
  EXPECT_EQ(out, (json{"LogAppendError", "LogAppendError", "RangeError"}));
}

// ---------------------------------------------------------------------------------------------
// Fresh leases, parallelism, allocation

TEST(LogLeaseGrant, FreshLeasesFollowTheAllocationUpToMaxParallelism) {
  LogRig rig;
  rig.env.options = leased(2);
  const json out = rig.run([](LogHost& h) -> Task<json> {
    json empty = co_await leaseOf(h, kC);
    co_await appendN(h, 5);
    json a = co_await leaseOf(h, kC);
    json b = co_await leaseOf(h, kC, nullptr, 1);
    json full = co_await leaseOf(h, kC);
    co_return json{empty, a, b, full};
  });
  EXPECT_EQ(out, (json{"none", json{0, 1, 1}, json{2, 2, 1}, "none"}));
  EXPECT_EQ(rig.count("SELECT allocated_offset AS n FROM durability_log_allocations WHERE consumer = 'c'"), 3);
}

TEST(LogLeaseGrant, LeaseExpiresAtNowPlusLeaseMsAndCarriesItsRecords) {
  LogRig rig;
  rig.env.options = leased();
  rig.env.options.leases->leaseMs = 7'000;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 3);
    const int64_t now = h.ctx.clock.now();
    Task<std::optional<LogLease>> t = h.log.lease(kC);
    std::optional<LogLease> lease = co_await t;
    co_return json{lease->expiresAt - now, lease->records.at(0).body, lease->records.at(1).body, lease->consumer};
  });
  EXPECT_EQ(out, (json{7'000, 10, 11, "c"}));
}

TEST(LogLeaseGrant, ConsumersAreIndependent) {
  LogRig rig;
  rig.env.options = leased();
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 2);
    json c = co_await leaseOf(h, kC);
    json d = co_await leaseOf(h, kD);
    co_return json{c, d};
  });
  EXPECT_EQ(out, (json{json{0, 1, 1}, json{0, 1, 1}}));
}

TEST(LogLeaseGrant, FreshLeaseStartsAtAManuallyCommittedCursor) {
  LogRig rig;
  rig.env.options = leased();
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 6);
    Task<void> committing = h.log.commit(kC, 3);
    co_await committing;
    json a = co_await leaseOf(h, kC);
    co_return a;
  });
  EXPECT_EQ(out, (json{3, 4, 1}));
}

// ---------------------------------------------------------------------------------------------
// Settlement and the contiguous commit

TEST(LogLeaseSettle, AckMovesTheCursorOnlyAcrossAContiguousSettledRun) {
  LogRig rig;
  rig.env.options = leased(2);
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 4);
    std::vector<std::string> ids;
    co_await leaseOf(h, kC, &ids);
    co_await leaseOf(h, kC, &ids);
    json second = co_await settleOf(h, true, kC, ids[1]);
    json afterSecond = co_await cursorOf(h, kC);
    json first = co_await settleOf(h, true, kC, ids[0]);
    json afterFirst = co_await cursorOf(h, kC);
    json rows = co_await rowsOf(h, kC);
    co_return json{second, afterSecond, first, afterFirst, rows};
  });
  EXPECT_EQ(out, (json{"ok", nullptr, "ok", 4, json::array()}));
}

TEST(LogLeaseSettle, SecondSettlementAndUnknownIdsThrowLogLeaseError) {
  LogRig rig;
  rig.env.options = leased();
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 2);
    std::vector<std::string> ids;
    co_await leaseOf(h, kC, &ids);
    json ack = co_await settleOf(h, true, kC, ids[0]);
    json again = co_await settleOf(h, true, kC, ids[0]);
    json nack = co_await settleOf(h, false, kC, ids[0]);
    const std::string unknown = "no-such-batch";
    json other = co_await settleOf(h, true, kC, unknown);
    co_return json{ack, again, nack, other};
  });
  EXPECT_EQ(out, (json{"ok", "LogLeaseError", "LogLeaseError", "LogLeaseError"}));
}

TEST(LogLeaseSettle, AnotherConsumersNameCannotSettleAndChangesNothing) {
  LogRig rig;
  rig.env.options = leased();
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 2);
    std::vector<std::string> ids;
    co_await leaseOf(h, kC, &ids);
    json ack = co_await settleOf(h, true, kD, ids[0]);
    json nack = co_await settleOf(h, false, kD, ids[0]);
    json rows = co_await rowsOf(h, kC);
    json cursorD = co_await cursorOf(h, kD);
    json own = co_await settleOf(h, true, kC, ids[0]);
    co_return json{ack, nack, rows, cursorD, own};
  });
  EXPECT_EQ(out, (json{"LogLeaseError", "LogLeaseError", json::array({json{0, 1, "active", 1}}), nullptr, "ok"}));
}

TEST(LogLeaseSettle, NackMakesTheRangeReclaimableWithAFreshIdAndFencesTheOldOne) {
  LogRig rig;
  rig.env.options = leased();
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 2);
    std::vector<std::string> ids;
    co_await leaseOf(h, kC, &ids);
    json nack = co_await settleOf(h, false, kC, ids[0]);
    json again = co_await leaseOf(h, kC, &ids);
    json stale = co_await settleOf(h, true, kC, ids[0]);
    json fresh = co_await settleOf(h, true, kC, ids[1]);
    json cursor = co_await cursorOf(h, kC);
    co_return json{nack, again, ids[0] != ids[1], stale, fresh, cursor};
  });
  EXPECT_EQ(out, (json{"ok", json{0, 1, 2}, true, "LogLeaseError", "ok", 2}));
}

TEST(LogLeaseSettle, ExpiredLeaseIsReclaimedFirstEvenAtMaxParallelism) {
  LogRig rig;
  rig.env.options = leased();
  rig.env.options.leases->leaseMs = 1'000;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 4);
    std::vector<std::string> ids;
    co_await leaseOf(h, kC, &ids);
    json held = co_await leaseOf(h, kC);
    co_await h.ctx.clock.sleepFor(1'000);
    json reclaimed = co_await leaseOf(h, kC, &ids);
    json stale = co_await settleOf(h, true, kC, ids[0]);
    co_return json{held, reclaimed, stale};
  });
  EXPECT_EQ(out, (json{"none", json{0, 1, 2}, "LogLeaseError"}));
}

// The buggify site log.lease.wait_for_expiry: a lease call that starts at the exact deadline of the
// consumer's earliest active lease reclaims it at that millisecond (expires_at <= now).
TEST(LogLeaseSettle, ALeaseIsReclaimableAtItsExactDeadline) {
  LogRig rig;
  rig.env.options = leased();
  rig.env.options.leases->leaseMs = 1'000;
  rig.runtime.set_buggify([](std::string_view site) { return site == buggify::kLeasesWaitForExpiry; });
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 4);
    Task<std::optional<LogLease>> granting = h.log.lease(kC);
    const std::optional<LogLease> first = co_await granting;
    Task<std::optional<LogLease>> reclaiming = h.log.lease(kC);
    const std::optional<LogLease> second = co_await reclaiming;
    if (!first || !second) co_return json("none");
    co_return json{second->firstOffset, second->attempt, second->expiresAt - first->expiresAt};
  });
  EXPECT_EQ(out, (json{0, 2, 1'000}));
}

TEST(LogLeaseSettle, AnExpiredLeaseNobodyReclaimedCanStillBeAcked) {
  LogRig rig;
  rig.env.options = leased();
  rig.env.options.leases->leaseMs = 1'000;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 2);
    std::vector<std::string> ids;
    co_await leaseOf(h, kC, &ids);
    co_await h.ctx.clock.sleepFor(2'000);
    json ack = co_await settleOf(h, true, kC, ids[0]);
    json cursor = co_await cursorOf(h, kC);
    co_return json{ack, cursor};
  });
  EXPECT_EQ(out, (json{"ok", 2}));
}

// ---------------------------------------------------------------------------------------------
// Poison

TEST(LogLeasePoison, WithoutOnPoisonARangeIsRedeliveredForever) {
  LogRig rig;
  rig.env.options = leased();
  rig.env.options.leases->maxAttempts = 1;
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 2);
    std::vector<std::string> ids;
    json last;
    for (int i = 0; i < 5; ++i) {
      last = co_await leaseOf(h, kC, &ids);
      co_await settleOf(h, false, kC, ids.back());
    }
    json cursor = co_await cursorOf(h, kC);
    co_return json{last, cursor};
  });
  EXPECT_EQ(out, (json{json{0, 1, 5}, nullptr}));
}

struct PoisonLog {
  std::vector<json> calls;  // [first, last, attempt, cursor at the call]
  bool fail = false;
};

Task<void> onPoisonRecord(std::shared_ptr<PoisonLog> log, LogHost* host, LogLease lease) {
  Task<std::optional<int64_t>> t = host->log.cursor(lease.consumer);
  std::optional<int64_t> cursor = co_await t;
  log->calls.push_back(json{lease.firstOffset, lease.lastOffset, lease.attempt, cursor ? json(*cursor) : json(nullptr)});
  if (log->fail) throw std::runtime_error("poison handler failed");
}

// Poison options whose callback reads the cursor through the host of the current call.
struct PoisonRig : LogRig {
  std::shared_ptr<PoisonLog> poison = std::make_shared<PoisonLog>();
  LogHost* host = nullptr;
  explicit PoisonRig(int64_t maxAttempts) {
    env.options = leased();
    env.options.leases->maxAttempts = maxAttempts;
    std::shared_ptr<PoisonLog> p = poison;
    LogHost** where = &host;
    env.options.leases->onPoison = [p, where](const LogLease& lease) { return onPoisonRecord(p, *where, lease); };
  }
};

TEST(LogLeasePoison, TheSkipCommitsBeforeOnPoisonRunsAndTheRangeIsNeverLeasedAgain) {
  PoisonRig rig(1);
  LogHost** where = &rig.host;
  const json out = rig.run([where](LogHost& h) -> Task<json> {
    *where = &h;
    co_await appendN(h, 4);
    std::vector<std::string> ids;
    co_await leaseOf(h, kC, &ids);
    co_await settleOf(h, false, kC, ids.back());
    json poisoned = co_await leaseOf(h, kC, &ids);
    json next = co_await leaseOf(h, kC, &ids);
    co_return json{poisoned, next};
  });
  EXPECT_EQ(out, (json{"none", json{2, 3, 1}}));
  ASSERT_EQ(rig.poison->calls.size(), 1u);
  EXPECT_EQ(rig.poison->calls[0], (json{0, 1, 2, 2}));  // attempt maxAttempts + 1; cursor already past
}

TEST(LogLeasePoison, AThrowingOnPoisonIsSwallowedAndTheSkipStays) {
  PoisonRig rig(1);
  rig.poison->fail = true;
  LogHost** where = &rig.host;
  const json out = rig.run([where](LogHost& h) -> Task<json> {
    *where = &h;
    co_await appendN(h, 2);
    std::vector<std::string> ids;
    co_await leaseOf(h, kC, &ids);
    co_await settleOf(h, false, kC, ids.back());
    json poisoned = co_await leaseOf(h, kC, &ids);
    json next = co_await leaseOf(h, kC, &ids);
    json cursor = co_await cursorOf(h, kC);
    co_return json{poisoned, next, cursor};
  });
  EXPECT_EQ(out, (json{"none", "none", 2}));
  EXPECT_EQ(rig.poison->calls.size(), 1u);
}

// ---------------------------------------------------------------------------------------------
// Trimming: gap rows and truncation of leased ranges

LogOptions leasedWithRetention(int64_t maxRecords, int64_t maxParallelism = 1) {
  LogOptions o = leased(maxParallelism);
  o.retention = LogRetention{std::nullopt, maxRecords, std::nullopt};
  return o;
}

TEST(LogLeaseTrim, OffsetsTrimmedBeforeAnyLeaseAreSkippedAndTheCursorPassesThem) {
  LogRig rig;
  rig.env.options = leasedWithRetention(2);
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 5);
    co_await h.log.trim();
    json lease = co_await leaseOf(h, kC);
    json cursor = co_await cursorOf(h, kC);
    json rows = co_await rowsOf(h, kC);
    co_return json{lease, cursor, rows};
  });
  EXPECT_EQ(out, (json{json{3, 4, 1}, 3, json::array({json{3, 4, "active", 1}})}));
}

TEST(LogLeaseTrim, AFullyTrimmedLogStillMovesTheCursorToNextOffset) {
  LogRig rig;
  rig.env.options = leased();
  rig.env.options.retention = LogRetention{500, std::nullopt, std::nullopt};
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 3);
    co_await h.ctx.clock.sleepFor(1'000);
    co_await h.log.trim();
    json lease = co_await leaseOf(h, kC);
    json cursor = co_await cursorOf(h, kC);
    json rows = co_await rowsOf(h, kC);
    co_await appendN(h, 1);
    json next = co_await leaseOf(h, kC);
    co_return json{lease, cursor, rows, next};
  });
  EXPECT_EQ(out, (json{"none", 3, json::array(), json{3, 3, 1}}));
  EXPECT_EQ(rig.count("SELECT allocated_offset AS n FROM durability_log_allocations WHERE consumer = 'c'"), 4);
}

TEST(LogLeaseTrim, APendingRangeWithATrimmedPrefixThrowsOnceThenCarriesOn) {
  LogRig rig;
  rig.env.options = leasedWithRetention(3, 2);
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 4);
    std::vector<std::string> ids;
    co_await leaseOf(h, kC, &ids);  // [0, 1]
    co_await leaseOf(h, kC, &ids);  // [2, 3]
    co_await settleOf(h, false, kC, ids[1]);
    co_await appendN(h, 2);
    co_await h.log.trim();  // keeps 3 of 6: oldest 3
    json truncated = co_await leaseOf(h, kC, &ids);
    json rows = co_await rowsOf(h, kC);
    json next = co_await leaseOf(h, kC, &ids);
    json ackFirst = co_await settleOf(h, true, kC, ids[0]);
    json ackLast = co_await settleOf(h, true, kC, ids.back());
    json cursor = co_await cursorOf(h, kC);
    co_return json{truncated, rows, next, ackFirst, ackLast, cursor};
  });
  EXPECT_EQ(out, (json{json{"LogTruncatedError", 2, 3},
                       json{json{0, 1, "active", 1}, json{2, 2, "skipped", 0}, json{3, 3, "pending", 1}},
                       json{3, 3, 2}, "ok", "ok", 4}));
}

TEST(LogLeaseTrim, AWhollyTrimmedRangeBecomesSkippedAndTheCursorMovesPastIt) {
  LogRig rig;
  rig.env.options = leasedWithRetention(1);
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 2);
    std::vector<std::string> ids;
    co_await leaseOf(h, kC, &ids);
    co_await settleOf(h, false, kC, ids[0]);
    co_await appendN(h, 2);
    co_await h.log.trim();  // oldest 3
    json truncated = co_await leaseOf(h, kC, &ids);
    json cursor = co_await cursorOf(h, kC);
    json next = co_await leaseOf(h, kC, &ids);
    co_return json{truncated, cursor, next};
  });
  EXPECT_EQ(out, (json{json{"LogTruncatedError", 0, 3}, 2, json{3, 3, 1}}));
}

// ---------------------------------------------------------------------------------------------
// Cold records in leases

struct SegmentStore {
  std::map<std::string, std::vector<LogRecord>> segments;
  bool lost = false;
};

Task<std::string> storeSegment(std::shared_ptr<SegmentStore> store, LogSegment segment) {
  const std::string locator = "seg-" + std::to_string(segment.firstOffset);
  store->segments[locator] = segment.records;
  co_return locator;
}

Task<std::optional<std::vector<LogRecord>>> loadSegment(std::shared_ptr<SegmentStore> store, std::string locator) {
  if (store->lost) co_return std::nullopt;
  co_return store->segments.at(locator);
}

LogOptions leasedWithCold(const std::shared_ptr<SegmentStore>& store) {
  LogOptions o = leasedWithRetention(1);
  o.maxBatchSize = 3;
  o.cold = LogColdStorage{[store](const LogSegment& s) { return storeSegment(store, s); },
                          [store](const std::string& l) { return loadSegment(store, l); }};
  return o;
}

TEST(LogLeaseCold, RecordsFlushedAfterTheGrantAreRehydrated) {
  LogRig rig;
  auto store = std::make_shared<SegmentStore>();
  rig.env.options = leasedWithCold(store);
  const json out = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 4);
    std::vector<std::string> ids;
    co_await leaseOf(h, kC, &ids);  // [0, 2]
    co_await settleOf(h, false, kC, ids[0]);
    co_await h.log.trim();  // flushes 0..2 into one segment
    Task<LogBounds> tb = h.log.bounds();
    LogBounds b = co_await tb;
    Task<std::optional<LogLease>> t = h.log.lease(kC);
    std::optional<LogLease> lease = co_await t;
    json bodies = json::array();
    for (const LogRecord& r : lease->records) bodies.push_back(r.body);
    co_return json{b.oldestOffset, b.hotOffset, lease->firstOffset, lease->lastOffset, bodies};
  });
  EXPECT_EQ(out, (json{0, 3, 0, 2, json{10, 11, 12}}));
}

TEST(LogLeaseCold, AnUnreadableOffsetReleasesTheLeaseAndThrows) {
  LogRig rig;
  auto store = std::make_shared<SegmentStore>();
  rig.env.options = leasedWithCold(store);
  const json out = rig.run([store](LogHost& h) -> Task<json> {
    co_await appendN(h, 4);
    co_await h.log.trim();
    store->lost = true;
    json lost = co_await leaseOf(h, kC);
    json rows = co_await rowsOf(h, kC);
    store->lost = false;
    json repaired = co_await leaseOf(h, kC);
    co_return json{lost, rows, repaired};
  });
  EXPECT_EQ(out, (json{json{"LogTruncatedError", 0, 3}, json::array({json{0, 2, "pending", 0}}), json{0, 2, 1}}));
}

// A trim whose cold write completes while loadLeaseRecords waits for its bounds transaction to be
// confirmed (that wait lets other events in, runtime.md 4.3): the records it flushed are still
// readable, from cold, so the lease carries them and nothing is released or thrown.

struct RaceState {
  SegmentStore cold;
  LogHost* host = nullptr;
  std::vector<LogScript> calls;  // run in the order the calls arrive
  std::size_t next = 0;
};

Task<std::optional<std::vector<LogRecord>>> loadRaceSegment(RaceState* race, std::string locator) {
  co_return race->cold.segments.at(locator);
}

Task<std::string> storeSegmentAfter(RaceState* race, int64_t ms, LogSegment segment) {
  Task<void> waiting = race->host->ctx.clock.sleepFor(ms);
  co_await waiting;
  const std::string locator = "seg-" + std::to_string(segment.firstOffset);
  race->cold.segments[locator] = segment.records;
  co_return locator;
}

TEST(LogLeaseCold, ATrimDuringTheBoundsConfirmationDoesNotMakeFlushedRecordsLookLost) {
  LogRig rig;
  rig.faults.set_latency(LatencyKind::confirm, 10);
  RaceState race;
  RaceState* state = &race;
  rig.env.options = leasedWithRetention(1);
  rig.env.options.maxBatchSize = 3;
  rig.env.options.cold = LogColdStorage{[state](const LogSegment& s) { return storeSegmentAfter(state, 10, s); },
                                        [state](const std::string& l) { return loadRaceSegment(state, l); }};
  rig.run([state](LogHost& h) -> Task<json> {
    state->host = &h;
    co_await appendN(h, 4);
    co_return json(nullptr);
  });
  // t:      trim: flush intent commits (confirmed at t + 10), then cold.write takes 10 ms
  // t + 5:  lease: the grant commits (confirmed at t + 15), then the bounds transaction waits for
  //         the append's commit (confirmed at t + 24)
  // t + 14: an append commits
  // t + 20: the trim deletes hot [0, 2], now in a cold segment
  race.calls = {[](LogHost& h) -> Task<json> {
                  Task<int64_t> trimming = h.log.trim();
                  const int64_t removed = co_await trimming;
                  co_return json(removed);
                },
                [](LogHost& h) { return leaseOf(h, kC, nullptr, 2); },
                [](LogHost& h) -> Task<json> {
                  co_await appendN(h, 1);
                  co_return json(nullptr);
                }};
  rig.env.script = [state](LogHost& h) -> Task<json> {
    LogScript script = state->calls.at(state->next++);
    Task<json> running = script(h);
    co_return co_await running;
  };
  CallPtr trim = rig.Rig::call(kLogClass, "a", "run");
  CallPtr lease = rig.Rig::call(kLogClass, "a", "run", json::object(), 5);
  CallPtr append = rig.Rig::call(kLogClass, "a", "run", json::object(), 14);
  rig.run_for(5'000);
  ASSERT_TRUE(trim->ok && lease->ok && append->ok);
  EXPECT_GE(trim->value.get<int64_t>(), 3);
  EXPECT_EQ(lease->value, (json{0, 1, 1}));
  const json rows = rig.run([](LogHost& h) -> Task<json> { co_return co_await rowsOf(h, kC); });
  EXPECT_EQ(rows, (json::array({json{0, 1, "active", 1}})));
}

// ---------------------------------------------------------------------------------------------
// Durability

TEST(LogLeaseDurability, AHeldLeaseSurvivesAResetOfTheObject) {
  LogRig rig;
  rig.env.options = leased();
  rig.env.options.leases->leaseMs = 3'000;
  const json first = rig.run([](LogHost& h) -> Task<json> {
    co_await appendN(h, 4);
    json lease = co_await leaseOf(h, kC);
    co_return lease;
  });
  EXPECT_EQ(first, (json{0, 1, 1}));
  rig.env.script = [](LogHost&) -> Task<json> { co_return json(nullptr); };
  rig.faults.arm(FaultKind::object_reset);
  rig.Rig::call(kLogClass, "a", "run");
  rig.run_for(5'000);
  const json after = rig.run([](LogHost& h) -> Task<json> {
    json held = co_await leaseOf(h, kC);
    co_await h.ctx.clock.sleepFor(3'000);
    json reclaimed = co_await leaseOf(h, kC);
    co_return json{held, reclaimed};
  });
  EXPECT_EQ(after, (json{"none", json{0, 1, 2}}));
}

}  // namespace
}  // namespace durasim::rt_test
