// The event-bus workload (`durasim run --workload events`): Bus objects hosting the durable event bus
// with topics and consumers whose names need escaping, emitters, racing pollers and operators
// releasing dead events concurrently, under crashes, storage and RPC faults.
#pragma once

#include "workloads/workload.h"

namespace durasim::workloads {

WorkloadInfo events_workload_info();

}  // namespace durasim::workloads
