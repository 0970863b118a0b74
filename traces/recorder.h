// The trace recorder (runtime.md 2.5): folds each event into the 64-bit trace hash (XXH3-64 over a
// compact binary encoding of the event, seeded with the hash of the events before it), writes a
// running-hash checkpoint every kCheckpointInterval events, and, when a trace is kept, its canonical
// JSON line (compact, keys sorted, invalid UTF-8 replaced). The binary encoding is a function of the
// canonical line alone, so a trace loaded from its lines hashes as the run that wrote it. Checkers
// observe the World, not the recorder (properties/checkers.h).
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

// The canonical text of one event; of its fields, the text of their JSON object.
std::string canonical_line(const nlohmann::json& event);
std::string canonical_fields_line(const EventFields& event);
// The trace hash before any event, and after one more event. Two events with the same canonical
// line fold alike: integers by value whatever their JSON type, non-finite numbers as null (as the
// line writes them), strings with invalid UTF-8 as the line replaces them.
inline constexpr uint64_t kTraceHashStart = 0;
uint64_t fold_event(uint64_t hash, const nlohmann::json& event);
// The same fold of an event's fields: fold_event(hash, fields.to_json()) without building it.
uint64_t fold_event(uint64_t hash, const EventFields& event);
// "0123456789abcdef": 16 lower-case hex digits.
std::string hash_hex(uint64_t hash);

class Recorder final : public sim::TraceSink {
 public:
  explicit Recorder(bool keep_lines) : keep_lines_(keep_lines) {}

  using sim::TraceSink::record;
  void record(const sim::TraceEvent& event) override;

  uint64_t hash() const { return hash_; }
  uint64_t events() const { return events_; }
  const std::vector<std::string>& lines() const { return lines_; }
  const std::vector<uint64_t>& line_hashes() const { return line_hashes_; }  // the hash after each kept line
  const std::vector<Checkpoint>& checkpoints() const { return checkpoints_; }

 private:
  bool keep_lines_;
  uint64_t hash_ = kTraceHashStart;
  uint64_t events_ = 0;
  std::vector<std::string> lines_;
  std::vector<uint64_t> line_hashes_;
  std::vector<Checkpoint> checkpoints_;
};

}  // namespace durasim::traces
