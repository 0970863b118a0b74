// Trace files (DESIGN.md, "Traces"): JSON Lines, in this order:
//   {"format":"durasim-trace","version":5,"seed":S,"config":{...}}   the header
//   {"streams":[names...]}                                           random stream names
//   {"choices":[[stream,bound,value],...]}                           the choice log, in chunks
//   <event line> ... with {"checkpoint":{"events":N,"hash":"..."}} every 1,024 events
//   {"end":{"events":N,"choices":M,"hash":"..."}}                    the final hash
// Event lines are canonical (traces/recorder.h); the hash covers them alone (fold_event of each). Loading validates every
// line, every checkpoint and the final hash, and reports the first problem as "line N: what".
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/random.h"
#include "traces/recorder.h"

namespace durasim::traces {

// 2: the trace hash and the commit hashes in events are XXH3-64 (version 1 used FNV-1a 64).
// 3: the trace hash folds each event's binary encoding, no longer its JSON line (recorder.h).
// 4: workload actors draw from streams of their own, an operation opened by a choice of its own;
//    the engine's buggify sites draw in campaigns.
// 5: fault episodes join the swarm profile, and a workload's profile draws only the faults it hosts.
inline constexpr int64_t kTraceFormatVersion = 5;

// Arrays and objects nest at most this deep in a trace line (recorded events nest four levels, a
// header's workload options a few more). Deeper input is refused before it is built: the code that
// copies, prints and hashes JSON (nlohmann::json, fold_event) recurses once per level, and a line
// nested a million levels deep would run it off the end of the stack.
inline constexpr int kMaxJsonDepth = 64;
// A workload option's value sits three levels down in the header line, {"config":{"options":{"KEY":
// VALUE}}}: this deep it fits.
inline constexpr int kMaxOptionDepth = kMaxJsonDepth - 3;

// `text` as JSON, or a discarded value (is_discarded()) when it is not JSON, as
// nlohmann::json::parse(text, nullptr, false). Throws std::invalid_argument when arrays and objects
// nest deeper than `max_depth` levels. For every JSON text a user hands durasim: trace lines,
// workload options, result files.
nlohmann::json parse_bounded_json(const std::string& text, int max_depth = kMaxJsonDepth);

// A trace that cannot be read: the message says where and why, in one line.
class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct TraceFile {
  uint64_t seed = 0;
  nlohmann::json config = nlohmann::json::object();
  sim::ChoiceLog choices;
  std::vector<std::string> events;  // canonical event lines
  std::vector<uint64_t> event_hashes;  // the running trace hash after each event
  std::vector<uint64_t> event_line_numbers;  // where each event sits in the file (1-based); empty when built in memory
  std::vector<Checkpoint> checkpoints;
  uint64_t hash = kTraceHashStart;
};

// Writes `trace` to `path` through a temporary file renamed into place, so a reader never sees a
// partial trace. Throws TraceError when the file cannot be written.
void write_trace(const std::string& path, const TraceFile& trace);
// Reads and validates a trace. Throws TraceError("<path>: line N: ...") on any defect.
TraceFile load_trace(const std::string& path);
// As load_trace, from text already in memory (`name` is used in messages).
TraceFile parse_trace(const std::string& text, const std::string& name);

}  // namespace durasim::traces
