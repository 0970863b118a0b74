// The trace vocabulary of what application code reports about the runtime it runs on (probes through
// ObjectContext::probe, which the host records with "object" and "incarnation"), for the RT checkers
// of properties/runtime_checks.h. Workloads and checkers use these names; nothing else spells one.
#pragma once

#include <string_view>

namespace durasim::runtime_events {

// born: the incarnation an object's memory was set up in (its constructor's ctx.incarnation); the
// host adds the incarnation reading it. RT-19: the two are the same.
inline constexpr std::string_view kCanary = "runtime.canary";
inline constexpr std::string_view kBorn = "born";

// A sleep of application code on its incarnation's clock: asked (now() before sleepFor), ms (the
// duration asked for), woke (now() once it resumed). RT-25: woke >= asked + ms.
inline constexpr std::string_view kSlept = "runtime.slept";
inline constexpr std::string_view kAsked = "asked";
inline constexpr std::string_view kSleptMs = "ms";
inline constexpr std::string_view kWoke = "woke";

}  // namespace durasim::runtime_events
