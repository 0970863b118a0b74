// The retry policy shared by named alarms and fanout targets (scheduler.md 4): options and their
// resolution, the default jittered exponential delay, and decideRetry. Keeps SCH-13: a retry's
// next_attempt_at is now + jsRound(delay) >= now, and every invalid policy output is terminal.
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string_view>

#include "engine/runtime.h"

namespace durasim {

struct RetryOptions {
  std::function<double(int64_t attempt)> delay;  // empty = default; may throw
  std::optional<int64_t> maxAttempts;            // counts the first attempt
};

struct ExecutionPolicyOptions {
  std::optional<int64_t> attemptTimeoutMs;
  std::optional<RetryOptions> retries;
};

// Defaults (scheduler.md 4).
inline constexpr int64_t kDefaultAttemptTimeoutMs = 300000;  // 5 min
inline constexpr int64_t kDefaultMaxAttempts = 5;
inline constexpr double kDefaultInitialDelayMs = 1000;
inline constexpr double kDefaultMaxDelayMs = 300000;

// min(initialDelayMs * 2^(attempt-1), maxDelayMs).
double exponential(int64_t attempt, double initialDelayMs = kDefaultInitialDelayMs, double maxDelayMs = kDefaultMaxDelayMs);
// d/2 + random() * d/2: a value in [d/2, d] for d > 0 (d itself only through double rounding when
// random() is just below 1). Draws once from `random`.
double jitter(double d, Random& random);
// jitter(exponential(attempt)).
double defaultDelay(int64_t attempt, Random& random);

// A fully resolved policy for one alarm name or one fanout target.
struct RetryPolicy {
  int64_t attemptTimeoutMs = kDefaultAttemptTimeoutMs;
  int64_t maxAttempts = kDefaultMaxAttempts;
  std::function<double(int64_t)> delay;  // empty: defaultDelay
};

// Construction-time checks: throws RangeError("attemptTimeoutMs must be a positive integer") or
// RangeError("maxAttempts must be a positive integer") for a value <= 0 (in that order). The delay
// function is checked only when its output is used.
void validatePolicyOptions(const ExecutionPolicyOptions& options);

// Field by field: the per-name (per-target) value if set, else the capability's, else the default.
// `perName` may be null. delay and maxAttempts are resolved separately inside `retries`.
RetryPolicy resolvePolicy(const ExecutionPolicyOptions* perName, const ExecutionPolicyOptions& capability);

// Terminal: the work ends now with `error`, nextAttemptAt = now. Retry: the next attempt is due at
// nextAttemptAt and `error` is the attempt's original error (what the caller records as last error).
struct RetryDecision {
  bool terminal;
  int64_t nextAttemptAt;
  std::exception_ptr error;
};

// scheduler.md 4, steps 1-3, after attempt number `attempt` (1-based) failed with `error` at `now`:
//  1. terminal with `error` if isNonRetryable(error), attempt >= maxAttempts, or kindTerminal(error)
//     (an empty kindTerminal counts as false);
//  2. terminal with DurableRetryPolicyError(label, cause) if the delay throws (cause = what it threw),
//     returns a non-finite or negative value (checked before rounding), or jsRound(raw) or
//     now + jsRound(raw) exceeds kMaxSafeInteger (cause null);
//  3. otherwise retry at now + jsRound(raw).
// `random` is drawn only by the default delay. REQUIRES: 0 <= now <= kMaxSafeInteger.
RetryDecision decideRetry(const RetryPolicy& policy, std::string_view label, int64_t attempt, std::exception_ptr error,
                          int64_t now, Random& random, const std::function<bool(std::exception_ptr)>& kindTerminal);

}  // namespace durasim
