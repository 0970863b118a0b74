// What the workloads hosting Mailbox objects (workloads/mailbox.h) share: the per-seed draw of the
// mailboxes' options and the drain reading (mailboxes that still hold deliveries, pending named
// alarms or a stored alarm). The fanout and mixed workloads use them.
#pragma once

#include <string>
#include <vector>

#include "sim/object_runtime.h"
#include "sim/store_view.h"
#include "workloads/draw.h"
#include "workloads/mailbox.h"

namespace durasim::workloads {

// alarmConcurrency 1, 2 or 10; alarmMinDelayMs; ackOnReturn in a third; a DLQ in four fifths (or
// always, with `dlqAlways`, which draws nothing for it); named alarms in a third; batchDelayMs 0,
// 250 or 1,000; maxBatchSize 1, 3 or 10; attemptTimeoutMs 5 s or 20 s; maxAttempts 2, 4 or 6.
MailboxConfig drawMailboxConfig(const Draw& draw, bool dlqAlways);

// "<label> has n deliveries" (or pending named alarms, or "still stores an alarm") for each Mailbox
// of `objects` that is not settled, read from the stores.
std::vector<std::string> unsettledMailboxes(const sim::StoreView& stores, const std::vector<sim::ObjectStatus>& objects);

}  // namespace durasim::workloads
