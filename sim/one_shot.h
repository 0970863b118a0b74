// A World-owned one-shot result (DESIGN.md, "Coroutine ownership"): what a caller awaits when the
// answer comes from outside its own chain of frames (an RPC reply, a cold-store reply, a commit
// confirmation). The producer settles it once, with a value or an exception; the waiting frame is
// resumed as a new executor event through its TaskGroup, never inline. If the waiting frame is
// destroyed first (its incarnation reset), its awaiter withdraws and nothing is ever resumed.
#pragma once

#include <cassert>
#include <coroutine>
#include <exception>
#include <memory>
#include <optional>
#include <stdexcept>

#include "sim/task_group.h"

namespace durasim::sim {

template <class T>
class OneShot {
  struct Waiter {
    TaskScope* scope = nullptr;
    std::coroutine_handle<> frame;
  };
  struct State {
    Executor* executor = nullptr;
    std::optional<T> value;
    std::exception_ptr error;
    bool settled = false;
    std::optional<Waiter> waiter;
    TimerId wakeup = kNoTimer;
  };

 public:
  // A settled result as a value: the value, or the error (non-null).
  struct Outcome {
    std::optional<T> value;
    std::exception_ptr error;
  };

  explicit OneShot(Executor& executor) : state_(std::make_shared<State>()) { state_->executor = &executor; }

  bool settled() const { return state_->settled; }
  bool awaited() const { return state_->waiter.has_value(); }
  // The scope of the frame waiting on this result, if one is parked.
  const TaskScope* waiting_scope() const { return state_->waiter ? state_->waiter->scope : nullptr; }

  // Settling twice is ignored: the first outcome wins (a reset and a late reply may race).
  void set_value(T value) {
    if (state_->settled) return;
    state_->value.emplace(std::move(value));
    settle();
  }
  void set_error(std::exception_ptr error) {
    if (state_->settled) return;
    state_->error = std::move(error);
    settle();
  }

  class Awaiter {
   public:
    explicit Awaiter(std::shared_ptr<State> state) : state_(std::move(state)) {}
    Awaiter(const Awaiter&) = delete;
    Awaiter& operator=(const Awaiter&) = delete;
    ~Awaiter() {
      if (!parked_) return;
      if (state_->wakeup != kNoTimer) state_->executor->cancel(state_->wakeup);
      state_->wakeup = kNoTimer;
      state_->waiter.reset();
    }
    bool await_ready() const noexcept { return state_->settled; }
    template <detail::TaskPromise P>
    void await_suspend(std::coroutine_handle<P> frame) {
      if (!frame.promise().scope) throw std::logic_error("a one-shot result was awaited outside any root task");
      assert(!state_->waiter && "a one-shot result has one waiter");
      state_->waiter = Waiter{frame.promise().scope, frame};
      parked_ = true;
    }
    T await_resume() {
      Outcome outcome = take();
      if (outcome.error) std::rethrow_exception(outcome.error);
      return std::move(*outcome.value);
    }

   protected:
    Outcome take() {
      parked_ = false;
      state_->waiter.reset();
      if (state_->error) return Outcome{std::nullopt, state_->error};
      return Outcome{std::move(state_->value), nullptr};
    }

   private:
    std::shared_ptr<State> state_;
    bool parked_ = false;
  };
  // Awaits the result without throwing its error: the error comes back as a value.
  class OutcomeAwaiter : public Awaiter {
   public:
    using Awaiter::Awaiter;
    Outcome await_resume() { return Awaiter::take(); }
  };

  Awaiter operator co_await() const { return Awaiter(state_); }
  OutcomeAwaiter outcome() const { return OutcomeAwaiter(state_); }

 private:
  void settle() {
    state_->settled = true;
    if (!state_->waiter) return;
    std::weak_ptr<State> weak = state_;
    state_->wakeup = state_->executor->at(state_->executor->clock().now(), [weak] {
      auto state = weak.lock();
      if (!state || !state->waiter) return;
      state->wakeup = kNoTimer;
      const Waiter waiter = *state->waiter;
      waiter.scope->group().resume(*waiter.scope, waiter.frame);
    });
  }

  std::shared_ptr<State> state_;
};

// OneShot<void> carries only completion or an exception.
struct Done {};

}  // namespace durasim::sim
