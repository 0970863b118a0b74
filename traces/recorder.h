// The trace recorder (runtime.md 2.5): serialises each event as one canonical JSON line (compact,
// keys sorted, invalid UTF-8 replaced), folds it into the 64-bit trace hash (XXH3-64, each line
// seeded with the hash of the lines before it), writes a running-hash checkpoint every kCheckpointInterval events, optionally
// keeps the lines for a trace file. Checkers observe the World, not the recorder (properties/checkers.h).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "sim/hash.h"
#include "sim/trace_sink.h"

namespace durasim::traces {

inline constexpr uint64_t kCheckpointInterval = 1024;

struct Checkpoint {
  uint64_t events = 0;  // number of event lines hashed so far
  uint64_t hash = 0;    // running hash after them
};

// The canonical text of one event.
std::string canonical_line(const nlohmann::json& event);
// The trace hash before any event, and after one more event line.
inline constexpr uint64_t kTraceHashStart = 0;
inline uint64_t fold_event_line(uint64_t hash, std::string_view line) { return sim::xxh3_64(line, hash); }
// "0123456789abcdef": 16 lower-case hex digits.
std::string hash_hex(uint64_t hash);

class Recorder final : public sim::TraceSink {
 public:
  explicit Recorder(bool keep_lines) : keep_lines_(keep_lines) {}

  void record(const nlohmann::json& event) override;

  uint64_t hash() const { return hash_; }
  uint64_t events() const { return events_; }
  const std::vector<std::string>& lines() const { return lines_; }
  const std::vector<Checkpoint>& checkpoints() const { return checkpoints_; }

 private:
  bool keep_lines_;
  uint64_t hash_ = kTraceHashStart;
  uint64_t events_ = 0;
  std::vector<std::string> lines_;
  std::vector<Checkpoint> checkpoints_;
};

}  // namespace durasim::traces
