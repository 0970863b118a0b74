// Root spawning, segment bracketing and cancellation; see task_group.h.
#include "sim/task_group.h"

#include <cassert>
#include <stdexcept>

namespace durasim::sim {

TaskScope& TaskGroup::adopt(std::string name, Task<void> task, OnDone on_done) {
  const uint64_t id = next_id_++;
  // Ids are never reused, so the scope always goes in.
  TaskScope& adopted = *roots_.emplace(id, std::unique_ptr<TaskScope>(new TaskScope(*this, id, std::move(name)))).first->second;
  adopted.root_ = std::move(task);
  adopted.root_.handle().promise().scope = &adopted;
  adopted.on_done_ = std::move(on_done);
  return adopted;
}

uint64_t TaskGroup::spawn(std::string name, Task<void> task, OnDone on_done) {
  TaskScope& scope = adopt(std::move(name), std::move(task), std::move(on_done));
  TaskScope* raw = &scope;
  scope.start_timer_ = executor_.at(executor_.clock().now(), [this, raw] {
    raw->start_timer_ = kNoTimer;
    resume(*raw, raw->root_.handle());
  });
  return scope.id();
}

uint64_t TaskGroup::spawn_now(std::string name, Task<void> task, OnDone on_done) {
  if (running_) throw std::logic_error("spawn_now inside a segment of the same group");
  TaskScope& scope = adopt(std::move(name), std::move(task), std::move(on_done));
  const uint64_t id = scope.id();
  resume(scope, scope.root_.handle());
  return id;
}

bool TaskGroup::cancel(uint64_t id) {
  auto it = roots_.find(id);
  if (it == roots_.end()) return false;
  if (it->second.get() == running_) throw std::logic_error("a root task cannot cancel itself while it runs");
  if (it->second->start_timer_ != kNoTimer) executor_.cancel(it->second->start_timer_);
  const TaskScope* cancelled = it->second.get();
  std::erase_if(deferred_, [cancelled](const Deferred& d) { return d.scope == cancelled; });
  auto scope = std::move(it->second);
  roots_.erase(it);
  scope.reset();  // destroys the frames; their awaiters cancel their timers
  return true;
}

void TaskGroup::cancel_all() {
  if (running_) throw std::logic_error("a task group cannot be cancelled from inside one of its segments");
  while (!roots_.empty()) cancel(roots_.begin()->first);
}

void TaskGroup::resume(TaskScope& scope, std::coroutine_handle<> frame) {
  assert(!running_ && "segments never nest");
  if (hooks_ && !hooks_->admits(scope)) {
    deferred_.push_back({&scope, frame});
    return;
  }
  running_ = &scope;
  if (hooks_) hooks_->segment_begin(scope);
  frame.resume();
  if (hooks_) hooks_->segment_end(scope);
  running_ = nullptr;
  if (scope.root_.done()) finish(scope);
}

void TaskGroup::resume_deferred() {
  std::vector<Deferred> waiting = std::move(deferred_);
  deferred_.clear();
  for (const Deferred& d : waiting) {
    if (hooks_ && !hooks_->admits(*d.scope)) {
      deferred_.push_back(d);
      continue;
    }
    // Each admitted resumption becomes its own event; a cancel before it runs removes the scope.
    const uint64_t id = d.scope->id();
    executor_.at(executor_.clock().now(), [this, id, frame = d.frame] {
      auto it = roots_.find(id);
      if (it != roots_.end()) resume(*it->second, frame);
    });
  }
}

void TaskGroup::finish(TaskScope& scope) {
  std::exception_ptr error;
  try {
    scope.root_.result();
  } catch (...) {
    error = std::current_exception();
  }
  OnDone on_done = std::move(scope.on_done_);
  const std::string name = scope.name();
  roots_.erase(scope.id());  // destroys the finished frame
  if (on_done) {
    on_done(error);
  } else if (error) {
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      throw std::runtime_error("root task '" + name + "' failed: " + e.what());
    }
  }
}

}  // namespace durasim::sim
