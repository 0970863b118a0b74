// Seed ranges and shards (cli/seed_slice.h): the n shards of a range partition it into contiguous
// blocks whose sizes differ by at most one; malformed or out-of-range shards are refused with a
// message naming them.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <stdexcept>
#include <string>

#include "cli/seed_slice.h"

namespace durasim::cli {
namespace {

RC_GTEST_PROP(SeedSlice, ShardsPartitionTheRangeInBalancedBlocks, ()) {
  const auto first = *rc::gen::inRange<uint64_t>(0, 1'000'000);
  const auto size = *rc::gen::inRange<uint64_t>(1, 500);
  const auto count = *rc::gen::inRange<uint64_t>(1, 40);
  uint64_t next = first, smallest = UINT64_MAX, largest = 0;
  for (uint64_t index = 0; index < count; ++index) {
    const SeedSlice slice = make_slice(first, first + size - 1, Shard{index, count});
    if (slice.size() > 0) RC_ASSERT(slice.begin() == next);  // contiguous, in shard order
    next += slice.size();
    smallest = std::min(smallest, slice.size());
    largest = std::max(largest, slice.size());
  }
  RC_ASSERT(next == first + size);  // every seed in exactly one shard
  RC_ASSERT(largest - smallest <= 1);
}

TEST(SeedSlice, TheWholeRangeIsOneShard) {
  const SeedSlice slice = make_slice(5, 9, Shard{});
  EXPECT_EQ(slice.begin(), 5u);
  EXPECT_EQ(slice.size(), 5u);
  EXPECT_EQ(slice.seed_at(4), 9u);
}

TEST(SeedSlice, HugeRangesAndSeedsNearTheTopDoNotOverflow) {
  const SeedSlice top = make_slice(UINT64_MAX - 9, UINT64_MAX, Shard{3, 4});
  EXPECT_EQ(top.begin() + top.size() - 1, UINT64_MAX);
  const SeedSlice wide = make_slice(0, kMaxSeedsPerRange - 1, Shard{999'999, 1'000'000});
  EXPECT_EQ(wide.begin() + wide.size(), kMaxSeedsPerRange);
  EXPECT_THROW(make_slice(0, kMaxSeedsPerRange, Shard{}), std::invalid_argument);
  EXPECT_THROW(make_slice(0, UINT64_MAX, Shard{}), std::invalid_argument);
  EXPECT_THROW(make_slice(5, 3, Shard{}), std::invalid_argument);
}

TEST(SeedSlice, MoreShardsThanSeedsLeavesSomeEmpty) {
  uint64_t total = 0;
  for (uint64_t i = 0; i < 8; ++i) total += make_slice(0, 2, Shard{i, 8}).size();
  EXPECT_EQ(total, 3u);
  EXPECT_EQ(make_slice(0, 2, Shard{0, 8}).size(), 0u);
}

TEST(SeedSlice, ShardsParseAndPrint) {
  EXPECT_EQ(parse_shard("0/1"), (Shard{0, 1}));
  EXPECT_EQ(parse_shard("3/4"), (Shard{3, 4}));
  EXPECT_EQ(to_string(parse_shard("17/1000")), "17/1000");
  EXPECT_TRUE(parse_shard("0/1").whole());
  EXPECT_FALSE(parse_shard("0/2").whole());
}

TEST(SeedSlice, BadShardsAreRefusedByName) {
  for (const char* text : {"4/4", "0/0", "1/0", "-1/2", "a/b", "1", "/", "1/", "/2", "1/2/3", " 1/2", "1/99999999999999999999", ""}) {
    try {
      parse_shard(text);
      ADD_FAILURE() << "accepted '" << text << "'";
    } catch (const std::invalid_argument& e) {
      const std::string message = e.what();
      EXPECT_NE(message.find("--shard"), std::string::npos) << message;
      EXPECT_EQ(message.find('\n'), std::string::npos) << message;
    }
  }
}

}  // namespace
}  // namespace durasim::cli
