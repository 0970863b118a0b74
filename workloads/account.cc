// Account and OutboxSink; see account.h.
#include "workloads/account.h"

#include <limits>
#include <optional>
#include <stdexcept>
#include <utility>

#include "engine/conventions.h"
#include "engine/errors.h"
#include "engine/outbox_events.h"
#include "workloads/bus_app.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kHangMinMs = 1'000, kHangMaxMs = 60'000;  // workload.handler_hang before a publish
constexpr double kLateMarkChance = 0.05;     // marks made at or just after the batch deadline
constexpr double kInvalidDelayChance = 0.1;  // a retry mark first asked with a negative delay
constexpr int64_t kMaxMarkDelayMs = 3'000;
constexpr double kSinkRefusalChance = 0.05, kSinkRetryChance = 0.08, kSinkStallChance = 0.05;

// Thrown by a deposit that aborts on purpose after staging.
struct AbortedOnPurpose {};

std::string sinkTable() { return std::string(outbox_events::kSinkTable); }

}  // namespace

nlohmann::json AccountConfig::toJson() const {
  nlohmann::json retry = {{"kind", retryKind}};
  if (retryKind == "fixed") retry["delayMs"] = retryDelayMs;
  return {{"alarmMinDelayMs", scheduler.alarmMinDelayMs},
          {"alarmConcurrency", scheduler.alarmConcurrency},
          {"channels", channels},
          {"maxBatchSize", maxBatchSize},
          {"batchDelayMs", batchDelayMs},
          {"attemptTimeoutMs", attemptTimeoutMs},
          {"retry", std::move(retry)}};
}

// ---------------------------------------------------------------------------------------------
// Account

Account::Account(ObjectContext& ctx, const AccountConfig& config, std::vector<std::string> channels, sim::FaultInjector* faults)
    : ctx_(ctx), config_(config), faults_(faults), scheduler_(ctx, config.scheduler) {
  ctx_.storage.exec("CREATE TABLE IF NOT EXISTS account_balances (key TEXT PRIMARY KEY, balance INTEGER NOT NULL)");
  ctx_.storage.exec("CREATE TABLE IF NOT EXISTS account_meta (id INTEGER PRIMARY KEY CHECK (id = 1), retired INTEGER NOT NULL)");
  retired_ = ctx_.storage.exec("SELECT retired FROM account_meta WHERE id = 1").next().has_value();
  if (retired_) {
    DurabilityOutbox::migrate(ctx_.storage, MigrationTarget::none());
    ctx_.probe(outbox_events::kAppMigratedNone, {{"account", label()}});
    channels.clear();
  }
  for (const std::string& channel : channels) outboxes_[channel] = std::make_unique<DurabilityOutbox>(scheduler_, options(channel));
  ctx_.probe(outbox_events::kAppChannels, {{"account", label()}, {"channels", channels}});
  if (config_.target) {
    receiver_.emplace(ctx_);
    ctx_.storage.exec("CREATE TABLE IF NOT EXISTS account_applied (id TEXT PRIMARY KEY, at INTEGER NOT NULL)");
  }
}

OutboxOptions Account::options(const std::string& channel) {
  OutboxOptions o;
  o.channel = channel;
  o.publish = [this, channel](std::vector<OutboxEntry> entries) { return publish(channel, std::move(entries)); };
  o.maxBatchSize = config_.maxBatchSize;
  o.batchDelayMs = config_.batchDelayMs;
  o.attemptTimeoutMs = config_.attemptTimeoutMs;
  if (config_.retryKind == "fixed") {
    const double delay = static_cast<double>(config_.retryDelayMs);
    o.retries.delay = [delay](int64_t) { return delay; };
  } else if (config_.retryKind == "invalid") {
    o.retries.delay = [](int64_t) { return std::numeric_limits<double>::quiet_NaN(); };
  }
  return o;
}

Task<nlohmann::json> Account::call(std::string_view method, const nlohmann::json& args) {
  if (method == "deposit") co_return deposit(args);
  if (method == "ping") {
    Task<nlohmann::json> pinging = ping();
    co_return co_await pinging;
  }
  if (method == "consume" && receiver_) {
    Task<nlohmann::json> consuming = consume(args);
    co_return co_await consuming;
  }
  if (method == "retire") {
    Task<void> retiring = retire();
    co_await retiring;
    co_return nlohmann::json::object();  // not reached: retire resets the object
  }
  throw std::invalid_argument("Account has no method " + std::string(method));
}

// One application transaction: the balance and its stages commit or roll back together.
nlohmann::json Account::deposit(const nlohmann::json& args) {
  if (retired_) return {{"retired", true}};
  const std::string key = args.at("key").get<std::string>();
  const int64_t amount = args.at("amount").get<int64_t>();
  const bool audit = args.value("audit", false) && outboxes_.count(kAuditChannel) > 0;
  nlohmann::json staged = nlohmann::json::array();
  try {
    ctx_.storage.transactionSync([&](StorageTxn& txn) {
      txn.exec("INSERT INTO account_balances (key, balance) VALUES (?, ?)"
               " ON CONFLICT (key) DO UPDATE SET balance = balance + excluded.balance",
               key, amount);
      const int64_t balance = txn.exec("SELECT balance FROM account_balances WHERE key = ?", key).one().int64("balance");
      DurabilityOutbox& ledger = *outboxes_.at(kLedgerChannel);
      const int64_t version = ledger.stage(txn, key, {{"balance", balance}, {"op", args.at("op")}});
      staged.push_back({{"channel", kLedgerChannel}, {"key", key}, {"version", version}});
      if (audit) {
        const int64_t auditVersion = outboxes_.at(kAuditChannel)->stage(txn, key, {{"amount", amount}, {"op", args.at("op")}});
        staged.push_back({{"channel", kAuditChannel}, {"key", key}, {"version", auditVersion}});
      }
      if (args.value("abort", false)) throw AbortedOnPurpose{};
    });
  } catch (const AbortedOnPurpose&) {
    ctx_.probe(outbox_events::kAppAborted, {{"account", label()}, {"staged", staged}});
    return {{"aborted", true}};
  } catch (const RangeError& e) {
    return {{"error", {{"name", "RangeError"}, {"message", e.what()}}}};
  }
  return {{"versions", std::move(staged)}};
}

Task<nlohmann::json> Account::ping() {
  nlohmann::json pending = nlohmann::json::object();
  for (auto& [channel, outbox] : outboxes_) {
    Task<int64_t> counting = outbox->pending();
    pending[channel] = co_await counting;
  }
  co_return nlohmann::json{{"pending", std::move(pending)}};
}

// Marks the account retired, durably, then resets it: its next incarnation removes the schema.
Task<void> Account::retire() {
  ctx_.storage.exec("INSERT OR IGNORE INTO account_meta (id, retired) VALUES (1, 1)");
  co_await ctx_.storage.sync();
  ctx_.abort("account retired");
}

// The consumer target's call: every receipt recorded, every message applied once, every message's
// event on the bus, then the decisions (paced as the receiver draws, until heal).
Task<nlohmann::json> Account::consume(nlohmann::json args) {
  receiver_->receive(args);
  const nlohmann::json& messages = args.at("messages");
  for (const nlohmann::json& message : messages) apply(message);
  for (const nlohmann::json& message : messages) {
    Task<void> emitting = emitApplied(message);
    co_await emitting;
  }
  const bool healed = *config_.target->healed;
  nlohmann::json decisions = nlohmann::json::array();
  for (std::size_t i = 0; i < messages.size(); ++i) decisions.push_back(healed ? nlohmann::json{{"action", "ack"}} : receiver_->decide());
  if (!healed) {
    Task<bool> pacing = receiver_->pace(args.at("deadline").get<int64_t>(), config_.target->hangMs);
    if (!co_await pacing) co_return nlohmann::json{{"error", "account refused the batch"}};
  }
  co_return nlohmann::json{{"decisions", std::move(decisions)}};
}

// One application transaction per message not applied before: its deposit and its stage.
void Account::apply(const nlohmann::json& message) {
  const std::string id = message.at("id").get<std::string>();
  const nlohmann::json& body = message.at("body");
  const std::string key = body.at("key").get<std::string>();
  ctx_.storage.transactionSync([&](StorageTxn& txn) {
    if (txn.exec("SELECT id FROM account_applied WHERE id = ?", id).next()) return;
    txn.exec("INSERT INTO account_applied (id, at) VALUES (?, ?)", id, ctx_.clock.now());
    txn.exec("INSERT INTO account_balances (key, balance) VALUES (?, ?)"
             " ON CONFLICT (key) DO UPDATE SET balance = balance + excluded.balance",
             key, body.at("amount").get<int64_t>());
    const int64_t balance = txn.exec("SELECT balance FROM account_balances WHERE key = ?", key).one().int64("balance");
    outboxes_.at(kLedgerChannel)->stage(txn, key, {{"balance", balance}, {"op", id}});
  });
}

// The event of an applied message; its id is the message's, so a repeat changes nothing stored.
Task<void> Account::emitApplied(nlohmann::json message) {
  const nlohmann::json& body = message.at("body");
  nlohmann::json args = {{"topic", config_.target->topic},
                         {"id", message.at("id")},
                         {"payload", {{"account", label()}, {"key", body.at("key")}, {"amount", body.at("amount")}}}};
  Stub bus = ctx_.objects(Bus::kClass).get(config_.target->bus);
  Task<nlohmann::json> calling = bus.call("emit", args);
  const nlohmann::json answer = co_await calling;
  if (answer.contains("error")) throw std::runtime_error("bus refused an event: " + answer.at("error").dump());
}

// The channel's publish: one call to the sink; every entry it did not apply is marked for retry.
Task<void> Account::publish(std::string channel, std::vector<OutboxEntry> entries) {
  const int64_t deadline = ctx_.clock.now() + config_.attemptTimeoutMs;
  co_await misbehave("outbox.publish");
  nlohmann::json sent = nlohmann::json::array();
  for (const OutboxEntry& entry : entries)
    sent.push_back({{"key", entry.key}, {"version", entry.version}, {"value", *serialize(entry.value)}});
  Stub sink = ctx_.objects(outbox_events::kSinkClass).get(OutboxSink::kName);
  Task<nlohmann::json> calling = sink.call("apply", {{"source", label()}, {"channel", channel}, {"entries", std::move(sent)}});
  const nlohmann::json answer = co_await calling;
  if (answer.contains("error")) throw std::runtime_error("sink refused: " + answer.at("error").get<std::string>());
  if (ctx_.random.random() < kLateMarkChance && deadline >= ctx_.clock.now()) {
    const int64_t markAt = deadline + (ctx_.random.random() < 0.5 ? 0 : 1);  // at the exact deadline, or just after it
    co_await ctx_.clock.sleepUntil(markAt);
  }
  const nlohmann::json& results = answer.at("results");
  for (std::size_t i = 0; i < entries.size(); ++i) {
    if (results.at(i).at("status") != "retry") continue;
    try {
      mark(entries[i], results.at(i));
    } catch (const OutboxSettlementError&) {
      // Too late: the batch closed, and a closed batch was rescheduled whole.
    }
  }
}

// entry.retry() as the sink asked, sometimes first with an invalid delay (refused with RangeError,
// no mark), then again properly: an entry the sink did not apply must not be acknowledged.
void Account::mark(OutboxEntry& entry, const nlohmann::json& answer) {
  if (ctx_.random.random() < kInvalidDelayChance) {
    try {
      entry.retry(-1);
    } catch (const RangeError&) {
    }
  }
  if (answer.contains("delayMs")) entry.retry(answer.at("delayMs").get<int64_t>());
  else entry.retry();
}

// workload.handler_throw / workload.handler_hang (runtime.md 11.2).
Task<void> Account::misbehave(const char* point) {
  if (!faults_) co_return;
  const sim::FaultSite site{label(), ctx_.incarnation, point};
  if (faults_->fires(sim::FaultKind::workload_handler_throw, site)) throw std::runtime_error("injected publish failure");
  int64_t hang = 0;
  if (faults_->fires(sim::FaultKind::workload_handler_hang, site, [&] {
        hang = kHangMinMs + static_cast<int64_t>(ctx_.random.random() * static_cast<double>(kHangMaxMs - kHangMinMs));
        return nlohmann::json{{"ms", hang}};
      }))
    co_await ctx_.clock.sleepFor(hang);
}

// ---------------------------------------------------------------------------------------------
// OutboxSink

OutboxSink::OutboxSink(ObjectContext& ctx, const bool* healed, int64_t stallMaxMs)
    : ctx_(ctx), healed_(healed), stallMaxMs_(stallMaxMs), lastWriterWins_(ctx.variants.count(std::string(kSinkLastWriterWins)) > 0) {
  ctx_.storage.exec("CREATE TABLE IF NOT EXISTS " + sinkTable() +
                    " (source TEXT NOT NULL, channel TEXT NOT NULL, key TEXT NOT NULL, version INTEGER NOT NULL,"
                    " value TEXT NOT NULL, PRIMARY KEY (source, channel, key))");
}

Task<nlohmann::json> OutboxSink::call(std::string_view method, const nlohmann::json& args) {
  if (method != "apply") throw std::invalid_argument("OutboxSink has no method " + std::string(method));
  const bool troubled = !*healed_;
  if (troubled && ctx_.random.random() < kSinkRefusalChance) co_return nlohmann::json{{"error", "sink unavailable"}};
  // A stalled call writes late: after a newer publication of the same key may have landed.
  if (troubled && ctx_.random.random() < kSinkStallChance)
    co_await ctx_.clock.sleepFor(static_cast<int64_t>(ctx_.random.random() * static_cast<double>(stallMaxMs_)));
  const std::string source = args.at("source").get<std::string>();
  const std::string channel = args.at("channel").get<std::string>();
  nlohmann::json results = nlohmann::json::array();
  for (const nlohmann::json& entry : args.at("entries")) {
    if (troubled && ctx_.random.random() < kSinkRetryChance) {
      nlohmann::json retry = {{"status", "retry"}};
      if (ctx_.random.random() < 0.5) retry["delayMs"] = static_cast<int64_t>(ctx_.random.random() * kMaxMarkDelayMs);
      results.push_back(std::move(retry));
      continue;
    }
    results.push_back(write(source, channel, entry));
  }
  co_return nlohmann::json{{"results", std::move(results)}};
}

// One entry: kept only if newer than what the sink holds (or always, for the naive sink).
nlohmann::json OutboxSink::write(const std::string& source, const std::string& channel, const nlohmann::json& entry) {
  const std::string key = entry.at("key").get<std::string>();
  const int64_t version = entry.at("version").get<int64_t>();
  const std::string value = entry.at("value").get<std::string>();
  const bool applied = ctx_.storage.transactionSync([&](StorageTxn& txn) {
    const std::optional<SqlRow> held =
        txn.exec("SELECT version FROM " + sinkTable() + " WHERE source = ? AND channel = ? AND key = ?", source, channel, key).next();
    if (held && !lastWriterWins_ && held->int64("version") >= version) return false;
    txn.exec("INSERT INTO " + sinkTable() +
                 " (source, channel, key, version, value) VALUES (?, ?, ?, ?, ?)"
                 " ON CONFLICT (source, channel, key) DO UPDATE SET version = excluded.version, value = excluded.value",
             source, channel, key, version, value);
    ctx_.probe(outbox_events::kAppSinkWrite, {{"source", source}, {"channel", channel}, {"key", key}, {"version", version}, {"value", value}});
    return true;
  });
  return {{"status", applied ? "applied" : "superseded"}};
}

}  // namespace durasim::workloads
