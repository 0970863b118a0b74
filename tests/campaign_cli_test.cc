// `durasim run` as CI and clusters use it, as a process: with no --workload it runs every
// workload; --jobs 2 prints and writes the same results as --jobs 1; shards 0/4 .. 3/4 merged by
// `durasim merge` give the same summaries, totals, records and JUnit report as one run; --junit
// writes XML that Python's parser reads with the counts of the run; a failing seed's trace is saved and replays to its violation;
// the progress bar shows on a terminal only; the campaign names the fault kinds and buggify sites no
// workload fired and the invariants none checked, as its records show them.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <regex>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/buggify.h"
#include "tests/test_files.h"
#include "workloads/workload.h"

namespace durasim {
namespace {

namespace fs = std::filesystem;
using testing::ProcessResult;
using testing::ScratchDir;
using testing::read_text;
using testing::split_lines;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The output without what depends on wall time (the lines that give it, or rates over it).
std::string without_wall_time(const std::string& out) {
  std::string kept;
  for (const std::string& line : split_lines(out))
    if (!contains(line, " wall") && !contains(line, "events/s")) kept += line + "\n";
  return kept;
}

// The records of a --json file without their wall times and the way the campaign was run.
std::vector<nlohmann::json> records(const std::string& path) {
  std::vector<nlohmann::json> out;
  for (const std::string& line : split_lines(read_text(path))) {
    nlohmann::json record = nlohmann::json::parse(line);
    for (const char* key : {"wall_s", "jobs"}) record.erase(key);
    out.push_back(record);
  }
  return out;
}

const std::string kMissedKinds = "fault kinds enabled in some workload that fired in none: ";
const std::string kMissedSites = "buggify sites that fired in no workload: ";

const std::string kUncheckedInvariants = "invariants checked in no workload: ";

// The invariants some seed record lists (id -> [checked, violated]) and none checked.
std::set<std::string> unchecked_invariants(const std::string& path) {
  std::set<std::string> listed, checked;
  for (const std::string& line : split_lines(read_text(path))) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record.at("type") != "seed") continue;
    for (const auto& [id, counts] : record.at("invariants").items()) {
      listed.insert(id);
      if (counts.at(0).get<int>() != 0) checked.insert(id);
    }
  }
  std::set<std::string> unchecked;
  for (const std::string& id : listed)
    if (!checked.contains(id)) unchecked.insert(id);
  return unchecked;
}

// The names a report line starting with `prefix` lists, each without its " (...)" remark.
std::set<std::string> listed(const std::string& out, const std::string& prefix) {
  std::set<std::string> names;
  for (const std::string& line : split_lines(out)) {
    if (line.rfind(prefix, 0) != 0) continue;
    std::string rest = line.substr(prefix.size());
    if (rest == "none") return names;
    for (std::size_t at = 0; at <= rest.size();) {
      const std::size_t comma = std::min(rest.find(", ", at), rest.size());
      const std::string item = rest.substr(at, comma - at);
      names.insert(item.substr(0, item.find(" (")));
      at = comma + 2;
    }
    return names;
  }
  names.insert("(no line starting \"" + prefix + "\")");
  return names;
}

// From the seed records of a --json file, the names under `key` ("faults" or "buggify": name ->
// [enabled, opportunities or calls, firings]) that some seed enables and those some seed fires.
struct EnabledAndFired {
  std::set<std::string> enabled, fired;
};
EnabledAndFired enabled_and_fired(const std::string& path, const std::string& key) {
  EnabledAndFired out;
  for (const std::string& line : split_lines(read_text(path))) {
    const nlohmann::json record = nlohmann::json::parse(line);
    if (record.at("type") != "seed") continue;
    for (const auto& [name, counts] : record.at(key).items()) {
      if (counts.at(0).get<int>() != 0) out.enabled.insert(name);
      if (counts.at(2).get<int>() != 0) out.fired.insert(name);
    }
  }
  return out;
}

// The fault kinds some workload enabled and none fired; latencies delay rather than fire.
std::set<std::string> missed_kinds(const std::string& path) {
  const EnabledAndFired kinds = enabled_and_fired(path, "faults");
  std::set<std::string> missed;
  for (const std::string& name : kinds.enabled)
    if (!kinds.fired.contains(name) && !name.ends_with(".latency")) missed.insert(name);
  return missed;
}

// The engine's sites (but those of research variants) that no workload fired.
std::set<std::string> missed_sites(const std::string& path) {
  const EnabledAndFired sites = enabled_and_fired(path, "buggify");
  std::set<std::string> missed;
  for (std::string_view site : buggify::kSites) {
    const std::string name(site);
    const bool variantOnly = std::find(buggify::kVariantOnlySites.begin(), buggify::kVariantOnlySites.end(), site) != buggify::kVariantOnlySites.end();
    if (!variantOnly && !sites.fired.contains(name)) missed.insert(name);
  }
  return missed;
}

// Parses `xml` with Python's XML parser (independent of ours) and returns "tests failures cases
// failure-elements" of the whole report.
std::string junit_counts(const std::string& path, const fs::path& dir) {
  const std::string script =
      "import sys, xml.etree.ElementTree as ET\n"
      "root = ET.parse(sys.argv[1]).getroot()\n"
      "print(root.get('tests'), root.get('failures'), len(root.findall('./testsuite/testcase')), len(root.findall('.//failure')))\n";
  testing::write_text((dir / "count.py").string(), script);
  const ProcessResult r = testing::run_process("python3 '" + (dir / "count.py").string() + "' '" + path + "'", dir);
  return r.code == 0 ? r.out : "parse error: " + r.err;
}

class CampaignCliTest : public ::testing::Test {
 protected:
  ProcessResult durasim(const std::string& args) { return testing::run_process(std::string("'") + DURASIM_BINARY + "' " + args, dir_.path()); }
  std::string file(const std::string& name) const { return dir_.file(name); }

  ScratchDir dir_{"durasim_campaign_cli_test"};
};

// Without --workload every workload runs, and two jobs give the results of one.
TEST_F(CampaignCliTest, EveryWorkloadRunsAndTwoJobsGiveTheResultsOfOne) {
  const ProcessResult one = durasim("run --seeds 0..2 -v --json '" + file("one.json") + "'");
  const ProcessResult two = durasim("run --seeds 0..2 -v --jobs 2 --json '" + file("two.json") + "'");
  ASSERT_EQ(one.code, 0) << one.out << one.err;
  ASSERT_EQ(two.code, 0) << two.out << two.err;
  EXPECT_TRUE(one.err.empty()) << one.err;
  const auto& registry = workloads::workload_registry();
  for (const workloads::WorkloadInfo& info : registry)
    EXPECT_TRUE(contains(one.out, "durasim run: workload " + info.name + ", faults recoverable, seeds 0..2 (3 seeds)\n  passed 3/3\n")) << info.name;
  std::string total = "total: passed ";  // built step by step: GCC 12 warns (-Wrestrict) on "lit" + to_string(...)
  total += std::to_string(3 * registry.size());
  total += "/" + std::to_string(3 * registry.size()) + " seeds of " + std::to_string(registry.size()) + " workloads";
  EXPECT_EQ(split_lines(one.out).back(), total);

  // Three seeds miss some of both; the report names exactly those its records show.
  EXPECT_FALSE(missed_kinds(file("one.json")).empty());
  EXPECT_EQ(listed(one.out, kMissedKinds), missed_kinds(file("one.json")));
  EXPECT_EQ(listed(one.out, kMissedSites), missed_sites(file("one.json")));
  EXPECT_EQ(listed(one.out, kUncheckedInvariants), unchecked_invariants(file("one.json")));

  EXPECT_EQ(without_wall_time(two.out), without_wall_time(one.out));
  EXPECT_TRUE(contains(two.out, " on 2 jobs: ")) << two.out;
  EXPECT_EQ(records(file("two.json")), records(file("one.json")));
  EXPECT_EQ(records(file("one.json")).size(), 3 * registry.size() + 1);
}

// Runs cut to a millisecond leave families unchecked (and fail on liveness): the campaign names
// exactly the invariants no workload's records checked.
TEST_F(CampaignCliTest, InvariantsNoWorkloadCheckedAreNamed) {
  const ProcessResult r = durasim("run --seed 0 --faults none --safety-ms 1 --liveness-ms 1 --json '" + file("short.json") + "'");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  const std::set<std::string> unchecked = unchecked_invariants(file("short.json"));
  EXPECT_TRUE(unchecked.contains("LSE-13"));
  EXPECT_EQ(listed(r.out, kUncheckedInvariants), unchecked);
}

TEST_F(CampaignCliTest, MergedShardsGiveTheTotalsOfOneRun) {
  const ProcessResult whole = durasim("run --seeds 0..3 -v --json '" + file("whole.json") + "' --junit '" + file("whole.xml") + "'");
  ASSERT_EQ(whole.code, 0) << whole.out << whole.err;
  std::string shards;
  for (int i = 0; i < 4; ++i) {
    std::string name = "shard";
    name += std::to_string(i);
    name += ".json";
    std::string shard = std::to_string(i);
    shard += "/4";
    const ProcessResult r = durasim("run --seeds 0..3 --shard " + shard + " --json '" + file(name) + "'");
    ASSERT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "seeds 0..3, shard " + shard + " (")) << r.out;
    shards += " '" + file(name) + "'";
  }
  const ProcessResult merged = durasim("merge -v" + shards + " --json '" + file("merged.json") + "' --junit '" + file("merged.xml") + "'");
  ASSERT_EQ(merged.code, 0) << merged.out << merged.err;
  EXPECT_EQ(without_wall_time(merged.out), without_wall_time(whole.out));
  EXPECT_TRUE(contains(merged.out, "merged from 4 files")) << merged.out;
  EXPECT_EQ(records(file("merged.json")), records(file("whole.json")));
  std::string cases = std::to_string(workloads::workload_registry().size());  // a case per workload: seeds 0..3
  cases += " 0 " + std::to_string(workloads::workload_registry().size()) + " 0\n";
  EXPECT_EQ(junit_counts(file("whole.xml"), dir_.path()), cases);
  EXPECT_EQ(junit_counts(file("merged.xml"), dir_.path()), cases);
  // The merged result merges again, alone: it is a whole campaign.
  const ProcessResult again = durasim("merge '" + file("merged.json") + "'");
  EXPECT_EQ(again.code, 0) << again.err;
  EXPECT_EQ(without_wall_time(again.out), without_wall_time(durasim("merge" + shards).out));
  // A shard missing, or given twice, is refused.
  EXPECT_EQ(durasim("merge '" + file("shard0.json") + "' '" + file("shard1.json") + "' '" + file("shard2.json") + "'").code, 2);
  EXPECT_EQ(durasim("merge" + shards + " '" + file("shard3.json") + "'").code, 2);
}

TEST_F(CampaignCliTest, JUnitReportParsesWithTheRunsCounts) {
  ASSERT_EQ(durasim("run --seeds 0..29 --workload core --junit '" + file("core.xml") + "'").code, 0);
  EXPECT_EQ(junit_counts(file("core.xml"), dir_.path()), "2 0 2 0\n");  // seeds 0..24, 25..29
}

// A failing seed saves its trace (in --failure-dir unless --save-trace covers it) and prints the
// command that replays it; the JUnit failure carries the same commands.
TEST_F(CampaignCliTest, AFailingSeedSavesItsTraceAndPrintsItsReplayCommand) {
  const std::string failures = file("failures");
  const ProcessResult r = durasim("run --workload outbox --variant sink.last_writer_wins --seeds 0..9 --jobs 2 --failure-dir '" + failures +
                                  "' --junit '" + file("f.xml") + "'");
  ASSERT_EQ(r.code, 1) << "the naive sink regresses in some of seeds 0..9: " << r.out << r.err;
  static const std::regex failed(R"(FAILED seed ([0-9]+): OBX-14 violated)");
  std::smatch match;
  ASSERT_TRUE(std::regex_search(r.out, match, failed)) << r.out;
  std::string name = "outbox-seed-";
  name += match[1].str();
  name += ".trace";
  const std::string trace = (fs::path(failures) / name).string();
  EXPECT_TRUE(contains(r.out, "    replay: durasim replay " + trace + "\n")) << r.out;
  ASSERT_TRUE(fs::exists(trace));
  const ProcessResult replayed = durasim("replay '" + trace + "'");
  EXPECT_EQ(replayed.code, 1) << replayed.out << replayed.err;
  EXPECT_TRUE(contains(replayed.out, "(as recorded)")) << replayed.out;

  const std::string xml = read_text(file("f.xml"));
  EXPECT_TRUE(contains(xml, "replay: durasim replay " + trace)) << xml;
  EXPECT_TRUE(contains(xml, "reproduce: durasim run --workload outbox --faults recoverable --variant sink.last_writer_wins --seed ")) << xml;
  EXPECT_EQ(junit_counts(file("f.xml"), dir_.path()), "1 1 1 1\n");

  // With --save-trace the failing seed's trace is there, and nothing is written twice.
  const std::string others = file("others");
  const ProcessResult saved = durasim("run --workload outbox --variant sink.last_writer_wins --seed " + match[1].str() + " --failure-dir '" +
                                      others + "' --save-trace '" + file("s{workload}{seed}.trace") + "'");
  ASSERT_EQ(saved.code, 1) << saved.out << saved.err;
  EXPECT_TRUE(contains(saved.out, "replay: durasim replay " + file("soutbox" + match[1].str() + ".trace"))) << saved.out;
  EXPECT_FALSE(fs::exists(others));
}

TEST_F(CampaignCliTest, SeveralWorkloadsSaveTracesOnlyWithAWorkloadPlaceholder) {
  const ProcessResult r = durasim("run --seed 3 --save-trace '" + file("{workload}-{seed}.trace") + "'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const workloads::WorkloadInfo& info : workloads::workload_registry()) EXPECT_TRUE(fs::exists(file(info.name + "-3.trace"))) << info.name;
  const ProcessResult replayed = durasim("replay '" + file("log-3.trace") + "'");
  EXPECT_EQ(replayed.code, 0) << replayed.out << replayed.err;
}

// The bar is drawn on a terminal only: `script` gives the run one; the tests' own runs have none,
// and their stderr stays empty.
TEST_F(CampaignCliTest, ProgressBarOnATerminalOnly) {
  const ProcessResult quiet = durasim("run --workload core --seeds 0..49");
  ASSERT_EQ(quiet.code, 0) << quiet.err;
  EXPECT_TRUE(quiet.err.empty()) << quiet.err;
  if (testing::run_process("command -v script", dir_.path()).code != 0) GTEST_SKIP() << "no `script` to give the run a terminal";
  const ProcessResult tty = testing::run_process(
      std::string("script -qec \"'") + DURASIM_BINARY + "' run --workload core --seeds 0..49 >/dev/null\" /dev/null", dir_.path());
  EXPECT_EQ(tty.code, 0) << tty.out << tty.err;
  EXPECT_TRUE(contains(tty.out, "50/50 seeds")) << tty.out;
  EXPECT_TRUE(contains(tty.out, "seeds/s  ETA ")) << tty.out;
}

}  // namespace
}  // namespace durasim
