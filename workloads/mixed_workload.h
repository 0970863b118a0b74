// The mixed workload (`durasim run --workload mixed`): one world composing every capability on
// several objects, with every family of checks on. Topology and roles: mixed_run.h.
#pragma once

#include "workloads/workload.h"

namespace durasim::workloads {

WorkloadInfo mixed_workload_info();

}  // namespace durasim::workloads
