// The mixed workload: LogPartition objects fed by routed producers, a consumer group forwarding
// every record into a Mailbox, each Mailbox delivering to an Account that applies each record once
// and stages its balance to the outbox (published to the OutboxSink) and emits an event to the Bus,
// whose consumers acknowledge it; leased pollers beside the chain; named alarms where the
// applications have them (the partitions' retention sweep, the mailboxes' tick), all on each
// object's shared scheduler (topology: mixed_run.h). This file draws the per-seed configuration of
// every application on the stream "workload.mixed" (the log's with cold storage always on, no
// retirement and the partition without leases the last, since routing fills p0 first; the
// mailboxes' with a DLQ always; the accounts' with "ledger" alone; the bus consumers'), states each
// in a "workload.config" event naming its class, and wires the phases.
// Drained: producers done, no heartbeat ping in flight, every consumer at nextOffset, no delivery
// row, outbox row or stored alarm left on a mailbox or an account, no retention sweep due, the
// sink's balances summing to the records appended (each record applied once and published), every
// bus consumer caught up, no runtime work pending.
// Checked here: what the log roles' own calls must answer (LOG-14, LSE-04, LSE-11, LSE-16).
#include "workloads/mixed_workload.h"

#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/alarms_schema.h"
#include "engine/outbox_events.h"
#include "sim/object_runtime.h"
#include "workloads/bus_drivers.h"
#include "workloads/fanout_drivers.h"
#include "workloads/mixed_run.h"
#include "workloads/options.h"
#include "workloads/outbox_drivers.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kDefaultPartitions = 2, kDefaultProducers = 2, kDefaultOps = 4, kDefaultLeasers = 1, kDefaultMailboxes = 2;
constexpr int64_t kForwardingGroups = 1;          // g0 forwards; its cursor follows the chain
constexpr int64_t kConsumerHangMarginMs = 5'000;  // a stalled account answers this long past the batch deadline
const char* const kBusConsumers[] = {"audit", "c%1"};
// Refused calls are retried like uncertain ones: the roles act on the objects' own answers only.
constexpr CallStyle kRetriedCallStyle{false, false};

// `config` naming the class whose application it states (object_checker.h, config_of_class).
nlohmann::json stating(nlohmann::json config, const char* className) {
  config["class"] = className;
  return config;
}

class MixedWorkload final : public Workload {
 public:
  explicit MixedWorkload(const nlohmann::json& options) {
    reject_unknown_options(options, "mixed", {"partitions", "producers", "ops", "leasers", "mailboxes"});
    run_.log.name = "mixed";
    run_.log.partitions = positive_option(options, "mixed", "partitions", kDefaultPartitions);
    run_.log.producers = positive_option(options, "mixed", "producers", kDefaultProducers);
    run_.log.ops = positive_option(options, "mixed", "ops", kDefaultOps);
    run_.log.leasers = count_option(options, "mixed", "leasers", kDefaultLeasers);
    run_.log.groups = kForwardingGroups;
    run_.mailboxes = positive_option(options, "mixed", "mailboxes", kDefaultMailboxes);
  }

  void setup(sim::World& world, faults::FaultPlan& faults) override {
    run_.log.world = &world;
    run_.log.stream = world.random().stream("workload.mixed");
    drawConfig();
    run_.log.runtime = std::make_unique<sim::ObjectRuntime>(world, faults);
    defineClasses(faults);
    sim::ObjectRuntime& runtime = *run_.log.runtime;
    run_.log.client = std::make_unique<ObjectClient>(world, runtime.client(LogPartition::kClass), kPartitionCallStyle);
    run_.mailboxClient = std::make_unique<ObjectClient>(world, runtime.client(Mailbox::kClass), kRetriedCallStyle);
    run_.busClient = std::make_unique<ObjectClient>(world, runtime.client(Bus::kClass), kRetriedCallStyle);
    producers_ = std::make_unique<LogProducers>(run_.log);
    run_.log.handlePage = [this](std::string partition, nlohmann::json records) {
      return forwardPage(run_, std::move(partition), std::move(records));
    };
  }

  void start(sim::World& world) override {
    LogRun& log = run_.log;
    for (int64_t p = 0; p < log.producers; ++p) world.tasks().spawn("mixed.producer." + std::to_string(p), producers_->producer(p));
    for (int64_t g = 0; g < log.groups; ++g) world.tasks().spawn("mixed.group." + std::to_string(g), consumerGroup(log, g));
    for (int64_t c = 0; c < log.leasers; ++c)
      for (int64_t k = 0; k < log.pollersPerLeaser(); ++k)
        world.tasks().spawn("mixed.leaser." + std::to_string(c) + "." + std::to_string(k), leasedPoller(log, c, k));
    world.tasks().spawn("mixed.heartbeat", producers_->heartbeat());
    world.tasks().spawn("mixed.redriver", redriver(run_));
    if (run_.mailbox.withAlarms) world.tasks().spawn("mixed.ticker", ticker(run_));
  }

  void heal(sim::World& world) override {
    run_.log.runtime->heal();
    run_.log.healed = true;
    world.tasks().spawn("mixed.sweeper", sweeper(run_));
  }

  bool drained() const override {
    const sim::ObjectRuntime& runtime = *run_.log.runtime;
    return producersDone() && producers_->heartbeatIdle() && runtime.pending().empty() && logConsumersBehind(run_.log).empty() &&
           unsettledMailboxes(run_.world().stores(), runtime.status()).empty() &&
           unsettledAccounts(run_.world().stores(), runtime.status()).empty() && sweepsDue().empty() && chainBehind(run_).empty() &&
           busBehind(run_).empty();
  }

  std::vector<std::string> pending() const override {
    const sim::ObjectRuntime& runtime = *run_.log.runtime;
    std::vector<std::string> items = runtime.pending();
    if (!producersDone())
      items.push_back(std::to_string(run_.log.producers - run_.log.counts.producersDone) + " producers still running");
    if (!producers_->heartbeatIdle()) items.push_back("a heartbeat ping in flight");
    for (const std::vector<std::string>& more :
         {logConsumersBehind(run_.log), unsettledMailboxes(run_.world().stores(), runtime.status()),
          unsettledAccounts(run_.world().stores(), runtime.status()), sweepsDue(), chainBehind(run_), busBehind(run_)})
      items.insert(items.end(), more.begin(), more.end());
    return items;
  }

  void check(sim::World&, sim::Tallies& tallies) override { tallies.merge(run_.log.expectations); }

  nlohmann::json metrics() const override {
    int64_t incarnations = 0;
    for (const sim::ObjectStatus& status : run_.log.runtime->status()) incarnations += status.incarnations;
    const LogCounts& log = run_.log.counts;
    const MixedCounts& chain = run_.counts;
    const int64_t calls = run_.log.client->calls() + producers_->calls() + run_.mailboxClient->calls() + run_.busClient->calls();
    const int64_t uncertain =
        run_.log.client->uncertain() + producers_->uncertain() + run_.mailboxClient->uncertain() + run_.busClient->uncertain();
    return {{"calls", calls},           {"uncertain", uncertain},           {"appended", log.appended},
            {"rejected", log.rejected}, {"consumed", log.consumed},         {"leased", log.leased},
            {"forwarded", chain.forwarded}, {"unforwarded", chain.unforwarded}, {"redrives", chain.redrives},
            {"releases", chain.releases}, {"incarnations", incarnations}};
  }

 private:
  bool producersDone() const { return run_.log.counts.producersDone == run_.log.producers; }

  // Partitions whose retention sweep is due and has not run yet. The sweep re-arms itself while hot
  // records remain, so it may stay pending for good, but the run ends only while it is not due:
  // then a pending occurrence is one ALM-14 may leave pending (alarm_checks.h).
  std::vector<std::string> sweepsDue() const {
    std::vector<std::string> items;
    const sim::StoreView& stores = run_.world().stores();
    for (int64_t i = 0; i < run_.log.partitions; ++i) {
      const std::string object = partitionLabel(partitionName(i));
      if (!stores.has_table(object, DURASIM_ALARMS)) continue;
      const std::optional<SqlRow> due =
          stores.live(object, "SELECT next_attempt_at FROM " DURASIM_ALARMS " WHERE status = 'pending' AND next_attempt_at <= ?", {run_.world().now()})
              .next();
      if (due) items.push_back(object + " has its retention sweep due since " + std::to_string(due->int64("next_attempt_at")));
    }
    return items;
  }

  // Every application's configuration, drawn on "workload.mixed" in this order, and stated.
  void drawConfig() {
    LogRun& log = run_.log;
    drawLogConfig(log, LogDrawPolicy{.coldAlways = true, .retire = false, .noLeasesLast = true});
    const Draw draw = [&log](int64_t lo, int64_t hi) { return log.draw(lo, hi); };
    run_.mailbox = drawMailboxConfig(draw, true);
    run_.account = drawAccountConfig(draw, false);
    run_.bus.topics = {kAppliedTopic};
    for (const char* name : kBusConsumers) run_.bus.consumers.push_back(drawBusConsumer(draw, kAppliedTopic, name));
    run_.account.target = AccountTarget{&log.healed, run_.mailbox.attemptTimeoutMs + kConsumerHangMarginMs, kMixedBus, kAppliedTopic};

    sim::World& world = run_.world();
    world.emit("workload.config", stating(logConfigJson(log), LogPartition::kClass));
    nlohmann::json mailbox = run_.mailbox.toJson();
    mailbox["alarmHandoffMs"] = run_.mailbox.scheduler.alarmHandoffMs;
    world.emit("workload.config", stating(std::move(mailbox), Mailbox::kClass));
    nlohmann::json account = run_.account.toJson();
    account["sink"] = world.variants().count(std::string(kSinkLastWriterWins)) ? "last_writer_wins" : "max";
    world.emit("workload.config", stating(std::move(account), Account::kClass));
    nlohmann::json bus = run_.bus.toJson();
    bus["buses"] = {std::string(Bus::kClass) + "/" + kMixedBus};
    world.emit("workload.config", stating(std::move(bus), Bus::kClass));
  }

  void defineClasses(faults::FaultPlan& faults) {
    sim::ObjectRuntime& runtime = *run_.log.runtime;
    sim::FaultInjector* injector = &faults;
    const std::map<std::string, LogPartitionConfig> configs = run_.log.configs;
    runtime.define_class(LogPartition::kClass,
                         [configs](ObjectContext& ctx) { return std::make_unique<LogPartition>(ctx, configs.at(ctx.id.second)); });
    runtime.define_class(Mailbox::kClass, [this, injector](ObjectContext& ctx) {
      MailboxConfig config = run_.mailbox;
      config.consumerClass = Account::kClass;
      config.consumerName = mixedAccount(std::stoll(ctx.id.second.substr(2)));  // "mb<j>" delivers to "a<j>"
      return std::make_unique<Mailbox>(ctx, config, injector);
    });
    runtime.define_class(Account::kClass, [this, injector](ObjectContext& ctx) {
      return std::make_unique<Account>(ctx, run_.account, std::vector<std::string>{kLedgerChannel}, injector);
    });
    const int64_t stallMaxMs = 2 * run_.account.attemptTimeoutMs;
    runtime.define_class(std::string(outbox_events::kSinkClass),
                         [this, stallMaxMs](ObjectContext& ctx) { return std::make_unique<OutboxSink>(ctx, &run_.log.healed, stallMaxMs); });
    runtime.define_class(Bus::kClass, [this](ObjectContext& ctx) { return std::make_unique<Bus>(ctx, run_.bus, &run_.log.healed); });
  }

  MixedRun run_;
  std::unique_ptr<LogProducers> producers_;
};

}  // namespace

WorkloadInfo mixed_workload_info() {
  return {"mixed",
          "Every capability composed: routed producers, LogPartitions, a group forwarding into Mailboxes, Accounts staging to an "
          "OutboxSink and emitting to a Bus, under faults",
          [](const nlohmann::json& options) -> std::unique_ptr<Workload> { return std::make_unique<MixedWorkload>(options); },
          {{"RT", ""},
           {"SCH", LogPartition::kClass},
           {"ALM", LogPartition::kClass},
           {"SCH", Mailbox::kClass},
           {"ALM", Mailbox::kClass},
           {"SCH", Account::kClass},
           {"ALM", Account::kClass},
           {"LOG", LogPartition::kClass},
           {"LSE", LogPartition::kClass},
           {"RTE", ""},
           {"FAN", Mailbox::kClass},
           {"OBX", Account::kClass},
           {"EVT", Bus::kClass}},
          {{"partitions", kDefaultPartitions},
           {"producers", kDefaultProducers},
           {"ops", kDefaultOps},
           {"leasers", kDefaultLeasers, 0},
           {"mailboxes", kDefaultMailboxes}},
          // Its buckets have no expiry rules (cold segments never expire before the group reads them).
          faults::every_fault_but({"cold.lifecycle_lag"})};
}

}  // namespace durasim::workloads
