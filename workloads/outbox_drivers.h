// What the workloads hosting Account objects (workloads/account.h) share: the per-seed draw of the
// accounts' outbox options and the drain reading (accounts whose outbox still holds rows, or which
// still store an alarm). The outbox and mixed workloads use them.
#pragma once

#include <string>
#include <vector>

#include "sim/object_runtime.h"
#include "sim/store_view.h"
#include "workloads/account.h"
#include "workloads/draw.h"

namespace durasim::workloads {

// alarmConcurrency 1, 2 or 10; alarmMinDelayMs; the "audit" channel beside "ledger" in half of the
// seeds (when `withAudit`; else no draw for it); maxBatchSize 1, 3 or 50; batchDelayMs 0, 250 or
// 1,000; attemptTimeoutMs 5 s or 20 s; the retry policy: default, fixed (0, 1.5 s or 10 s) or
// invalid (NaN: the default applies).
AccountConfig drawAccountConfig(const Draw& draw, bool withAudit);

// "<label> has n outbox rows" (or "still stores an alarm") for each Account of `objects` that is
// not settled, read from the stores.
std::vector<std::string> unsettledAccounts(const sim::StoreView& stores, const std::vector<sim::ObjectStatus>& objects);

}  // namespace durasim::workloads
