// A readable view of a trace's events, for `durasim explain`: each event's lane (the object or
// client it happened on), its simulated time, its kind and a one-line description. RPC outcomes are
// classified as the caller sees them (runtime.md 9.3): ok, a definite error, or uncertain (the call
// may or may not have run). Pure: it reads event lines and never runs anything.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace durasim::traces {

enum class RowKind {
  operation,  // an RPC: call, delivery, reply or failure
  fault,      // an injected fault
  lifecycle,  // an incarnation starting or ending (a reset)
  alarm,      // an alarm or scheduler timer firing, an alarm run's outcome
  storage,    // a commit, its confirmation or failure, a durability decision
  phase,      // run phases: safety, heal, liveness, check; run start and end
  other,      // a capability's or the application's own event
};
const char* row_kind_name(RowKind kind);

struct TimelineRow {
  uint64_t index = 0;       // position among the trace's events, from 0
  int64_t t = 0;            // simulated ms
  std::string lane;         // "Account/a2", "client", "world"
  int64_t incarnation = -1; // of the lane's object, when the event names one
  RowKind kind = RowKind::other;
  std::string name;         // the event's "ev"
  std::string text;         // one line
  std::string outcome;      // for RPC replies and failures: "ok", "definite error" or "uncertain"
  nlohmann::json event;     // the whole event
};

// One row per event line, in order. A line that is not a JSON object becomes an "other" row that
// says so (a loaded trace never has one).
std::vector<TimelineRow> build_timeline(const std::vector<std::string>& event_lines);

// "+12.345 s" relative to `start` (ms).
std::string relative_time(int64_t t, int64_t start);

}  // namespace durasim::traces
