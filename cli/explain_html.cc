// The HTML page of `durasim explain --html`: one self-contained document (inline style and script,
// nothing fetched). A table with a column (lane) per object and client and a row per event, faults,
// resets and failed outcomes coloured, the witness of each violation highlighted and linked from the
// summary, every event expandable to its full JSON, a text filter and a switch per event kind. The
// script sets data-ready on <body> once it has run, which the headless-browser test reads.
#include <algorithm>
#include <map>
#include <string_view>

#include "cli/explain.h"

namespace durasim::cli {
namespace {

using traces::TimelineRow;

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

// Lanes in the order the page shows them: the world, then clients, then objects, each in order of
// first appearance.
std::vector<std::string> lanes_of(const std::vector<TimelineRow>& rows) {
  std::vector<std::string> world, clients, objects;
  for (const TimelineRow& row : rows) {
    std::vector<std::string>& group = row.lane == "world" ? world : row.lane.find('/') == std::string::npos ? clients : objects;
    if (std::find(group.begin(), group.end(), row.lane) == group.end()) group.push_back(row.lane);
  }
  world.insert(world.end(), clients.begin(), clients.end());
  world.insert(world.end(), objects.begin(), objects.end());
  return world;
}

const char* const kStyle = R"(
body { font: 13px/1.4 system-ui, sans-serif; margin: 0; color: #1d1d1f; background: #fafafa; display: flex; flex-direction: column; height: 100vh; }
header { background: #fff; border-bottom: 1px solid #ccc; padding: 8px 12px; flex: none; }
#scroller { flex: 1; overflow: auto; }
h1 { font-size: 16px; margin: 0 0 4px; }
.summary { margin: 0; color: #444; }
.violations { margin: 6px 0; padding-left: 18px; }
.violations li { color: #a00; }
.violations a { color: #a00; font-weight: 600; }
.controls { margin-top: 6px; display: flex; gap: 10px; flex-wrap: wrap; align-items: center; }
.controls input[type=text] { width: 260px; }
table { border-collapse: collapse; font-family: ui-monospace, monospace; font-size: 12px; }
th { position: sticky; top: 0; background: #eef; border: 1px solid #ccd; padding: 3px 6px; z-index: 1; }
td { border: 1px solid #e4e4e4; padding: 2px 6px; vertical-align: top; max-width: 420px; }
td.idx, td.time { color: #666; white-space: nowrap; }
details summary { cursor: pointer; list-style: none; }
details pre { white-space: pre-wrap; word-break: break-all; background: #f4f4f8; margin: 4px 0; padding: 4px; }
tr.k-fault td.ev { background: #ffe4e1; }
tr.k-lifecycle td.ev { background: #fff1c9; }
tr.k-alarm td.ev { background: #e6f4ea; }
tr.k-storage td.ev { color: #555; }
tr.k-phase td { background: #eceff7; font-weight: 600; }
tr.o-uncertain td.ev { background: #fde8c8; }
tr.o-definite td.ev { background: #f9d6d6; }
tr.related td.ev { outline: 1px dashed #c33; }
tr.witness td { background: #ffd0d0 !important; font-weight: 700; }
tr.hidden { display: none; }
)";

const char* const kScript = R"(
(function () {
  var rows = Array.prototype.slice.call(document.querySelectorAll('#timeline tbody tr'));
  var filter = document.getElementById('filter');
  var kinds = Array.prototype.slice.call(document.querySelectorAll('input[data-kind]'));
  function apply() {
    var text = filter.value.toLowerCase();
    var shown = {};
    kinds.forEach(function (box) { shown[box.getAttribute('data-kind')] = box.checked; });
    rows.forEach(function (row) {
      var visible = shown[row.getAttribute('data-kind')] !== false &&
                    (text === '' || row.textContent.toLowerCase().indexOf(text) >= 0);
      row.classList.toggle('hidden', !visible);
    });
  }
  filter.addEventListener('input', apply);
  kinds.forEach(function (box) { box.addEventListener('change', apply); });
  // The table scrolls in its own box below the header: the first witness is brought to its middle.
  var scroller = document.getElementById('scroller');
  var witness = document.querySelector('tr.witness');
  if (witness && location.hash === '') scroller.scrollTop = witness.offsetTop - scroller.clientHeight / 2;
  document.body.setAttribute('data-ready', String(rows.length));
})();
)";

const char* outcome_class(const std::string& outcome) {
  if (outcome == "uncertain") return " o-uncertain";
  if (outcome == "definite error") return " o-definite";
  return "";
}

void write_row(std::ostream& out, const TimelineRow& row, const std::map<std::string, std::size_t>& column, std::size_t lanes,
               const ExplainPage& page) {
  const std::size_t at = column.at(row.lane);
  out << "<tr id=\"e" << row.index << "\" data-kind=\"" << traces::row_kind_name(row.kind) << "\" class=\"k-" << traces::row_kind_name(row.kind)
      << outcome_class(row.outcome) << (page.witnesses.count(row.index) ? " witness" : "") << (page.related.count(row.index) ? " related" : "")
      << "\"><td class=\"idx\">#" << row.index << "</td><td class=\"time\">" << escape(traces::relative_time(row.t, page.start_time)) << "</td>";
  for (std::size_t lane = 0; lane < lanes; ++lane) {
    if (lane != at) {
      out << "<td></td>";
      continue;
    }
    out << "<td class=\"ev\"><details><summary>";
    if (row.incarnation >= 0) out << "<b>#" << row.incarnation << "</b> ";
    out << escape(row.text) << "</summary><pre>" << escape(row.event.dump(2)) << "</pre></details></td>";
  }
  out << "</tr>\n";
}

}  // namespace

void write_explain_html(std::ostream& out, const ExplainPage& page) {
  const std::vector<std::string> lanes = lanes_of(page.rows);
  std::map<std::string, std::size_t> column;
  for (std::size_t i = 0; i < lanes.size(); ++i) column[lanes[i]] = i;

  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>" << escape(page.title) << "</title><style>" << kStyle
      << "</style></head>\n<body>\n<header><h1>" << escape(page.title) << "</h1>\n";
  for (const std::string& line : page.summary) out << "<p class=\"summary\">" << escape(line) << "</p>\n";
  if (!page.violations.empty()) {
    out << "<ul class=\"violations\">\n";
    for (const ExplainedViolation& v : page.violations) {
      out << "<li>";
      if (v.event) out << "<a href=\"#e" << *v.event << "\">" << escape(v.id) << " at #" << *v.event << "</a>";
      else out << escape(v.id);
      out << " (x" << v.count << "): " << escape(v.message) << "</li>\n";
    }
    out << "</ul>\n";
  }
  out << "<div class=\"controls\"><input type=\"text\" id=\"filter\" placeholder=\"filter events (text)\">";
  for (traces::RowKind kind : {traces::RowKind::operation, traces::RowKind::fault, traces::RowKind::lifecycle, traces::RowKind::alarm,
                               traces::RowKind::storage, traces::RowKind::phase, traces::RowKind::other})
    out << "<label><input type=\"checkbox\" checked data-kind=\"" << traces::row_kind_name(kind) << "\"> " << traces::row_kind_name(kind)
        << "</label>";
  out << "</div></header>\n<div id=\"scroller\"><table id=\"timeline\"><thead><tr><th>event</th><th>time</th>";
  for (const std::string& lane : lanes) out << "<th>" << escape(lane) << "</th>";
  out << "</tr></thead>\n<tbody>\n";
  for (const TimelineRow& row : page.rows) write_row(out, row, column, lanes.size(), page);
  out << "</tbody></table></div>\n<script>" << kScript << "</script>\n</body></html>\n";
}

}  // namespace durasim::cli
