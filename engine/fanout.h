// DurabilityFanout (fanout.md): durable acceptance of messages with one independent delivery
// obligation per recipient target, delivered in bounded per-target passes of the shared scheduler,
// settled once per attempt (ack, retry, dead letter), retried by policy and dead-lettered through an
// optional DLQ with the terminal intent committed first.
// Keeps FAN-01 (an enqueue batch is one transaction; a rejection writes nothing), FAN-02 (every row
// removal updates its manifest in the same transaction), FAN-05 (seq from a counter that survives
// deletes), FAN-06 (a row is claimed, attempt and deadline committed, before it is handed out),
// FAN-09 (one settlement per message capability), FAN-10 (phase only moves to dead_letter and a
// dead_letter row is never claimed), FAN-11 (DLQ write before removal), FAN-15 (one pass per target),
// FAN-19 (delivery identity json([generation, target])), FAN-23 (the whole batch claimed in one
// transaction; variant fanout.per_row_claim restores one per row).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/background.h"
#include "engine/errors.h"
#include "engine/lifecycle.h"
#include "engine/load.h"
#include "engine/migrations.h"
#include "engine/retry_policy.h"
#include "engine/runtime.h"
#include "engine/scheduler.h"

namespace durasim {

struct FanoutInput {
  std::optional<std::string> id;  // default: a new UUID
  nlohmann::json body;
  std::optional<std::string> deduplicationKey;  // default: id
};
struct EnqueueOptions {
  std::optional<std::vector<std::string>> targets;  // default: every configured target
};

struct StoredFailure {
  std::string reason;  // "exhausted" | "explicit"
  std::optional<ErrorInfo> error;
};
// What a storage target or the DLQ receives. `id` is the delivery identity: the same for every
// attempt and write of one delivery, unique per registration and target.
struct StoredMessage {
  std::string id, messageId, target;
  nlohmann::json body;
  int64_t enqueuedAt = 0, storedAt = 0, attempts = 0;
  std::optional<StoredFailure> failure;  // dead letters only
};
// The message outlives the returned Task (it lives in the frame that awaits it).
using MessageWrite = std::function<Task<void>(const StoredMessage&)>;

class DurabilityFanout;

// One message of a delivered batch. Copies share one settlement state: at most one of ack, retry
// and deadLetter takes effect; a second call, or any call after the batch closed, completes with
// FanoutSettlementError. Settlement actions start when called (they do not wait for the returned
// Task to be awaited); the Task completes when the action's transaction has.
class FanoutMessage {
 public:
  std::string id, deliveryId, target;
  nlohmann::json body;
  int64_t attempt = 0;  // 1-based, the stored attempt after the claim
  int64_t enqueuedAt = 0;

  Task<void> ack();
  // RangeError("delayMs must be a non-negative safe integer") for a negative or unsafe delay,
  // without consuming the settlement.
  Task<void> retry(std::optional<int64_t> delayMs = std::nullopt);
  Task<void> deadLetter();
  // fanout.md 8: the stored result of `step` for this delivery, or fn()'s, stored if the delivery
  // is still in its delivery phase (first writer wins). Not a settlement.
  Task<nlohmann::json> memoize(std::string step, std::function<Task<nlohmann::json>()> fn);

 private:
  friend class DurabilityFanout;
  struct State;
  std::shared_ptr<State> state_;
};

struct FanoutTarget : ExecutionPolicyOptions {               // attemptTimeoutMs, retries
  std::function<Task<void>(std::vector<FanoutMessage>)> deliver;  // a consumer target, or
  MessageWrite storage;                                           // a storage target
  bool ackOnReturn = false;                                       // consumer targets only
};

struct FanoutOptions {
  std::map<std::string, FanoutTarget> targets;
  RoutingLoad* routing = nullptr;  // absent = a private RoutingLoad
  MessageWrite dlq;                // empty = no DLQ: terminal deliveries are dropped
  int64_t maxBatchSize = 10;
  int64_t batchDelayMs = 0;
  std::optional<int64_t> attemptTimeoutMs;  // default 300000
  std::optional<RetryOptions> retries;      // default maxAttempts 5, jittered exponential
  LifecycleHook onLifecycleEvent;
};

inline constexpr int64_t kDefaultFanoutBatchSize = 10;
inline constexpr int64_t kFanoutDlqTimeoutMs = 60000;       // DLQ write deadline
inline constexpr int64_t kFanoutDlqRetryMs = 60000;         // a failed DLQ write is due again after
inline constexpr int64_t kFanoutRemovedTargetDelayMs = 60000;  // rows of an unconfigured target wait

class DurabilityFanout final : public Participant {
 public:
  // Validates the options (RangeError, TypeError) before any write, applies migration `fanout` and
  // registers participant "deliveries" (one fanout per scheduler).
  DurabilityFanout(DurabilityScheduler& scheduler, FanoutOptions options);
  ~DurabilityFanout() override;

  // fanout.md 3: all messages or none. A definite rejection is success = false with nothing
  // written; a storage failure is thrown (acceptance uncertain).
  Task<EnqueueResult<std::vector<std::string>>> enqueue(std::vector<FanoutInput> messages, EnqueueOptions options = {});
  Task<EnqueueResult<std::vector<std::string>>> enqueue(FanoutInput message, EnqueueOptions options = {});
  // fanout.md 7: the routing snapshot with the stored count of delivery rows.
  Task<LoadSnapshot> load();
  Task<void> alarm(std::optional<AlarmInvocationInfo> info = std::nullopt) { return engine_.alarm(info); }

  static MigrationResult migrate(ObjectStorage& storage, MigrationTarget target = MigrationTarget::latest());
  static const std::vector<Migration>& migrations();
  // json([generation, target]): the identity of one delivery (fanout.md 2).
  static std::string deliveryId(const std::string& generation, const std::string& target);
  // json([key, target]): the primary key of a delivery row.
  static std::string rowId(const std::string& key, const std::string& target);

  // Participant.
  std::string kind() const override { return "deliveries"; }
  std::optional<int64_t> nextPendingAt(StorageTxn& txn) override;
  Task<void> runDue(int64_t startedAt, std::optional<AlarmInvocationInfo> info) override;

 private:
  friend class FanoutMessage;
  struct Row;
  struct Resolved;
  struct Invocation;

  Task<void> runTarget(std::string target);
  Task<void> passOf(std::string target);
  Task<void> postponeRemovedTarget(const std::string& target, const std::vector<Row>& due, int64_t now);
  std::vector<Row> claim(const std::string& target, const std::vector<Row>& candidates, const Resolved& policy);
  Task<void> claimPerRow(std::string target, std::vector<Row> candidates, Resolved policy, std::vector<Row>* claimed);
  Task<void> deliverBatch(std::string target, std::vector<Row> claims, Resolved policy);
  Task<void> invoke(std::string target, std::vector<FanoutMessage> messages, Resolved policy, std::shared_ptr<Invocation> call);
  Task<void> writeStored(std::string target, FanoutMessage message);
  Task<void> ackUnsettled(std::vector<FanoutMessage> messages);
  Task<void> afterBatch(const Row& claim, const FanoutMessage& message, std::exception_ptr failure);
  Task<void> ack(std::shared_ptr<FanoutMessage::State> state);
  Task<void> retryDelivery(Row row, std::optional<int64_t> overrideDelayMs, ErrorInfo error);
  Task<void> deadLetter(Row row, std::string reason, std::optional<ErrorInfo> failure);
  Task<nlohmann::json> memoize(std::shared_ptr<FanoutMessage::State> state, std::string step,
                               std::function<Task<nlohmann::json>()> fn);
  // A settlement call that cannot take effect: probed, and a Task that fails with `error`. `why` is
  // "range" for an invalid delay (the settlement is not consumed); otherwise the state says.
  Task<void> refuse(std::shared_ptr<FanoutMessage::State> state, std::string outcome, std::exception_ptr error,
                    std::optional<std::string> why = std::nullopt);
  // Chooses `outcome` and starts `action` at once; awaitAction completes when it has.
  void startAction(const std::shared_ptr<FanoutMessage::State>& state, std::string outcome, Task<void> action);
  static Task<void> runAction(Task<void> action, std::shared_ptr<FanoutMessage::State> state);
  static Task<void> awaitAction(std::shared_ptr<FanoutMessage::State> state);
  bool deleteFenced(EngineTxn& txn, const Row& row, const char* phase);
  void removeRow(EngineTxn& txn, const Row& row);
  std::optional<Row> reread(const Row& row);
  FanoutMessage messageOf(const Row& row);
  Resolved policyFor(const std::string& target) const;
  Task<void> backgroundPass();
  int64_t pendingCount();
  int64_t firstAttemptAt(int64_t t) const;
  // Lifecycle events of a delivery row (fanout.md 9): entity "delivery", name = target, id = deliveryId.
  static LifecycleEvent deliveryEvent(LifecycleType type, const Row& row);
  static LifecycleEvent completed(const Row& row);  // attempt_settled{completed}
  void emit(LifecycleEvent event) const;

  ObjectContext& ctx_;
  Engine& engine_;
  FanoutOptions options_;
  bool perRowClaim_;  // variant fanout.per_row_claim (hazards.md H-F1)
  std::optional<RoutingLoad> ownRouting_;
  RoutingLoad* routing_;
  PassSet passes_;  // one pass per target (fanout.md 4.1)
};

}  // namespace durasim
