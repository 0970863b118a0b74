// `durasim shrink`: candidate runs in forgiving mode, the passes over configuration and choices, and
// the order that decides which candidate is smaller; see shrink.h.
#include "cli/shrink.h"

#include <algorithm>
#include <chrono>
#include <compare>
#include <functional>
#include <set>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

#include "cli/commands.h"
#include "cli/format.h"
#include "cli/seed_run.h"
#include "cli/variants.h"
#include "sim/hash.h"
#include "traces/recorder.h"
#include "workloads/run_config.h"
#include "workloads/workload.h"

namespace durasim::cli {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int64_t kMinSafetyMs = 0;
// A binary search toward the simplest value stops once the interval left is within 1/16 of the
// value (at least 1), or after this many runs on one value: precise enough, and bounded per round.
constexpr uint64_t kSearchPrecisionShift = 4;
constexpr int kMaxSearchSteps = 8;

// One choice as the shrinker edits it, with the simplest value its draw could take.
struct Entry {
  uint64_t bound = 0;
  uint64_t value = 0;
  uint64_t simplest = 0;
  bool is_simplest() const { return value == simplest; }
  uint64_t distance() const { return value > simplest ? value - simplest : simplest - value; }
  void set_distance(uint64_t d) { value = simplest > value ? simplest - d : simplest + d; }
};

// A candidate: a configuration and, per stream name, the choices the stream reads in order (the
// forgiving source reads each stream on its own, so the order across streams does not matter), and
// where in each stream an actor's operation starts (workloads/actor_stream.h), as the run that
// drew them found.
struct Candidate {
  workloads::RunConfig config;
  std::vector<std::string> names;
  std::vector<std::vector<Entry>> streams;
  std::vector<std::vector<std::size_t>> operations;
};

sim::ChoiceLog to_log(const Candidate& candidate) {
  sim::ChoiceLog log;
  log.streams = candidate.names;
  for (uint32_t s = 0; s < candidate.streams.size(); ++s)
    for (const Entry& e : candidate.streams[s]) log.choices.push_back(sim::Choice{s, e.bound, e.value});
  return log;
}

// Simplest choices at the end of a stream say nothing: a stream that has run out gives the same.
void strip(Candidate& candidate) {
  for (std::vector<Entry>& stream : candidate.streams)
    while (!stream.empty() && stream.back().is_simplest()) stream.pop_back();
}

// Identifies a candidate, so that no candidate runs twice.
uint64_t fingerprint(const Candidate& candidate) {
  uint64_t hash = sim::xxh3_64(candidate.config.to_json().dump());
  std::vector<uint64_t> words;
  for (std::size_t s = 0; s < candidate.streams.size(); ++s) {
    if (candidate.streams[s].empty()) continue;
    words.clear();
    for (const Entry& e : candidate.streams[s]) {
      words.push_back(e.bound);
      words.push_back(e.value);
    }
    hash = sim::xxh3_64(candidate.names[s], hash);
    hash = sim::xxh3_64(std::string_view(reinterpret_cast<const char*>(words.data()), words.size() * sizeof(uint64_t)), hash);
  }
  return hash;
}

// The order among failing runs: fewer choices, then fewer injected faults, then a smaller workload
// configuration (its size options, then the safety phase), then choices closer to their simplest
// values (lexicographically, in the order they were drawn). Each part is a well-order, so the
// shrinker cannot cycle; choices come first so that a candidate that draws more than the current
// one can be stopped as soon as it does.
struct Key {
  uint64_t choices = 0;
  uint64_t faults = 0;
  std::vector<int64_t> config;
  std::vector<uint64_t> distances;
  auto operator<=>(const Key&) const = default;
};

int64_t size_value(const workloads::RunConfig& config, const workloads::SizeOption& size) {
  const auto it = config.options.find(size.key);
  return it != config.options.end() && it->is_number_integer() ? it->get<int64_t>() : size.fallback;
}

std::optional<uint64_t> operations_of(const nlohmann::json& metrics) {
  for (const char* key : {"calls", "pushes", "ops"})
    if (metrics.is_object() && metrics.contains(key) && metrics.at(key).is_number_integer())
      return metrics.at(key).get<uint64_t>();
  return std::nullopt;
}

TraceSizes sizes_of(const ForgivingRun& run) {
  return {operations_of(run.outcome.phases.metrics), run.fault_events, run.drawn.choices.size(), run.outcome.trace_events};
}

std::string abort_class(const std::string& what) { return what.substr(0, what.find(':')); }

// What must keep failing: one of the invariants the original run violated, or the same kind of
// abort (the text before the first ':', e.g. "runaway"), or a run that does not drain.
struct Target {
  enum class Kind { invariants, aborted, stuck };
  Kind kind = Kind::invariants;
  std::set<std::string> ids;
  std::string aborted;

  bool matches(const SeedOutcome& outcome) const {
    switch (kind) {
      case Kind::aborted:
        return outcome.error && abort_class(*outcome.error) == aborted;
      case Kind::stuck:
        return !outcome.error && !outcome.phases.drained && outcome.liveness_required;
      case Kind::invariants:
        if (outcome.error) return false;
        for (const std::string& id : failing_invariants(outcome))
          if (ids.count(id)) return true;
        return false;
    }
    return false;
  }

  std::string describe() const {
    switch (kind) {
      case Kind::aborted:
        return "run aborted (" + aborted + ")";
      case Kind::stuck:
        return "work still pending at the liveness deadline";
      case Kind::invariants: {
        std::string list;
        for (const std::string& id : ids) list += (list.empty() ? "" : " or ") + id;
        return list + " violated";
      }
    }
    return "";
  }
};

class Shrinker {
 public:
  Shrinker(const traces::TraceFile& trace, const ShrinkLimits& limits, std::ostream* progress)
      : start_(Clock::now()), seed_(trace.seed), limits_(limits), progress_(progress) {
    deadline_ = start_ + std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(limits_.budget_seconds));
    const workloads::RunConfig config = workloads::RunConfig::from_json(trace.config);
    validate(config);
    info_ = workloads::find_workload(config.workload);
    ForgivingRun initial = run_forgiving(config, seed_, trace.choices, [] { return true; });
    if (initial.outcome.hash != trace.hash)
      throw ShrinkError("the trace does not replay to its recorded hash (durasim replay shows where it diverges)");
    target_ = target_of(trace, initial.outcome, limits_.invariant);
    before_ = sizes_of(initial);
    Key key = key_of(config, initial);
    adopt(config, std::move(initial), std::move(key));
  }

  ShrinkResult run() {
    while (!stop_) {
      const uint64_t kept_before = accepted_;
      lower_config();
      drop_streams();
      delete_operations();
      edit_spans(/*zero=*/false);
      edit_spans(/*zero=*/true);
      lower_values();
      if (!stop_ && accepted_ == kept_before) stop("no further progress");
    }
    ShrinkResult result;
    ForgivingRun final = run_forgiving(current_.candidate.config, seed_, current_.run.drawn, [] { return true; }, &result.trace);
    if (final.outcome.hash != current_.run.outcome.hash)
      throw std::logic_error("the shrunk run did not reproduce from its own choices");
    result.failure = target_.describe();
    result.before = before_;
    result.after = sizes_of(final);
    result.runs = runs_;
    result.accepted = accepted_;
    result.seconds = std::chrono::duration<double>(Clock::now() - start_).count();
    result.stopped = stopped_;
    return result;
  }

 private:
  struct Current {
    Candidate candidate;
    Key key;
    ForgivingRun run;
  };

  static Target target_of(const traces::TraceFile& trace, const SeedOutcome& outcome, const std::optional<std::string>& invariant) {
    Target target;
    if (invariant) {
      const std::vector<std::string> failing = failing_invariants(outcome);
      if (std::find(failing.begin(), failing.end(), *invariant) == failing.end())
        throw ShrinkError("its run does not violate " + *invariant + " (nothing to keep failing)");
      target.ids.insert(*invariant);
      return target;
    }
    const RecordedVerdict recorded = recorded_verdict(trace);
    if (recorded.aborted || outcome.error) {
      target.kind = Target::Kind::aborted;
      target.aborted = abort_class(outcome.error.value_or(recorded.aborted.value_or("")));
      return target;
    }
    const std::vector<std::string> failing = failing_invariants(outcome);
    if (!failing.empty()) {
      target.ids.insert(failing.begin(), failing.end());
      return target;
    }
    if (!outcome.passed()) {
      target.kind = Target::Kind::stuck;
      return target;
    }
    throw ShrinkError("its run passed (no invariant violated, all work drained): nothing to shrink");
  }

  Key key_of(const workloads::RunConfig& config, const ForgivingRun& run) const {
    Key key;
    for (const workloads::SizeOption& size : info_->sizes) key.config.push_back(size_value(config, size));
    key.config.push_back(config.safety_ms);
    key.faults = run.fault_events;
    key.choices = run.drawn.choices.size();
    key.distances.reserve(run.drawn.choices.size());
    for (std::size_t i = 0; i < run.drawn.choices.size(); ++i) {
      const Entry e{run.drawn.choices[i].bound, run.drawn.choices[i].value, run.simplest[i]};
      key.distances.push_back(e.distance());
    }
    return key;
  }

  // Makes `run` the current candidate: its own draws, per stream, become the choices to edit.
  void adopt(workloads::RunConfig config, ForgivingRun run, Key key) {
    Candidate candidate;
    candidate.config = std::move(config);
    candidate.names = run.drawn.streams;
    candidate.streams.resize(candidate.names.size());
    candidate.operations.resize(candidate.names.size());
    std::size_t next_unit = 0;
    for (std::size_t i = 0; i < run.drawn.choices.size(); ++i) {
      const sim::Choice& c = run.drawn.choices[i];
      if (next_unit < run.units.size() && run.units[next_unit] == i) {
        candidate.operations[c.stream].push_back(candidate.streams[c.stream].size());
        ++next_unit;
      }
      candidate.streams[c.stream].push_back(Entry{c.bound, c.value, run.simplest[i]});
    }
    strip(candidate);
    current_ = Current{std::move(candidate), std::move(key), std::move(run)};
  }

  void stop(const std::string& why) {
    if (stop_) return;
    stop_ = true;
    stopped_ = why;
  }

  // Runs `candidate`; keeps it when it fails as the original did and is smaller than the current one.
  bool attempt(Candidate candidate, const char* pass) {
    if (stop_) return false;
    if (limits_.max_runs && runs_ >= *limits_.max_runs) {
      stop("--max-runs");
      return false;
    }
    if (Clock::now() >= deadline_) {
      stop("time budget");
      return false;
    }
    strip(candidate);
    if (!tried_.insert(fingerprint(candidate)).second) return false;
    ++runs_;
    ForgivingRun run;
    try {
      run = run_forgiving(candidate.config, seed_, to_log(candidate), [this] { return Clock::now() < deadline_; }, nullptr,
                          current_.key.choices);
    } catch (const std::invalid_argument&) {
      return false;  // a configuration the workload refuses
    }
    if (run.stopped) {
      stop("time budget");
      return false;
    }
    if (run.cut || !target_.matches(run.outcome)) return false;
    Key key = key_of(candidate.config, run);
    if (!(key < current_.key)) return false;
    ++accepted_;
    if (progress_) {
      const TraceSizes sizes = sizes_of(run);
      *progress_ << "  kept #" << accepted_ << " (run " << runs_ << ", " << pass << "): "
                 << (sizes.operations ? std::to_string(*sizes.operations) : std::string("?")) << " operations, " << sizes.faults
                 << " faults, " << sizes.choices << " choices, " << sizes.events << " events\n";
    }
    adopt(std::move(candidate.config), std::move(run), std::move(key));
    return true;
  }

  // Binary search for the smallest distance from the simplest value that `keeps` accepts, from
  // `distance` (accepted now): first the simplest itself, then halving the interval.
  bool search_down(uint64_t distance, const std::function<bool(uint64_t)>& keeps) {
    if (distance == 0 || stop_) return false;
    if (keeps(0)) return true;
    uint64_t lo = 0, hi = distance;  // lo fails, hi holds
    bool progress = false;
    for (int step = 0; step < kMaxSearchSteps && !stop_ && hi - lo > std::max<uint64_t>(1, hi >> kSearchPrecisionShift); ++step) {
      const uint64_t mid = lo + (hi - lo) / 2;
      if (keeps(mid)) {
        hi = mid;
        progress = true;
      } else {
        lo = mid;
      }
    }
    return progress;
  }

  // The workload's size options and the safety phase, each lowered toward its minimum.
  void lower_config() {
    for (const workloads::SizeOption& size : info_->sizes) {
      const int64_t value = size_value(current_.candidate.config, size);
      if (value <= size.minimum) continue;
      search_down(static_cast<uint64_t>(value - size.minimum), [&](uint64_t d) {
        Candidate candidate = current_.candidate;
        candidate.config.options[size.key] = size.minimum + static_cast<int64_t>(d);
        return attempt(std::move(candidate), "config");
      });
    }
    const int64_t safety = current_.candidate.config.safety_ms;
    if (safety > kMinSafetyMs)
      search_down(static_cast<uint64_t>(safety - kMinSafetyMs), [&](uint64_t d) {
        Candidate candidate = current_.candidate;
        candidate.config.safety_ms = kMinSafetyMs + static_cast<int64_t>(d);
        return attempt(std::move(candidate), "safety_ms");
      });
  }

  // Every choice of one stream at once: all faults of a kind off, the first in every same-time order, ...
  void drop_streams() {
    for (std::size_t s = 0; s < current_.candidate.streams.size() && !stop_; ++s) {
      if (current_.candidate.streams[s].empty()) continue;
      Candidate candidate = current_.candidate;
      candidate.streams[s].clear();
      attempt(std::move(candidate), "drop stream");
    }
  }

  // An actor's operations deleted whole: half of a stream's operations at a time, then quarters,
  // ..., down to single operations; at each size the last ones first, then every run of them from
  // the start. The choices before a stream's first operation (an actor's own setup) stay.
  void delete_operations() {
    for (int level = 1; level < 64 && !stop_; ++level) {
      bool any = false;
      for (std::size_t s = 0; s < current_.candidate.streams.size() && !stop_; ++s) {
        const std::size_t k = current_.candidate.operations[s].size() >> level;
        if (k == 0) continue;
        any = true;
        const auto edit = [&](std::size_t first) {
          const std::vector<std::size_t>& starts = current_.candidate.operations[s];
          const std::size_t size = current_.candidate.streams[s].size();
          if (first + k > starts.size() || starts[first] >= size) return false;
          const std::size_t end = first + k < starts.size() ? std::min(starts[first + k], size) : size;
          Candidate candidate = current_.candidate;
          std::vector<Entry>& edited = candidate.streams[s];
          edited.erase(edited.begin() + static_cast<std::ptrdiff_t>(starts[first]), edited.begin() + static_cast<std::ptrdiff_t>(end));
          return attempt(std::move(candidate), "delete operations");
        };
        edit(current_.candidate.operations[s].size() - k);
        for (std::size_t first = 0; first + k <= current_.candidate.operations[s].size() && !stop_;)
          if (!edit(first)) first += k;
      }
      if (!any) break;
    }
  }

  // Spans of each stream deleted (zero: set to their simplest values), a half of the stream at a
  // time, then quarters, ..., down to single choices; at each size the span at the end first, then
  // every span from the start. All streams at one size before any at the next.
  void edit_spans(bool zero) {
    const char* pass = zero ? "simplify span" : "delete span";
    for (int level = 1; level < 64 && !stop_; ++level) {
      bool any = false;
      for (std::size_t s = 0; s < current_.candidate.streams.size() && !stop_; ++s) {
        const std::size_t k = current_.candidate.streams[s].size() >> level;
        if (k == 0) continue;
        any = true;
        const auto edit = [&](std::size_t start) {
          const std::vector<Entry>& stream = current_.candidate.streams[s];
          if (start + k > stream.size()) return false;
          if (zero && std::all_of(stream.begin() + static_cast<std::ptrdiff_t>(start),
                                  stream.begin() + static_cast<std::ptrdiff_t>(start + k), [](const Entry& e) { return e.is_simplest(); }))
            return false;
          Candidate candidate = current_.candidate;
          std::vector<Entry>& edited = candidate.streams[s];
          const auto first = edited.begin() + static_cast<std::ptrdiff_t>(start);
          if (zero) {
            for (auto e = first; e != first + static_cast<std::ptrdiff_t>(k); ++e) e->value = e->simplest;
          } else {
            edited.erase(first, first + static_cast<std::ptrdiff_t>(k));
          }
          return attempt(std::move(candidate), pass);
        };
        if (current_.candidate.streams[s].size() >= k) edit(current_.candidate.streams[s].size() - k);
        for (std::size_t start = 0; start + k <= current_.candidate.streams[s].size() && !stop_;)
          if (!edit(start) || zero) start += k;
      }
      if (!any) break;
    }
  }

  // Each choice that is not the simplest, by binary search toward the simplest.
  void lower_values() {
    for (std::size_t s = 0; s < current_.candidate.streams.size() && !stop_; ++s) {
      for (std::size_t i = 0; i < current_.candidate.streams[s].size() && !stop_; ++i) {
        const Entry entry = current_.candidate.streams[s][i];
        if (entry.is_simplest()) continue;
        search_down(entry.distance(), [&](uint64_t d) {
          if (i >= current_.candidate.streams[s].size()) return false;
          Candidate candidate = current_.candidate;
          Entry& edited = candidate.streams[s][i];
          if (edited.bound != entry.bound || edited.simplest != entry.simplest || edited.distance() <= d) return false;
          edited.set_distance(d);
          return attempt(std::move(candidate), "lower value");
        });
      }
    }
  }

  Clock::time_point start_;
  uint64_t seed_;
  ShrinkLimits limits_;
  std::ostream* progress_;
  const workloads::WorkloadInfo* info_ = nullptr;
  Target target_;
  TraceSizes before_;
  Current current_;
  Clock::time_point deadline_{};
  std::set<uint64_t> tried_;
  uint64_t runs_ = 0, accepted_ = 0;
  bool stop_ = false;
  std::string stopped_;
};

std::string size_line(const TraceSizes& sizes) {
  std::ostringstream line;
  line << (sizes.operations ? with_commas(*sizes.operations) : std::string("?")) << " operations, " << with_commas(sizes.faults)
       << (sizes.faults == 1 ? " fault, " : " faults, ") << with_commas(sizes.choices) << " choices, " << with_commas(sizes.events)
       << " events";
  return line.str();
}

// `after` as a percentage of `before`.
std::string percent(uint64_t before, uint64_t after) {
  if (before == 0) return "n/a";
  return format("%.1f", 100.0 * static_cast<double>(after) / static_cast<double>(before)) + "%";
}

// "ops 25 -> 2, safety_ms 600000 -> 37500", or "unchanged".
std::string config_changes(const workloads::RunConfig& before, const workloads::RunConfig& after) {
  std::ostringstream changes;
  bool any = false;
  const auto add = [&](const std::string& key, int64_t from, int64_t to) {
    if (from == to) return;
    changes << (any ? ", " : "") << key << " " << from << " -> " << to;
    any = true;
  };
  if (const workloads::WorkloadInfo* info = workloads::find_workload(before.workload))
    for (const workloads::SizeOption& size : info->sizes) add(size.key, size_value(before, size), size_value(after, size));
  add("safety_ms", before.safety_ms, after.safety_ms);
  return any ? changes.str() : std::string("unchanged");
}

}  // namespace

ShrinkResult shrink_trace(const traces::TraceFile& trace, const ShrinkLimits& limits, std::ostream* progress) {
  Shrinker shrinker(trace, limits, progress);
  return shrinker.run();
}

std::string default_shrink_output(const std::string& path) {
  const std::size_t slash = path.find_last_of('/');
  const std::size_t name = slash == std::string::npos ? 0 : slash + 1;
  const std::size_t dot = path.find_last_of('.');
  if (dot == std::string::npos || dot <= name) return path + ".shrunk";
  std::string out = path.substr(0, dot);
  out += ".shrunk";
  out += path.substr(dot);
  return out;
}

void check_shrink_limits(const ShrinkLimits& limits) {
  if (!(limits.budget_seconds > 0)) throw std::invalid_argument("--budget must be a positive number of seconds");
  if (!(limits.budget_seconds <= kMaxShrinkBudgetSeconds))
    throw std::invalid_argument("--budget must be at most " + format("%.0f", kMaxShrinkBudgetSeconds) + " seconds, got " +
                                format("%g", limits.budget_seconds));
  if (limits.max_runs && *limits.max_runs == 0) throw std::invalid_argument("--max-runs must be at least 1");
}

int shrink_command(const ShrinkOptions& options, std::ostream& out, std::ostream& err) {
  traces::TraceFile trace;
  try {
    check_shrink_limits(options.limits);
    trace = traces::load_trace(options.path);
    for (const std::string& name : workloads::RunConfig::from_json(trace.config).variants) require_known_variant(name);
  } catch (const std::exception& e) {
    err << "durasim shrink: " << e.what() << "\n";
    return kExitBadInput;
  }
  const std::string out_path = options.out.value_or(default_shrink_output(options.path));
  const workloads::RunConfig config_before = workloads::RunConfig::from_json(trace.config);
  out << "durasim shrink: " << options.path << " (workload " << config_before.workload << ", seed " << trace.seed << ")\n";
  ShrinkResult result;
  try {
    result = shrink_trace(trace, options.limits, options.verbose ? &out : nullptr);
  } catch (const ShrinkError& e) {
    err << "durasim shrink: " << options.path << ": " << e.what() << "\n";
    return kExitBadInput;
  } catch (const std::invalid_argument& e) {
    err << "durasim shrink: " << options.path << ": " << e.what() << "\n";
    return kExitBadInput;
  }
  try {
    traces::write_trace(out_path, result.trace);
  } catch (const std::exception& e) {
    err << "durasim shrink: " << e.what() << "\n";
    return kExitBadInput;
  }
  const workloads::RunConfig config_after = workloads::RunConfig::from_json(result.trace.config);
  out << "  kept failing: " << result.failure << "\n";
  out << "  before: " << size_line(result.before) << "\n";
  out << "  after:  " << size_line(result.after) << "\n";
  out << "  left: " << percent(result.before.choices, result.after.choices) << " of the choices, "
      << percent(result.before.events, result.after.events) << " of the events\n";
  out << "  config: " << config_changes(config_before, config_after) << "\n";
  out << "  " << result.runs << " candidate runs, " << result.accepted << " kept, in " << format("%.1f", result.seconds)
      << " s (stopped: " << result.stopped << ")\n";
  // The promise of the command, checked: the ordinary replay reproduces the shrunk failure.
  const ReplayOutcome check = replay(result.trace);
  if (!check.matched || check.run.passed()) {
    err << "durasim shrink: the shrunk trace " << out_path << " does not replay to its failure (a bug in the shrinker)\n";
    return kExitFailed;
  }
  out << "  wrote " << out_path << " (hash " << traces::hash_hex(result.trace.hash) << "); durasim replay " << out_path
      << " reproduces it: " << check.run.failure() << "\n";
  return kExitOk;
}

}  // namespace durasim::cli
