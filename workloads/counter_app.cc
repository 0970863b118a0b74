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
constexpr int64_t kTooManyRequests = 429;                       // runtime.md 10: a write within a second of the last

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
  if (method == "burst") {
    Task<nlohmann::json> bursting = burst(args);
    co_return co_await bursting;
  }
  if (method == "rewrite") {
    Task<nlohmann::json> rewriting = rewrite(args.at("op").get<std::string>(), args.at("gap").get<int64_t>());
    co_return co_await rewriting;
  }
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
      })) {
    Task<void> hanging = pause(hang);
    co_await hanging;
  }
}

// sleepFor, reported with the object's clock before and after (RT-25: never resumed early).
Task<void> Counter::pause(int64_t ms) {
  const int64_t asked = ctx_.clock.now();
  co_await ctx_.clock.sleepFor(ms);
  ctx_.probe(runtime_events::kSlept,
             {{runtime_events::kAsked, asked}, {runtime_events::kSleptMs, ms}, {runtime_events::kWoke, ctx_.clock.now()}});
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
  if (probes_.late_writes) {
    Task<void> waiting = pause(kLateWriteMs);
    co_await waiting;
  }
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
    Task<void> backing_off = pause(kRelayBackoffMs * attempt);
    co_await backing_off;
  }
}

// Adds to another Counter with `calls` calls in flight at once on one stub, which the runtime
// delivers in call order and fails together once one fails (RT-15).
Task<nlohmann::json> Counter::burst(nlohmann::json args) {
  const std::string op = args.at("op").get<std::string>();
  Stub stub = ctx_.objects(kClass).get(args.at("to").get<std::string>());
  std::vector<Task<nlohmann::json>> calls;
  for (int64_t i = 0; i < args.at("calls").get<int64_t>(); ++i)
    calls.push_back(stub.call("add", {{"op", op + "/burst." + std::to_string(i)}, {"key", "burst"}, {"amount", 1}}));
  Task<std::vector<nlohmann::json>> all = when_all(std::move(calls));
  co_await all;
  apply(op, "bursts", 1);
  co_return nlohmann::json{{"calls", args.at("calls")}};
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

// Writes a scratch key, waits `gap` ms, writes it again (a write within kColdWriteIntervalMs of the
// first is rejected with 429), and reads it back: the client checks that the read shows the second
// body if it was accepted, the first if it was rejected (RT-20, RT-22). Each attempt has a key of
// its own, so nothing else writes it.
Task<nlohmann::json> Counter::rewrite(std::string op, int64_t gap) {
  const std::string key = ctx_.id.second + "/" + op + "/" + std::to_string(ctx_.incarnation) + "." + std::to_string(++rewrites_);
  ColdBucket& bucket = ctx_.bucket(kScratch);
  Task<std::optional<ColdObject>> first = bucket.put(key, "first");
  co_await first;
  Task<void> waiting = pause(gap);
  co_await waiting;
  bool rejected = false;
  try {
    Task<std::optional<ColdObject>> second = bucket.put(key, "second");
    co_await second;
  } catch (const ColdError& e) {
    if (e.status() != kTooManyRequests) throw;
    rejected = true;
  }
  Task<std::optional<ColdObjectBody>> reading = bucket.get(key);
  const std::optional<ColdObjectBody> seen = co_await reading;
  apply(op, "rewrites", 1);
  co_return nlohmann::json{{"key", key}, {"rejected", rejected}, {"seen", seen ? nlohmann::json(seen->body) : nlohmann::json()}};
}

// Writes from inside a blockConcurrencyWhile section that waits first, as a migration reading
// something remote would: meanwhile nothing else of the object may run (RT-11).
Task<nlohmann::json> Counter::exclusive(std::string op) {
  Task<void> section = ctx_.blockConcurrencyWhile([this, op] { return exclusive_section(op); });
  co_await section;
  co_return nlohmann::json{{"exclusive", true}};
}

Task<void> Counter::exclusive_section(std::string op) {
  Task<void> holding = pause(kSectionMs);
  co_await holding;
  apply(op, "exclusive", 1);
}

void Counter::abort_after_write(const std::string& op) {
  ctx_.storage.exec("INSERT OR IGNORE INTO aborted (op) VALUES (?)", op);
  ctx_.abort("the workload aborts after a write");
}

}  // namespace durasim::workloads
