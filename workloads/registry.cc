// The list of workloads `durasim run --workload` knows; see workload.h.
#include "workloads/alarms_workload.h"
#include "workloads/core_workload.h"
#include "workloads/events_workload.h"
#include "workloads/fanout_workload.h"
#include "workloads/log_workload.h"
#include "workloads/mixed_workload.h"
#include "workloads/outbox_workload.h"
#include "workloads/runtime_workload.h"
#include "workloads/workload.h"

namespace durasim::workloads {

const std::vector<WorkloadInfo>& workload_registry() {
  static const std::vector<WorkloadInfo> registry = {alarms_workload_info(), core_workload_info(), events_workload_info(), fanout_workload_info(), log_workload_info(),
                                                      mixed_workload_info(), outbox_workload_info(), runtime_workload_info()};
  return registry;
}

const WorkloadInfo* find_workload(const std::string& name) {
  for (const WorkloadInfo& info : workload_registry())
    if (info.name == name) return &info;
  return nullptr;
}

}  // namespace durasim::workloads
