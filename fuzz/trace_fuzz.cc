// libFuzzer target: a trace file's text as `durasim replay` reads it (traces/trace_file.h), then
// the checks replay makes of its configuration before it runs anything (cli/commands.cc,
// cli/seed_run.h: the config's fields and times, known variants, a workload that accepts its
// options). Nothing is run or written. A malformed trace must be refused with TraceError or
// std::invalid_argument carrying one line; anything else (a crash, another exception, a sanitizer
// report, a hang) is a bug in the loader or the checks.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <stdexcept>
#include <string>

#include "cli/seed_run.h"
#include "cli/variants.h"
#include "traces/trace_file.h"
#include "workloads/run_config.h"

namespace {

// The refusal must be the one line the command prints.
void require_one_line(const char* what) {
  const std::string message = what;
  if (message.empty() || message.find('\n') != std::string::npos) {
    std::fprintf(stderr, "refused with a message that is not one line: '%s'\n", what);
    std::abort();
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, std::size_t size) {
  using namespace durasim;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const traces::TraceFile trace = traces::parse_trace(text, "fuzz.trace");
    const workloads::RunConfig config = workloads::RunConfig::from_json(trace.config);
    for (const std::string& name : config.variants) cli::require_known_variant(name);
    cli::validate(config);
  } catch (const traces::TraceError& e) {
    require_one_line(e.what());
  } catch (const std::invalid_argument& e) {
    require_one_line(e.what());
  }
  return 0;
}
