// The log workload's per-seed configuration and its drain reading, shared with the workloads that
// compose LogPartition objects (the mixed workload): the retention mix (maxAgeMs in [20 s, 180 s],
// maxRecords in [20, 150], maxBytes in [2000, 20000], each half of the time, maxRecords when neither
// of the others), cold or not, maxBatchSize in [5, 20], the retention sweep period, leases with
// maxParallelism in [2, 4], leaseMs in [2 s, 20 s], sometimes maxAttempts with an onPoison; one
// partition without leases; the routing push deadline and soft backlog limit; the partition to
// retire. Every draw is on run.stream, in this order.
#include <map>
#include <string>

#include "engine/log_schema.h"
#include "workloads/log_roles.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kPushTimeoutMinMs = 3'000, kPushTimeoutMaxMs = 15'000;
constexpr int64_t kSoftBacklogMin = 5, kSoftBacklogMax = 60;
constexpr uint32_t kColdPpm = 750'000;    // seeds whose partitions flush to cold storage
constexpr uint32_t kRetirePpm = 500'000;  // seeds that retire a partition with leases

std::string lagging(const std::string& name, const std::string& consumer, int64_t at, int64_t next) {
  return partitionLabel(name) + ": " + consumer + " at " + std::to_string(at) + ", nextOffset " + std::to_string(next);
}

}  // namespace

void drawLogConfig(LogRun& run, const LogDrawPolicy& policy) {
  LogPartitionConfig& base = run.base;
  base.scheduler.alarmMinDelayMs = run.draw(kMinAlarmMinDelayMs, kMaxAlarmMinDelayMs);
  base.maxBatchSize = run.draw(5, 20);
  if (run.chance(500'000)) base.retention.maxAgeMs = run.draw(20'000, 180'000);
  if (run.chance(500'000)) base.retention.maxRecords = run.draw(20, 150);
  if (run.chance(500'000)) base.retention.maxBytes = run.draw(2'000, 20'000);
  if (!base.retention.maxAgeMs && !base.retention.maxBytes) base.retention.maxRecords = run.draw(20, 150);
  base.cold = policy.coldAlways || run.chance(kColdPpm);
  base.retentionSweepMs = run.draw(5'000, 30'000);
  PartitionLeasePlan leases;
  leases.maxParallelism = run.draw(2, 4);
  leases.leaseMs = run.draw(2'000, 20'000);
  if (run.chance(500'000)) {
    leases.maxAttempts = run.draw(2, 4);
    leases.onPoison = run.chance(700'000);
    leases.poisonThrows = leases.onPoison && run.chance(500'000);
  }
  base.leases = leases;
  run.noLeases = policy.noLeasesLast ? run.partitions - 1 : run.draw(0, run.partitions - 1);
  for (int64_t i = 0; i < run.partitions; ++i) {
    LogPartitionConfig config = base;
    if (!run.leased(i)) config.leases.reset();
    run.configs[partitionName(i)] = config;
  }
  run.pushTimeoutMs = run.draw(kPushTimeoutMinMs, kPushTimeoutMaxMs);
  run.softBacklogLimit = run.draw(kSoftBacklogMin, kSoftBacklogMax);
  if (policy.retire && run.partitions > 1 && run.chance(kRetirePpm)) {
    const int64_t i = run.draw(0, run.partitions - 2);  // among the partitions with leases
    run.retiring = i < run.noLeases ? i : i + 1;
  }
}

nlohmann::json logConfigJson(const LogRun& run) {
  const LogPartitionConfig& base = run.base;
  const LogRetention& r = base.retention;
  const auto opt = [](const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
  const PartitionLeasePlan& l = *base.leases;
  return {{"maxBatchSize", base.maxBatchSize},
          {"retention", {{"maxAgeMs", opt(r.maxAgeMs)}, {"maxRecords", opt(r.maxRecords)}, {"maxBytes", opt(r.maxBytes)}}},
          {"cold", base.cold},
          {"retentionSweepMs", base.retentionSweepMs},
          {"alarmMinDelayMs", base.scheduler.alarmMinDelayMs},
          {"leases", {{"maxParallelism", l.maxParallelism}, {"leaseMs", l.leaseMs}, {"maxAttempts", opt(l.maxAttempts)},
                      {"onPoison", l.onPoison}, {"poisonThrows", l.poisonThrows}}},
          {"noLeases", partitionLabel(partitionName(run.noLeases))},
          {"retiring", run.retiring ? nlohmann::json(partitionLabel(partitionName(*run.retiring))) : nlohmann::json()},
          {"pushTimeoutMs", run.pushTimeoutMs},
          {"softBacklogLimit", run.softBacklogLimit}};
}

// Read once no runtime work is pending (every commit confirmed, so the stores hold exactly their
// durable state). A retired partition has no log tables and no consumers.
std::vector<std::string> logConsumersBehind(const LogRun& run) {
  std::vector<std::string> items;
  const sim::StoreView& stores = run.world->stores();
  for (int64_t i = 0; i < run.partitions; ++i) {
    const std::string name = partitionName(i);
    const std::string object = partitionLabel(name);
    if (!stores.has_table(object, DURASIM_LOG_SEQ)) continue;  // never constructed: nothing was appended
    const int64_t next = stores.live(object, "SELECT next_offset AS n FROM " DURASIM_LOG_SEQ " WHERE id = 1").one().int64("n");
    std::map<std::string, int64_t> cursors;
    for (const SqlRow& row : stores.live(object, "SELECT consumer, \"offset\" FROM " DURASIM_LOG_CURSORS).toVector())
      cursors[row.text("consumer")] = row.int64("offset");
    const auto cursor = [&](const std::string& consumer) { return cursors.count(consumer) ? cursors.at(consumer) : 0; };
    for (int64_t g = 0; g < run.groups; ++g)
      if (cursor(groupName(g)) != next) items.push_back(lagging(name, groupName(g), cursor(groupName(g)), next));
    if (!run.leased(i)) continue;
    for (int64_t c = 0; c < run.leasers; ++c) {
      const std::string consumer = leaserName(c);
      if (cursor(consumer) != next) items.push_back(lagging(name, consumer, cursor(consumer), next));
    }
  }
  return items;
}

}  // namespace durasim::workloads
