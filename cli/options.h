// The durasim command line (CLI11) as a function: argv in, the chosen command with its options out,
// or the help text, or the one line that says what is wrong with the command line. Nothing runs and
// nothing is read or written, so the parser can be tested and fuzzed on its own (fuzz/); main.cc
// calls it and dispatches to cli/commands.h and its siblings.
#pragma once

#include <string>
#include <variant>
#include <vector>

#include "cli/bench.h"
#include "cli/commands.h"
#include "cli/explain.h"
#include "cli/merge.h"
#include "cli/mutants.h"
#include "cli/shrink.h"

namespace durasim::cli {

struct ReplayOptions {
  std::string path;
  bool verbose = false;  // say more about a divergence
};

// --help (of the command or a subcommand): print `text` on stdout, exit code 0.
struct HelpRequest {
  std::string text;
};

// The command line is not valid: print `line` (one line, no newline, starting "durasim") on stderr,
// exit code kExitBadInput.
struct UsageError {
  std::string line;
};

using ParsedCommand = std::variant<UsageError, HelpRequest, RunOptions, MergeOptions, ReplayOptions, ShrinkOptions,
                                   PropertiesOptions, BenchOptions, MutantsOptions, ExplainOptions>;

// Parses `args`, argv with the program name first. Checks what CLI11 checks (known subcommand and
// options, required arguments, unsigned integers below 2^64, --jobs in [1, kMaxJobs]) and that each
// --opt is KEY=VALUE; the commands check the rest (seed ranges, shards, workloads, ...) before they
// run anything. RunOptions::progress is left false: the caller knows whether stderr is a terminal.
// REQUIRES: !args.empty().
ParsedCommand parse_command_line(const std::vector<std::string>& args);

}  // namespace durasim::cli
