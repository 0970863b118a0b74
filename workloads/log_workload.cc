// The log workload: LogPartition objects driven by world tasks.
//  - Producers push batches through a RoutingClient (default selection over "shard-0".."shard-(w-1)",
//    shard i served by partition p(i mod partitions), a push deadline). Record keys are
//    "<producer>-<seq>". An uncertain outcome (RPC failure, lost reply, RoutingTimeoutError) is
//    retried with the same batch and keys, pinned to the shard the first attempt reached, until a
//    definite answer. Some batches are invalid (empty, oversized, an empty key) and must be rejected.
//  - Consumer groups read from their cursor, handle the page (`app.consume`), then commit its
//    nextOffset; after a LogTruncatedError (`app.consume.truncated`) a group resumes at
//    bounds().oldestOffset when its offset was trimmed, else (a lost cold segment) at the next one.
//  - Leased consumers run maxParallelism + 1 pollers under one consumer name; each lease is acked,
//    nacked or left to expire (`app.lease.outcome`); records whose seq is a multiple of
//    kPoisonEvery are always nacked before heal, so maxAttempts is reached. Some settlements use a
//    wrong consumer name or an already settled batch id and must get LogLeaseError; one partition has
//    no leases option and its lease calls must get TypeError (LSE-16).
//  - With cold storage, the bucket's lifecycle rule expires segments and a task mirrors each expiry
//    with forgetColdBefore (`app.cold.lifecycle`).
// Per seed it draws the partitions' options (retention mix, cold or not, maxBatchSize in [5, 20],
// leases with maxParallelism in [2, 4], leaseMs, sometimes maxAttempts with an onPoison).
// Drained: producers done, every group and leased consumer at nextOffset on each partition, no
// runtime work pending. Checked here: what the workload's own calls must answer (LOG-14, LSE-04,
// LSE-11, LSE-16); it feeds the LOG, LSE and RTE families, whose checkers observe the trace.
#include "workloads/log_workload.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "engine/errors.h"
#include "engine/routing.h"
#include "sim/async_event.h"
#include "sim/object_runtime.h"
#include "sim/stream_random.h"
#include "workloads/client.h"
#include "workloads/log_partition.h"
#include "workloads/options.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kDefaultPartitions = 3;
constexpr int64_t kDefaultProducers = 3;
constexpr int64_t kDefaultGroups = 2;
constexpr int64_t kDefaultLeasers = 2;
constexpr int64_t kDefaultOpsPerProducer = 30;

constexpr int64_t kMaxThinkMs = 4'000;
constexpr int64_t kMaxPadBytes = 200;
constexpr uint32_t kInvalidBatchPpm = 60'000;   // 6% of batches are invalid
constexpr uint32_t kWrongConsumerPpm = 50'000;  // a settlement first tried under a wrong name
constexpr uint32_t kStaleAckPpm = 50'000;       // an acked batch id acked again
constexpr uint32_t kDisabledProbePpm = 30'000;  // a lease call to the partition without leases
constexpr int64_t kPoisonEvery = 23;            // a lease holding a record with seq % 23 == 0 is nacked
constexpr int64_t kPoisonAttempts = 5;          // ... on its first 5 attempts before heal (maxAttempts <= 4)
constexpr Backoff kPushBackoff{500, 30'000};
constexpr int64_t kMinPollMs = 200, kMaxIdleMs = 30'000;
constexpr int64_t kSlowPollMinMs = 2'000, kSlowPollMaxMs = 45'000;  // consumers after the first fall behind
constexpr int64_t kMirrorIntervalMs = 15'000;
constexpr int64_t kPushTimeoutMinMs = 3'000, kPushTimeoutMaxMs = 15'000;
constexpr int64_t kSoftBacklogMin = 5, kSoftBacklogMax = 60;

// LogPartition answers in the library envelope; a refused call carries no answer of the partition,
// so the workload treats it as uncertain.
constexpr CallStyle kPartitionCallStyle{true, false};

// One producer batch as the routing client carries it; `shard` is filled by the invoke that runs.
struct AppendBatch {
  nlohmann::json records;
  std::shared_ptr<std::string> shard = std::make_shared<std::string>();
};
using AppendResult = EnqueueResult<std::vector<int64_t>>;
using AppendClient = RoutingClient<AppendBatch, std::vector<int64_t>>;

class LogWorkload final : public Workload {
 public:
  explicit LogWorkload(const nlohmann::json& options) {
    reject_unknown_options(options, "log", {"partitions", "producers", "groups", "leasers", "ops"});
    partitions_ = positive_option(options, "log", "partitions", kDefaultPartitions);
    producers_ = positive_option(options, "log", "producers", kDefaultProducers);
    groups_ = count_option(options, "groups", kDefaultGroups);
    leasers_ = count_option(options, "leasers", kDefaultLeasers);
    ops_ = positive_option(options, "log", "ops", kDefaultOpsPerProducer);
  }

  void setup(sim::World& world, faults::FaultPlan& faults) override {
    world_ = &world;
    stream_ = world.random().stream("workload.log");
    drawConfig();
    sim::RuntimeOptions options;
    // Expire every segment as soon as the rule allows; the store then removes each one within
    // its lifecycle lag, so some expire during a run and are mirrored with forgetColdBefore.
    if (base_.cold) options.bucket_rules[kLogBucket] = {sim::LifecycleRule{kColdPrefix, 0}};
    runtime_ = std::make_unique<sim::ObjectRuntime>(world, faults, options);
    const std::map<std::string, LogPartitionConfig> configs = configs_;
    runtime_->define_class(LogPartition::kClass, [configs](ObjectContext& ctx) {
      return std::make_unique<LogPartition>(ctx, configs.at(ctx.id.second));
    });
    client_ = std::make_unique<ObjectClient>(world, runtime_->client(LogPartition::kClass), kPartitionCallStyle);
    clock_ = std::make_unique<sim::WorldClock>(world);
    random_ = std::make_unique<sim::StreamRandom>(world.random(), world.random().stream("workload.log.routing"));
    buildClients();
  }

  void start(sim::World& world) override {
    for (int64_t p = 0; p < producers_; ++p) world.tasks().spawn("log.producer." + std::to_string(p), producer(p));
    for (int64_t g = 0; g < groups_; ++g) world.tasks().spawn("log.group." + std::to_string(g), group(g));
    for (int64_t c = 0; c < leasers_; ++c)
      for (int64_t k = 0; k < pollersPerLeaser(); ++k)
        world.tasks().spawn("log.leaser." + std::to_string(c) + "." + std::to_string(k), poller(c, k));
    if (base_.cold) world.tasks().spawn("log.cold.mirror", mirror());
  }

  void heal(sim::World&) override {
    runtime_->heal();
    healed_ = true;
  }

  bool drained() const override { return producersDone_ == producers_ && runtime_->pending().empty() && behind().empty(); }

  std::vector<std::string> pending() const override {
    std::vector<std::string> items = runtime_->pending();
    if (producersDone_ < producers_) items.push_back(std::to_string(producers_ - producersDone_) + " producers still running");
    for (const std::string& item : behind()) items.push_back(item);
    return items;
  }

  void check(sim::World&, sim::Tallies& tallies) override {
    tallies.merge(expectations_);
  }

  nlohmann::json metrics() const override {
    int64_t incarnations = 0;
    for (const sim::ObjectStatus& status : runtime_->status()) incarnations += status.incarnations;
    return {{"calls", client_->calls() + calls_}, {"uncertain", client_->uncertain() + uncertain_},
            {"appended", appended_}, {"rejected", rejected_},
            {"consumed", consumed_}, {"leased", leased_},           {"truncations", truncations_},
            {"forgets", forgets_},   {"incarnations", incarnations}, {"maxBatchSize", base_.maxBatchSize},
            {"cold", base_.cold},    {"noLeases", partitionName(noLeases_)}};
  }

 private:
  static int64_t count_option(const nlohmann::json& options, const char* key, int64_t fallback) {
    if (!options.contains(key)) return fallback;
    const nlohmann::json& value = options.at(key);
    if (!value.is_number_integer() || value.get<int64_t>() < 0)
      throw std::invalid_argument(std::string("log workload option '") + key + "' must be a non-negative integer");
    return value.get<int64_t>();
  }

  // "<prefix><i>" (appended rather than concatenated, which g++ 12 misreports under -Wrestrict).
  static std::string numbered(const char* prefix, int64_t i) {
    std::string text = prefix;
    text += std::to_string(i);
    return text;
  }
  static std::string partitionName(int64_t i) { return numbered("p", i); }
  static std::string label(const std::string& name) { return std::string(LogPartition::kClass) + "/" + name; }
  static std::string producerName(int64_t p) { return numbered("P", p); }
  static std::string groupName(int64_t g) { return numbered("g", g); }
  static std::string leaserName(int64_t c) { return numbered("L", c); }
  int64_t draw(int64_t lo, int64_t hi) { return world_->random().between(stream_, lo, hi); }
  bool chance(uint32_t ppm) { return world_->random().chance(stream_, ppm); }
  int64_t pollersPerLeaser() const { return base_.leases->maxParallelism + 1; }
  bool leased(int64_t partition) const { return partition != noLeases_; }

  // ---------------------------------------------------------------------------------------------
  // Configuration

  void drawConfig() {
    base_.scheduler.alarmMinDelayMs = draw(kMinAlarmMinDelayMs, kMaxAlarmMinDelayMs);
    base_.maxBatchSize = draw(5, 20);
    if (chance(500'000)) base_.retention.maxAgeMs = draw(20'000, 180'000);
    if (chance(500'000)) base_.retention.maxRecords = draw(20, 150);
    if (chance(500'000)) base_.retention.maxBytes = draw(2'000, 20'000);
    if (!base_.retention.maxAgeMs && !base_.retention.maxBytes) base_.retention.maxRecords = draw(20, 150);
    base_.cold = chance(750'000);
    base_.retentionSweepMs = draw(5'000, 30'000);
    PartitionLeasePlan leases;
    leases.maxParallelism = draw(2, 4);
    leases.leaseMs = draw(2'000, 20'000);
    if (chance(500'000)) {
      leases.maxAttempts = draw(2, 4);
      leases.onPoison = chance(700'000);
      leases.poisonThrows = leases.onPoison && chance(500'000);
    }
    base_.leases = leases;
    noLeases_ = draw(0, partitions_ - 1);
    for (int64_t i = 0; i < partitions_; ++i) {
      LogPartitionConfig config = base_;
      if (!leased(i)) config.leases.reset();
      configs_[partitionName(i)] = config;
    }
    pushTimeoutMs_ = draw(kPushTimeoutMinMs, kPushTimeoutMaxMs);
    softBacklogLimit_ = draw(kSoftBacklogMin, kSoftBacklogMax);
    world_->emit("workload.config", configJson());
  }

  nlohmann::json configJson() const {
    const LogRetention& r = base_.retention;
    const auto opt = [](const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); };
    const PartitionLeasePlan& l = *base_.leases;
    return {{"maxBatchSize", base_.maxBatchSize},
            {"retention", {{"maxAgeMs", opt(r.maxAgeMs)}, {"maxRecords", opt(r.maxRecords)}, {"maxBytes", opt(r.maxBytes)}}},
            {"cold", base_.cold},
            {"retentionSweepMs", base_.retentionSweepMs},
            {"alarmMinDelayMs", base_.scheduler.alarmMinDelayMs},
            {"leases", {{"maxParallelism", l.maxParallelism}, {"leaseMs", l.leaseMs}, {"maxAttempts", opt(l.maxAttempts)},
                        {"onPoison", l.onPoison}, {"poisonThrows", l.poisonThrows}}},
            {"noLeases", label(partitionName(noLeases_))},
            {"pushTimeoutMs", pushTimeoutMs_},
            {"softBacklogLimit", softBacklogLimit_}};
  }

  // ---------------------------------------------------------------------------------------------
  // Producers

  void buildClients() {
    AppendClient::Options options;
    options.invoke = [this](const ShardAddress& address, const AppendBatch& batch) { return invokeAppend(address, batch); };
    options.probe = [this](std::string_view ev, nlohmann::json fields) { fields["client"] = "routed"; world_->emit(std::string(ev), std::move(fields)); };
    options.softBacklogLimit = softBacklogLimit_;
    options.makeEvent = [this] { return std::make_shared<sim::SimAsyncEvent>(world_->executor(), sleepingWaits_); };
    options.background = [this](Task<void> work) { world_->tasks().spawn("log.append.invoke", std::move(work)); };
    routed_.emplace(AppendClient(*clock_, *random_, options).withTimeout(pushTimeoutMs_));
    options.sharding = [](const AppendBatch&, const std::optional<nlohmann::json>& context, const Observations&) {
      return ShardAddress{context->at("shard").get<std::string>(), std::nullopt};
    };
    options.probe = [this](std::string_view ev, nlohmann::json fields) { fields["client"] = "pinned"; world_->emit(std::string(ev), std::move(fields)); };
    pinned_.emplace(AppendClient(*clock_, *random_, options).withTimeout(pushTimeoutMs_));
  }

  // "shard-<i>" is served by partition p(i mod partitions).
  std::string partitionOfShard(const std::string& shard) const {
    const int64_t index = std::stoll(shard.substr(std::string(kRoutingShardPrefix).size()));
    return partitionName(index % partitions_);
  }

  Task<AppendResult> invokeAppend(const ShardAddress& address, const AppendBatch& batch) {
    *batch.shard = address.shard;
    const std::string name = partitionOfShard(address.shard);
    Stub stub = runtime_->client(LogPartition::kClass).get(name);
    const std::string method = "append";
    const nlohmann::json args = {{"records", batch.records}};
    ++calls_;
    Task<nlohmann::json> calling = stub.call(method, args);
    const nlohmann::json reply = co_await calling;
    co_return appendResultFromJson(reply);
  }

  nlohmann::json record(int64_t p, int64_t seq) {
    const std::string pad(static_cast<std::size_t>(draw(0, kMaxPadBytes)), static_cast<char>('a' + seq % 26));
    return {{"key", producerName(p) + "-" + std::to_string(seq)},
            {"body", {{"producer", p}, {"seq", seq}, {"pad", pad}}}};
  }

  // A batch the log must reject: empty, one record over maxBatchSize, or a record with an empty key.
  nlohmann::json invalidBatch(int64_t p, int64_t& seq) {
    nlohmann::json records = nlohmann::json::array();
    switch (draw(0, 2)) {
      case 0:
        break;
      case 1:
        for (int64_t i = 0; i <= base_.maxBatchSize; ++i) records.push_back(record(p, seq++));
        break;
      default:
        records.push_back(record(p, seq++));
        records.push_back({{"key", ""}, {"body", {{"producer", p}, {"seq", -1}}}});
        break;
    }
    return records;
  }

  Task<void> producer(int64_t p) {
    int64_t seq = 0;
    for (int64_t i = 0; i < ops_; ++i) {
      co_await world_->sleep_for(draw(0, kMaxThinkMs));
      const bool invalid = chance(kInvalidBatchPpm);
      nlohmann::json records = nlohmann::json::array();
      if (invalid) {
        records = invalidBatch(p, seq);
      } else {
        const int64_t size = draw(1, base_.maxBatchSize);
        for (int64_t r = 0; r < size; ++r) records.push_back(record(p, seq++));
      }
      Task<void> producing = produce(p, records, invalid);
      co_await producing;
    }
    ++producersDone_;
  }

  // Pushes until a definite answer; retries go to the shard the first attempt reached.
  Task<void> produce(int64_t p, const nlohmann::json& records, bool invalid) {
    std::string shard;  // empty until an attempt reached one
    const std::function<Task<Reply>()> attempt = [this, &records, &shard] { return pushOnce(records, shard); };
    Task<Settled> pushing = retryUntilDefinite(*world_, kPushBackoff, attempt);
    const Settled settled = co_await pushing;
    settleAppend(p, records, invalid, settled.reply, shard);
  }

  // One push of `records`: routed while `shard` is empty, else pinned to it; `shard` becomes the
  // shard this push reached, if any.
  Task<Reply> pushOnce(const nlohmann::json& records, std::string& shard) {
    AppendBatch batch{records};
    Reply reply;
    try {
      const nlohmann::json context = {{"shard", shard}};
      Task<AppendResult> pushing = shard.empty() ? routed_->push(batch) : pinned_->push(batch, context);
      const AppendResult result = co_await pushing;
      reply = classifyEnqueue(result);
    } catch (const RpcError&) {
    } catch (const RoutingTimeoutError&) {
    }
    if (!batch.shard->empty()) shard = *batch.shard;
    if (!reply.definite()) ++uncertain_;
    co_return reply;
  }

  void settleAppend(int64_t p, const nlohmann::json& records, bool invalid, const Reply& reply, const std::string& shard) {
    if (invalid) {
      expectations_.check("LOG-14", !reply.ok(), [&] {
        return "an invalid batch of " + std::to_string(records.size()) + " records was accepted by " + shard;
      });
      return;
    }
    if (!reply.ok()) {
      ++rejected_;
      return;
    }
    nlohmann::json keys = nlohmann::json::array();
    for (const nlohmann::json& r : records) keys.push_back(r.at("key"));
    appended_ += static_cast<int64_t>(records.size());
    world_->emit("app.produce", {{"partition", label(partitionOfShard(shard))},
                                 {"producer", producerName(p)},
                                 {"keys", keys},
                                 {"offsets", reply.value}});
  }

  // ---------------------------------------------------------------------------------------------
  // Consumer groups

  struct GroupPosition {
    std::optional<int64_t> from;       // where the next read starts; unknown after an uncertain call
    std::optional<int64_t> committed;  // the durable cursor as last known
  };

  Task<void> group(int64_t g) {
    std::vector<GroupPosition> positions(static_cast<std::size_t>(partitions_));
    const int64_t pollMs = pollInterval(g);
    int64_t idleMs = pollMs;
    for (;;) {
      bool worked = false;
      for (int64_t i = 0; i < partitions_; ++i) {
        const std::string name = groupName(g);
        Task<bool> consuming = consumeOnce(name, i, positions[static_cast<std::size_t>(i)]);
        worked = co_await consuming || worked;
      }
      idleMs = worked ? pollMs : std::min(std::max(kMaxIdleMs, pollMs), idleMs * 2);
      co_await world_->sleep_for(idleMs);
    }
  }

  // The pause between rounds of the first group (or leased consumer), or of a slower one drawn
  // per consumer so that it falls behind the hot window (cold reads, truncation).
  int64_t pollInterval(int64_t consumer) { return consumer == 0 ? kMinPollMs : draw(kSlowPollMinMs, kSlowPollMaxMs); }

  // One read-handle-commit step of `group` on partition `i`; returns whether it made progress.
  Task<bool> consumeOnce(const std::string& group, int64_t i, GroupPosition& position) {
    const std::string name = partitionName(i);
    if (!position.from) {
      Task<std::optional<int64_t>> locating = startOffset(name, group, position);
      position.from = co_await locating;
      if (!position.from) co_return false;
    }
    const int64_t from = *position.from;
    const nlohmann::json readArgs = {{"from", from}, {"limit", draw(1, 2 * base_.maxBatchSize)}};
    Task<Reply> reading = client_->call(name, "read", readArgs);
    const Reply page = co_await reading;
    if (page.failedWith("LogTruncatedError")) {
      ++truncations_;
      Task<std::optional<int64_t>> resuming = resumeAfterTruncation(name, from);
      const std::optional<int64_t> resume = co_await resuming;
      if (!resume) {
        position.from.reset();
        co_return false;
      }
      world_->emit("app.consume.truncated", {{"partition", label(name)}, {"group", group},
                                             {"requested", page.value.at("requestedOffset")},
                                             {"oldest", page.value.at("oldestOffset")}, {"resume", *resume}});
      position.from = *resume;
      co_return true;
    }
    if (!page.ok()) {
      position.from.reset();
      co_return false;
    }
    const nlohmann::json& records = page.value.at("records");
    const int64_t next = page.value.at("nextOffset").get<int64_t>();
    if (!records.empty()) {
      nlohmann::json offsets = nlohmann::json::array();
      for (const nlohmann::json& r : records) offsets.push_back(r.at("offset"));
      consumed_ += static_cast<int64_t>(records.size());
      world_->emit("app.consume", {{"partition", label(name)}, {"group", group}, {"from", from}, {"offsets", offsets}});
    }
    if (next <= position.committed.value_or(0)) co_return false;
    const nlohmann::json commitArgs = {{"consumer", group}, {"offset", next}};
    Task<Reply> committing = client_->call(name, "commit", commitArgs);
    const Reply committed = co_await committing;
    if (committed.ok()) {
      position.from = next;
      position.committed = next;
    } else {
      position.from.reset();
    }
    co_return true;
  }

  // Where a group goes on after a read of `from` threw LogTruncatedError: to oldestOffset when `from`
  // was trimmed, else (a cold segment holding `from` is lost) to the next offset, so readable
  // segments between the lost one and the hot window are not skipped. nullopt: bounds unknown.
  Task<std::optional<int64_t>> resumeAfterTruncation(const std::string& name, int64_t from) {
    Task<std::optional<int64_t>> asking = oldestOffset(name);
    const std::optional<int64_t> oldest = co_await asking;
    if (!oldest) co_return std::nullopt;
    co_return from < *oldest ? *oldest : from + 1;
  }

  // The partition's bounds().oldestOffset, or nullopt when the call's outcome is uncertain.
  Task<std::optional<int64_t>> oldestOffset(const std::string& name) {
    const nlohmann::json none = nlohmann::json::object();
    Task<Reply> bounding = client_->call(name, "bounds", none);
    const Reply bounds = co_await bounding;
    if (!bounds.ok()) co_return std::nullopt;
    co_return bounds.value.at("oldestOffset").get<int64_t>();
  }

  // The group's cursor, or the oldest readable offset for a group that never committed.
  Task<std::optional<int64_t>> startOffset(const std::string& name, const std::string& group, GroupPosition& position) {
    const nlohmann::json args = {{"consumer", group}};
    Task<Reply> asking = client_->call(name, "cursor", args);
    const Reply cursor = co_await asking;
    if (!cursor.ok()) co_return std::nullopt;
    if (!cursor.value.is_null()) {
      position.committed = cursor.value.get<int64_t>();
      co_return position.committed;
    }
    Task<std::optional<int64_t>> locating = oldestOffset(name);
    co_return co_await locating;
  }

  // ---------------------------------------------------------------------------------------------
  // Leased consumers

  enum class Outcome { ack, nack, stall };

  // One of the pollers sharing consumer leaserName(c), rotating over the partitions with leases.
  Task<void> poller(int64_t c, int64_t k) {
    const std::string consumer = leaserName(c);
    const int64_t pollMs = pollInterval(c);
    int64_t turn = k, idleMs = pollMs;
    for (;;) {
      if (chance(kDisabledProbePpm)) {
        Task<void> probing = probeDisabled(consumer);
        co_await probing;
      }
      const int64_t i = turn++ % partitions_;
      bool worked = false;
      if (leased(i)) {
        const std::string name = partitionName(i);
        Task<bool> leasing = leaseOnce(consumer, name);
        worked = co_await leasing;
      }
      idleMs = worked ? pollMs : std::min(std::max(kMaxIdleMs, pollMs), idleMs * 2);
      co_await world_->sleep_for(idleMs);
    }
  }

  // LSE-16: a lease call to the partition without the leases option throws TypeError.
  Task<void> probeDisabled(const std::string& consumer) {
    const nlohmann::json args = {{"consumer", consumer}};
    const std::string name = partitionName(noLeases_);
    Task<Reply> leasing = client_->call(name, "lease", args);
    const Reply reply = co_await leasing;
    if (!reply.definite()) co_return;
    expectations_.check("LSE-16", reply.failedWith("TypeError"), [&] {
      return "lease on " + label(name) + " (no leases option) answered " + reply.label();
    });
  }

  Task<bool> leaseOnce(const std::string& consumer, const std::string& name) {
    const nlohmann::json args = {{"consumer", consumer}, {"limit", draw(1, base_.maxBatchSize)}};
    Task<Reply> leasing = client_->call(name, "lease", args);
    const Reply reply = co_await leasing;
    if (reply.failedWith("LogTruncatedError")) ++truncations_;  // the next lease carries on (or stays blocked on a lost segment)
    if (!reply.ok() || reply.value.is_null()) co_return false;
    ++leased_;
    const nlohmann::json& lease = reply.value;
    const std::string batchId = lease.at("batchId").get<std::string>();
    if (chance(kWrongConsumerPpm)) {
      const std::string wrongConsumer = consumer + "-other";
      const std::string invariant = "LSE-11";
      Task<void> probing = settleExpectingRefusal(name, wrongConsumer, batchId, lease, invariant);
      co_await probing;
    }
    const Outcome outcome = chooseOutcome(lease);
    if (outcome == Outcome::stall) {
      emitOutcome(name, consumer, lease, "stall", "ok");
      co_return true;
    }
    const std::string method = outcome == Outcome::ack ? "ack" : "nack";
    const nlohmann::json settleArgs = {{"consumer", consumer}, {"batchId", batchId}};
    Task<Reply> settling = client_->call(name, method, settleArgs);
    const Reply settled = co_await settling;
    emitOutcome(name, consumer, lease, method, settled.label());
    if (settled.ok() && chance(kStaleAckPpm)) {
      const std::string invariant = "LSE-04";
      Task<void> probing = settleExpectingRefusal(name, consumer, batchId, lease, invariant);
      co_await probing;
    }
    co_return true;
  }

  // An ack that must be refused with LogLeaseError: under another consumer's name (LSE-11), or of a
  // batch id already settled (LSE-04).
  Task<void> settleExpectingRefusal(const std::string& name, const std::string& consumer, const std::string& batchId,
                                    const nlohmann::json& lease, const std::string& invariant) {
    const nlohmann::json args = {{"consumer", consumer}, {"batchId", batchId}};
    Task<Reply> settling = client_->call(name, "ack", args);
    const Reply reply = co_await settling;
    emitOutcome(name, consumer, lease, "ack", reply.label());
    if (!reply.definite()) co_return;
    expectations_.check(invariant, reply.failedWith("LogLeaseError"), [&] {
      return "ack of " + batchId + " as " + consumer + " on " + label(name) + " answered " + reply.label();
    });
  }

  // Before heal: nack a lease holding a poison record on its first attempts (so maxAttempts is
  // reached), else ack 70%, nack 15%, stall 15%. After heal every lease is acked, so the consumers
  // drain (LSE-15).
  Outcome chooseOutcome(const nlohmann::json& lease) {
    if (healed_) return Outcome::ack;
    if (lease.at("attempt").get<int64_t>() <= kPoisonAttempts)
      for (const nlohmann::json& r : lease.at("records"))
        if (r.at("body").at("seq").get<int64_t>() % kPoisonEvery == 0) return Outcome::nack;
    const int64_t roll = draw(0, 99);
    return roll < 70 ? Outcome::ack : roll < 85 ? Outcome::nack : Outcome::stall;
  }

  void emitOutcome(const std::string& name, const std::string& consumer, const nlohmann::json& lease, const std::string& outcome,
                   const std::string& result) {
    world_->emit("app.lease.outcome", {{"partition", label(name)},
                                       {"consumer", consumer},
                                       {"batchId", lease.at("batchId")},
                                       {"first", lease.at("firstOffset")},
                                       {"last", lease.at("lastOffset")},
                                       {"outcome", outcome},
                                       {"result", result}});
  }

  // ---------------------------------------------------------------------------------------------
  // Cold lifecycle mirror

  // Mirrors the bucket's lifecycle rule: each segment the rule removed is forgotten by its
  // partition (forgetColdBefore(last + 1)), retried until the partition answers.
  Task<void> mirror() {
    std::size_t seen = 0;
    std::map<std::string, int64_t> wanted, forgotten;  // partition -> forgetColdBefore offset
    for (;;) {
      co_await world_->sleep_for(kMirrorIntervalMs);
      sim::ColdStore& store = runtime_->cold_store();
      store.expire(world_->now());
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
        Task<Reply> forgetting = client_->call(name, "forgetColdBefore", args);
        const Reply reply = co_await forgetting;
        if (!reply.ok()) continue;
        ++forgets_;
        forgotten[name] = offset;
        world_->emit("app.cold.lifecycle", {{"partition", label(name)}, {"offset", offset}});
      }
    }
  }

  // ---------------------------------------------------------------------------------------------
  // Draining

  // Consumers not yet at nextOffset, read from the stores once no runtime work is pending (every
  // commit confirmed, so the stores hold exactly their durable state).
  std::vector<std::string> behind() const {
    std::vector<std::string> items;
    const sim::StoreView& stores = world_->stores();
    for (int64_t i = 0; i < partitions_; ++i) {
      const std::string name = partitionName(i);
      const std::string object = label(name);
      if (!stores.has_table(object, "durability_log_seq")) continue;  // never constructed: nothing was appended
      const int64_t next = stores.live(object, "SELECT next_offset AS n FROM durability_log_seq WHERE id = 1").one().int64("n");
      std::map<std::string, int64_t> cursors;
      for (const SqlRow& row : stores.live(object, "SELECT consumer, \"offset\" FROM durability_log_cursors").toVector())
        cursors[row.text("consumer")] = row.int64("offset");
      const auto cursor = [&](const std::string& consumer) { return cursors.count(consumer) ? cursors.at(consumer) : 0; };
      for (int64_t g = 0; g < groups_; ++g)
        if (cursor(groupName(g)) != next) items.push_back(lagging(name, groupName(g), cursor(groupName(g)), next));
      if (!leased(i)) continue;
      for (int64_t c = 0; c < leasers_; ++c) {
        const std::string consumer = leaserName(c);
        if (cursor(consumer) != next)
          items.push_back(lagging(name, consumer, cursor(consumer), next));
      }
    }
    return items;
  }

  static std::string lagging(const std::string& name, const std::string& consumer, int64_t at, int64_t next) {
    return label(name) + ": " + consumer + " at " + std::to_string(at) + ", nextOffset " + std::to_string(next);
  }

  int64_t partitions_ = 0, producers_ = 0, groups_ = 0, leasers_ = 0, ops_ = 0;
  sim::World* world_ = nullptr;
  sim::StreamId stream_;
  LogPartitionConfig base_;
  std::map<std::string, LogPartitionConfig> configs_;
  int64_t noLeases_ = 0;
  int64_t pushTimeoutMs_ = 0, softBacklogLimit_ = 0;
  std::unique_ptr<sim::ObjectRuntime> runtime_;
  std::unique_ptr<ObjectClient> client_;  // calls to the partitions
  std::unique_ptr<sim::WorldClock> clock_;
  std::unique_ptr<sim::StreamRandom> random_;
  std::optional<AppendClient> routed_, pinned_;
  int64_t sleepingWaits_ = 0;  // timed waits of push deadlines (the SimAsyncEvent counter)
  sim::Tallies expectations_;
  bool healed_ = false;
  int64_t producersDone_ = 0;
  int64_t rejected_ = 0;  // valid batches refused (never expected)
  int64_t calls_ = 0, uncertain_ = 0;  // appends invoked by the routing clients, and uncertain pushes
  int64_t appended_ = 0, consumed_ = 0, leased_ = 0, truncations_ = 0, forgets_ = 0;
};

}  // namespace

WorkloadInfo log_workload_info() {
  return {"log", "LogPartition objects: a retained log fed through routing, read by cursor groups and leased pollers, under faults",
          [](const nlohmann::json& options) -> std::unique_ptr<Workload> { return std::make_unique<LogWorkload>(options); },
          {{"RT", ""}, {"LOG", LogPartition::kClass}, {"LSE", LogPartition::kClass}, {"RTE", ""}}};
}

}  // namespace durasim::workloads
