// Root tasks and the groups that own them (DESIGN.md, "Coroutine ownership").
//
// A TaskGroup owns root Task<void>s, each under its own TaskScope; an object incarnation will own
// one group, so a reset is one call (cancel_all) that destroys every frame it owns. Frames are only
// ever resumed through TaskGroup::resume, which brackets the run with the group's segment hooks
// (where the object runtime commits implicit transactions) and reaps roots that finished.
// Awaiters that park a frame on an executor timer cancel that timer when the frame is destroyed,
// so a destroyed frame is never resumed.
#pragma once

#include <coroutine>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/task.h"
#include "sim/executor.h"

namespace durasim {

namespace sim {
class TaskGroup;
}

// One root task: what its frames name as their scope.
class TaskScope {
 public:
  sim::TaskGroup& group() const { return *group_; }
  uint64_t id() const { return id_; }
  const std::string& name() const { return name_; }

 private:
  friend class sim::TaskGroup;
  TaskScope(sim::TaskGroup& group, uint64_t id, std::string name) : group_(&group), id_(id), name_(std::move(name)) {}

  sim::TaskGroup* group_;
  uint64_t id_;
  std::string name_;
  Task<void> root_;
  sim::TimerId start_timer_ = sim::kNoTimer;
  std::function<void(std::exception_ptr)> on_done_;
};

namespace sim {

// Called around every segment (one resumption up to the next suspension or completion). `admits`
// is the input gate: a resumption it refuses waits, in arrival order, until resume_deferred().
class SegmentHooks {
 public:
  virtual ~SegmentHooks() = default;
  virtual bool admits(const TaskScope&) const { return true; }
  virtual void segment_begin(TaskScope&) {}
  virtual void segment_end(TaskScope&) {}
};

class TaskGroup {
 public:
  using OnDone = std::function<void(std::exception_ptr)>;

  TaskGroup(Executor& executor, SegmentHooks* hooks = nullptr) : executor_(executor), hooks_(hooks) {}
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;
  ~TaskGroup() { cancel_all(); }

  // Starts `task` as a root at the current time (as a new executor event, never nested inside the
  // running segment). `on_done` receives its exception, or null on success; a root that fails
  // without an `on_done` makes the executor step that finished it throw.
  uint64_t spawn(std::string name, Task<void> task, OnDone on_done = {});
  // Destroys one root's frames without resuming them. Returns whether it was live.
  bool cancel(uint64_t id);
  // Destroys every root's frames. REQUIRES: not called from inside one of this group's segments.
  void cancel_all();

  // Starts `task` as a root right now, as a segment of the current executor event. REQUIRES: not
  // inside a segment of this group. Used where the order of starts must be exactly the call order.
  uint64_t spawn_now(std::string name, Task<void> task, OnDone on_done = {});

  // Resumes `frame` (a suspended frame under `scope`) as one segment, or defers it if the hooks'
  // input gate does not admit its scope.
  void resume(TaskScope& scope, std::coroutine_handle<> frame);
  // Schedules every deferred resumption the gate now admits, in arrival order, as new events.
  void resume_deferred();

  // Roots not finished yet: a root that just completed is not counted during its last segment_end.
  std::size_t live() const {
    std::size_t n = 0;
    for (const auto& [id, scope] : roots_) n += scope->root_.done() ? 0 : 1;
    return n;
  }
  bool running() const { return running_ != nullptr; }
  Executor& executor() const { return executor_; }

 private:
  void finish(TaskScope& scope);
  TaskScope& adopt(std::string name, Task<void> task, OnDone on_done);

  struct Deferred {
    TaskScope* scope;
    std::coroutine_handle<> frame;
  };

  Executor& executor_;
  SegmentHooks* hooks_;
  std::map<uint64_t, std::unique_ptr<TaskScope>> roots_;
  TaskScope* running_ = nullptr;
  std::vector<Deferred> deferred_;
  uint64_t next_id_ = 1;
};

// Awaitable that parks the awaiting frame until simulated time `until`. Its destructor cancels the
// timer if the frame is destroyed first.
class SleepAwaiter {
 public:
  SleepAwaiter(Executor& executor, SimTime until) : executor_(executor), until_(until) {}
  SleepAwaiter(const SleepAwaiter&) = delete;
  SleepAwaiter& operator=(const SleepAwaiter&) = delete;
  ~SleepAwaiter() {
    if (timer_ != kNoTimer) executor_.cancel(timer_);
  }

  bool await_ready() const noexcept { return false; }  // sleeping 0 ms is still a yield
  template <detail::TaskPromise P>
  void await_suspend(std::coroutine_handle<P> frame) {
    TaskScope* scope = frame.promise().scope;
    if (!scope) throw std::logic_error("a simulated sleep was awaited outside any root task");
    timer_ = executor_.at(until_, [this, scope, frame] {
      timer_ = kNoTimer;
      scope->group().resume(*scope, frame);
    });
  }
  void await_resume() const noexcept {}

 private:
  Executor& executor_;
  SimTime until_;
  TimerId timer_ = kNoTimer;
};

}  // namespace sim
}  // namespace durasim
