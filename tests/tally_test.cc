// Per-invariant tallies (sim/tally.h): counts kept per ID whatever the IDs' lengths and number (the
// short IDs' open-addressed index grows as IDs arrive), and copies and moves that keep every tally
// reachable, the moved-from tallies left empty and usable.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "sim/tally.h"

namespace durasim::sim {
namespace {

// The checked and violated counts of every ID, as a plain map to compare with.
std::map<std::string, std::pair<uint64_t, uint64_t>> counts(const Tallies& tallies) {
  std::map<std::string, std::pair<uint64_t, uint64_t>> out;
  for (const auto& [id, tally] : tallies.by_id()) out[id] = {tally.checked, tally.violated};
  return out;
}

// IDs of every length from empty to past the packed limit, many of them sharing a prefix.
rc::Gen<std::string> anId() {
  return rc::gen::oneOf(rc::gen::container<std::string>(rc::gen::elementOf(std::string("AB-0"))),
                        rc::gen::map(rc::gen::inRange(0, 400), [](int n) { return "T-" + std::to_string(n); }),
                        rc::gen::map(rc::gen::inRange(0, 20), [](int n) { return "LONGER-ID-" + std::to_string(n); }));
}

RC_GTEST_PROP(Tallies, CountEveryCheckOfEveryId, ()) {
  const auto checks = *rc::gen::container<std::vector<std::pair<std::string, bool>>>(rc::gen::pair(anId(), rc::gen::arbitrary<bool>()));
  Tallies tallies;
  std::map<std::string, std::pair<uint64_t, uint64_t>> expected;
  for (const auto& [id, ok] : checks) {
    tallies.check(id, ok, [] { return std::string("violated"); });
    ++expected[id].first;
    if (!ok) ++expected[id].second;
  }
  RC_ASSERT(counts(tallies) == expected);
}

TEST(Tallies, ManyShortIdsStayDistinct) {
  Tallies tallies;
  for (int round = 0; round < 3; ++round)
    for (int n = 0; n < 1'000; ++n) tallies.add("X-" + std::to_string(n), static_cast<uint64_t>(n), 0, "");
  ASSERT_EQ(tallies.by_id().size(), 1'000u);
  for (const auto& [id, tally] : tallies.by_id()) EXPECT_EQ(tally.checked, 3 * std::stoull(id.substr(2))) << id;
}

TEST(Tallies, ACopyCountsApartFromItsOriginal) {
  Tallies original;
  original.add("LOG-01", 2, 1, "first");
  Tallies copy = original;
  copy.add("LOG-01", 5, 0, "");
  original.add("LOG-01", 1, 0, "");
  EXPECT_EQ(original.by_id().at("LOG-01").checked, 3u);
  EXPECT_EQ(copy.by_id().at("LOG-01").checked, 7u);
  copy = original;
  copy.add("LOG-01", 1, 0, "");
  EXPECT_EQ(copy.by_id().at("LOG-01").checked, 4u);
  EXPECT_EQ(original.by_id().at("LOG-01").checked, 3u);
}

TEST(Tallies, AMoveKeepsTheTalliesAndLeavesTheSourceUsable) {
  Tallies source;
  for (int n = 0; n < 40; ++n) source.add("M-" + std::to_string(n), 1, 0, "");
  Tallies moved = std::move(source);
  moved.add("M-7", 1, 0, "");
  EXPECT_EQ(moved.by_id().size(), 40u);
  EXPECT_EQ(moved.by_id().at("M-7").checked, 2u);
  EXPECT_TRUE(source.by_id().empty());  // NOLINT(bugprone-use-after-move): the documented state
  source.add("M-7", 1, 0, "");
  EXPECT_EQ(source.by_id().at("M-7").checked, 1u);
  EXPECT_EQ(moved.by_id().at("M-7").checked, 2u);
  Tallies assigned;
  assigned.add("OTHER", 9, 0, "");
  assigned = std::move(moved);
  EXPECT_EQ(assigned.by_id().size(), 40u);
  EXPECT_EQ(assigned.by_id().count("OTHER"), 0u);
  assigned.add("M-39", 1, 0, "");
  EXPECT_EQ(assigned.by_id().at("M-39").checked, 2u);
}

}  // namespace
}  // namespace durasim::sim
