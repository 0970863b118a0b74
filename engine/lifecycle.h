// Lifecycle events of scheduled work (scheduler.md 7): best-effort notifications emitted after the
// write they describe commits. A throwing hook is logged and never affects durable state.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "engine/errors.h"
#include "engine/runtime.h"

namespace durasim {

enum class LifecycleType { registered, scheduled, attempt_started, attempt_settled, terminal, purged };
enum class SettleOutcome { completed, retry_scheduled, failed };
enum class TerminalReason { attempts_exhausted, dead_lettered };

struct LifecycleEvent {
  LifecycleType type = LifecycleType::registered;
  std::string entityKind;  // "alarm" | "delivery" | "outbox"
  std::string name;        // alarm name | fanout target id | outbox channel
  std::string id;          // alarm name | deliveryId | outbox key
  int64_t attempt = 0;     // 0 for registered / scheduled
  int64_t at = 0;          // clock time of emission
  std::optional<int64_t> scheduledTime, nextAttemptAt, durationMs, before, count;
  std::optional<SettleOutcome> outcome;
  std::optional<TerminalReason> reason;
  std::optional<ErrorInfo> error;
};
using LifecycleHook = std::function<void(const LifecycleEvent&)>;

// Calls `hook` (if any) with `event`; an exception is logged as durability.lifecycle_hook.failed.
inline void emitLifecycle(const LifecycleHook& hook, Logger& logger, const LifecycleEvent& event) {
  if (!hook) return;
  try {
    hook(event);
  } catch (...) {
    const ErrorInfo error = serializeError(std::current_exception());
    logger.error("durability.lifecycle_hook.failed",
                 {{"entityKind", event.entityKind}, {"name", event.name}, {"error", error.message}});
  }
}

}  // namespace durasim
