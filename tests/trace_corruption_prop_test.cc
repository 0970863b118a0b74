// Corrupted traces fed to the loader and to replay (issue: trace format): truncations, flipped
// bytes, deleted, duplicated and swapped lines, edited choices, edited headers. Each one is either
// refused with a TraceError naming its line (or std::invalid_argument for a configuration no run
// can take), or loads and replays to a verdict (matching or diverging): never another exception,
// never a crash, never a hang (a replay stops at its first divergence).
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/seed_run.h"
#include "tests/test_files.h"
#include "traces/trace_file.h"

namespace durasim {
namespace {

using testing::join_lines;
using testing::split_lines;

// The text of a real trace: a short runtime seed under faults.
const std::string& original_text() {
  static const std::string text = [] {
    workloads::RunConfig config;
    config.workload = "runtime";
    config.options = {{"ops", 8}};
    traces::TraceFile trace;
    cli::run_seed(config, 3, &trace);
    testing::ScratchDir dir("durasim_corruption");
    const std::string path = dir.file("t.trace");
    traces::write_trace(path, trace);
    return testing::read_text(path);
  }();
  return text;
}

// Loads and replays `text`; false (with the reason in `why`) when it failed in a way it must not.
bool refused_or_replayed(const std::string& text, std::string& why) {
  try {
    const traces::TraceFile trace = traces::parse_trace(text, "corrupted.trace");
    const cli::ReplayOutcome outcome = cli::replay(trace);
    (void)outcome.matched;
    return true;
  } catch (const traces::TraceError& e) {
    const std::string message = e.what();
    if (message.rfind("corrupted.trace: ", 0) != 0) why = "a TraceError that does not name the file: " + message;
    return why.empty();
  } catch (const std::invalid_argument&) {
    return true;
  } catch (const std::exception& e) {
    why = std::string("unexpected exception: ") + e.what();
    return false;
  }
}

void expect_handled(const std::string& text) {
  std::string why;
  RC_ASSERT(refused_or_replayed(text, why));
}

RC_GTEST_PROP(TraceCorruption, TruncationAtAnyByte, ()) {
  const std::string& text = original_text();
  const auto cut = *rc::gen::inRange<std::size_t>(0, text.size());
  expect_handled(text.substr(0, cut));
}

RC_GTEST_PROP(TraceCorruption, AFlippedByte, ()) {
  std::string text = original_text();
  const auto at = *rc::gen::inRange<std::size_t>(0, text.size());
  const auto mask = *rc::gen::inRange<int>(1, 256);
  text[at] = static_cast<char>(static_cast<unsigned char>(text[at]) ^ mask);
  expect_handled(text);
}

RC_GTEST_PROP(TraceCorruption, LinesDeletedDuplicatedOrSwapped, ()) {
  std::vector<std::string> lines = split_lines(original_text());
  const auto i = *rc::gen::inRange<std::size_t>(0, lines.size());
  const auto j = *rc::gen::inRange<std::size_t>(0, lines.size());
  switch (*rc::gen::inRange(0, 3)) {
    case 0: lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(i)); break;
    case 1: lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(j), lines[i]); break;
    default: std::swap(lines[i], lines[j]);
  }
  expect_handled(join_lines(lines));
}

// A choice changed to another value in its bound, or to one out of it: the loader refuses the
// latter; the replay of the former runs to a verdict.
RC_GTEST_PROP(TraceCorruption, AnEditedChoice, ()) {
  std::vector<std::string> lines = split_lines(original_text());
  std::vector<std::size_t> chunks;
  for (std::size_t i = 0; i < lines.size(); ++i)
    if (lines[i].rfind("{\"choices\":", 0) == 0) chunks.push_back(i);
  RC_PRE(!chunks.empty());
  const std::size_t line = *rc::gen::elementOf(chunks);
  nlohmann::json chunk = nlohmann::json::parse(lines[line]);
  nlohmann::json& choices = chunk.at("choices");
  RC_PRE(!choices.empty());
  nlohmann::json& choice = choices[*rc::gen::inRange<std::size_t>(0, choices.size())];
  const uint64_t bound = choice[1].get<uint64_t>();
  choice[2] = bound == 0 ? *rc::gen::arbitrary<uint64_t>() : *rc::gen::inRange<uint64_t>(0, bound + 2);
  lines[line] = chunk.dump();
  expect_handled(join_lines(lines));
}

// A header edited: another seed, workload, fault profile or start time; a negative or absurd value.
RC_GTEST_PROP(TraceCorruption, AnEditedHeader, ()) {
  std::vector<std::string> lines = split_lines(original_text());
  nlohmann::json header = nlohmann::json::parse(lines.at(0));
  nlohmann::json& config = header.at("config");
  switch (*rc::gen::inRange(0, 6)) {
    case 0: header["seed"] = *rc::gen::arbitrary<uint64_t>(); break;
    case 1: config["workload"] = *rc::gen::element<std::string>("core", "alarms", "nope", ""); break;
    case 2: config["faults"] = *rc::gen::element<std::string>("none", "arbitrary", "all"); break;
    case 3: config["start_time"] = *rc::gen::element<int64_t>(-1, 0, 999, INT64_MAX); break;
    case 4: config["options"] = {{"ops", *rc::gen::element<int64_t>(-5, 0, 1, 1'000'000'000'000)}}; break;
    default: config["safety_ms"] = *rc::gen::element<int64_t>(-1, 0, 1); break;
  }
  lines[0] = header.dump();
  expect_handled(join_lines(lines));
}

TEST(TraceCorruption, AFutureVersionIsRefusedNamingTheVersion) {
  std::vector<std::string> lines = split_lines(original_text());
  nlohmann::json header = nlohmann::json::parse(lines.at(0));
  header["version"] = traces::kTraceFormatVersion + 1;
  lines[0] = header.dump();
  try {
    traces::parse_trace(join_lines(lines), "future.trace");
    FAIL() << "a future version loaded";
  } catch (const traces::TraceError& e) {
    EXPECT_TRUE(std::regex_search(e.what(), std::regex("future.trace: line 1: unsupported trace format version " + std::to_string(traces::kTraceFormatVersion + 1)))) << e.what();
  }
}

TEST(TraceCorruption, AnEventWithAFieldNamedLikeAControlLineIsAnEvent) {
  std::vector<std::string> lines = split_lines(original_text());
  const std::size_t first_event = 2 + static_cast<std::size_t>(std::count_if(lines.begin(), lines.end(), [](const std::string& l) {
                                    return l.rfind("{\"choices\":", 0) == 0;
                                  }));
  ASSERT_NE(lines.at(first_event).find("\"ev\":"), std::string::npos);
  lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(first_event), R"({"choices":[],"ev":"x","t":0})");
  try {
    traces::parse_trace(join_lines(lines), "extra.trace");
    FAIL() << "an inserted event loaded";
  } catch (const traces::TraceError& e) {
    // Read as one more event: the next checkpoint's or the end record's event count disagrees.
    EXPECT_TRUE(std::regex_search(e.what(), std::regex("event count does not match|counts [0-9]+ events"))) << e.what();
  }
}

}  // namespace
}  // namespace durasim
