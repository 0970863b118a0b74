// The durable event bus (events.md): `emit` appends to a topic's log, idempotent by event id, with
// an optional depth bound checked in the same unit as the append; every consumer (topic, name)
// delivers every event through its own ack markers, written only after its handler returned, with
// spaced, bounded retries, quarantine (dead letters) per consumer, and releases that hand a
// quarantined event back with a fresh budget. A consumer's pending index holds the events it still
// owes below its scan frontier, so a poll never rescans the log (events.md 6.3, 11).
// Keeps EVT-01/03 (emit), EVT-04/05/06 (escaped keys), EVT-07/08/09 (ack once, after success),
// EVT-12/14/15/16/17 (passes, frontier, bookmark, cost), EVT-18..24 (attempts and delays),
// EVT-25 (bad arguments), EVT-26..32 (release), EVT-33 (no phantom dead letter), EVT-38 (loop),
// EVT-41/42 (indexes, listing), EVT-43 (logging). Variants: engine/variants.h, "The event bus".
#pragma once

#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/events_keys.h"
#include "engine/events_store.h"
#include "engine/runtime.h"

namespace durasim::events {

inline constexpr int kReleaseCasTries = 5;            // retryDeadEvent CAS loop bound (events.md 9.2)
inline constexpr int64_t kDefaultPollMs = 200;        // events.md 7
inline constexpr int64_t kBackoffCapFactor = 32;      // maxPollMs default = pollMs * 32
inline constexpr double kDefaultMaxAttempts = 8;      // events.md 6.1
inline constexpr int64_t kRetryBaseMs = 60'000;       // default schedule: 60 s ...
inline constexpr int64_t kRetryCapMs = 3'600'000;     // ... doubling to a 1 h cap (events.md 8.2)

// The research variants of events.md 12-13 (engine/variants.h), read once from a flag set.
struct EventsVariants {
  bool orderByTimestamp = false, timestampTruthiness = false, releaseTwoStep = false, unvalidatedMaxAttempts = false,
       depthCheckNonatomic = false, fullRescan = false, failureTwoStep = false, plainPutOnAbsent = false, listDeadFullScan = false,
       pollLoopDoubleChain = false, unvalidatedOptions = false, unescapedKeys = false;
  static EventsVariants from(const std::set<std::string>& flags);
  nlohmann::json names() const;  // the flags that are on
};

// What the bus may use of its object (events.md 5, "EventsContext"): the store, time, randomness,
// logging, background work, buggify sites, variant flags, one-shot events (handler timeouts) and
// probes. Built per incarnation; must outlive every consumer and call made with it.
class EventsContext {
 public:
  EventsContext(WorkStore& work, Clock& clock, Random& random, Logger& logger, std::function<void(Task<void>)> waitUntil,
                std::function<bool(std::string_view site)> buggify, const std::set<std::string>& variants,
                std::function<std::shared_ptr<AsyncEvent>()> makeEvent,
                std::function<void(std::string_view, EventFields)> probe = {});
  // Everything from the object's context, `work` being the store the bus keeps its records in.
  static EventsContext of(ObjectContext& ctx, WorkStore& work);
  EventsContext(const EventsContext&) = delete;
  EventsContext& operator=(const EventsContext&) = delete;

  WorkStore& work;
  Clock& clock;
  Random& random;
  Logger& logger;
  std::function<void(Task<void>)> waitUntil;  // hosts the poll loop (events.md 7)
  std::function<bool(std::string_view site)> buggify;
  const std::set<std::string>& variants;
  std::function<std::shared_ptr<AsyncEvent>()> makeEvent;
  std::function<void(std::string_view, EventFields)> probeSink;
  const EventsVariants flags;

  // Buggify site `site` fired (always false without a hook).
  bool fires(std::string_view site) const { return buggify && buggify(site); }
  void probe(std::string_view event, EventFields fields) const {
    if (probeSink) probeSink(event, std::move(fields));
  }
  int64_t nextPass() { return ++passes_; }
  Keys keys(std::string_view topic, std::string_view consumer = {}) const { return Keys(topic, consumer, !flags.unescapedKeys); }

 private:
  int64_t passes_ = 0;
};

// ---------------------------------------------------------------------------------------------
// emit (events.md 5)

struct EmitOptions {
  std::optional<std::string> id;       // default: random.uuid()
  std::optional<int64_t> maxDepth;     // refuse a new id once the topic holds this many records
};

// The topic is full: `topic depth limit exceeded (<depth> >= <maxDepth>) for topic "<topic>"`.
class EventDepthExceededError : public DurabilityError {
 public:
  EventDepthExceededError(std::string topic, int64_t depth, int64_t maxDepth);
  std::string name() const override { return "EventDepthExceededError"; }
  std::string topic;
  int64_t depth = 0, maxDepth = 0;
};

// Validates (TypeError / RangeError, nothing written), appends in one atomically block (an id
// already stored returns it and discards the payload, even when the topic is full), then waits for
// durability. Returns the event id. A commit failure propagates; retry with an explicit id.
Task<std::string> emit(EventsContext& ctx, std::string topic, nlohmann::json payload, EmitOptions opts = {});
// The same validation and append inside a unit the caller holds (WorkStore::atomically, or
// SqliteWorkStore::within the application's transaction); durability follows the caller's.
std::string emitIn(EventsContext& ctx, WorkTxn& txn, std::string_view topic, const nlohmann::json& payload, EmitOptions opts = {});

// ---------------------------------------------------------------------------------------------
// Consumers (events.md 6-8)

struct EventMeta {
  std::string id, topic;  // unescaped
};
// Returning normally is success; throwing anything is failure. The payload is a private copy valid
// until the returned task completes.
using EventHandler = std::function<Task<void>(const nlohmann::json& payload, const EventMeta& meta)>;
using RetryDelayFn = std::function<double(int64_t attempt)>;  // attempt is 1-based

struct ConsumerOptions {
  std::string name;                                                // required
  int64_t pollMs = kDefaultPollMs;
  bool backoff = true;
  std::optional<int64_t> maxPollMs;                                // default pollMs * 32
  double maxAttempts = kDefaultMaxAttempts;                        // positive integer or +Infinity
  std::variant<std::monostate, double, RetryDelayFn> retryDelayMs; // monostate: the default schedule
  std::optional<int64_t> handlerTimeoutMs;                         // absent: none
};

class Consumer : public std::enable_shared_from_this<Consumer> {
 public:
  // One pass (events.md 6.4); returns the number of ack markers this pass created. A store error
  // propagates (nothing half-written remains).
  Task<int64_t> poll();
  // The background poll loop (events.md 7) on ctx.waitUntil; it dies with the incarnation.
  void start();
  void stop();
  bool running() const { return running_; }
  const std::string& topic() const { return topic_; }
  const std::string& name() const { return options_.name; }
  int64_t maxPollMs() const { return maxPollMs_; }

  struct Private {};  // only createConsumer builds consumers
  Consumer(const Private&, EventsContext& ctx, std::string topic, EventHandler handler, ConsumerOptions options);

 private:
  struct Pass;
  enum class Outcome {
    delivered, ackLost, releasedDuringAttempt, alreadyDelivered, attemptRaced, quarantineRaced, quarantined, retrying
  };

  static Task<int64_t> pollOf(std::shared_ptr<Consumer> self);
  static Task<void> loop(std::shared_ptr<Consumer> self, int64_t generation);
  Task<int64_t> runPass(Pass& pass);
  Task<void> phasePending(Pass& pass);
  Task<void> phaseLog(Pass& pass);
  Task<int64_t> referencePass(Pass& pass);  // events.full_rescan_when_frozen (events.md 13)
  Task<Outcome> invoke(Pass& pass, LogRecord record, std::optional<nlohmann::json> dead0, std::optional<nlohmann::json> attRaw,
                       Attempts att, bool fromIndex);
  Task<std::optional<std::string>> callHandler(Pass& pass, const LogRecord& record, bool& timedOut);
  Task<Outcome> recordFailure(Pass& pass, const LogRecord& record, const std::optional<nlohmann::json>& dead0,
                              const std::optional<nlohmann::json>& attRaw, const Attempts& att, const std::string& error);
  Task<Outcome> recordFailureTwoStep(Pass& pass, const LogRecord& record, const std::optional<nlohmann::json>& dead0,
                                     const std::optional<nlohmann::json>& attRaw, const Attempts& att, const std::string& error);
  void logFailure(Outcome outcome, const std::string& id, int64_t n, int64_t delay, const std::string& error) const;
  int64_t delayFor(int64_t n, const std::string& id) const;
  int64_t readCursor(WorkTxn& txn) const;
  void advanceCursor(Pass& pass, int64_t to);
  void erasePending(Pass& pass, const LogRecord& record, const char* reason, bool onlyIfQuarantined);
  Task<void> yieldAt(std::string_view site);
  nlohmann::json fields(const std::string& id) const;  // topic, consumer, eventId

  EventsContext& ctx_;
  const std::string topic_;
  const EventHandler handler_;
  const ConsumerOptions options_;
  const Keys keys_;
  int64_t maxPollMs_ = 0;
  bool running_ = false, ticking_ = false;
  int64_t generation_ = 0, interval_ = 0;
};

// Validates (events.md 6.1: TypeError / RangeError, nothing written) and builds a consumer.
std::shared_ptr<Consumer> createConsumer(EventsContext& ctx, std::string topic, EventHandler handler, ConsumerOptions opts);

// The wait before attempt n + 1 of the default schedule: min(60,000 * 2^(n-1), 3,600,000).
int64_t defaultRetryDelayMs(int64_t n);

// ---------------------------------------------------------------------------------------------
// Dead letters and release (events.md 9)

enum class DeadStatus { quarantined, released, delivered };
std::string_view toString(DeadStatus status);

struct DeadEvent {
  std::string id, topic, consumer;  // unescaped
  nlohmann::json payload;           // from the topic log
  DeadStatus status = DeadStatus::quarantined;
  std::string error;
  int64_t attempts = 0;
  int64_t at = 0;
  std::optional<int64_t> releasedAt;
  int64_t releases = 0;
};
// Every event with a dead record for (topic, consumer) still in the log, in log order.
Task<std::vector<DeadEvent>> listDeadEvents(EventsContext& ctx, std::string topic, std::string consumer);

enum class ReleaseOutcome { released, notQuarantined, alreadyDelivered, contended };
std::string_view toString(ReleaseOutcome outcome);
// Hands a quarantined (or released) event back to one consumer with a fresh budget, due now; at
// most kReleaseCasTries compare-and-swap tries; every outcome but `released` changes nothing.
Task<ReleaseOutcome> releaseDeadEvent(EventsContext& ctx, std::string topic, std::string consumer, std::string eventId);
Task<bool> retryDeadEvent(EventsContext& ctx, std::string topic, std::string consumer, std::string eventId);

}  // namespace durasim::events
