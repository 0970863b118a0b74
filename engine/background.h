// Work an engine capability starts in the background of its incarnation (ctx.waitUntil) and awaits
// with or without a deadline: a fanout batch or DLQ write, an outbox publish. A deadline does not
// cancel the work; its later completion is recorded and ignored by whoever stopped waiting. And the
// passes of a participant's runDue, one per key at a time (a fanout target, an outbox channel).
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/runtime.h"

namespace durasim {

struct Background {
  std::shared_ptr<AsyncEvent> done;  // set when the work ended, either way
  std::exception_ptr error;          // what it threw, if it did
};

// Starts `work` now; `co_await started->done->wait(deadlineMs)` tells whether it ended in time.
std::shared_ptr<Background> startBackground(ObjectContext& ctx, Task<void> work);

// At most one pass per key in this incarnation (fanout.md 4.1, outbox.md 4): a runDue joins the
// pass of a key that is running, or starts one, and awaits every pass it found.
class PassSet {
 public:
  explicit PassSet(ObjectContext& ctx) : ctx_(ctx) {}
  struct Pass;
  // The running pass of `key`, or a new one running `start()` in the background.
  std::shared_ptr<Pass> join(const std::string& key, const std::function<Task<void>()>& start);
  // Waits for every pass, then rethrows the failure that happened first in simulated time (ties:
  // the first in `passes`).
  static Task<void> awaitAll(std::vector<std::shared_ptr<Pass>> passes);

 private:
  Task<void> run(std::string key, std::shared_ptr<Pass> pass, Task<void> body);
  ObjectContext& ctx_;
  std::map<std::string, std::shared_ptr<Pass>> running_;
};

}  // namespace durasim
