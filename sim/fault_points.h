// The injection points of the fault model (runtime.md 11.2) as the simulator sees them: at each
// opportunity it asks its FaultInjector whether a fault fires there. Which faults are enabled and at
// what rate (the swarm profile), their promise classes and their accounting live in faults/, which
// implements FaultInjector; the simulator only knows where faults can happen.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace durasim::sim {

enum class FaultKind : uint8_t {
  storage_statement_error,
  storage_critical,
  storage_full,
  storage_commit_definite,
  storage_commit_uncertain,
  storage_confirm_latency,  // the tail of the confirmation latency
  storage_gate_timeout,
  object_reset,
  object_code_update,
  object_zombie,
  alarm_late,
  alarm_duplicate,
  alarm_spurious,
  alarm_infra_failure,
  alarm_schedule_reject,
  alarm_lost,
  alarm_early,
  rpc_latency,
  rpc_request_lost,
  rpc_reply_lost,
  rpc_overloaded,
  rpc_stall,
  rpc_partition,
  rpc_duplicate_delivery,
  cold_latency,
  cold_request_failed,
  cold_reply_lost,
  cold_lifecycle_lag,
  cold_vanish,
  clock_incarnation_offset,
  workload_handler_throw,
  workload_handler_hang,
  // Correlated episodes the plan places (docs/fault-episodes.md).
  episode_reset_burst,
  episode_isolation,
  episode_cold_outage,
  episode_storage_slow,
  kCount
};
inline constexpr std::size_t kFaultKindCount = static_cast<std::size_t>(FaultKind::kCount);

// The fault id of runtime.md 11.2, e.g. "storage.commit_uncertain".
std::string_view fault_name(FaultKind kind);

// Where an opportunity arises: the object (empty for clients), its incarnation and the point.
struct FaultSite {
  std::string object;        // "Class/name", or "" outside objects
  int64_t incarnation = 0;   // 0 outside objects
  std::string_view point;    // e.g. "commit", "confirm", "suspend", "call", "reply"
};

// Latency families whose per-seed parameters the profile draws (always on).
enum class LatencyKind : uint8_t { rpc, cold, confirm };

class FaultInjector {
 public:
  virtual ~FaultInjector() = default;
  // One opportunity for `kind` at `site`: counts it and decides (a recorded choice unless certain).
  // When the fault fires, `draw_details` (if given) draws what the fault needs and returns it as a
  // JSON object, and exactly one "fault" trace event is recorded with the kind, site and details.
  virtual bool fires(FaultKind kind, const FaultSite& site, const std::function<nlohmann::json()>& draw_details = {}) = 0;
  // A latency draw of the given family, in ms (>= 0).
  virtual int64_t latency(LatencyKind kind) = 0;
  // True once the run has healed (runtime.md 11.4): no fault fires any more.
  virtual bool healed() const = 0;
  // Whether `kind` can still fire in this run; hosts skip setting up opportunities that cannot.
  virtual bool may_fire(FaultKind kind) const { return !healed(); }
  // Whether engine buggify site `site` (engine/buggify.h) takes its rare path now.
  virtual bool buggify(std::string_view site) {
    (void)site;
    return false;
  }
};

// No faults at all and fixed 1 ms latencies: for unit tests of the simulator.
class QuietFaults final : public FaultInjector {
 public:
  bool fires(FaultKind, const FaultSite&, const std::function<nlohmann::json()>&) override { return false; }
  int64_t latency(LatencyKind) override { return 1; }
  bool healed() const override { return true; }
  bool may_fire(FaultKind) const override { return false; }
};

}  // namespace durasim::sim
