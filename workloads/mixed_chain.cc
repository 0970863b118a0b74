// The mixed workload's chain (mixed_run.h): the forwarder between the log and the mailboxes, the
// reading of whether the chain converged (the sink holds, summed over its ledger keys, one unit per
// record the partitions hold: every appended record applied once, its newest stage published), and
// the sweeper that, after heal, moves on what faults parked: dead letters and quarantined events.
#include <string>

#include "engine/log_schema.h"
#include "engine/outbox_events.h"
#include "workloads/bus_drivers.h"
#include "workloads/mixed_run.h"

namespace durasim::workloads {
namespace {

constexpr Backoff kForwardBackoff{500, 10'000};
constexpr Backoff kSweepBackoff{500, 10'000};
constexpr int64_t kSweepEveryMs = 30'000;
constexpr int64_t kSweepRedriveLimit = 20;

// "P1" of the record key "P1-4": the producer, the account key its records add to.
std::string producerOf(const std::string& key) { return key.substr(0, key.find('-')); }

std::string recordId(const std::string& partition, int64_t offset) {
  std::string id = partition;
  id += ":";
  id += std::to_string(offset);
  return id;
}

// The records the partitions hold: the sum of their nextOffsets.
int64_t appended(const MixedRun& run) {
  const sim::StoreView& stores = run.world().stores();
  int64_t total = 0;
  for (int64_t i = 0; i < run.log.partitions; ++i) {
    const std::string object = partitionLabel(partitionName(i));
    if (stores.has_table(object, DURASIM_LOG_SEQ))
      total += stores.live(object, "SELECT next_offset AS n FROM " DURASIM_LOG_SEQ " WHERE id = 1").one().int64("n");
  }
  return total;
}

// The balances the sink holds, summed over every account's ledger keys.
int64_t published(const MixedRun& run) {
  const std::string sink = std::string(outbox_events::kSinkClass) + "/" + OutboxSink::kName;
  const std::string table(outbox_events::kSinkTable);
  const sim::StoreView& stores = run.world().stores();
  if (!stores.has_table(sink, table)) return 0;
  return stores
      .live(sink, "SELECT coalesce(sum(json_extract(value, '$.value.balance')), 0) AS n FROM " + table + " WHERE channel = ?",
            {std::string(kLedgerChannel)})
      .one()
      .int64("n");
}

}  // namespace

std::string MixedRun::mailboxOf(const std::string& partition) const {
  const int64_t index = std::stoll(partition.substr(1));  // "p<i>"
  return mixedMailbox(index % mailboxes);
}

Task<bool> forwardPage(MixedRun& run, std::string partition, nlohmann::json records) {
  nlohmann::json messages = nlohmann::json::array();
  for (const nlohmann::json& r : records) {
    const std::string id = recordId(partition, r.at("offset").get<int64_t>());
    messages.push_back({{"id", id}, {"key", id}, {"body", {{"key", producerOf(r.at("key").get<std::string>())}, {"amount", 1}}}});
  }
  const nlohmann::json args = {{"messages", messages}};
  Task<Settled> enqueuing = run.mailboxClient->callUntilDefinite(run.mailboxOf(partition), "enqueue", args, kForwardBackoff);
  const Settled settled = co_await enqueuing;
  const bool accepted = settled.reply.ok() && settled.reply.value.value("success", false);
  if (accepted) run.counts.forwarded += static_cast<int64_t>(records.size());
  else ++run.counts.unforwarded;
  co_return accepted;
}

std::vector<std::string> chainBehind(const MixedRun& run) {
  const int64_t records = appended(run), atSink = published(run);
  if (atSink == records) return {};
  return {"the sink holds " + std::to_string(atSink) + " of " + std::to_string(records) + " appended records"};
}

std::vector<std::string> busBehind(const MixedRun& run) {
  return unacknowledged(run.world().stores(), std::string(Bus::kClass) + "/" + kMixedBus, run.bus.consumers);
}

Task<void> sweeper(MixedRun& run) {
  while (!chainBehind(run).empty() || !busBehind(run).empty()) {
    for (int64_t j = 0; j < run.mailboxes; ++j) {
      for (;;) {
        ++run.counts.redrives;
        const nlohmann::json args = {{"limit", kSweepRedriveLimit}};
        Task<Settled> redriving = run.mailboxClient->callUntilDefinite(mixedMailbox(j), "redrive", args, kSweepBackoff);
        const Settled settled = co_await redriving;
        if (!settled.reply.ok() || settled.reply.value.value("redriven", int64_t{0}) < kSweepRedriveLimit) break;
      }
    }
    for (const BusConsumerConfig& c : run.bus.consumers) {
      Task<int64_t> releasing = releaseQuarantined(*run.busClient, kMixedBus, c.topic, c.name);
      run.counts.releases += co_await releasing;
    }
    co_await run.world().sleep_for(kSweepEveryMs);
  }
}

}  // namespace durasim::workloads
