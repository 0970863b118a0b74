// Composition of one run and one replay; see seed_run.h.
#include "cli/seed_run.h"

#include <stdexcept>

#include "properties/checkers.h"
#include "properties/registry.h"
#include "sim/world.h"
#include "traces/recorder.h"
#include "workloads/workload.h"

namespace durasim::cli {
namespace {

const workloads::WorkloadInfo& workload_info(const workloads::RunConfig& config) {
  const workloads::WorkloadInfo* info = workloads::find_workload(config.workload);
  if (!info) throw std::invalid_argument("unknown workload '" + config.workload + "'");
  return *info;
}

std::vector<properties::FamilyScope> scopes_of(const workloads::WorkloadInfo& info) {
  std::vector<properties::FamilyScope> scopes;
  for (const workloads::CheckedFamily& checked : info.families) scopes.push_back({checked.family, checked.className});
  return scopes;
}

// Runs the configured workload in a World whose events go to `sink`, with the checkers of the
// workload's families attached as observers. Fills every field of `outcome` but the seed and the
// hash; returns the choice log (and, when `forgiving` is not null, fills its simplest values and
// operation starts: forgiving mode). A run that draws more than `max_draws` choices stops there.
sim::ChoiceLog execute(const workloads::WorkloadInfo& info, const workloads::RunConfig& config, sim::RandomSource random,
                       sim::TraceSink& sink, const std::function<bool()>& keep_going, SeedOutcome& outcome, bool checks = true,
                       ForgivingRun* forgiving = nullptr, uint64_t max_draws = UINT64_MAX) {
  const sim::SimTime start_time = workloads::start_time_of(config, random);
  sim::World world(start_time, std::move(random), sink);
  world.executor().set_limits(config.limits);
  world.set_variants(config.variants);
  // Declared after the World, so destroyed before it; they see every event from the first.
  const std::vector<std::unique_ptr<properties::Checker>> checkers =
      checks ? properties::make_checkers(scopes_of(info), world.stores()) : std::vector<std::unique_ptr<properties::Checker>>{};
  for (const auto& checker : checkers) world.observe(*checker);
  const auto go = [&] { return keep_going() && !world.random().divergence() && world.random().draws() <= max_draws; };
  world.emit("run.start", {{"config", config.to_json()}});
  faults::FaultPlan plan(world, faults::parse_profile_kind(config.faults), info.hosts);
  world.emit("run.profile", {{"profile", plan.profile_json()}, {"start_time", start_time}});
  // Declared after the World and the plan, so it is destroyed before them.
  auto workload = info.make(config.options);
  try {
    outcome.phases = workloads::run_phases(world, plan, *workload, config, outcome.tallies, go);
    outcome.tallies.merge(world.self_checks());
    if (go()) {
      const faults::FaultAccounting accounting = plan.accounting();
      for (const auto& checker : checkers) checker->report(outcome.tallies, properties::RunFacts{accounting});
      world.emit("run.end", {{"drained", outcome.phases.drained}, {"invariants", tally_summary(outcome.tallies)}});
    }
  } catch (const std::exception& e) {
    outcome.error = e.what();
    world.emit("run.aborted", {{"what", e.what()}});
  }
  outcome.executor_events = world.executor().events_run();
  outcome.start_time = start_time;
  outcome.simulated_ms = world.now() - start_time;
  outcome.choices = world.random().draws();
  outcome.choice_divergence = world.random().divergence();
  outcome.faults = plan.accounting();
  outcome.buggify = plan.buggify_counts();
  outcome.liveness_required = plan.kind() != faults::ProfileKind::arbitrary;
  if (forgiving) {
    forgiving->simplest = world.random().simplest();
    forgiving->units = world.random().units();
  }
  return world.random().log();
}

// Passes every event on to a recorder and counts the injected faults.
class FaultCountingSink final : public sim::TraceSink {
 public:
  explicit FaultCountingSink(traces::Recorder& recorder) : recorder_(recorder) {}
  void record(const sim::TraceEvent& event) override {
    recorder_.record(event);
    if (event.is("fault")) ++faults_;
  }
  uint64_t faults() const { return faults_; }

 private:
  traces::Recorder& recorder_;
  uint64_t faults_ = 0;
};

// The trace of a run of `config` at `seed` that drew `choices` and was recorded by `recorder`.
void fill_trace(traces::TraceFile& trace, uint64_t seed, const workloads::RunConfig& config, sim::ChoiceLog choices,
                const traces::Recorder& recorder) {
  trace.seed = seed;
  trace.config = config.to_json();
  trace.choices = std::move(choices);
  trace.events = recorder.lines();
  trace.event_hashes = recorder.line_hashes();
  trace.event_line_numbers.clear();
  trace.checkpoints = recorder.checkpoints();
  trace.hash = recorder.hash();
}

}  // namespace

nlohmann::json tally_summary(const sim::Tallies& tallies) {
  nlohmann::json summary = nlohmann::json::object();
  for (const auto& [id, tally] : tallies.by_id()) summary[id] = {tally.checked, tally.violated};
  return summary;
}

RecordedVerdict recorded_verdict(const traces::TraceFile& trace) {
  RecordedVerdict verdict;
  for (auto line = trace.events.rbegin(); line != trace.events.rend(); ++line) {
    if (line->find("\"run.end\"") == std::string::npos && line->find("\"run.aborted\"") == std::string::npos) continue;
    const nlohmann::json event = nlohmann::json::parse(*line, nullptr, false);
    if (!event.is_object()) continue;
    const std::string ev = event.value("ev", "");
    if (ev == "run.aborted" && event.contains("what") && event.at("what").is_string()) {
      verdict.aborted = event.at("what").get<std::string>();
      break;
    }
    if (ev == "run.end") {
      if (event.contains("invariants") && event.at("invariants").is_object()) verdict.invariants = event.at("invariants");
      if (event.contains("drained") && event.at("drained").is_boolean()) verdict.drained = event.at("drained").get<bool>();
      break;
    }
  }
  return verdict;
}

namespace {
// Whether a violation of `id` fails a seed: always, unless the profile promises no progress and the
// invariant needs it (properties::requires_progress).
bool fails_seed(const std::string& id, bool liveness_required) {
  if (liveness_required) return true;
  const properties::Invariant* invariant = properties::find_invariant(id);
  return !invariant || !properties::requires_progress(*invariant);
}
}  // namespace

bool SeedOutcome::passed() const { return failure().empty(); }

std::string SeedOutcome::failure() const {
  if (error) return "run aborted: " + *error;
  for (const auto& [id, tally] : tallies.by_id())
    if (tally.violated && fails_seed(id, liveness_required))
      return id + " violated " + std::to_string(tally.violated) + "x: " + tally.examples.front();
  if (!phases.drained && liveness_required) {
    std::string pending = "work still pending at the liveness deadline:";
    for (const std::string& item : phases.pending) pending += " " + item + ";";
    return pending;
  }
  return "";
}

void validate(const workloads::RunConfig& config) {
  config.check_times();
  workload_info(config).make(config.options);
}

SeedOutcome run_seed(const workloads::RunConfig& config, uint64_t seed, traces::TraceFile* trace) {
  return run_seed(workload_info(config), config, seed, trace);
}

SeedOutcome run_seed(const workloads::WorkloadInfo& info, const workloads::RunConfig& config, uint64_t seed,
                     traces::TraceFile* trace) {
  SeedOutcome outcome;
  outcome.seed = seed;
  traces::Recorder recorder(/*keep_lines=*/trace != nullptr);
  sim::ChoiceLog log = execute(info, config, sim::RandomSource::recording(seed), recorder, [] { return true; }, outcome);
  outcome.hash = recorder.hash();
  outcome.trace_events = recorder.events();
  if (trace) fill_trace(*trace, seed, config, std::move(log), recorder);
  return outcome;
}

ForgivingRun run_forgiving(const workloads::RunConfig& config, uint64_t seed, const sim::ChoiceLog& log,
                           const std::function<bool()>& keep_going, traces::TraceFile* trace, uint64_t max_draws) {
  ForgivingRun run;
  run.outcome.seed = seed;
  traces::Recorder recorder(/*keep_lines=*/trace != nullptr);
  FaultCountingSink sink(recorder);
  sim::RandomSource random = sim::RandomSource::forgiving(log);
  run.drawn = execute(workload_info(config), config, std::move(random), sink, keep_going, run.outcome, /*checks=*/true,
                      &run, max_draws);
  run.stopped = !keep_going();
  run.cut = run.drawn.choices.size() > max_draws;
  run.fault_events = sink.faults();
  run.outcome.hash = recorder.hash();
  run.outcome.trace_events = recorder.events();
  if (trace) fill_trace(*trace, seed, config, run.drawn, recorder);
  return run;
}

std::vector<std::string> failing_invariants(const SeedOutcome& outcome) {
  std::vector<std::string> ids;
  for (const auto& [id, tally] : outcome.tallies.by_id())
    if (tally.violated && fails_seed(id, outcome.liveness_required)) ids.push_back(id);
  return ids;
}

SeedOutcome run_seed_unchecked(const workloads::RunConfig& config, uint64_t seed) {
  SeedOutcome outcome;
  outcome.seed = seed;
  traces::Recorder recorder(/*keep_lines=*/false);
  execute(workload_info(config), config, sim::RandomSource::recording(seed), recorder, [] { return true; }, outcome, /*checks=*/false);
  outcome.hash = recorder.hash();
  outcome.trace_events = recorder.events();
  return outcome;
}

ReplayOutcome replay(const traces::TraceFile& trace) {
  const workloads::RunConfig config = workloads::RunConfig::from_json(trace.config);
  validate(config);
  traces::ReplayComparer comparer(trace);
  ReplayOutcome outcome;
  outcome.run.seed = trace.seed;
  execute(workload_info(config), config, sim::RandomSource::replaying(trace.choices), comparer,
          [&] { return !comparer.diverged(); }, outcome.run);
  comparer.finish();
  outcome.run.hash = comparer.hash();
  outcome.run.trace_events = comparer.events();
  outcome.recorded = recorded_verdict(trace);
  outcome.divergence = comparer.divergence();
  outcome.choice_divergence = outcome.run.choice_divergence;
  outcome.hash = comparer.hash();
  outcome.events = comparer.events();
  outcome.matched = !outcome.divergence && !outcome.choice_divergence && outcome.hash == trace.hash;
  const auto is_verdict = [](const std::string& line) { return line.find("\"ev\":\"run.end\"") != std::string::npos; };
  outcome.verdict_only = !outcome.matched && !outcome.choice_divergence && outcome.divergence &&
                         outcome.divergence->event_index + 1 == trace.events.size() && is_verdict(outcome.divergence->expected) &&
                         is_verdict(outcome.divergence->actual);
  return outcome;
}

void check_determinism(const workloads::RunConfig& config, const traces::TraceFile& trace, SeedOutcome& outcome) {
  const SeedOutcome again = run_seed(config, outcome.seed);
  outcome.tallies.check("RT-01", again.hash == outcome.hash, [&] {
    return "seed " + std::to_string(outcome.seed) + " hashed " + traces::hash_hex(outcome.hash) + " then " +
           traces::hash_hex(again.hash);
  });
  const ReplayOutcome replayed = replay(trace);
  outcome.tallies.check("RT-23", replayed.matched, [&] {
    return "seed " + std::to_string(outcome.seed) + " replay: " +
           (replayed.divergence ? replayed.divergence->describe() : replayed.choice_divergence.value_or("final hash differs"));
  });
}

}  // namespace durasim::cli
