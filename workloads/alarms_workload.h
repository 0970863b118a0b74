// The alarms workload (`durasim run --workload alarms`): named alarms on the shared scheduler under
// crashes, storage faults and alarm retries, checked against every SCH and ALM invariant.
#pragma once

#include "workloads/workload.h"

namespace durasim::workloads {

WorkloadInfo alarms_workload_info();

}  // namespace durasim::workloads
