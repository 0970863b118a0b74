// Executable spec of named alarms on the shared scheduler (scheduler.md 3.2, 4, 5.1, 6): the durable
// rows of durability_alarms, advanced one engine commit point at a time (time is always an
// argument), and the queries checks ask of them. Keeps ALM-03..06, ALM-08, ALM-10, ALM-11, SCH-01/02.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace durasim::model {

// scheduler.md 1: 2^53 - 1, the largest accepted timestamp or delay.
inline constexpr int64_t kMaxSafeInteger = 9007199254740991;
// scheduler.md 6.3: rows read by one runDue pass.
inline constexpr std::size_t kAlarmPassLimit = 100;
// scheduler.md 4: defaults of the retry policy.
inline constexpr int64_t kDefaultMaxAttempts = 5;
inline constexpr double kDefaultInitialDelayMs = 1000;
inline constexpr double kDefaultMaxDelayMs = 300000;

// Error names recorded in last_error_name (errors-and-contract.md 2).
inline constexpr const char* kErrorName = "Error";
inline constexpr const char* kNonRetryableErrorName = "NonRetryableError";
inline constexpr const char* kTimeoutErrorName = "DurableAlarmTimeoutError";
inline constexpr const char* kRetryPolicyErrorName = "DurableRetryPolicyError";
inline constexpr const char* kAttemptsExhaustedErrorName = "DurableAttemptsExhaustedError";

// scheduler.md 1: round half up, std::floor(x + 0.5).
double jsRound(double x);

enum class AlarmStatus { pending, failed };
const char* statusName(AlarmStatus status);  // "pending" | "failed", as stored

// How an attempt failed, as the retry decision sees it (scheduler.md 4 step 1, 5.1 step 7).
//  retryable     the handler threw an ordinary error;
//  nonRetryable  the handler threw a NonRetryableError (or a DurabilityError of that name);
//  timeout       the attempt outlived attemptTimeoutMs (DurableAlarmTimeoutError);
//  policyInvalid the handler threw an ordinary error and the delay function was unusable for it.
enum class ErrorKind { retryable, nonRetryable, timeout, policyInvalid };

// A closed interval of times [lo, hi].
struct TimeRange {
  int64_t lo = 0, hi = 0;
  bool contains(int64_t t) const { return lo <= t && t <= hi; }
  friend bool operator==(const TimeRange&, const TimeRange&) = default;
};

// One row of durability_alarms (scheduler.md 6.2); last_error's message is not modelled.
struct AlarmRow {
  std::string name;
  std::string generation;
  AlarmStatus status = AlarmStatus::pending;
  int64_t scheduledAt = 0;
  int64_t nextAttemptAt = 0;
  // Equal to nextAttemptAt unless a retry under the default (jittered) delay left a range; then the
  // row's next_attempt_at is somewhere in [nextAttemptAt, nextAttemptAtMax] until pinned.
  int64_t nextAttemptAtMax = 0;
  int64_t attempt = 0;
  std::optional<std::string> lastErrorName;
  int64_t createdAt = 0;

  friend bool operator==(const AlarmRow&, const AlarmRow&) = default;
  nlohmann::json toJson() const;
};

// The resolved policy of one name. An empty delay is the default jittered exponential delay.
struct AlarmPolicy {
  int64_t maxAttempts = kDefaultMaxAttempts;
  bool retryTimeouts = false;
  std::function<double(int64_t attempt)> delay;  // may throw; validated only when used
};

// scheduler.md 4: with the default delay the applied delay for `attempt` lies in
// [jsRound(d/2), d], d = min(1000 * 2^(attempt-1), 300000).
TimeRange defaultDelayRange(int64_t attempt);

// scheduler.md 4, decideRetry, after attempt number `attempt` failed at `now`. `errorName` is the
// name of the handler's own error (used for retryable and policyInvalid failures).
struct RetryVerdict {
  bool terminal = false;
  TimeRange nextAttemptAt;  // {now, now} when terminal
  std::string errorName;    // what last_error_name records
};
RetryVerdict decideRetry(const AlarmPolicy& policy, int64_t attempt, ErrorKind kind, const std::string& errorName,
                         int64_t now);

class AlarmsModel {
 public:
  // Per-name policies; a name without one has the defaults.
  void setPolicy(const std::string& name, AlarmPolicy policy);
  const AlarmPolicy& policyOf(const std::string& name) const;
  int64_t maxAttemptsOf(const std::string& name) const { return policyOf(name).maxAttempts; }

  // ---- Commit points (each one engine write; fenced writes that match nothing change nothing) ----

  // 6.3 schedule: upserts `name` with a new `generation`, pending, attempt 0, scheduled_at =
  // next_attempt_at = t, no error, created_at = now; replaces any occurrence (ALM-08).
  // Throws std::out_of_range unless 0 <= t <= kMaxSafeInteger (the engine's RangeError).
  void schedule(const std::string& name, int64_t t, int64_t now, const std::string& generation);
  // 6.3 cancel: deletes the row of `name`, any generation and status. Returns whether one existed.
  bool cancel(const std::string& name);
  // 3.6 purge: deletes the rows with created_at < before (strict) and returns how many (ALM-10).
  // Throws std::out_of_range unless 0 <= before <= kMaxSafeInteger.
  int64_t purgeBefore(int64_t before);
  // 5.1 step 3: the claim, fenced by generation, status pending and attempt < maxAttempts. Returns
  // the new attempt, or nullopt when refused (next_attempt_at is left unchanged either way).
  std::optional<int64_t> claim(const std::string& name, const std::string& generation, int64_t maxAttempts);
  std::optional<int64_t> claim(const std::string& name, const std::string& generation) {
    return claim(name, generation, maxAttemptsOf(name));
  }
  // 5.1 step 6: the success delete, fenced by (generation, attempt, pending). Returns matched.
  bool succeed(const std::string& name, const std::string& generation, int64_t attempt);
  // 5.1 step 7: the failure settle, fenced by (generation, attempt, pending), with decideRetry under
  // the name's policy (ALM-06). `errorName` overrides the recorded name of a retryable or
  // policyInvalid failure (default "Error"). Returns matched.
  bool fail(const std::string& name, const std::string& generation, int64_t attempt, ErrorKind kind, int64_t now,
            const std::string& errorName = kErrorName);
  // 5.1 step 4: the exhaustion write after a refused claim, fenced by (generation, pending,
  // attempt >= maxAttempts of the name): failed, next_attempt_at = now,
  // DurableAttemptsExhaustedError. Returns matched.
  bool exhaust(const std::string& name, const std::string& generation, int64_t now);
  // Fixes the next_attempt_at of a ranged (default-delay) retry to the value observed. Returns
  // false, changing nothing, if the row is not that generation or `at` is outside its range.
  bool pinNextAttempt(const std::string& name, const std::string& generation, int64_t at);

  // ---- Queries ----

  const std::map<std::string, AlarmRow>& rows() const { return rows_; }
  const AlarmRow* row(const std::string& name) const;
  // 3.1: MIN(next_attempt_at) over pending rows (the lower bound of a ranged retry).
  std::optional<int64_t> nextPending() const;
  // SCH-02: after a reconcile committed at `now`, the physical alarm lies in
  // [next, max(next, now + alarmMinDelayMs)]; nullopt when nothing is pending (SCH-01: no alarm).
  std::optional<TimeRange> physicalAlarmWindow(int64_t now, int64_t alarmMinDelayMs) const;
  // 6.3 runDue: the names a pass started at `now` would take up, in (next_attempt_at, name) order,
  // at most kAlarmPassLimit.
  std::vector<std::string> dueNow(int64_t now) const;
  // The first pending row in (next_attempt_at, name) order, whatever the time.
  struct NextRun {
    int64_t at = 0;
    std::string name;
    friend bool operator==(const NextRun&, const NextRun&) = default;
  };
  std::optional<NextRun> nextToRun() const;

  // ---- Invariant predicates ----

  // ALM-05 over these rows: failed => last_error_name set (and attempt >= 1); pending with
  // attempt 0 => no error and next_attempt_at == scheduled_at; 0 <= attempt <= maxAttempts.
  // Returns a description of the first violation, or nullopt.
  std::optional<std::string> fieldConsistency(const std::function<int64_t(const std::string&)>& maxAttemptsOf) const;
  static std::optional<std::string> fieldConsistency(const std::vector<AlarmRow>& rows,
                                                     const std::function<int64_t(const std::string&)>& maxAttemptsOf);

  nlohmann::json toJson() const;

 private:
  AlarmRow* matching(const std::string& name, const std::string& generation);

  std::map<std::string, AlarmRow> rows_;
  std::map<std::string, AlarmPolicy> policies_;
  AlarmPolicy defaultPolicy_;
};

}  // namespace durasim::model
