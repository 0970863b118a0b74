// Background work of a capability; see background.h.
#include "engine/background.h"

#include <utility>

namespace durasim {
namespace {

Task<void> runInto(Task<void> work, std::shared_ptr<Background> background) {
  try {
    co_await work;
  } catch (...) {
    background->error = std::current_exception();
  }
  background->done->set();
}

}  // namespace

std::shared_ptr<Background> startBackground(ObjectContext& ctx, Task<void> work) {
  auto background = std::make_shared<Background>();
  background->done = ctx.makeEvent();
  ctx.waitUntil(runInto(std::move(work), background));
  return background;
}

struct PassSet::Pass {
  std::shared_ptr<AsyncEvent> done;
  std::exception_ptr error;
  int64_t endedAt = 0;
};

std::shared_ptr<PassSet::Pass> PassSet::join(const std::string& key, const std::function<Task<void>()>& start) {
  if (auto running = running_.find(key); running != running_.end()) return running->second;
  auto pass = std::make_shared<Pass>();
  pass->done = ctx_.makeEvent();
  running_[key] = pass;
  ctx_.waitUntil(run(key, pass, start()));
  return pass;
}

Task<void> PassSet::run(std::string key, std::shared_ptr<Pass> pass, Task<void> body) {
  try {
    co_await body;
  } catch (...) {
    pass->error = std::current_exception();
  }
  pass->endedAt = ctx_.clock.now();
  if (auto it = running_.find(key); it != running_.end() && it->second == pass) running_.erase(it);
  pass->done->set();
}

Task<void> PassSet::awaitAll(std::vector<std::shared_ptr<Pass>> passes) {
  const Pass* first = nullptr;
  for (const std::shared_ptr<Pass>& pass : passes) {
    co_await pass->done->wait();
    if (pass->error && (!first || pass->endedAt < first->endedAt)) first = pass.get();
  }
  if (first) std::rethrow_exception(first->error);
}

}  // namespace durasim
