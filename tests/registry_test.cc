// The invariant registry against the spec it catalogues: parses spec/invariants-engine.md and
// spec/invariants-events-runtime.md and requires the same IDs in the same order, with the spec's
// titles, check kinds, numbers and stated totals, so the catalogue cannot drift from the spec.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include "properties/registry.h"
#include "tests/test_files.h"

namespace {

namespace fs = std::filesystem;
using durasim::properties::find_invariant;
using durasim::properties::Invariant;
using durasim::properties::invariant_families;
using durasim::properties::invariant_registry;

constexpr const char* kEngineSpec = "spec/invariants-engine.md";
constexpr const char* kEventsRuntimeSpec = "spec/invariants-events-runtime.md";
constexpr const char* kDefaultShared = "/work/shared";

// One entry as the spec writes it.
struct SpecEntry {
  std::string id, family, title, kinds;
  std::string statement;  // the text before the check clause
};

struct Spec {
  std::vector<SpecEntry> entries;
  std::map<std::string, int> stated_counts;  // the engine file's "Counts" line
  std::optional<int> stated_total;
};

// The shared folder holding spec/: $DURASIM_SHARED when it has the spec files, else /work/shared.
std::optional<fs::path> shared_root() {
  std::vector<fs::path> candidates;
  if (const char* env = std::getenv("DURASIM_SHARED"); env && *env) candidates.emplace_back(env);
  candidates.emplace_back(kDefaultShared);
  for (const fs::path& root : candidates)
    if (fs::exists(root / kEngineSpec) && fs::exists(root / kEventsRuntimeSpec)) return root;
  return std::nullopt;
}

std::string squeeze(const std::string& text) {
  std::string out;
  for (char c : text) {
    if (c == ' ' || c == '\n' || c == '\t') {
      if (!out.empty() && out.back() != ' ') out += ' ';
    } else {
      out += c;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string between(const std::string& text, const std::string& from, const std::string& to) {
  const auto start = text.find(from);
  if (start == std::string::npos) return "";
  const auto begin = start + from.size();
  const auto end = text.find(to, begin);
  return text.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
}

std::string without_parentheses(const std::string& text) {
  std::string out;
  int depth = 0;
  for (char c : text) {
    if (c == '(') ++depth;
    else if (c == ')' && depth > 0) --depth;
    else if (depth == 0) out += c;
  }
  return out;
}

// Engine file: "[S] + [H]" tokens of the "Check:" clause, in order.
std::string engine_kinds(const std::string& body) {
  const std::string clause = between(body, "Check:", "Fault:");
  static const std::regex token(R"(\[([SHL])\])");
  std::string kinds;
  for (auto it = std::sregex_iterator(clause.begin(), clause.end(), token); it != std::sregex_iterator(); ++it) {
    kinds += (kinds.empty() ? "" : "+");
    kinds += (*it)[1].str();
  }
  return kinds;
}

// Events/runtime file: "*Check:* state (...) + history (...)": per '+'-separated part outside
// parentheses, the first of state / history / liveness / model names the kind.
std::string events_kinds(const std::string& body) {
  const std::string clause = without_parentheses(between(body, "*Check:*", "*Interesting under:*"));
  static const std::regex word(R"(\b(state|history|liveness|model)\b)");
  static const std::map<std::string, std::string> letter = {
      {"state", "S"}, {"history", "H"}, {"liveness", "L"}, {"model", "M"}};
  std::string kinds;
  std::size_t start = 0;
  while (true) {
    const std::size_t plus = clause.find('+', start);
    const std::string part = clause.substr(start, plus == std::string::npos ? std::string::npos : plus - start);
    std::smatch m;
    if (std::regex_search(part, m, word)) {
      kinds += (kinds.empty() ? "" : "+");
      kinds += letter.at(m[1].str());
    }
    if (plus == std::string::npos) break;
    start = plus + 1;
  }
  return kinds;
}

// Splits a spec file into entries: a header line (matched by `header`) and its continuation lines,
// up to the next entry, section heading or rule.
void parse_entries(const std::string& text, const std::regex& header, bool engine_style, Spec& spec) {
  std::optional<SpecEntry> current;
  std::string body;
  const auto finish = [&] {
    if (!current) return;
    const std::string joined = squeeze(body);
    current->kinds = engine_style ? engine_kinds(joined) : events_kinds(joined);
    current->statement = joined.substr(0, joined.find(engine_style ? "Check:" : "*Check:*"));
    spec.entries.push_back(*current);
    current.reset();
  };
  for (const std::string& line : durasim::testing::split_lines(text)) {
    std::smatch m;
    if (std::regex_search(line, m, header)) {
      finish();
      current = SpecEntry{m[1].str() + "-" + m[2].str(), m[1].str(), m[3].str(), "", ""};
      body = m.suffix().str();
    } else if (line.rfind("## ", 0) == 0 || line.rfind("---", 0) == 0) {
      finish();
    } else if (current) {
      body += "\n" + line;
    }
  }
  finish();
}

// "SCH 14 · ALM 14 · ... — 119 in total." after "## Counts".
void parse_counts(const std::string& text, Spec& spec) {
  const auto heading = text.find("\n## Counts");
  if (heading == std::string::npos) return;
  const std::string section = text.substr(heading);
  static const std::regex count(R"(\b([A-Z]{2,4}) (\d+)\b)");
  for (auto it = std::sregex_iterator(section.begin(), section.end(), count); it != std::sregex_iterator(); ++it)
    spec.stated_counts[(*it)[1].str()] = std::stoi((*it)[2].str());
  std::smatch total;
  static const std::regex total_re(R"((\d+) in total)");
  if (std::regex_search(section, total, total_re)) spec.stated_total = std::stoi(total[1].str());
}

Spec load_spec(const fs::path& root) {
  Spec spec;
  const std::string engine = durasim::testing::read_text((root / kEngineSpec).string());
  const std::string events = durasim::testing::read_text((root / kEventsRuntimeSpec).string());
  // "* **SCH-02 Alarm window.** ..."
  parse_entries(engine, std::regex(R"(^\* \*\*([A-Z]+)-(\d+) (.+?)\.\*\*)"), true, spec);
  parse_counts(engine, spec);
  // "**EVT-01 — Idempotent emit.** ..."
  parse_entries(events, std::regex(R"(^\*\*([A-Z]+)-(\d+) — (.+?)\.\*\*)"), false, spec);
  return spec;
}

std::set<std::string> numbers_in(const std::string& text) {
  static const std::regex digits(R"(\d+)");
  std::set<std::string> numbers;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), digits); it != std::sregex_iterator(); ++it)
    numbers.insert(it->str());
  return numbers;
}

class RegistryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::optional<fs::path> root = shared_root();
    if (!root) GTEST_SKIP() << "spec files not found under $DURASIM_SHARED or " << kDefaultShared;
    spec_ = load_spec(*root);
    ASSERT_FALSE(spec_.entries.empty()) << "no entries parsed from " << root->string();
  }
  Spec spec_;
};

// The families the spec's invariant files define (the registry also holds the project's own).
bool from_spec(const Invariant& i) {
  for (const auto& f : invariant_families())
    if (f.id == i.family) return !f.projectOwn;
  return false;
}

std::size_t spec_entries_in_registry() {
  const auto& registry = invariant_registry();
  return static_cast<std::size_t>(std::count_if(registry.begin(), registry.end(), from_spec));
}

TEST_F(RegistryTest, HoldsExactlyTheSpecIdsInOrder) {
  std::vector<std::string> spec_ids, registry_ids;
  for (const SpecEntry& e : spec_.entries) spec_ids.push_back(e.id);
  for (const Invariant& i : invariant_registry())
    if (from_spec(i)) registry_ids.emplace_back(i.id);
  for (std::size_t k = 0; k < std::min(spec_ids.size(), registry_ids.size()); ++k)
    ASSERT_EQ(registry_ids[k], spec_ids[k]) << "entry #" << k + 1 << " differs";
  EXPECT_EQ(registry_ids.size(), spec_ids.size()) << "the spec has " << spec_ids.size() << " invariants";
}

TEST_F(RegistryTest, TitlesAndKindsMatchTheSpec) {
  for (const SpecEntry& e : spec_.entries) {
    const Invariant* i = find_invariant(e.id);
    ASSERT_NE(i, nullptr) << e.id << " is missing from the registry";
    EXPECT_EQ(i->title, e.title) << e.id;
    EXPECT_FALSE(e.kinds.empty()) << e.id << ": no check kind parsed from the spec";
    EXPECT_EQ(i->kinds, e.kinds) << e.id;
    EXPECT_EQ(i->family, e.family) << e.id;
  }
}

// Statements are restated in the registry's own words, but every number of the spec's statement
// (limits, delays, section and ID references) must survive.
TEST_F(RegistryTest, StatementsKeepEveryNumberOfTheSpec) {
  for (const SpecEntry& e : spec_.entries) {
    const Invariant* i = find_invariant(e.id);
    ASSERT_NE(i, nullptr) << e.id;
    const std::set<std::string> kept = numbers_in(std::string(i->statement));
    for (const std::string& n : numbers_in(e.statement))
      EXPECT_TRUE(kept.count(n)) << e.id << ": the statement lost the number " << n << " of the spec: " << e.statement;
  }
}

TEST_F(RegistryTest, StatedTotalsMatch) {
  ASSERT_FALSE(spec_.stated_counts.empty()) << "no Counts line in " << kEngineSpec;
  ASSERT_TRUE(spec_.stated_total.has_value());
  std::map<std::string, int> parsed, registered;
  for (const SpecEntry& e : spec_.entries) ++parsed[e.family];
  for (const Invariant& i : invariant_registry()) ++registered[std::string(i.family)];
  int sum = 0;
  for (const auto& [family, count] : spec_.stated_counts) {
    EXPECT_EQ(parsed[family], count) << family << ": entries in the spec vs its Counts line";
    EXPECT_EQ(registered[family], count) << family << ": registry vs the spec's Counts line";
    sum += count;
  }
  EXPECT_EQ(sum, *spec_.stated_total) << "the Counts line's families do not add up to its total";
  // The events/runtime file states no totals; its families are counted from its entries.
  for (const std::string family : {"EVT", "RT"}) {
    EXPECT_EQ(spec_.stated_counts.count(family), 0u) << family;
    EXPECT_EQ(registered[family], parsed[family]) << family;
  }
  EXPECT_EQ(spec_entries_in_registry(), spec_.entries.size());
}

// Without the spec: the registry's own shape.
TEST(RegistryShapeTest, IdsAreUniqueNumberedAndGroupedByFamily) {
  std::set<std::string_view> ids;
  std::map<std::string_view, int> last_number;
  std::vector<std::string_view> family_order;
  for (const Invariant& i : invariant_registry()) {
    EXPECT_TRUE(ids.insert(i.id).second) << "duplicate " << i.id;
    EXPECT_EQ(i.id.substr(0, i.id.find('-')), i.family) << i.id;
    EXPECT_FALSE(i.title.empty()) << i.id;
    EXPECT_FALSE(i.statement.empty()) << i.id;
    EXPECT_TRUE(std::regex_match(std::string(i.kinds), std::regex("[SHLM](\\+[SHLM])*"))) << i.id << ": " << i.kinds;
    if (family_order.empty() || family_order.back() != i.family) family_order.push_back(i.family);
    const int number = std::stoi(std::string(i.id.substr(i.id.find('-') + 1)));
    EXPECT_EQ(number, last_number[i.family] + 1) << i.id << ": IDs of a family are numbered 01, 02, ...";
    last_number[i.family] = number;
  }
  std::vector<std::string_view> families;
  for (const auto& f : invariant_families()) families.push_back(f.id);
  EXPECT_EQ(family_order, families) << "each family is one contiguous block, in invariant_families() order";
}

TEST(RegistryShapeTest, ProgressInvariantsAreTheLivenessAndQuiescentOnes) {
  std::set<std::string> progress;
  for (const Invariant& i : invariant_registry())
    if (requires_progress(i)) progress.insert(std::string(i.id));
  for (const char* id : {"SCH-01", "SCH-14", "ALM-14", "LOG-18", "LSE-15", "FAN-26", "OBX-16", "EVT-10", "RT-14", "RT-24", "CORE-01"})
    EXPECT_TRUE(progress.count(id)) << id;
  for (const char* id : {"SCH-02", "LOG-03", "RT-03", "RT-12", "CORE-02"}) EXPECT_FALSE(progress.count(id)) << id;
}

TEST(RegistryShapeTest, FindInvariant) {
  const Invariant* sch02 = find_invariant("SCH-02");
  ASSERT_NE(sch02, nullptr);
  EXPECT_EQ(sch02->title, "Alarm window");
  EXPECT_EQ(sch02->family, "SCH");
  EXPECT_EQ(find_invariant("SCH-99"), nullptr);
  EXPECT_EQ(find_invariant("sch-02"), nullptr);  // IDs are exact
  EXPECT_EQ(find_invariant(""), nullptr);
  for (const char* id : {"RT-01", "RT-26", "EVT-44", "RTE-11", "OBX-20"}) EXPECT_NE(find_invariant(id), nullptr) << id;
}

}  // namespace
