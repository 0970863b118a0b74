// The runtime workload's cold-store checks (workloads/runtime_workload.h) on hand-written store
// histories: for each one a history that passes and the ones that only it rejects.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/tally_result.h"
#include "workloads/runtime_workload.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kDay = 86'400'000;

sim::ColdEvent event(const char* bucket, const char* key, sim::ColdEventKind kind, int64_t time,
                     std::optional<int64_t> due = std::nullopt) {
  return {bucket, key, kind, time, "etag", due};
}

using Result = test::TallyResult;
using test::tally_of;

Result expiries(const std::vector<sim::ColdEvent>& history) {
  sim::Tallies tallies;
  check_expiries(history, "a", 1, tallies);
  return tally_of(tallies, "RT-21");
}

// The due time comes from the upload and the rule, not from the store's own `due`: an expiry the
// store itself called due is still early if it came before upload + 1 day.
TEST(RuntimeWorkloadChecks, Rt21ExpiryWithinItsBoundsFromTheUpload) {
  EXPECT_EQ(expiries({event("a", "k", sim::ColdEventKind::put, 10, 10 + kDay),
                      event("a", "k", sim::ColdEventKind::expire, 10 + kDay, 10 + kDay)})
                .violated,
            0u);
  EXPECT_EQ(expiries({event("a", "k", sim::ColdEventKind::put, 10), event("a", "k", sim::ColdEventKind::expire, 10 + 2 * kDay)}).violated,
            0u);
  const Result early = expiries({event("a", "k", sim::ColdEventKind::put, 10, 10),
                                 event("a", "k", sim::ColdEventKind::expire, 10 + kDay - 1, 10)});
  EXPECT_EQ(early.violated, 1u);
  EXPECT_NE(early.first.find("expired at 86400009, due 86400010"), std::string::npos) << early.first;
  EXPECT_EQ(expiries({event("a", "k", sim::ColdEventKind::put, 10), event("a", "k", sim::ColdEventKind::expire, 11 + 2 * kDay)}).violated,
            1u);
  // A later put restarts the clock; other buckets are not this rule's.
  EXPECT_EQ(expiries({event("a", "k", sim::ColdEventKind::put, 10), event("a", "k", sim::ColdEventKind::put, 5'000),
                      event("a", "k", sim::ColdEventKind::expire, 4'000 + kDay)})
                .violated,
            1u);
  EXPECT_EQ(expiries({event("b", "k", sim::ColdEventKind::put, 10), event("b", "k", sim::ColdEventKind::expire, 11)}).checked, 0u);
}

TEST(RuntimeWorkloadChecks, Rt20CreateOnlyPutsAcceptedOncePerLife) {
  const auto run = [](const std::vector<sim::ColdEvent>& history) {
    sim::Tallies tallies;
    check_create_only(history, "a", tallies);
    return tally_of(tallies, "RT-20");
  };
  EXPECT_EQ(run({event("a", "k", sim::ColdEventKind::put, 10), event("a", "j", sim::ColdEventKind::put, 20),
                 event("a", "k", sim::ColdEventKind::remove, 2'000), event("a", "k", sim::ColdEventKind::put, 3'000),
                 event("a", "k", sim::ColdEventKind::expire, 5'000), event("a", "k", sim::ColdEventKind::put, 6'000)})
                .violated,
            0u);
  const Result twice = run({event("a", "k", sim::ColdEventKind::put, 10), event("a", "k", sim::ColdEventKind::put, 2'000)});
  EXPECT_EQ(twice.violated, 1u);
  EXPECT_NE(twice.first.find("create-only put of k accepted at t=2000"), std::string::npos) << twice.first;
}

TEST(RuntimeWorkloadChecks, Rt20Rt22RewritesReadWhatWasAccepted) {
  const auto run = [](const std::vector<sim::ColdEvent>& history, const std::vector<RewriteRead>& rewrites) {
    sim::Tallies tallies;
    check_rewrites(history, "s", rewrites, tallies);
    return std::make_pair(tally_of(tallies, "RT-20"), tally_of(tallies, "RT-22"));
  };
  const auto [accepted, rejected] = run({}, {{"x", false, "second"}, {"y", true, "first"}});
  EXPECT_EQ(accepted.checked, 1u);
  EXPECT_EQ(accepted.violated, 0u);
  EXPECT_EQ(rejected.checked, 1u);
  EXPECT_EQ(rejected.violated, 0u);
  // A rejected (429) write that removed or replaced the object; an accepted one the read missed.
  EXPECT_EQ(run({}, {{"y", true, nullptr}}).second.violated, 1u);
  EXPECT_EQ(run({}, {{"y", true, "second"}}).second.violated, 1u);
  EXPECT_EQ(run({}, {{"x", false, "first"}}).first.violated, 1u);
  // cold.vanish (arbitrary) may have removed the key.
  EXPECT_EQ(run({event("s", "y", sim::ColdEventKind::vanish, 5)}, {{"y", true, nullptr}}).second.checked, 0u);
}

// The archive check skips what cold.vanish removed (runtime seed 249 under arbitrary: an acknowledged
// archive that vanished was reported missing); only vanishes of the bucket asked about count.
TEST(RuntimeWorkloadChecks, VanishedKeysAreThoseOfTheBucket) {
  const std::vector<sim::ColdEvent> history = {event("a", "k1", sim::ColdEventKind::put, 1),
                                               event("a", "k1", sim::ColdEventKind::vanish, 2),
                                               event("b", "k2", sim::ColdEventKind::vanish, 3)};
  EXPECT_EQ(vanished_keys(history, "a"), std::set<std::string>{"k1"});
  EXPECT_EQ(vanished_keys(history, "c"), std::set<std::string>{});
}

}  // namespace
}  // namespace durasim::workloads
