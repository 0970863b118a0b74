// Fault ids as written in traces and reports; see fault_points.h.
#include "sim/fault_points.h"

#include <array>

namespace durasim::sim {

std::string_view fault_name(FaultKind kind) {
  static constexpr std::array<std::string_view, kFaultKindCount> kNames = {
      "storage.statement_error", "storage.critical",       "storage.full",          "storage.commit_definite",
      "storage.commit_uncertain", "storage.confirm_latency", "storage.gate_timeout", "object.reset",
      "object.code_update",      "object.zombie",          "alarm.late",            "alarm.duplicate",
      "alarm.spurious",          "alarm.infra_failure",    "alarm.schedule_reject", "alarm.lost",
      "alarm.early",             "rpc.latency",            "rpc.request_lost",      "rpc.reply_lost",
      "rpc.overloaded",          "rpc.stall",              "rpc.partition",         "rpc.duplicate_delivery",
      "cold.latency",            "cold.request_failed",    "cold.reply_lost",       "cold.lifecycle_lag",
      "cold.vanish",             "clock.incarnation_offset", "workload.handler_throw", "workload.handler_hang",
      "episode.reset_burst",     "episode.isolation",      "episode.cold_outage",   "episode.storage_slow"};
  return kNames.at(static_cast<std::size_t>(kind));
}

}  // namespace durasim::sim
