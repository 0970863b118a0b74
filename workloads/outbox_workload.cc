// The outbox workload: Account objects (shared scheduler + DurabilityOutbox on "ledger", and "audit"
// in half the seeds) driven by clients that deposit to a few keys per account (so keys are restaged
// often, with different bodies), some deposits aborted on purpose after staging and a few with an
// empty key (which the outbox must refuse with RangeError, checked here on the answers). Each
// channel publishes to one OutboxSink object by RPC. Each seed draws the outbox options (batch size,
// batch delay, publish deadline, retry policy: default, fixed or invalid) and states them in its
// "workload.config" event, with the sink's mode. In a third of the seeds with audit some Account
// incarnations before heal are built without it (its rows must then be retained and postponed). In
// a quarter of the seeds an operator retires one account while faults are on: its next incarnation
// removes the outbox schema. After heal the sink accepts everything and every incarnation attaches
// every channel, so every key's newest stage must reach the sink.
#include "workloads/outbox_workload.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "engine/outbox_events.h"
#include "sim/object_runtime.h"
#include "workloads/account.h"
#include "workloads/actor_stream.h"
#include "workloads/client.h"
#include "workloads/outbox_drivers.h"
#include "workloads/options.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kDefaultAccounts = 3, kDefaultClients = 3, kDefaultOps = 25, kDefaultKeys = 4;
constexpr int64_t kMaxThinkMs = 4'000;
constexpr uint32_t kAbortPpm = 100'000;     // 10% of deposits throw after staging
constexpr uint32_t kEmptyKeyPpm = 30'000;   // 3% have an empty key
constexpr uint32_t kAuditPpm = 400'000;     // 40% also stage an audit record (when the seed has audit)
constexpr uint32_t kPingPpm = 50'000;       // 5% of operations ask for the pending rows
constexpr uint32_t kAuditChurnSeedPpm = 333'333;  // seeds whose incarnations sometimes lack audit
constexpr uint32_t kAuditMissingPpm = 400'000;    // ... in 40% of their incarnations before heal
constexpr uint32_t kRetireSeedPpm = 250'000;
constexpr int64_t kRetireAfterMaxMs = 60'000;
constexpr Backoff kCallBackoff{500, 10'000};

std::string accountName(int64_t i) {
  std::string name = "a";
  name += std::to_string(i);
  return name;
}

std::string keyName(int64_t i) {
  std::string name = "k";
  name += std::to_string(i);
  return name;
}

class OutboxWorkload final : public Workload {
 public:
  explicit OutboxWorkload(const nlohmann::json& options) {
    reject_unknown_options(options, "outbox", {"accounts", "clients", "ops", "keys"});
    accounts_ = positive_option(options, "outbox", "accounts", kDefaultAccounts);
    clients_ = positive_option(options, "outbox", "clients", kDefaultClients);
    ops_ = positive_option(options, "outbox", "ops", kDefaultOps);
    keys_ = positive_option(options, "outbox", "keys", kDefaultKeys);
  }

  void setup(sim::World& world, faults::FaultPlan& faults) override {
    world_ = &world;
    stream_ = world.random().stream("workload.outbox");
    config_ = drawAccountConfig([this](int64_t lo, int64_t hi) { return draw(lo, hi); }, true);
    nlohmann::json stated = config_.toJson();
    stated["sink"] = world.variants().count(std::string(kSinkLastWriterWins)) ? "last_writer_wins" : "max";
    world.emit("workload.config", std::move(stated));

    churnStream_ = world.random().stream("workload.outbox.channels");
    auditChurn_ = config_.channels.size() > 1 && world.random().chance(churnStream_, kAuditChurnSeedPpm);
    retire_ = chance(kRetireSeedPpm);

    runtime_ = std::make_unique<sim::ObjectRuntime>(world, faults);
    sim::FaultInjector* injector = &faults;
    runtime_->define_class(Account::kClass, [this, injector](ObjectContext& ctx) {
      return std::make_unique<Account>(ctx, config_, incarnationChannels(), injector);
    });
    const int64_t stallMaxMs = 2 * config_.attemptTimeoutMs;
    runtime_->define_class(std::string(outbox_events::kSinkClass),
                           [this, stallMaxMs](ObjectContext& ctx) { return std::make_unique<OutboxSink>(ctx, &healed_, stallMaxMs); });
    client_ = std::make_unique<ObjectClient>(world, runtime_->client(Account::kClass), kPlainCallStyle);
  }

  void start(sim::World& world) override {
    for (int64_t c = 0; c < clients_; ++c) world.tasks().spawn("outbox.client." + std::to_string(c), client(c));
    if (retire_) world.tasks().spawn("outbox.retirer", retirer());
  }

  void heal(sim::World&) override {
    healed_ = true;
    runtime_->heal();
  }

  bool drained() const override { return clientsDone_ == clients_ && runtime_->pending().empty() && unsettledAccounts(world_->stores(), runtime_->status()).empty(); }

  std::vector<std::string> pending() const override {
    std::vector<std::string> items = runtime_->pending();
    if (clientsDone_ < clients_) items.push_back(std::to_string(clients_ - clientsDone_) + " clients still running");
    for (const std::string& item : unsettledAccounts(world_->stores(), runtime_->status())) items.push_back(item);
    return items;
  }

  void check(sim::World&, sim::Tallies& tallies) override { tallies.merge(expectations_); }

  nlohmann::json metrics() const override {
    int64_t incarnations = 0;
    for (const sim::ObjectStatus& status : runtime_->status()) incarnations += status.incarnations;
    return {{"deposits", deposits_}, {"committed", committed_}, {"aborted", aborted_},   {"refused", refused_},
            {"retired", retired_},   {"calls", client_->calls()}, {"uncertain", client_->uncertain()},
            {"incarnations", incarnations}, {"config", config_.toJson()}};
  }

 private:
  int64_t draw(int64_t lo, int64_t hi) { return world_->random().between(stream_, lo, hi); }
  bool chance(uint32_t ppm) { return world_->random().chance(stream_, ppm); }

  // The channels a new Account incarnation attaches: while faults are on, in seeds with churn, some
  // incarnations run code without the audit channel; after heal every one has every channel.
  std::vector<std::string> incarnationChannels() {
    std::vector<std::string> channels = {kLedgerChannel};
    if (config_.channels.size() > 1 && (!auditChurn_ || healed_ || !world_->random().chance(churnStream_, kAuditMissingPpm)))
      channels.push_back(kAuditChannel);
    return channels;
  }

  Task<void> client(int64_t c) {
    ActorStream ops(world_->random(), "outbox", "client", c);
    for (int64_t i = 0; i < ops_ && ops.next_operation(); ++i) {
      co_await world_->sleep_for(ops.between(0, kMaxThinkMs));
      const std::string account = accountName(ops.between(0, accounts_ - 1));
      if (ops.chance(kPingPpm)) {
        Task<Settled> pinging = client_->callUntilDefinite(account, "ping", nlohmann::json::object(), kCallBackoff);
        co_await pinging;
        continue;
      }
      std::string op = "c";
      op += std::to_string(c);
      op += "-";
      op += std::to_string(i);
      const bool emptyKey = ops.chance(kEmptyKeyPpm);
      const std::string key = emptyKey ? std::string() : keyName(ops.between(0, keys_ - 1));
      const nlohmann::json args = {{"key", key},
                                   {"amount", ops.between(-50, 100)},
                                   {"abort", ops.chance(kAbortPpm)},
                                   {"audit", ops.chance(kAuditPpm)},
                                   {"op", op}};
      ++deposits_;
      Task<Settled> depositing = client_->callUntilDefinite(account, "deposit", args, kCallBackoff);
      const Settled settled = co_await depositing;
      tally(account, args, settled.reply);
    }
    ++clientsDone_;
  }

  // What a client read of its deposit. An empty key the account ran must be refused with RangeError.
  void tally(const std::string& account, const nlohmann::json& args, const Reply& reply) {
    if (!reply.ok()) return;  // refused by the runtime: the account never ran it
    const nlohmann::json& answer = reply.value;
    if (answer.contains("versions")) ++committed_;
    else if (answer.contains("aborted")) ++aborted_;
    else if (answer.contains("error")) ++refused_;
    if (!args.at("key").get<std::string>().empty() || answer.contains("retired")) return;
    expectations_.check("OBX-04", answer.contains("error") && answer.at("error").at("name") == "RangeError", [&] {
      return "a deposit with an empty key to " + account + " was answered " + answer.dump() + ", not RangeError";
    });
  }

  // The operator: retires the last account at a random time while faults are on, then wakes it.
  Task<void> retirer() {
    ActorStream ops(world_->random(), "outbox", "retirer");
    if (!ops.next_operation()) co_return;
    co_await world_->sleep_for(ops.between(0, kRetireAfterMaxMs));
    const std::string account = accountName(accounts_ - 1);
    Task<Reply> retiring = client_->call(account, "retire", nlohmann::json::object());
    co_await retiring;
    ++retired_;
    Task<Settled> waking = client_->callUntilDefinite(account, "ping", nlohmann::json::object(), kCallBackoff);
    co_await waking;
  }

  sim::World* world_ = nullptr;
  sim::StreamId stream_, churnStream_;
  AccountConfig config_;
  bool auditChurn_ = false, retire_ = false, healed_ = false;
  int64_t accounts_ = 0, clients_ = 0, ops_ = 0, keys_ = 0;
  std::unique_ptr<sim::ObjectRuntime> runtime_;
  std::unique_ptr<ObjectClient> client_;
  sim::Tallies expectations_;
  int64_t clientsDone_ = 0, deposits_ = 0, committed_ = 0, aborted_ = 0, refused_ = 0, retired_ = 0;
};

}  // namespace

WorkloadInfo outbox_workload_info() {
  return {"outbox",
          "Account objects: balances staged through the outbox to a version-keeping sink, aborted transactions, a retired account, under faults",
          [](const nlohmann::json& options) -> std::unique_ptr<Workload> { return std::make_unique<OutboxWorkload>(options); },
          {{"RT", ""}, {"SCH", Account::kClass}, {"OBX", Account::kClass}},
          {{"accounts", kDefaultAccounts}, {"clients", kDefaultClients}, {"ops", kDefaultOps}, {"keys", kDefaultKeys}},
          // No cold store.
          faults::every_fault_but({"cold", "episode.cold_outage"})};
}

}  // namespace durasim::workloads
