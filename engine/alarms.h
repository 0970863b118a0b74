// Named alarms (scheduler.md 5-6): durable occurrences, one row per name, run at least once by the
// shared scheduler with claim-before-invoke, per-name exclusion, fenced settlement and retries.
// Keeps ALM-01 (attempt bound: the claim is confirmed before the handler runs), ALM-03 (every
// outcome write is fenced by generation and attempt), ALM-07 (one handler per name per incarnation),
// ALM-08 (a replacement survives the old generation), ALM-09 (idempotency key per generation).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>

#include "engine/abort_signal.h"
#include "engine/lifecycle.h"
#include "engine/migrations.h"
#include "engine/retry_policy.h"
#include "engine/runtime.h"
#include "engine/scheduler.h"

namespace durasim {

struct DurableAlarmInfo {
  std::string name;
  int64_t scheduledTime = 0;  // scheduled_at of this occurrence
  int64_t attempt = 0;        // 1-based, equals the stored attempt after the claim
  bool isRetry = false;       // attempt > 1
  int64_t retryCount = 0;     // attempt - 1
  std::string idempotencyKey; // "durability-alarm:v1:" + generation_id
  AbortSignal signal;         // aborted on timeout or purge
  std::optional<AlarmInvocationInfo> platform;  // absent when run by the early timer
};
// The info outlives the handler's Task (it lives in the frame that awaits it), so a handler may take
// it by reference.
using DurableAlarmHandler = std::function<Task<void>(const DurableAlarmInfo&)>;

struct AlarmMethodOptions : ExecutionPolicyOptions {
  std::optional<bool> retryTimeouts;
};
struct NamedAlarmOptions {
  std::map<std::string, DurableAlarmHandler> handlers;
  std::optional<int64_t> attemptTimeoutMs;
  std::optional<RetryOptions> retries;
  std::map<std::string, AlarmMethodOptions> methods;
  LifecycleHook onLifecycleEvent;
};

inline constexpr std::string_view kAlarmIdempotencyPrefix = "durability-alarm:v1:";
inline constexpr int64_t kAlarmPassLimit = 100;  // rows read per runDue (scheduler.md 6.3)

class DurabilityAlarms final : public Participant {
 public:
  // Validates handlers and policies, migrates the schema and registers participant "alarms".
  DurabilityAlarms(DurabilityScheduler& scheduler, NamedAlarmOptions options);
  ~DurabilityAlarms() override;

  // Schedules `name` at `scheduledTime`, replacing any earlier occurrence (pending, running, failed).
  Task<void> schedule(std::string name, int64_t scheduledTime);
  // Deletes the occurrence of `name`, if any; a running attempt is not aborted.
  Task<bool> cancel(std::string name);
  // Deletes every occurrence created strictly before `before`; returns how many.
  Task<int64_t> purgeBefore(int64_t before);
  Task<void> alarm(std::optional<AlarmInvocationInfo> info = std::nullopt) { return engine_.alarm(info); }

  static MigrationResult migrate(ObjectStorage& storage, MigrationTarget target = MigrationTarget::latest());
  static const std::vector<Migration>& migrations();

  // Participant.
  std::string kind() const override { return "alarms"; }
  std::optional<int64_t> nextPendingAt(StorageTxn& txn) override;
  Task<void> runDue(int64_t startedAt, std::optional<AlarmInvocationInfo> info) override;

 private:
  struct Row {
    std::string name, generation;
    int64_t createdAt = 0, scheduledAt = 0;
  };
  struct Active;
  struct Policy {
    RetryPolicy retry;
    bool retryTimeouts = false;
  };

  Task<void> runItem(Row row, std::optional<AlarmInvocationInfo> info);
  Task<void> runAttempt(Row row, std::optional<AlarmInvocationInfo> info);
  Task<void> exhaust(Row row, Policy policy);
  Task<void> settleFailure(Row row, int64_t attempt, Policy policy, std::exception_ptr failure);
  void settleSuccess(const Row& row, int64_t attempt, int64_t durationMs);
  Task<void> runHandler(DurableAlarmHandler handler, DurableAlarmInfo info, std::shared_ptr<Active> active);
  Task<void> releaseAfterHandler(std::shared_ptr<Active> active, Permit permit);
  void finish(const std::shared_ptr<Active>& active, Permit& permit);
  Policy policyFor(const std::string& name) const;
  void emit(LifecycleEvent event) const;

  ObjectContext& ctx_;
  Engine& engine_;
  NamedAlarmOptions options_;
  std::map<std::string, std::shared_ptr<Active>> active_;  // per-name exclusion (scheduler.md 5.2)
};

}  // namespace durasim
