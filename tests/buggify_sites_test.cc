// The engine's buggify sites (engine/buggify.h) in campaigns: each site fires in some seed of the
// workload that hosts it, and the seeds still pass every check (each site takes a path the spec
// allows); a seed's buggify counts are a function of the seed; BuggifyCampaign's merge and its list
// of sites that never fired.
#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

#include "cli/seed_run.h"
#include "engine/buggify.h"
#include "faults/buggify.h"

namespace durasim {
namespace {

constexpr uint64_t kMaxSeeds = 24;  // P(a site stays disabled in all of them) = 0.75^24 < 0.1%

struct Host {
  const char* workload;
  std::vector<std::string_view> sites;
};

class BuggifySites : public ::testing::TestWithParam<Host> {};

TEST_P(BuggifySites, FireInSomeSeedAndTheSeedsPass) {
  const Host& host = GetParam();
  workloads::RunConfig config;
  config.workload = host.workload;
  std::map<std::string, uint64_t> fires;
  const auto all_fired = [&] {
    for (std::string_view site : host.sites)
      if (fires[std::string(site)] == 0) return false;
    return true;
  };
  for (uint64_t seed = 0; seed < kMaxSeeds && !all_fired(); ++seed) {
    const cli::SeedOutcome outcome = cli::run_seed(config, seed);
    EXPECT_TRUE(outcome.passed()) << host.workload << " seed " << seed << ": " << outcome.failure();
    for (const auto& [site, count] : outcome.buggify) fires[site] += count.fires;
  }
  for (std::string_view site : host.sites) EXPECT_GT(fires[std::string(site)], 0u) << site << " never fired in " << host.workload;
}

namespace b = buggify;
const Host kHosts[] = {
    {"alarms", {b::kSchedulerYieldBeforeRefresh, b::kSchedulerYieldBeforeReschedule, b::kAlarmsYieldBeforeAttempt}},
    {"log", {b::kLogYieldBeforeAppend, b::kLeasesYieldBeforeSettle, b::kLeasesWaitForExpiry}},
    {"fanout", {b::kFanoutYieldBeforeClaim, b::kFanoutYieldBeforeSettle}},
    {"outbox", {b::kOutboxYieldBeforeClaim, b::kOutboxYieldBeforeSettle}},
    {"events", {b::kEventsYieldAfterPage, b::kEventsYieldBeforeAck, b::kEventsYieldBeforeFailure, b::kEventsReleaseYieldBeforeCas}},
};
INSTANTIATE_TEST_SUITE_P(Workloads, BuggifySites, ::testing::ValuesIn(kHosts),
                         [](const ::testing::TestParamInfo<Host>& info) { return std::string(info.param.workload); });

// Every site is hosted above, or reachable only under a research variant.
TEST(BuggifySites, EverySiteHasAHost) {
  std::set<std::string_view> covered(b::kVariantOnlySites.begin(), b::kVariantOnlySites.end());
  for (const Host& host : kHosts) covered.insert(host.sites.begin(), host.sites.end());
  EXPECT_EQ(covered, std::set<std::string_view>(b::kSites.begin(), b::kSites.end()));
}

TEST(BuggifySites, ASeedsCountsAreAFunctionOfTheSeed) {
  workloads::RunConfig config;
  config.workload = "fanout";
  const cli::SeedOutcome first = cli::run_seed(config, 5);
  const cli::SeedOutcome second = cli::run_seed(config, 5);
  EXPECT_EQ(first.hash, second.hash);
  ASSERT_EQ(first.buggify.size(), second.buggify.size());
  for (const auto& [site, count] : first.buggify) {
    EXPECT_EQ(count.calls, second.buggify.at(site).calls) << site;
    EXPECT_EQ(count.fires, second.buggify.at(site).fires) << site;
  }
}

TEST(BuggifyCampaign, MergesSeedsAndNamesTheSitesThatNeverFired) {
  faults::BuggifyCampaign a, b;
  a.add({{"x", faults::BuggifyCount{true, 10, 3}}, {"y", faults::BuggifyCount{false, 4, 0}}});
  b.add({{"x", faults::BuggifyCount{false, 5, 0}}, {"z", faults::BuggifyCount{true, 2, 0}}});
  a.merge(b);
  const faults::CampaignBuggifyCount& x = a.sites().at("x");
  EXPECT_EQ(x.seeds_called, 2u);
  EXPECT_EQ(x.seeds_enabled, 1u);
  EXPECT_EQ(x.seeds_fired, 1u);
  EXPECT_EQ(x.calls, 15u);
  EXPECT_EQ(x.fires, 3u);
  EXPECT_EQ(a.never_fired({"x", "y", "z", "w"}),
            (std::vector<std::string>{"y (never enabled)", "z (enabled in 1 seeds, never fired)", "w (never reached)"}));
  const std::string table = a.table();
  EXPECT_NE(table.find("buggify sites reached but never fired: y (never enabled), z (enabled in 1 seeds, never fired)"), std::string::npos)
      << table;
}

}  // namespace
}  // namespace durasim
