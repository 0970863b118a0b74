// The log workload (`durasim run --workload log`): LogPartition objects (a retained log with
// retention, cold segments and leases) fed by producers through a RoutingClient and read by cursor
// consumer groups and by leased consumers with several pollers, under the run's faults. Its events
// (`app.*`) follow docs/log-trace-events.md.
#pragma once

#include "workloads/workload.h"

namespace durasim::workloads {

WorkloadInfo log_workload_info();

}  // namespace durasim::workloads
