// Seeded streams and the choice log; see random.h.
#include "sim/random.h"

#include "sim/hash.h"

namespace durasim::sim {
namespace {

constexpr uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

constexpr std::array<int64_t, 1024> kExpQuantilesPpm = {
#include "sim/exp_quantiles.inc"
};

constexpr uint32_t kUnknownStream = UINT32_MAX;

}  // namespace

Xoshiro256::Xoshiro256(uint64_t seed) {
  for (uint64_t& word : s_) {
    seed = splitmix64(seed);
    word = seed;
  }
}

uint64_t Xoshiro256::next() {
  const uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

RandomSource RandomSource::recording(uint64_t seed) { return RandomSource(seed, false); }

RandomSource RandomSource::replaying(ChoiceLog log) {
  RandomSource source(0, true);
  source.log_ = std::move(log);
  return source;
}

RandomSource RandomSource::forgiving(const ChoiceLog& log) {
  RandomSource source(0, false);
  source.forgiving_ = true;
  for (const Choice& choice : log.choices) {
    const std::string name = choice.stream < log.streams.size() ? log.streams[choice.stream] : std::string();
    source.forgive_input_[name].push_back(choice);
  }
  return source;
}

StreamId RandomSource::stream(std::string_view name) {
  if (auto it = index_.find(name); it != index_.end()) return StreamId{it->second};
  const auto id = static_cast<uint32_t>(index_.size());
  index_.emplace(std::string(name), id);
  if (replay_) {
    uint32_t recorded = kUnknownStream;
    for (uint32_t i = 0; i < log_.streams.size(); ++i)
      if (log_.streams[i] == name) recorded = i;
    replay_names_.push_back(recorded);
  } else if (forgiving_) {
    log_.streams.emplace_back(name);
    const auto input = forgive_input_.find(name);
    forgive_streams_.push_back(input == forgive_input_.end() ? nullptr : &input->second);
    forgive_cursors_.push_back(0);
  } else {
    log_.streams.emplace_back(name);
    generators_.emplace_back(splitmix64(seed_ ^ fnv1a64(name)));
  }
  return StreamId{id};
}

uint64_t RandomSource::below(StreamId stream, uint64_t bound) { return draw(stream, bound, 0); }

uint64_t RandomSource::draw(StreamId stream, uint64_t bound, uint64_t simplest) {
  if (bound == 1) return 0;
  ++draws_;
  if (forgiving_) return forgive_next(stream.index, bound, simplest);
  return replay_ ? replay_next(stream.index, bound) : sample(stream.index, bound);
}

uint64_t RandomSource::forgive_next(uint32_t stream, uint64_t bound, uint64_t simplest) {
  // Full-range draws make identities (UUIDs): their simplest values differ, as identities must.
  if (bound == 0) simplest = log_.choices.size();
  uint64_t value = simplest;
  const std::vector<Choice>* input = forgive_streams_[stream];
  std::size_t& cursor = forgive_cursors_[stream];
  if (input && cursor < input->size()) {
    const Choice& next = (*input)[cursor++];
    if (next.bound == bound && (bound == 0 || next.value < bound)) {
      value = next.value;
    } else {
      ++forgiven_;
    }
  } else {
    ++forgiven_;
  }
  log_.choices.push_back(Choice{stream, bound, value});
  simplest_.push_back(simplest);
  return value;
}

uint64_t RandomSource::sample(uint32_t stream, uint64_t bound) {
  const uint64_t value = generate(stream, bound);
  log_.choices.push_back(Choice{stream, bound, value});
  return value;
}

uint64_t RandomSource::generate(uint32_t stream, uint64_t bound) {
  Xoshiro256& gen = generators_[stream];
  uint64_t value = gen.next();
  if (bound != 0) {
    // Rejection sampling: accept only values below the largest multiple of bound.
    const uint64_t limit = UINT64_MAX - (UINT64_MAX % bound + 1) % bound;
    while (value > limit) value = gen.next();
    value %= bound;
  }
  return value;
}

uint64_t RandomSource::below_unrecorded(StreamId stream, uint64_t bound) {
  if (bound == 1 || replay_ || forgiving_) return 0;
  return generate(stream.index, bound);
}

uint64_t RandomSource::replay_next(uint32_t stream, uint64_t bound) {
  if (divergence_) return 0;
  const uint32_t recorded_stream = replay_names_[stream];
  if (cursor_ >= log_.choices.size()) {
    divergence_ = "choice #" + std::to_string(cursor_) + ": the run asks for more choices than were recorded";
    return 0;
  }
  const Choice& next = log_.choices[cursor_];
  if (next.stream != recorded_stream || next.bound != bound || (bound != 0 && next.value >= bound)) {
    const std::string wanted = recorded_stream == kUnknownStream ? "an unrecorded stream" : log_.streams[recorded_stream];
    const std::string found = next.stream < log_.streams.size() ? log_.streams[next.stream] : "?";
    divergence_ = "choice #" + std::to_string(cursor_) + ": the run draws from '" + wanted + "' with bound " +
                  std::to_string(bound) + ", the log holds '" + found + "' with bound " + std::to_string(next.bound);
    return 0;
  }
  ++cursor_;
  return next.value;
}

bool RandomSource::another(StreamId stream) {
  constexpr uint64_t kGoOn = 1;
  ++draws_;
  if (forgiving_) {
    units_.push_back(log_.choices.size());
    return forgive_next(stream.index, 2, 0) == kGoOn;
  }
  if (replay_) return replay_next(stream.index, 2) == kGoOn;
  log_.choices.push_back(Choice{stream.index, 2, kGoOn});
  return true;
}

int64_t RandomSource::between(StreamId stream, int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi) - static_cast<uint64_t>(lo) + 1;  // 0 = full range
  return static_cast<int64_t>(static_cast<uint64_t>(lo) + below(stream, span));
}

bool RandomSource::chance(StreamId stream, uint32_t ppm) {
  if (ppm == 0) return false;
  if (ppm >= kPpmScale) return true;
  // Forgiving mode's simplest chance is the outcome false: the largest value.
  return draw(stream, kPpmScale, kPpmScale - 1) < ppm;
}

int64_t RandomSource::exponential(StreamId stream, int64_t mean) {
  const int64_t quantile = kExpQuantilesPpm[below(stream, kExpQuantilesPpm.size())];
  // mean <= 2^40 keeps the product within int64 (quantiles are below 2^23).
  return quantile * mean / static_cast<int64_t>(kPpmScale);
}

}  // namespace durasim::sim
