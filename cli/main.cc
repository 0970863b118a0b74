// The durasim command: parses the command line (cli/options.h) and hands the options to the command
// (cli/commands.h and its siblings). Every parse error is one line on stderr and exit code 2.
#include <unistd.h>

#include <iostream>

#include "cli/options.h"
#include "cli/user_io.h"

namespace {

// Runs `command` on the trace file `path` once it is a readable, non-empty file; otherwise says
// what it is, in one line, and returns 2.
template <class Command>
int with_input_file(const char* name, const std::string& path, Command command) {
  try {
    durasim::cli::require_input_file(path);
  } catch (const std::exception& e) {
    std::cerr << "durasim " << name << ": " << e.what() << "\n";
    return durasim::cli::kExitBadInput;
  }
  return command();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace durasim::cli;
  ParsedCommand parsed = parse_command_line(std::vector<std::string>(argv, argv + argc));
  if (const auto* help = std::get_if<HelpRequest>(&parsed)) {
    std::cout << help->text;
    return kExitOk;
  }
  if (const auto* error = std::get_if<UsageError>(&parsed)) {
    std::cerr << error->line << "\n";
    return kExitBadInput;
  }
  if (auto* run = std::get_if<RunOptions>(&parsed)) {
    run->progress = isatty(STDERR_FILENO) == 1;
    return run_command(*run, std::cout, std::cerr);
  }
  if (const auto* merge = std::get_if<MergeOptions>(&parsed)) return merge_command(*merge, std::cout, std::cerr);
  if (const auto* shrink = std::get_if<ShrinkOptions>(&parsed))
    return with_input_file("shrink", shrink->path, [&] { return shrink_command(*shrink, std::cout, std::cerr); });
  if (const auto* properties = std::get_if<PropertiesOptions>(&parsed)) return properties_command(*properties, std::cout, std::cerr);
  if (const auto* mutants = std::get_if<MutantsOptions>(&parsed)) return mutants_command(*mutants, std::cout, std::cerr);
  if (const auto* explain = std::get_if<ExplainOptions>(&parsed))
    return with_input_file("explain", explain->path, [&] { return explain_command(*explain, std::cout, std::cerr); });
  if (const auto* bench = std::get_if<BenchOptions>(&parsed)) return bench_command(*bench, std::cout, std::cerr);
  const auto& replay = std::get<ReplayOptions>(parsed);
  return with_input_file("replay", replay.path, [&] { return replay_command(replay.path, replay.verbose, std::cout, std::cerr); });
}
