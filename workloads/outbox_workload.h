// The outbox workload (`durasim run --workload outbox`): Account objects staging balances through
// DurabilityOutbox to a version-keeping sink in another object, under crashes, storage, RPC and
// publish faults, with aborted transactions, restaged keys, a channel that comes and goes, and a
// retired account.
#pragma once

#include "workloads/workload.h"

namespace durasim::workloads {

WorkloadInfo outbox_workload_info();

}  // namespace durasim::workloads
