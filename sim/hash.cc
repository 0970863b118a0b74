// XXH3-64 for bulk bytes (sim/hash.h), from Debian's libxxhash. Its x86 dispatcher picks the widest
// vector unit the processor has (AVX2 over the SSE2 baseline the library is built for); every
// variant computes the same value, bit for bit.
#include "sim/hash.h"

#include <xxhash.h>
#if defined(__x86_64__) || defined(_M_X64)
#include <xxh_x86dispatch.h>
#endif

namespace durasim::sim {

uint64_t xxh3_64(std::string_view bytes, uint64_t state) { return XXH3_64bits_withSeed(bytes.data(), bytes.size(), state); }

}  // namespace durasim::sim
