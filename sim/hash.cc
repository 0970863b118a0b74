// XXH3-64 for bulk bytes (sim/hash.h), from Debian's libxxhash.
#include "sim/hash.h"

#include <xxhash.h>

namespace durasim::sim {

uint64_t xxh3_64(std::string_view bytes, uint64_t state) { return XXH3_64bits_withSeed(bytes.data(), bytes.size(), state); }

}  // namespace durasim::sim
