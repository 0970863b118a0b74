// Retry policy (scheduler.md 4): the default delay and its bounds, option validation and resolution
// order, and every terminal trigger of decideRetry; a property checks SCH-13 (a retry is due at
// now + jsRound(delay) within the default bounds) over arbitrary attempts and times.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cmath>
#include <cstdint>
#include <deque>
#include <limits>
#include <stdexcept>
#include <string>

#include "engine/conventions.h"
#include "engine/errors.h"
#include "engine/retry_policy.h"

namespace durasim {
namespace {

// Returns the scripted values in order, then `fallback`; counts draws.
class FakeRandom final : public Random {
 public:
  explicit FakeRandom(double fallback = 0.5) : fallback_(fallback) {}
  void push(double v) { script_.push_back(v); }
  double random() override {
    ++draws;
    if (script_.empty()) return fallback_;
    const double v = script_.front();
    script_.pop_front();
    return v;
  }
  std::string uuid() override { return "00000000-0000-4000-8000-000000000000"; }
  int draws = 0;

 private:
  double fallback_;
  std::deque<double> script_;
};

constexpr char kLabel[] = "durable alarm \"x\"";
constexpr int64_t kNow = 1'000'000;
const std::exception_ptr kFailure = std::make_exception_ptr(std::runtime_error("handler failed"));
// The largest double below 1: what Random::random() returns at most.
const double kAlmostOne = std::nextafter(1.0, 0.0);

RetryPolicy withDelay(std::function<double(int64_t)> delay, int64_t maxAttempts = kDefaultMaxAttempts) {
  RetryPolicy policy;
  policy.maxAttempts = maxAttempts;
  policy.delay = std::move(delay);
  return policy;
}

RetryDecision decide(const RetryPolicy& policy, int64_t attempt, std::exception_ptr error = kFailure, int64_t now = kNow,
                     std::function<bool(std::exception_ptr)> kindTerminal = {}) {
  FakeRandom random;
  return decideRetry(policy, kLabel, attempt, std::move(error), now, random, kindTerminal);
}

// The decision is terminal with a DurableRetryPolicyError for kLabel; returns its cause.
std::exception_ptr expectPolicyFailure(const RetryDecision& d) {
  EXPECT_TRUE(d.terminal);
  EXPECT_EQ(d.nextAttemptAt, kNow);
  try {
    std::rethrow_exception(d.error);
  } catch (const DurableRetryPolicyError& e) {
    EXPECT_EQ(e.label(), kLabel);
    EXPECT_STREQ(e.what(), "Retry policy for durable alarm \"x\" must produce a non-negative safe-integer timestamp");
    return e.cause();
  } catch (...) {
    ADD_FAILURE() << "expected DurableRetryPolicyError, got " << serializeError(std::current_exception()).name;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Default delay

TEST(RetryPolicy, ExponentialDoublesFromOneSecondUpToFiveMinutes) {
  EXPECT_EQ(exponential(1), 1000);
  EXPECT_EQ(exponential(2), 2000);
  EXPECT_EQ(exponential(9), 256000);
  EXPECT_EQ(exponential(10), 300000);
  EXPECT_EQ(exponential(1'000'000), 300000);
  EXPECT_EQ(exponential(3, 10, 1000), 40);
}

TEST(RetryPolicy, JitterIsHalfPlusARandomHalf) {
  FakeRandom half(0.5);
  EXPECT_EQ(jitter(1000, half), 750);
  FakeRandom zero(0.0);
  EXPECT_EQ(jitter(1000, zero), 500);
  // The largest random() value gives d/2 + d/2 - ulp, which rounds to d: the bound is closed in double.
  FakeRandom top(kAlmostOne);
  EXPECT_LE(jitter(1000, top), 1000);
  EXPECT_EQ(top.draws, 1);
}

TEST(RetryPolicy, DefaultDelayStaysWithinItsBoundsOverManyAttempts) {
  for (int64_t attempt = 1; attempt <= 40; ++attempt) {
    const double d = std::min(1000 * std::pow(2.0, static_cast<double>(attempt - 1)), 300000.0);
    for (double r : {0.0, 0.25, 0.5, 0.999, kAlmostOne}) {
      FakeRandom random(r);
      const double raw = defaultDelay(attempt, random);
      EXPECT_GE(jsRound(raw), jsRound(d / 2)) << "attempt " << attempt << " r " << r;
      EXPECT_LE(jsRound(raw), d) << "attempt " << attempt << " r " << r;
      RetryPolicy policy;
      policy.maxAttempts = 1000;
      const RetryDecision decision = decideRetry(policy, kLabel, attempt, kFailure, kNow, random, {});
      ASSERT_FALSE(decision.terminal);
      EXPECT_GE(decision.nextAttemptAt - kNow, jsRound(d / 2));
      EXPECT_LE(decision.nextAttemptAt - kNow, d);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Validation and resolution

TEST(RetryPolicy, ValidationRejectsNonPositiveValuesWithTheSpecMessages) {
  const auto message = [](const ExecutionPolicyOptions& options) -> std::string {
    try {
      validatePolicyOptions(options);
    } catch (const RangeError& e) {
      return e.what();
    }
    return "accepted";
  };
  EXPECT_EQ(message({}), "accepted");
  EXPECT_EQ(message({1, RetryOptions{{}, 1}}), "accepted");
  EXPECT_EQ(message({0, std::nullopt}), "attemptTimeoutMs must be a positive integer");
  EXPECT_EQ(message({-5, std::nullopt}), "attemptTimeoutMs must be a positive integer");
  EXPECT_EQ(message({std::nullopt, RetryOptions{{}, 0}}), "maxAttempts must be a positive integer");
  EXPECT_EQ(message({std::nullopt, RetryOptions{{}, -1}}), "maxAttempts must be a positive integer");
  EXPECT_EQ(message({0, RetryOptions{{}, 0}}), "attemptTimeoutMs must be a positive integer");
  // The delay function is not called at validation.
  EXPECT_EQ(message({std::nullopt, RetryOptions{[](int64_t) -> double { throw std::runtime_error("x"); }, {}}}),
            "accepted");
}

TEST(RetryPolicy, ResolutionIsPerNameThenCapabilityThenDefaultFieldByField) {
  const auto delayOf = [](double v) { return [v](int64_t) { return v; }; };
  const RetryPolicy defaults = resolvePolicy(nullptr, {});
  EXPECT_EQ(defaults.attemptTimeoutMs, kDefaultAttemptTimeoutMs);
  EXPECT_EQ(defaults.maxAttempts, kDefaultMaxAttempts);
  EXPECT_FALSE(defaults.delay);
  EXPECT_EQ(kDefaultAttemptTimeoutMs, 300000);
  EXPECT_EQ(kDefaultMaxAttempts, 5);

  const ExecutionPolicyOptions capability{60'000, RetryOptions{delayOf(7), 9}};
  const RetryPolicy fromCapability = resolvePolicy(nullptr, capability);
  EXPECT_EQ(fromCapability.attemptTimeoutMs, 60'000);
  EXPECT_EQ(fromCapability.maxAttempts, 9);
  EXPECT_EQ(fromCapability.delay(1), 7);

  // Per name: only the timeout and the delay; maxAttempts still comes from the capability.
  const ExecutionPolicyOptions perName{1'000, RetryOptions{delayOf(3), std::nullopt}};
  const RetryPolicy mixed = resolvePolicy(&perName, capability);
  EXPECT_EQ(mixed.attemptTimeoutMs, 1'000);
  EXPECT_EQ(mixed.maxAttempts, 9);
  EXPECT_EQ(mixed.delay(1), 3);

  // Per name: only maxAttempts; the capability's delay and timeout remain.
  const ExecutionPolicyOptions onlyAttempts{std::nullopt, RetryOptions{{}, 2}};
  const RetryPolicy attempts = resolvePolicy(&onlyAttempts, capability);
  EXPECT_EQ(attempts.attemptTimeoutMs, 60'000);
  EXPECT_EQ(attempts.maxAttempts, 2);
  EXPECT_EQ(attempts.delay(1), 7);

  // Per name over no capability options: the rest are defaults.
  const RetryPolicy partial = resolvePolicy(&onlyAttempts, {});
  EXPECT_EQ(partial.attemptTimeoutMs, kDefaultAttemptTimeoutMs);
  EXPECT_EQ(partial.maxAttempts, 2);
  EXPECT_FALSE(partial.delay);
}

// ---------------------------------------------------------------------------------------------
// decideRetry

TEST(DecideRetry, RetriesAtNowPlusTheRoundedDelayAndKeepsTheError) {
  const RetryDecision d = decide(withDelay([](int64_t) { return 1234.5; }), 1);
  EXPECT_FALSE(d.terminal);
  EXPECT_EQ(d.nextAttemptAt, kNow + 1235);
  EXPECT_EQ(d.error, kFailure);
  EXPECT_EQ(decide(withDelay([](int64_t) { return 0.0; }), 1).nextAttemptAt, kNow);
  EXPECT_EQ(decide(withDelay([](int64_t) { return 0.4; }), 1).nextAttemptAt, kNow);
}

TEST(DecideRetry, TheDelayGetsTheAttemptNumber) {
  int64_t seen = 0;
  decide(withDelay([&](int64_t a) { return static_cast<double>(seen = a); }), 3);
  EXPECT_EQ(seen, 3);
}

TEST(DecideRetry, TheDefaultDelayDrawsOnceFromRandom) {
  FakeRandom random(0.5);
  const RetryDecision d = decideRetry(RetryPolicy{}, kLabel, 2, kFailure, kNow, random, {});
  EXPECT_FALSE(d.terminal);
  EXPECT_EQ(d.nextAttemptAt, kNow + 1500);
  EXPECT_EQ(random.draws, 1);
}

TEST(DecideRetry, NonRetryableErrorsAreTerminalWithTheirOwnError) {
  int calls = 0;
  const RetryPolicy policy = withDelay([&](int64_t) { return ++calls, 10.0; });
  const std::exception_ptr error = std::make_exception_ptr(NonRetryableError("stop"));
  const RetryDecision d = decide(policy, 1, error);
  EXPECT_TRUE(d.terminal);
  EXPECT_EQ(d.nextAttemptAt, kNow);
  EXPECT_EQ(d.error, error);
  EXPECT_EQ(calls, 0) << "the delay is not consulted";
}

TEST(DecideRetry, TheLastAttemptIsTerminal) {
  const RetryPolicy policy = withDelay([](int64_t) { return 10.0; }, 3);
  EXPECT_FALSE(decide(policy, 2).terminal);
  const RetryDecision at = decide(policy, 3);
  EXPECT_TRUE(at.terminal);
  EXPECT_EQ(at.error, kFailure);
  EXPECT_EQ(at.nextAttemptAt, kNow);
  EXPECT_TRUE(decide(policy, 4).terminal);
  EXPECT_TRUE(decide(withDelay([](int64_t) { return 10.0; }, 1), 1).terminal);
}

TEST(DecideRetry, KindTerminalErrorsAreTerminal) {
  const std::exception_ptr timeout = std::make_exception_ptr(DurableAlarmTimeoutError("x", 100));
  const auto timeoutsTerminal = [](std::exception_ptr e) {
    try {
      std::rethrow_exception(e);
    } catch (const DurableAlarmTimeoutError&) {
      return true;
    } catch (...) {
      return false;
    }
  };
  const RetryPolicy policy = withDelay([](int64_t) { return 10.0; });
  const RetryDecision d = decide(policy, 1, timeout, kNow, timeoutsTerminal);
  EXPECT_TRUE(d.terminal);
  EXPECT_EQ(d.error, timeout);
  EXPECT_FALSE(decide(policy, 1, kFailure, kNow, timeoutsTerminal).terminal);
  EXPECT_FALSE(decide(policy, 1, timeout).terminal) << "without kindTerminal a timeout is retried";
}

TEST(DecideRetry, AThrowingDelayIsTerminalWithItsExceptionAsCause) {
  const RetryDecision d = decide(withDelay([](int64_t) -> double { throw std::logic_error("delay broke"); }), 1);
  const std::exception_ptr cause = expectPolicyFailure(d);
  ASSERT_NE(cause, nullptr);
  EXPECT_EQ(serializeError(cause), (ErrorInfo{"Error", "delay broke"}));

  const RetryDecision thrownInt = decide(withDelay([](int64_t) -> double { throw 7; }), 1);
  const std::exception_ptr intCause = expectPolicyFailure(thrownInt);
  ASSERT_NE(intCause, nullptr);
  EXPECT_EQ(serializeError(intCause).message, "Unknown thrown value");
}

TEST(DecideRetry, InvalidDelayOutputsAreTerminalWithoutCause) {
  const double inf = std::numeric_limits<double>::infinity();
  for (double raw : {std::numeric_limits<double>::quiet_NaN(), inf, -inf, -0.1, -1.0, 1e300,
                     static_cast<double>(kMaxSafeInteger) + 2.0}) {
    SCOPED_TRACE(raw);
    EXPECT_EQ(expectPolicyFailure(decide(withDelay([raw](int64_t) { return raw; }), 1)), nullptr);
  }
}

TEST(DecideRetry, NegativeZeroAndTinyDelaysAreNotNegative) {
  EXPECT_FALSE(decide(withDelay([](int64_t) { return -0.0; }), 1).terminal);
  EXPECT_EQ(decide(withDelay([](int64_t) { return 0.1; }), 1).nextAttemptAt, kNow);
}

TEST(DecideRetry, DelaysUpToTheSafeLimitAreAccepted) {
  const RetryPolicy largest = withDelay([](int64_t) { return static_cast<double>(kMaxSafeInteger - 1); });
  const RetryDecision d = decide(largest, 1, kFailure, 1);
  EXPECT_FALSE(d.terminal);
  EXPECT_EQ(d.nextAttemptAt, kMaxSafeInteger);
  // jsRound is floor(x + 0.5) in double: above 2^52 an odd integer rounds up to the next even one,
  // so 2^53 - 1 itself becomes 2^53 and is refused (scheduler.md 1, "Rounding").
  EXPECT_EQ(jsRound(static_cast<double>(kMaxSafeInteger)), static_cast<double>(kMaxSafeInteger) + 1);
  EXPECT_EQ(expectPolicyFailure(decide(withDelay([](int64_t) { return static_cast<double>(kMaxSafeInteger); }), 1)),
            nullptr);
}

TEST(DecideRetry, NowPlusDelayBeyondTheSafeRangeIsTerminal) {
  const RetryPolicy policy = withDelay([](int64_t) { return 1000.0; });
  const RetryDecision edge = decide(policy, 1, kFailure, kMaxSafeInteger - 1000);
  EXPECT_FALSE(edge.terminal);
  EXPECT_EQ(edge.nextAttemptAt, kMaxSafeInteger);

  FakeRandom random;
  const RetryDecision over = decideRetry(policy, kLabel, 1, kFailure, kMaxSafeInteger - 999, random, {});
  EXPECT_TRUE(over.terminal);
  EXPECT_EQ(over.nextAttemptAt, kMaxSafeInteger - 999);
  try {
    std::rethrow_exception(over.error);
  } catch (const DurableRetryPolicyError& e) {
    EXPECT_EQ(e.cause(), nullptr);
  } catch (...) {
    ADD_FAILURE() << "expected DurableRetryPolicyError";
  }
  // Rounding happens before the bound: 1000.4 rounds to 1000 and still fits.
  EXPECT_FALSE(decide(withDelay([](int64_t) { return 1000.4; }), 1, kFailure, kMaxSafeInteger - 1000).terminal);
  EXPECT_TRUE(decide(withDelay([](int64_t) { return 1000.5; }), 1, kFailure, kMaxSafeInteger - 1000).terminal);
}

TEST(DecideRetry, LabelsAppearInThePolicyError) {
  FakeRandom random;
  const RetryDecision d =
      decideRetry(withDelay([](int64_t) { return -1.0; }), "fanout target \"t1\"", 1, kFailure, kNow, random, {});
  EXPECT_EQ(serializeError(d.error),
            (ErrorInfo{"DurableRetryPolicyError",
                       "Retry policy for fanout target \"t1\" must produce a non-negative safe-integer timestamp"}));
}

// SCH-13 with the default policy: a retry is due at now + jsRound(delay) with the delay in
// [jsRound(d/2), d], d = min(1000 * 2^(attempt-1), 300000); only a time too close to the safe limit
// makes it terminal (with a policy error).
RC_GTEST_PROP(RetryPolicyProp, DefaultRetryTimeIsNowPlusABoundedDelay, ()) {
  const auto attempt = *rc::gen::inRange<int64_t>(1, 100'000);
  const auto now = *rc::gen::inRange<int64_t>(0, kMaxSafeInteger + 1);
  const auto bits = *rc::gen::inRange<int64_t>(0, int64_t{1} << 53);
  FakeRandom random(static_cast<double>(bits) * 0x1p-53);
  RetryPolicy policy;
  policy.maxAttempts = std::numeric_limits<int64_t>::max();
  const RetryDecision decision = decideRetry(policy, kLabel, attempt, kFailure, now, random, {});
  const double d = std::min(1000 * std::pow(2.0, static_cast<double>(attempt - 1)), 300000.0);
  if (decision.terminal) {
    RC_ASSERT(now > kMaxSafeInteger - static_cast<int64_t>(d));
    RC_ASSERT(serializeError(decision.error).name == "DurableRetryPolicyError");
    RC_ASSERT(decision.nextAttemptAt == now);
  } else {
    RC_ASSERT(decision.nextAttemptAt >= now);
    RC_ASSERT(decision.nextAttemptAt <= kMaxSafeInteger);
    const int64_t delay = decision.nextAttemptAt - now;
    RC_ASSERT(static_cast<double>(delay) >= jsRound(d / 2));
    RC_ASSERT(static_cast<double>(delay) <= d);
    RC_ASSERT(decision.error == kFailure);
  }
}

}  // namespace
}  // namespace durasim
