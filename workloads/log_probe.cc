// The log workload's read probe (LOG-16): once every producer is done, it reads each retained
// offset of every partition that still has its log back through the public read API, one offset
// per call (read(o, 1) for o in [bounds().oldestOffset, bounds().nextOffset)), so that every offset
// is once the start of a read, hot or rehydrated; it reads oldestOffset - 1 first, the boundary
// below which a read must throw (LOG-08). Each definite answer is an `app.log.probe` event:
// the record read (`offset`, `key`, `body`), or the LogTruncatedError's `requested` and `oldest`.
// Uncertain answers are asked again. `app.log.probe.done` closes a partition's probe; the LOG
// checker then judges that every offset it keeps was read back as produced. Once the faults have
// healed, the probe calls trim() on every partition, so a flush intent left behind is finished.
#include <algorithm>
#include <string>

#include "engine/log_events.h"
#include "workloads/log_roles.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kProbeWaitMs = 10'000;
constexpr Backoff kProbeBackoff{500, 10'000};
constexpr int64_t kTrimAttempts = 3;

// Reads every offset of partition `name` from its oldest to its next offset.
Task<void> probePartition(LogRun& run, std::string name) {
  Task<Settled> bounding = run.client->callUntilDefinite(name, "bounds", nlohmann::json::object(), kProbeBackoff);
  const Settled bounds = co_await bounding;
  if (!bounds.reply.ok()) co_return;  // retired meanwhile
  const int64_t oldest = bounds.reply.value.at("oldestOffset").get<int64_t>();
  const int64_t next = bounds.reply.value.at("nextOffset").get<int64_t>();
  const std::string object = partitionLabel(name);
  for (int64_t o = std::max<int64_t>(0, oldest - 1); o < next; ++o) {
    const nlohmann::json args = {{"from", o}, {"limit", 1}};
    Task<Settled> reading = run.client->callUntilDefinite(name, "read", args, kProbeBackoff);
    const Settled page = co_await reading;
    EventFields event = {{"partition", object}, {"from", o}};
    if (page.reply.failedWith("LogTruncatedError")) {
      event["requested"] = page.reply.value.at("requestedOffset");
      event["oldest"] = page.reply.value.at("oldestOffset");
    } else if (page.reply.ok()) {
      event["records"] = nlohmann::json::array();
      for (const nlohmann::json& r : page.reply.value.at("records"))
        event["records"].push_back({{"offset", r.at("offset")}, {"key", r.at("key")}, {"body", r.at("body")}});
    } else {
      co_return;  // retired meanwhile
    }
    run.world->emit(log_events::kAppProbe, std::move(event));
  }
  run.world->emit(log_events::kAppProbeDone, {{"partition", object}, {"oldest", oldest}, {"next", next}});
}

}  // namespace

Task<void> readProbe(LogRun& run) {
  while (run.counts.producersDone < run.producers) co_await run.world->sleep_for(kProbeWaitMs);
  for (int64_t i = 0; i < run.partitions; ++i) {
    if (run.retiring == i) continue;  // its log is removed once drained
    Task<void> probing = probePartition(run, partitionName(i));
    co_await probing;
  }
  // With the faults healed, one trim() per partition must finish any flush intent left (LOG-18):
  // the retention alarm may have given up on it. A trim that keeps failing is asked a few times only.
  while (!run.healed) co_await run.world->sleep_for(kProbeWaitMs);
  for (int64_t i = 0; i < run.partitions; ++i) {
    if (run.retiring == i) continue;
    for (int64_t attempt = 1; attempt <= kTrimAttempts; ++attempt) {
      Task<Reply> trimming = run.client->call(partitionName(i), "trim", nlohmann::json::object());
      const Reply trimmed = co_await trimming;
      if (trimmed.definite()) break;
      co_await run.world->sleep_for(kProbeBackoff.after(attempt));
    }
  }
  run.probed = true;
}

}  // namespace durasim::workloads
