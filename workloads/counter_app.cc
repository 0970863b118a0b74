// The runtime workload's Counter; see counter_app.h.
#include "workloads/counter_app.h"

#include <algorithm>
#include <stdexcept>

#include "engine/runtime_events.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kRelayAttempts = 3;
constexpr int64_t kRelayBackoffMs = 500;                        // more after each lost attempt
constexpr int64_t kHangMinMs = 60'000, kHangMaxMs = 1'800'000;  // runtime.md 11.2 workload.handler_hang

}  // namespace

Counter::Counter(ObjectContext& ctx, sim::FaultInjector& faults, CounterProbes probes)
    : ctx_(ctx), faults_(faults), probes_(probes), born_in_(ctx.incarnation) {
  ctx_.storage.exec("CREATE TABLE IF NOT EXISTS ops (id TEXT PRIMARY KEY, key TEXT NOT NULL, amount INTEGER NOT NULL)");
  ctx_.storage.exec("CREATE TABLE IF NOT EXISTS counters (key TEXT PRIMARY KEY, value INTEGER NOT NULL)");
  ctx_.storage.exec("CREATE TABLE IF NOT EXISTS fires (scheduled INTEGER PRIMARY KEY, runs INTEGER NOT NULL)");
  if (probes_.aborts) ctx_.storage.exec("CREATE TABLE IF NOT EXISTS aborted (op TEXT PRIMARY KEY)");
  if (probes_.failing_alarms) ctx_.storage.exec("CREATE TABLE IF NOT EXISTS failing (scheduled INTEGER PRIMARY KEY)");
}

Task<nlohmann::json> Counter::call(std::string_view method, const nlohmann::json& args) {
  if (probes_.canary) ctx_.probe(runtime_events::kCanary, {{runtime_events::kBorn, born_in_}});
  co_await maybe_misbehave("call");
  if (method == "add") {
    Task<nlohmann::json> adding = add(args);
    co_return co_await adding;
  }
  if (method == "arm") co_return arm(args);
  if (method == "relay") co_return co_await relay(args);
  if (method == "archive") {
    Task<nlohmann::json> archiving = archive(args.at("op").get<std::string>());
    co_return co_await archiving;
  }
  if (method == "exclusive" && probes_.sections) {
    Task<nlohmann::json> holding = exclusive(args.at("op").get<std::string>());
    co_return co_await holding;
  }
  if (method == "abort" && probes_.aborts) abort_after_write(args.at("op").get<std::string>());
  throw std::invalid_argument("unknown method " + std::string(method));
}

Task<void> Counter::alarm(const AlarmInvocationInfo& info) {
  co_await maybe_misbehave("alarm");
  if (probes_.failing_alarms && !ctx_.storage.exec("SELECT 1 FROM failing WHERE scheduled = ?", info.scheduledTime).toVector().empty())
    throw std::runtime_error("this alarm always fails");
  ctx_.storage.exec("INSERT INTO fires (scheduled, runs) VALUES (?, 1) ON CONFLICT(scheduled) DO UPDATE SET runs = runs + 1",
                    info.scheduledTime);
}

// workload.handler_throw / workload.handler_hang (runtime.md 11.2).
Task<void> Counter::maybe_misbehave(const char* point) {
  const sim::FaultSite site{ctx_.id.first + "/" + ctx_.id.second, ctx_.incarnation, point};
  if (faults_.fires(sim::FaultKind::workload_handler_throw, site)) throw std::runtime_error("injected handler failure");
  int64_t hang = 0;
  if (faults_.fires(sim::FaultKind::workload_handler_hang, site, [&] {
        hang = kHangMinMs + static_cast<int64_t>(ctx_.random.random() * static_cast<double>(kHangMaxMs - kHangMinMs));
        return nlohmann::json{{"ms", hang}};
      }))
    co_await ctx_.clock.sleepFor(hang);
}

nlohmann::json Counter::apply(const std::string& op, const std::string& key, int64_t amount) {
  return ctx_.storage.transactionSync([&](StorageTxn& txn) {
    const SqlCursor inserted = txn.exec("INSERT OR IGNORE INTO ops (id, key, amount) VALUES (?, ?, ?)", op, key, amount);
    if (inserted.rowsWritten() > 0)
      txn.exec("INSERT INTO counters (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = value + excluded.value",
               key, amount);
    SqlCursor total = txn.exec("SELECT value FROM counters WHERE key = ?", key);
    return nlohmann::json{{"applied", inserted.rowsWritten() > 0}, {"total", total.one().int64("value")}};
  });
}

Task<nlohmann::json> Counter::add(const nlohmann::json& args) {
  if (probes_.late_writes) co_await ctx_.clock.sleepFor(kLateWriteMs);
  co_return apply(args.at("op").get<std::string>(), args.at("key").get<std::string>(), args.at("amount").get<int64_t>());
}

nlohmann::json Counter::arm(const nlohmann::json& args) {
  apply(args.at("op").get<std::string>(), "arms", 1);
  const int64_t at = std::max<int64_t>(ctx_.clock.now() + args.at("delay").get<int64_t>(), 1);
  if (probes_.failing_alarms && args.value("fails", false)) ctx_.storage.exec("INSERT OR IGNORE INTO failing (scheduled) VALUES (?)", at);
  ctx_.storage.setAlarm(at);
  return {{"armed", true}};
}

// Adds to another Counter through a stub, retrying lost connections with the same operation id.
Task<nlohmann::json> Counter::relay(const nlohmann::json& args) {
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
    co_await ctx_.clock.sleepFor(kRelayBackoffMs * attempt);
  }
}

// Archives the counters under a create-only key; a retry that finds the key holds the same body.
Task<nlohmann::json> Counter::archive(std::string op) {
  const std::string key = ctx_.id.second + "/" + op;
  ColdPutOptions create_only;
  create_only.etagDoesNotMatch = "*";
  Task<std::optional<ColdObject>> putting = ctx_.bucket(kBucket).put(key, op, create_only);
  co_await putting;
  apply(op, "archives", 1);
  co_return nlohmann::json{{"key", key}};
}

// Writes from inside a blockConcurrencyWhile section that waits first, as a migration reading
// something remote would: meanwhile nothing else of the object may run (RT-11).
Task<nlohmann::json> Counter::exclusive(std::string op) {
  Task<void> section = ctx_.blockConcurrencyWhile([this, op] { return exclusive_section(op); });
  co_await section;
  co_return nlohmann::json{{"exclusive", true}};
}

Task<void> Counter::exclusive_section(std::string op) {
  co_await ctx_.clock.sleepFor(kSectionMs);
  apply(op, "exclusive", 1);
}

void Counter::abort_after_write(const std::string& op) {
  ctx_.storage.exec("INSERT OR IGNORE INTO aborted (op) VALUES (?)", op);
  ctx_.abort("the workload aborts after a write");
}

}  // namespace durasim::workloads
