// The built-in core workload: exercises the World alone (no objects), with workers whose timers
// and tasks interleave, fan out with when_all, propagate exceptions, and cancel groups of tasks
// while they are suspended. Its checks: RT-25 (a sleep never resumes early), and the core
// accounting invariants CORE-01..03 (every operation completes; cancelled tasks never run again;
// exceptions reach the awaiting parent).
#pragma once

#include "workloads/workload.h"

namespace durasim::workloads {

WorkloadInfo core_workload_info();

}  // namespace durasim::workloads
