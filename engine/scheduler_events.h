// The trace vocabulary of the shared scheduler (docs/log-trace-events.md): the name of every probe
// the scheduler emits, with the fields it carries besides "ev", "t", "object" and "incarnation", and
// the events an application reports for the SCH checks. The engine, the checkers and the workloads
// use these names; nothing else in them spells one.
#pragma once

#include <string_view>

namespace durasim::scheduler_events {

// Every probe name starts with this prefix.
inline constexpr std::string_view kPrefix = "sch.";

// started_at
inline constexpr std::string_view kAlarmEnd = "sch.alarm.end";
// platform
inline constexpr std::string_view kAlarmStart = "sch.alarm.start";
// now, before, written, min_delay
inline constexpr std::string_view kHandoff = "sch.handoff";
// kind, accepted
inline constexpr std::string_view kParticipant = "sch.participant";
// op, permit, ticket, free, capacity, waiting, granted
inline constexpr std::string_view kPermit = "sch.permit";
// now, next, before, written, deleted, min_delay
inline constexpr std::string_view kReconcile = "sch.reconcile";
// reconciled_at, next
inline constexpr std::string_view kReconcileDurable = "sch.reconcile.durable";
// next, now, min_delay
inline constexpr std::string_view kTimerArm = "sch.timer.arm";
// next
inline constexpr std::string_view kTimerCancel = "sch.timer.cancel";
// next, now
inline constexpr std::string_view kTimerFire = "sch.timer.fire";

// Reported by an application of the capability (workloads/), read by its checkers.
// second_alarms_refused, second_scheduler_refused
inline constexpr std::string_view kAppAttach = "app.attach";
// applied, rolled_back
inline constexpr std::string_view kAppMigrate = "app.migrate";

}  // namespace durasim::scheduler_events
