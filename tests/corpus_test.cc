// The regression corpus (traces/corpus/README.md): every shrunk failure trace the manifest
// (corpus.json) lists replays, event for event, to its recorded violation of the entry's invariant
// (other counts may differ: checks added since the recording judge the same events, so the run's
// closing verdict event may differ while every event before it replays).
// A trace this build cannot load (another format version) or that no longer replays (the engine or
// a workload changed what the run does) fails with its name and the command that re-records it.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli/seed_run.h"
#include "tests/test_files.h"
#include "traces/trace_file.h"

namespace durasim {
namespace {

namespace fs = std::filesystem;

const fs::path kCorpus = fs::path(DURASIM_SOURCE_DIR) / "traces" / "corpus";

struct Entry {
  std::string trace, invariant;
};

std::vector<Entry> manifest() {
  std::vector<Entry> entries;
  for (const nlohmann::json& e : nlohmann::json::parse(testing::read_text((kCorpus / "corpus.json").string())))
    entries.push_back({e.at("trace").get<std::string>(), e.at("invariant").get<std::string>()});
  return entries;
}

std::string rerecord(const Entry& entry) { return " (re-record it: scripts/record-corpus.sh " + entry.trace + ")"; }

class CorpusTrace : public ::testing::TestWithParam<Entry> {};

TEST_P(CorpusTrace, ReplaysToItsRecordedViolation) {
  const Entry& entry = GetParam();
  traces::TraceFile trace;
  try {
    trace = traces::load_trace((kCorpus / entry.trace).string());
  } catch (const traces::TraceError& e) {
    FAIL() << entry.trace << " cannot be loaded by this build: " << e.what() << rerecord(entry);
  }
  const cli::ReplayOutcome outcome = cli::replay(trace);
  ASSERT_TRUE(outcome.matched || outcome.verdict_only) << entry.trace << " no longer replays: "
                               << (outcome.divergence ? outcome.divergence->describe() : outcome.choice_divergence.value_or("?")) << rerecord(entry);
  ASSERT_TRUE(outcome.recorded.invariants.has_value()) << entry.trace << " has no recorded verdict";
  const nlohmann::json& recorded = *outcome.recorded.invariants;
  ASSERT_TRUE(recorded.contains(entry.invariant) && recorded.at(entry.invariant).at(1).get<uint64_t>() > 0)
      << entry.trace << " was not recorded violating " << entry.invariant << ": " << recorded.dump();
  const auto& replayed = outcome.run.tallies.by_id();
  ASSERT_TRUE(replayed.count(entry.invariant)) << entry.trace;
  EXPECT_GT(replayed.at(entry.invariant).violated, 0u) << entry.trace << ": the replay's checkers did not see " << entry.invariant;
}

INSTANTIATE_TEST_SUITE_P(Corpus, CorpusTrace, ::testing::ValuesIn(manifest()), [](const auto& info) {
  std::string name;
  for (char c : info.param.trace.substr(0, info.param.trace.find('.'))) {
    name += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  }
  return name;
});

TEST(Corpus, EveryTraceFileIsInTheManifest) {
  std::set<std::string> listed;
  for (const Entry& entry : manifest()) listed.insert(entry.trace);
  for (const fs::directory_entry& file : fs::directory_iterator(kCorpus)) {
    if (file.path().extension() != ".trace") continue;
    EXPECT_TRUE(listed.count(file.path().filename().string())) << file.path() << " is not in corpus.json";
  }
  for (const std::string& trace : listed) EXPECT_TRUE(fs::exists(kCorpus / trace)) << trace << " is listed but missing";
}

}  // namespace
}  // namespace durasim
