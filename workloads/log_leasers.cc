// The log workload's leased consumers: maxParallelism + 1 pollers share each consumer name and
// rotate over the partitions with leases. Each lease is acked, nacked or left to expire
// (`app.lease.outcome`); records whose seq is a multiple of kPoisonEvery are always nacked before
// heal, so maxAttempts is reached. Some settlements use a wrong consumer name or an already settled
// batch id and must get LogLeaseError (LSE-11, LSE-04); lease calls to the partition without the
// leases option must get TypeError (LSE-16). An uncertain answer is never checked, nor one from a
// partition retired meanwhile (log_retirer.cc).
#include <string>

#include "engine/log_events.h"
#include "workloads/log_roles.h"

namespace durasim::workloads {
namespace {

constexpr uint32_t kWrongConsumerPpm = 50'000;  // a settlement first tried under a wrong name
constexpr uint32_t kStaleAckPpm = 50'000;       // an acked batch id acked again
constexpr uint32_t kDisabledProbePpm = 30'000;  // a lease call to the partition without leases
constexpr int64_t kPoisonEvery = 23;            // a lease holding a record with seq % 23 == 0 is nacked
constexpr int64_t kPoisonAttempts = 5;          // ... on its first 5 attempts before heal (maxAttempts <= 4)

enum class Outcome { ack, nack, stall };

void emitOutcome(LogRun& run, const std::string& name, const std::string& consumer, const nlohmann::json& lease,
                 const std::string& outcome, const std::string& result) {
  run.world->emit(log_events::kAppLeaseOutcome, {{"partition", partitionLabel(name)},
                                        {"consumer", consumer},
                                        {"batchId", lease.at("batchId")},
                                        {"first", lease.at("firstOffset")},
                                        {"last", lease.at("lastOffset")},
                                        {"outcome", outcome},
                                        {"result", result}});
}

// Before heal: nack a lease holding a poison record on its first attempts (so maxAttempts is
// reached), else ack 70%, nack 15%, stall 15%. After heal every lease is acked, so the consumers
// drain (LSE-15).
Outcome chooseOutcome(LogRun& run, ActorStream& ops, const nlohmann::json& lease) {
  if (run.healed) return Outcome::ack;
  if (lease.at("attempt").get<int64_t>() <= kPoisonAttempts)
    for (const nlohmann::json& r : lease.at("records"))
      if (const nlohmann::json& body = r.at("body"); body.is_object() && body.value("seq", int64_t{1}) % kPoisonEvery == 0)
        return Outcome::nack;  // (a body not as produced is for the checkers to judge, LOG-09, LSE-10)
  const int64_t roll = ops.between(0, 99);
  return roll < 70 ? Outcome::ack : roll < 85 ? Outcome::nack : Outcome::stall;
}

// LSE-16: a lease call to the partition without the leases option throws TypeError.
Task<void> probeDisabled(LogRun& run, const std::string& consumer) {
  const std::string name = partitionName(run.noLeases);
  Task<Reply> leasing = run.client->call(name, "lease", JsonFields().add("consumer", consumer));
  const Reply reply = co_await leasing;
  if (!reply.definite()) co_return;
  run.expectations.check("LSE-16", reply.failedWith("TypeError"), [&] {
    return "lease on " + partitionLabel(name) + " (no leases option) answered " + reply.label();
  });
}

// An ack that must be refused with LogLeaseError: under another consumer's name (LSE-11), or of a
// batch id already settled (LSE-04).
Task<void> settleExpectingRefusal(LogRun& run, const std::string& name, const std::string& consumer, const std::string& batchId,
                                  const nlohmann::json& lease, const std::string& invariant) {
  Task<Reply> settling = run.client->call(name, "ack", JsonFields().add("consumer", consumer).add("batchId", batchId));
  const Reply reply = co_await settling;
  emitOutcome(run, name, consumer, lease, "ack", reply.label());
  if (!reply.definite() || reply.failedWith(kPartitionRetired)) co_return;  // no log answered
  run.expectations.check(invariant, reply.failedWith("LogLeaseError"), [&] {
    return "ack of " + batchId + " as " + consumer + " on " + partitionLabel(name) + " answered " + reply.label();
  });
}

// One lease on partition `name` and its settlement; returns whether a lease was granted.
Task<bool> leaseOnce(LogRun& run, ActorStream& ops, const std::string& consumer, const std::string& name) {
  Task<Reply> leasing = run.client->call(name, "lease", JsonFields().add("consumer", consumer).add("limit", ops.between(1, run.base.maxBatchSize)));
  const Reply reply = co_await leasing;
  // After a truncation the next lease carries on (or stays blocked on a lost segment).
  if (reply.failedWith("LogTruncatedError")) ++run.counts.truncations;
  if (!reply.ok() || reply.value.is_null()) co_return false;
  ++run.counts.leased;
  const nlohmann::json& lease = reply.value;
  const std::string batchId = lease.at("batchId").get<std::string>();
  if (ops.chance(kWrongConsumerPpm)) {
    const std::string wrongConsumer = consumer + "-other";
    const std::string invariant = "LSE-11";
    Task<void> probing = settleExpectingRefusal(run, name, wrongConsumer, batchId, lease, invariant);
    co_await probing;
  }
  const Outcome outcome = chooseOutcome(run, ops, lease);
  if (outcome == Outcome::stall) {
    emitOutcome(run, name, consumer, lease, "stall", "ok");
    co_return true;
  }
  const std::string method = outcome == Outcome::ack ? "ack" : "nack";
  Task<Reply> settling = run.client->call(name, method, JsonFields().add("consumer", consumer).add("batchId", batchId));
  const Reply settled = co_await settling;
  emitOutcome(run, name, consumer, lease, method, settled.label());
  if (settled.ok() && ops.chance(kStaleAckPpm)) {
    const std::string invariant = "LSE-04";
    Task<void> probing = settleExpectingRefusal(run, name, consumer, batchId, lease, invariant);
    co_await probing;
  }
  co_return true;
}

}  // namespace

Task<void> leasedPoller(LogRun& run, int64_t c, int64_t k) {
  const std::string consumer = leaserName(c);
  ActorStream ops(run.world->random(), run.name, "poller", c * run.pollersPerLeaser() + k);
  const int64_t pollMs = LogRun::pollInterval(c, ops);
  int64_t turn = k, idleMs = pollMs;
  for (;;) {
    if (ops.chance(kDisabledProbePpm)) {
      Task<void> probing = probeDisabled(run, consumer);
      co_await probing;
    }
    const int64_t i = turn++ % run.partitions;
    bool worked = false;
    if (run.leased(i)) {
      const std::string name = partitionName(i);
      Task<bool> leasing = leaseOnce(run, ops, consumer, name);
      worked = co_await leasing;
    }
    idleMs = LogRun::nextPause(worked, pollMs, idleMs);
    co_await run.world->sleep_for(idleMs);
  }
}

}  // namespace durasim::workloads
