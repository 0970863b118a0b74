// The log workload: LogPartition objects driven by world tasks in seven roles (log_roles.h) —
// producers pushing batches through routing, a heartbeat pinging through it, consumer groups reading
// by cursor, leased pollers, with cold storage a mirror of the bucket's lifecycle rule, in half of
// the seeds a retirer that removes one drained partition's log, and a read probe that reads every
// retained offset back once the producers are done (option probe=false leaves it out). This file
// draws the per-seed configuration (retention mix, cold or not, maxBatchSize in [5, 20], leases with
// maxParallelism in [2, 4], leaseMs, sometimes maxAttempts with an onPoison; one partition without
// leases; the partition to retire), states it in `workload.config`, and wires the phases.
// Drained: producers done, no heartbeat ping in flight, the read probe done, every group and leased
// consumer at nextOffset on each partition that still has its log, the partition to retire retired,
// no runtime work pending. Checked here: what the workload's own calls must answer (LOG-14, LSE-04,
// LSE-11, LSE-16); it feeds the LOG (with SCH-11 for the log's schema), LSE and RTE families, whose
// checkers observe the trace.
#include "workloads/log_workload.h"

#include <map>
#include <optional>

#include "engine/log_schema.h"
#include "workloads/log_roles.h"
#include "workloads/options.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kDefaultPartitions = 3;
constexpr int64_t kDefaultProducers = 3;
constexpr int64_t kDefaultGroups = 2;
constexpr int64_t kDefaultLeasers = 2;
constexpr int64_t kDefaultOpsPerProducer = 30;

constexpr int64_t kPushTimeoutMinMs = 3'000, kPushTimeoutMaxMs = 15'000;
constexpr int64_t kSoftBacklogMin = 5, kSoftBacklogMax = 60;
constexpr uint32_t kRetirePpm = 500'000;  // seeds that retire a partition with leases

class LogWorkload final : public Workload {
 public:
  explicit LogWorkload(const nlohmann::json& options) {
    reject_unknown_options(options, "log", {"partitions", "producers", "groups", "leasers", "ops", "probe"});
    run_.partitions = positive_option(options, "log", "partitions", kDefaultPartitions);
    run_.producers = positive_option(options, "log", "producers", kDefaultProducers);
    run_.groups = count_option(options, "groups", kDefaultGroups);
    run_.leasers = count_option(options, "leasers", kDefaultLeasers);
    run_.ops = positive_option(options, "log", "ops", kDefaultOpsPerProducer);
    // probe=false: no read probe (to see what the campaign catches without it)
    probe_ = !options.contains("probe") || options.at("probe") != false;
  }

  void setup(sim::World& world, faults::FaultPlan& faults) override {
    run_.world = &world;
    run_.stream = world.random().stream("workload.log");
    drawConfig();
    sim::RuntimeOptions options;
    // Expire every segment as soon as the rule allows; the store then removes each one within
    // its lifecycle lag, so some expire during a run and are mirrored with forgetColdBefore.
    if (run_.base.cold) options.bucket_rules[kLogBucket] = {sim::LifecycleRule{kColdPrefix, 0}};
    run_.runtime = std::make_unique<sim::ObjectRuntime>(world, faults, options);
    const std::map<std::string, LogPartitionConfig> configs = run_.configs;
    run_.runtime->define_class(LogPartition::kClass, [configs](ObjectContext& ctx) {
      return std::make_unique<LogPartition>(ctx, configs.at(ctx.id.second));
    });
    run_.client = std::make_unique<ObjectClient>(world, run_.runtime->client(LogPartition::kClass), kPartitionCallStyle);
    producers_ = std::make_unique<LogProducers>(run_);
  }

  void start(sim::World& world) override {
    for (int64_t p = 0; p < run_.producers; ++p)
      world.tasks().spawn("log.producer." + std::to_string(p), producers_->producer(p));
    for (int64_t g = 0; g < run_.groups; ++g) world.tasks().spawn("log.group." + std::to_string(g), consumerGroup(run_, g));
    for (int64_t c = 0; c < run_.leasers; ++c)
      for (int64_t k = 0; k < run_.pollersPerLeaser(); ++k)
        world.tasks().spawn("log.leaser." + std::to_string(c) + "." + std::to_string(k), leasedPoller(run_, c, k));
    if (run_.base.cold) world.tasks().spawn("log.cold.mirror", coldMirror(run_));
    if (run_.retiring) world.tasks().spawn("log.retirer", partitionRetirer(run_));
    world.tasks().spawn("log.heartbeat", producers_->heartbeat());
    if (probe_) world.tasks().spawn("log.read.probe", readProbe(run_));
  }

  void heal(sim::World&) override {
    run_.runtime->heal();
    run_.healed = true;
  }

  bool drained() const override {
    return producersDone() && producers_->heartbeatIdle() && retiredAsDrawn() && (run_.probed || !probe_) &&
           run_.runtime->pending().empty() && behind().empty();
  }

  std::vector<std::string> pending() const override {
    std::vector<std::string> items = run_.runtime->pending();
    if (!producersDone())
      items.push_back(std::to_string(run_.producers - run_.counts.producersDone) + " producers still running");
    if (!producers_->heartbeatIdle()) items.push_back("a heartbeat ping in flight");
    if (!retiredAsDrawn()) items.push_back(partitionLabel(partitionName(*run_.retiring)) + " not retired yet");
    if (probe_ && !run_.probed) items.push_back("the read probe has not read every partition back");
    for (const std::string& item : behind()) items.push_back(item);
    return items;
  }

  void check(sim::World&, sim::Tallies& tallies) override { tallies.merge(run_.expectations); }

  nlohmann::json metrics() const override {
    int64_t incarnations = 0;
    for (const sim::ObjectStatus& status : run_.runtime->status()) incarnations += status.incarnations;
    const LogCounts& counts = run_.counts;
    return {{"calls", run_.client->calls() + producers_->calls()},
            {"uncertain", run_.client->uncertain() + producers_->uncertain()},
            {"appended", counts.appended},
            {"rejected", counts.rejected},
            {"consumed", counts.consumed},
            {"leased", counts.leased},
            {"truncations", counts.truncations},
            {"forgets", counts.forgets},
            {"incarnations", incarnations},
            {"maxBatchSize", run_.base.maxBatchSize},
            {"cold", run_.base.cold},
            {"noLeases", partitionName(run_.noLeases)},
            {"retired", run_.retired ? nlohmann::json(partitionName(*run_.retiring)) : nlohmann::json()}};
  }

 private:
  static int64_t count_option(const nlohmann::json& options, const char* key, int64_t fallback) {
    if (!options.contains(key)) return fallback;
    const nlohmann::json& value = options.at(key);
    if (!value.is_number_integer() || value.get<int64_t>() < 0)
      throw std::invalid_argument(std::string("log workload option '") + key + "' must be a non-negative integer");
    return value.get<int64_t>();
  }

  bool producersDone() const { return run_.counts.producersDone == run_.producers; }
  bool retiredAsDrawn() const { return !run_.retiring || run_.retired; }

  void drawConfig() {
    LogPartitionConfig& base = run_.base;
    base.scheduler.alarmMinDelayMs = run_.draw(kMinAlarmMinDelayMs, kMaxAlarmMinDelayMs);
    base.maxBatchSize = run_.draw(5, 20);
    if (run_.chance(500'000)) base.retention.maxAgeMs = run_.draw(20'000, 180'000);
    if (run_.chance(500'000)) base.retention.maxRecords = run_.draw(20, 150);
    if (run_.chance(500'000)) base.retention.maxBytes = run_.draw(2'000, 20'000);
    if (!base.retention.maxAgeMs && !base.retention.maxBytes) base.retention.maxRecords = run_.draw(20, 150);
    base.cold = run_.chance(750'000);
    base.retentionSweepMs = run_.draw(5'000, 30'000);
    PartitionLeasePlan leases;
    leases.maxParallelism = run_.draw(2, 4);
    leases.leaseMs = run_.draw(2'000, 20'000);
    if (run_.chance(500'000)) {
      leases.maxAttempts = run_.draw(2, 4);
      leases.onPoison = run_.chance(700'000);
      leases.poisonThrows = leases.onPoison && run_.chance(500'000);
    }
    base.leases = leases;
    run_.noLeases = run_.draw(0, run_.partitions - 1);
    for (int64_t i = 0; i < run_.partitions; ++i) {
      LogPartitionConfig config = base;
      if (!run_.leased(i)) config.leases.reset();
      run_.configs[partitionName(i)] = config;
    }
    run_.pushTimeoutMs = run_.draw(kPushTimeoutMinMs, kPushTimeoutMaxMs);
    run_.softBacklogLimit = run_.draw(kSoftBacklogMin, kSoftBacklogMax);
    if (run_.partitions > 1 && run_.chance(kRetirePpm)) {
      const int64_t i = run_.draw(0, run_.partitions - 2);  // among the partitions with leases
      run_.retiring = i < run_.noLeases ? i : i + 1;
    }
    run_.world->emit("workload.config", configJson());
  }

  nlohmann::json configJson() const {
    const LogPartitionConfig& base = run_.base;
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
            {"noLeases", partitionLabel(partitionName(run_.noLeases))},
            {"retiring", run_.retiring ? nlohmann::json(partitionLabel(partitionName(*run_.retiring))) : nlohmann::json()},
            {"pushTimeoutMs", run_.pushTimeoutMs},
            {"softBacklogLimit", run_.softBacklogLimit}};
  }

  // Consumers not yet at nextOffset, read from the stores once no runtime work is pending (every
  // commit confirmed, so the stores hold exactly their durable state). A retired partition has no
  // log tables and no consumers.
  std::vector<std::string> behind() const {
    std::vector<std::string> items;
    const sim::StoreView& stores = run_.world->stores();
    for (int64_t i = 0; i < run_.partitions; ++i) {
      const std::string name = partitionName(i);
      const std::string object = partitionLabel(name);
      if (!stores.has_table(object, DURASIM_LOG_SEQ)) continue;  // never constructed: nothing was appended
      const int64_t next = stores.live(object, "SELECT next_offset AS n FROM " DURASIM_LOG_SEQ " WHERE id = 1").one().int64("n");
      std::map<std::string, int64_t> cursors;
      for (const SqlRow& row : stores.live(object, "SELECT consumer, \"offset\" FROM " DURASIM_LOG_CURSORS).toVector())
        cursors[row.text("consumer")] = row.int64("offset");
      const auto cursor = [&](const std::string& consumer) { return cursors.count(consumer) ? cursors.at(consumer) : 0; };
      for (int64_t g = 0; g < run_.groups; ++g)
        if (cursor(groupName(g)) != next) items.push_back(lagging(name, groupName(g), cursor(groupName(g)), next));
      if (!run_.leased(i)) continue;
      for (int64_t c = 0; c < run_.leasers; ++c) {
        const std::string consumer = leaserName(c);
        if (cursor(consumer) != next) items.push_back(lagging(name, consumer, cursor(consumer), next));
      }
    }
    return items;
  }

  static std::string lagging(const std::string& name, const std::string& consumer, int64_t at, int64_t next) {
    return partitionLabel(name) + ": " + consumer + " at " + std::to_string(at) + ", nextOffset " + std::to_string(next);
  }

  LogRun run_;
  bool probe_ = true;
  std::unique_ptr<LogProducers> producers_;
};

}  // namespace

WorkloadInfo log_workload_info() {
  return {"log", "LogPartition objects: a retained log fed through routing, read by cursor groups and leased pollers, under faults",
          [](const nlohmann::json& options) -> std::unique_ptr<Workload> { return std::make_unique<LogWorkload>(options); },
          {{"RT", ""}, {"LOG", LogPartition::kClass}, {"LSE", LogPartition::kClass}, {"RTE", ""}},
          {{"partitions", kDefaultPartitions},
           {"producers", kDefaultProducers},
           {"groups", kDefaultGroups, 0},
           {"leasers", kDefaultLeasers, 0},
           {"ops", kDefaultOpsPerProducer}},
          // Its consumers are clients of the log, not capability handlers the fault plan fails.
          faults::every_fault_but({"workload"})};
}

}  // namespace durasim::workloads
