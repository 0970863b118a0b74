// Library error classes used by the scheduler, retry policy, named alarms, migrations, routing, the log and fanout
// (errors-and-contract.md 2), with their exact name() strings and messages, plus serializeError
// (2.1, never throws) and isNonRetryable (2.2). Runtime errors are never wrapped here.
#pragma once

#include <cstdint>
#include <exception>
#include <optional>
#include <string>

#include "engine/runtime_errors.h"

namespace durasim {

// A schema migration cannot proceed (scheduler.md 8): unknown target, too many future migrations.
class MigrationError : public DurabilityError {
 public:
  using DurabilityError::DurabilityError;
  std::string name() const override { return "MigrationError"; }
};

// Makes a named-alarm failure terminal. Applications throw it or derive their own errors from it.
class NonRetryableError : public DurabilityError {
 public:
  using DurabilityError::DurabilityError;
  std::string name() const override { return "NonRetryableError"; }
};

// A named-alarm attempt passed its deadline: `Durable alarm "<name>" timed out after <ms>ms`.
class DurableAlarmTimeoutError : public DurabilityError {
 public:
  DurableAlarmTimeoutError(std::string name, int64_t ms);
  std::string name() const override { return "DurableAlarmTimeoutError"; }
  const std::string& alarmName() const { return alarmName_; }
  int64_t timeoutMs() const { return timeoutMs_; }

 private:
  std::string alarmName_;
  int64_t timeoutMs_;
};

// A retry delay function threw or produced an unusable value:
// `Retry policy for <label> must produce a non-negative safe-integer timestamp`. `cause()` is what
// the delay function threw, or null when it returned a bad value.
class DurableRetryPolicyError : public DurabilityError {
 public:
  DurableRetryPolicyError(std::string label, std::exception_ptr cause);
  std::string name() const override { return "DurableRetryPolicyError"; }
  const std::string& label() const { return label_; }
  std::exception_ptr cause() const { return cause_; }

 private:
  std::string label_;
  std::exception_ptr cause_;
};

// A claim was refused because the attempt bound was reached:
// `Durable alarm "<name>" exhausted its <max> attempts`.
class DurableAttemptsExhaustedError : public DurabilityError {
 public:
  DurableAttemptsExhaustedError(std::string name, int64_t max);
  std::string name() const override { return "DurableAttemptsExhaustedError"; }
  const std::string& alarmName() const { return alarmName_; }
  int64_t maxAttempts() const { return maxAttempts_; }

 private:
  std::string alarmName_;
  int64_t maxAttempts_;
};

// Sharding produced an empty shard; `invoke` was not called (routing.md 3.1 step 3):
// `Routing requires a non-empty shard`.
class RoutingError : public DurabilityError {
 public:
  RoutingError();
  std::string name() const override { return "RoutingError"; }
};

// The timeout wrapper's timer won the race against `invoke` (routing.md 3.2); the outcome is
// uncertain: `Routing push timed out after <ms>ms`.
class RoutingTimeoutError : public DurabilityError {
 public:
  explicit RoutingTimeoutError(int64_t ms);
  std::string name() const override { return "RoutingTimeoutError"; }
  int64_t timeoutMs() const { return timeoutMs_; }

 private:
  int64_t timeoutMs_;
};

// A definite rejection of a log append, or a bad offset argument (errors-and-contract.md 2, log.md 3-5):
// returned in EnqueueResult.error by append, thrown by read and commit.
class LogAppendError : public DurabilityError {
 public:
  using DurabilityError::DurabilityError;
  std::string name() const override { return "LogAppendError"; }
};

// A read below the oldest readable offset, or of a flushed offset that cannot be loaded (log.md 4.2):
// `Log offset <requestedOffset> was trimmed; the oldest retained offset is <oldestOffset>`.
class LogTruncatedError : public DurabilityError {
 public:
  LogTruncatedError(int64_t requestedOffset, int64_t oldestOffset);
  std::string name() const override { return "LogTruncatedError"; }
  int64_t requestedOffset() const { return requestedOffset_; }
  int64_t oldestOffset() const { return oldestOffset_; }

 private:
  int64_t requestedOffset_;
  int64_t oldestOffset_;
};

// A lease settlement that matches no active lease of that consumer (log.md 7.3): unknown or fenced
// batch id, already settled, or another consumer's lease: `Log lease "<batchId>" is not held`.
class LogLeaseError : public DurabilityError {
 public:
  explicit LogLeaseError(const std::string& batchId);
  std::string name() const override { return "LogLeaseError"; }
  const std::string& batchId() const { return batchId_; }

 private:
  std::string batchId_;
};

// A definite rejection of a fanout enqueue (fanout.md 3): returned in EnqueueResult.error, never
// thrown out of enqueue.
class FanoutEnqueueError : public DurabilityError {
 public:
  using DurabilityError::DurabilityError;
  std::string name() const override { return "FanoutEnqueueError"; }
};

// A settlement that cannot take effect (fanout.md 5.2): a second call on one message
// (`Fanout delivery "<messageId>" was already settled as "<outcome>"`), a call after the batch
// closed, or a fenced write that matched no row (`Fanout delivery "<id>" is stale`).
class FanoutSettlementError : public DurabilityError {
 public:
  explicit FanoutSettlementError(const std::string& id, const std::optional<std::string>& outcome = std::nullopt);
  std::string name() const override { return "FanoutSettlementError"; }
  const std::optional<std::string>& outcome() const { return outcome_; }

 private:
  std::optional<std::string> outcome_;
};

// A fanout batch or DLQ write passed its deadline: `Fanout delivery timed out after <ms>ms`.
class FanoutTimeoutError : public DurabilityError {
 public:
  explicit FanoutTimeoutError(int64_t ms);
  std::string name() const override { return "FanoutTimeoutError"; }
  int64_t timeoutMs() const { return timeoutMs_; }

 private:
  int64_t timeoutMs_;
};

// entry.retry() after its outbox batch closed (outbox.md 5.3):
// `Outbox entry "<key>" version <version> can no longer be marked for retry`.
class OutboxSettlementError : public DurabilityError {
 public:
  OutboxSettlementError(const std::string& key, int64_t version);
  std::string name() const override { return "OutboxSettlementError"; }
};

// An outbox publish passed attemptTimeoutMs (outbox.md 5.4): `Outbox publish timed out after <ms>ms`.
class OutboxPublishTimeoutError : public DurabilityError {
 public:
  explicit OutboxPublishTimeoutError(int64_t ms);
  std::string name() const override { return "OutboxPublishTimeoutError"; }
};

// Stored state that the capability's own writes cannot produce (fanout.md 3, 4.2 step 4):
// `Fanout manifest and delivery state disagree`.
class DurabilityStateError : public DurabilityError {
 public:
  using DurabilityError::DurabilityError;
  std::string name() const override { return "DurabilityStateError"; }
};

// What is recorded of a failure (last_error_name / last_error, lifecycle events).
struct ErrorInfo {
  std::string name, message;
  friend bool operator==(const ErrorInfo&, const ErrorInfo&) = default;
};

// errors-and-contract.md 2.1; never throws. Beyond the spec's list, a runtime error (RuntimeError of
// runtime_errors.h: SqlError, StorageCommitError, RpcError, ...) reports its own name() rather than
// "Error", so recorded failures say which runtime failure it was.
ErrorInfo serializeError(std::exception_ptr e) noexcept;

// errors-and-contract.md 2.2: `e` derives from NonRetryableError, or is a DurabilityError whose name()
// is "NonRetryableError". False for null. Never throws.
bool isNonRetryable(std::exception_ptr e) noexcept;

}  // namespace durasim
