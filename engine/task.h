// Task<T>: the lazy coroutine type every asynchronous capability method returns.
//
// A Task does nothing until it is awaited (or started by its host as a root). It owns the frame of
// the coroutine it names; while that coroutine is suspended inside `co_await child`, its frame owns
// the child Task, so destroying a suspended root destroys the whole chain of frames beneath it.
// Exceptions thrown in a child propagate to the awaiting parent through `co_await`.
//
// A coroutine returning Task may run long after its call (it is lazy, and a caller may keep the
// Task before awaiting it), so it takes its parameters by value: its frame holds what it was given.
// A caller passing non-trivial arguments names the Task before awaiting it (`Task<T> t = f(x);
// co_await t;`), so no temporary lives in the co_await expression (g++ 12 destroys some twice).
//
// Every Task carries the `TaskScope*` of the root it runs under. The scope is opaque here: the host
// (the simulator, or another implementation of the port) defines it and uses it to resume frames
// through tokens that die with their incarnation (DESIGN.md, "Coroutine ownership").
#pragma once

#include <cassert>
#include <coroutine>
#include <exception>
#include <optional>
#include <type_traits>
#include <utility>
#include <variant>
#include <vector>

namespace durasim {

class TaskScope;  // defined by the host; names the root a frame belongs to

// What a coroutine returning Task<T> (T not void) may `co_return` to finish with `error` without
// throwing it: the awaiting parent sees `error` thrown, as if the body had thrown it. A failure
// received as a value (an RPC's reply, say) is handed on this way at no cost, where a throw costs
// an unwinding of the frame (~15,000 instructions).
struct Rethrow {
  std::exception_ptr error;
};

namespace detail {

// The part of every Task promise that the host and awaiters rely on.
struct PromiseBase {
  std::coroutine_handle<> continuation;  // the awaiting parent; empty for a root
  TaskScope* scope = nullptr;            // the root's scope, inherited by every awaited child

  struct FinalAwaiter {
    bool await_ready() const noexcept { return false; }
    template <class P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> self) noexcept {
      std::coroutine_handle<> next = self.promise().continuation;
      return next ? next : std::noop_coroutine();
    }
    void await_resume() const noexcept {}
  };

  std::suspend_always initial_suspend() const noexcept { return {}; }
  FinalAwaiter final_suspend() const noexcept { return {}; }
};

template <class P>
concept TaskPromise = std::is_base_of_v<PromiseBase, P>;

template <class T>
struct Promise;

}  // namespace detail

template <class T = void>
class [[nodiscard]] Task {
 public:
  using promise_type = detail::Promise<T>;
  using Handle = std::coroutine_handle<promise_type>;

  Task() = default;
  explicit Task(Handle handle) : handle_(handle) {}
  Task(Task&& other) noexcept : handle_(std::exchange(other.handle_, {})) {}
  Task& operator=(Task&& other) noexcept {
    if (this != &other) {
      reset();
      handle_ = std::exchange(other.handle_, {});
    }
    return *this;
  }
  Task(const Task&) = delete;
  Task& operator=(const Task&) = delete;
  ~Task() { reset(); }

  bool valid() const { return static_cast<bool>(handle_); }
  bool done() const { return handle_ && handle_.done(); }
  Handle handle() const { return handle_; }

  // Destroys the frame (and, if it is suspended, every frame it awaits).
  void reset() {
    if (handle_) std::exchange(handle_, {}).destroy();
  }

  // For hosts driving a root: the result of a completed task (rethrows its exception).
  decltype(auto) result() {
    assert(done());
    return handle_.promise().take();
  }

  struct Awaiter {
    Handle child;
    bool await_ready() const noexcept { return !child || child.done(); }
    template <detail::TaskPromise P>
    std::coroutine_handle<> await_suspend(std::coroutine_handle<P> parent) noexcept {
      child.promise().continuation = parent;
      child.promise().scope = parent.promise().scope;
      return child;
    }
    decltype(auto) await_resume() {
      assert(child && "awaiting an empty Task");
      return child.promise().take();
    }
  };

  // A Task may be awaited once; the frame stays owned by this object until it is destroyed.
  Awaiter operator co_await() & noexcept { return Awaiter{handle_}; }
  Awaiter operator co_await() && noexcept { return Awaiter{handle_}; }

 private:
  Handle handle_;
};

namespace detail {

template <class T>
struct Promise : PromiseBase {
  std::variant<std::monostate, T, std::exception_ptr> outcome;

  Task<T> get_return_object() { return Task<T>(Task<T>::Handle::from_promise(*this)); }
  template <class U>
  void return_value(U&& value) {
    outcome.template emplace<1>(std::forward<U>(value));
  }
  void return_value(Rethrow failure) noexcept { outcome.template emplace<2>(std::move(failure.error)); }
  void unhandled_exception() noexcept { outcome.template emplace<2>(std::current_exception()); }

  T take() {
    if (outcome.index() == 2) std::rethrow_exception(std::get<2>(outcome));
    assert(outcome.index() == 1 && "result of an unfinished Task");
    return std::move(std::get<1>(outcome));
  }
};

template <>
struct Promise<void> : PromiseBase {
  std::exception_ptr error;
  bool finished = false;

  Task<void> get_return_object() { return Task<void>(Task<void>::Handle::from_promise(*this)); }
  void return_void() noexcept { finished = true; }
  void unhandled_exception() noexcept { error = std::current_exception(); }

  void take() {
    if (error) std::rethrow_exception(error);
    assert(finished && "result of an unfinished Task");
  }
};

// when_all machinery: one joiner coroutine per child; the last to finish resumes the parent.
struct JoinCounter {
  std::size_t remaining = 0;
  std::coroutine_handle<> parent;
};

struct Joiner {
  struct promise_type : PromiseBase {
    JoinCounter* counter = nullptr;
    Joiner get_return_object() { return Joiner{std::coroutine_handle<promise_type>::from_promise(*this)}; }
    struct JoinFinal {
      bool await_ready() const noexcept { return false; }
      std::coroutine_handle<> await_suspend(std::coroutine_handle<promise_type> self) noexcept {
        JoinCounter* counter = self.promise().counter;
        return --counter->remaining == 0 ? counter->parent : std::noop_coroutine();
      }
      void await_resume() const noexcept {}
    };
    JoinFinal final_suspend() const noexcept { return {}; }
    void return_void() noexcept {}
    void unhandled_exception() noexcept { std::terminate(); }  // the joined Task keeps exceptions
  };
  std::coroutine_handle<promise_type> handle;
  Joiner(Joiner&& other) noexcept : handle(std::exchange(other.handle, {})) {}
  explicit Joiner(std::coroutine_handle<promise_type> h) : handle(h) {}
  ~Joiner() {
    if (handle) handle.destroy();
  }
};

// Awaits `task` without unwrapping its result; the result stays in the task's promise.
template <class T>
struct Settle {
  typename Task<T>::Handle child;
  bool await_ready() const noexcept { return child.done(); }
  template <TaskPromise P>
  std::coroutine_handle<> await_suspend(std::coroutine_handle<P> parent) noexcept {
    child.promise().continuation = parent;
    child.promise().scope = parent.promise().scope;
    return child;
  }
  void await_resume() const noexcept {}
};

template <class T>
Joiner join_one(typename Task<T>::Handle child) {
  co_await Settle<T>{child};
}

template <class T>
struct JoinAll {
  std::vector<Task<T>>& tasks;
  std::vector<Joiner> joiners;
  JoinCounter counter;

  bool await_ready() const noexcept { return tasks.empty(); }
  template <TaskPromise P>
  bool await_suspend(std::coroutine_handle<P> parent) {
    counter.remaining = tasks.size() + 1;  // +1 so no joiner resumes the parent during this loop
    counter.parent = parent;
    joiners.reserve(tasks.size());
    for (Task<T>& task : tasks) {
      joiners.push_back(join_one<T>(task.handle()));
      auto& promise = joiners.back().handle.promise();
      promise.counter = &counter;
      promise.scope = parent.promise().scope;
      joiners.back().handle.resume();
    }
    return --counter.remaining != 0;  // suspend unless every child already finished
  }
  void await_resume() const noexcept {}
};

}  // namespace detail

// Runs every task concurrently under the awaiting root and waits for all of them. The results come
// back in input order; if any task threw, the first such exception (in input order) is rethrown
// after all have finished.
template <class T>
Task<std::vector<T>> when_all(std::vector<Task<T>> tasks) {
  co_await detail::JoinAll<T>{tasks, {}, {}};
  std::vector<T> results;
  results.reserve(tasks.size());
  for (Task<T>& task : tasks) results.push_back(task.result());
  co_return results;
}

inline Task<void> when_all(std::vector<Task<void>> tasks) {
  co_await detail::JoinAll<void>{tasks, {}, {}};
  for (Task<void>& task : tasks) task.result();
}

}  // namespace durasim
