// The fault episodes of docs/fault-episodes.md as the simulator hosts them: a burst resets the live
// object several times within seconds; an isolation fails every RPC to and from the object and its
// cold-store calls; a cold outage refuses every cold-store call; slow storage confirms every commit
// of the object later by the episode's delay, in order. Heal ends each one. Each episode is offered
// once per simulated minute (per object, or per run for the cold outage) and traced once.
#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "tests/runtime_test_harness.h"

namespace durasim::rt_test {
namespace {

constexpr const char* kClass = "Episodic";
constexpr const char* kLabel = "Episodic/a";
constexpr SimTime kMinute = 60'000;

// An object that answers, writes a row, or puts one object into the cold store.
class Episodic final : public DurableObject {
 public:
  explicit Episodic(ObjectContext& ctx) : ctx_(ctx) { ctx_.storage.exec("CREATE TABLE IF NOT EXISTS w (id INTEGER PRIMARY KEY)"); }
  Task<json> call(std::string_view method, const json& args) override {
    if (method == "write") ctx_.storage.exec("INSERT INTO w (id) VALUES (?)", args.value("i", int64_t{0}));
    if (method == "cold") {
      if (args.contains("wait")) co_await ctx_.clock.sleepFor(args.at("wait").get<int64_t>());
      std::optional<ColdObject> put = co_await ctx_.bucket("b").put(args.value("key", std::string("k")), "body");
      co_return put.has_value();
    }
    co_return true;
  }

 private:
  ObjectContext& ctx_;
};

// A rig whose timed faults run (not healed) and where exactly the kinds the test arms fire.
struct EpisodeRig : Rig {
  EpisodeRig() : Rig(1, {}, /*timed_faults=*/true) {
    runtime.define_class(kClass, [](ObjectContext& ctx) { return std::make_unique<Episodic>(ctx); });
  }
  // Runs until `t` even when nothing is scheduled before it.
  void advance_to(SimTime t) {
    world.tasks().spawn("tick", ticking(&world, t - world.now()));
    run_until(t);
  }
  // The first `fault` event of `fault`, or null.
  json fault(const std::string& fault) const {
    for (const json& e : sink.of("fault"))
      if (e.at("fault") == fault) return e;
    return nullptr;
  }
};

TEST(FaultEpisodes, AResetBurstResetsTheLiveObjectAtEachDrawnInstant) {
  EpisodeRig rig;
  rig.faults.arm(FaultKind::episode_reset_burst);
  // Keep the object live: a call every 50 ms for three minutes.
  for (int i = 0; i < 3'600; ++i) rig.call(kClass, "a", "echo", json::object(), i * 50);
  rig.run_for(3 * kMinute);
  const json fault = rig.fault("episode.reset_burst");
  ASSERT_TRUE(fault.is_object());
  const json& burst = fault.at("details");
  const int64_t resets = burst.at("resets").get<int64_t>();
  EXPECT_GE(resets, 2);
  EXPECT_LE(resets, 5);
  ASSERT_EQ(burst.at("gaps").size(), static_cast<std::size_t>(resets - 1));
  std::vector<SimTime> expected{fault.at("t").get<SimTime>() + burst.at("first").get<int64_t>()};
  for (const json& gap : burst.at("gaps")) {
    EXPECT_GE(gap.get<int64_t>(), 100);
    EXPECT_LE(gap.get<int64_t>(), 3'000);
    expected.push_back(expected.back() + gap.get<int64_t>());
  }
  std::vector<SimTime> ended;
  for (const json& e : rig.events("incarnation.end", kLabel))
    if (e.at("cause") == "broken.reset; Durable Object was reset") ended.push_back(e.at("t").get<SimTime>());
  EXPECT_EQ(ended, expected);
}

TEST(FaultEpisodes, AnIsolationFailsEveryCallAndColdRequestUntilItEnds) {
  EpisodeRig rig;
  rig.call(kClass, "a", "echo");  // the object exists, so its minute timer runs
  rig.faults.arm(FaultKind::episode_isolation);
  rig.run_for(kMinute + 1);
  const json isolation = rig.fault("episode.isolation");
  ASSERT_TRUE(isolation.is_object());
  const int64_t length = isolation.at("details").at("length").get<int64_t>();
  EXPECT_GE(length, 60'000);
  EXPECT_LE(length, 600'000);
  CallPtr during = rig.call(kClass, "a", "echo");
  rig.run_for(1'000);
  EXPECT_FALSE(during->ok);
  EXPECT_EQ(during->error, "Network connection lost.");
  rig.advance_to(isolation.at("t").get<SimTime>() + length + 1);
  CallPtr after = rig.call(kClass, "a", "echo");
  rig.run_for(1'000);
  EXPECT_TRUE(after->ok) << after->error;
}

TEST(FaultEpisodes, AnIsolatedObjectsColdCallsAreRefusedWithoutRunning) {
  EpisodeRig rig;
  CallPtr cold = rig.call(kClass, "a", "cold", {{"wait", 1'000}});
  rig.run_for(500);
  rig.runtime.isolate(kLabel, rig.world.now() + 10'000);  // while the handler waits
  rig.run_for(2'000);
  std::vector<std::string> outcomes;
  for (const json& e : rig.sink.of("cold.call")) outcomes.push_back(e.at("outcome").get<std::string>());
  EXPECT_EQ(outcomes, std::vector<std::string>{"isolated"});
  ASSERT_TRUE(cold->done);
  EXPECT_FALSE(cold->ok);
}

TEST(FaultEpisodes, AColdOutageRefusesEveryColdCallWhileItLasts) {
  EpisodeRig rig;
  rig.faults.arm(FaultKind::episode_cold_outage);
  rig.run_for(kMinute + 1);
  const json outage = rig.fault("episode.cold_outage");
  ASSERT_TRUE(outage.is_object());
  const int64_t length = outage.at("details").at("length").get<int64_t>();
  EXPECT_GE(length, 10'000);
  EXPECT_LE(length, 300'000);
  CallPtr during = rig.call(kClass, "a", "cold", {{"key", "during"}});
  rig.run_for(1'000);
  EXPECT_FALSE(during->ok);
  rig.advance_to(outage.at("t").get<SimTime>() + length + 1);
  CallPtr after = rig.call(kClass, "a", "cold", {{"key", "after"}});
  rig.run_for(1'000);
  EXPECT_TRUE(after->ok) << after->error;
  std::vector<std::string> outcomes;
  for (const json& e : rig.sink.of("cold.call")) outcomes.push_back(e.at("key").get<std::string>() + ":" + e.at("outcome").get<std::string>());
  EXPECT_EQ(outcomes, (std::vector<std::string>{"during:outage", "after:ok"}));
}

TEST(FaultEpisodes, SlowStorageDelaysEveryConfirmationByTheEpisodesDelay) {
  EpisodeRig rig;
  CallPtr first = rig.call(kClass, "a", "write", {{"i", 1}});
  rig.faults.arm(FaultKind::episode_storage_slow);
  rig.run_for(kMinute + 1);
  ASSERT_TRUE(first->ok);
  const json slow = rig.fault("episode.storage_slow");
  ASSERT_TRUE(slow.is_object());
  const int64_t delay = slow.at("details").at("delay").get<int64_t>();
  EXPECT_GE(delay, 1'000);
  EXPECT_LE(delay, 20'000);
  CallPtr during = rig.call(kClass, "a", "write", {{"i", 2}});
  rig.run_for(30'000);
  ASSERT_TRUE(during->ok) << during->error;
  // Every latency of the rig is 1 ms: call, commit + confirmation (1 ms + the delay), reply.
  EXPECT_EQ(during->finished - during->sent, 1 + 1 + delay + 1);
}

TEST(FaultEpisodes, HealEndsEveryEpisodeInProgress) {
  EpisodeRig rig;
  rig.call(kClass, "a", "echo");
  rig.faults.arm(FaultKind::episode_isolation);
  rig.faults.arm(FaultKind::episode_cold_outage);
  rig.faults.arm(FaultKind::episode_storage_slow);
  rig.run_for(kMinute + 1);
  ASSERT_EQ(rig.sink.count("fault"), 3u);
  rig.faults.set_healed(true);
  rig.runtime.heal();
  CallPtr write = rig.call(kClass, "a", "write", {{"i", 1}});
  CallPtr cold = rig.call(kClass, "a", "cold");
  rig.run_for(1'000);
  EXPECT_TRUE(write->ok) << write->error;
  EXPECT_EQ(write->finished - write->sent, 3);
  EXPECT_TRUE(cold->ok) << cold->error;
}

TEST(FaultEpisodes, EachIsOfferedOncePerMinuteAndTracedOncePerFiring) {
  EpisodeRig rig;
  rig.call(kClass, "a", "echo");
  rig.run_for(5 * kMinute + 1'000);
  for (FaultKind kind : {FaultKind::episode_reset_burst, FaultKind::episode_isolation, FaultKind::episode_storage_slow,
                         FaultKind::episode_cold_outage})
    EXPECT_EQ(rig.faults.seen(kind), 5) << sim::fault_name(kind);
  EXPECT_EQ(rig.sink.count("fault"), 0u);
}

}  // namespace
}  // namespace durasim::rt_test
