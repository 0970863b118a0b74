// The fanout workload (`durasim run --workload fanout`): Mailbox objects delivering through
// DurabilityFanout to a consumer, an archive and a DLQ under crashes, storage, RPC and cold-store
// faults, fed through a routing client and redriven by an operator.
#pragma once

#include "workloads/workload.h"

namespace durasim::workloads {

WorkloadInfo fanout_workload_info();

}  // namespace durasim::workloads
