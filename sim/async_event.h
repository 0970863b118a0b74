// The simulator's AsyncEvent (engine/runtime.h): a latch whose waiters resume as executor events at
// the current time, through their task group (so the input gate and segment hooks apply), never
// inside set(). A timed wait parks on an executor timer and counts as a sleeping frame for the
// incarnation's idleness; a destroyed waiter cancels its timers and leaves the waiter list.
#pragma once

#include <coroutine>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "engine/runtime.h"
#include "sim/executor.h"
#include "sim/task_group.h"

namespace durasim::sim {

class SimAsyncEvent final : public AsyncEvent {
 public:
  // `sleeping` counts the incarnation's frames parked on a timer; it outlives every waiter frame.
  SimAsyncEvent(Executor& executor, int64_t& sleeping) : state_(std::make_shared<State>(executor, sleeping)) {}

  void set() override;
  bool isSet() const override { return state_->set; }
  Task<bool> wait(std::optional<int64_t> timeoutMs) override;

 private:
  class Waiter;
  struct State {
    State(Executor& executor, int64_t& sleeping) : executor(executor), sleeping(sleeping) {}
    Executor& executor;
    int64_t& sleeping;
    bool set = false;
    std::vector<Waiter*> waiters;  // in arrival order
  };

  std::shared_ptr<State> state_;
};

}  // namespace durasim::sim
