// The World's seeded random source (runtime.md 2.3). Named streams are derived from the root seed
// (splitmix64(seed ^ fnv1a64(name)) seeding a xoshiro256** generator), so extra draws in one stream
// never shift another. Every draw is a recorded choice: in recording mode it is appended to the
// ChoiceLog; in replay mode it is read back from a log, the seed withheld (RT-23), and a request
// that does not match the recorded one (other stream or bound) marks the replay as diverged. In
// forgiving mode (the shrinker's, cli/shrink.h) a log is read back per stream and never diverges: a
// draw whose stream has run out, or whose recorded choice does not fit it, gets the simplest value
// of its kind instead, and every draw is recorded as in recording mode. another() starts an actor's
// operation with a choice of its own, so that operations are units the shrinker can delete. The one
// unrecorded draw, below_unrecorded, exists for sim.mutant.unrecorded_choice.
// Sampling is integer-only: rejection sampling for ranges, parts per million for probabilities, a
// fixed quantile table for exponential latencies.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace durasim::sim {

class Xoshiro256 {
 public:
  explicit Xoshiro256(uint64_t seed);
  uint64_t next();

 private:
  std::array<uint64_t, 4> s_;
};

// One recorded draw: a value in [0, bound) from a stream (bound 0 means the full 64-bit range).
struct Choice {
  uint32_t stream = 0;
  uint64_t bound = 0;
  uint64_t value = 0;
  friend bool operator==(const Choice&, const Choice&) = default;
};

struct ChoiceLog {
  std::vector<std::string> streams;  // index -> stream name, in order of first use
  std::vector<Choice> choices;
  friend bool operator==(const ChoiceLog&, const ChoiceLog&) = default;
};

// A handle for a named stream, obtained once and reused on hot paths.
struct StreamId {
  uint32_t index = 0;
};

inline constexpr uint32_t kPpmScale = 1'000'000;  // probabilities are integers in parts per million

class RandomSource {
 public:
  static RandomSource recording(uint64_t seed);
  static RandomSource replaying(ChoiceLog log);
  // Forgiving replay: a draw from stream S takes the next choice `log` holds for the stream named S
  // (the order of choices across streams does not matter). When S has none left, or the choice has
  // another bound or a value outside it, the choice is used up and the draw returns the simplest
  // value of its kind: below 0, between lo, chance false, exponential the shortest, and a full-range
  // draw (bits, the stuff of UUIDs) its own index in log(), so that identities stay distinct. What
  // the run drew is recorded in log() (in recording mode's format, so it replays exactly with replaying()),
  // and simplest() says, per recorded choice, which value would have been the simplest. The seed is
  // withheld: nothing is generated.
  static RandomSource forgiving(const ChoiceLog& log);

  StreamId stream(std::string_view name);

  // Uniform integer in [0, bound); bound 0 means any 64-bit value. A bound of 1 draws nothing.
  uint64_t below(StreamId stream, uint64_t bound);
  // Uniform integer in [lo, hi] (REQUIRES: lo <= hi).
  int64_t between(StreamId stream, int64_t lo, int64_t hi);
  // True with probability ppm / 10^6; certain outcomes (0 or >= 10^6) draw nothing.
  bool chance(StreamId stream, uint32_t ppm);
  // A draw from an exponential distribution with the given mean, in whole milliseconds.
  int64_t exponential(StreamId stream, int64_t mean);
  // Any 64-bit value.
  uint64_t bits(StreamId stream) { return below(stream, 0); }
  // Whether an actor goes on to its next operation (workloads/actor_stream.h). Recording mode: true,
  // recorded as the choice {bound 2, value 1} without a draw from the generator; replay and forgiving
  // modes read the choice back, its simplest value 0 (what forgiving mode gives a stream that has run
  // out) meaning stop. Forgiving mode notes where each such choice sits (units()), so the shrinker
  // can delete an actor's operations whole.
  bool another(StreamId stream);
  // sim.mutant.unrecorded_choice only (sim/mutants.h): as below(), but the choice log does not record
  // the draw. A replaying source has no generator to draw from (the seed is withheld) and returns 0.
  uint64_t below_unrecorded(StreamId stream, uint64_t bound);

  bool replaying() const { return replay_; }
  bool forgiving() const { return forgiving_; }
  const ChoiceLog& log() const { return log_; }
  // Forgiving mode only (empty otherwise): parallel to log().choices, the simplest value each draw
  // could have taken (kPpmScale - 1 for a chance, whose outcome is then false; 0 for the others).
  const std::vector<uint64_t>& simplest() const { return simplest_; }
  // Forgiving mode only: the index in log().choices of each choice another() drew, ascending.
  const std::vector<std::size_t>& units() const { return units_; }
  // Forgiving mode only: how many draws got the simplest value because their stream had run out or
  // its next choice did not fit.
  uint64_t forgiven() const { return forgiven_; }
  uint64_t draws() const { return draws_; }
  // Set once a replayed request differs from the log; later draws return 0.
  const std::optional<std::string>& divergence() const { return divergence_; }

 private:
  RandomSource(uint64_t seed, bool replay) : seed_(seed), replay_(replay) {}
  // below() with, for forgiving mode, the simplest value of the calling kind of draw.
  uint64_t draw(StreamId stream, uint64_t bound, uint64_t simplest);
  uint64_t sample(uint32_t stream, uint64_t bound);
  uint64_t forgive_next(uint32_t stream, uint64_t bound, uint64_t simplest);
  uint64_t generate(uint32_t stream, uint64_t bound);  // the next value of the stream, unrecorded
  uint64_t replay_next(uint32_t stream, uint64_t bound);

  uint64_t seed_;
  bool replay_;
  ChoiceLog log_;            // recording: what was drawn; replay: what to give back
  std::size_t cursor_ = 0;   // replay position in log_.choices
  uint64_t draws_ = 0;
  std::map<std::string, uint32_t, std::less<>> index_;
  std::vector<Xoshiro256> generators_;  // recording only, parallel to log_.streams
  std::vector<uint32_t> replay_names_;  // replay: stream index in this run -> index in the log
  std::optional<std::string> divergence_;
  // Forgiving mode: the input's choices per stream name, and per stream of this run (by index) the
  // input stream it reads (kNoInput when the input has none) and how far it has read.
  bool forgiving_ = false;
  std::map<std::string, std::vector<Choice>, std::less<>> forgive_input_;
  std::vector<const std::vector<Choice>*> forgive_streams_;
  std::vector<std::size_t> forgive_cursors_;
  std::vector<uint64_t> simplest_;
  std::vector<std::size_t> units_;
  uint64_t forgiven_ = 0;
};

}  // namespace durasim::sim
