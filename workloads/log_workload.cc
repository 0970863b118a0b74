// The log workload: LogPartition objects driven by world tasks in seven roles (log_roles.h) —
// producers pushing batches through routing, a heartbeat pinging through it, consumer groups reading
// by cursor, leased pollers, with cold storage a mirror of the bucket's lifecycle rule, in half of
// the seeds a retirer that removes one drained partition's log, and a read probe that reads every
// retained offset back once the producers are done (option probe=false leaves it out). This file
// has the per-seed configuration drawn (log_config.cc: retention mix, cold or not, maxBatchSize in
// [5, 20], leases with maxParallelism in [2, 4], leaseMs, sometimes maxAttempts with an onPoison;
// one partition without leases; the partition to retire), states it in `workload.config`, and
// wires the phases.
// Drained: producers done, no heartbeat ping in flight, the read probe done, every group and leased
// consumer at nextOffset on each partition that still has its log, the partition to retire retired,
// no runtime work pending. Checked here: what the workload's own calls must answer (LOG-14, LSE-04,
// LSE-11, LSE-16); it feeds the LOG (with SCH-11 for the log's schema), LSE and RTE families, whose
// checkers observe the trace.
#include "workloads/log_workload.h"

#include <map>
#include <optional>

#include "workloads/log_roles.h"
#include "workloads/options.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kDefaultPartitions = 3;
constexpr int64_t kDefaultProducers = 3;
constexpr int64_t kDefaultGroups = 2;
constexpr int64_t kDefaultLeasers = 2;
constexpr int64_t kDefaultOpsPerProducer = 30;


class LogWorkload final : public Workload {
 public:
  explicit LogWorkload(const nlohmann::json& options) {
    reject_unknown_options(options, "log", {"partitions", "producers", "groups", "leasers", "ops", "probe"});
    run_.partitions = positive_option(options, "log", "partitions", kDefaultPartitions);
    run_.producers = positive_option(options, "log", "producers", kDefaultProducers);
    run_.groups = count_option(options, "log", "groups", kDefaultGroups);
    run_.leasers = count_option(options, "log", "leasers", kDefaultLeasers);
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
           run_.runtime->pending().empty() && logConsumersBehind(run_).empty();
  }

  std::vector<std::string> pending() const override {
    std::vector<std::string> items = run_.runtime->pending();
    if (!producersDone())
      items.push_back(std::to_string(run_.producers - run_.counts.producersDone) + " producers still running");
    if (!producers_->heartbeatIdle()) items.push_back("a heartbeat ping in flight");
    if (!retiredAsDrawn()) items.push_back(partitionLabel(partitionName(*run_.retiring)) + " not retired yet");
    if (probe_ && !run_.probed) items.push_back("the read probe has not read every partition back");
    for (const std::string& item : logConsumersBehind(run_)) items.push_back(item);
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
  bool producersDone() const { return run_.counts.producersDone == run_.producers; }
  bool retiredAsDrawn() const { return !run_.retiring || run_.retired; }

  void drawConfig() {
    drawLogConfig(run_, LogDrawPolicy{});
    run_.world->emit("workload.config", logConfigJson(run_));
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
