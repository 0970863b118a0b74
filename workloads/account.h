// Account: the application object of the outbox seed. It keeps balances in its own table and, in
// the same application transaction, stages each key's new state to the "ledger" channel (and, when
// asked, an audit record to the "audit" channel) through DurabilityOutbox on the shared scheduler.
// Some deposits throw on purpose after staging (the whole transaction rolls back; reported as
// "app.obx.aborted"); a deposit with an empty key is refused by the outbox with RangeError and
// rolls back too. Each channel publishes by RPC to the OutboxSink, marking with entry.retry() every
// entry the sink did not apply (now and then with an invalid delay first, which is refused, or at
// or after its batch deadline, when the batch may have closed). Before it calls the sink,
// workload.handler_throw / handler_hang may fail or stall a publish (a stalled one may land after a
// newer publication). An incarnation may be built without the audit channel (its rows are then
// retained and postponed, outbox.md 4); it states its channels in "app.obx.channels". A retired
// account (method retire) removes the outbox schema in its next incarnation
// (DurabilityOutbox::migrate(none), "app.obx.migrated_none") and refuses deposits. RPC methods:
// deposit {key, amount, abort, audit, op} -> {versions} | {aborted} | {error {name, message}} |
// {retired}; ping -> {pending {channel: rows}}; retire (resets the object).
// An Account configured as a Mailbox's consumer target (AccountConfig::target, the mixed workload)
// also answers `consume` (workloads/mailbox.h): it records each receipt (FanoutReceiver), applies
// each message once (table `account_applied`, by message id): its body {key, amount} is a deposit
// whose balance and stage commit in one transaction; then it emits one event per message of the
// batch, applied now or before, to the configured Bus (event id = message id, so a repeat is a
// duplicate) and answers a decision per message, drawn before heal, ack after it. An emit that
// fails fails the call, so the delivery is retried until its event is on the bus.
//
// OutboxSink (one object, "OutboxSink/s0"): `apply` {source, channel, entries [{key, version, value
// (serialized)}]} keeps, per (source, channel, key), the highest version it has accepted
// (compare-and-set; each write reported inside its transaction as "app.obx.sink.write") and answers
// per entry "applied", "superseded" or "retry" {delayMs}. Until heal it sometimes refuses a whole
// call, asks for retries, or stalls before writing. Under the variant sink.last_writer_wins it
// overwrites unconditionally: the naive sink of outbox.md 6.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/outbox.h"
#include "engine/scheduler.h"
#include "sim/fault_points.h"
#include "workloads/fanout_receiver.h"

namespace durasim::workloads {

inline constexpr char kLedgerChannel[] = "ledger";
inline constexpr char kAuditChannel[] = "audit";
// The harness variant (hazards.md, "Calibration variants for the outbox"): the naive sink.
inline constexpr std::string_view kSinkLastWriterWins = "sink.last_writer_wins";

// An Account that is a Mailbox's consumer target.
struct AccountTarget {
  const bool* healed = nullptr;  // outlives the object: from heal on every delivery is acknowledged
  int64_t hangMs = 0;            // how long a stalled answer waits (FanoutReceiver::pace)
  std::string bus, topic;        // the Bus object (by name) and the topic applied deliveries go to
};

struct AccountConfig {
  SchedulerOptions scheduler;
  std::vector<std::string> channels = {kLedgerChannel};  // the channels the application uses
  int64_t maxBatchSize = 50;
  int64_t batchDelayMs = 0;
  int64_t attemptTimeoutMs = 60'000;
  std::string retryKind = "default";  // "default" | "fixed" | "invalid" (falls back to the default)
  int64_t retryDelayMs = 0;           // with "fixed"
  std::optional<AccountTarget> target;  // not stated in toJson: the mixed workload states its own
  // What the checkers must know of the application, as stated in the "workload.config" event.
  nlohmann::json toJson() const;
};

class Account final : public DurableObject {
 public:
  static constexpr const char* kClass = "Account";

  // `channels`: those this incarnation attaches (a subset of config.channels). `faults` may be null.
  Account(ObjectContext& ctx, const AccountConfig& config, std::vector<std::string> channels, sim::FaultInjector* faults);

  bool hasAlarmHandler() const override { return true; }
  Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) override;
  Task<void> alarm(const AlarmInvocationInfo& info) override { return scheduler_.alarm(info); }

 private:
  OutboxOptions options(const std::string& channel);
  nlohmann::json deposit(const nlohmann::json& args);
  Task<nlohmann::json> ping();
  Task<void> retire();
  Task<nlohmann::json> consume(nlohmann::json args);
  void apply(const nlohmann::json& message);
  Task<void> emitApplied(nlohmann::json message);
  Task<void> publish(std::string channel, std::vector<OutboxEntry> entries);
  void mark(OutboxEntry& entry, const nlohmann::json& answer);
  Task<void> misbehave(const char* point);
  std::string label() const { return ctx_.id.first + "/" + ctx_.id.second; }

  ObjectContext& ctx_;
  AccountConfig config_;
  sim::FaultInjector* faults_;
  DurabilityScheduler scheduler_;
  bool retired_ = false;
  std::map<std::string, std::unique_ptr<DurabilityOutbox>> outboxes_;  // by channel
  std::optional<FanoutReceiver> receiver_;  // with config.target
};

class OutboxSink final : public DurableObject {
 public:
  static constexpr const char* kName = "s0";

  // `healed`: whether faults have healed (from then on the sink accepts every call); it outlives
  // the object.
  OutboxSink(ObjectContext& ctx, const bool* healed, int64_t stallMaxMs);
  Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) override;

 private:
  nlohmann::json write(const std::string& source, const std::string& channel, const nlohmann::json& entry);
  ObjectContext& ctx_;
  const bool* healed_;
  int64_t stallMaxMs_;
  bool lastWriterWins_;
};

}  // namespace durasim::workloads
