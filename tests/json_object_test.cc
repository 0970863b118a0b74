// jsonObject (engine/json_object.h) stands in for nlohmann::json's initializer-list object on the
// engine's hot paths: it must build the very object that initializer list builds, member types
// included (the trace hash and the stored text tell an unsigned from a signed integer), and keep the
// first of a repeated key as nlohmann does.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "engine/json_object.h"

namespace durasim {
namespace {

using json = nlohmann::json;

// The dump and the type of every node agree (json's operator== takes 1u and 1 for equal).
void expectSame(const json& a, const json& b) {
  ASSERT_EQ(a.type(), b.type()) << a.dump() << " vs " << b.dump();
  ASSERT_EQ(a.dump(), b.dump());
  if (a.is_structured()) {
    auto x = a.begin();
    for (auto y = b.begin(); y != b.end(); ++x, ++y) expectSame(*x, *y);
  }
}

TEST(JsonObject, BuildsTheObjectOfTheSameInitializerList) {
  const std::string text = "text";
  const std::optional<int64_t> none;
  const uint64_t big = 18'000'000'000'000'000'000u;
  expectSame(jsonObject({{"lists", int64_t{3}}, {"gets", 4u}, {"big", big}, {"ratio", 0.5}, {"ok", true}, {"name", text}, {"none", none ? json(*none) : json()}}),
             json({{"lists", int64_t{3}}, {"gets", 4u}, {"big", big}, {"ratio", 0.5}, {"ok", true}, {"name", text}, {"none", none ? json(*none) : json()}}));
  expectSame(jsonObject({{"nested", {{"a", 1}, {"b", {1, 2}}}}, {"pair", {"x", "y"}}, {"list", json::array({1, "two"})}}),
             json({{"nested", {{"a", 1}, {"b", {1, 2}}}}, {"pair", {"x", "y"}}, {"list", json::array({1, "two"})}}));
  expectSame(jsonObject({}), json::object());
}

TEST(JsonObject, KeepsTheFirstOfARepeatedKeyAsNlohmannDoes) {
  const json built = jsonObject({{"k", 1}, {"other", 2}, {"k", 3}});
  expectSame(built, json({{"k", 1}, {"other", 2}, {"k", 3}}));
  EXPECT_EQ(built.at("k"), 1);
}

}  // namespace
}  // namespace durasim
