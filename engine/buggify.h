// The engine's buggify sites (DESIGN.md "Faults and variants"): named places at the commit, alarm and
// retry boundaries of the capabilities where engine code takes a legal but rare path when the port's
// buggify hook says so (ObjectContext::buggify; in a campaign faults/buggify.h decides, per run and
// per call, and never after heal). Every path taken here is one the spec allows at any time: another
// turn of the event loop before a step, so that whatever else is ready (a call, a timer, another
// pass, a reset) runs in between, or a call that starts later than it arrived (a busy object). A
// site that fires may only expose engine bugs, never excuse them.
// (An early timer that wakes before its due time is not such a path: SCH-06 forbids it.) kSites
// lists them all, so a campaign can say which never fired.
#pragma once

#include <array>
#include <string_view>

#include "engine/runtime.h"
#include "engine/task.h"

namespace durasim::buggify {

// Scheduler (scheduler.md 3): another turn before the refresh reads the state it reconciles, and
// between an alarm's participants finishing and its reschedule.
inline constexpr std::string_view kSchedulerYieldBeforeRefresh = "scheduler.refresh.yield_before_reconcile";
inline constexpr std::string_view kSchedulerYieldBeforeReschedule = "scheduler.alarm.yield_before_reschedule";
// Named alarms: another turn between reading a due row and running its attempt.
inline constexpr std::string_view kAlarmsYieldBeforeAttempt = "alarms.run.yield_before_attempt";
// Log: another turn before an append's transaction and before a lease settlement's; a lease call
// that starts at the exact deadline of the consumer's earliest active lease (log.md 7: `expires_at <=
// now` makes it reclaimable at that very millisecond), so the boundary is reached, not only passed.
inline constexpr std::string_view kLogYieldBeforeAppend = "log.append.yield_before_commit";
inline constexpr std::string_view kLeasesYieldBeforeSettle = "log.lease.yield_before_settle";
inline constexpr std::string_view kLeasesWaitForExpiry = "log.lease.wait_for_expiry";
// Fanout: another turn before a pass claims its batch, and before a settlement commits.
inline constexpr std::string_view kFanoutYieldBeforeClaim = "fanout.pass.yield_before_claim";
inline constexpr std::string_view kFanoutYieldBeforeSettle = "fanout.settle.yield_before_commit";
// Outbox: another turn before a pass claims its batch, and before it settles the publication.
inline constexpr std::string_view kOutboxYieldBeforeClaim = "outbox.pass.yield_before_claim";
inline constexpr std::string_view kOutboxYieldBeforeSettle = "outbox.publish.yield_before_settle";
// Event bus (events.md 10): another turn after a page is read, before an acknowledgement, before a
// failure is recorded, before a release's compare-and-set; and between the steps of the split
// research variants only.
inline constexpr std::string_view kEventsYieldAfterPage = "events.poll.yield_after_page";
inline constexpr std::string_view kEventsYieldBeforeAck = "events.poll.yield_before_ack";
inline constexpr std::string_view kEventsYieldBeforeFailure = "events.poll.yield_before_failure";
inline constexpr std::string_view kEventsReleaseYieldBeforeCas = "events.release.yield_before_cas";
inline constexpr std::string_view kEventsYieldBetweenSteps = "events.variant.yield_between_steps";

inline constexpr std::array kSites = {
    kSchedulerYieldBeforeRefresh, kSchedulerYieldBeforeReschedule, kAlarmsYieldBeforeAttempt,
    kLogYieldBeforeAppend,        kLeasesYieldBeforeSettle,        kLeasesWaitForExpiry,
    kFanoutYieldBeforeClaim,      kFanoutYieldBeforeSettle,        kOutboxYieldBeforeClaim,
    kOutboxYieldBeforeSettle,     kEventsYieldAfterPage,           kEventsYieldBeforeAck,
    kEventsYieldBeforeFailure,    kEventsReleaseYieldBeforeCas,    kEventsYieldBetweenSteps,
};

// The sites that only research variants reach (a campaign without them cannot fire them).
inline constexpr std::array kVariantOnlySites = {kEventsYieldBetweenSteps};

// Whether `site` takes its rare path now (always false without a hook).
inline bool fires(const ObjectContext& ctx, std::string_view site) { return ctx.buggify && ctx.buggify(site); }

// When `site` fires: one more turn of the event loop (a zero-length sleep) before the caller goes on.
Task<void> yieldIf(ObjectContext& ctx, std::string_view site);

}  // namespace durasim::buggify
