// The trace vocabulary of the routing client (routing.md, docs/log-trace-events.md): the name of
// every event a RoutingClient reports through RoutingClientOptions::probe, with its fields; every
// one also carries "push" (the push it belongs to) and "now", and its host adds "client". The
// engine and the RTE checks use these names; nothing else in them spells one.
#pragma once

#include <string_view>

namespace durasim::routing_events {

// Every event name starts with this prefix.
inline constexpr std::string_view kPrefix = "rte.";

// width, lastResizeAt, custom, timeoutMs, softBacklogLimit, observed
inline constexpr std::string_view kPushBegin = "rte.push.begin";
// shard, hint, draws
inline constexpr std::string_view kSelect = "rte.select";
// message
inline constexpr std::string_view kPushRefused = "rte.push.refused";
// shard
inline constexpr std::string_view kInvokeStart = "rte.invoke.start";
// shard, success, value, error, load, late
inline constexpr std::string_view kReply = "rte.reply";
// (no fields of its own)
inline constexpr std::string_view kLateFailure = "rte.late.failure";
// outcome, message
inline constexpr std::string_view kPushFailed = "rte.push.failed";
// shard, observedAt, stored, kept, evicted, size
inline constexpr std::string_view kObserve = "rte.observe";
// load, softBacklogLimit, before, after, lastResizeBefore, lastResizeAfter
inline constexpr std::string_view kResize = "rte.resize";
// success
inline constexpr std::string_view kPushReturn = "rte.push.return";

// ---- The application's side of a routed call (emitted by the workload, not the client; the trace
// adds "t"). They say what the caller asked and got and what its invoke function really ran, so the
// RTE checks need not take the client's word for it. "call" numbers the application's pushes.

inline constexpr std::string_view kAppPrefix = "app.rte.";
// call, faulty (the sharding function gives an empty shard), timeoutMs (the caller's, or null)
inline constexpr std::string_view kAppPush = "app.rte.push";
// call, shard: the application's invoke function started
inline constexpr std::string_view kAppInvoke = "app.rte.invoke";
// call, threw, success (null when it threw): what the invoke function returned to the client
inline constexpr std::string_view kAppInvoked = "app.rte.invoked";
// call, outcome ("reply" | "timeout" | "threw" | "refused"), success (null unless "reply")
inline constexpr std::string_view kAppPushed = "app.rte.pushed";

// ---- An application's own samples on its RoutingLoad (emitted by the object through its probe,
// which adds "object" and "incarnation"; "now" is the object's clock).
inline constexpr std::string_view kAppLoadPrefix = "app.load.";
// sample, now: begin(outbound)
inline constexpr std::string_view kAppLoadBegin = "app.load.begin";
// sample, now: one call of that sample's finish (a sample may be finished more than once)
inline constexpr std::string_view kAppLoadFinish = "app.load.finish";
// now, inFlight, completed, averageProcessingMs: the outbound direction of a snapshot it read
inline constexpr std::string_view kAppLoadRead = "app.load.read";

}  // namespace durasim::routing_events
