// ColdLossWatch (properties/cold_loss.h): which cold objects the store may have lost, from the trace.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "properties/cold_loss.h"

namespace durasim::properties {
namespace {

using nlohmann::json;

json put(const std::string& key, int64_t t, bool applied = true) {
  return {{"ev", "cold.call"}, {"from", "Log/a"}, {"bucket", "segments"}, {"op", "put"}, {"key", key}, {"outcome", "ok"}, {"applied", applied}, {"t", t}};
}
json lag(int64_t ms) {
  return {{"ev", "fault"}, {"fault", "cold.lifecycle_lag"}, {"object", ""}, {"incarnation", 0}, {"point", "put"}, {"details", {{"lag", ms}}}};
}

TEST(ColdLossWatch, AVanishedObjectMayBeGoneAtOnce) {
  ColdLossWatch watch;
  EXPECT_FALSE(watch.lossPossible("seg-0", 0));
  watch.observe("fault", {{"fault", "cold.vanish"}, {"object", "segments/seg-0"}, {"incarnation", 0}, {"point", "hour"}, {"details", json::object()}});
  EXPECT_TRUE(watch.lossPossible("seg-0", 0));
  EXPECT_FALSE(watch.lossPossible("seg-1", 0));
}

TEST(ColdLossWatch, AnObjectUnderALifecycleRuleMayBeGoneOnceItsLagElapsed) {
  ColdLossWatch watch;
  watch.observe("fault", lag(500));
  watch.observe("cold.call", put("seg-0", 1'000));
  watch.observe("cold.call", put("seg-1", 1'000));  // no lag drawn: under no rule
  EXPECT_FALSE(watch.lossPossible("seg-0", 1'499));
  EXPECT_TRUE(watch.lossPossible("seg-0", 1'500));
  EXPECT_FALSE(watch.lossPossible("seg-1", 1'000'000));
}

TEST(ColdLossWatch, ARefusedPutStoresNothingToLose) {
  ColdLossWatch watch;
  watch.observe("fault", lag(0));
  watch.observe("cold.call", put("seg-0", 1'000, false));
  EXPECT_FALSE(watch.lossPossible("seg-0", 2'000));
}

TEST(ColdLossWatch, AfterHealAPutWithoutALagDrawMayBeGoneAtOnce) {
  ColdLossWatch watch;
  watch.healed();
  watch.observe("cold.call", put("seg-0", 1'000));
  EXPECT_TRUE(watch.lossPossible("seg-0", 1'000));
}

}  // namespace
}  // namespace durasim::properties
