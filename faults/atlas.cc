// The fault atlas; see atlas.h. Each row is one row of runtime.md 11.2 or of docs/fault-episodes.md,
// rates in parts per million.
// Rows follow FaultKind order (checked at compile time), so a kind added to sim/ without a row here
// does not build.
#include "faults/atlas.h"

#include <stdexcept>
#include <string>

namespace durasim::faults {
namespace {

using sim::FaultKind;
constexpr PromiseClass R = PromiseClass::recoverable;
constexpr PromiseClass R_ = PromiseClass::recoverable_ambiguous;  // "R?"
constexpr PromiseClass A = PromiseClass::arbitrary;
constexpr Opportunity kEvent = Opportunity::event;
constexpr AlwaysOn kDrawn = AlwaysOn::no;

constexpr std::array<FaultSpec, sim::kFaultKindCount> kAtlas = {{
    {FaultKind::storage_statement_error, R, 0, 5'000, kEvent, kDrawn},     // 0–0.5% per statement
    {FaultKind::storage_critical, R, 0, 2'000, kEvent, kDrawn},            // 0–0.2% per write statement
    {FaultKind::storage_full, R, 0, 100'000, Opportunity::run, kDrawn},    // in 0–10% of seeds
    {FaultKind::storage_commit_definite, R, 0, 10'000, kEvent, kDrawn},    // 0–1% per commit
    {FaultKind::storage_commit_uncertain, R_, 0, 20'000, kEvent, kDrawn},  // 0–2% per commit
    {FaultKind::storage_confirm_latency, R, 0, 20'000, kEvent, kDrawn},    // tail 0–2% per commit
    {FaultKind::storage_gate_timeout, R_, 0, 1'000, kEvent, kDrawn},       // 0–0.1% per commit
    {FaultKind::object_reset, R, 0, 10'000, kEvent, kDrawn},               // 0–1% per suspension point
    {FaultKind::object_code_update, R, 0, 500'000, Opportunity::object_minute, kDrawn},  // 0–0.5 / object / min
    {FaultKind::object_zombie, A, 0, 500'000, kEvent, kDrawn},             // 0–50% of resets
    {FaultKind::alarm_late, R, 0, 100'000, kEvent, kDrawn},                // 0–10% per fire
    {FaultKind::alarm_duplicate, R, 0, 30'000, kEvent, kDrawn},            // 0–3% per success
    {FaultKind::alarm_spurious, R, 0, 50'000, kEvent, kDrawn},             // 0–5% per alarm set
    {FaultKind::alarm_infra_failure, R, 0, 30'000, kEvent, kDrawn},        // 0–3% per invocation
    {FaultKind::alarm_schedule_reject, R, 0, 5'000, kEvent, kDrawn},       // 0–0.5% per move-earlier
    {FaultKind::alarm_lost, A, 0, 10'000, kEvent, kDrawn},                 // 0–1% per set
    {FaultKind::alarm_early, A, 0, 50'000, kEvent, kDrawn},                // 0–5% per fire
    {FaultKind::rpc_latency, R, kAlwaysPpm, kAlwaysPpm, Opportunity::latency_draw, AlwaysOn::every_profile},
    {FaultKind::rpc_request_lost, R, 0, 50'000, kEvent, kDrawn},           // 0–5% per call
    {FaultKind::rpc_reply_lost, R_, 0, 50'000, kEvent, kDrawn},            // 0–5% per call
    {FaultKind::rpc_overloaded, R, 0, 20'000, kEvent, kDrawn},             // 0–2% per call
    {FaultKind::rpc_stall, R, 0, 20'000, kEvent, kDrawn},                  // 0–2% per call
    {FaultKind::rpc_partition, R, 0, 200'000, Opportunity::object_minute, kDrawn},  // 0–0.2 / object / min
    {FaultKind::rpc_duplicate_delivery, A, 0, 20'000, kEvent, kDrawn},     // 0–2% per call
    {FaultKind::cold_latency, R, kAlwaysPpm, kAlwaysPpm, Opportunity::latency_draw, AlwaysOn::every_profile},
    {FaultKind::cold_request_failed, R, 0, 50'000, kEvent, kDrawn},        // 0–5% per call
    {FaultKind::cold_reply_lost, R_, 0, 30'000, kEvent, kDrawn},           // 0–3% per write
    {FaultKind::cold_lifecycle_lag, R, kAlwaysPpm, kAlwaysPpm, kEvent, AlwaysOn::every_profile},  // per expired object
    {FaultKind::cold_vanish, A, 0, 10'000, Opportunity::object_hour, kDrawn},  // 0–1% / object / hour
    {FaultKind::clock_incarnation_offset, A, kAlwaysPpm, kAlwaysPpm, kEvent, AlwaysOn::arbitrary_profile},
    {FaultKind::workload_handler_throw, R, 0, 300'000, kEvent, kDrawn},    // 0–30% per call
    {FaultKind::workload_handler_hang, R, 0, 20'000, kEvent, kDrawn},      // 0–2% per call
    // docs/fault-episodes.md
    {FaultKind::episode_reset_burst, R, 0, 50'000, Opportunity::object_minute, kDrawn},    // 0–0.05 / object / min
    {FaultKind::episode_isolation, R, 0, 50'000, Opportunity::object_minute, kDrawn},      // 0–0.05 / object / min
    {FaultKind::episode_cold_outage, R, 0, 50'000, Opportunity::run_minute, kDrawn},       // 0–0.05 / min
    {FaultKind::episode_storage_slow, R, 0, 100'000, Opportunity::object_minute, kDrawn},  // 0–0.1 / object / min
}};

constexpr bool rows_follow_kinds() {
  for (std::size_t i = 0; i < kAtlas.size(); ++i) {
    const FaultSpec& spec = kAtlas[i];
    if (static_cast<std::size_t>(spec.kind) != i || spec.min_ppm > spec.max_ppm || spec.max_ppm > sim::kPpmScale)
      return false;
    if ((spec.always_on != AlwaysOn::no) != (spec.min_ppm == kAlwaysPpm)) return false;
  }
  return true;
}
static_assert(rows_follow_kinds(), "fault atlas rows must follow FaultKind order, with ranges in [0, 10^6]");

}  // namespace

std::string_view promise_class_name(PromiseClass promise) {
  switch (promise) {
    case PromiseClass::recoverable: return "R";
    case PromiseClass::recoverable_ambiguous: return "R?";
    case PromiseClass::arbitrary: return "A";
  }
  return "?";
}

int64_t opportunity_period_ms(Opportunity opportunity) {
  switch (opportunity) {
    case Opportunity::object_minute:
    case Opportunity::run_minute: return kObjectMinuteMs;
    case Opportunity::object_hour: return kObjectHourMs;
    case Opportunity::event:
    case Opportunity::run:
    case Opportunity::latency_draw: return 0;
  }
  return 0;
}

const std::array<FaultSpec, sim::kFaultKindCount>& fault_atlas() { return kAtlas; }

FaultSet every_fault() { return FaultSet{}.set(); }

FaultSet faults_named(std::initializer_list<std::string_view> ids) {
  FaultSet set;
  for (std::string_view id : ids) {
    bool named = false;
    for (std::size_t i = 0; i < sim::kFaultKindCount; ++i) {
      const std::string_view name = sim::fault_name(static_cast<sim::FaultKind>(i));
      if (name == id || (name.size() > id.size() && name.substr(0, id.size()) == id && name[id.size()] == '.')) {
        set.set(i);
        named = true;
      }
    }
    if (!named) throw std::invalid_argument("no fault is named '" + std::string(id) + "' (runtime.md 11.2)");
  }
  return set;
}

FaultSet every_fault_but(std::initializer_list<std::string_view> ids) { return every_fault() & ~faults_named(ids); }

const FaultSpec& fault_spec(sim::FaultKind kind) { return kAtlas.at(static_cast<std::size_t>(kind)); }

}  // namespace durasim::faults
