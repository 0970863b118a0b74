// Smoke test while building: AlarmApp schedules and runs named alarms on the simulated runtime.
#include "tests/runtime_test_harness.h"
#include "workloads/alarm_app.h"

namespace durasim {
namespace {
using namespace rt_test;
using workloads::AlarmApp;

TEST(AlarmsSmoke, RunsOkAlarm) {
  Rig rig;
  workloads::AlarmAppConfig config;
  rig.runtime.define_class(AlarmApp::kClass, [config](ObjectContext& ctx) { return std::make_unique<AlarmApp>(ctx, config, 1, nullptr); });
  CallPtr c = rig.call(AlarmApp::kClass, "a", "schedule", {{"name", "ok.0"}, {"at", kStart + 5000}});
  CallPtr d = rig.call(AlarmApp::kClass, "a", "schedule", {{"name", "flaky.0"}, {"at", kStart + 20000}});
  rig.run_for(600'000);
  ASSERT_TRUE(c->ok) << c->error;
  ASSERT_TRUE(d->ok) << d->error;
  auto effects = rig.runtime.inspect(AlarmApp::kClass, "a", "SELECT name, attempt, at FROM app_effects ORDER BY at").toVector();
  ASSERT_EQ(effects.size(), 2u);
  EXPECT_EQ(effects[0].text("name"), "ok.0");
  EXPECT_GE(effects[0].int64("at"), kStart + 5000);
  EXPECT_EQ(effects[1].int64("attempt"), 3);
  EXPECT_EQ(rig.runtime.inspect(AlarmApp::kClass, "a", "SELECT count(*) AS n FROM durability_alarms").one().int64("n"), 0);
  EXPECT_FALSE(rig.status("AlarmApp/a")->stored_alarm.has_value());
  for (const json& e : rig.sink.events)
    if (e.at("ev").get<std::string>().rfind("sch.", 0) == 0 || e.at("ev").get<std::string>().rfind("alm.", 0) == 0) std::cout << e.dump() << "\n";
}

}  // namespace
}  // namespace durasim
