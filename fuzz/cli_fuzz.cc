// libFuzzer target: a durasim command line, one argument per line of the input (the program name
// is added), parsed as main.cc parses it (cli/options.h), then checked as each command checks its
// options before it runs anything: the campaign plan of `run` (seeds, shard, jobs, workloads, fault
// profile, variants, workload options, times, --save-trace patterns), the invariants `properties`
// selects, the variants `mutants` covers, `bench`'s scale and parts, `shrink`'s limits. Commands
// that read files (replay, explain, shrink, merge) stop at their options: trace files are
// trace_fuzz's. Nothing is run, read or written. Bad input must be refused with one line;
// anything else (a crash, an exception other than std::invalid_argument, a sanitizer report, a
// hang) is a bug.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <vector>

#include "cli/options.h"

namespace {

using namespace durasim::cli;

void require_one_line(const std::string& message) {
  if (message.empty() || message.find('\n') != std::string::npos) {
    std::fprintf(stderr, "refused with a message that is not one line: '%s'\n", message.c_str());
    std::abort();
  }
}

// The checks the chosen command makes before it runs anything.
void check(const ParsedCommand& parsed) {
  if (const auto* run = std::get_if<RunOptions>(&parsed)) plan_campaign(*run);
  if (const auto* properties = std::get_if<PropertiesOptions>(&parsed)) select_invariants(*properties);
  if (const auto* mutants = std::get_if<MutantsOptions>(&parsed)) chosen_variants(*mutants);
  if (const auto* bench = std::get_if<BenchOptions>(&parsed)) check_bench_options(*bench);
  if (const auto* shrink = std::get_if<ShrinkOptions>(&parsed)) check_shrink_limits(shrink->limits);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  std::vector<std::string> args = {"durasim"};
  const std::string text(reinterpret_cast<const char*>(data), size);
  for (std::size_t start = 0; start < text.size();) {
    const std::size_t end = std::min(text.find('\n', start), text.size());
    args.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  const ParsedCommand parsed = parse_command_line(args);
  if (const auto* error = std::get_if<UsageError>(&parsed)) {
    require_one_line(error->line);
    return 0;
  }
  try {
    check(parsed);
  } catch (const std::invalid_argument& e) {
    require_one_line(e.what());
  }
  return 0;
}
