// StreamRandom; see stream_random.h.
#include "sim/stream_random.h"

#include <cstdio>

namespace durasim::sim {

double StreamRandom::random() { return static_cast<double>(source_.bits(stream_) >> 11) * 0x1.0p-53; }

std::string StreamRandom::uuid() {
  const uint64_t hi = (source_.bits(stream_) & ~0xf000ULL) | 0x4000ULL;        // version 4
  const uint64_t lo = (source_.bits(stream_) & ~(3ULL << 62)) | (1ULL << 63);  // RFC 4122 variant
  char text[37];
  std::snprintf(text, sizeof text, "%08llx-%04llx-%04llx-%04llx-%012llx", static_cast<unsigned long long>(hi >> 32),
                static_cast<unsigned long long>((hi >> 16) & 0xffff), static_cast<unsigned long long>(hi & 0xffff),
                static_cast<unsigned long long>(lo >> 48), static_cast<unsigned long long>(lo & 0xffffffffffffULL));
  return text;
}

}  // namespace durasim::sim
