// What the workloads hosting Bus objects (workloads/bus_app.h) share: the per-seed draw of one
// consumer's options and behaviour, the drain reading (which consumers have not acknowledged every
// event of their topic, read from the stores) and the operator's sweep after heal that releases a
// consumer's quarantined events. The events and mixed workloads use them; none draws from a stream
// of its own, so each workload's draws stay where they were.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "engine/task.h"
#include "sim/store_view.h"
#include "workloads/bus_app.h"
#include "workloads/client.h"
#include "workloads/draw.h"

namespace durasim::workloads {

// One consumer of `topic` named `name`: its behaviour before heal ("ok", "flaky", "poison",
// "slow"), maxAttempts (1, 3, 8 or unbounded), retry delay (default, fixed 0 / 200 / 2,000 ms,
// linear 500 ms per attempt, or an invalid function), pollMs (100, 200, 1,000) with or without
// backoff, sometimes a maxPollMs, and a handler timeout for the "slow" ones and a quarter of the rest.
BusConsumerConfig drawBusConsumer(const Draw& draw, const std::string& topic, const std::string& name);

// "<bus> <topic>/<consumer>: n events not acknowledged" for every consumer of `consumers` that has
// acknowledged fewer events than its topic's log holds on the Bus object `label`; nothing for a
// Bus whose event tables do not exist yet.
std::vector<std::string> unacknowledged(const sim::StoreView& stores, const std::string& label,
                                        const std::vector<BusConsumerConfig>& consumers);

// One sweep of the operator after heal over one consumer of the Bus named `bus`: lists its dead
// events and releases every quarantined one, each call repeated until its outcome is definite.
// Returns how many releases it asked for. REQUIRES: `client` (of the Bus class) outlives the Task.
Task<int64_t> releaseQuarantined(ObjectClient& client, std::string bus, std::string topic, std::string consumer);

}  // namespace durasim::workloads
