// The fault plan of one run: the swarm profile drawn per seed from the atlas (runtime.md 11.3), the
// injector the simulator asks at every opportunity, heal (11.4) and accounting (11.5). Keeps RT-09
// (one "fault" event per firing, counts equal events), which sim.mutant.uncounted_fault breaks for
// cold.lifecycle_lag, and RT-01/RT-23 (every draw a recorded choice).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "faults/accounting.h"
#include "faults/atlas.h"
#include "sim/fault_points.h"
#include "sim/random.h"
#include "sim/world.h"

namespace durasim::faults {

class Buggify;
struct BuggifyCount;

// runtime.md 11.3: which promise classes a run injects.
enum class ProfileKind : uint8_t {
  none,         // nothing but the always-on latencies and lifecycle lag
  recoverable,  // R and R? (the default)
  arbitrary,    // R, R? and A (by option only)
};

// "none", "recoverable" or "arbitrary".
std::string_view profile_kind_name(ProfileKind kind);
// The inverse of profile_kind_name. Throws std::invalid_argument naming the bad text and the choices.
ProfileKind parse_profile_kind(std::string_view text);

// runtime.md 2.1: the swarm's start time of a run whose configuration fixes none, drawn in the
// stream "swarm.start_time": 0 with probability 0.1, a value in [1, 999] with probability 0.1, else
// kDefaultStartTime + U[0, 10^11). Time zero and small times must work in every capability.
sim::SimTime draw_start_time(sim::RandomSource& random);

// Per-seed parameters of an always-on latency family: min + Exp(mean), in ms.
struct LatencyParams {
  int64_t min_ms = 0;
  int64_t mean_ms = 0;
};

class FaultPlan final : public sim::FaultInjector {
 public:
  using DetailsFn = std::function<nlohmann::json()>;

  // Draws the swarm profile of `kind` in the stream "faults.profile" of the World's random source:
  // each fault of the profile's classes that the workload hosts is enabled with probability 0.5
  // (always-on faults without a draw) and an enabled fault's rate is uniform in its atlas range; a
  // fault outside `hosted` is never enabled and draws nothing; then the latency parameters.
  // `world` must outlive the plan.
  FaultPlan(sim::World& world, ProfileKind kind, FaultSet hosted = every_fault());
  ~FaultPlan() override;
  FaultPlan(const FaultPlan&) = delete;
  FaultPlan& operator=(const FaultPlan&) = delete;

  // One opportunity of `kind` at `site`; always counted. A disabled fault, or any fault once healed,
  // returns false and draws nothing. Otherwise fires with probability rate_ppm (a recorded choice in
  // "faults.<id>" unless the rate is 0 or 10^6); on firing, calls `draw_details` (which must return
  // a JSON object or null), counts the firing and emits exactly one "fault" event:
  // {"fault": id, "object", "incarnation", "point", "details"}.
  // REQUIRES: `kind` is not a latency family (rpc.latency, cold.latency): those are latency().
  bool fires(sim::FaultKind kind, const sim::FaultSite& site, const DetailsFn& draw_details = {}) override;
  // rpc and cold: min + exponential(mean) with the seed's parameters, in "faults.rpc.latency" /
  // "faults.cold.latency", counted as an opportunity of that fault. confirm: the per-commit base
  // U[1, 5] ms in "faults.storage.confirm_base" (the tail is the fault storage.confirm_latency).
  // Unchanged by heal.
  int64_t latency(sim::LatencyKind kind) override;
  bool healed() const override { return healed_; }
  bool may_fire(sim::FaultKind kind) const override { return !healed_ && enabled(kind); }
  // Engine buggify sites (faults/buggify.h): off under `none` and after heal.
  bool buggify(std::string_view site) override;
  // Per buggify site the engine asked about: enabled, calls, fires.
  std::map<std::string, BuggifyCount> buggify_counts() const;
  // Switches every fault off for the rest of the run (runtime.md 11.4); latencies keep their
  // parameters. Idempotent.
  void heal() { healed_ = true; }

  ProfileKind kind() const { return kind_; }
  bool enabled(sim::FaultKind kind) const { return count(kind).enabled; }
  uint32_t rate_ppm(sim::FaultKind kind) const { return count(kind).rate_ppm; }
  const LatencyParams& rpc_latency() const { return rpc_; }
  const LatencyParams& cold_latency() const { return cold_; }
  // The stream fires() draws `kind` from, "faults.<id>"; draw_details may draw the details here.
  sim::StreamId stream(sim::FaultKind kind);

  // The drawn profile for the trace header: {"kind", "faults": {id: {"enabled", "rate_ppm"}},
  // "latency": {"rpc": {"min_ms", "mean_ms"}, "cold": {...}}}.
  nlohmann::json profile_json() const;
  // Per fault: enabled, rate_ppm, opportunities, firings (runtime.md 11.5).
  const FaultAccounting& accounting() const { return counts_; }

 private:
  FaultCount draw_fault(const FaultSpec& spec, sim::StreamId profile);
  bool switched_on(const FaultSpec& spec, sim::StreamId profile);
  LatencyParams draw_latency(sim::StreamId profile, MsRange min_ms, MsRange mean_ms);
  int64_t draw_family(sim::FaultKind family, const LatencyParams& params);
  int64_t draw_confirm_base();
  void record_firing(FaultCount& count, const sim::FaultSite& site, const DetailsFn& draw_details);
  const FaultCount& count(sim::FaultKind kind) const { return counts_.at(static_cast<std::size_t>(kind)); }

  sim::World& world_;
  ProfileKind kind_;
  FaultSet hosted_;
  bool healed_ = false;
  FaultAccounting counts_{};
  LatencyParams rpc_;
  LatencyParams cold_;
  std::array<std::optional<sim::StreamId>, sim::kFaultKindCount> streams_{};  // created on first use
  std::optional<sim::StreamId> confirm_base_stream_;
  // sim.mutant.uncounted_fault: the fault counted on firing but never traced (RT-09).
  std::optional<sim::FaultKind> untraced_;
  std::unique_ptr<Buggify> buggify_;
};

}  // namespace durasim::faults
