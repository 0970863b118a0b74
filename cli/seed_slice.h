// The seeds one `durasim run` covers: an inclusive range A..B, optionally cut to shard i of n.
// Shard i holds a contiguous block, seeds A + floor(i*N/n) .. A + floor((i+1)*N/n) - 1 of the N in
// the range, so the n shards partition it, differ in size by at most one seed, and share the
// every-16th determinism checks evenly. A shard may be empty when n exceeds N.
#pragma once

#include <cstdint>
#include <string>

namespace durasim::cli {

// A range may hold at most 10^15 seeds: far beyond any campaign, and small enough that every count
// of seeds times workloads fits in 64 bits.
inline constexpr uint64_t kMaxSeedsPerRange = 1'000'000'000'000'000;

struct Shard {
  uint64_t index = 0;
  uint64_t count = 1;  // 1: the whole range
  bool whole() const { return count == 1; }
  bool operator==(const Shard&) const = default;
};

// "i/n" with 0 <= i < n; throws std::invalid_argument with a one-line message otherwise.
Shard parse_shard(const std::string& text);
std::string to_string(const Shard& shard);  // "i/n"

struct SeedSlice {
  uint64_t first = 0, last = 0;  // the range, inclusive
  Shard shard;

  uint64_t begin() const;  // the shard's first seed (meaningful when size() > 0)
  uint64_t size() const;   // how many seeds the shard holds
  uint64_t seed_at(uint64_t k) const { return begin() + k; }
};

// Throws std::invalid_argument when first > last or the range holds more than kMaxSeedsPerRange.
SeedSlice make_slice(uint64_t first, uint64_t last, const Shard& shard);

}  // namespace durasim::cli
