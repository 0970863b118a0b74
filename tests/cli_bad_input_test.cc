// Bad input to every durasim command, as a process: missing files, directories and empty files given
// to replay, explain, shrink and merge; numbers too large for 64 bits or negative; reversed and
// oversized seed ranges; unknown workloads, variants and fault profiles; malformed shards and jobs;
// result files that are not shards of one campaign; JSON nested too deep; shrink budgets too large;
// flags given values that are not booleans; an empty --only; output files that cannot be created.
// Each gets exit code 2 and one line on stderr naming the problem, and nothing runs; the early check
// of an output file leaves a file that is there as it was.
#include <gtest/gtest.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/user_io.h"
#include "tests/test_files.h"
#include "traces/trace_file.h"

namespace durasim {
namespace {

using testing::ProcessResult;
using testing::ScratchDir;

class CliBadInputTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::write_text(dir_.file("empty.trace"), "");
    testing::write_text(dir_.file("empty.json"), "");
    testing::write_text(dir_.file("notes.json"), "these are notes\n");
    std::filesystem::create_directory(dir_.file("folder"));
  }

  // `durasim <args>` must fail with exit code 2 and one line on stderr that contains `names`.
  void expect_refused(const std::string& args, const std::string& names) {
    const ProcessResult r = testing::run_process(std::string("'") + DURASIM_BINARY + "' " + args, dir_.path());
    EXPECT_EQ(r.code, 2) << args << "\nstdout: " << r.out << "\nstderr: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << args << ": not one line: " << r.err;
    EXPECT_EQ(r.err.rfind("durasim", 0), 0u) << args << ": " << r.err;
    EXPECT_NE(r.err.find(names), std::string::npos) << args << ": should name '" << names << "': " << r.err;
    EXPECT_TRUE(r.out.empty()) << args << ": " << r.out;
  }
  // The quoted path of `name` in the scratch directory, built step by step: GCC 12 warns
  // (-Wrestrict) on "lit" + a temporary string.
  std::string file(const std::string& name) const {
    std::string quoted = "'";
    quoted += dir_.file(name);
    quoted += "'";
    return quoted;
  }

  ScratchDir dir_{"durasim_cli_bad_input_test"};
};

TEST_F(CliBadInputTest, FilesThatAreMissingDirectoriesOrEmpty) {
  for (const char* command : {"replay", "explain", "shrink", "merge"}) {
    const std::string c = command;
    expect_refused(c + " " + file("missing.trace"), "missing.trace: no such file");
    expect_refused(c + " " + file("folder"), "folder: is a directory");
    expect_refused(c + " " + file(c == "merge" ? "empty.json" : "empty.trace"), ": is empty");
  }
  expect_refused("merge " + file("notes.json"), "notes.json:1: not a durasim result line");
}

TEST_F(CliBadInputTest, NumbersOutOfRange) {
  expect_refused("run --seeds 0..99999999999999999999", "99999999999999999999");
  expect_refused("run --seeds 0..18446744073709551615", "more than 10^15 seeds");
  expect_refused("run --seed 99999999999999999999", "--seed");
  expect_refused("run --seed -1", "--seed");
  expect_refused("run --max-events 99999999999999999999", "--max-events");
  expect_refused("run --max-events-per-instant -3", "--max-events-per-instant");
  expect_refused("run --start-time 99999999999999999999", "start_time");
  expect_refused("run --jobs 0", "--jobs");
  expect_refused("run --jobs 99999999999", "--jobs");
  expect_refused("mutants --seeds 99999999999999999999", "--seeds");
  expect_refused("shrink " + file("empty.trace") + " --max-runs -5", "--max-runs");
  expect_refused("explain " + file("empty.trace") + " --around 99999999999999999999", "--around");
}

TEST_F(CliBadInputTest, RangesWorkloadsVariantsAndProfiles) {
  expect_refused("run --seeds 5..3", "5..3");
  expect_refused("run --seeds 5", "A..B");
  expect_refused("run --seeds ..", "--seeds");
  expect_refused("run --workload nope", "unknown workload 'nope'");
  expect_refused("run --variant nope", "unknown variant 'nope'");
  expect_refused("run --faults sometimes", "unknown fault profile 'sometimes'");
  expect_refused("run --opt ops=3", "--opt needs --workload");
  expect_refused("run --seed 1 --save-trace t.trace", "{workload}");
  expect_refused("run --seeds 0..1 --workload core --save-trace t.trace", "{seed}");
  expect_refused("run --json " + file("folder"), "cannot be written");
  expect_refused("frobnicate", "durasim");
}

// JSON nested deeper than a trace line may hold, in a workload option or a result file, is refused
// (a million levels used to overflow the stack of the code that copies it); a shrink budget beyond
// what the deadline can hold too.
TEST_F(CliBadInputTest, JsonNestedTooDeepAndHugeBudgets) {
  const auto nested = [](int levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  expect_refused("run --workload core --opt 'ops=" + nested(traces::kMaxOptionDepth + 1) + "'",
                 "--opt ops: JSON nested deeper than " + std::to_string(traces::kMaxOptionDepth) + " levels");
  testing::write_text(dir_.file("deep.json"), "{\"type\":\"seed\",\"x\":" + nested(1'000'000) + "}\n");
  expect_refused("merge " + file("deep.json"), "deep.json:1: JSON nested deeper than");
  for (const char* budget : {"1e300", "inf"}) expect_refused("shrink " + file("notes.json") + " --budget " + budget, "--budget must be at most");
}

// A flag given a value that is not a boolean: `bench --no-rss=.2` used to escape the parser as the
// standard library's conversion error and abort (found by cli_fuzz).
TEST_F(CliBadInputTest, FlagsGivenValues) {
  expect_refused("bench --no-rss=.2", "--no-rss");
  expect_refused("bench --quick=maybe", "--quick");
  expect_refused("run --verbose=.5", "--verbose");
}

// An empty selection of the bench's parts is a mistake, not a request for every part.
TEST_F(CliBadInputTest, AnEmptySelectionOfParts) { expect_refused("bench --only ''", "--only"); }

// An output file that cannot be created is refused before anything runs, not after a campaign, a
// bench or every mutant has taken its minutes.
TEST_F(CliBadInputTest, OutputsThatCannotBeWritten) {
  for (const char* option : {"--json", "--junit"}) {
    expect_refused(std::string("run --workload core --seeds 0..1 ") + option + " " + file("folder"), "folder: cannot be written");
    expect_refused(std::string("run --workload core --seeds 0..1 ") + option + " " + file("missing/r.out"), "r.out: cannot be written");
  }
  expect_refused("bench --json " + file("folder"), "folder: cannot be written");
  expect_refused("bench --json " + file("missing/bench.json"), "bench.json: cannot be written");
  expect_refused("mutants --json " + file("folder"), "folder: cannot be written");
}

// The early check leaves a file that is there as it was: a bench or mutants run that fails after it
// does not cost the user the report of their last run.
TEST_F(CliBadInputTest, TheEarlyCheckOfAnOutputTruncatesNothing) {
  const std::string kept = dir_.file("last.json");
  testing::write_text(kept, "the last run's report\n");
  cli::require_writable_output(kept);
  EXPECT_EQ(testing::read_text(kept), "the last run's report\n");
  EXPECT_THROW(cli::require_writable_output(dir_.file("folder")), std::invalid_argument);
}

TEST_F(CliBadInputTest, Shards) {
  for (const char* shard : {"4/4", "0/0", "1/0", "-1/2", "a/b", "1", "1/2/3"}) expect_refused(std::string("run --shard ") + shard, "--shard");
}

}  // namespace
}  // namespace durasim
