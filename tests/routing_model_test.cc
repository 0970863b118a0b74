// shardLoadFromJson (model/routing_model.h), how the routing checks read a load snapshot of an
// `rte.*` event: every field selection and resizing use is read from its place, extra members are
// ignored, and a snapshot missing fields names the first one in the order the shape is checked.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "model/routing_model.h"

namespace durasim::model {
namespace {

using nlohmann::json;

json snapshot() {
  return json{{"observedAt", 1200},
              {"windowMs", 60000},
              {"inbound", {{"inFlight", 3}, {"completed", 9}, {"averageProcessingMs", 12.5}}},
              {"outbound", {{"inFlight", 4}, {"completed", 2}, {"averageProcessingMs", nullptr}, {"pendingDeliveries", 7}}}};
}

std::string missingName(const json& load) {
  try {
    shardLoadFromJson(load);
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "nothing missing";
}

TEST(ShardLoadFromJson, ReadsEachFieldFromItsPlace) {
  const ShardLoad load = shardLoadFromJson(snapshot());
  EXPECT_EQ(load.observedAt, 1200);
  EXPECT_EQ(load.pendingDeliveries, 7);
  EXPECT_EQ(load.inboundInFlight, 3);
  EXPECT_EQ(load.inboundAverageMs, 12.5);
  EXPECT_EQ(load.outboundInFlight, 4);
  EXPECT_EQ(load.outboundAverageMs, std::nullopt);
  json extra = snapshot();
  extra["inbound"]["pendingDeliveries"] = 99;  // a name read elsewhere, in the wrong direction
  extra["zeta"] = 1;
  EXPECT_EQ(shardLoadFromJson(extra).pendingDeliveries, 7);
  EXPECT_EQ(shardLoadFromJson(extra).inboundInFlight, 3);
}

TEST(ShardLoadFromJson, NamesTheFirstMissingFieldInTheOrderTheShapeIsChecked) {
  // Removing the fields one at a time, in the checking order: each step names the next one.
  const std::vector<std::pair<std::vector<std::string>, std::string>> steps = {
      {{"inbound"}, "inbound"},
      {{"outbound"}, "outbound"},
      {{"observedAt"}, "observedAt"},
      {{"outbound", "pendingDeliveries"}, "pendingDeliveries"},
      {{"inbound", "inFlight"}, "inFlight"},
      {{"inbound", "averageProcessingMs"}, "averageProcessingMs"},
      {{"outbound", "inFlight"}, "inFlight"},
      {{"outbound", "averageProcessingMs"}, "averageProcessingMs"},
  };
  for (std::size_t i = 0; i < steps.size(); ++i) {
    json load = snapshot();
    for (std::size_t j = steps.size(); j-- > i;) {  // the later fields first: a direction goes last
      const std::vector<std::string>& path = steps[j].first;
      if (path.size() == 1) load.erase(path[0]);
      else load[path[0]].erase(path[1]);
    }
    EXPECT_EQ(missingName(load), "load snapshot lacks " + steps[i].second) << "step " << i << ": " << load.dump();
  }
  EXPECT_EQ(missingName(json(5)), "load snapshot lacks inbound") << "not an object";
  json notObject = snapshot();
  notObject["outbound"] = json::array({1, 2});
  EXPECT_EQ(missingName(notObject), "load snapshot lacks pendingDeliveries") << "a direction that is not an object";
  json wrongType = snapshot();
  wrongType["observedAt"] = "soon";
  EXPECT_THROW(shardLoadFromJson(wrongType), json::type_error);
}

}  // namespace
}  // namespace durasim::model
