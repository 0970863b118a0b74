// EVT invariants (invariants-events-runtime.md) over a run of objects hosting the durable event bus.
// It follows the bus's probes (engine/event_bus_events.h; each "*.write" counts once the
// transaction it was emitted in commits), the runtime's commit, confirmation and reset events, the
// bus's log lines, and what the application reports ("app.evt.handle": a handler's call about to
// end; "app.evt.emitted": an emit that returned). Stored state is read through the live store view:
// the topic logs, pending and dead-letter indexes in work_log, the markers and records in work_kv,
// keys computed with the spec's escaping (events.md 4).
//   [S] at every commit holding bus writes: EVT-01 (the stored record of each first emit), EVT-07 and
//       EVT-09 (ack markers: exactly the won inserts, none without one), EVT-15 (the events a cursor
//       passed, and those whose status changed, accounted for), EVT-16 (the stored cursor monotone,
//       below the issued sequence), EVT-21, EVT-23 (the stored attempt record), EVT-28, EVT-32 (the
//       stored dead record); after every durability decision and at the end, over the whole store:
//       EVT-02, EVT-15, EVT-21, EVT-28, the ack count, and every attempt and dead record against the
//       reported writes (EVT-19, EVT-32); EVT-14 and EVT-41 at each completed pass; EVT-42 at each
//       listing; EVT-01, EVT-05, EVT-06, EVT-25, EVT-30 and EVT-36 at the end
//   [H] EVT-03 (depth), EVT-04 and EVT-44 (what handlers received), EVT-08 (an ack write follows a
//       successful call of its pass), EVT-07 (a pass returns its won inserts), EVT-11 (healthy passes
//       after heal), EVT-12 (the decision on every examined event, each due event called once),
//       EVT-13, EVT-20, EVT-22 (nothing called while acked, quarantined or before nextAt), EVT-17
//       (pass cost, passes with nothing concurrent), EVT-18, EVT-19, EVT-31, EVT-33 (each failure's
//       outcome and records), EVT-24 (delay warnings), EVT-26, EVT-27, EVT-29, EVT-30 (releases),
//       EVT-34 (time zero), EVT-38 (the poll loop), EVT-43 (log lines)
//   [L] at "phase: check": EVT-10 and EVT-35 (every event acked, or quarantined, by every consumer)
// Consumer options come from the application's "workload.config" event (one naming the class, or
// naming none: config_of_class; else from "evt.options").
// What a replaced incarnation still runs is not followed (its storage calls throw; RT-08's).
// Not judged here: EVT-37, EVT-39, EVT-40 (model tests of the store and legacy records).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/events_keys.h"
#include "properties/durable_state.h"
#include "properties/event_bus_store.h"
#include "properties/object_checker.h"
#include "properties/store_reader.h"

namespace durasim::properties {

class EventBusChecks final : public ObjectChecker {
 public:
  EventBusChecks(StoreReader reader, std::string className);
  // The faults healed at trace time `t`.
  void healed(int64_t t);
  // End-of-run checks over every object of the class (liveness after heal).
  void finish();

 private:
  using Consumer = std::pair<std::string, std::string>;                   // (topic, consumer)
  using ConsumerView = std::pair<std::string_view, std::string_view>;     // a Consumer found without copying its names
  // Consumers in (topic, consumer) order, found by a Consumer or a ConsumerView.
  struct ConsumerLess {
    using is_transparent = void;
    template <class A, class B>
    bool operator()(const A& a, const B& b) const {
      return ConsumerView(a.first, a.second) < ConsumerView(b.first, b.second);
    }
  };
  using Event = std::pair<std::string, std::string>;                      // (topic, id)
  using Slot = std::tuple<std::string, std::string, std::string>;         // (topic, consumer, id)

  // One bus write as its probe reported it.
  struct Edit {
    enum class Kind { record, ack, attempts, dead, cursor };
    Kind kind = Kind::record;
    std::string topic, consumer, id;
    nlohmann::json value;  // record: payload text; ack: true (false: gone); attempts, dead: the record
    int64_t seq = 0;       // record: its seq; cursor: the position
    bool release = false;  // a dead record written by a release
  };
  // What the committed writes leave.
  struct Facts {
    std::map<Event, std::pair<int64_t, std::string>> log;  // -> (seq, payload)
    std::map<std::string, std::map<int64_t, std::string>> bySeq;  // topic -> seq -> id
    std::set<Slot, std::less<>> acks;  // transparent: found by a tuple of references too
    std::map<Slot, nlohmann::json, std::less<>> attempts, dead;
    std::map<Slot, int64_t> releases;  // release writes
    std::map<Consumer, int64_t> cursor;
    void apply(const Edit& e);
  };
  struct ConsumerConfig {
    double maxAttempts = 8;
    std::string retry = "default";  // default | fixed | linear | invalid | function (unknown)
    int64_t retryMs = 0;
    int64_t pollMs = 200, maxPollMs = 6'400;
    bool backoff = true;
  };
  struct Invoke {
    std::string id;
    std::string stamp;
    int64_t at = 0;
    bool handled = false, handledOk = false;
  };
  struct Pass {
    Consumer consumer;
    int64_t begin = 0, offset = 0;  // trace time; the incarnation's clock minus trace time
    bool concurrent = false;        // another bus operation of the object ran during it
    bool shared = false;            // another pass of its consumer ran during it
    bool released = false;          // a release of its consumer ran during it
    bool failure = false;           // a handler call of it failed
    bool afterHeal = false;
    int64_t pendingAtBegin = 0, newRecords = 0, maxSeqAtBegin = 0, won = 0;
    std::set<std::string> healthyDue;  // EVT-11: what it must deliver
    std::set<std::string> seen;        // examined in its pending phase
    std::set<std::string> waiting;     // ... and found waiting there
    std::map<std::string, int> invoked, acked;
    std::optional<std::string> due;  // examined as due, not yet invoked
    std::map<std::string, Invoke> invokes;
  };
  struct Loop {
    int64_t gap = 0, anchor = 0;  // the sleep before its next tick, from `anchor`
    bool ticking = false, stopped = false, progressed = false;
    std::optional<int64_t> pass;
  };
  // The poll loops of one consumer (events.md 7).
  struct Polling {
    std::map<int64_t, Loop> loops;  // by generation
    int64_t interval = 0;           // the consumer's poll interval
    std::optional<int64_t> tickOf;  // a tick begun, its pass not yet: its generation
  };
  struct Bus {
    DurableState<Facts, Edit> state;
    int64_t incarnation = 0;
    bool ended = false;  // `incarnation` ended: what it still runs is an object.zombie's, not followed
    int64_t offset = 0;
    std::map<int64_t, Pass> passes;                // pass -> state, live incarnation
    // This incarnation's handler calls not yet reported by the application, the successes it
    // reported, and the ack writes issued (EVT-04, EVT-08).
    std::map<Slot, int64_t> inFlight, successes, ackWrites;
    std::optional<Edit> quarantine;                 // written in the failure unit probed next
    std::map<Consumer, Polling, ConsumerLess> polling;
    std::set<Consumer> overlapped;                 // two passes of the consumer ran at once
    std::map<Consumer, ConsumerConfig, ConsumerLess> options;  // from evt.options
    std::set<Event> returned;                       // emits that returned (EVT-02)
    std::set<std::string> strayAcks;                // stored ack markers no write reported (reported once)
    std::set<Slot> failedCalls;                     // EVT-33
    std::map<Slot, int64_t> streak;                 // handler calls since the last release (EVT-18)
    std::set<Slot> streakUnsure;                    // a reset or a second poller during the streak
    std::map<Slot, int64_t> awaitingRelease;        // released, not called yet (EVT-26)
    std::map<Slot, int64_t> releasedCalls;          // evt.release "released" (EVT-30)
    std::optional<std::string> expectedLog;         // EVT-43: the log line the last write owes
    std::string lastLog;                            // the last event was this log line ("" otherwise)
    std::string delayWarning;                       // a retry-delay warning since the last failure
    bool handlerFailed = false, warned = false;
    bool faulted = false;  // a fault was injected into the object (its warnings are excused, EVT-36)
    bool unsure = false;  // a failed statement may have undone reported writes
  };

  void observe(EventType ev, const EventFields& e) override;
  std::string invariant_for(EventType ev) const override;
  void onConfig(const EventFields& e);
  const ConsumerConfig& config(const Bus& bus, const ConsumerView& c) const;
  int64_t delayFor(const ConsumerConfig& c, int64_t n) const;
  Bus& bus(const std::string& label, int64_t incarnation);

  // event_bus_checks.cc: stored state
  void onCommit(const std::string& label, Bus& bus, const EventFields& e, bool unchanged);
  void onDurability(const std::string& label, Bus& bus, int64_t kept);
  void checkStored(const std::string& label, Bus& bus, const std::vector<Edit>& edits);
  void checkAcks(const std::string& label, Bus& bus);
  void checkSlot(const std::string& label, const Facts& facts, const Slot& slot, bool deadWritten);
  void checkAccounted(const std::string& label, const Facts& facts, const Slot& slot, const char* id);
  void checkWhole(const std::string& label, Bus& bus);
  void checkKeys(const std::string& label, const Facts& facts);
  std::optional<nlohmann::json> kv(const std::string& label, const std::string& key) const;
  std::optional<std::pair<int64_t, std::string>> logEntry(const std::string& label, const std::string& ns, const std::string& id) const;
  std::map<std::string, int64_t> entries(const std::string& label, const std::string& ns) const;
  std::set<std::string> keysUnder(const std::string& label, const std::string& prefix) const;
  std::map<std::string, nlohmann::json> valuesUnder(const std::string& label, const std::string& prefix) const;
  std::vector<Consumer> consumersOf(const std::string& label) const;
  const StoredBus& stored(const std::string& label) const;  // refreshed once per event checked
  // The escaped keys of (topic, consumer), built once per pair: the checks ask at every pass.
  const events::Keys& keysOf(std::string_view topic, std::string_view consumer) const;

  // event_bus_history.cc: what happened
  void onProbe(EventType ev, const std::string& label, Bus& bus, const EventFields& e);
  void onEmit(const std::string& label, Bus& bus, const EventFields& e);
  void onEmitRefused(const std::string& label, const EventFields& e);
  void onEmitted(const std::string& label, Bus& bus, const EventFields& e);
  void onRejected(const std::string& label, const EventFields& e);
  void onPollBegin(const std::string& label, Bus& bus, const EventFields& e);
  void onExamine(const std::string& label, Bus& bus, const EventFields& e);
  void onInvoke(const std::string& label, Bus& bus, const EventFields& e);
  void onHandle(const std::string& label, Bus& bus, const EventFields& e);
  void onHandled(Bus& bus, const EventFields& e);
  void onOptions(Bus& bus, const EventFields& e);
  void onAck(const std::string& label, Bus& bus, const EventFields& e);
  void onFailure(const std::string& label, Bus& bus, const EventFields& e);
  void onQuarantine(const std::string& label, Bus& bus, const EventFields& e);
  void onCursor(const std::string& label, Bus& bus, const EventFields& e);
  void onPollEnd(const std::string& label, Bus& bus, const EventFields& e);
  void onReleaseWrite(const std::string& label, Bus& bus, const EventFields& e);
  void onRelease(const std::string& label, Bus& bus, const EventFields& e);
  void onList(const std::string& label, const EventFields& e);
  void onLoop(EventType ev, const std::string& label, Bus& bus, const EventFields& e);
  void onLog(const std::string& label, Bus& bus, const EventFields& e);
  void markConcurrent(Bus& bus, std::optional<int64_t> pass, const Consumer* releaseOf);

  StoreReader reader_;
  std::map<Consumer, ConsumerConfig, ConsumerLess> configs_;
  std::vector<std::string> buses_;
  std::optional<int64_t> healedAt_;
  std::map<std::string, Bus> objects_;
  // Each object's stored tables and the event they were last refreshed for: a cache of what the
  // store holds, kept current before any read (the reads are of the live store at the event).
  mutable std::map<std::string, std::pair<StoredBus, uint64_t>> stored_;
  uint64_t checked_ = 0;  // events checked so far (the end of the run counts as one)
  mutable std::map<std::string, std::map<std::string, events::Keys, std::less<>>, std::less<>> keys_;  // topic -> consumer -> keys
};

}  // namespace durasim::properties
