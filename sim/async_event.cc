// SimAsyncEvent: waiters parked in arrival order, woken by executor events (see async_event.h).
#include "sim/async_event.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace durasim::sim {

class SimAsyncEvent::Waiter {
 public:
  Waiter(std::shared_ptr<State> state, std::optional<int64_t> timeoutMs) : state_(std::move(state)) {
    if (timeoutMs) deadline_ = state_->executor.clock().now() + *timeoutMs;
  }
  Waiter(const Waiter&) = delete;
  Waiter& operator=(const Waiter&) = delete;
  ~Waiter() {
    if (timer_ != kNoTimer) state_->executor.cancel(timer_);
    leave();
    uncount();
  }

  bool await_ready() const noexcept { return state_->set; }
  template <detail::TaskPromise P>
  void await_suspend(std::coroutine_handle<P> frame) {
    scope_ = frame.promise().scope;
    if (!scope_) throw std::logic_error("an AsyncEvent was awaited outside any root task");
    frame_ = frame;
    state_->waiters.push_back(this);
    if (!deadline_) return;
    ++state_->sleeping;
    counted_ = true;
    timer_ = state_->executor.at(*deadline_, [this] {
      timer_ = kNoTimer;
      leave();
      resume();
    });
  }
  bool await_resume() {
    uncount();
    return state_->set;
  }

  // The event was set: resume as a new event now, whatever the deadline.
  void wake() {
    if (timer_ != kNoTimer) state_->executor.cancel(timer_);
    timer_ = state_->executor.at(state_->executor.clock().now(), [this] {
      timer_ = kNoTimer;
      resume();
    });
  }

 private:
  void resume() { scope_->group().resume(*scope_, frame_); }
  void leave() {
    auto& waiters = state_->waiters;
    waiters.erase(std::remove(waiters.begin(), waiters.end(), this), waiters.end());
  }
  void uncount() {
    if (counted_) --state_->sleeping;
    counted_ = false;
  }

  std::shared_ptr<State> state_;
  std::optional<SimTime> deadline_;
  TimerId timer_ = kNoTimer;
  TaskScope* scope_ = nullptr;
  std::coroutine_handle<> frame_;
  bool counted_ = false;
};

void SimAsyncEvent::set() {
  if (state_->set) return;
  state_->set = true;
  std::vector<Waiter*> waiters;
  waiters.swap(state_->waiters);
  for (Waiter* waiter : waiters) waiter->wake();
}

Task<bool> SimAsyncEvent::wait(std::optional<int64_t> timeoutMs) {
  if (timeoutMs && *timeoutMs < 0)
    throw std::invalid_argument("AsyncEvent::wait requires timeoutMs >= 0, got " + std::to_string(*timeoutMs));
  // A named awaiter, not a temporary: g++ 12 may destroy a temporary awaiter of a co_await twice,
  // which would release the shared state one time too many.
  Waiter waiter(state_, timeoutMs);
  co_return co_await waiter;
}

}  // namespace durasim::sim
