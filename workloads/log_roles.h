// The roles of the log workload (log_workload.cc wires them) and the state they share in one run:
// producers (log_producers.cc), consumer groups (log_groups.cc), leased pollers (log_leasers.cc),
// the cold lifecycle mirror (log_mirror.cc), the retirer of a drained partition
// (log_retirer.cc) and the read probe (log_probe.cc). Each producer, consumer and poller draws from a
// stream of its own (actor_stream.h; the routing clients from theirs) and checks the definite answers they get against what the spec
// requires (LOG-14, LSE-04, LSE-11, LSE-16) in the shared expectations.
// Names: partitions "p<i>" (objects "LogPartition/p<i>"), producers "P<i>", groups "g<i>", leased
// consumers "L<i>"; shard "shard-<i>" is served by partition p(i mod partitions).
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/routing.h"
#include "engine/task.h"
#include "sim/object_runtime.h"
#include "sim/stream_random.h"
#include "sim/tally.h"
#include "sim/world.h"
#include "workloads/actor_stream.h"
#include "workloads/client.h"
#include "workloads/log_partition.h"

namespace durasim::workloads {

// How often consumers poll: the first group (or leased consumer) every kMinPollMs, the others at
// an interval drawn in [kSlowPollMinMs, kSlowPollMaxMs], so that they fall behind the hot window
// (cold reads, truncation); a consumer that found nothing doubles its pause up to kMaxIdleMs.
inline constexpr int64_t kMinPollMs = 200, kMaxIdleMs = 30'000;
inline constexpr int64_t kSlowPollMinMs = 2'000, kSlowPollMaxMs = 45'000;

// LogPartition answers in the library envelope; a refused call carries no answer of the partition,
// so the roles treat it as uncertain.
inline constexpr CallStyle kPartitionCallStyle{true, false};

// "<prefix><i>" (appended rather than concatenated, which g++ 12 misreports under -Wrestrict).
inline std::string numbered(const char* prefix, int64_t i) {
  std::string text = prefix;
  text += std::to_string(i);
  return text;
}
inline std::string partitionName(int64_t i) { return numbered("p", i); }
inline std::string producerName(int64_t p) { return numbered("P", p); }
inline std::string groupName(int64_t g) { return numbered("g", g); }
inline std::string leaserName(int64_t c) { return numbered("L", c); }
// The object label of partition `name`, as the trace names it.
inline std::string partitionLabel(const std::string& name) { return std::string(LogPartition::kClass) + "/" + name; }

// What the roles count, for the workload's metrics.
struct LogCounts {
  int64_t appended = 0, rejected = 0, consumed = 0, leased = 0, truncations = 0, forgets = 0;
  int64_t producersDone = 0;
};

// What a consumer group does with a non-empty page before it commits past it: true when the page
// is handled; false leaves the cursor where it was (the page is read again).
using PageHandler = std::function<Task<bool>(std::string partition, nlohmann::json records)>;

// The state of one run of the log workload. REQUIRES: it outlives every role's task.
struct LogRun {
  sim::World* world = nullptr;
  // The workload the roles belong to: their streams are "workload.<name>.<actor>[.<n>]".
  const char* name = "log";
  sim::StreamId stream;  // "workload.<name>": the draws of the configuration (each role has a stream of its own)
  int64_t partitions = 0, producers = 0, groups = 0, leasers = 0, ops = 0;
  LogPartitionConfig base;  // drawn per seed; partition noLeases has no leases option
  std::map<std::string, LogPartitionConfig> configs;
  int64_t noLeases = 0;
  std::optional<int64_t> retiring;  // a partition with leases that is retired once drained, if any
  bool retired = false;             // ... and it answered `retire`
  int64_t pushTimeoutMs = 0, softBacklogLimit = 0;
  std::unique_ptr<sim::ObjectRuntime> runtime;
  std::unique_ptr<ObjectClient> client;  // calls to the partitions
  sim::Tallies expectations;             // the definite answers checked against the spec
  bool healed = false;
  bool probed = false;  // the read probe read every partition back
  LogCounts counts;
  PageHandler handlePage;  // unset: a group only reports its pages (app.consume)

  int64_t draw(int64_t lo, int64_t hi) { return world->random().between(stream, lo, hi); }
  bool chance(uint32_t ppm) { return world->random().chance(stream, ppm); }
  bool leased(int64_t partition) const { return partition != noLeases; }
  int64_t pollersPerLeaser() const { return base.leases->maxParallelism + 1; }
  // The pause between rounds of consumer number `consumer` (drawn for all but the first).
  static int64_t pollInterval(int64_t consumer, ActorStream& ops) {
    return consumer == 0 ? kMinPollMs : ops.between(kSlowPollMinMs, kSlowPollMaxMs);
  }
  // The pause after a round that did (or did not) make progress.
  static int64_t nextPause(bool worked, int64_t pollMs, int64_t idleMs) {
    return worked ? pollMs : std::min(std::max(kMaxIdleMs, pollMs), idleMs * 2);
  }
};

// ---------------------------------------------------------------------------------------------
// The per-seed configuration (log_config.cc)

// What a workload composing the log may leave out of the draw.
struct LogDrawPolicy {
  bool coldAlways = false;    // cold storage in every seed (else in 3 of 4)
  bool retire = true;         // some seeds retire a partition once drained
  bool noLeasesLast = false;  // the partition without leases is the last (else drawn): routing fills p0 first
};
// Draws run.base, run.configs, run.noLeases, the routing deadline and soft backlog limit and, with
// policy.retire, run.retiring, from run.stream (log_config.cc gives the ranges).
void drawLogConfig(LogRun& run, const LogDrawPolicy& policy);
// The drawn configuration as the "workload.config" event states it.
nlohmann::json logConfigJson(const LogRun& run);
// Consumers (every group; every leased consumer on a partition with leases) whose stored cursor is
// not at nextOffset on a partition that still has its log, read from the stores: "<partition>:
// <consumer> at <cursor>, nextOffset <n>".
std::vector<std::string> logConsumersBehind(const LogRun& run);

// ---------------------------------------------------------------------------------------------
// Producers (log_producers.cc)

// A batch's records, built once and never written: the routing client copies its input into each
// coroutine it starts, and every copy of a batch shares them.
using AppendRecords = std::shared_ptr<const nlohmann::json>;

// One producer batch as the routing client carries it; `shard` is filled by the invoke that runs.
struct AppendBatch {
  AppendRecords records;
  std::shared_ptr<std::string> shard = std::make_shared<std::string>();
  int64_t call = 0;  // the push it belongs to, for the `app.rte.*` events
  bool ping = false;  // a heartbeat: the partition's `ping` instead of `append`
};
using AppendResult = EnqueueResult<std::vector<int64_t>>;
using AppendClient = RoutingClient<AppendBatch, std::vector<int64_t>>;

// The producers and the routing clients they push through: `routed` (default selection) for a
// batch's first push, `pinned` (to the shard the first push reached) for its retries, and `faulty`
// (a sharding function that names no shard) for the pushes that must be refused before sending.
class LogProducers {
 public:
  // Creates the "workload.log.routing" stream and the routing clients.
  explicit LogProducers(LogRun& run);
  LogProducers(const LogProducers&) = delete;
  LogProducers& operator=(const LogProducers&) = delete;

  // Producer `p`: ops batches, each pushed until its answer is definite.
  Task<void> producer(int64_t p);
  // Until the run ends: a ping through the default selection every few seconds, whose envelope,
  // unlike an append's, can show an idle shard, so the width also shrinks (RTE-06).
  Task<void> heartbeat();
  // No ping is in flight (the run may end between pings only).
  bool heartbeatIdle() const { return !pinging_; }
  int64_t calls() const { return calls_; }
  int64_t uncertain() const { return uncertain_; }

 private:
  Task<AppendResult> invokeAppend(const ShardAddress& address, const AppendBatch& batch);
  static nlohmann::json record(ActorStream& ops, int64_t p, int64_t seq);
  static nlohmann::json repeated(ActorStream& ops, int64_t p, const nlohmann::json& original);
  nlohmann::json invalidBatch(ActorStream& ops, int64_t p, int64_t& seq);
  Task<void> produce(ActorStream& ops, int64_t p, AppendRecords records, bool invalid);
  Task<Reply> pushOnce(AppendRecords records, std::string& shard);
  Task<void> refusedPush(AppendRecords records);
  Task<std::optional<AppendResult>> tracedPush(const AppendClient& client, AppendBatch& batch, bool faulty,
                                               std::optional<nlohmann::json> context);
  void settleAppend(int64_t p, const nlohmann::json& records, bool invalid, const Reply& reply, const std::string& shard);
  std::string partitionOfShard(const std::string& shard) const;

  LogRun& run_;
  sim::WorldClock clock_;
  sim::StreamRandom random_;
  std::optional<AppendClient> routed_, pinned_, faulty_;
  int64_t sleepingWaits_ = 0;  // timed waits of push deadlines (the SimAsyncEvent counter)
  int64_t calls_ = 0, uncertain_ = 0;
  int64_t pushes_ = 0;  // numbers the pushes for the `app.rte.*` events
  bool pinging_ = false;
};

// ---------------------------------------------------------------------------------------------
// The other roles: each runs until the run ends.

// Consumer group `g` (log_groups.cc).
Task<void> consumerGroup(LogRun& run, int64_t g);
// Poller `k` of leased consumer `c` (log_leasers.cc).
Task<void> leasedPoller(LogRun& run, int64_t c, int64_t k);
// The cold lifecycle mirror (log_mirror.cc).
Task<void> coldMirror(LogRun& run);
// The retirer of partition `run.retiring` (log_retirer.cc): runs until it retired it.
Task<void> partitionRetirer(LogRun& run);
// The read probe (log_probe.cc): once the producers are done, reads every retained offset back;
// after heal, trims every partition once.
Task<void> readProbe(LogRun& run);

}  // namespace durasim::workloads
