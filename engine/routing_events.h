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

}  // namespace durasim::routing_events
