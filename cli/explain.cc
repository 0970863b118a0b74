// `durasim explain`; see explain.h.
#include "cli/explain.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <stdexcept>

#include "cli/commands.h"
#include "cli/seed_run.h"
#include "properties/happens_before.h"
#include "traces/trace_file.h"

namespace durasim::cli {
namespace {

using traces::TimelineRow;

std::vector<ExplainedViolation> violations_of(const sim::Tallies& tallies) {
  std::vector<ExplainedViolation> found;
  for (const auto& [id, tally] : tallies.by_id())
    if (tally.violated > 0)
      found.push_back({id, tally.violated, tally.examples.empty() ? "" : tally.examples.front(), tally.first_violation_event});
  std::stable_sort(found.begin(), found.end(), [](const ExplainedViolation& a, const ExplainedViolation& b) {
    return a.event.value_or(UINT64_MAX) < b.event.value_or(UINT64_MAX);
  });
  return found;
}

// The event the explanation centres on: the first violation's witness, else the end of a run that
// failed without one (stuck, aborted), else nothing.
std::optional<uint64_t> focus_of(const std::vector<ExplainedViolation>& violations, const SeedOutcome& run, uint64_t events) {
  for (const ExplainedViolation& v : violations)
    if (v.event) return v.event;
  if (!run.passed() && events > 0) return events - 1;
  return std::nullopt;
}

// The events of the lanes (objects, clients) a violation's message names.
std::set<uint64_t> related_events(const std::vector<TimelineRow>& rows, const std::vector<ExplainedViolation>& violations) {
  std::set<std::string> lanes;
  for (const TimelineRow& row : rows)
    for (const ExplainedViolation& v : violations)
      if (row.lane != "world" && v.message.find(row.lane) != std::string::npos) lanes.insert(row.lane);
  std::set<uint64_t> related;
  for (const TimelineRow& row : rows)
    if (lanes.count(row.lane)) related.insert(row.index);
  return related;
}

std::string config_line(const traces::TraceFile& trace) {
  const nlohmann::json& c = trace.config;
  std::string line = "seed " + std::to_string(trace.seed) + ", workload " + c.value("workload", "?") + ", faults " + c.value("faults", "?");
  if (c.contains("variants")) {
    line += ", variants";
    for (const nlohmann::json& v : c.at("variants")) {
      line += ' ';
      line += v.get<std::string>();
    }
  }
  if (c.contains("options") && !c.at("options").empty()) line += ", options " + c.at("options").dump();
  return line;
}

std::string pad(std::string text, std::size_t width) {
  if (text.size() < width) text.append(width - text.size(), ' ');
  return text;
}

std::string lane_of(const TimelineRow& row) {
  std::string lane = row.lane;
  if (row.incarnation >= 0 && row.lane != "world" && row.lane != "client") {
    lane += '#';
    lane += std::to_string(row.incarnation);
  }
  return lane;
}

void print_row(std::ostream& out, const TimelineRow& row, int64_t start, const ExplainPage& page) {
  const char* marker = page.witnesses.count(row.index) ? ">> " : page.related.count(row.index) ? " * " : "   ";
  std::string index = "#";
  index += std::to_string(row.index);
  out << marker << pad(std::move(index), 8) << pad(traces::relative_time(row.t, start), 14) << pad(lane_of(row), 22) << " "
      << pad(traces::row_kind_name(row.kind), 10) << row.text << "\n";
}

template <class Write>
bool write_file(const std::string& path, const char* what, std::ostream& err, Write write) {
  std::ofstream file(path);
  write(file);
  file.close();
  if (!file) {
    err << "durasim explain: cannot write the " << what << " to " << path << "\n";
    return false;
  }
  return true;
}

}  // namespace

int explain_command(const ExplainOptions& options, std::ostream& out, std::ostream& err) {
  traces::TraceFile trace;
  ReplayOutcome replayed;
  try {
    trace = traces::load_trace(options.path);
    replayed = replay(trace);
  } catch (const std::exception& e) {
    err << "durasim explain: " << e.what() << "\n";
    return kExitBadInput;
  }
  ExplainPage page;
  page.title = "durasim explain: " + options.path;
  page.start_time = replayed.run.start_time;
  page.violations = violations_of(replayed.run.tallies);
  const std::vector<TimelineRow> rows = traces::build_timeline(trace.events);
  const uint64_t events = rows.size();
  const std::optional<uint64_t> focus = focus_of(page.violations, replayed.run, events);
  uint64_t first = 0, last = events == 0 ? 0 : events - 1;
  if (options.around && focus) {
    first = *focus > *options.around ? *focus - *options.around : 0;
    last = std::min(last, *focus + *options.around);
  }
  for (const ExplainedViolation& v : page.violations)
    if (v.event) page.witnesses.insert(*v.event);
  page.related = related_events(rows, page.violations);
  if (events > 0) page.rows.assign(rows.begin() + static_cast<std::ptrdiff_t>(first), rows.begin() + static_cast<std::ptrdiff_t>(last) + 1);

  page.summary.push_back(config_line(trace));
  page.summary.push_back("start time " + std::to_string(page.start_time) + " ms; " + std::to_string(events) + " events, " +
                         std::to_string(trace.choices.choices.size()) + " choices, hash " + traces::hash_hex(trace.hash));
  page.summary.push_back(replayed.matched ? "replay: matches the trace"
                                          : "replay: DIVERGED: " + (replayed.divergence ? replayed.divergence->describe()
                                                                                        : replayed.choice_divergence.value_or("?")));
  page.summary.push_back(replayed.run.passed() ? "verdict: passed" : "verdict: " + replayed.run.failure());

  out << page.title << "\n";
  for (const std::string& line : page.summary) out << "  " << line << "\n";
  if (!page.violations.empty()) {
    out << "violations (>> the event during which each was found; * events of the objects it names):\n";
    for (const ExplainedViolation& v : page.violations) {
      out << "  " << v.id << " x" << v.count;
      if (v.event) out << " at #" << *v.event << " (" << traces::relative_time(rows[*v.event].t, page.start_time) << ")";
      out << ": " << v.message << "\n";
    }
  }
  out << "timeline: events #" << first << "..#" << last << " of " << events << (options.around ? "" : " (all; --around N narrows)") << "\n";
  for (const TimelineRow& row : page.rows) print_row(out, row, page.start_time, page);

  if (options.dot) {
    std::vector<nlohmann::json> parsed;
    parsed.reserve(rows.size());
    for (const TimelineRow& row : rows) parsed.push_back(row.event);
    const bool written = write_file(*options.dot, "DOT graph", err, [&](std::ostream& file) {
      if (events > 0) properties::write_happens_before_dot(file, parsed, first, last, page.witnesses);
    });
    if (!written) return kExitBadInput;
    out << "happens-before graph of events #" << first << "..#" << last << " written to " << *options.dot << "\n";
  }
  if (options.html) {
    if (!write_file(*options.html, "HTML page", err, [&](std::ostream& file) { write_explain_html(file, page); })) return kExitBadInput;
    out << "HTML timeline written to " << *options.html << "\n";
  }
  return kExitOk;
}

}  // namespace durasim::cli
