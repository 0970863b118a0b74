// RTE invariants (invariants-engine.md) over the routing clients of a run. It observes the clients'
// `rte.*` events (docs/log-trace-events.md), which a client emits through RoutingClientOptions::probe
// and its host forwards to the trace, adding a `client` field naming the client (absent = one client).
// Every event carries the client's `now`. Per client it keeps its own model of the observation map
// and of the width (model/routing_model.h) and compares each decision of the client with it.
//   [S] on client state at each push: RTE-04 (the observations a push saw: at most 1024, none older
//       than the window, equal to the model's), RTE-06 (the width and lastResizeAt the push saw)
//   [H] RTE-01 (one invoke per push, to the selected shard), RTE-02 (a rejection is returned as it
//       came and its load recorded), RTE-03 (a failed or timed-out push records nothing), RTE-05 (a
//       stored load is replaced only by one at least as fresh), RTE-06 (each resize equals the model's),
//       RTE-07 (each default selection equals the model's, from the recorded draws), RTE-08 (the
//       counters of each reply's LoadSnapshot), RTE-09 (envelope shape), RTE-10 (an empty shard is
//       refused before any invoke), RTE-11 (a timeout no earlier than timeoutMs after invoke started,
//       the late reply discarded)
//   at the end: RTE-01 (every push that was not refused invoked exactly once)
// The application's side of each call (`app.rte.*`, emitted by the workload: what it asked, what its
// invoke function really ran and returned, what the push gave it) is judged without the client's
// word: RTE-01 (its invoke function ran once, never again later), RTE-02 (a rejection reaches the
// caller as the invoke returned it), RTE-03 (an invoke that threw never becomes a reply), RTE-10 (a
// sharding function naming no shard gets RoutingError and no invoke), RTE-11 (a timeout only after
// timeoutMs without a reply; a reply later than timeoutMs never reaches the caller).
// RTE-08's window and idempotent finish are judged on an application's own RoutingLoad samples
// (`app.load.*`, workloads/outbound_samples.h): each snapshot it read must equal the spec's window
// (model::LoadWindowModel) over the samples it began and finished in that incarnation.
// RTE-09's "pendingDeliveries equals the durable count" is checked on the server side (LOG-13 in
// log_checks.h).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "model/routing_model.h"
#include "properties/event_type.h"
#include "sim/tally.h"
#include "sim/trace_sink.h"

namespace durasim::properties {

class RoutingChecks final : public sim::TraceSink {
 public:
  RoutingChecks();

  // A malformed event (a field missing or of the wrong type) is a violation of the check it feeds.
  using sim::TraceSink::record;
  void record(const sim::TraceEvent& event) override;
  // End-of-run checks (after heal, nothing in flight).
  void finish();
  const sim::Tallies& tallies() const { return tallies_; }

 private:
  static const char* invariantFor(EventType ev);
  struct Push {
    bool custom = false;
    std::optional<int64_t> timeoutMs;
    std::map<std::string, model::ShardLoad> observed;
    int64_t width = 1;
    std::optional<std::string> shard;        // selected
    bool refused = false;
    int64_t invokes = 0;
    std::optional<int64_t> invokeStartedAt;
    std::optional<std::string> failed;       // "threw" | "timeout"
    std::optional<EventFields> reply;        // the on-time reply event
    bool observedReply = false;              // its load was recorded
    bool returned = false;
  };
  struct Client {
    std::map<std::string, int64_t> stored;   // shard -> observedAt the client holds
    model::WidthState width;
    std::map<int64_t, Push> pushes;
  };

  Push* push(Client& client, const EventFields& e, const char* id);
  void onBegin(Client& client, const EventFields& e);
  void onSelect(Client& client, const EventFields& e);
  void onRefused(Client& client, const EventFields& e);
  void onInvoke(Client& client, const EventFields& e);
  void onReply(Client& client, const EventFields& e);
  void onFailed(Client& client, const EventFields& e);
  void onObserve(Client& client, const EventFields& e);
  void onResize(Client& client, const EventFields& e);
  void onReturn(Client& client, const EventFields& e);
  void checkLoadShape(const std::string& where, const nlohmann::json& load);

  // One application-side call (`app.rte.*`), times on the caller's clock (the trace's "t").
  struct AppCall {
    bool faulty = false;
    std::optional<int64_t> timeoutMs;
    int64_t invokes = 0;
    std::optional<int64_t> invokedAt;       // the invoke function started
    std::optional<int64_t> returnedAt;      // ... and returned or threw
    bool threw = false;
    nlohmann::json success;                 // what it returned: true, false, or null when it threw
    bool pushed = false;                    // the push has given the caller its outcome
  };
  void onApp(EventType name, const EventFields& e);
  void onAppPushed(AppCall& call, const EventFields& e);
  void onAppLoad(EventType name, const EventFields& e);

  sim::Tallies tallies_;
  std::map<std::string, Client> clients_;
  std::map<int64_t, AppCall> calls_;
  std::map<std::pair<std::string, int64_t>, model::LoadWindowModel> windows_;  // (object, incarnation)
};

}  // namespace durasim::properties
