// Seed ranges and shards; see seed_slice.h.
#include "cli/seed_slice.h"

#include <stdexcept>

namespace durasim::cli {
namespace {

// An unsigned decimal that fits in 64 bits, or nothing.
bool parse_count(const std::string& text, uint64_t& value) {
  if (text.empty() || text.size() > 20 || text.find_first_not_of("0123456789") != std::string::npos) return false;
  unsigned __int128 wide = 0;
  for (char c : text) wide = wide * 10 + static_cast<unsigned>(c - '0');
  if (wide > UINT64_MAX) return false;
  value = static_cast<uint64_t>(wide);
  return true;
}

// Where block `i` of `n` starts within `size` seeds: floor(i * size / n), without overflow.
uint64_t block_start(uint64_t i, uint64_t n, uint64_t size) {
  return static_cast<uint64_t>(static_cast<unsigned __int128>(i) * size / n);
}

}  // namespace

Shard parse_shard(const std::string& text) {
  const auto slash = text.find('/');
  Shard shard;
  const bool numbers = slash != std::string::npos && parse_count(text.substr(0, slash), shard.index) &&
                       parse_count(text.substr(slash + 1), shard.count);
  if (!numbers) throw std::invalid_argument("--shard must look like i/n with unsigned integers, got '" + text + "'");
  if (shard.count == 0) throw std::invalid_argument("--shard " + text + ": n must be at least 1");
  if (shard.index >= shard.count)
    throw std::invalid_argument("--shard " + text + ": i must be below n (shards are numbered 0.." + std::to_string(shard.count - 1) + ")");
  return shard;
}

std::string to_string(const Shard& shard) {
  std::string text = std::to_string(shard.index);
  text += '/';
  text += std::to_string(shard.count);
  return text;
}

uint64_t SeedSlice::begin() const { return first + block_start(shard.index, shard.count, last - first + 1); }

uint64_t SeedSlice::size() const {
  const uint64_t seeds = last - first + 1;
  return block_start(shard.index + 1, shard.count, seeds) - block_start(shard.index, shard.count, seeds);
}

SeedSlice make_slice(uint64_t first, uint64_t last, const Shard& shard) {
  std::string range = std::to_string(first);
  range += "..";
  range += std::to_string(last);
  if (first > last) throw std::invalid_argument("--seeds " + range + " is empty (start after end)");
  if (last - first >= kMaxSeedsPerRange)
    throw std::invalid_argument("--seeds " + range + " holds more than 10^15 seeds, the most one run may cover");
  return SeedSlice{first, last, shard};
}

}  // namespace durasim::cli
