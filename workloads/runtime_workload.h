// The runtime workload (the default of `durasim run`): Counter objects on the simulated runtime,
// driven by retrying clients, with counters that must add up after every crash.
#pragma once

#include "workloads/workload.h"

namespace durasim::workloads {

WorkloadInfo runtime_workload_info();

}  // namespace durasim::workloads
