// Hashing used for determinism: FNV-1a 64 (stream names, cold-store etags, canonical dumps), XXH3-64
// (bulk bytes: database pages and trace events) and splitmix64 (seed derivation). All are exact
// integer functions, identical on every platform and build type.
#pragma once

#include <cstdint>
#include <string_view>

namespace durasim::sim {

inline constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ULL;
inline constexpr uint64_t kFnvPrime = 0x100000001b3ULL;

// Folds `bytes` into a running FNV-1a 64 state (start from kFnvOffsetBasis).
constexpr uint64_t fnv1a64(std::string_view bytes, uint64_t state = kFnvOffsetBasis) {
  for (unsigned char c : bytes) {
    state ^= c;
    state *= kFnvPrime;
  }
  return state;
}

// Folds `bytes` into a running XXH3-64 state (xxHash, specified bit for bit by its authors): the
// previous state seeds the next piece. Many times faster than FNV-1a on pages of bytes.
uint64_t xxh3_64(std::string_view bytes, uint64_t state = 0);

constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace durasim::sim
