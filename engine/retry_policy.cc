// Retry policy (scheduler.md 4): default delays, option validation and resolution, decideRetry.
// Invariant kept (SCH-13): a Retry decision's nextAttemptAt lies in [now, kMaxSafeInteger].
#include "engine/retry_policy.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "engine/conventions.h"
#include "engine/errors.h"

namespace durasim {

namespace {

RetryDecision terminal(int64_t now, std::exception_ptr error) { return RetryDecision{true, now, std::move(error)}; }

RetryDecision policyFailure(std::string_view label, int64_t now, std::exception_ptr cause) {
  return terminal(now, std::make_exception_ptr(DurableRetryPolicyError(std::string(label), std::move(cause))));
}

// The first set value among the per-name option, the capability's, and the default.
template <class T, class Get>
T firstSet(const ExecutionPolicyOptions* perName, const ExecutionPolicyOptions& capability, Get get, T fallback) {
  if (perName != nullptr)
    if (auto v = get(*perName)) return *v;
  if (auto v = get(capability)) return *v;
  return fallback;
}

}  // namespace

double exponential(int64_t attempt, double initialDelayMs, double maxDelayMs) {
  return std::min(initialDelayMs * std::pow(2.0, static_cast<double>(attempt - 1)), maxDelayMs);
}

double jitter(double d, Random& random) { return d / 2 + random.random() * d / 2; }

double defaultDelay(int64_t attempt, Random& random) { return jitter(exponential(attempt), random); }

void validatePolicyOptions(const ExecutionPolicyOptions& options) {
  if (options.attemptTimeoutMs && *options.attemptTimeoutMs <= 0)
    throw RangeError("attemptTimeoutMs must be a positive integer");
  if (options.retries && options.retries->maxAttempts && *options.retries->maxAttempts <= 0)
    throw RangeError("maxAttempts must be a positive integer");
}

RetryPolicy resolvePolicy(const ExecutionPolicyOptions* perName, const ExecutionPolicyOptions& capability) {
  RetryPolicy policy;
  policy.attemptTimeoutMs = firstSet(
      perName, capability, [](const ExecutionPolicyOptions& o) { return o.attemptTimeoutMs; }, kDefaultAttemptTimeoutMs);
  policy.maxAttempts = firstSet(
      perName, capability,
      [](const ExecutionPolicyOptions& o) { return o.retries ? o.retries->maxAttempts : std::nullopt; },
      kDefaultMaxAttempts);
  policy.delay = firstSet(
      perName, capability,
      [](const ExecutionPolicyOptions& o) -> std::optional<std::function<double(int64_t)>> {
        if (o.retries && o.retries->delay) return o.retries->delay;
        return std::nullopt;
      },
      std::function<double(int64_t)>());
  return policy;
}

RetryDecision decideRetry(const RetryPolicy& policy, std::string_view label, int64_t attempt, std::exception_ptr error,
                          int64_t now, Random& random, const std::function<bool(std::exception_ptr)>& kindTerminal) {
  // Step 1: failures that end the work with their own error.
  if (isNonRetryable(error) || attempt >= policy.maxAttempts || (kindTerminal && kindTerminal(error)))
    return terminal(now, std::move(error));

  // Step 2: the delay, and every way it can be unusable.
  double raw = 0;
  try {
    raw = policy.delay ? policy.delay(attempt) : defaultDelay(attempt, random);
  } catch (...) {
    return policyFailure(label, now, std::current_exception());
  }
  if (!std::isfinite(raw) || raw < 0) return policyFailure(label, now, nullptr);  // -0.1 is refused here
  const double rounded = jsRound(raw);
  if (rounded > static_cast<double>(kMaxSafeInteger)) return policyFailure(label, now, nullptr);
  const auto delayMs = static_cast<int64_t>(rounded);
  if (now > kMaxSafeInteger - delayMs) return policyFailure(label, now, nullptr);

  // Step 3.
  return RetryDecision{false, now + delayMs, std::move(error)};
}

}  // namespace durasim
