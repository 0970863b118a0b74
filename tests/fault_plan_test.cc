// The faults/ layer: the atlas against runtime.md 11.2, the swarm profile per kind (11.3), fires()
// accounting and trace events (RT-09), heal (11.4), recorded choices and determinism (RT-01, RT-23),
// latency draws, campaign false greens (11.5), buggify sites and profile-kind parsing.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "faults/accounting.h"
#include "faults/atlas.h"
#include "faults/buggify.h"
#include "faults/fault_plan.h"
#include "sim/world.h"

namespace durasim {
namespace {

using faults::AlwaysOn;
using faults::FaultPlan;
using faults::PromiseClass;
using faults::ProfileKind;
using sim::FaultKind;

constexpr sim::SimTime kStart = 1'000'000;
constexpr uint64_t kSeeds = 200;

class CollectingSink final : public sim::TraceSink {
 public:
  void record(const sim::TraceEvent& event) override { events.push_back(event.json()); }
  std::vector<nlohmann::json> events;
};

// One World with a recording random source, a sink that keeps every event, and its fault plan.
struct SeededRun {
  SeededRun(uint64_t seed, ProfileKind kind) : world(kStart, sim::RandomSource::recording(seed), sink), plan(world, kind) {}

  std::size_t choices() { return world.random().log().choices.size(); }
  std::size_t fault_events(std::string_view id) const {
    std::size_t n = 0;
    for (const nlohmann::json& event : sink.events)
      if (event["ev"] == "fault" && event["fault"] == id) ++n;
    return n;
  }

  CollectingSink sink;
  sim::World world;
  FaultPlan plan;
};

const sim::FaultSite kSite{"Account/alice", 3, "commit"};

bool is_latency(FaultKind kind) { return faults::fault_spec(kind).opportunity == faults::Opportunity::latency_draw; }

// Offers `n` opportunities of every fault offered through fires().
void offer_all(FaultPlan& plan, int n) {
  for (const faults::FaultSpec& spec : faults::fault_atlas())
    if (!is_latency(spec.kind))
      for (int i = 0; i < n; ++i) plan.fires(spec.kind, kSite);
}

TEST(FaultAtlas, MatchesTheTableOfRuntime11_2) {
  const auto& full = faults::fault_spec(FaultKind::storage_full);
  EXPECT_EQ(full.max_ppm, 100'000u);
  EXPECT_EQ(full.opportunity, faults::Opportunity::run);
  EXPECT_EQ(faults::fault_spec(FaultKind::object_code_update).max_ppm, 500'000u);
  EXPECT_EQ(faults::fault_spec(FaultKind::object_code_update).opportunity, faults::Opportunity::object_minute);
  EXPECT_EQ(faults::fault_spec(FaultKind::rpc_partition).max_ppm, 200'000u);
  EXPECT_EQ(faults::fault_spec(FaultKind::cold_vanish).opportunity, faults::Opportunity::object_hour);
  EXPECT_EQ(faults::opportunity_period_ms(faults::Opportunity::object_minute), 60'000);
  EXPECT_EQ(faults::opportunity_period_ms(faults::Opportunity::object_hour), 3'600'000);
  EXPECT_EQ(faults::fault_spec(FaultKind::workload_handler_throw).max_ppm, 300'000u);
  EXPECT_EQ(faults::fault_spec(FaultKind::clock_incarnation_offset).always_on, AlwaysOn::arbitrary_profile);

  std::vector<std::string_view> ambiguous, arbitrary;
  for (const faults::FaultSpec& spec : faults::fault_atlas()) {
    if (spec.promise == PromiseClass::recoverable_ambiguous) ambiguous.push_back(sim::fault_name(spec.kind));
    if (spec.promise == PromiseClass::arbitrary) arbitrary.push_back(sim::fault_name(spec.kind));
  }
  EXPECT_EQ(ambiguous, (std::vector<std::string_view>{"storage.commit_uncertain", "storage.gate_timeout",
                                                      "rpc.reply_lost", "cold.reply_lost"}));
  EXPECT_EQ(arbitrary, (std::vector<std::string_view>{"object.zombie", "alarm.lost", "alarm.early",
                                                      "rpc.duplicate_delivery", "cold.vanish",
                                                      "clock.incarnation_offset"}));
  EXPECT_EQ(faults::promise_class_name(PromiseClass::recoverable_ambiguous), "R?");
}

TEST(FaultPlan, ProfileNoneEnablesOnlyTheAlwaysOnLatenciesAndLifecycleLag) {
  for (uint64_t seed = 1; seed <= 50; ++seed) {
    SeededRun run(seed, ProfileKind::none);
    for (const faults::FaultSpec& spec : faults::fault_atlas()) {
      const bool always = spec.always_on == AlwaysOn::every_profile;
      EXPECT_EQ(run.plan.enabled(spec.kind), always) << sim::fault_name(spec.kind);
      EXPECT_EQ(run.plan.rate_ppm(spec.kind), always ? faults::kAlwaysPpm : 0u) << sim::fault_name(spec.kind);
    }
  }
}

TEST(FaultPlan, RecoverableNeverEnablesAnArbitraryFault) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SeededRun run(seed, ProfileKind::recoverable);
    for (const faults::FaultSpec& spec : faults::fault_atlas())
      if (spec.promise == PromiseClass::arbitrary) {
        EXPECT_FALSE(run.plan.enabled(spec.kind)) << sim::fault_name(spec.kind);
      }
  }
}

TEST(FaultPlan, ArbitraryAlwaysEnablesTheIncarnationOffsetAndSometimesEveryArbitraryFault) {
  std::map<FaultKind, int> enabled;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SeededRun run(seed, ProfileKind::arbitrary);
    EXPECT_TRUE(run.plan.enabled(FaultKind::clock_incarnation_offset));
    for (const faults::FaultSpec& spec : faults::fault_atlas()) enabled[spec.kind] += run.plan.enabled(spec.kind);
  }
  for (const faults::FaultSpec& spec : faults::fault_atlas()) EXPECT_GT(enabled[spec.kind], 0) << sim::fault_name(spec.kind);
}

TEST(FaultPlan, EachRecoverableFaultIsEnabledInAboutHalfTheSeeds) {
  std::map<FaultKind, int> enabled;
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SeededRun run(seed, ProfileKind::recoverable);
    for (const faults::FaultSpec& spec : faults::fault_atlas()) enabled[spec.kind] += run.plan.enabled(spec.kind);
  }
  for (const faults::FaultSpec& spec : faults::fault_atlas()) {
    if (spec.promise == PromiseClass::arbitrary) continue;
    if (spec.always_on == AlwaysOn::every_profile) {
      EXPECT_EQ(enabled[spec.kind], static_cast<int>(kSeeds)) << sim::fault_name(spec.kind);
    } else {
      EXPECT_GE(enabled[spec.kind], 60) << sim::fault_name(spec.kind);  // 100 expected, sd ~7
      EXPECT_LE(enabled[spec.kind], 140) << sim::fault_name(spec.kind);
    }
  }
}

TEST(FaultPlan, RatesAndLatencyParametersStayWithinTheirRanges) {
  for (uint64_t seed = 1; seed <= kSeeds; ++seed) {
    SeededRun run(seed, ProfileKind::arbitrary);
    for (const faults::FaultSpec& spec : faults::fault_atlas()) {
      if (!run.plan.enabled(spec.kind)) continue;
      EXPECT_GE(run.plan.rate_ppm(spec.kind), spec.min_ppm) << sim::fault_name(spec.kind);
      EXPECT_LE(run.plan.rate_ppm(spec.kind), spec.max_ppm) << sim::fault_name(spec.kind);
    }
    const faults::LatencyParams& rpc = run.plan.rpc_latency();
    const faults::LatencyParams& cold = run.plan.cold_latency();
    EXPECT_TRUE(rpc.min_ms >= 0 && rpc.min_ms <= 5 && rpc.mean_ms >= 1 && rpc.mean_ms <= 50);
    EXPECT_TRUE(cold.min_ms >= 1 && cold.min_ms <= 10 && cold.mean_ms >= 5 && cold.mean_ms <= 100);
  }
}

TEST(FaultPlan, TheProfileIsDrawnAsRecordedChoicesInItsOwnStream) {
  SeededRun run(7, ProfileKind::recoverable);
  const sim::ChoiceLog& log = run.world.random().log();
  const auto profile = std::find(log.streams.begin(), log.streams.end(), "faults.profile");
  ASSERT_NE(profile, log.streams.end());
  EXPECT_GT(log.choices.size(), 4u);  // at least the four latency parameters
  for (const sim::Choice& choice : log.choices)
    EXPECT_EQ(log.streams.at(choice.stream), "faults.profile");
}

TEST(FaultPlan, ADisabledFaultCountsItsOpportunitiesAndDrawsNothing) {
  SeededRun run(3, ProfileKind::none);
  const std::size_t before = run.choices();
  for (int i = 0; i < 100; ++i) EXPECT_FALSE(run.plan.fires(FaultKind::object_reset, kSite, [] { return nlohmann::json::object(); }));
  EXPECT_EQ(run.choices(), before);
  const faults::FaultCount& count = run.plan.accounting()[static_cast<std::size_t>(FaultKind::object_reset)];
  EXPECT_EQ(count.opportunities, 100u);
  EXPECT_EQ(count.firings, 0u);
  EXPECT_TRUE(run.sink.events.empty());
}

TEST(FaultPlan, EveryFiringEmitsExactlyOneFaultEventAndTheCountsMatch_RT09) {
  uint64_t total = 0;
  for (uint64_t seed = 1; seed <= 5; ++seed) {
    SeededRun run(seed, ProfileKind::arbitrary);
    std::map<FaultKind, uint64_t> details_drawn;
    for (const faults::FaultSpec& spec : faults::fault_atlas()) {
      if (is_latency(spec.kind)) continue;
      for (int i = 0; i < 2'000; ++i)
        run.plan.fires(spec.kind, kSite, [&] { return nlohmann::json{{"n", ++details_drawn[spec.kind]}}; });
    }
    for (const faults::FaultCount& count : run.plan.accounting()) {
      EXPECT_EQ(run.fault_events(sim::fault_name(count.kind)), count.firings) << sim::fault_name(count.kind);
      EXPECT_EQ(details_drawn[count.kind], count.firings) << sim::fault_name(count.kind);
      if (!is_latency(count.kind)) {
        EXPECT_EQ(count.opportunities, 2'000u);
      }
      total += count.firings;
    }
    ASSERT_FALSE(run.sink.events.empty());
    const nlohmann::json& event = run.sink.events.front();
    EXPECT_EQ(event["object"], "Account/alice");
    EXPECT_EQ(event["incarnation"], 3);
    EXPECT_EQ(event["point"], "commit");
    EXPECT_EQ(event["details"]["n"], 1);
    EXPECT_EQ(event["t"], kStart);
  }
  EXPECT_GT(total, 0u);
}

TEST(FaultPlan, AnAlwaysOnFaultFiresAtEveryOpportunityWithoutADraw) {
  SeededRun run(5, ProfileKind::arbitrary);
  const std::size_t before = run.choices();
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(run.plan.fires(FaultKind::clock_incarnation_offset, kSite));
  EXPECT_EQ(run.choices(), before);
  EXPECT_EQ(run.fault_events("clock.incarnation_offset"), 10u);
  EXPECT_EQ(run.sink.events.front()["details"], nlohmann::json::object());
}

TEST(FaultPlan, DetailsMustBeAJsonObject) {
  SeededRun run(5, ProfileKind::arbitrary);
  EXPECT_THROW(run.plan.fires(FaultKind::clock_incarnation_offset, kSite, [] { return nlohmann::json(5); }),
               std::logic_error);
  EXPECT_TRUE(run.plan.fires(FaultKind::clock_incarnation_offset, kSite, [] { return nlohmann::json(); }));
  EXPECT_EQ(run.plan.accounting()[static_cast<std::size_t>(FaultKind::clock_incarnation_offset)].firings, 1u);
  EXPECT_EQ(run.sink.events.size(), 1u);
}

TEST(FaultPlan, LatencyFamiliesAreNotOfferedThroughFires) {
  SeededRun run(5, ProfileKind::recoverable);
  EXPECT_THROW(run.plan.fires(FaultKind::rpc_latency, kSite), std::logic_error);
  EXPECT_THROW(run.plan.fires(FaultKind::cold_latency, kSite), std::logic_error);
}

TEST(FaultPlan, AfterHealNothingFiresAndNothingIsDrawn) {
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SeededRun run(seed, ProfileKind::arbitrary);
    run.plan.heal();
    EXPECT_TRUE(run.plan.healed());
    const std::size_t before = run.choices();
    offer_all(run.plan, 200);
    EXPECT_EQ(run.choices(), before);
    EXPECT_TRUE(run.sink.events.empty());
    for (const faults::FaultCount& count : run.plan.accounting()) {
      EXPECT_EQ(count.firings, 0u);
      if (!is_latency(count.kind)) {
        EXPECT_EQ(count.opportunities, 200u);  // opportunities still count after heal
      }
    }
    EXPECT_GE(run.plan.latency(sim::LatencyKind::rpc), run.plan.rpc_latency().min_ms);  // latencies stay
  }
}

TEST(FaultPlan, TheSameSeedDrawsTheSameProfileAndChoices_RT01) {
  int differing = 0;
  for (uint64_t seed = 1; seed <= 20; ++seed) {
    SeededRun a(seed, ProfileKind::recoverable);
    SeededRun b(seed, ProfileKind::recoverable);
    SeededRun other(seed + 1000, ProfileKind::recoverable);
    offer_all(a.plan, 50);
    offer_all(b.plan, 50);
    EXPECT_EQ(a.plan.profile_json(), b.plan.profile_json());
    EXPECT_EQ(a.world.random().log(), b.world.random().log());
    EXPECT_EQ(a.sink.events, b.sink.events);
    differing += a.plan.profile_json() != other.plan.profile_json();
  }
  EXPECT_GT(differing, 15);
}

TEST(FaultPlan, ProfileJsonHoldsKindFaultsAndLatencies) {
  SeededRun run(9, ProfileKind::recoverable);
  const nlohmann::json profile = run.plan.profile_json();
  EXPECT_EQ(profile["kind"], "recoverable");
  EXPECT_EQ(profile["faults"].size(), sim::kFaultKindCount);
  EXPECT_EQ(profile["faults"]["rpc.latency"]["enabled"], true);
  EXPECT_EQ(profile["faults"]["object.zombie"]["enabled"], false);
  EXPECT_EQ(profile["latency"]["rpc"]["min_ms"], run.plan.rpc_latency().min_ms);
  EXPECT_EQ(profile["latency"]["cold"]["mean_ms"], run.plan.cold_latency().mean_ms);
}

TEST(FaultPlan, LatencyDrawsAreAtLeastTheMinimumAndCounted) {
  SeededRun run(11, ProfileKind::none);
  int64_t rpc_sum = 0;
  constexpr int kDraws = 5'000;
  for (int i = 0; i < kDraws; ++i) {
    const int64_t rpc = run.plan.latency(sim::LatencyKind::rpc);
    EXPECT_GE(rpc, run.plan.rpc_latency().min_ms);
    rpc_sum += rpc;
    EXPECT_GE(run.plan.latency(sim::LatencyKind::cold), run.plan.cold_latency().min_ms);
    const int64_t confirm = run.plan.latency(sim::LatencyKind::confirm);
    EXPECT_TRUE(confirm >= 1 && confirm <= 5) << confirm;
  }
  // The exponential part has the drawn mean (integer quantiles round down: allow 1 ms and 15%).
  const faults::LatencyParams& p = run.plan.rpc_latency();
  EXPECT_NEAR(static_cast<double>(rpc_sum) / kDraws, static_cast<double>(p.min_ms + p.mean_ms), 1.0 + 0.15 * p.mean_ms);
  EXPECT_EQ(run.plan.accounting()[static_cast<std::size_t>(FaultKind::rpc_latency)].opportunities, uint64_t{kDraws});
  EXPECT_EQ(run.plan.accounting()[static_cast<std::size_t>(FaultKind::rpc_latency)].firings, 0u);
  EXPECT_TRUE(run.sink.events.empty());
}

TEST(FaultCampaign, ListsFaultsEnabledInSomeSeedThatNeverFired) {
  faults::FaultCampaign campaign;
  for (uint64_t seed = 1; seed <= 10; ++seed) {
    SeededRun run(seed, ProfileKind::recoverable);
    if (run.plan.enabled(FaultKind::workload_handler_throw))
      for (int i = 0; i < 10'000; ++i) run.plan.fires(FaultKind::workload_handler_throw, kSite);
    campaign.add(run.plan.accounting());
  }
  EXPECT_EQ(campaign.seeds(), 10u);
  const std::vector<FaultKind> never = campaign.false_greens();
  const auto listed = [&](FaultKind kind) { return std::find(never.begin(), never.end(), kind) != never.end(); };
  EXPECT_FALSE(listed(FaultKind::workload_handler_throw));
  EXPECT_FALSE(listed(FaultKind::rpc_latency));  // latency families never fire
  EXPECT_TRUE(listed(FaultKind::cold_lifecycle_lag));  // always on, never offered
  EXPECT_TRUE(listed(FaultKind::object_reset));
  EXPECT_FALSE(listed(FaultKind::object_zombie));  // never enabled under recoverable
  const std::string table = campaign.table();
  EXPECT_NE(table.find("workload.handler_throw"), std::string::npos);
  EXPECT_NE(table.find("object.reset (no opportunity)"), std::string::npos);

  faults::FaultCampaign doubled = campaign;
  doubled.merge(campaign);
  EXPECT_EQ(doubled.seeds(), 20u);
  EXPECT_EQ(doubled.rows()[static_cast<std::size_t>(FaultKind::workload_handler_throw)].firings,
            2 * campaign.rows()[static_cast<std::size_t>(FaultKind::workload_handler_throw)].firings);
  EXPECT_EQ(doubled.false_greens(), never);
}

TEST(FaultCampaign, ACampaignWithNoFalseGreenSaysSo) {
  faults::FaultCampaign campaign;
  campaign.add(SeededRun(1, ProfileKind::none).plan.accounting());
  EXPECT_EQ(campaign.false_greens(), std::vector<FaultKind>{FaultKind::cold_lifecycle_lag});
  faults::FaultAccounting quiet{};
  for (std::size_t i = 0; i < quiet.size(); ++i) quiet[i].kind = static_cast<FaultKind>(i);
  faults::FaultCampaign empty;
  empty.add(quiet);
  EXPECT_TRUE(empty.false_greens().empty());
  EXPECT_NE(empty.table().find("never fired): none"), std::string::npos);
}

TEST(FaultAccounting, JsonHasEveryFault) {
  SeededRun run(2, ProfileKind::arbitrary);
  run.plan.fires(FaultKind::clock_incarnation_offset, kSite);
  const nlohmann::json json = faults::accounting_json(run.plan.accounting());
  EXPECT_EQ(json.size(), sim::kFaultKindCount);
  EXPECT_EQ(json["clock.incarnation_offset"]["firings"], 1);
  EXPECT_EQ(json["clock.incarnation_offset"]["opportunities"], 1);
  EXPECT_EQ(json["clock.incarnation_offset"]["rate_ppm"], faults::kAlwaysPpm);
}

TEST(FaultBuggify, SitesAreEnabledAndFireWithProbabilityAQuarter) {
  SeededRun run(13, ProfileKind::recoverable);
  faults::Buggify buggify(run.world, run.plan);
  constexpr int kSites = 4'000;
  constexpr int kCallsPerSite = 20;
  for (int s = 0; s < kSites; ++s)
    for (int c = 0; c < kCallsPerSite; ++c) buggify("site." + std::to_string(s));
  uint64_t enabled = 0, calls_enabled = 0, fires = 0;
  for (const auto& [name, count] : buggify.counts()) {
    EXPECT_EQ(count.calls, uint64_t{kCallsPerSite});
    if (!count.enabled) {
      EXPECT_EQ(count.fires, 0u) << name;
    }
    enabled += count.enabled;
    calls_enabled += count.enabled ? count.calls : 0;
    fires += count.fires;
  }
  EXPECT_NEAR(static_cast<double>(enabled) / kSites, 0.25, 0.03);
  EXPECT_NEAR(static_cast<double>(fires) / static_cast<double>(calls_enabled), 0.25, 0.02);
}

TEST(FaultBuggify, IsOffUnderProfileNoneAndAfterHealWithoutDrawing) {
  SeededRun quiet(13, ProfileKind::none);
  faults::Buggify off(quiet.world, quiet.plan);
  const std::size_t before = quiet.choices();
  for (int i = 0; i < 1'000; ++i) EXPECT_FALSE(off("commit"));
  EXPECT_EQ(quiet.choices(), before);
  EXPECT_EQ(off.counts().at("commit").calls, 1'000u);

  SeededRun run(13, ProfileKind::recoverable);
  faults::Buggify buggify(run.world, run.plan);
  for (int s = 0; s < 100; ++s) buggify("site." + std::to_string(s));
  run.plan.heal();
  const std::size_t healed_at = run.choices();
  for (int s = 0; s < 100; ++s)
    for (int c = 0; c < 20; ++c) EXPECT_FALSE(buggify("site." + std::to_string(s)));
  EXPECT_EQ(run.choices(), healed_at);
}

TEST(FaultBuggify, TheSameSeedGivesTheSameFirings) {
  SeededRun a(21, ProfileKind::recoverable), b(21, ProfileKind::recoverable);
  faults::Buggify first(a.world, a.plan), second(b.world, b.plan);
  for (int i = 0; i < 500; ++i) EXPECT_EQ(first("retry." + std::to_string(i % 7)), second("retry." + std::to_string(i % 7)));
  EXPECT_EQ(a.world.random().log(), b.world.random().log());
}

TEST(FaultProfileKind, ParsesAndPrintsTheThreeKinds) {
  for (ProfileKind kind : {ProfileKind::none, ProfileKind::recoverable, ProfileKind::arbitrary})
    EXPECT_EQ(faults::parse_profile_kind(faults::profile_kind_name(kind)), kind);
  EXPECT_EQ(faults::profile_kind_name(ProfileKind::recoverable), "recoverable");
  for (std::string_view bad : {"", "Recoverable", "all", "none "}) {
    try {
      faults::parse_profile_kind(bad);
      ADD_FAILURE() << "accepted '" << bad << "'";
    } catch (const std::invalid_argument& error) {
      const std::string message = error.what();
      EXPECT_NE(message.find("'" + std::string(bad) + "'"), std::string::npos) << message;
      EXPECT_NE(message.find("none|recoverable|arbitrary"), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace durasim
