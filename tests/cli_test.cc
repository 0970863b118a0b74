// The durasim binary as a process (DURASIM_BINARY): exit codes 0 / 1 / 2 and their messages for
// `run` (a passing campaign, bad seed ranges, unknown workloads, invalid options), `replay` (a
// saved trace, a failing trace replayed to its failure, malformed / truncated / wrong-version files
// with a one-line error, a diverging trace), `shrink` (a failing trace cut down and replayed to the
// same violation; a passing or malformed trace refused)
// and `properties` (listing, filters, JSON, unknown family or ID); plus the run summary's refusal of
// invariant IDs missing from the registry.
#include <gtest/gtest.h>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "properties/registry.h"
#include "sim/tally.h"
#include "tests/test_files.h"
#include "traces/recorder.h"
#include "traces/trace_file.h"
#include "workloads/workload.h"

namespace {

namespace fs = std::filesystem;
using namespace durasim::testing;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// The invariant lines of a `durasim properties` listing ("SCH-02  [H]  Alarm window — ...").
std::vector<std::string> invariant_lines(const std::string& out) {
  static const std::regex entry(R"(^[A-Z]+-[0-9]+  \[[SHLM+]+\]  .+ — .+$)");
  std::vector<std::string> lines;
  for (const std::string& line : split_lines(out))
    if (std::regex_match(line, entry)) lines.push_back(line);
  return lines;
}

std::size_t registry_count(std::string_view family) {
  const auto& registry = durasim::properties::invariant_registry();
  return static_cast<std::size_t>(
      std::count_if(registry.begin(), registry.end(), [&](const auto& i) { return i.family == family; }));
}





using Result = ProcessResult;

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "durasim_cli_test.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }
  void TearDown() override {
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  std::string file(const std::string& name) const { return (dir_ / name).string(); }

  // Runs `durasim <args>` with stdout and stderr captured in files.
  Result durasim(const std::string& args) { return run_process(std::string("'") + DURASIM_BINARY + "' " + args, dir_); }

  // Saves the trace of one seed and returns its path.
  std::string saved_trace(uint64_t seed) {
    const std::string path = file("seed" + std::to_string(seed) + ".trace");
    const Result r = durasim("run --workload runtime --seed " + std::to_string(seed) + " --save-trace '" + path + "'");
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_TRUE(fs::exists(path));
    return path;
  }

  // A replay that must be refused as bad input, with one line on stderr.
  void expect_bad_trace(const std::string& path, const std::string& reason) {
    const Result r = durasim("replay '" + path + "'");
    EXPECT_EQ(r.code, 2) << reason << "\nstdout: " << r.out << "\nstderr: " << r.err;
    ASSERT_FALSE(r.err.empty()) << reason;
    EXPECT_EQ(r.err.back(), '\n') << reason;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << reason << ": not one line: " << r.err;
    EXPECT_EQ(r.err.rfind("durasim replay: ", 0), 0u) << reason << ": " << r.err;
    EXPECT_TRUE(contains(r.err, path)) << reason << ": the error should name the file: " << r.err;
    EXPECT_FALSE(contains(r.out, "replay ok")) << reason;
  }

  fs::path dir_;
};

TEST_F(CliTest, RunOfFiveSeedsPasses) {
  const Result r = durasim("run --workload runtime --seeds 0..4");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "passed 5/5")) << r.out;
  EXPECT_TRUE(contains(r.out, "seeds 0..4")) << r.out;
  EXPECT_TRUE(contains(r.out, "workload runtime")) << r.out;
  EXPECT_TRUE(contains(r.out, "RT-05")) << r.out;
  EXPECT_FALSE(contains(r.out, "NEVER CHECKED")) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

// Every registered workload, under every fault profile, as a user would first run it: it passes and
// exits 0 (every invariant ID it reports is in the catalogue; arbitrary faults excuse only progress).
TEST_F(CliTest, EveryWorkloadPassesUnderEveryProfile) {
  for (const durasim::workloads::WorkloadInfo& info : durasim::workloads::workload_registry()) {
    const std::string seeds = info.name == "log" ? "0..1" : "0..3";
    for (const char* profile : {"none", "recoverable", "arbitrary"}) {
      const Result r = durasim("run --workload " + info.name + " --faults " + profile + " --seeds " + seeds);
      EXPECT_EQ(r.code, 0) << info.name << " under " << profile << ":\n" << r.out << r.err;
      EXPECT_TRUE(r.err.empty()) << info.name << " under " << profile << ": " << r.err;
    }
  }
}

TEST_F(CliTest, VerboseRunIsDeterministic) {
  const Result a = durasim("run --workload runtime --seeds 10..12 --verbose");
  const std::string first = a.out;
  const Result b = durasim("run --workload runtime --seeds 10..12 --verbose");
  ASSERT_EQ(a.code, 0);
  ASSERT_EQ(b.code, 0);
  const auto hashes = [](const std::string& out) {
    std::vector<std::string> lines;
    for (const std::string& line : split_lines(out))
      if (line.rfind("seed ", 0) == 0) lines.push_back(line);
    return lines;
  };
  EXPECT_EQ(hashes(first).size(), 3u) << first;
  EXPECT_EQ(hashes(first), hashes(b.out));
}

TEST_F(CliTest, CheckDeterminismPasses) {
  const Result r = durasim("run --workload runtime --seeds 0..2 --check-determinism");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "RT-01")) << r.out;
  EXPECT_TRUE(contains(r.out, "passed 3/3")) << r.out;
}

// Times so large that a phase would overflow simulated time are refused, not run.
TEST_F(CliTest, OutOfRangeTimesAreBadInput) {
  for (const char* args : {"--start-time 9223372036854775807", "--safety-ms 9223372036854775807", "--liveness-ms 9223372036854775000"}) {
    const Result r = durasim(std::string("run --seed 0 ") + args);
    EXPECT_EQ(r.code, 2) << args << ": " << r.out << r.err;
    EXPECT_TRUE(contains(r.err, "must be in [0, ")) << args << ": " << r.err;
  }
}

TEST_F(CliTest, EmptySeedRangeIsBadInput) {
  const Result r = durasim("run --seeds 5..1");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "5..1")) << r.err;
  EXPECT_FALSE(contains(r.out, "passed")) << r.out;
}

TEST_F(CliTest, MalformedSeedRangeIsBadInput) {
  EXPECT_EQ(durasim("run --seeds 3").code, 2);
  EXPECT_EQ(durasim("run --seeds a..b").code, 2);
  EXPECT_EQ(durasim("run --seed 1 --seeds 0..2").code, 2);
}

TEST_F(CliTest, UnknownCommandIsBadInput) {
  const Result r = durasim("frobnicate --seeds 0..1");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "unknown command 'frobnicate' (one of run, ")) << r.err;
}

TEST_F(CliTest, UnknownWorkloadIsBadInput) {
  const Result r = durasim("run --workload nope");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "nope")) << r.err;
}

TEST_F(CliTest, InvalidWorkloadOptionIsBadInput) {
  Result r = durasim("run --workload runtime --opt workers=0");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "workers")) << r.err;
  r = durasim("run --workload runtime --opt workers=many");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  r = durasim("run --workload runtime --opt novalue");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
}

TEST_F(CliTest, SeveralSeedsNeedASeedPlaceholderInTheTraceName) {
  const Result r = durasim("run --seeds 0..1 --save-trace '" + file("t.trace") + "'");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "{seed}")) << r.err;
  EXPECT_FALSE(fs::exists(file("t.trace")));
}

TEST_F(CliTest, ReplayOfASavedTraceIsOk) {
  const std::string path = saved_trace(7);
  const Result r = durasim("replay '" + path + "'");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "replay ok")) << r.out;
  EXPECT_TRUE(contains(r.out, "seed 7")) << r.out;
  EXPECT_TRUE(contains(r.out, "invariants violated, recorded: none")) << r.out;
  EXPECT_TRUE(contains(r.out, "invariants violated, replayed: none (as recorded)")) << r.out;
  EXPECT_TRUE(r.err.empty()) << r.err;
}

// A failure trace replays to its failure: the replay prints the violations beside the recorded ones
// and exits 1, as `run` did. (A liveness deadline of 1 ms leaves the alarms of seed 0 pending.)
TEST_F(CliTest, ReplayOfAFailingTracePrintsItsViolationsAndExitsOne) {
  const std::string path = file("failing.trace");
  const Result run = durasim("run --workload alarms --seed 0 --safety-ms 60000 --liveness-ms 1 --save-trace '" + path + "'");
  ASSERT_EQ(run.code, 1) << run.out << run.err;
  ASSERT_TRUE(contains(run.out, "FAILED seed 0: ALM-14 violated")) << run.out;
  EXPECT_TRUE(contains(run.out, "reproduce: durasim run --workload alarms --faults recoverable --safety-ms 60000 --liveness-ms 1 "
                                "--seed 0 --save-trace seed-0.trace"))
      << "the reproduce command carries every non-default setting: " << run.out;
  const Result r = durasim("replay '" + path + "'");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "replay ok")) << "the replay itself matches: " << r.out;
  EXPECT_TRUE(contains(r.out, "invariants violated, recorded: ALM-14 ")) << r.out;
  EXPECT_TRUE(contains(r.out, "(as recorded)")) << r.out;
  EXPECT_TRUE(contains(r.out, "FAILED ALM-14 violated")) << r.out;
}

// A variant is part of what reproduces a failure: the reproduce command names it.
TEST_F(CliTest, ReproduceCommandNamesTheVariants) {
  const Result run = durasim("run --workload outbox --variant sink.last_writer_wins --seeds 0..9 --failure-dir '" + file("failures") + "'");
  ASSERT_EQ(run.code, 1) << "the naive sink regresses in some of seeds 0..9: " << run.out << run.err;
  EXPECT_TRUE(contains(run.out, "reproduce: durasim run --workload outbox --faults recoverable --variant sink.last_writer_wins --seed ")) << run.out;
}

TEST_F(CliTest, ReplayOfSavedTracesWithSeedPlaceholder) {
  const Result run = durasim("run --workload runtime --seeds 20..22 --save-trace '" + file("s{seed}.trace") + "'");
  ASSERT_EQ(run.code, 0) << run.out << run.err;
  for (int seed = 20; seed <= 22; ++seed) {
    std::string name = "s";  // built step by step: GCC 12 warns (-Wrestrict) on "s" + to_string(...)
    name += std::to_string(seed);
    name += ".trace";
    const Result r = durasim("replay '" + file(name) + "'");
    EXPECT_EQ(r.code, 0) << r.out << r.err;
    EXPECT_TRUE(contains(r.out, "replay ok")) << r.out;
  }
}

TEST_F(CliTest, ReplayOfGarbageIsBadInput) {
  const std::string path = file("garbage.trace");
  write_text(path, "this is not a trace\n\x01\x02\x03 at all\n");
  expect_bad_trace(path, "garbage");
}

TEST_F(CliTest, ReplayOfAnEmptyFileIsBadInput) {
  const std::string path = file("empty.trace");
  write_text(path, "");
  expect_bad_trace(path, "empty file");
}

TEST_F(CliTest, ReplayOfAMissingFileIsBadInput) { expect_bad_trace(file("missing.trace"), "missing file"); }

TEST_F(CliTest, ReplayOfATruncatedTraceIsBadInput) {
  std::vector<std::string> lines = split_lines(read_text(saved_trace(8)));
  ASSERT_GT(lines.size(), 4u);
  lines.pop_back();  // the end record
  const std::string path = file("truncated.trace");
  write_text(path, join_lines(lines));
  expect_bad_trace(path, "truncated (no end record)");

  const std::string half = file("half.trace");
  const std::string whole = join_lines(lines);
  write_text(half, whole.substr(0, whole.size() / 2));
  expect_bad_trace(half, "cut in the middle of a line");
}

TEST_F(CliTest, ReplayOfAWrongVersionIsBadInput) {
  std::vector<std::string> lines = split_lines(read_text(saved_trace(9)));
  auto header = nlohmann::json::parse(lines.at(0));
  header["version"] = 1;  // the FNV-1a hashes of older builds
  lines[0] = header.dump();
  const std::string path = file("v1.trace");
  write_text(path, join_lines(lines));
  expect_bad_trace(path, "wrong version");
  const Result r = durasim("replay '" + path + "'");
  EXPECT_TRUE(contains(r.err, "unsupported trace format version 1")) << r.err;
}

TEST_F(CliTest, ReplayOfATamperedChoiceLogDiverges) {
  std::vector<std::string> lines = split_lines(read_text(saved_trace(10)));
  const auto streams = nlohmann::json::parse(lines.at(1)).at("streams");
  const auto named = std::find(streams.begin(), streams.end(), "workload.runtime.client.0");
  ASSERT_NE(named, streams.end()) << lines.at(1);
  const auto workload_stream = static_cast<uint64_t>(named - streams.begin());
  auto record = nlohmann::json::parse(lines.at(2));
  ASSERT_TRUE(record.contains("choices"));
  // Change the first choice of the workload's stream to another value within its bound.
  bool changed = false;
  for (auto& choice : record["choices"]) {
    const uint64_t bound = choice[1];
    if (choice[0] == workload_stream && bound > 1) {
      choice[2] = (choice[2].get<uint64_t>() + 1) % bound;
      changed = true;
      break;
    }
  }
  ASSERT_TRUE(changed);
  lines[2] = record.dump();
  const std::string path = file("tampered.trace");
  write_text(path, join_lines(lines));
  const Result r = durasim("replay '" + path + "'");
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "DIVERGED")) << r.out;
  EXPECT_TRUE(contains(r.out, "event #")) << r.out;
}

// A trace recorded before the checks changed: every event of the run replays, only the closing
// verdict (run.end's counts) differs. Replay says so and judges the run again.
TEST_F(CliTest, ReplayOfATraceWhoseChecksChangedJudgesTheRunAgain) {
  durasim::traces::TraceFile trace = durasim::traces::load_trace(saved_trace(5));
  nlohmann::json verdict = nlohmann::json::parse(trace.events.back());
  ASSERT_EQ(verdict.at("ev"), "run.end");
  verdict["invariants"]["RT-02"][0] = 1;  // as if fewer checks had run
  trace.events.back() = durasim::traces::canonical_line(verdict);
  uint64_t hash = durasim::traces::kTraceHashStart;
  for (const std::string& line : trace.events) hash = durasim::traces::fold_event(hash, nlohmann::json::parse(line));
  std::erase_if(trace.checkpoints, [&](const auto& c) { return c.events == trace.events.size(); });
  trace.hash = hash;
  const std::string path = file("older-checks.trace");
  durasim::traces::write_trace(path, trace);
  const Result r = durasim("replay '" + path + "'");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, "replay ok up to its verdict")) << r.out;
  EXPECT_TRUE(contains(r.out, "invariants violated, replayed: none (as recorded)")) << r.out;
}

// `durasim shrink`: a failing outbox trace (the naive sink) is cut down, written beside the input
// with ".shrunk" before the extension, and `durasim replay` reproduces the violation it started from.
TEST_F(CliTest, ShrinkWritesASmallerTraceThatReplaysToTheSameViolation) {
  static const std::regex failed(R"(FAILED seed [0-9]+: ([A-Z]+-[0-9]+) violated)");
  std::string path, invariant;
  for (int seed = 0; seed < 20 && invariant.empty(); ++seed) {
    const std::string number = std::to_string(seed);
    std::string name = "outbox";  // built step by step: GCC 12 warns (-Wrestrict) on "lit" + to_string(...)
    name += number;
    name += ".trace";
    path = file(name);
    std::string args = "run --workload outbox --variant sink.last_writer_wins --seed ";
    args += number;
    const Result run = durasim(args + " --save-trace '" + path + "'");
    std::smatch match;
    if (run.code == 1 && std::regex_search(run.out, match, failed)) invariant = match[1];
  }
  ASSERT_FALSE(invariant.empty()) << "no seed in 0..19 fails with the naive sink";
  const Result shrunk = durasim("shrink '" + path + "' --max-runs 20");
  ASSERT_EQ(shrunk.code, 0) << shrunk.out << shrunk.err;
  for (const char* part : {"before: ", "after:  ", " operations, ", " choices, ", " events", "candidate runs", "(stopped: --max-runs)"})
    EXPECT_TRUE(contains(shrunk.out, part)) << part << " missing: " << shrunk.out;
  EXPECT_TRUE(contains(shrunk.out, "kept failing: " + invariant)) << shrunk.out;
  const std::string out_path = path.substr(0, path.size() - std::string(".trace").size()) + ".shrunk.trace";
  ASSERT_TRUE(fs::exists(out_path)) << shrunk.out;
  EXPECT_LT(fs::file_size(out_path), fs::file_size(path));

  const Result replayed = durasim("replay '" + out_path + "'");
  EXPECT_EQ(replayed.code, 1) << replayed.out << replayed.err;
  EXPECT_TRUE(contains(replayed.out, "replay ok")) << replayed.out;
  EXPECT_TRUE(contains(replayed.out, "(as recorded)")) << replayed.out;
  EXPECT_TRUE(contains(replayed.out, "FAILED " + invariant + " violated")) << replayed.out;

  const Result named = durasim("shrink '" + path + "' --max-runs 3 -o '" + file("named.trace") + "'");
  EXPECT_EQ(named.code, 0) << named.out << named.err;
  EXPECT_TRUE(fs::exists(file("named.trace")));

  // --invariant keeps one named invariant; one the trace does not violate is refused.
  const Result kept = durasim("shrink '" + path + "' --max-runs 3 --invariant " + invariant + " -o '" + file("kept.trace") + "'");
  EXPECT_EQ(kept.code, 0) << kept.out << kept.err;
  EXPECT_TRUE(contains(kept.out, "kept failing: " + invariant + " violated")) << kept.out;
  const Result other = durasim("shrink '" + path + "' --max-runs 3 --invariant LOG-01 -o '" + file("other.trace") + "'");
  EXPECT_EQ(other.code, 2) << other.out << other.err;
  EXPECT_TRUE(contains(other.err, "does not violate LOG-01")) << other.err;
}

TEST_F(CliTest, ShrinkOfAPassingTraceIsBadInput) {
  const std::string path = saved_trace(7);
  const Result r = durasim("shrink '" + path + "' --max-runs 5");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "nothing to shrink")) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
}

TEST_F(CliTest, ShrinkOfAMalformedTraceIsBadInput) {
  const std::string path = file("garbage.trace");
  write_text(path, "this is not a trace\n");
  const Result r = durasim("shrink '" + path + "'");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_EQ(r.err.rfind("durasim shrink: ", 0), 0u) << r.err;
  EXPECT_TRUE(contains(r.err, path)) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  EXPECT_EQ(durasim("shrink '" + file("missing.trace") + "'").code, 2);
  EXPECT_EQ(durasim("shrink '" + path + "' --budget 0").code, 2);
}

TEST_F(CliTest, ShrinkHelpNamesTheDefaultOutput) {
  const Result r = durasim("shrink --help");
  EXPECT_EQ(r.code, 0) << r.out << r.err;
  EXPECT_TRUE(contains(r.out, ".shrunk")) << r.out;
  EXPECT_TRUE(contains(r.out, "--budget")) << r.out;
}

TEST_F(CliTest, PropertiesListsEveryInvariantByFamily) {
  const Result r = durasim("properties");
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty()) << r.err;
  const auto& registry = durasim::properties::invariant_registry();
  const std::vector<std::string> lines = invariant_lines(r.out);
  ASSERT_EQ(lines.size(), registry.size()) << r.out;
  for (std::size_t k = 0; k < lines.size(); ++k)
    EXPECT_EQ(lines[k].rfind(std::string(registry[k].id) + "  [", 0), 0u) << lines[k];
  EXPECT_TRUE(contains(r.out, "\nSCH-02  [H]  Alarm window — ")) << r.out;
  for (const auto& family : durasim::properties::invariant_families()) {
    const std::string header = std::string(family.id) + " — " + std::string(family.name) + ": " +
                               std::to_string(registry_count(family.id)) + " invariants\n";
    EXPECT_TRUE(contains(r.out, header)) << header;
  }
  std::string footer = "\n";  // built step by step: GCC 12 warns (-Wrestrict) on "\n" + to_string(...)
  footer += std::to_string(registry.size());
  footer += " invariants in " + std::to_string(durasim::properties::invariant_families().size()) + " families\n";
  EXPECT_TRUE(contains(r.out, footer)) << r.out;
}

TEST_F(CliTest, PropertiesFamilyFilter) {
  const Result r = durasim("properties --family SCH,rte --family RT");
  EXPECT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> lines = invariant_lines(r.out);
  EXPECT_EQ(lines.size(), registry_count("SCH") + registry_count("RTE") + registry_count("RT")) << r.out;
  for (const std::string& line : lines)
    EXPECT_TRUE(line.rfind("SCH-", 0) == 0 || line.rfind("RTE-", 0) == 0 || line.rfind("RT-", 0) == 0) << line;
  EXPECT_TRUE(contains(r.out, "RTE — routing and load: 11 invariants")) << r.out;
  EXPECT_FALSE(contains(r.out, "EVT-")) << r.out;
  EXPECT_TRUE(contains(r.out, "invariants in 3 families")) << r.out;
}

TEST_F(CliTest, PropertiesOneId) {
  const Result r = durasim("properties --id SCH-02");
  EXPECT_EQ(r.code, 0) << r.err;
  const std::vector<std::string> lines = split_lines(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  EXPECT_EQ(lines[0].rfind("SCH-02  [H]  Alarm window — ", 0), 0u) << r.out;
  EXPECT_EQ(lines[0], invariant_lines(r.out).at(0));
}

TEST_F(CliTest, PropertiesJsonIsCompleteAndParses) {
  const Result r = durasim("properties --json");
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json list = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(list.is_discarded()) << r.out;
  ASSERT_TRUE(list.is_array());
  const auto& registry = durasim::properties::invariant_registry();
  ASSERT_EQ(list.size(), registry.size());
  for (std::size_t k = 0; k < list.size(); ++k) {
    const nlohmann::json& entry = list[k];
    for (const char* key : {"id", "family", "title", "kinds", "statement"})
      ASSERT_TRUE(entry.contains(key) && entry[key].is_string() && !entry[key].get<std::string>().empty()) << entry.dump();
    EXPECT_EQ(entry["id"], std::string(registry[k].id));
    EXPECT_EQ(entry["title"], std::string(registry[k].title));
  }
  const Result rt = durasim("properties --json --family RT");
  ASSERT_EQ(rt.code, 0) << rt.err;
  EXPECT_EQ(nlohmann::json::parse(rt.out).size(), registry_count("RT"));
}

TEST_F(CliTest, PropertiesUnknownFamilyIsBadInput) {
  const Result r = durasim("properties --family SCH,NOPE");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "unknown family 'NOPE'")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

TEST_F(CliTest, PropertiesUnknownIdIsBadInput) {
  const Result r = durasim("properties --id SCH-99");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_TRUE(contains(r.err, "unknown invariant id 'SCH-99'")) << r.err;
  EXPECT_TRUE(r.out.empty()) << r.out;
}

// The run summary treats a tallied ID missing from the registry as a programming error.
TEST(RunSummaryTest, UnknownInvariantIdsAreReported) {
  durasim::sim::Tallies tallies;
  tallies.check("RT-05", true, [] { return std::string(); });
  std::ostringstream err;
  EXPECT_EQ(durasim::cli::report_unknown_invariants(tallies, err), 0u);
  EXPECT_TRUE(err.str().empty()) << err.str();
  tallies.declare("XYZ-01");
  tallies.check("RT-99", true, [] { return std::string(); });
  EXPECT_EQ(durasim::cli::report_unknown_invariants(tallies, err), 2u);
  EXPECT_TRUE(contains(err.str(), "unknown invariant id XYZ-01\n") || contains(err.str(), "unknown invariant id XYZ-01 ")) << err.str();
  EXPECT_TRUE(contains(err.str(), "unknown invariant id RT-99")) << err.str();
  EXPECT_FALSE(contains(err.str(), "RT-05")) << err.str();
}

TEST_F(CliTest, MissingSubcommandIsBadInput) {
  EXPECT_EQ(durasim("").code, 2);
  EXPECT_EQ(durasim("frobnicate").code, 2);
  EXPECT_EQ(durasim("replay").code, 2);
}

}  // namespace

// `durasim bench` measures; the test checks only that every figure is produced, with a value and a
// target where one is set, and that bad options are refused (no timed assertion).
TEST_F(CliTest, BenchWritesEveryFigureAsJson) {
  const std::string path = file("bench.json");
  const Result r = durasim("bench --scale 0.05 --no-rss --only abcdf --json '" + path + "'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  const nlohmann::json figures = nlohmann::json::parse(read_text(path));
  std::set<std::string> ids;
  for (const nlohmann::json& f : figures) {
    const std::string id = f.at("id").get<std::string>();
    ids.insert(id);
    if (id.rfind("f.", 0) == 0) EXPECT_GE(f.at("value").get<double>(), 0.0) << f.dump();  // a share, 0 if within noise
    else EXPECT_GT(f.at("value").get<double>(), 0.0) << f.dump();
  }
  for (const char* id : {"a.log.seeds_per_s", "a.log.sim_per_wall", "a.core.sim_per_wall", "b.log500.seeds_per_cpu_hour", "c.append_vs_raw",
                         "d.replay_vs_run", "f.log.checking_share"})
    EXPECT_TRUE(ids.count(id)) << id;
  EXPECT_NE(r.out.find("<= 1.5"), std::string::npos) << r.out;
  // (a) is the median of three rounds by default, each round's figure kept beside it.
  for (const nlohmann::json& f : figures) {
    if (f.at("id").get<std::string>().rfind("a.", 0) != 0) continue;
    std::vector<double> runs = f.at("runs").get<std::vector<double>>();
    ASSERT_EQ(runs.size(), 3u) << f.dump();
    std::sort(runs.begin(), runs.end());
    EXPECT_EQ(f.at("value").get<double>(), runs[1]) << f.dump();
  }
  EXPECT_NE(r.out.find("median of 3 rounds"), std::string::npos) << r.out;
}

// One round: (a)'s figure is that round's, and said to be no median.
TEST_F(CliTest, BenchRepeatOneReportsTheOneRound) {
  const std::string path = file("bench-a.json");
  const Result r = durasim("bench --scale 0.05 --only a --repeat 1 --json '" + path + "'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  for (const nlohmann::json& f : nlohmann::json::parse(read_text(path))) {
    const std::vector<double> runs = f.at("runs").get<std::vector<double>>();
    ASSERT_EQ(runs.size(), 1u) << f.dump();
    EXPECT_EQ(f.at("value").get<double>(), runs[0]) << f.dump();
  }
  EXPECT_EQ(r.out.find("median"), std::string::npos) << r.out;
}

// (g) counts the event bus's reads per poll (events.md 11): exact numbers, in the engine's default
// and under the reference's variants, so every count figure must meet its target.
TEST_F(CliTest, BenchEventBusReadCountsAreTheSpecs) {
  const std::string path = file("bench-g.json");
  const Result r = durasim("bench --scale 0.05 --only g --json '" + path + "'");
  ASSERT_EQ(r.code, 0) << r.out << r.err;
  int counts = 0;
  for (const nlohmann::json& f : nlohmann::json::parse(read_text(path))) {
    const std::string unit = f.at("unit").get<std::string>();
    if ((unit != "lists" && unit != "gets") || f.at("target").get<std::string>().empty()) continue;
    ++counts;
    EXPECT_EQ(f.at("met"), true) << f.dump();
  }
  EXPECT_EQ(counts, 16);
}

TEST_F(CliTest, BenchRefusesBadOptions) {
  EXPECT_EQ(durasim("bench --only z").code, 2);
}

TEST_F(CliTest, BenchRefusesAnInvalidRepeat) {
  for (const char* repeat : {"0", "21", "-1"}) {
    const Result r = durasim(std::string("bench --only a --repeat ") + repeat);
    EXPECT_EQ(r.code, 2) << repeat << ": " << r.out << r.err;
    EXPECT_NE(r.err.find("--repeat"), std::string::npos) << r.err;
  }
}

TEST_F(CliTest, BenchRefusesAnInvalidScale) {
  const Result r = durasim("bench --scale 0");
  EXPECT_EQ(r.code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--scale"), std::string::npos) << r.err;
}
