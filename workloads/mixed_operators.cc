// The mixed workload's operators while faults are on: a redriver that asks one mailbox every 40 s to
// redrive a few of its dead letters (its redriven messages meet the account's once-only apply), and,
// in the seeds whose mailboxes carry named alarms, a ticker scheduling their "tick" alarm beside the
// fanout on the shared scheduler. Each draws from a stream of its own, an operation at a time.
#include "workloads/actor_stream.h"
#include "workloads/mixed_run.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kRedriveEveryMs = 40'000, kRedriveLimit = 5;
constexpr int64_t kTickEveryMs = 25'000, kTickAheadMs = 60'000;
constexpr Backoff kTickBackoff{500, 20'000};

}  // namespace

Task<void> redriver(MixedRun& run) {
  ActorStream ops(run.world().random(), run.log.name, "redriver");
  while (!run.log.healed && ops.next_operation()) {
    co_await run.world().sleep_for(kRedriveEveryMs);
    if (run.log.healed) break;
    ++run.counts.redrives;
    const nlohmann::json args = {{"limit", kRedriveLimit}};
    Task<Reply> redriving = run.mailboxClient->call(mixedMailbox(ops.between(0, run.mailboxes - 1)), "redrive", args);
    co_await redriving;
  }
}

Task<void> ticker(MixedRun& run) {
  ActorStream ops(run.world().random(), run.log.name, "ticker");
  while (!run.log.healed && ops.next_operation()) {
    co_await run.world().sleep_for(ops.between(1, kTickEveryMs));
    if (run.log.healed) break;
    const nlohmann::json args = {{"at", run.world().now() + ops.between(0, kTickAheadMs)}};
    Task<Settled> scheduling = run.mailboxClient->callUntilDefinite(mixedMailbox(ops.between(0, run.mailboxes - 1)), "schedule", args, kTickBackoff);
    co_await scheduling;
  }
}

}  // namespace durasim::workloads
