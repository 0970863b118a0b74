// The trace vocabulary of named alarms (docs/log-trace-events.md): the name of every probe
// DurabilityAlarms emits, with the fields it carries besides "ev", "t", "object" and "incarnation".
// The engine and the checkers use these names; nothing else in them spells one.
#pragma once

#include <string_view>

namespace durasim::alarms_events {

// Every probe name starts with this prefix.
inline constexpr std::string_view kPrefix = "alm.";

// name, deleted
inline constexpr std::string_view kCancel = "alm.cancel";
// name
inline constexpr std::string_view kCancelBegin = "alm.cancel.begin";
// name, deleted
inline constexpr std::string_view kCancelWrite = "alm.cancel.write";
// name, generation, attempt, now, max_attempts
inline constexpr std::string_view kClaim = "alm.claim";
// name, attempt, key, failed
inline constexpr std::string_view kHandlerEnd = "alm.handler.end";
// name, generation, attempt, key, is_retry, retry_count, platform, max_attempts
inline constexpr std::string_view kInvoke = "alm.invoke";
// before, count
inline constexpr std::string_view kPurge = "alm.purge";
// before
inline constexpr std::string_view kPurgeBegin = "alm.purge.begin";
// before, count
inline constexpr std::string_view kPurgeWrite = "alm.purge.write";
// name, generation
inline constexpr std::string_view kRelease = "alm.release";
// name, generation, scheduled, created_at
inline constexpr std::string_view kSchedule = "alm.schedule";
// name, generation, scheduled, created_at
inline constexpr std::string_view kScheduleBegin = "alm.schedule.begin";
// name, generation, scheduled, created_at
inline constexpr std::string_view kScheduleWrite = "alm.schedule.write";
// name, generation, attempt, write, matched, terminal, now, next_attempt_at, error_name, max_attempts, retry_timeouts
inline constexpr std::string_view kSettle = "alm.settle";
// name, generation, attempt
inline constexpr std::string_view kTimeout = "alm.timeout";
// name, generation, attempt, write, matched, status
inline constexpr std::string_view kWrite = "alm.write";

// Reported by an application's alarm handler as its first act (workloads/), read by its checkers:
// what actually ran, whatever the engine says it invoked (ALM-01).
// name, key, attempt
inline constexpr std::string_view kAppHandler = "app.alarm.handler";

}  // namespace durasim::alarms_events
