// `durasim explain FILE`: a failure trace made readable. The trace is replayed with the checkers of
// its workload attached, so each violated invariant is placed at the event during which it was
// found (its witness), and printed as a timeline: simulated time, lane (object or client) and
// incarnation, operations with their outcome (ok, definite error, uncertain), faults, resets, alarm
// fires, commits and confirmations. `--around N` keeps the N events either side of the first
// violation; `--dot` writes that region's happens-before graph (Graphviz DOT); `--html` writes one
// self-contained page (no network) with a lane per object and client.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "traces/timeline.h"

namespace durasim::cli {

struct ExplainOptions {
  std::string path;
  std::optional<uint64_t> around;
  std::optional<std::string> dot, html;
};

// 0 when explained (whatever the trace's verdict), 2 on a malformed trace, an unrunnable
// configuration or an unwritable output file.
int explain_command(const ExplainOptions& options, std::ostream& out, std::ostream& err);

// One violated invariant as the replay found it.
struct ExplainedViolation {
  std::string id;
  uint64_t count = 0;
  std::string message;             // the first
  std::optional<uint64_t> event;   // index of the event during which it was found
};

// What the HTML page shows.
struct ExplainPage {
  std::string title;
  std::vector<std::string> summary;  // lines
  std::vector<ExplainedViolation> violations;
  std::vector<traces::TimelineRow> rows;  // the region, in order
  int64_t start_time = 0;
  std::set<uint64_t> witnesses;  // detection events
  std::set<uint64_t> related;    // events of the objects a violation names
};
// A complete HTML document: inline style and script, nothing fetched.
void write_explain_html(std::ostream& out, const ExplainPage& page);

}  // namespace durasim::cli
