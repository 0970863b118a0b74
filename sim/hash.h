// Integer hashing used for determinism: FNV-1a 64 (trace hash, stream names) and splitmix64 (seed
// derivation). Both are exact integer functions, identical on every platform and build type.
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

constexpr uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace durasim::sim
