// The runtime workload: `Counter` objects (workloads/counter_app.h) that write idempotently, set
// alarms, call each other and archive to the cold store, driven by clients that retry uncertain
// outcomes with the same operation id (workloads/client.h). Its checks are the counters that must add
// up across every crash (RT-05, RT-06, RT-16), every acknowledged archive present in the cold store
// (RT-20); the runtime's own checks (RT-14, RT-24 among them) come from properties/runtime_checks.h
// like every workload's. Options switch on the Counter's probes (CounterProbes), each off by default:
// sections, aborts (whose rows must never be stored: RT-06), failing_alarms, canary, late_writes.
#include "workloads/runtime_workload.h"

#include <map>

#include "sim/object_runtime.h"
#include "workloads/client.h"
#include "workloads/counter_app.h"
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
constexpr const char* kClass = Counter::kClass;
constexpr const char* kBucket = Counter::kBucket;
constexpr int64_t kArchiveExpiryDays = 1;  // longer than any run: archives stay, their lifecycle lag is drawn

enum class Op { add, arm, relay, archive, exclusive, abort };

struct Ledger {
  std::map<std::string, std::string> acked;   // op id -> object name, for operations acknowledged
  std::set<std::string> archived;            // cold keys of acknowledged archives
  std::set<std::string> relayed;             // op ids of acknowledged relays ("<op>/relay" on the target)
  std::map<std::string, std::string> refused;  // op id -> object, refused as overloaded (never executed)
};

class RuntimeWorkload final : public Workload {
 public:
  explicit RuntimeWorkload(const nlohmann::json& options) {
    reject_unknown_options(options, "runtime",
                           {"objects", "clients", "ops", "storage_dir", "sections", "aborts", "failing_alarms", "canary", "late_writes"});
    if (options.contains("storage_dir")) {
      if (!options.at("storage_dir").is_string() || options.at("storage_dir").get<std::string>().empty())
        throw std::invalid_argument("runtime workload option 'storage_dir' must be a directory path");
      storage_dir_ = options.at("storage_dir").get<std::string>();
    }
    objects_ = positive_option(options, "runtime", "objects", kDefaultObjects);
    clients_ = positive_option(options, "runtime", "clients", kDefaultClients);
    ops_ = positive_option(options, "runtime", "ops", kDefaultOpsPerClient);
    probes_.sections = flag_option(options, "runtime", "sections");
    probes_.aborts = flag_option(options, "runtime", "aborts");
    probes_.failing_alarms = flag_option(options, "runtime", "failing_alarms");
    probes_.canary = flag_option(options, "runtime", "canary");
    probes_.late_writes = flag_option(options, "runtime", "late_writes");
    if (probes_.sections) menu_.push_back(Op::exclusive);
    if (probes_.aborts) menu_.push_back(Op::abort);
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
    const CounterProbes probes = probes_;
    runtime_->define_class(kClass, [injector, probes](ObjectContext& ctx) { return std::make_unique<Counter>(ctx, *injector, probes); });
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
  static std::string object_name(int64_t i) {
    std::string name = "c";
    name += std::to_string(i);
    return name;
  }
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
    if (probes_.aborts) check_aborted(object, tallies);
  }

  // RT-06: an `abort` call's row was written in the segment that reset the incarnation, so its
  // transaction was discarded and no durable state holds it.
  void check_aborted(const std::string& object, sim::Tallies& tallies) {
    const sim::StoreView& stores = world_->stores();
    if (stores.durable(object, "SELECT count(*) AS n FROM sqlite_master WHERE name = 'aborted'").one().int64("n") == 0) return;
    const std::vector<SqlRow> rows = stores.durable(object, "SELECT op FROM aborted").toVector();
    tallies.check("RT-06", rows.empty(), [&] {
      return object + " stores " + std::to_string(rows.size()) + " rows of aborted calls (the first of " + rows.front().text("op") +
             "), written in segments their resets discarded";
    });
  }

  // One client: random operations on random objects; uncertain outcomes retried with the same id.
  Task<void> client(int64_t c) {
    for (int64_t i = 0; i < ops_; ++i) {
      co_await world_->sleep_for(draw(0, kMaxThinkMs));
      const std::string op = "k" + std::to_string(c) + "." + std::to_string(i);
      const std::string target = object_name(draw(0, objects_ - 1));
      nlohmann::json args = {{"op", op}};
      std::string method;
      switch (menu_[static_cast<std::size_t>(draw(0, static_cast<int64_t>(menu_.size()) - 1))]) {
        case Op::add:
          method = "add";
          args["key"] = "k" + std::to_string(draw(0, 2));
          args["amount"] = draw(1, 100);
          break;
        case Op::arm:
          method = "arm";
          args["delay"] = draw(0, kMaxAlarmDelayMs);
          if (probes_.failing_alarms) args["fails"] = draw(0, 1) == 1;
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
        case Op::exclusive:
          method = "exclusive";
          break;
        case Op::abort: {
          // It always resets its incarnation: asked once, never retried.
          Task<Reply> aborting = client_->call(target, "abort", args);
          co_await aborting;
          continue;
        }
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
  CounterProbes probes_;
  std::vector<Op> menu_ = {Op::add, Op::arm, Op::relay, Op::archive};  // what clients draw from
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
