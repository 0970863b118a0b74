// Routing (routing.md 3 and 4): the caller-side RoutingClient with its default power-of-two-choices
// selection and adaptive width, over the load envelope of engine/load.h that every capability
// returns. Keeps RTE-01..07, RTE-10 and RTE-11: one invoke per push, its response or exception
// passed through, bounded and fresh observations, the width rules, validation before sending, the
// timeout wrapper. All state here is in memory and advisory. An optional probe traces each push as
// `rte.*` events (docs/log-trace-events.md).
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/errors.h"
#include "engine/load.h"
#include "engine/routing_events.h"
#include "engine/runtime.h"
#include "engine/runtime_errors.h"
#include "engine/task.h"

namespace durasim {

// routing.md 3.1 step 5: the observation map holds at most 1024 shards.
inline constexpr std::size_t kRoutingMaxObservedShards = 1024;
// routing.md 3: RoutingClientOptions::softBacklogLimit default.
inline constexpr int64_t kRoutingDefaultSoftBacklogLimit = 1000;
// routing.md 4, resize step 2: grow at most once per 1000 ms.
inline constexpr int64_t kRoutingGrowIntervalMs = 1000;
// routing.md 4, resize step 3: shrink at most once per 60000 ms.
inline constexpr int64_t kRoutingShrinkIntervalMs = 60000;
// routing.md 4, resize step 3: shrink only while 4 * pendingDeliveries < softBacklogLimit.
inline constexpr int64_t kRoutingShrinkBacklogFactor = 4;
// routing.md 4: default shard names are "shard-<i>".
inline constexpr char kRoutingShardPrefix[] = "shard-";

// ---------------------------------------------------------------------------------------------
// RoutingClient (caller side)

struct ShardAddress {
  std::string shard;
  std::optional<std::string> locationHint;  // only influences where a new object is first placed
  friend bool operator==(const ShardAddress&, const ShardAddress&) = default;
};
using Observations = std::map<std::string, LoadSnapshot>;  // shard -> latest load (a copy)

template <class Input, class Value>
struct RoutingClientOptions {
  // Calls the application's method on the chosen object. Called exactly once per push. The address
  // and input live in the awaiting frame until the returned Task completes.
  std::function<Task<EnqueueResult<Value>>(const ShardAddress&, const Input&)> invoke;
  // Optional custom sharding; without it the client uses its own selection (routing.md 4).
  std::function<ShardAddress(const Input&, const std::optional<nlohmann::json>& context, const Observations&)>
      sharding;
  int64_t softBacklogLimit = kRoutingDefaultSoftBacklogLimit;
  // Needed only by withTimeout views (routing.md 3.2), which race `invoke` against a timer: the
  // invoke runs as background work (`background`, e.g. ObjectContext::waitUntil) and signals an
  // event (`makeEvent`, e.g. ObjectContext::makeEvent) that the push awaits with a timeout. A client
  // living outside any object passes its host's equivalents. withTimeout throws TypeError when
  // either is empty.
  std::function<std::shared_ptr<AsyncEvent>()> makeEvent;
  std::function<void(Task<void>)> background;
  // Optional instrumentation: receives the client's `rte.*` events (docs/log-trace-events.md) with
  // their fields; the host typically forwards them to its trace, adding a `client` field that names
  // this client. Never called when empty.
  std::function<void(std::string_view event, EventFields fields)> probe;
};

namespace detail {

// What recording one reply's load did (routing.md 3.1 step 5), for the `rte.observe` event.
struct ObservationOutcome {
  bool kept = false;
  std::optional<int64_t> stored;      // the observedAt held before, if any
  std::vector<std::string> evicted;   // shards evicted by the cap
  std::size_t size = 0;               // entries after
};

// The JSON form of a load snapshot in `rte.*` events (averages absent as null).
nlohmann::json loadToJson(const LoadSnapshot& load);

// The state views share: observations (LRU by update, capped, windowed) and the width (routing.md 4).
class RoutingCore {
 public:
  // Drops every entry with now - observedAt >= 60000, then returns a copy (routing.md 3.1 step 1).
  Observations observations(int64_t now);
  // routing.md 3.1 step 5: kept only if new or observedAt >= stored; then most recent; LRU cap.
  ObservationOutcome record(const std::string& shard, const LoadSnapshot& load);
  // routing.md 4 select / resize. `draws`, when given, receives the two random values drawn.
  ShardAddress select(const Observations& observed, Random& random, std::array<double, 2>* draws = nullptr) const;
  void resize(const LoadSnapshot& load, int64_t now, int64_t softBacklogLimit);
  int64_t width() const { return width_; }
  std::optional<int64_t> lastResizeAt() const { return lastResizeAt_; }

  // The entries as the JSON object `rte.push.begin` carries (shard -> loadToJson). It is kept
  // between calls and shared with the events that carry it: only the entries changed since the
  // last call are converted again, and a copy is taken first if an event still holds it.
  std::shared_ptr<const nlohmann::json> observationsJson();

 private:
  struct Entry {
    LoadSnapshot load;
    uint64_t sequence = 0;  // position in the update order
  };
  // Notes that the entry of `shard` changed or went, for observationsJson.
  void changed(const std::string& shard);

  std::map<std::string, Entry> entries_;
  std::map<uint64_t, std::string> byUpdate_;  // sequence -> shard, oldest first
  uint64_t nextSequence_ = 0;
  std::shared_ptr<nlohmann::json> json_;  // observationsJson's object, null until first asked for
  std::set<std::string> changed_;         // shards whose entries changed since json_ was brought up to date
  bool rebuild_ = true;                   // more changed than are worth noting: json_ is built again
  int64_t width_ = 1;
  std::optional<int64_t> lastResizeAt_;
};

// routing.md 3.1 step 2: both contexts must be JSON objects; merged key by key, the bound one's keys
// winning. nullopt when neither is given. Throws TypeError("Routing context must be an object").
std::optional<nlohmann::json> mergeRoutingContext(const std::optional<nlohmann::json>& bound,
                                                  const std::optional<nlohmann::json>& positional);

void validateRoutingOptions(bool hasInvoke, int64_t softBacklogLimit);
void validateRoutingTimeout(int64_t timeoutMs, bool hasMakeEvent, bool hasBackground);

}  // namespace detail

template <class Input, class Value>
class RoutingClient {
 public:
  using Result = EnqueueResult<Value>;
  using Options = RoutingClientOptions<Input, Value>;

  // Throws RangeError("softBacklogLimit must be a positive safe integer") or
  // TypeError("Routing requires an invoke function").
  RoutingClient(Clock& clock, Random& random, Options options) {
    detail::validateRoutingOptions(static_cast<bool>(options.invoke), options.softBacklogLimit);
    shared_ = std::make_shared<Shared>(Shared{&clock, &random, std::move(options), {}});
  }

  // routing.md 3.1. Validation failures (context, empty shard, a throwing sharding function) throw
  // before invoke is called; invoke is called exactly once; its exception propagates unchanged and
  // records nothing; the response is returned unchanged after its load is recorded.
  // The returned Task holds copies of the input, the context and the view's state, so neither the
  // arguments nor this view need outlive the call. Inside a coroutine, keep the call out of the
  // co_await expression (`Task<Result> t = client.push(input, context); co_await t;`): g++ 12 can
  // destroy a by-value argument of an awaited call twice.
  Task<Result> push(Input input, std::optional<nlohmann::json> context = std::nullopt) const {
    return pushImpl(shared_, bound_, timeoutMs_, std::move(input), std::move(context));
  }

  // Prunes stale entries, then returns a deep copy.
  Observations observations() { return shared_->core.observations(shared_->clock->now()); }

  // A view with a bound context; views share observations, width and resize state. When views
  // compose, each view merges its own context over what it is given and passes the result on to the
  // view it was made from, so the earliest binding's keys win.
  RoutingClient withContext(nlohmann::json context) const {
    RoutingClient view = *this;
    view.bound_.push_back(std::move(context));
    return view;
  }

  // A view whose push races invoke against a timer of `timeoutMs` (routing.md 3.2). Throws
  // RangeError("timeoutMs must be a positive integer"). Composed timeouts: the shortest applies.
  RoutingClient withTimeout(int64_t timeoutMs) const {
    detail::validateRoutingTimeout(timeoutMs, static_cast<bool>(shared_->options.makeEvent),
                                   static_cast<bool>(shared_->options.background));
    RoutingClient view = *this;
    view.timeoutMs_ = timeoutMs_ ? std::min(*timeoutMs_, timeoutMs) : timeoutMs;
    return view;
  }

  int64_t width() const { return shared_->core.width(); }

 private:
  struct Shared {
    Clock* clock;
    Random* random;
    Options options;
    detail::RoutingCore core;
    int64_t pushes = 0;  // push ids for the `rte.*` events, 1-based
  };
  // One raced invoke: the background runner fills result or error, then sets done. `abandoned` is
  // set when the push timed out, so the runner knows its outcome is late and discarded.
  struct TimedCall {
    std::shared_ptr<AsyncEvent> done;
    std::optional<int64_t> startedAt;
    std::optional<Result> result;
    std::exception_ptr error;
    bool abandoned = false;
  };

  static void emit(const Shared& shared, std::string_view event, EventFields fields) {
    if (!shared.options.probe) return;
    fields["now"] = shared.clock->now();
    shared.options.probe(event, std::move(fields));
  }
  static bool probing(const Shared& shared) { return static_cast<bool>(shared.options.probe); }

  // After shared.core.observations(now): the observations the push saw are the core's entries.
  static void emitBegin(Shared& shared, int64_t push, std::optional<int64_t> timeoutMs) {
    if (!probing(shared)) return;
    const std::optional<int64_t> last = shared.core.lastResizeAt();
    emit(shared, routing_events::kPushBegin,
         EventFields()
             .add("push", push)
             .add("width", shared.core.width())
             .add("lastResizeAt", json_or_null(last))
             .add("custom", static_cast<bool>(shared.options.sharding))
             .add("timeoutMs", json_or_null(timeoutMs))
             .add("softBacklogLimit", shared.options.softBacklogLimit)
             .share("observed", shared.core.observationsJson()));
  }

  // routing.md 3.1 steps 2 and 3: the target, or an exception (after `rte.push.refused`).
  static ShardAddress target(Shared& shared, int64_t push, const std::vector<nlohmann::json>& bound, const Input& input,
                             const std::optional<nlohmann::json>& context, const Observations& observed) {
    try {
      std::optional<nlohmann::json> merged = detail::mergeRoutingContext(std::nullopt, context);
      for (auto it = bound.rbegin(); it != bound.rend(); ++it) merged = detail::mergeRoutingContext(*it, merged);
      std::array<double, 2> draws{};
      const bool custom = static_cast<bool>(shared.options.sharding);
      ShardAddress address = custom ? shared.options.sharding(input, merged, observed)
                                    : shared.core.select(observed, *shared.random, &draws);
      if (probing(shared))
        emit(shared, routing_events::kSelect,
             EventFields()
                 .add("push", push)
                 .add("shard", address.shard)
                 .add("hint", json_or_null(address.locationHint))
                 .add("draws", custom ? nlohmann::json() : nlohmann::json::array({draws[0], draws[1]})));
      if (address.shard.empty()) throw RoutingError();
      return address;
    } catch (const std::exception& e) {
      if (probing(shared)) emit(shared, routing_events::kPushRefused, {{"push", push}, {"message", e.what()}});
      throw;
    } catch (...) {
      if (probing(shared)) emit(shared, routing_events::kPushRefused, {{"push", push}, {"message", "non-standard exception"}});
      throw;
    }
  }

  // The reply's load as `rte.reply` and `rte.resize` carry it: converted once, shared by both.
  static std::shared_ptr<const nlohmann::json> loadJson(const Shared& shared, const LoadSnapshot& load) {
    return probing(shared) ? std::make_shared<const nlohmann::json>(detail::loadToJson(load)) : nullptr;
  }

  static void emitReply(const Shared& shared, int64_t push, const std::string& shard, const Result& response, bool late,
                        std::shared_ptr<const nlohmann::json> load) {
    if (!probing(shared)) return;
    emit(shared, routing_events::kReply,
         EventFields()
             .add("push", push)
             .add("shard", shard)
             .add("success", response.success)
             .add("value", response.value.has_value())
             .add("error", response.error.has_value())
             .share("load", std::move(load))
             .add("late", late));
  }

  // routing.md 3.1 steps 5 and 6, traced.
  // `sharedLoad`: `load` as loadJson gave it for the reply's `rte.reply`, shared with `rte.resize`.
  static void observe(Shared& shared, int64_t push, const std::string& shard, const LoadSnapshot& load,
                      std::shared_ptr<const nlohmann::json> sharedLoad) {
    const detail::ObservationOutcome outcome = shared.core.record(shard, load);
    if (probing(shared))
      emit(shared, routing_events::kObserve,
           EventFields()
               .add("push", push)
               .add("shard", shard)
               .add("observedAt", load.observedAt)
               .add("stored", json_or_null(outcome.stored))
               .add("kept", outcome.kept)
               .add("evicted", outcome.evicted)
               .add("size", outcome.size));
    if (shared.options.sharding) return;
    const int64_t widthBefore = shared.core.width();
    const std::optional<int64_t> lastBefore = shared.core.lastResizeAt();
    shared.core.resize(load, shared.clock->now(), shared.options.softBacklogLimit);
    if (!probing(shared)) return;
    const std::optional<int64_t> lastAfter = shared.core.lastResizeAt();
    emit(shared, routing_events::kResize,
         EventFields()
             .add("push", push)
             .share("load", std::move(sharedLoad))
             .add("softBacklogLimit", shared.options.softBacklogLimit)
             .add("before", widthBefore)
             .add("after", shared.core.width())
             .add("lastResizeBefore", json_or_null(lastBefore))
             .add("lastResizeAfter", json_or_null(lastAfter)));
  }

  static Task<Result> pushImpl(std::shared_ptr<Shared> shared, std::vector<nlohmann::json> bound,
                               std::optional<int64_t> timeoutMs, Input input, std::optional<nlohmann::json> context) {
    const int64_t push = ++shared->pushes;
    Observations observed = shared->core.observations(shared->clock->now());
    emitBegin(*shared, push, timeoutMs);
    const ShardAddress address = target(*shared, push, bound, input, context, observed);

    std::optional<Result> response;
    try {
      if (timeoutMs) {
        Task<Result> racing = invokeWithTimeout(shared, push, address, input, *timeoutMs);
        response.emplace(co_await racing);
      } else {
        if (probing(*shared)) emit(*shared, routing_events::kInvokeStart, {{"push", push}, {"shard", address.shard}});
        Task<Result> call = shared->options.invoke(address, input);
        response.emplace(co_await call);
      }
    } catch (const RoutingTimeoutError& e) {  // each failure handed on as a value (engine/task.h, Rethrow)
      if (probing(*shared)) emit(*shared, routing_events::kPushFailed, {{"push", push}, {"outcome", "timeout"}, {"message", e.what()}});
      co_return Rethrow{std::current_exception()};
    } catch (const std::exception& e) {
      if (probing(*shared)) emit(*shared, routing_events::kPushFailed, {{"push", push}, {"outcome", "threw"}, {"message", e.what()}});
      co_return Rethrow{std::current_exception()};
    } catch (...) {
      if (probing(*shared)) emit(*shared, routing_events::kPushFailed, {{"push", push}, {"outcome", "threw"}, {"message", "non-standard exception"}});
      co_return Rethrow{std::current_exception()};
    }
    const std::shared_ptr<const nlohmann::json> replyLoad = loadJson(*shared, response->load);
    emitReply(*shared, push, address.shard, *response, false, replyLoad);
    observe(*shared, push, address.shard, response->load, replyLoad);
    if (probing(*shared)) emit(*shared, routing_events::kPushReturn, {{"push", push}, {"success", response->success}});
    co_return std::move(*response);
  }

  static Task<void> runInvoke(std::shared_ptr<Shared> shared, int64_t push, ShardAddress address, Input input,
                              std::shared_ptr<TimedCall> call) {
    call->startedAt = shared->clock->now();
    if (probing(*shared)) emit(*shared, routing_events::kInvokeStart, {{"push", push}, {"shard", address.shard}});
    try {
      Task<Result> invoked = shared->options.invoke(address, input);
      call->result.emplace(co_await invoked);
    } catch (...) {
      call->error = std::current_exception();
    }
    if (call->abandoned && probing(*shared)) {
      if (call->result) emitReply(*shared, push, address.shard, *call->result, true, loadJson(*shared, call->result->load));
      else emit(*shared, routing_events::kLateFailure, {{"push", push}});
    }
    call->done->set();
  }

  // Throws RoutingTimeoutError(ms) once `ms` have passed since invoke started without a reply; the
  // invoke keeps running in the background and its late reply is discarded.
  static Task<Result> invokeWithTimeout(std::shared_ptr<Shared> shared, int64_t push, ShardAddress address, Input input,
                                        int64_t timeoutMs) {
    auto call = std::make_shared<TimedCall>();
    call->done = shared->options.makeEvent();
    shared->options.background(runInvoke(shared, push, std::move(address), std::move(input), call));
    int64_t waitMs = timeoutMs;
    while (!co_await call->done->wait(waitMs)) {
      // The runner may start later than this wait: the deadline counts from invoke's start.
      const int64_t elapsed = call->startedAt ? shared->clock->now() - *call->startedAt : 0;
      if (call->startedAt && elapsed >= timeoutMs) {
        call->abandoned = true;
        co_return Rethrow{std::make_exception_ptr(RoutingTimeoutError(timeoutMs))};
      }
      waitMs = timeoutMs - elapsed;
    }
    if (call->error) co_return Rethrow{call->error};
    co_return std::move(*call->result);
  }

  std::shared_ptr<Shared> shared_;
  std::vector<nlohmann::json> bound_;  // bound contexts, oldest view first
  std::optional<int64_t> timeoutMs_;
};

}  // namespace durasim
