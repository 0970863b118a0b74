// The durasim command line as CLI11 subcommands; see options.h.
#include "cli/options.h"

#include <sstream>
#include <stdexcept>

#include <CLI/CLI.hpp>

#include "cli/user_io.h"
#include "cli/workers.h"

namespace durasim::cli {

ParsedCommand parse_command_line(const std::vector<std::string>& args) {
  CLI::App app{"durasim: deterministic simulation of durable messaging capabilities"};
  app.require_subcommand(1);

  RunOptions run;
  std::vector<std::string> run_opts;
  CLI::App* run_cmd = app.add_subcommand("run", "run a simulation campaign and check every invariant");
  run_cmd->add_option("--seed", run.seed, "run one seed")->check(unsigned_integer());
  run_cmd->add_option("--seeds", run.seeds, "run seeds A..B inclusive (default 0..99)");
  run_cmd->add_option("--workload", run.workload, "workload to run (default: every workload, one after the other)");
  run_cmd->add_option("--faults", run.faults, "fault profile: none, recoverable or arbitrary")->capture_default_str();
  run_cmd->add_option("--jobs,-j", run.jobs, "run seeds on N worker processes (same results as 1)")
      ->check(CLI::Range(1u, kMaxJobs))
      ->capture_default_str();
  run_cmd->add_option("--shard", run.shard, "run only shard i of n (i/n, 0 <= i < n): a contiguous block of the seeds");
  run_cmd->add_option("--json", run.json, "write each seed's result and a summary to FILE as JSON lines (durasim merge reads them)");
  run_cmd->add_option("--junit", run.junit, "write a JUnit XML report to FILE (a test case per workload and 25 seeds)");
  run_cmd->add_option("--save-trace", run.save_trace, "write the trace to FILE ('{seed}' and '{workload}' are replaced)");
  run_cmd->add_option("--failure-dir", run.failure_dir, "save each failing seed's trace here when --save-trace does not")
      ->capture_default_str();
  run_cmd->add_flag("--verbose,-v", run.verbose, "print each seed's hash");
  run_cmd->add_flag("--check-determinism", run.check_determinism, "check RT-01 and RT-23 (a second run, a replay from the choices) on every seed, not every 16th");
  run_cmd->add_option("--start-time", run.start_time, "simulated start time in ms (default: drawn per seed: 0, [1, 999] or 1700000000000 + [0, 10^11))");
  run_cmd->add_option("--safety-ms", run.safety_ms, "length of the safety phase in simulated ms");
  run_cmd->add_option("--liveness-ms", run.liveness_ms, "liveness deadline after heal in simulated ms");
  run_cmd->add_option("--max-events", run.max_events, "stop a seed as a runaway failure after this many events (default 20000000)")
      ->check(unsigned_integer());
  run_cmd->add_option("--max-events-per-instant", run.max_events_per_instant,
                      "stop a seed as a runaway failure after this many events at one simulated time (default 100000)")
      ->check(unsigned_integer());
  run_cmd->add_option("--opt", run_opts, "workload option KEY=VALUE (VALUE is JSON if it parses; needs --workload)");
  run_cmd->add_option("--variant", run.variants, "switch on a research variant (repeatable; durasim mutants --list names them)");

  MergeOptions merge;
  CLI::App* merge_cmd = app.add_subcommand("merge", "combine the --json results of a sharded campaign into the totals of one run");
  merge_cmd->add_option("FILE", merge.files, "result files of durasim run --shard i/n --json FILE, one per shard")->required();
  merge_cmd->add_option("--json", merge.json, "write the merged results to FILE as JSON lines");
  merge_cmd->add_option("--junit", merge.junit, "write a JUnit XML report of the merged results to FILE");
  merge_cmd->add_flag("--verbose,-v", merge.verbose, "print each seed's hash");

  ReplayOptions replay;
  CLI::App* replay_cmd = app.add_subcommand("replay", "re-run a saved trace and confirm its hash");
  replay_cmd->add_option("FILE", replay.path, "trace file")->required();
  replay_cmd->add_flag("--verbose,-v", replay.verbose, "say more about a divergence");

  ShrinkOptions shrink;
  std::string shrink_out;
  uint64_t shrink_max_runs = 0;
  std::string shrink_invariant;
  CLI::App* shrink_cmd = app.add_subcommand("shrink", "cut a failing trace down while the same invariant still fails");
  shrink_cmd->add_option("FILE", shrink.path, "failing trace file")->required();
  shrink_cmd->add_option("--budget", shrink.limits.budget_seconds, "wall-time budget in seconds")->capture_default_str();
  shrink_cmd->add_option("-o,--out", shrink_out, "where to write the shrunk trace (default: FILE with .shrunk before its extension, x.jsonl -> x.shrunk.jsonl)");
  shrink_cmd->add_option("--max-runs", shrink_max_runs, "stop after this many candidate runs (a bound independent of wall time)")
      ->check(unsigned_integer());
  shrink_cmd->add_option("--invariant", shrink_invariant, "keep this invariant violated (default: any the trace violates)");
  shrink_cmd->add_flag("--verbose,-v", shrink.verbose, "print every smaller candidate kept");

  PropertiesOptions properties;
  CLI::App* properties_cmd = app.add_subcommand("properties", "list the invariants: ID, check kinds, title, statement");
  properties_cmd->add_option("--family", properties.families, "only these families (SCH, ALM, ...; repeat or comma-separate)")
      ->delimiter(',');
  properties_cmd->add_option("--id", properties.id, "only this invariant, e.g. SCH-02");
  properties_cmd->add_flag("--json", properties.json, "print a JSON array of {id, family, title, kinds, statement}");

  BenchOptions bench;
  bool bench_quick = false, bench_no_rss = false;
  std::string bench_json;
  CLI::App* bench_cmd = app.add_subcommand("bench", "measure speed and memory, each figure beside its target (docs/performance.md)");
  bench_cmd->add_option("--scale", bench.scale, "multiply every seed and batch count (default 1)");
  bench_cmd->add_flag("--quick", bench_quick, "--scale 0.1: a rough run in well under a minute");
  bench_cmd->add_option("--json", bench_json, "also write the figures to FILE as JSON");
  bench_cmd->add_option("--only", bench.only, "run only the parts with these letters (e.g. g, or ad)")
      ->check([](const std::string& letters) { return letters.empty() ? std::string("names no part: give letters of a..h") : std::string(); });
  bench_cmd->add_option("--repeat", bench.repeat, "(a): the median of N rounds over the workloads (default 3)");
  bench_cmd->add_flag("--no-rss", bench_no_rss, "skip (e), which runs 11,000 runtime seeds in child processes");

  MutantsOptions mutants;
  std::string mutants_json, mutants_traces;
  CLI::App* mutants_cmd = app.add_subcommand("mutants", "switch each research variant on and report which invariants catch it");
  mutants_cmd->add_option("--variant", mutants.variants, "only this variant (repeatable)");
  mutants_cmd->add_option("--seeds", mutants.seeds, "seed budget per variant: seeds 0..N-1")->check(unsigned_integer())->capture_default_str();
  mutants_cmd->add_option("--json", mutants_json, "also write the report to FILE as JSON");
  mutants_cmd->add_option("--trace-dir", mutants_traces, "save first detections here (default: beside --json, else .)");
  mutants_cmd->add_flag("--list", mutants.list, "list the variants, the contract each breaks and the invariants expected to catch it");

  ExplainOptions explain;
  uint64_t explain_around = 0;
  std::string explain_dot, explain_html;
  CLI::App* explain_cmd = app.add_subcommand("explain", "print a trace as a timeline with its violations placed (text, DOT, HTML)");
  explain_cmd->add_option("FILE", explain.path, "trace file")->required();
  CLI::Option* around = explain_cmd->add_option("--around", explain_around, "only the N events either side of the first violation")
                            ->check(unsigned_integer());
  explain_cmd->add_option("--dot", explain_dot, "also write the region's happens-before graph to FILE (Graphviz DOT)");
  explain_cmd->add_option("--html", explain_html, "also write a self-contained HTML timeline to FILE");

  if (args.size() > 1 && !args[1].starts_with("-")) {
    std::string names;
    bool known = false;
    for (const CLI::App* command : app.get_subcommands({})) {
      known = known || command->check_name(args[1]);
      names += (names.empty() ? "" : ", ") + command->get_name();
    }
    if (!known) return UsageError{"durasim: unknown command '" + args[1] + "' (one of " + names + ")"};
  }
  std::vector<const char*> argv;
  for (const std::string& arg : args) argv.push_back(arg.c_str());
  try {
    app.parse(static_cast<int>(argv.size()), argv.data());
  } catch (const CLI::ParseError& e) {
    std::ostringstream help;
    if (e.get_exit_code() == 0) {  // --help
      app.exit(e, help, help);
      return HelpRequest{help.str()};
    }
    return UsageError{std::string("durasim: ") + e.what()};
  } catch (const std::exception& e) {  // a conversion CLI11 leaves to the standard library
    return UsageError{std::string("durasim: cannot read the command line (") + e.what() + ")"};
  }

  if (*run_cmd) {
    for (const std::string& kv : run_opts) {
      const auto eq = kv.find('=');
      if (eq == std::string::npos || eq == 0) return UsageError{"durasim run: --opt expects KEY=VALUE, got '" + kv + "'"};
      run.workload_options[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    return run;
  }
  if (*merge_cmd) return merge;
  if (*shrink_cmd) {
    if (!shrink_out.empty()) shrink.out = shrink_out;
    if (shrink_cmd->count("--max-runs") > 0) shrink.limits.max_runs = shrink_max_runs;
    if (!shrink_invariant.empty()) shrink.limits.invariant = shrink_invariant;
    return shrink;
  }
  if (*properties_cmd) return properties;
  if (*mutants_cmd) {
    if (!mutants_json.empty()) mutants.json = mutants_json;
    if (!mutants_traces.empty()) mutants.trace_dir = mutants_traces;
    return mutants;
  }
  if (*explain_cmd) {
    if (*around) explain.around = explain_around;
    if (!explain_dot.empty()) explain.dot = explain_dot;
    if (!explain_html.empty()) explain.html = explain_html;
    return explain;
  }
  if (*bench_cmd) {
    if (bench_quick) bench.scale = 0.1;
    bench.rss = !bench_no_rss;
    if (!bench_json.empty()) bench.json = bench_json;
    return bench;
  }
  return replay;
}

}  // namespace durasim::cli
