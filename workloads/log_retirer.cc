// The log workload's retirer: in the seeds that draw one, a partition with leases is retired once it
// is drained, as an application removes a topic: when every producer is done and the partition
// reports each consumer group and leased consumer at its nextOffset, `retire` is called (it reverts
// the log's schema with DurabilityLog::migrate(none), log_partition.h) until it answers; then
// `app.log.retired` tells the checkers to judge the schema left behind (SCH-11, H19).
#include <string>
#include <vector>

#include "engine/log_events.h"
#include "workloads/log_roles.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kRetireCheckMs = 10'000;

// Whether partition `name` answers that every consumer's cursor is at its nextOffset (no cursor
// counts as 0); false when some answer is missing.
Task<bool> drainedPartition(LogRun& run, const std::string& name) {
  const nlohmann::json none = nlohmann::json::object();
  Task<Reply> bounding = run.client->call(name, "bounds", none);
  const Reply bounds = co_await bounding;
  if (!bounds.ok()) co_return false;
  const int64_t next = bounds.value.at("nextOffset").get<int64_t>();
  std::vector<std::string> consumers;
  for (int64_t g = 0; g < run.groups; ++g) consumers.push_back(groupName(g));
  for (int64_t c = 0; c < run.leasers; ++c) consumers.push_back(leaserName(c));
  for (const std::string& consumer : consumers) {
    const nlohmann::json args = {{"consumer", consumer}};
    Task<Reply> asking = run.client->call(name, "cursor", args);
    const Reply cursor = co_await asking;
    if (!cursor.ok() || (cursor.value.is_null() ? 0 : cursor.value.get<int64_t>()) != next) co_return false;
  }
  co_return true;
}

}  // namespace

Task<void> partitionRetirer(LogRun& run) {
  const std::string name = partitionName(*run.retiring);
  for (bool drained = false; !drained;) {
    co_await run.world->sleep_for(kRetireCheckMs);
    if (run.counts.producersDone < run.producers) continue;
    Task<bool> checking = drainedPartition(run, name);
    drained = co_await checking;
  }
  // An uncertain answer is asked again: a retired partition answers `retire` with success.
  for (;;) {
    const nlohmann::json none = nlohmann::json::object();
    Task<Reply> retiring = run.client->call(name, "retire", none);
    const Reply reply = co_await retiring;
    if (reply.ok()) break;
    co_await run.world->sleep_for(kRetireCheckMs);
  }
  run.retired = true;
  run.world->emit(log_events::kAppLogRetired, {{"partition", partitionLabel(name)}});
}

}  // namespace durasim::workloads
