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
