// Trace events as timeline rows; see timeline.h.
#include "traces/timeline.h"

#include <cstdio>
#include <map>
#include <utility>

namespace durasim::traces {
namespace {

using nlohmann::json;

std::string str(const json& e, const char* field) {
  if (!e.contains(field)) return "";
  const json& v = e.at(field);
  return v.is_string() ? v.get<std::string>() : v.dump();
}
int64_t integer(const json& e, const char* field, int64_t fallback = -1) {
  return e.contains(field) && e.at(field).is_number_integer() ? e.at(field).get<int64_t>() : fallback;
}

// The fields of `e` not already shown elsewhere in the row, compactly.
std::string rest_of(const json& e) {
  json rest = json::object();
  for (const auto& [key, value] : e.items())
    if (key != "ev" && key != "t" && key != "object" && key != "incarnation") rest[key] = value;
  std::string text = rest.empty() ? "" : rest.dump();
  constexpr std::size_t kMaxChars = 160;
  if (text.size() > kMaxChars) {
    text.resize(kMaxChars);
    text += "...";
  }
  return text;
}

// What the caller can conclude from a failed call (runtime.md 9.3): a refusal (overloaded) or the
// callee's own error is definite; a lost request or reply, or a reset of the callee during the
// call, leaves the caller not knowing whether it ran.
std::string failure_outcome(const std::string& how, const std::string& error) {
  if (error.find("overloaded") != std::string::npos) return "definite error";
  if (how == "error" && error.find("reset") == std::string::npos) return "definite error";
  return "uncertain";
}

struct Call {
  std::string from, to, method;
};

class Builder {
 public:
  TimelineRow row(uint64_t index, const json& e) {
    TimelineRow r;
    r.index = index;
    r.t = integer(e, "t", 0);
    r.name = str(e, "ev");
    r.lane = e.contains("object") ? str(e, "object") : "world";
    r.incarnation = integer(e, "incarnation");
    describe(e, r);
    r.event = e;
    return r;
  }

 private:
  void describe(const json& e, TimelineRow& r) {
    const std::string& ev = r.name;
    if (ev.rfind("rpc.", 0) == 0) return rpc(e, r);
    if (ev == "fault") {
      r.kind = RowKind::fault;
      r.text = "FAULT " + str(e, "fault") + " at " + str(e, "point") + (e.contains("details") ? " " + str(e, "details") : "");
    } else if (ev == "incarnation.start") {
      r.kind = RowKind::lifecycle;
      r.text = "incarnation " + str(e, "incarnation") + " starts";
    } else if (ev == "incarnation.end") {
      r.kind = RowKind::lifecycle;
      r.text = (e.value("reset", false) ? "RESET of incarnation " : "incarnation ends: ") + str(e, "incarnation") + ": " + str(e, "cause");
    } else if (ev.rfind("alarm.", 0) == 0 || ev == "sch.timer.fire") {
      r.kind = RowKind::alarm;
      r.text = ev + " " + rest_of(e);
    } else if (ev == "commit" || ev == "confirm" || ev == "commit.failed" || ev == "durability") {
      r.kind = RowKind::storage;
      if (ev == "commit") r.text = "commit " + str(e, "commit");
      else if (ev == "confirm") r.text = "confirm commit " + str(e, "commit");
      else if (ev == "commit.failed") r.text = "COMMIT FAILED (" + str(e, "outcome") + ")";
      else r.text = "durability decided: kept " + str(e, "kept") + " of " + str(e, "unconfirmed") + " unconfirmed";
    } else if (ev == "phase" || ev.rfind("run.", 0) == 0) {
      r.kind = RowKind::phase;
      r.text = ev == "phase" ? "PHASE " + str(e, "phase") : ev;
    } else {
      r.text = ev + " " + rest_of(e);
    }
  }

  void rpc(const json& e, TimelineRow& r) {
    r.kind = RowKind::operation;
    const int64_t id = integer(e, "call");
    const std::string call = "call " + std::to_string(id);
    if (r.name == "rpc.call") {
      calls_[id] = {str(e, "from"), str(e, "to"), str(e, "method")};
      r.lane = str(e, "from");
      r.text = call + ": " + str(e, "method") + " -> " + str(e, "to");
      return;
    }
    const Call& c = calls_[id];
    if (r.name == "rpc.deliver") {
      r.lane = str(e, "to");
      r.text = "receives " + call + ": " + c.method + " from " + c.from;
      return;
    }
    r.lane = c.from.empty() ? "world" : c.from;
    if (r.name == "rpc.reply") {
      r.outcome = e.value("ok", false) ? "ok" : "definite error";
      r.text = call + " " + c.method + " -> " + c.to + ": " + r.outcome;
    } else if (r.name == "rpc.fail") {
      r.outcome = failure_outcome(str(e, "how"), str(e, "error"));
      r.text = call + " " + c.method + " -> " + c.to + ": " + r.outcome + " (" + str(e, "how") + ": " + str(e, "error") + ")";
    } else {
      r.text = r.name + " " + rest_of(e);
    }
  }

  std::map<int64_t, Call> calls_;
};

}  // namespace

const char* row_kind_name(RowKind kind) {
  switch (kind) {
    case RowKind::operation: return "op";
    case RowKind::fault: return "fault";
    case RowKind::lifecycle: return "lifecycle";
    case RowKind::alarm: return "alarm";
    case RowKind::storage: return "storage";
    case RowKind::phase: return "phase";
    case RowKind::other: return "other";
  }
  return "other";
}

std::vector<TimelineRow> build_timeline(const std::vector<std::string>& event_lines) {
  std::vector<TimelineRow> rows;
  rows.reserve(event_lines.size());
  Builder builder;
  for (const std::string& line : event_lines) {
    const json e = json::parse(line, nullptr, false);
    if (e.is_object()) {
      rows.push_back(builder.row(rows.size(), e));
    } else {
      TimelineRow r;
      r.index = rows.size();
      r.lane = "world";
      r.text = "(not a JSON object)";
      rows.push_back(std::move(r));
    }
  }
  return rows;
}

std::string relative_time(int64_t t, int64_t start) {
  const int64_t ms = t - start;
  const int64_t whole = ms / 1000, frac = (ms < 0 ? -ms : ms) % 1000;
  char buffer[48];
  std::snprintf(buffer, sizeof buffer, "%s%lld.%03lld s", ms < 0 ? "-" : "+", static_cast<long long>(whole < 0 ? -whole : whole),
                static_cast<long long>(frac));
  return buffer;
}

}  // namespace durasim::traces
