// The port's Random (engine/runtime.h) over one recorded stream of the World's random source
// (runtime.md 2.3): random() is (next() >> 11) x 2^-53, uuid() an RFC 4122 version-4 UUID in lower
// case. Every draw is a recorded choice, so replay reproduces it.
#pragma once

#include <string>

#include "engine/runtime.h"
#include "sim/random.h"

namespace durasim::sim {

class StreamRandom final : public Random {
 public:
  // REQUIRES: `source` outlives this object.
  StreamRandom(RandomSource& source, StreamId stream) : source_(source), stream_(stream) {}

  double random() override;
  std::string uuid() override;

 private:
  RandomSource& source_;
  StreamId stream_;
};

}  // namespace durasim::sim
