// DurabilityOutbox (outbox.md): latest-state publication of keyed values to a sink outside the
// object. A stage writes the newest value of (channel, key) with an object-wide version, inside the
// application's own transaction or one of its own; channel passes of the shared scheduler claim due
// rows, publish them outside any transaction under a deadline, and settle the batch: acknowledged
// rows are deleted only while they still hold the published generation, the others rescheduled by
// their delay. There is no attempt limit and no dead letter: the newest value is retried forever.
// Several outboxes (channels) share one scheduler participant, the hub, and one set of tables.
// Keeps OBX-01/02 (versions from a counter that survives deletes), OBX-03 (restaging replaces the
// row with a new generation), OBX-04 (stage(txn) writes only inside the application's transaction),
// OBX-05 (acknowledgement fenced by generation), OBX-06/08 (a row is claimed, attempt and deadline
// committed, before it is published), OBX-09 (no give-up), OBX-12 (one pass per channel), OBX-13
// (rows of an unattached channel postponed, never dropped), OBX-17 (publish outside transactions),
// OBX-18 (late marks rejected).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/lifecycle.h"
#include "engine/migrations.h"
#include "engine/runtime.h"
#include "engine/scheduler.h"

namespace durasim {

// One staged value handed to publish. Copies share one retry mark.
class OutboxEntry {
 public:
  std::string channel, key;
  int64_t version = 0;
  nlohmann::json value;
  int64_t attempt = 0;  // 1-based claims since this version was staged
  int64_t stagedAt = 0;

  // Marks the entry for retry (outbox.md 5.3): the last given delayMs wins, a call without one keeps
  // an earlier one. After the batch closed: OutboxSettlementError. A negative or unsafe delay:
  // RangeError, no mark.
  void retry(std::optional<int64_t> delayMs = std::nullopt);

 private:
  friend class DurabilityOutbox;
  struct Mark;
  std::shared_ptr<Mark> mark_;
};

using OutboxPublish = std::function<Task<void>(std::vector<OutboxEntry>)>;

struct OutboxRetryOptions {
  std::function<double(int64_t attempt)> delay;  // empty: the default jittered exponential
};

struct OutboxOptions {
  std::string channel = "default";
  OutboxPublish publish;  // required
  int64_t maxBatchSize = 50;
  int64_t batchDelayMs = 0;
  int64_t attemptTimeoutMs = 60000;
  OutboxRetryOptions retries;  // no attempt limit: retries never give up
  LifecycleHook onLifecycleEvent;
};

inline constexpr int64_t kOutboxUnattachedDelayMs = 60000;  // rows of a channel no outbox attaches wait

class OutboxHub;

class DurabilityOutbox {
 public:
  // Validates the options (TypeError, RangeError) and that the channel is not attached to this
  // scheduler yet (TypeError) before any write, applies migration `outbox`, and attaches the channel
  // to the scheduler's hub (participant "outbox", registered with the first channel).
  DurabilityOutbox(DurabilityScheduler& scheduler, OutboxOptions options);
  ~DurabilityOutbox();
  DurabilityOutbox(const DurabilityOutbox&) = delete;
  DurabilityOutbox& operator=(const DurabilityOutbox&) = delete;

  // outbox.md 3, inside the application's own transaction: commits or rolls back with it. Returns
  // the staged version. RangeError for an empty key or an unserializable value, nothing written.
  int64_t stage(StorageTxn& applicationTxn, const std::string& key, const nlohmann::json& value);
  // The same in a transaction of its own; completes after the commit.
  Task<int64_t> stage(std::string key, nlohmann::json value);
  // The stored rows of this channel.
  Task<int64_t> pending();
  Task<void> alarm(std::optional<AlarmInvocationInfo> info = std::nullopt) { return engine_.alarm(info); }

  const std::string& channel() const { return options_.channel; }

  // MigrationTarget::none() removes both outbox tables (every channel's rows and the counter).
  static MigrationResult migrate(ObjectStorage& storage, MigrationTarget target = MigrationTarget::latest());
  static const std::vector<Migration>& migrations();

 private:
  friend class OutboxHub;
  friend class OutboxEntry;
  struct Row;

  // A pass of this channel (outbox.md 5): claim, publish, settle.
  int64_t writeStage(StorageTxn& txn, const std::string& key, const std::string& serialized);
  int64_t stageAlone(StorageTxn& txn, const std::string& key, std::string serialized);
  Task<void> commitAlone(std::string key, std::string serialized);
  Task<void> runPass();
  std::vector<Row> claim(EngineTxn& txn, int64_t now);
  Task<void> settle(std::vector<Row> claimed, std::vector<OutboxEntry> entries, std::exception_ptr failure);
  int64_t delayFor(const Row& row, const OutboxEntry& entry, int64_t now);
  int64_t firstAttemptAt(int64_t t) const;
  LifecycleEvent event(LifecycleType type, const std::string& key, int64_t attempt) const;
  void emit(LifecycleEvent event) const;

  ObjectContext& ctx_;
  Engine& engine_;
  OutboxOptions options_;
  // The calibration variants of engine/variants.h, read at construction.
  struct Variants {
    bool ackIgnoresGeneration = false, stageOwnTransaction = false, versionFromRows = false, giveUp = false;
  };
  const Variants variants_;
  int64_t stagesAlone_ = 0;  // stages of the variant stage_own_transaction not committed yet
  std::shared_ptr<OutboxHub> hub_;
};

}  // namespace durasim
