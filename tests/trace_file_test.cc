// Trace files (traces/trace_file.h): a real run's trace survives write/load unchanged (seed, config,
// choices, events, checkpoints, hash), and the loader rejects every defect with a TraceError that
// names the line: empty, non-JSON, nested too deep, wrong format or version, truncated, edited, bad
// checkpoint or choice.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "cli/seed_run.h"
#include "tests/test_files.h"
#include "traces/trace_file.h"

namespace durasim::traces {
namespace {

namespace fs = std::filesystem;
using namespace durasim::testing;

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// A real trace of the core workload; `workers` scales it (32 workers: several checkpoints and
// more than one line of choices).
TraceFile real_trace(uint64_t seed, int64_t workers = 8) {
  workloads::RunConfig config;
  config.workload = "core";
  config.options["workers"] = workers;
  TraceFile trace;
  const cli::SeedOutcome outcome = cli::run_seed(config, seed, &trace);
  EXPECT_TRUE(outcome.passed()) << outcome.failure();
  EXPECT_EQ(trace.hash, outcome.hash);
  return trace;
}

// The text write_trace produces for `trace`.
std::string trace_text(const TraceFile& trace) {
  ScratchDir dir("durasim_trace_file_test");
  const std::string path = dir.file("t.trace");
  write_trace(path, trace);
  return read_text(path);
}

// The TraceError message for `text`; a failure if it is accepted (any other exception escapes).
std::string rejection(const std::string& text) {
  try {
    parse_trace(text, "bad.trace");
  } catch (const TraceError& e) {
    return e.what();
  }
  ADD_FAILURE() << "the loader accepted a defective trace";
  return "";
}

// Index of the first line that starts with `prefix` (0-based), or -1.
int find_line(const std::vector<std::string>& lines, const std::string& prefix, std::size_t from = 0) {
  for (std::size_t i = from; i < lines.size(); ++i)
    if (lines[i].rfind(prefix, 0) == 0) return static_cast<int>(i);
  return -1;
}

std::string line_ref(int index) { return "line " + std::to_string(index + 1) + ":"; }

class TraceFileTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    big_ = new TraceFile(real_trace(21, 32));
    big_text_ = new std::string(trace_text(*big_));
  }
  static void TearDownTestSuite() {
    delete big_;
    delete big_text_;
  }
  static const std::vector<std::string> big_lines() { return split_lines(*big_text_); }

  static TraceFile* big_;
  static std::string* big_text_;
};

TraceFile* TraceFileTest::big_ = nullptr;
std::string* TraceFileTest::big_text_ = nullptr;

void expect_same_trace(const TraceFile& loaded, const TraceFile& original) {
  EXPECT_EQ(loaded.seed, original.seed);
  EXPECT_EQ(loaded.config, original.config);
  EXPECT_EQ(loaded.choices, original.choices);
  EXPECT_EQ(loaded.events, original.events);
  EXPECT_EQ(loaded.hash, original.hash);
  ASSERT_EQ(loaded.checkpoints.size(), original.checkpoints.size());
  for (std::size_t i = 0; i < loaded.checkpoints.size(); ++i) {
    EXPECT_EQ(loaded.checkpoints[i].events, original.checkpoints[i].events);
    EXPECT_EQ(loaded.checkpoints[i].hash, original.checkpoints[i].hash);
  }
}

TEST_F(TraceFileTest, RoundTripOfARealRun) {
  ScratchDir dir("durasim_trace_file_test");
  const TraceFile original = real_trace(4);
  ASSERT_FALSE(original.events.empty());
  ASSERT_FALSE(original.choices.choices.empty());
  const std::string path = dir.file("seed4.trace");
  write_trace(path, original);
  EXPECT_FALSE(fs::exists(path + ".partial")) << "the temporary file must be renamed away";
  const TraceFile loaded = load_trace(path);
  expect_same_trace(loaded, original);
  EXPECT_EQ(loaded.config.at("options").at("workers"), 8);
  EXPECT_EQ(loaded.config.at("workload"), "core");

  // Every event knows its line, and that line holds it.
  const std::vector<std::string> lines = split_lines(read_text(path));
  ASSERT_EQ(loaded.event_line_numbers.size(), loaded.events.size());
  for (std::size_t i = 0; i < loaded.events.size(); ++i)
    ASSERT_EQ(lines.at(loaded.event_line_numbers[i] - 1), loaded.events[i]) << "event " << i;

  // Writing the loaded trace again gives the same bytes.
  const std::string again = dir.file("again.trace");
  write_trace(again, loaded);
  EXPECT_EQ(read_text(again), read_text(path));
}

TEST_F(TraceFileTest, RoundTripWithCheckpointsAndChoiceChunks) {
  ASSERT_GE(big_->checkpoints.size(), 2u) << "the big trace should span several checkpoints";
  ASSERT_GT(big_->choices.choices.size(), 4096u) << "the big trace should need several choice lines";
  const std::vector<std::string> lines = big_lines();
  EXPECT_GE(std::count_if(lines.begin(), lines.end(), [](const std::string& l) { return l.rfind("{\"choices\"", 0) == 0; }),
            2);
  const TraceFile loaded = parse_trace(*big_text_, "big.trace");
  expect_same_trace(loaded, *big_);
  for (const Checkpoint& c : loaded.checkpoints) EXPECT_EQ(c.events % kCheckpointInterval, 0u);
}

TEST_F(TraceFileTest, RejectsEmptyText) {
  const std::string message = rejection("");
  EXPECT_TRUE(contains(message, "bad.trace")) << message;
  EXPECT_TRUE(contains(message, "empty")) << message;
}

TEST_F(TraceFileTest, RejectsANonJsonLine) {
  std::vector<std::string> lines = big_lines();
  lines.insert(lines.begin() + 5, "this is not json {");
  const std::string message = rejection(join_lines(lines));
  EXPECT_TRUE(contains(message, line_ref(5))) << message;
  EXPECT_TRUE(contains(message, "not valid JSON")) << message;

  EXPECT_TRUE(contains(rejection("garbage\n"), "line 1:"));
  EXPECT_TRUE(contains(rejection("[1,2,3]\n"), "line 1:"));
}

TEST_F(TraceFileTest, RejectsAWrongFormatName) {
  std::vector<std::string> lines = big_lines();
  const auto at = lines[0].find("durasim-trace");
  ASSERT_NE(at, std::string::npos);
  lines[0].replace(at, std::string("durasim-trace").size(), "other-format");
  const std::string message = rejection(join_lines(lines));
  EXPECT_TRUE(contains(message, "line 1:")) << message;
  EXPECT_TRUE(contains(message, "not a durasim trace")) << message;
}

TEST_F(TraceFileTest, RejectsAFormatThatIsNotAString) {
  std::vector<std::string> lines = big_lines();
  auto header = nlohmann::json::parse(lines[0]);
  header["format"] = 7;
  lines[0] = header.dump();
  const std::string message = rejection(join_lines(lines));
  EXPECT_TRUE(contains(message, "line 1:")) << message;
}

TEST_F(TraceFileTest, RejectsOtherVersions) {
  std::vector<std::string> lines = big_lines();
  auto header = nlohmann::json::parse(lines[0]);
  ASSERT_EQ(header["version"], kTraceFormatVersion);
  // 1: FNV-1a hashes; 2: the hash folded the JSON lines.
  for (const int64_t version : {int64_t{1}, int64_t{2}, int64_t{3}, kTraceFormatVersion + 1}) {
    header["version"] = version;
    lines[0] = header.dump();
    const std::string message = rejection(join_lines(lines));
    EXPECT_TRUE(contains(message, "line 1:")) << message;
    EXPECT_TRUE(contains(message, "version " + std::to_string(version))) << message;
    EXPECT_TRUE(contains(message, "replay it with a build that reads it")) << message;
  }
}

TEST_F(TraceFileTest, RejectsATruncatedTrace) {
  std::vector<std::string> lines = big_lines();
  ASSERT_EQ(find_line(lines, "{\"end\""), static_cast<int>(lines.size()) - 1);
  lines.pop_back();
  const std::string message = rejection(join_lines(lines));
  EXPECT_TRUE(contains(message, "truncated")) << message;
  EXPECT_TRUE(contains(message, "line " + std::to_string(lines.size()))) << message;

  // Cut in the middle of a line, too.
  const std::string cut = big_text_->substr(0, big_text_->size() / 2);
  EXPECT_FALSE(rejection(cut).empty());
}

TEST_F(TraceFileTest, RejectsAnEditedEventBeforeACheckpoint) {
  std::vector<std::string> lines = big_lines();
  const int checkpoint = find_line(lines, "{\"checkpoint\"");
  ASSERT_GT(checkpoint, 0);
  // Edit a core.wake event before the first checkpoint, keeping the line canonical.
  int edited = -1;
  for (int i = checkpoint - 1; i > 0 && edited < 0; --i) {
    const auto at = lines[i].find("\"late\":0");
    if (at != std::string::npos) {
      lines[i].replace(at, 8, "\"late\":9");
      edited = i;
    }
  }
  ASSERT_GE(edited, 0);
  const std::string message = rejection(join_lines(lines));
  EXPECT_TRUE(contains(message, line_ref(checkpoint))) << message;
  EXPECT_TRUE(contains(message, "hash mismatch")) << message;
}

TEST_F(TraceFileTest, RejectsAnEditedEventAfterTheLastCheckpoint) {
  std::vector<std::string> lines = big_lines();
  const int end = static_cast<int>(lines.size()) - 1;
  int edited = -1;
  for (int i = end - 1; i > 0 && edited < 0; --i) {
    if (lines[i].rfind("{\"checkpoint\"", 0) == 0) break;
    const auto at = lines[i].find("\"late\":0");
    if (at != std::string::npos) {
      lines[i].replace(at, 8, "\"late\":1");
      edited = i;
    }
  }
  ASSERT_GE(edited, 0);
  const std::string message = rejection(join_lines(lines));
  EXPECT_TRUE(contains(message, line_ref(end))) << message;
  EXPECT_TRUE(contains(message, "final hash mismatch")) << message;
}

TEST_F(TraceFileTest, RejectsANonCanonicalEvent) {
  std::vector<std::string> lines = big_lines();
  const int first_event = find_line(lines, "{\"config\"", 1);  // the run.start event
  ASSERT_GT(first_event, 0);
  lines[first_event] = nlohmann::json::parse(lines[first_event]).dump(1);  // same JSON, other text
  lines[first_event].erase(std::remove(lines[first_event].begin(), lines[first_event].end(), '\n'),
                           lines[first_event].end());
  const std::string message = rejection(join_lines(lines));
  EXPECT_TRUE(contains(message, line_ref(first_event))) << message;
  EXPECT_TRUE(contains(message, "canonical")) << message;
}

TEST_F(TraceFileTest, RejectsABadCheckpoint) {
  const std::vector<std::string> original = big_lines();
  const int checkpoint = find_line(original, "{\"checkpoint\"");
  ASSERT_GT(checkpoint, 0);
  auto record = nlohmann::json::parse(original[checkpoint]);

  {  // wrong running hash
    std::vector<std::string> lines = original;
    auto bad = record;
    std::string hash = bad["checkpoint"]["hash"];
    hash[15] = hash[15] == '0' ? '1' : '0';
    bad["checkpoint"]["hash"] = hash;
    lines[checkpoint] = bad.dump();
    const std::string message = rejection(join_lines(lines));
    EXPECT_TRUE(contains(message, line_ref(checkpoint))) << message;
    EXPECT_TRUE(contains(message, "hash mismatch")) << message;
  }
  {  // wrong event count
    std::vector<std::string> lines = original;
    auto bad = record;
    bad["checkpoint"]["events"] = bad["checkpoint"]["events"].get<uint64_t>() + 1;
    lines[checkpoint] = bad.dump();
    const std::string message = rejection(join_lines(lines));
    EXPECT_TRUE(contains(message, line_ref(checkpoint))) << message;
    EXPECT_TRUE(contains(message, "event count")) << message;
  }
  {  // malformed hash
    std::vector<std::string> lines = original;
    auto bad = record;
    bad["checkpoint"]["hash"] = "XYZ";
    lines[checkpoint] = bad.dump();
    EXPECT_TRUE(contains(rejection(join_lines(lines)), line_ref(checkpoint)));
  }
}

TEST_F(TraceFileTest, RejectsAChoiceOutOfItsBound) {
  std::vector<std::string> lines = big_lines();
  const int choices = find_line(lines, "{\"choices\"");
  ASSERT_EQ(choices, 2);
  auto record = nlohmann::json::parse(lines[choices]);
  auto& first = record["choices"][0];
  first[2] = first[1];  // value == bound
  lines[choices] = record.dump();
  std::string message = rejection(join_lines(lines));
  EXPECT_TRUE(contains(message, "line 3:")) << message;
  EXPECT_TRUE(contains(message, "out of its bound")) << message;

  // A choice naming a stream that is not in the table.
  lines = big_lines();
  record = nlohmann::json::parse(lines[choices]);
  record["choices"][0][0] = 99;
  lines[choices] = record.dump();
  message = rejection(join_lines(lines));
  EXPECT_TRUE(contains(message, "line 3:")) << message;
  EXPECT_TRUE(contains(message, "unknown stream")) << message;
}

TEST_F(TraceFileTest, RejectsAChoiceCountThatDoesNotMatchTheEndRecord) {
  std::vector<std::string> lines = big_lines();
  auto record = nlohmann::json::parse(lines[2]);
  record["choices"].erase(record["choices"].size() - 1);
  lines[2] = record.dump();
  const std::string message = rejection(join_lines(lines));
  EXPECT_TRUE(contains(message, line_ref(static_cast<int>(lines.size()) - 1))) << message;
  EXPECT_TRUE(contains(message, "choices")) << message;
}

TEST_F(TraceFileTest, RejectsTextAfterTheEndRecord) {
  std::vector<std::string> lines = big_lines();
  lines.push_back(R"({"ev":"late","t":1})");
  const std::string message = rejection(join_lines(lines));
  EXPECT_TRUE(contains(message, line_ref(static_cast<int>(lines.size()) - 1))) << message;
  EXPECT_TRUE(contains(message, "after the end record")) << message;
}

// JSON nested a million levels deep (an edited or hostile file) is refused by line, not followed
// off the end of the stack by the code that copies and prints it; the header's workload options may
// nest kMaxOptionDepth levels, and a trace holding them loads.
TEST_F(TraceFileTest, RejectsJsonNestedTooDeep) {
  const auto nested = [](int levels) { return std::string(levels, '[') + std::string(levels, ']'); };
  std::vector<std::string> lines = big_lines();
  const int event = find_line(lines, "{\"ev\"");
  ASSERT_GE(event, 0);
  lines.insert(lines.begin() + event, R"({"ev":"x","t":0,"deep":)" + nested(1'000'000) + "}");
  std::string message = rejection(join_lines(lines));
  EXPECT_TRUE(contains(message, line_ref(event))) << message;
  EXPECT_TRUE(contains(message, "nested deeper than " + std::to_string(kMaxJsonDepth) + " levels")) << message;

  lines = big_lines();
  auto header = nlohmann::json::parse(lines[0]);
  header["config"]["options"]["deep"] = nlohmann::json::parse(nested(kMaxOptionDepth));
  lines[0] = canonical_line(header);
  EXPECT_EQ(parse_trace(join_lines(lines), "deep.trace").config["options"]["deep"], header["config"]["options"]["deep"]);
  header["config"]["options"]["deep"] = nlohmann::json::parse(nested(kMaxOptionDepth + 1));
  lines[0] = canonical_line(header);
  message = rejection(join_lines(lines));
  EXPECT_TRUE(contains(message, "line 1: JSON nested deeper than")) << message;
}

// The trace hash folds each event's binary encoding and the loader folds the parsed lines again, so
// two events with the same canonical line must fold alike, and events with different lines not.
TEST(EventHash, FoldsEventsWithTheSameCanonicalLineAlike) {
  const std::string invalidUtf8 = std::string("caf") + static_cast<char>(0xC3) + "x";  // a cut two-byte sequence
  const nlohmann::json event = {{"ev", "x"},          {"t", int64_t{5}},         {"neg", -3},
                                {"big", UINT64_MAX},  {"nan", std::nan("")},     {"bad", invalidUtf8},
                                {"utf", "caf\u00e9"}, {"list", {1, 2.5, nullptr, true, "a"}}, {"obj", {{"k", 1}}}};
  const nlohmann::json reloaded = nlohmann::json::parse(canonical_line(event));
  ASSERT_NE(reloaded["t"].type(), event["t"].type());  // the line reads 5 back as an unsigned integer
  ASSERT_NE(reloaded["bad"], event["bad"]);             // and the cut sequence as U+FFFD
  EXPECT_EQ(fold_event(7, event), fold_event(7, reloaded));
}

TEST(EventHash, TellsApartEventsWithDifferentLines) {
  using json = nlohmann::json;
  const std::vector<std::pair<json, json>> pairs = {
      {{{"a", 1}}, {{"a", "1"}}},           {{{"a", {1, 2}}}, {{"a", {12}}}},          {{{"a", "b"}, {"c", ""}}, {{"a", "bc"}}},
      {{{"ab", 1}}, {{"a", 1}}},             {{{"a", 1.0}}, {{"a", 1}}},                {{{"a", nullptr}}, {{"a", false}}},
      {{{"a", json::array()}}, {{"a", json::object()}}}, {{{"a", -1}}, {{"a", UINT64_MAX}}}};
  for (const auto& [one, other] : pairs) EXPECT_NE(fold_event(0, one), fold_event(0, other)) << one << " vs " << other;
  EXPECT_NE(fold_event(1, pairs[0].first), fold_event(2, pairs[0].first));  // the hash before seeds the next
}

// A trace whose events hold invalid UTF-8 keeps its hash through write and load.
TEST(EventHash, ATraceWithInvalidUtf8SurvivesWriteAndLoad) {
  Recorder recorder(/*keep_lines=*/true);
  for (int i = 0; i < 3; ++i)
    recorder.record({{"ev", "x"}, {"t", i}, {"body", std::string("\xff") + static_cast<char>(0xFE) + std::to_string(i)}});
  TraceFile trace;
  trace.events = recorder.lines();
  trace.event_hashes = recorder.line_hashes();
  trace.hash = recorder.hash();
  const TraceFile loaded = parse_trace(trace_text(trace), "utf8.trace");
  EXPECT_EQ(loaded.hash, trace.hash);
  EXPECT_EQ(loaded.event_hashes, trace.event_hashes);
}

TEST(TraceFileIo, WriteToAnUnwritablePathThrows) {
  TraceFile trace = real_trace(1);
  const std::string path = "/nonexistent-durasim-dir/sub/t.trace";
  EXPECT_THROW(write_trace(path, trace), TraceError);
  EXPECT_FALSE(fs::exists(path));
}

TEST(TraceFileIo, LoadOfAMissingFileThrows) {
  try {
    load_trace("/nonexistent-durasim-dir/missing.trace");
    FAIL() << "loaded a file that does not exist";
  } catch (const TraceError& e) {
    EXPECT_TRUE(contains(e.what(), "missing.trace")) << e.what();
  }
}

}  // namespace
}  // namespace durasim::traces
