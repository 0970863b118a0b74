// JsonFields (engine/runtime.h) builds the JSON objects of the engine's hot paths member by member,
// where nlohmann::json's initializer-list constructor makes each {"key", value} pair a two-element
// array first: it must build the very object that initializer list builds, member types included
// (the trace hash and the stored text tell an unsigned from a signed integer), and a later add of a
// key replaces the earlier value.
#include <gtest/gtest.h>

#include <cstdint>
#include <optional>
#include <string>

#include "engine/runtime.h"

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

TEST(JsonFields, BuildsTheObjectOfTheSameInitializerList) {
  const std::string text = "text";
  const std::optional<int64_t> none;
  const uint64_t big = 18'000'000'000'000'000'000u;
  expectSame(JsonFields()
                 .add("lists", int64_t{3})
                 .add("gets", 4u)
                 .add("big", big)
                 .add("ratio", 0.5)
                 .add("ok", true)
                 .add("name", text)
                 .add("none", none ? json(*none) : json()),
             json({{"lists", int64_t{3}}, {"gets", 4u}, {"big", big}, {"ratio", 0.5}, {"ok", true}, {"name", text}, {"none", none ? json(*none) : json()}}));
  expectSame(JsonFields().add("nested", json({{"a", 1}, {"b", {1, 2}}})).add("pair", json({"x", "y"})).add("list", json::array({1, "two"})),
             json({{"nested", {{"a", 1}, {"b", {1, 2}}}}, {"pair", {"x", "y"}}, {"list", json::array({1, "two"})}}));
  expectSame(JsonFields(), json::object());
}

TEST(JsonFields, ALaterAddOfAKeyReplacesItsValue) {
  const json built = JsonFields().add("k", 1).add("other", 2).add("k", 3);
  expectSame(built, json({{"k", 3}, {"other", 2}}));
}

}  // namespace
}  // namespace durasim
