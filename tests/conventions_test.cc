// Shared conventions (scheduler.md 1): the safe-integer range, round-half-up, and the stored form of
// values (serialize refuses invalid UTF-8, non-finite numbers and discarded values at any depth).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/conventions.h"

namespace durasim {
namespace {

using nlohmann::json;

TEST(Conventions, SafeIntegersAreZeroToTwoToTheFiftyThreeMinusOne) {
  EXPECT_EQ(kMaxSafeInteger, (int64_t{1} << 53) - 1);
  EXPECT_TRUE(isSafeNonNegative(0));
  EXPECT_TRUE(isSafeNonNegative(kMaxSafeInteger));
  EXPECT_FALSE(isSafeNonNegative(-1));
  EXPECT_FALSE(isSafeNonNegative(kMaxSafeInteger + 1));
}

TEST(Conventions, JsRoundRoundsHalfUp) {
  EXPECT_EQ(jsRound(0.5), 1);
  EXPECT_EQ(jsRound(1.49), 1);
  EXPECT_EQ(jsRound(-0.5), 0);
  EXPECT_EQ(jsRound(-0.6), -1);
  EXPECT_EQ(jsRound(-0.1), 0);
  EXPECT_EQ(jsRound(2.5), 3);
  EXPECT_TRUE(std::isnan(jsRound(std::numeric_limits<double>::quiet_NaN())));
}

TEST(Conventions, SerializeWrapsTheValueCompactlyWithSortedKeys) {
  EXPECT_EQ(serialize(json{{"b", 1}, {"a", "x"}}), R"({"kind":"value","value":{"a":"x","b":1}})");
  EXPECT_EQ(serialize(nullptr), R"({"kind":"value","value":null})");
  EXPECT_EQ(serialize(json::array({1, 2.5, true})), R"({"kind":"value","value":[1,2.5,true]})");
  EXPECT_EQ(serialize("é"), "{\"kind\":\"value\",\"value\":\"\xC3\xA9\"}");
}

TEST(Conventions, SerializeRefusesUnserializableValues) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  EXPECT_EQ(serialize(nan), std::nullopt);
  EXPECT_EQ(serialize(-inf), std::nullopt);
  EXPECT_EQ(serialize(json{{"deep", json::array({1, json{{"x", inf}}})}}), std::nullopt);
  EXPECT_EQ(serialize(json(json::value_t::discarded)), std::nullopt);
  EXPECT_EQ(serialize(json::array({json(json::value_t::discarded)})), std::nullopt);
  EXPECT_EQ(serialize(std::string("bad \xFF byte")), std::nullopt);
  EXPECT_EQ(serialize(json{{std::string("\xC3"), 1}}), std::nullopt);  // invalid UTF-8 in a key
}

TEST(Conventions, DeserializeReturnsTheStoredValue) {
  const json value = {{"list", {1, 2, 3}}, {"text", "hi"}, {"n", -0.25}};
  const std::optional<std::string> stored = serialize(value);
  ASSERT_TRUE(stored.has_value());
  EXPECT_EQ(deserialize(*stored), value);
  EXPECT_EQ(deserialize(R"({"kind":"value","value":null})"), nullptr);
  EXPECT_THROW(deserialize("not json"), json::exception);
}

}  // namespace
}  // namespace durasim
