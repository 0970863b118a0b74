// How a workload's clients call objects (runtime.md 9.3): every outcome is classified once into a
// Reply — ok, a definite error (the call is known to have failed), or uncertain (it may or may not
// have run) — and retryUntilDefinite repeats an attempt, after a fixed backoff, until its outcome
// is definite. Nothing here draws a random choice or emits an event: a client written with it
// makes exactly the draws and calls it would make by hand.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "engine/load.h"
#include "engine/runtime.h"
#include "engine/runtime_errors.h"
#include "engine/task.h"
#include "sim/world.h"

namespace durasim::workloads {

// What one call came back with.
struct Reply {
  enum class Kind { ok, error, uncertain };
  Kind kind = Kind::uncertain;
  nlohmann::json value;  // ok: the result; error: the error {name, message, ...}; uncertain: null

  bool ok() const { return kind == Kind::ok; }
  bool definite() const { return kind != Kind::uncertain; }
  bool failedWith(const std::string& name) const { return kind == Kind::error && value.at("name") == name; }
  // "ok", the error's name, or "uncertain".
  std::string label() const;
};

// How the objects of a class answer, and what their clients conclude from a refused call.
struct CallStyle {
  // true: answers come in the library envelope, {"result": ...} (ok) or {"error": {name, message,
  // ...}} (a definite error); false: every answer is an ok result.
  bool enveloped = false;
  // A refused call (RpcError flagged overloaded and not durableObjectReset: never executed) is a
  // definite error {name: "RpcError", message} when true. When false it counts as uncertain: the
  // client acts only on its callee's own answers, so it retries or skips a refusal like any call
  // whose outcome it does not know.
  bool refusalDefinite = false;
};
// Objects that answer with plain results; a refused call never ran, so it is not retried.
inline constexpr CallStyle kPlainCallStyle{false, true};

// An answer the callee returned.
Reply classifyAnswer(nlohmann::json answer, const CallStyle& style);
// A call that threw RpcError: refused (see CallStyle) or uncertain.
Reply classifyFailure(const RpcError& error, const CallStyle& style);

// A capability's enqueue envelope (engine/load.h): success is ok with the value, a rejection a
// definite error {name, message}.
template <class T>
Reply classifyEnqueue(const EnqueueResult<T>& result) {
  if (result.success) return {Reply::Kind::ok, nlohmann::json(*result.value)};
  return {Reply::Kind::error, {{"name", result.error->name}, {"message", result.error->message}}};
}

// The pause after the n-th uncertain attempt: min(maxMs, stepMs * n).
struct Backoff {
  int64_t stepMs = 0, maxMs = 0;
  int64_t after(int64_t attempt) const { return std::min(maxMs, stepMs * attempt); }
};

// The definite reply of a retried call and the attempts it took. Only a first attempt's error says
// the operation never ran: after an uncertain attempt, an earlier one may have.
struct Settled {
  Reply reply;
  int64_t attempts = 0;
};

// Runs attempt() until its reply is definite, sleeping backoff.after(n) after the n-th uncertain
// one. `attempt` builds a new Task each time; whatever it refers to outlives the returned Task.
// Await the returned Task as a named variable (TOOLCHAIN.md: g++ 12 and by-value arguments).
Task<Settled> retryUntilDefinite(sim::World& world, Backoff backoff, std::function<Task<Reply>()> attempt);

// The calls a workload's clients make into the objects of one class: each outcome classified by
// the class's CallStyle, every call and every uncertain outcome counted.
// REQUIRES: `world` and `objects` outlive this client and every Task it returns.
class ObjectClient {
 public:
  ObjectClient(sim::World& world, ObjectNamespace& objects, CallStyle style)
      : world_(world), objects_(objects), style_(style) {}
  ObjectClient(const ObjectClient&) = delete;
  ObjectClient& operator=(const ObjectClient&) = delete;

  // One call of `method` on the object `name`, through a new stub (a failed stub stays failed).
  Task<Reply> call(std::string name, std::string method, nlohmann::json args);
  // call() until its outcome is definite (retryUntilDefinite).
  Task<Settled> callUntilDefinite(std::string name, std::string method, nlohmann::json args, Backoff backoff);

  int64_t calls() const { return calls_; }
  int64_t uncertain() const { return uncertain_; }

 private:
  sim::World& world_;
  ObjectNamespace& objects_;
  CallStyle style_;
  int64_t calls_ = 0, uncertain_ = 0;
};

}  // namespace durasim::workloads
