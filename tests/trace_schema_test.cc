// The documented trace format (docs/trace-format.md, traces/trace-format.schema.json) is the one the
// code writes and reads: every line of real traces of several workloads validates against the
// schema (scripts/check-trace-schema.py, python3-jsonschema from the bootstrap), a line the loader
// refuses is refused by the schema too, and the schema's version is the loader's.
#include <gtest/gtest.h>

#include <string>

#include <nlohmann/json.hpp>

#include "tests/test_files.h"
#include "traces/trace_file.h"

namespace durasim {
namespace {

using testing::ProcessResult;

class TraceSchemaTest : public ::testing::Test {
 protected:
  ProcessResult shell(const std::string& command) { return testing::run_process(command, dir_.path()); }
  ProcessResult check(const std::string& trace) {
    return shell(std::string("python3 '") + DURASIM_SOURCE_DIR + "/scripts/check-trace-schema.py' '" + trace + "'");
  }
  std::string save(const std::string& run_args, const std::string& name) {
    const std::string path = dir_.file(name);
    const ProcessResult r = shell(std::string("'") + DURASIM_BINARY + "' run " + run_args + " --save-trace '" + path + "'");
    EXPECT_LE(r.code, 1) << r.out << r.err;  // a failing seed still saves its trace
    return path;
  }
  testing::ScratchDir dir_{"durasim_trace_schema"};
};

TEST_F(TraceSchemaTest, RealTracesValidateLineByLine) {
  for (const auto& [args, name] : std::vector<std::pair<std::string, std::string>>{
           {"--workload core --seed 1", "core.trace"},
           {"--workload outbox --seed 2 --variant sink.last_writer_wins --start-time 0", "outbox.trace"},
           {"--workload events --seed 1 --faults arbitrary --opt ops=5", "events.trace"},
           {"--workload alarms --seed 4 --safety-ms 60000 --liveness-ms 1", "stuck.trace"}}) {
    const std::string path = save(args, name);
    const ProcessResult r = check(path);
    EXPECT_EQ(r.code, 0) << args << ": " << r.out << r.err;
  }
}

TEST_F(TraceSchemaTest, ALineTheLoaderRefusesIsInvalid) {
  const std::string path = save("--workload core --seed 1", "core.trace");
  std::vector<std::string> lines = testing::split_lines(testing::read_text(path));
  const std::string original = lines.back();
  lines.back() = R"({"end":{"events":1,"choices":2,"hash":"ABCDEF0123456789"}})";  // upper-case hex
  testing::write_text(path, testing::join_lines(lines));
  EXPECT_THROW(traces::load_trace(path), traces::TraceError);
  const ProcessResult r = check(path);
  EXPECT_EQ(r.code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("line " + std::to_string(lines.size())), std::string::npos) << r.out;
}

TEST_F(TraceSchemaTest, TheSchemaVersionIsTheLoaders) {
  const nlohmann::json schema = nlohmann::json::parse(testing::read_text(std::string(DURASIM_SOURCE_DIR) + "/traces/trace-format.schema.json"));
  EXPECT_EQ(schema.at("$defs").at("header").at("properties").at("version").at("const"), traces::kTraceFormatVersion);
}

}  // namespace
}  // namespace durasim
