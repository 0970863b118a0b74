// The runtime workload: `Counter` objects (workloads/counter_app.h) that write idempotently, set
// alarms, call each other (one call at a time, or bursts on one stub), archive to the cold store
// and rewrite scratch keys at gaps around the per-key write limit, driven by clients that retry
// uncertain outcomes with the same operation id (workloads/client.h). Its checks are the counters
// that must add up across every crash (RT-05, RT-06, RT-16); every acknowledged archive present in
// the cold store, each create-only archive key written once, and what a rewrite read back (RT-20,
// RT-22); archives expired within their rule's bounds, computed from their upload (RT-21). The
// runtime's own checks (RT-14, RT-15, RT-24, RT-25 among them) come from
// properties/runtime_checks.h like every workload's. Options switch on the Counter's probes
// (CounterProbes), each off by default: sections, aborts (whose rows must never be stored: RT-06),
// failing_alarms, canary, late_writes.
#include "workloads/runtime_workload.h"

#include <map>

#include "sim/object_runtime.h"
#include "workloads/actor_stream.h"
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
constexpr const char* kScratch = Counter::kScratch;
constexpr int64_t kArchiveExpiryDays = 1;  // longer than any run: archives stay, their lifecycle lag is drawn
// runtime.md 10, restated rather than taken from sim/cold_store.h: due = upload + days x kMsPerDay,
// removed within kLifecycleLagMaxMs of due.
constexpr int64_t kMsPerDay = 86'400'000;
constexpr int64_t kLifecycleLagMaxMs = 86'400'000;
constexpr int64_t kMaxBurstCalls = 4;
constexpr int64_t kColdWriteIntervalMs = 1'000;  // runtime.md 10: rewrites draw gaps around it
constexpr int64_t kMaxRewriteGapMs = 2 * kColdWriteIntervalMs;

enum class Op { add, arm, relay, burst, archive, rewrite, exclusive, abort };

struct Ledger {
  std::map<std::string, std::string> acked;   // op id -> object name, for operations acknowledged
  std::set<std::string> archived;            // cold keys of acknowledged archives
  std::set<std::string> relayed;             // op ids of acknowledged relays ("<op>/relay" on the target)
  std::map<std::string, std::string> refused;  // op id -> object, refused as overloaded (never executed)
  std::vector<RewriteRead> rewrites;
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
    const std::set<std::string> vanished = vanished_keys(runtime_->cold_store().history(), kBucket);
    for (const std::string& key : ledger_.archived) {
      if (vanished.count(key)) continue;  // cold.vanish (arbitrary) may remove an acknowledged object
      const bool present = runtime_->cold_store().head(kBucket, key, world.now()).has_value();
      tallies.check("RT-20", present, [&] { return "acknowledged archive " + key + " is missing from the cold store"; });
    }
    const std::vector<sim::ColdEvent>& history = runtime_->cold_store().history();
    check_create_only(history, kBucket, tallies);
    check_rewrites(history, kScratch, ledger_.rewrites, tallies);
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

  // RT-21: expired archives went no earlier than due and no later than due + the maximum lag, due
  // computed from the upload the store's history shows and the archive's rule; every archive still
  // stored is not overdue.
  void check_lifecycle(int64_t now, sim::Tallies& tallies) {
    sim::ColdStore& cold = runtime_->cold_store();
    cold.expire(now);
    check_expiries(cold.history(), kBucket, kArchiveExpiryDays, tallies);
    std::optional<std::string> cursor;
    do {
      const ColdList page = cold.list(kBucket, "", cursor, sim::kColdListMax, now);
      for (const ColdObject& object : page.objects) {
        const int64_t due = object.uploaded + kArchiveExpiryDays * kMsPerDay;
        tallies.check("RT-21", now <= due + kLifecycleLagMaxMs, [&] {
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
    ActorStream ops(world_->random(), "runtime", "client", c);
    for (int64_t i = 0; i < ops_ && ops.next_operation(); ++i) {
      co_await world_->sleep_for(ops.between(0, kMaxThinkMs));
      const std::string op = "k" + std::to_string(c) + "." + std::to_string(i);
      const std::string target = object_name(ops.between(0, objects_ - 1));
      nlohmann::json args = {{"op", op}};
      std::string method;
      switch (menu_[ops.index(menu_.size())]) {
        case Op::add:
          method = "add";
          args["key"] = std::string("k").append(std::to_string(ops.between(0, 2)));
          args["amount"] = ops.between(1, 100);
          break;
        case Op::arm:
          method = "arm";
          args["delay"] = ops.between(0, kMaxAlarmDelayMs);
          if (probes_.failing_alarms) args["fails"] = ops.between(0, 1) == 1;
          break;
        case Op::relay:
          method = "relay";
          args["to"] = object_name(ops.between(0, objects_ - 1));
          args["amount"] = ops.between(1, 100);
          relay_targets_[op] = args["to"].get<std::string>();
          break;
        case Op::burst:
          method = "burst";
          args["to"] = object_name(ops.between(0, objects_ - 1));
          args["calls"] = ops.between(2, kMaxBurstCalls);
          break;
        case Op::archive:
          method = "archive";
          break;
        case Op::rewrite:
          method = "rewrite";
          args["gap"] = ops.between(0, kMaxRewriteGapMs);
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
    if (method == "rewrite") {
      const nlohmann::json& value = settled.reply.value;
      ledger_.rewrites.push_back({value.at("key").get<std::string>(), value.at("rejected").get<bool>(), value.at("seen")});
    }
  }

  sim::World* world_ = nullptr;
  faults::FaultPlan* faults_ = nullptr;
  std::unique_ptr<sim::ObjectRuntime> runtime_;
  std::unique_ptr<ObjectClient> client_;
  int64_t objects_ = 0, clients_ = 0, ops_ = 0;
  CounterProbes probes_;
  std::vector<Op> menu_ = {Op::add, Op::arm, Op::relay, Op::burst, Op::archive, Op::rewrite};  // what clients draw from
  std::optional<std::string> storage_dir_;  // file-backed object stores (option storage_dir)
  int64_t clients_done_ = 0;
  Ledger ledger_;
  std::map<std::string, std::string> relay_targets_;
};

}  // namespace

void check_expiries(const std::vector<sim::ColdEvent>& history, const std::string& bucket, int64_t expire_after_days,
                    sim::Tallies& tallies) {
  std::map<std::string, int64_t> uploaded;  // key -> time of its last put
  for (const sim::ColdEvent& event : history) {
    if (event.bucket != bucket) continue;
    if (event.kind == sim::ColdEventKind::put) uploaded[event.key] = event.time;
    if (event.kind != sim::ColdEventKind::expire) continue;
    const auto put = uploaded.find(event.key);
    if (put == uploaded.end()) {
      tallies.check("RT-21", false, [&] { return event.key + " expired at " + std::to_string(event.time) + " but was never put"; });
      continue;
    }
    const int64_t due = put->second + expire_after_days * kMsPerDay;
    tallies.check("RT-21", due <= event.time && event.time <= due + kLifecycleLagMaxMs, [&] {
      return event.key + " expired at " + std::to_string(event.time) + ", due " + std::to_string(due);
    });
  }
}

void check_create_only(const std::vector<sim::ColdEvent>& history, const std::string& bucket, sim::Tallies& tallies) {
  std::map<std::string, int64_t> puts;  // key -> puts accepted since its last removal
  for (const sim::ColdEvent& event : history) {
    if (event.bucket != bucket) continue;
    if (event.kind != sim::ColdEventKind::put) {
      puts.erase(event.key);
      continue;
    }
    const int64_t accepted = ++puts[event.key];
    tallies.check("RT-20", accepted == 1, [&] {
      return "create-only put of " + event.key + " accepted at t=" + std::to_string(event.time) + " while the key held an earlier put";
    });
  }
}

std::set<std::string> vanished_keys(const std::vector<sim::ColdEvent>& history, const std::string& bucket) {
  std::set<std::string> vanished;
  for (const sim::ColdEvent& event : history)
    if (event.bucket == bucket && event.kind == sim::ColdEventKind::vanish) vanished.insert(event.key);
  return vanished;
}

void check_rewrites(const std::vector<sim::ColdEvent>& history, const std::string& bucket, const std::vector<RewriteRead>& rewrites,
                    sim::Tallies& tallies) {
  const std::set<std::string> vanished = vanished_keys(history, bucket);
  for (const RewriteRead& rewrite : rewrites) {
    if (vanished.count(rewrite.key)) continue;
    const std::string expected = rewrite.rejected ? "first" : "second";
    tallies.check(rewrite.rejected ? "RT-22" : "RT-20", rewrite.seen == expected, [&] {
      return "rewrite of " + rewrite.key + (rewrite.rejected ? " was rejected" : " was accepted") + " but the read after it saw " +
             rewrite.seen.dump();
    });
  }
}

WorkloadInfo runtime_workload_info() {
  return {"runtime", "Counter objects that write, set alarms, call each other and archive to the cold store",
          [](const nlohmann::json& options) -> std::unique_ptr<Workload> {
            return std::make_unique<RuntimeWorkload>(options);
          },
          {{"RT", ""}},
          {{"objects", kDefaultObjects}, {"clients", kDefaultClients}, {"ops", kDefaultOpsPerClient}}};
}

}  // namespace durasim::workloads
