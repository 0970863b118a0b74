// The alarm retry schedule of runtime.md 7.4 as a pure state machine, so RT-12 can be checked
// against it and its numbers tested alone: counted failures (the handler's own exception, the
// 15-minute limit, SQLITE_INTERRUPT) are bounded at 6 retries (7 attempts); uncounted failures
// (resets, commit failures, infrastructure) retry for ever with delays capped at 1,024,000 ms.
#pragma once

#include <cstdint>

namespace durasim::sim {

inline constexpr int64_t kAlarmRetryBaseMs = 2'000;       // runtime.md 1
inline constexpr int64_t kAlarmMaxCountedRetries = 6;     // runtime.md 1: 7 attempts in all
inline constexpr int kAlarmBackoffMaxExponent = 9;        // runtime.md 1: cap 2,000 x 2^9 ms
inline constexpr int64_t kAlarmJitterDivisor = 4;         // runtime.md 1: jitter in [0, delay / 4]
inline constexpr int64_t kAlarmHandlerLimitMs = 900'000;  // runtime.md 1: 15 minutes
inline constexpr int64_t kAlarmMaxLateMs = 60'000;        // runtime.md 1

enum class AlarmFailure { counted, uncounted };

// Per stored occurrence: c, e and whether the last failure was uncounted (runtime.md 7.4).
struct AlarmRetryState {
  int64_t counted = 0;
  int exponent = 0;
  bool last_uncounted = false;
};

struct RetryDecision {
  bool abandoned = false;
  int64_t delay = 0;       // before jitter
  int64_t max_jitter = 0;  // jitter is uniform in [0, max_jitter]
};

// `max_counted_retries` is kAlarmMaxCountedRetries but under sim.mutant.alarm_retry_off_by_one (RT-12).
inline RetryDecision on_alarm_failure(AlarmRetryState& state, AlarmFailure failure,
                                      int64_t max_counted_retries = kAlarmMaxCountedRetries) {
  if (failure == AlarmFailure::counted) {
    if (state.last_uncounted) state.exponent = 0;
    state.counted += 1;
    state.last_uncounted = false;
    if (state.counted > max_counted_retries) return RetryDecision{true, 0, 0};
  } else {
    state.last_uncounted = true;
  }
  const int64_t delay = kAlarmRetryBaseMs << state.exponent;
  state.exponent = state.exponent + 1 < kAlarmBackoffMaxExponent ? state.exponent + 1 : kAlarmBackoffMaxExponent;
  return RetryDecision{false, delay, delay / kAlarmJitterDivisor};
}

}  // namespace durasim::sim
