// FanoutReceiver: what an object does when a Mailbox's consumer target hands it a batch (the
// `consume` call, workloads/mailbox.h). It records each (delivery, attempt) it receives once, in its
// table `consumed`, and reports it ("app.fan.consume", the handler-side effect FAN-06, FAN-07 and
// FAN-19 judge); it draws a decision per message (ack, retry {delayMs} (sometimes invalid),
// deadLetter, none; each sometimes followed by a second settlement call, FAN-09); and it paces its
// answer: a few answer only after the batch deadline, a few just before it, a few refuse the batch.
// FanoutConsumer is one; an Account that is a Mailbox's consumer target (the mixed workload) holds one.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "engine/runtime.h"
#include "engine/task.h"

namespace durasim::workloads {

class FanoutReceiver {
 public:
  // Creates the table `consumed` if absent. REQUIRES: `ctx` outlives the receiver.
  explicit FanoutReceiver(ObjectContext& ctx);
  FanoutReceiver(const FanoutReceiver&) = delete;
  FanoutReceiver& operator=(const FanoutReceiver&) = delete;

  // Records and reports each message of a `consume` call's arguments {mailbox, target, messages:
  // [{deliveryId, id, attempt}]} not received before. Synchronous: it runs within one segment.
  void receive(const nlohmann::json& args);
  // One decision, drawn from the object's randomness: {action, delayMs?, again?}.
  nlohmann::json decide();
  // Waits as the drawn pace says (`hangMs`, past the batch `deadline`, or until just before the
  // deadline, or not at all); false when the receiver refuses the batch instead of answering.
  Task<bool> pace(int64_t deadline, int64_t hangMs);

 private:
  ObjectContext& ctx_;
};

}  // namespace durasim::workloads
