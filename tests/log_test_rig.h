// Shared rig of the DurabilityLog tests: a `Log` object whose constructor builds the shared
// scheduler and a DurabilityLog with the test's options (and the rig's research variant flags), and
// whose one RPC method runs the test's script against them; plus a record helper.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>

#include "engine/log.h"
#include "engine/scheduler.h"
#include "tests/runtime_test_harness.h"

namespace durasim::rt_test {

inline constexpr const char* kLogClass = "Log";

class LogHost;
using LogScript = std::function<Task<json>(LogHost&)>;

struct LogEnv {
  LogOptions options;
  LogScript script;
};

class LogHost final : public DurableObject {
 public:
  LogHost(ObjectContext& context, LogEnv* environment)
      : ctx(context), env(environment), scheduler(context, SchedulerOptions{}), log(scheduler, env->options) {}
  bool hasAlarmHandler() const override { return true; }
  Task<void> alarm(const AlarmInvocationInfo& info) override { return scheduler.alarm(info); }
  Task<json> call(std::string_view, const json&) override {
    LogScript script = env->script;
    co_return co_await script(*this);
  }
  ObjectContext& ctx;
  LogEnv* env;
  DurabilityScheduler scheduler;
  DurabilityLog log;
};

// The environment is a base so it is built before (and outlives) the Rig's runtime.
struct LogEnvHolder {
  LogEnv env;
};

// With `variants`, every ObjectContext of the run carries those research variant flags.
inline sim::RuntimeOptions withVariants(std::set<std::string> variants) {
  sim::RuntimeOptions options;
  options.variants = std::move(variants);
  return options;
}

struct LogRig : LogEnvHolder, Rig {
  explicit LogRig(std::set<std::string> variants) : LogRig(withVariants(std::move(variants))) {}
  explicit LogRig(sim::RuntimeOptions options = {}) : Rig(1, std::move(options)) {
    LogEnv* e = &env;
    runtime.define_class(kLogClass, [e](ObjectContext& ctx) { return std::make_unique<LogHost>(ctx, e); });
  }
  // Runs `script` in one call on object "a" and returns its result; the call must succeed.
  json run(LogScript script) {
    env.script = std::move(script);
    CallPtr c = Rig::call(kLogClass, "a", "run");
    Rig::run_for(5'000);
    EXPECT_TRUE(c->ok) << c->error;
    return c->value;
  }
  int64_t count(const std::string& sql) { return runtime.world().stores().live(durasim::sim::object_label(kLogClass, "a"), sql).one().int64("n"); }
  bool hasTable(const std::string& table) {
    return count("SELECT COUNT(*) AS n FROM sqlite_master WHERE type = 'table' AND name = '" + table + "'") == 1;
  }
};

inline LogAppendInput rec(json body, std::optional<std::string> key = std::nullopt) {
  return LogAppendInput{std::move(body), std::move(key)};
}

// "ok" or the name of the error ack/nack threw.
inline Task<json> settleOf(LogHost& h, bool ack, const std::string& consumer, const std::string& batchId) {
  try {
    Task<void> t = ack ? h.log.ack(consumer, batchId) : h.log.nack(consumer, batchId);
    co_await t;
    co_return json("ok");
  } catch (const DurabilityError& e) {
    co_return json(e.name());
  }
}

inline Task<json> cursorOf(LogHost& h, const std::string& consumer) {
  Task<std::optional<int64_t>> t = h.log.cursor(consumer);
  std::optional<int64_t> cursor = co_await t;
  co_return cursor ? json(*cursor) : json(nullptr);
}

// Every lease row of `consumer` as [first, last, state, attempt].
inline Task<json> rowsOf(LogHost& h, const std::string& consumer) {
  Task<std::vector<LogLeaseRow>> t = h.log.leases(consumer);
  std::vector<LogLeaseRow> rows = co_await t;
  static const char* names[] = {"active", "pending", "acked", "skipped"};
  json out = json::array();
  for (const LogLeaseRow& r : rows) out.push_back(json{r.firstOffset, r.lastOffset, names[static_cast<int>(r.state)], r.attempt});
  co_return out;
}

}  // namespace durasim::rt_test
