// The runtime workload: `Counter` objects that write idempotently, set alarms, call each other and
// archive to the cold store, driven by clients that retry uncertain outcomes with the same operation
// id (workloads/client.h). Its checks are the counters that must add up across every crash (RT-05,
// RT-06, RT-16), every acknowledged archive present in the cold store (RT-20); the runtime's own
// checks (RT-14, RT-24 among them) come from properties/runtime_checks.h like every workload's.
#include "workloads/runtime_workload.h"

#include <map>

#include "sim/object_runtime.h"
#include "workloads/client.h"
#include "workloads/options.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kDefaultObjects = 4;
constexpr int64_t kDefaultClients = 3;
constexpr int64_t kDefaultOpsPerClient = 30;
constexpr int64_t kMaxThinkMs = 2'000;
constexpr int64_t kMaxAlarmDelayMs = 30'000;
constexpr int64_t kRetryBackoffMs = 500;
constexpr Backoff kClientBackoff{kRetryBackoffMs, 20 * kRetryBackoffMs};  // clients: 500 ms more per uncertain attempt
constexpr int64_t kRelayAttempts = 3;
constexpr int64_t kHangMinMs = 60'000, kHangMaxMs = 1'800'000;  // runtime.md 11.2 workload.handler_hang
constexpr const char* kClass = "Counter";
constexpr const char* kBucket = "archive";
constexpr int64_t kArchiveExpiryDays = 1;  // longer than any run: archives stay, their lifecycle lag is drawn

// The application object. Every mutation is keyed by an operation id, applied at most once.
class Counter final : public DurableObject {
 public:
  Counter(ObjectContext& ctx, sim::FaultInjector& faults) : ctx_(ctx), faults_(faults) {
    ctx_.storage.exec("CREATE TABLE IF NOT EXISTS ops (id TEXT PRIMARY KEY, key TEXT NOT NULL, amount INTEGER NOT NULL)");
    ctx_.storage.exec("CREATE TABLE IF NOT EXISTS counters (key TEXT PRIMARY KEY, value INTEGER NOT NULL)");
    ctx_.storage.exec("CREATE TABLE IF NOT EXISTS fires (scheduled INTEGER PRIMARY KEY, runs INTEGER NOT NULL)");
  }

  bool hasAlarmHandler() const override { return true; }

  Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) override {
    co_await maybe_misbehave("call");
    if (method == "add") co_return apply(args.at("op").get<std::string>(), args.at("key").get<std::string>(), args.at("amount").get<int64_t>());
    if (method == "arm") co_return arm(args.at("op").get<std::string>(), args.at("delay").get<int64_t>());
    if (method == "relay") co_return co_await relay(args);
    if (method == "archive") {
      Task<nlohmann::json> archiving = archive(args.at("op").get<std::string>());
      co_return co_await archiving;
    }
    throw std::invalid_argument("unknown method " + std::string(method));
  }

  Task<void> alarm(const AlarmInvocationInfo& info) override {
    co_await maybe_misbehave("alarm");
    ctx_.storage.exec("INSERT INTO fires (scheduled, runs) VALUES (?, 1) ON CONFLICT(scheduled) DO UPDATE SET runs = runs + 1",
                      info.scheduledTime);
  }

 private:
  // workload.handler_throw / workload.handler_hang (runtime.md 11.2).
  Task<void> maybe_misbehave(const char* point) {
    const sim::FaultSite site{ctx_.id.first + "/" + ctx_.id.second, ctx_.incarnation, point};
    if (faults_.fires(sim::FaultKind::workload_handler_throw, site)) throw std::runtime_error("injected handler failure");
    int64_t hang = 0;
    if (faults_.fires(sim::FaultKind::workload_handler_hang, site, [&] {
          hang = kHangMinMs + static_cast<int64_t>(ctx_.random.random() * static_cast<double>(kHangMaxMs - kHangMinMs));
          return nlohmann::json{{"ms", hang}};
        }))
      co_await ctx_.clock.sleepFor(hang);
  }

  nlohmann::json apply(const std::string& op, const std::string& key, int64_t amount) {
    return ctx_.storage.transactionSync([&](StorageTxn& txn) {
      const SqlCursor inserted = txn.exec("INSERT OR IGNORE INTO ops (id, key, amount) VALUES (?, ?, ?)", op, key, amount);
      if (inserted.rowsWritten() > 0)
        txn.exec("INSERT INTO counters (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = value + excluded.value",
                 key, amount);
      SqlCursor total = txn.exec("SELECT value FROM counters WHERE key = ?", key);
      return nlohmann::json{{"applied", inserted.rowsWritten() > 0}, {"total", total.one().int64("value")}};
    });
  }

  nlohmann::json arm(const std::string& op, int64_t delay) {
    apply(op, "arms", 1);
    ctx_.storage.setAlarm(std::max<int64_t>(ctx_.clock.now() + delay, 1));
    return {{"armed", true}};
  }

  // Adds to another Counter through a stub, retrying lost connections with the same operation id.
  Task<nlohmann::json> relay(const nlohmann::json& args) {
    const std::string op = args.at("op").get<std::string>();
    nlohmann::json forwarded = {{"op", op + "/relay"}, {"key", "relayed"}, {"amount", args.at("amount")}};
    for (int64_t attempt = 1;; ++attempt) {
      try {
        Stub stub = ctx_.objects(kClass).get(args.at("to").get<std::string>());
        Task<nlohmann::json> calling = stub.call("add", forwarded);
        nlohmann::json reply = co_await calling;
        apply(op, "relays", 1);
        co_return reply;
      } catch (const RpcError& e) {
        if (e.overloaded() || attempt >= kRelayAttempts) throw;
      }
      co_await ctx_.clock.sleepFor(kRetryBackoffMs * attempt);
    }
  }

  // Archives the counters under a create-only key; a retry that finds the key holds the same body.
  Task<nlohmann::json> archive(std::string op) {
    const std::string key = ctx_.id.second + "/" + op;
    ColdPutOptions create_only;
    create_only.etagDoesNotMatch = "*";
    Task<std::optional<ColdObject>> putting = ctx_.bucket(kBucket).put(key, op, create_only);
    co_await putting;
    apply(op, "archives", 1);
    co_return nlohmann::json{{"key", key}};
  }

  ObjectContext& ctx_;
  sim::FaultInjector& faults_;
};

enum class Op : uint64_t { add, arm, relay, archive, kCount };

struct Ledger {
  std::map<std::string, std::string> acked;   // op id -> object name, for operations acknowledged
  std::set<std::string> archived;            // cold keys of acknowledged archives
  std::set<std::string> relayed;             // op ids of acknowledged relays ("<op>/relay" on the target)
  std::map<std::string, std::string> refused;  // op id -> object, refused as overloaded (never executed)
};

class RuntimeWorkload final : public Workload {
 public:
  explicit RuntimeWorkload(const nlohmann::json& options) {
    reject_unknown_options(options, "runtime", {"objects", "clients", "ops", "storage_dir"});
    if (options.contains("storage_dir")) {
      if (!options.at("storage_dir").is_string() || options.at("storage_dir").get<std::string>().empty())
        throw std::invalid_argument("runtime workload option 'storage_dir' must be a directory path");
      storage_dir_ = options.at("storage_dir").get<std::string>();
    }
    objects_ = positive_option(options, "runtime", "objects", kDefaultObjects);
    clients_ = positive_option(options, "runtime", "clients", kDefaultClients);
    ops_ = positive_option(options, "runtime", "ops", kDefaultOpsPerClient);
  }

  void setup(sim::World& world, faults::FaultPlan& faults) override {
    world_ = &world;
    faults_ = &faults;
    stream_ = world.random().stream("workload.runtime");
    sim::RuntimeOptions options;
    options.bucket_rules[kBucket] = {sim::LifecycleRule{"", kArchiveExpiryDays}};
    options.storage_dir = storage_dir_;
    runtime_ = std::make_unique<sim::ObjectRuntime>(world, faults, options);
    sim::FaultInjector* injector = &faults;
    runtime_->define_class(kClass, [injector](ObjectContext& ctx) { return std::make_unique<Counter>(ctx, *injector); });
    client_ = std::make_unique<ObjectClient>(world, runtime_->client(kClass), kPlainCallStyle);
  }

  void start(sim::World& world) override {
    for (int64_t c = 0; c < clients_; ++c) world.tasks().spawn("runtime.client." + std::to_string(c), client(c));
  }

  void heal(sim::World&) override { runtime_->heal(); }

  bool drained() const override { return clients_done_ == clients_ && runtime_->pending().empty(); }

  std::vector<std::string> pending() const override {
    std::vector<std::string> items = runtime_->pending();
    if (clients_done_ < clients_) items.push_back(std::to_string(clients_ - clients_done_) + " clients still running");
    return items;
  }

  void check(sim::World& world, sim::Tallies& tallies) override {
    const std::vector<std::string> stuck = runtime_->pending();
    tallies.check("RT-24", stuck.empty(), [&] { return "runtime work still pending after heal: " + stuck.front(); });
    for (int64_t i = 0; i < objects_; ++i) check_object(object_name(i), tallies);
    check_lifecycle(world.now(), tallies);
    for (const std::string& key : ledger_.archived) {
      const bool present = runtime_->cold_store().head(kBucket, key, world.now()).has_value();
      tallies.check("RT-20", present, [&] { return "acknowledged archive " + key + " is missing from the cold store"; });
    }
  }

  nlohmann::json metrics() const override {
    int64_t incarnations = 0;
    for (const sim::ObjectStatus& status : runtime_->status()) incarnations += status.incarnations;
    return {{"calls", client_->calls()}, {"retries", client_->uncertain()}, {"acked", ledger_.acked.size()},
            {"refused", ledger_.refused.size()}, {"incarnations", incarnations}};
  }

 private:
  static std::string object_name(int64_t i) { return "c" + std::to_string(i); }
  int64_t draw(int64_t lo, int64_t hi) { return world_->random().between(stream_, lo, hi); }

  // RT-21: expired objects went no earlier than due and no later than due + the maximum lag; every
  // object still stored under the archive's rule is not overdue.
  void check_lifecycle(int64_t now, sim::Tallies& tallies) {
    sim::ColdStore& cold = runtime_->cold_store();
    cold.expire(now);
    for (const sim::ColdEvent& event : cold.history()) {
      if (event.kind != sim::ColdEventKind::expire || !event.due) continue;
      tallies.check("RT-21", *event.due <= event.time && event.time <= *event.due + sim::kColdLifecycleLagMaxMs, [&] {
        return event.key + " expired at " + std::to_string(event.time) + ", due " + std::to_string(*event.due);
      });
    }
    std::optional<std::string> cursor;
    do {
      const ColdList page = cold.list(kBucket, "", cursor, sim::kColdListMax, now);
      for (const ColdObject& object : page.objects) {
        const int64_t due = object.uploaded + kArchiveExpiryDays * sim::kColdMsPerDay;
        tallies.check("RT-21", now <= due + sim::kColdLifecycleLagMaxMs, [&] {
          return object.key + " is still stored at " + std::to_string(now) + ", past due " + std::to_string(due) + " plus the lag";
        });
      }
      cursor = page.cursor;
    } while (cursor);
  }

  // Reads one object's durable tables (what survives every crash: an acknowledged operation's
  // commit was confirmed before its reply left).
  void check_object(const std::string& name, sim::Tallies& tallies) {
    std::map<std::string, int64_t> sums;
    std::set<std::string> applied;
    const sim::StoreView& stores = world_->stores();
    const std::string object = std::string(kClass) + "/" + name;
    if (stores.durable(object, "SELECT count(*) AS n FROM sqlite_master WHERE name = 'ops'").one().int64("n") == 0) {
      // Never constructed (or its first commit vanished): nothing of it may have been acknowledged.
      for (const auto& [op, object] : ledger_.acked)
        if (object == name) tallies.check("RT-05", false, [&] { return "acknowledged operation " + op + " but " + name + " has no tables"; });
      return;
    }
    for (const SqlRow& row : stores.durable(object, "SELECT id, key, amount FROM ops").toVector()) {
      sums[row.text("key")] += row.int64("amount");
      applied.insert(row.text("id"));
    }
    for (const SqlRow& row : stores.durable(object, "SELECT key, value FROM counters").toVector()) {
      const int64_t expected = sums[row.text("key")];
      tallies.check("RT-06", row.int64("value") == expected, [&] {
        return name + " counter " + row.text("key") + " = " + std::to_string(row.int64("value")) + " but its operations add to " +
               std::to_string(expected) + " (a commit was partly applied)";
      });
    }
    for (const auto& [op, object] : ledger_.acked) {
      if (object != name) continue;
      tallies.check("RT-05", applied.count(op) > 0, [&] { return "acknowledged operation " + op + " vanished from " + name; });
    }
    for (const auto& [op, object] : ledger_.refused) {
      if (object != name) continue;
      tallies.check("RT-16", applied.count(op) == 0, [&] { return "operation " + op + " refused as overloaded ran on " + name; });
    }
    for (const std::string& op : ledger_.relayed) {
      if (relay_targets_.at(op) != name) continue;
      tallies.check("RT-05", applied.count(op + "/relay") > 0, [&] { return "acknowledged relay " + op + " missing on " + name; });
    }
  }

  // One client: random operations on random objects; uncertain outcomes retried with the same id.
  Task<void> client(int64_t c) {
    for (int64_t i = 0; i < ops_; ++i) {
      co_await world_->sleep_for(draw(0, kMaxThinkMs));
      const std::string op = "k" + std::to_string(c) + "." + std::to_string(i);
      const std::string target = object_name(draw(0, objects_ - 1));
      nlohmann::json args = {{"op", op}};
      std::string method;
      switch (static_cast<Op>(draw(0, static_cast<int64_t>(Op::kCount) - 1))) {
        case Op::add:
          method = "add";
          args["key"] = "k" + std::to_string(draw(0, 2));
          args["amount"] = draw(1, 100);
          break;
        case Op::arm:
          method = "arm";
          args["delay"] = draw(0, kMaxAlarmDelayMs);
          break;
        case Op::relay:
          method = "relay";
          args["to"] = object_name(draw(0, objects_ - 1));
          args["amount"] = draw(1, 100);
          relay_targets_[op] = args["to"].get<std::string>();
          break;
        case Op::archive:
          method = "archive";
          break;
        case Op::kCount:
          break;
      }
      Task<void> performing = perform(target, method, args, op);
      co_await performing;
    }
    ++clients_done_;
  }

  // Retries an uncertain outcome until it is known. A refusal says the operation never ran only on
  // its first attempt: after an uncertain one, that attempt may have run.
  Task<void> perform(std::string target, std::string method, nlohmann::json args, std::string op) {
    Task<Settled> performing = client_->callUntilDefinite(target, method, args, kClientBackoff);
    const Settled settled = co_await performing;
    if (!settled.reply.ok()) {
      if (settled.attempts == 1) ledger_.refused[op] = target;
      co_return;
    }
    ledger_.acked[op] = target;
    if (method == "archive") ledger_.archived.insert(settled.reply.value.at("key").get<std::string>());
    if (method == "relay") ledger_.relayed.insert(op);
  }

  sim::World* world_ = nullptr;
  faults::FaultPlan* faults_ = nullptr;
  sim::StreamId stream_;
  std::unique_ptr<sim::ObjectRuntime> runtime_;
  std::unique_ptr<ObjectClient> client_;
  int64_t objects_ = 0, clients_ = 0, ops_ = 0;
  std::optional<std::string> storage_dir_;  // file-backed object stores (option storage_dir)
  int64_t clients_done_ = 0;
  Ledger ledger_;
  std::map<std::string, std::string> relay_targets_;
};

}  // namespace

WorkloadInfo runtime_workload_info() {
  return {"runtime", "Counter objects that write, set alarms, call each other and archive to the cold store",
          [](const nlohmann::json& options) -> std::unique_ptr<Workload> {
            return std::make_unique<RuntimeWorkload>(options);
          },
          {{"RT", ""}}};
}

}  // namespace durasim::workloads
