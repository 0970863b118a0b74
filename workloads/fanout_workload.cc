// The fanout workload: Mailbox objects (shared scheduler + DurabilityFanout, named alarms beside it
// in some seeds) fed by producers that push batches through a RoutingClient whose sharding sends
// each tenant to its mailbox, retrying an uncertain push with the same ids and keys until a definite
// answer; one FanoutConsumer decides each delivery; an operator redrives DLQ entries while faults
// are on. Each seed draws the mailbox options and states them in its "workload.config" event.
// Producers send some invalid batches (no target, an unknown target, an empty id), which must be
// rejected definitely (FAN-01, checked here on the answers), and some that reuse an earlier
// message's key with another body (rejected while that message is live, FAN-03). In a third of the
// seeds some Mailbox incarnations before heal are built without the archive target (FAN-18).
#include "workloads/fanout_workload.h"

#include <algorithm>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/routing.h"
#include "sim/async_event.h"
#include "sim/object_runtime.h"
#include "sim/stream_random.h"
#include "workloads/actor_stream.h"
#include "workloads/client.h"
#include "workloads/envelope.h"
#include "workloads/fanout_drivers.h"
#include "workloads/mailbox.h"
#include "workloads/options.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kDefaultMailboxes = 3, kDefaultProducers = 3, kDefaultOps = 20;
constexpr int64_t kMaxThinkMs = 5'000;
constexpr int64_t kMaxPadBytes = 100;
constexpr uint32_t kInvalidBatchPpm = 50'000;  // 5% of batches are invalid
constexpr uint32_t kReusedKeyPpm = 80'000;     // 8% of messages reuse an earlier key with another body
constexpr uint32_t kTargetChurnSeedPpm = 333'333;  // a third of the seeds deploy code without the archive now and then
constexpr uint32_t kArchiveMissingPpm = 400'000;   // ... in 40% of their incarnations before heal
constexpr Backoff kPushBackoff{500, 20'000};
constexpr int64_t kPushTimeoutMs = 30'000;
constexpr int64_t kRedriveEveryMs = 40'000, kRedriveLimit = 5;
constexpr int64_t kTickEveryMs = 25'000, kTickAheadMs = 60'000;

// One push: the messages and targets of a batch, and the shard its invoke reached.
struct FanoutPush {
  nlohmann::json messages;
  std::optional<std::vector<std::string>> targets;
  std::string tenant;
};
using PushResult = EnqueueResult<std::vector<std::string>>;
using PushClient = RoutingClient<FanoutPush, std::vector<std::string>>;

std::string mailboxName(int64_t i) {
  std::string name = "mb";
  name += std::to_string(i);
  return name;
}

class FanoutWorkload final : public Workload {
 public:
  explicit FanoutWorkload(const nlohmann::json& options) {
    reject_unknown_options(options, "fanout", {"mailboxes", "producers", "ops"});
    mailboxes_ = positive_option(options, "fanout", "mailboxes", kDefaultMailboxes);
    producers_ = positive_option(options, "fanout", "producers", kDefaultProducers);
    ops_ = positive_option(options, "fanout", "ops", kDefaultOps);
  }

  void setup(sim::World& world, faults::FaultPlan& faults) override {
    world_ = &world;
    stream_ = world.random().stream("workload.fanout");
    config_ = drawMailboxConfig([this](int64_t lo, int64_t hi) { return draw(lo, hi); }, false);
    nlohmann::json stated = config_.toJson();
    stated["alarmHandoffMs"] = config_.scheduler.alarmHandoffMs;
    world.emit("workload.config", std::move(stated));

    targetsStream_ = world.random().stream("workload.fanout.targets");
    targetChurn_ = world.random().chance(targetsStream_, kTargetChurnSeedPpm);

    runtime_ = std::make_unique<sim::ObjectRuntime>(world, faults);
    sim::FaultInjector* injector = &faults;
    runtime_->define_class(Mailbox::kClass,
                           [this, injector](ObjectContext& ctx) { return std::make_unique<Mailbox>(ctx, incarnationConfig(), injector); });
    const int64_t hangMs = config_.attemptTimeoutMs + 5'000;
    runtime_->define_class(FanoutConsumer::kClass, [hangMs](ObjectContext& ctx) { return std::make_unique<FanoutConsumer>(ctx, hangMs); });
    client_ = std::make_unique<ObjectClient>(world, runtime_->client(Mailbox::kClass), kPlainCallStyle);

    clock_.emplace(world);
    random_.emplace(world.random(), world.random().stream("workload.fanout.routing"));
    PushClient::Options options;
    options.invoke = [this](const ShardAddress& address, const FanoutPush& push) { return invoke(address, push); };
    options.sharding = [](const FanoutPush& push, const std::optional<nlohmann::json>&, const Observations&) {
      return ShardAddress{push.tenant, std::nullopt};
    };
    options.makeEvent = [this] { return std::make_shared<sim::SimAsyncEvent>(world_->executor(), sleepingWaits_); };
    options.background = [this](Task<void> work) { world_->tasks().spawn("fanout.push.invoke", std::move(work)); };
    push_.emplace(PushClient(*clock_, *random_, options).withTimeout(kPushTimeoutMs));
  }

  void start(sim::World& world) override {
    for (int64_t p = 0; p < producers_; ++p) world.tasks().spawn("fanout.producer." + std::to_string(p), producer(p));
    world.tasks().spawn("fanout.redriver", redriver());
    if (config_.withAlarms) world.tasks().spawn("fanout.ticker", ticker());
  }

  void heal(sim::World&) override {
    healed_ = true;
    runtime_->heal();
  }

  bool drained() const override { return producersDone_ == producers_ && runtime_->pending().empty() && unsettledMailboxes(world_->stores(), runtime_->status()).empty(); }

  std::vector<std::string> pending() const override {
    std::vector<std::string> items = runtime_->pending();
    if (producersDone_ < producers_) items.push_back(std::to_string(producers_ - producersDone_) + " producers still running");
    for (const std::string& item : unsettledMailboxes(world_->stores(), runtime_->status())) items.push_back(item);
    return items;
  }

  void check(sim::World&, sim::Tallies& tallies) override { tallies.merge(expectations_); }

  nlohmann::json metrics() const override {
    int64_t incarnations = 0;
    for (const sim::ObjectStatus& status : runtime_->status()) incarnations += status.incarnations;
    return {{"pushes", pushes_},         {"accepted", accepted_},     {"rejected", rejected_}, {"uncertain", uncertain_},
            {"incarnations", incarnations}, {"redrives", redriveCalls_}, {"config", config_.toJson()}};
  }

 private:
  int64_t draw(int64_t lo, int64_t hi) { return world_->random().between(stream_, lo, hi); }

  // The configuration a new Mailbox incarnation is built with: while faults are on, in seeds with
  // target churn, some incarnations run code without the archive target (FAN-18); after heal every
  // one has it again, so its postponed rows are delivered.
  MailboxConfig incarnationConfig() {
    MailboxConfig config = config_;
    config.withArchive = !targetChurn_ || healed_ || !world_->random().chance(targetsStream_, kArchiveMissingPpm);
    return config;
  }

  // The invoke function: one enqueue RPC to the mailbox of the shard.
  Task<PushResult> invoke(const ShardAddress& address, const FanoutPush& push) {
    Stub stub = runtime_->client(Mailbox::kClass).get(address.shard);
    nlohmann::json args = {{"messages", push.messages}};
    if (push.targets) args["targets"] = *push.targets;
    Task<nlohmann::json> calling = stub.call("enqueue", args);
    const nlohmann::json reply = co_await calling;
    co_return enqueueResultFromJson<std::vector<std::string>>(reply);
  }

  // One push; an RPC failure or the push deadline leaves it uncertain.
  Task<Reply> pushOnce(const FanoutPush& push) {
    ++pushes_;
    try {
      Task<PushResult> pushing = push_->push(push);
      const PushResult result = co_await pushing;
      co_return classifyEnqueue(result);
    } catch (const RpcError&) {
    } catch (const RoutingTimeoutError&) {
    }
    ++uncertain_;
    co_return Reply{};
  }

  static nlohmann::json message(ActorStream& ops, int64_t p, int64_t seq) {
    const std::string pad(static_cast<std::size_t>(ops.between(0, kMaxPadBytes)), static_cast<char>('a' + seq % 26));
    std::string id = "P";
    id += std::to_string(p);
    id += "-";
    id += std::to_string(seq);
    return {{"id", id}, {"body", {{"producer", p}, {"seq", seq}, {"pad", pad}}}};
  }

  // A batch the fanout must refuse, and the part of it that makes it invalid.
  static void invalidate(ActorStream& ops, FanoutPush& push) {
    switch (ops.between(0, 2)) {
      case 0:
        push.targets = std::vector<std::string>{};
        break;
      case 1:
        push.targets = std::vector<std::string>{kConsumerTarget, "nowhere"};
        break;
      default:
        push.messages.push_back({{"id", ""}, {"body", 0}});
        break;
    }
  }

  Task<void> producer(int64_t p) {
    int64_t seq = 0;
    std::vector<nlohmann::json> sent;  // earlier messages, for key reuse
    ActorStream ops(world_->random(), "fanout", "producer", p);
    for (int64_t i = 0; i < ops_ && ops.next_operation(); ++i) {
      co_await world_->sleep_for(ops.between(0, kMaxThinkMs));
      FanoutPush push;
      push.tenant = mailboxName(ops.between(0, mailboxes_ - 1));
      const int64_t size = ops.between(1, 3);
      for (int64_t m = 0; m < size; ++m) {
        if (!sent.empty() && ops.chance(kReusedKeyPpm)) {
          nlohmann::json again = sent[ops.index(sent.size())];
          again["body"]["again"] = seq++;
          push.messages.push_back(std::move(again));
        } else {
          push.messages.push_back(message(ops, p, seq++));
        }
      }
      const int64_t roll = ops.between(0, 99);
      if (roll < 15) push.targets = std::vector<std::string>{kConsumerTarget};
      else if (roll < 30) push.targets = std::vector<std::string>{kArchiveTarget};
      const bool invalid = ops.chance(kInvalidBatchPpm);
      if (invalid) invalidate(ops, push);
      const std::function<Task<Reply>()> attempt = [this, &push] { return pushOnce(push); };
      Task<Settled> pushing = retryUntilDefinite(*world_, kPushBackoff, attempt);
      const Settled settled = co_await pushing;
      if (settled.reply.ok()) {
        ++accepted_;
        for (const nlohmann::json& m : push.messages) sent.push_back(m);
      } else {
        ++rejected_;
      }
      if (invalid)
        expectations_.check("FAN-01", settled.reply.failedWith("FanoutEnqueueError"), [&] {
          return "an invalid batch to " + push.tenant + " was answered " + settled.reply.label() + ": " + settled.reply.value.dump();
        });
    }
    ++producersDone_;
  }

  // The operator: while faults are on, asks a mailbox to redrive a few of its DLQ entries.
  Task<void> redriver() {
    ActorStream ops(world_->random(), "fanout", "redriver");
    while (!healed_ && ops.next_operation()) {
      co_await world_->sleep_for(kRedriveEveryMs);
      if (healed_) break;
      ++redriveCalls_;
      Task<Reply> redriving = client_->call(mailboxName(ops.between(0, mailboxes_ - 1)), "redrive", {{"limit", kRedriveLimit}});
      co_await redriving;
    }
  }

  // With alarms: schedules the named alarm beside the fanout now and then, until heal.
  Task<void> ticker() {
    ActorStream ops(world_->random(), "fanout", "ticker");
    while (!healed_ && ops.next_operation()) {
      co_await world_->sleep_for(ops.between(1, kTickEveryMs));
      if (healed_) break;
      const nlohmann::json args = {{"at", world_->now() + ops.between(0, kTickAheadMs)}};
      Task<Settled> scheduling = client_->callUntilDefinite(mailboxName(ops.between(0, mailboxes_ - 1)), "schedule", args, kPushBackoff);
      co_await scheduling;
    }
  }

  sim::World* world_ = nullptr;
  sim::StreamId stream_, targetsStream_;
  bool targetChurn_ = false;
  MailboxConfig config_;
  int64_t mailboxes_ = 0, producers_ = 0, ops_ = 0;
  std::unique_ptr<sim::ObjectRuntime> runtime_;
  std::unique_ptr<ObjectClient> client_;
  std::optional<sim::WorldClock> clock_;
  std::optional<sim::StreamRandom> random_;
  int64_t sleepingWaits_ = 0;  // timed waits of push deadlines (the SimAsyncEvent counter)
  std::optional<PushClient> push_;
  sim::Tallies expectations_;
  bool healed_ = false;
  int64_t producersDone_ = 0, pushes_ = 0, accepted_ = 0, rejected_ = 0, uncertain_ = 0, redriveCalls_ = 0;
};

}  // namespace

WorkloadInfo fanout_workload_info() {
  return {"fanout",
          "Mailbox objects: fanout deliveries to a consumer, an archive and a DLQ, producers through routing, redrive, under faults",
          [](const nlohmann::json& options) -> std::unique_ptr<Workload> { return std::make_unique<FanoutWorkload>(options); },
          {{"RT", ""}, {"SCH", Mailbox::kClass}, {"ALM", Mailbox::kClass}, {"FAN", Mailbox::kClass}},
          {{"mailboxes", kDefaultMailboxes}, {"producers", kDefaultProducers}, {"ops", kDefaultOps}},
          // Its buckets have no expiry rules.
          faults::every_fault_but({"cold.lifecycle_lag"})};
}

}  // namespace durasim::workloads
