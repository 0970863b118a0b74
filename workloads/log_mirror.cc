// The log workload's cold lifecycle mirror (runs only with cold storage): the bucket's lifecycle
// rule expires segments, and this task mirrors each expiry with forgetColdBefore(last + 1) on the
// segment's partition (`app.cold.lifecycle`), retried every round until the partition answers.
#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "engine/log_events.h"
#include "workloads/log_roles.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kMirrorIntervalMs = 15'000;

}  // namespace

Task<void> coldMirror(LogRun& run) {
  std::size_t seen = 0;
  std::map<std::string, int64_t> wanted, forgotten;  // partition -> forgetColdBefore offset
  for (;;) {
    co_await run.world->sleep_for(kMirrorIntervalMs);
    sim::ColdStore& store = run.runtime->cold_store();
    store.expire(run.world->now());
    const std::vector<sim::ColdEvent>& history = store.history();
    for (; seen < history.size(); ++seen) {
      const sim::ColdEvent& event = history[seen];
      if (event.kind != sim::ColdEventKind::expire || event.bucket != kLogBucket) continue;
      if (const std::optional<SegmentRange> range = parseSegmentKey(event.key))
        wanted[range->partition] = std::max(wanted[range->partition], range->last + 1);
    }
    for (const auto& [name, offset] : wanted) {
      if (forgotten[name] >= offset) continue;
      const nlohmann::json args = {{"offset", offset}};
      Task<Reply> forgetting = run.client->call(name, "forgetColdBefore", args);
      const Reply reply = co_await forgetting;
      if (!reply.ok()) continue;
      ++run.counts.forgets;
      forgotten[name] = offset;
      run.world->emit(log_events::kAppColdLifecycle, {{"partition", partitionLabel(name)}, {"offset", offset}});
    }
  }
}

}  // namespace durasim::workloads
