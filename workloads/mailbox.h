// Mailbox: the application object of the fanout seed, composing the shared scheduler and
// DurabilityFanout with two static targets: "consumer", which forwards each batch by RPC to the
// FanoutConsumer object and applies the settlement it decides per message, and "archive", a storage
// target writing create-only into the cold bucket kArchiveBucket; its DLQ writes create-only into
// kDeadLetterBucket. Cold keys are "<mailbox label>/<delivery id>": a rewrite of one delivery finds
// its entry and leaves it. Some seeds attach named alarms beside the fanout (a second participant
// kind on one scheduler). An incarnation may be built without the archive target (a deployment that
// removed it, fanout.md 4.4); it states its targets in "app.fan.targets". Before it forwards a batch,
// workload.handler_throw / handler_hang may fail or stall the call (runtime.md 11.2); then it takes a
// routing token per message through `memoize` (step "route", reported as "app.fan.memo.compute" when
// computed and "app.fan.memo" when returned) and sends it with the message. Every load snapshot it
// answers with is reported ("app.fan.load").
// RPC methods: enqueue {messages: [{id?, key?, body}], targets?} (the EnqueueResult envelope of
// workloads/envelope.h), redrive {limit} (application redrive of its own DLQ entries: re-enqueue for
// the entry's target under the entry's id as key, remove the entry only after success), schedule
// {name, at} (with alarms), ping (the load envelope).
//
// The consumer target's object (by default one FanoutConsumer, "FanoutConsumer/c0"; the config may
// name another, e.g. an Account) receives `consume` {mailbox, target, deadline, messages:
// [{deliveryId, id, attempt, token, body}]} and answers {decisions: [...]}, one per message, or
// {error}. FanoutConsumer records each receipt through a FanoutReceiver (fanout_receiver.h) and
// answers the decisions it draws: ack, retry {delayMs} (sometimes an invalid delay), deadLetter,
// none (return without settling), each sometimes followed by a second settlement call; a few calls
// answer only after the batch deadline has passed, a few just before it (settlements at the exact
// deadline).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/alarms.h"
#include "engine/fanout.h"
#include "engine/scheduler.h"
#include "sim/fault_points.h"
#include "workloads/fanout_receiver.h"

namespace durasim::workloads {

inline constexpr char kConsumerTarget[] = "consumer";
inline constexpr char kArchiveTarget[] = "archive";
inline constexpr char kArchiveBucket[] = "fanout-archive";
inline constexpr char kDeadLetterBucket[] = "fanout-dead-letters";
inline constexpr char kTickAlarm[] = "tick";  // the named alarm of mailboxes with alarms
inline constexpr char kFanoutConsumerClass[] = "FanoutConsumer";
inline constexpr char kFanoutConsumerName[] = "c0";

struct MailboxConfig {
  SchedulerOptions scheduler;
  bool ackOnReturn = false;
  bool withDlq = true;
  bool withAlarms = false;
  bool withArchive = true;  // false: this incarnation's code has no archive target
  int64_t maxBatchSize = kDefaultFanoutBatchSize;
  int64_t batchDelayMs = 0;
  int64_t attemptTimeoutMs = 20'000;
  int64_t maxAttempts = 4;
  // The object the consumer target forwards each batch to (not stated in toJson: no checker needs it).
  std::string consumerClass = kFanoutConsumerClass, consumerName = kFanoutConsumerName;
  // What the checkers must know of the application, as stated in the "workload.config" event.
  nlohmann::json toJson() const;
};

// The cold key of a stored message of `mailbox` (its object label).
std::string storedKey(const std::string& mailbox, const std::string& deliveryId);

class Mailbox final : public DurableObject {
 public:
  static constexpr const char* kClass = "Mailbox";

  // `faults` may be null (no injected misbehaviour).
  Mailbox(ObjectContext& ctx, const MailboxConfig& config, sim::FaultInjector* faults);

  bool hasAlarmHandler() const override { return true; }
  Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) override;
  Task<void> alarm(const AlarmInvocationInfo& info) override { return scheduler_.alarm(info); }

 private:
  FanoutOptions options();
  Task<void> deliver(std::vector<FanoutMessage> messages);
  Task<void> settle(FanoutMessage message, nlohmann::json decision, int64_t handedOutAt);
  Task<void> store(const char* bucket, StoredMessage message);
  Task<nlohmann::json> enqueue(nlohmann::json args);
  Task<nlohmann::json> routeToken(FanoutMessage message);
  void reportLoad(const LoadSnapshot& load);
  Task<nlohmann::json> redrive(int64_t limit);
  Task<void> misbehave(const char* point);
  std::string label() const { return ctx_.id.first + "/" + ctx_.id.second; }

  ObjectContext& ctx_;
  MailboxConfig config_;
  sim::FaultInjector* faults_;
  DurabilityScheduler scheduler_;
  std::unique_ptr<DurabilityAlarms> alarms_;
  std::unique_ptr<DurabilityFanout> fanout_;
};

class FanoutConsumer final : public DurableObject {
 public:
  static constexpr const char* kClass = kFanoutConsumerClass;
  static constexpr const char* kName = kFanoutConsumerName;

  // `hangMs`: how long a stalled answer waits (more than the mailboxes' batch deadline).
  FanoutConsumer(ObjectContext& ctx, int64_t hangMs);
  Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) override;

 private:
  FanoutReceiver receiver_;
  int64_t hangMs_;
};

}  // namespace durasim::workloads
