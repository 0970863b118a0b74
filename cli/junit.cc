// The JUnit XML report; see junit.h.
#include "cli/junit.h"

#include <algorithm>

#include "cli/format.h"

namespace durasim::cli {
namespace {

// The length of the UTF-8 sequence that starts at text[i], or 0 when none does.
std::size_t utf8_length(std::string_view text, std::size_t i) {
  const auto byte = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
  const unsigned char lead = byte(i);
  const std::size_t n = lead < 0x80 ? 1 : (lead >> 5) == 0x6 ? 2 : (lead >> 4) == 0xE ? 3 : (lead >> 3) == 0x1E ? 4 : 0;
  if (n == 0 || i + n > text.size()) return 0;
  for (std::size_t k = 1; k < n; ++k)
    if ((byte(i + k) & 0xC0) != 0x80) return 0;
  return n;
}

std::string seconds(double s) { return format("%.3f", s); }

template <class Cases>
uint64_t failed_cases(const Cases& cases) {
  return static_cast<uint64_t>(std::count_if(cases.begin(), cases.end(), [](const auto& c) { return !c.failures.empty(); }));
}

}  // namespace

std::string xml_escape(std::string_view text) {
  std::string out;
  for (std::size_t i = 0; i < text.size();) {
    const char c = text[i];
    const std::size_t n = utf8_length(text, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";  // U+FFFD
      ++i;
      continue;
    }
    if (n > 1) {
      out.append(text.substr(i, n));
    } else if (c == '&') {
      out += "&amp;";
    } else if (c == '<') {
      out += "&lt;";
    } else if (c == '>') {
      out += "&gt;";
    } else if (c == '"') {
      out += "&quot;";
    } else if (c == '\'') {
      out += "&apos;";
    } else if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t' && c != '\r') {
      out += format("\\x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
    } else {
      out += c;
    }
    i += n;
  }
  return out;
}

JUnitReport::JUnitReport(const SeedSlice& seeds, std::string faults) : seeds_(seeds), faults_(std::move(faults)) {}

void JUnitReport::add(const SeedResult& result) {
  if (suites_.empty() || suites_.back().workload != result.workload) suites_.push_back({result.workload, {}});
  std::vector<Case>& cases = suites_.back().cases;
  const uint64_t batch = result.seed / kSeedsPerCase;
  if (cases.empty() || cases.back().batch != batch) cases.push_back({batch, 0, 0, {}});
  Case& c = cases.back();
  ++c.seeds;
  c.wall_s += result.wall_s;
  if (!result.passed) c.failures.push_back(failure_text(result));
}

void JUnitReport::write(std::ostream& out) const {
  uint64_t tests = 0, failures = 0;
  double wall = 0;
  for (const Suite& suite : suites_) {
    tests += suite.cases.size();
    failures += failed_cases(suite.cases);
    for (const Case& c : suite.cases) wall += c.wall_s;
  }
  out << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out << "<testsuites name=\"durasim run\" tests=\"" << tests << "\" failures=\"" << failures << "\" errors=\"0\" time=\""
      << seconds(wall) << "\">\n";
  for (const Suite& suite : suites_) write_suite(out, suite);
  out << "</testsuites>\n";
}

void JUnitReport::write_suite(std::ostream& out, const Suite& suite) const {
  double wall = 0;
  for (const Case& c : suite.cases) wall += c.wall_s;
  const std::string suite_name = xml_escape("durasim." + suite.workload);
  out << "  <testsuite name=\"" << suite_name << "\" tests=\"" << suite.cases.size() << "\" failures=\""
      << failed_cases(suite.cases) << "\" errors=\"0\" skipped=\"0\" time=\"" << seconds(wall) << "\">\n";
  out << "    <properties>\n";
  out << "      <property name=\"faults\" value=\"" << xml_escape(faults_) << "\"/>\n";
  out << "      <property name=\"seeds\" value=\"" << seeds_.first << ".." << seeds_.last << "\"/>\n";
  out << "      <property name=\"shard\" value=\"" << to_string(seeds_.shard) << "\"/>\n";
  out << "    </properties>\n";
  for (const Case& c : suite.cases) {
    const uint64_t from = std::max(seeds_.first, c.batch * kSeedsPerCase);
    const uint64_t to = std::min(seeds_.last, c.batch * kSeedsPerCase + (kSeedsPerCase - 1));
    std::string name = "seeds ";
    name += std::to_string(from) + ".." + std::to_string(to);
    if (!seeds_.shard.whole()) name += " (shard " + to_string(seeds_.shard) + ")";
    out << "    <testcase classname=\"" << suite_name << "\" name=\"" << xml_escape(name) << "\" time=\"" << seconds(c.wall_s) << "\"";
    if (c.failures.empty()) {
      out << "/>\n";
      continue;
    }
    std::string message = std::to_string(c.failures.size());
    message += " of " + std::to_string(c.seeds) + " seeds failed; first: " + c.failures.front().substr(0, c.failures.front().find('\n'));
    std::string body;
    for (const std::string& failure : c.failures) body += failure + "\n";
    out << ">\n      <failure type=\"invariant\" message=\"" << xml_escape(message) << "\">" << xml_escape(body) << "</failure>\n";
    out << "    </testcase>\n";
  }
  out << "  </testsuite>\n";
}

}  // namespace durasim::cli
