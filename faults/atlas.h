// The fault atlas: runtime.md 11.2 and the episodes of docs/fault-episodes.md as data. For every FaultKind its promise class, its swarm range
// in parts per million, what one opportunity is, and whether it is always on. Fault plans draw from
// it (11.3); it holds no per-seed state. Keeps RT-09's premise: every kind the simulator injects is here.
#pragma once

#include <array>
#include <bitset>
#include <initializer_list>
#include <cstdint>
#include <string_view>

#include "sim/fault_points.h"
#include "sim/random.h"

namespace durasim::faults {

// runtime.md 11.1: what the engine promises under the fault.
enum class PromiseClass : uint8_t {
  recoverable,            // R: nothing accepted is lost; liveness after heal
  recoverable_ambiguous,  // R?: as R, under either of two outcomes the World picks
  arbitrary,              // A: beyond the platform's promises; safety only
};

// "R", "R?" or "A", as in the table of runtime.md 11.2.
std::string_view promise_class_name(PromiseClass promise);

// What one opportunity of a fault is, and so what its rate means. The host offers opportunities
// by calling FaultInjector::fires(); the rate is the firing probability of one opportunity.
enum class Opportunity : uint8_t {
  // One per occurrence of the injection point (a statement, a commit, a call, a reset, ...).
  event,
  // Per-time faults (object.code_update, rpc.partition): the rate is events per object per
  // simulated minute, in ppm. The host offers one opportunity per live object per whole simulated
  // minute (kObjectMinuteMs; a timer per object, or the whole minutes elapsed counted when the
  // object next runs), and on a firing draws the instant within that minute in the details, so
  // firings do not line up on minute boundaries. A Bernoulli draw per minute has exactly the rate
  // as its mean because every range stays below one event per minute.
  object_minute,
  // cold.vanish: one opportunity per stored cold object per simulated hour (kObjectHourMs), all of
  // a run's at one instant of each hour drawn once per run.
  object_hour,
  // episode.cold_outage: as object_minute, but one opportunity per simulated minute of the run.
  run_minute,
  // storage.full: one opportunity per run, offered when the safety phase starts; on a firing the
  // host draws the time within the safety phase and the headroom U[0, 1,000,000] bytes.
  run,
  // rpc.latency and cold.latency: never offered through fires(); drawn by
  // FaultInjector::latency(). Each draw counts as an opportunity; a latency is not an injection
  // event (the delay shows on the events that carry it), so these never count firings.
  latency_draw,
};

inline constexpr int64_t kObjectMinuteMs = 60'000;     // runtime.md 11.2, "per simulated minute"
inline constexpr int64_t kObjectHourMs = 3'600'000;    // runtime.md 11.2, "per simulated hour"

// The period of one per-time opportunity in ms (object_minute, object_hour), else 0.
int64_t opportunity_period_ms(Opportunity opportunity);

// Which profiles switch a fault on without the 0.5 draw (runtime.md 11.2 "always on", 11.3).
enum class AlwaysOn : uint8_t {
  no,                  // enabled by a draw, in profiles that include its class
  every_profile,       // rpc.latency, cold.latency, cold.lifecycle_lag: even under `none`
  arbitrary_profile,   // clock.incarnation_offset: always on under `arbitrary`, else off
};

struct FaultSpec {
  sim::FaultKind kind;
  PromiseClass promise;
  uint32_t min_ppm;  // swarm range, inclusive; an always-on fault has min = max = kPpmScale
  uint32_t max_ppm;
  Opportunity opportunity;
  AlwaysOn always_on;
};

// The rate of an always-on fault: it fires at every opportunity (and draws no choice to do so).
inline constexpr uint32_t kAlwaysPpm = sim::kPpmScale;

// A set of fault kinds, e.g. the faults a workload can host (docs/fault-episodes.md): a fault a
// workload cannot offer an opportunity for is never drawn, so it is never "enabled but never fired".
using FaultSet = std::bitset<sim::kFaultKindCount>;
// Every fault of the atlas.
FaultSet every_fault();
// The faults whose id is one of `ids` or starts with one of them followed by '.' ("storage" names
// every storage.* fault). Throws std::invalid_argument for an entry that names no fault.
FaultSet faults_named(std::initializer_list<std::string_view> ids);
// Every fault but those faults_named(ids) names.
FaultSet every_fault_but(std::initializer_list<std::string_view> ids);

// Every fault of runtime.md 11.2 and docs/fault-episodes.md, indexed by FaultKind.
const std::array<FaultSpec, sim::kFaultKindCount>& fault_atlas();
const FaultSpec& fault_spec(sim::FaultKind kind);

// Latency parameters drawn once per seed (runtime.md 11.2, rpc.latency and cold.latency) and the
// per-commit confirmation base (storage.confirm_latency), in ms, inclusive.
struct MsRange {
  int64_t lo;
  int64_t hi;
};
inline constexpr MsRange kRpcLatencyMinMs{0, 5};      // rpc.latency: minimum U[0, 5] ms
inline constexpr MsRange kRpcLatencyMeanMs{1, 50};    // rpc.latency: exponential, mean U[1, 50] ms
inline constexpr MsRange kColdLatencyMinMs{1, 10};    // cold.latency: minimum U[1, 10] ms
inline constexpr MsRange kColdLatencyMeanMs{5, 100};  // cold.latency: exponential, mean U[5, 100] ms
inline constexpr MsRange kConfirmBaseMs{1, 5};        // storage.confirm_latency: base U[1, 5] ms per commit

}  // namespace durasim::faults
