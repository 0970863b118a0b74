// The RTE checks (properties/routing_checks.h) on hand-written `rte.*` streams: one correct history
// of two clients (acceptance with growth, a rejection, a timeout with a late reply, a transport
// failure, a refused empty shard) passes every check; each mutation of it is caught by the check of
// its invariant. tests/routing_test.cc runs the checks on the real client's streams.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "properties/routing_checks.h"

namespace durasim::properties {
namespace {

using nlohmann::json;

json load(int64_t observedAt, int64_t pending, int64_t inFlight = 0) {
  return {{"observedAt", observedAt},
          {"windowMs", 60000},
          {"inbound", {{"inFlight", inFlight}, {"completed", 0}, {"averageProcessingMs", nullptr}}},
          {"outbound", {{"inFlight", 0}, {"completed", 2}, {"averageProcessingMs", 4.5}, {"pendingDeliveries", pending}}}};
}

json event(const std::string& name, int64_t push, int64_t now, json fields = json::object(), const std::string& client = "c1") {
  fields["ev"] = name;
  fields["push"] = push;
  fields["now"] = now;
  fields["client"] = client;
  return fields;
}

json begin(int64_t push, int64_t now, int64_t width, json lastResizeAt, json observed, json timeoutMs = nullptr, bool custom = false,
           const std::string& client = "c1") {
  return event("rte.push.begin", push, now,
               {{"width", width}, {"lastResizeAt", lastResizeAt}, {"custom", custom}, {"timeoutMs", timeoutMs}, {"softBacklogLimit", 10},
                {"observed", observed}},
               client);
}
json select(int64_t push, int64_t now, const std::string& shard, json draws) {
  return event("rte.select", push, now, {{"shard", shard}, {"hint", nullptr}, {"draws", draws}});
}
json invoke(int64_t push, int64_t now, const std::string& shard) { return event("rte.invoke.start", push, now, {{"shard", shard}}); }
json reply(int64_t push, int64_t now, const std::string& shard, bool success, json l, bool late = false) {
  return event("rte.reply", push, now, {{"shard", shard}, {"success", success}, {"value", success}, {"error", !success}, {"load", l}, {"late", late}});
}
json observe(int64_t push, int64_t now, const std::string& shard, int64_t observedAt, json stored, bool kept, int64_t size) {
  return event("rte.observe", push, now,
               {{"shard", shard}, {"observedAt", observedAt}, {"stored", stored}, {"kept", kept}, {"evicted", json::array()}, {"size", size}});
}
json resize(int64_t push, int64_t now, json l, int64_t before, int64_t after, json lastBefore, json lastAfter) {
  return event("rte.resize", push, now,
               {{"load", l}, {"softBacklogLimit", 10}, {"before", before}, {"after", after}, {"lastResizeBefore", lastBefore},
                {"lastResizeAfter", lastAfter}});
}
json returned(int64_t push, int64_t now, bool success) { return event("rte.push.return", push, now, {{"success", success}}); }
json failed(int64_t push, int64_t now, const std::string& outcome) {
  return event("rte.push.failed", push, now, {{"outcome", outcome}, {"message", outcome}});
}

// Named positions of the correct history, for the mutations.
enum Index : std::size_t {
  kInvoke1 = 2,
  kReply1 = 3,
  kObserve1 = 4,
  kResize1 = 5,
  kBegin2 = 7,
  kSelect2 = 8,
  kInvoke2 = 9,
  kReply2 = 10,
  kReturn2 = 13,
  kFailed3 = 17,
  kFailed4 = 22,
  kRefused5 = 25,
};

std::vector<json> history() {
  const json l1 = load(1000, 20), l2 = load(1500, 0);
  return {
      // push 1: unobserved shard-0, backlog above the soft limit: width 1 -> 2
      begin(1, 1000, 1, nullptr, json::object()), select(1, 1000, "shard-0", {0.3, 0.7}), invoke(1, 1000, "shard-0"),
      reply(1, 1000, "shard-0", true, l1), observe(1, 1000, "shard-0", 1000, nullptr, true, 1), resize(1, 1000, l1, 1, 2, nullptr, 1000),
      returned(1, 1000, true),
      // push 2: shard-0 observed, shard-1 not: explore shard-1; a rejection, recorded; no shrink yet
      begin(2, 1500, 2, 1000, {{"shard-0", l1}}), select(2, 1500, "shard-1", {0.1, 0.9}), invoke(2, 1500, "shard-1"),
      reply(2, 1500, "shard-1", false, l2), observe(2, 1500, "shard-1", 1500, nullptr, true, 2), resize(2, 1500, l2, 2, 2, 1000, 1000),
      returned(2, 1500, false),
      // push 3: fewer pending wins; times out 100 ms after invoke; the late reply is discarded
      begin(3, 2000, 2, 1000, {{"shard-0", l1}, {"shard-1", l2}}, 100), select(3, 2000, "shard-1", {0.0, 0.6}), invoke(3, 2000, "shard-1"),
      failed(3, 2100, "timeout"), reply(3, 2300, "shard-1", true, load(2300, 0), true),
      // push 4: same candidate twice; the transport fails
      begin(4, 2400, 2, 1000, {{"shard-0", l1}, {"shard-1", l2}}), select(4, 2400, "shard-1", {0.6, 0.6}), invoke(4, 2400, "shard-1"),
      failed(4, 2450, "threw"),
      // another client with custom sharding returning an empty shard
      begin(1, 2500, 1, nullptr, json::object(), nullptr, true, "c2"),
      event("rte.select", 1, 2500, {{"shard", ""}, {"hint", nullptr}, {"draws", nullptr}}, "c2"),
      event("rte.push.refused", 1, 2500, {{"message", "Routing requires a non-empty shard"}}, "c2"),
  };
}

sim::Tallies check(const std::vector<json>& events) {
  RoutingChecks checks;
  for (const json& e : events) checks.record(e);
  checks.finish();
  return checks.tallies();
}

uint64_t violations(const std::vector<json>& events, const std::string& id) { return check(events).by_id().at(id).violated; }

std::vector<json> mutated(const std::function<void(std::vector<json>&)>& change) {
  std::vector<json> events = history();
  change(events);
  return events;
}

TEST(RoutingChecks, CorrectHistoryPassesEveryCheck) {
  ASSERT_EQ(history()[kRefused5].at("ev"), "rte.push.refused");
  ASSERT_EQ(history()[kFailed4].at("ev"), "rte.push.failed");
  const sim::Tallies tallies = check(history());
  std::string examples;
  for (const auto& [id, tally] : tallies.by_id())
    for (const std::string& example : tally.examples) examples += id + ": " + example + "\n";
  EXPECT_EQ(tallies.violations(), 0u) << examples;
  for (const auto& [id, tally] : tallies.by_id()) EXPECT_GT(tally.checked, 0u) << id;
  EXPECT_EQ(tallies.by_id().size(), 11u);
}

TEST(RoutingChecks, PushInvokingTwiceOrNever) {
  EXPECT_GT(violations(mutated([](auto& h) { h.insert(h.begin() + kReply1, invoke(1, 1000, "shard-0")); }), "RTE-01"), 0u);
  EXPECT_GT(violations(mutated([](auto& h) { h.erase(h.begin() + kInvoke2); }), "RTE-01"), 0u);
  EXPECT_GT(violations(mutated([](auto& h) { h[kInvoke2] = invoke(2, 1500, "shard-0"); }), "RTE-01"), 0u);  // re-routed
}

TEST(RoutingChecks, RejectionReturnedChangedOrUnrecorded) {
  EXPECT_GT(violations(mutated([](auto& h) { h[kReturn2] = returned(2, 1500, true); }), "RTE-02"), 0u);
  EXPECT_GT(violations(mutated([](auto& h) { h.erase(h.begin() + kReply2 + 1, h.begin() + kReturn2); }), "RTE-02"), 0u);
}

TEST(RoutingChecks, FailedPushRecordingALoad) {
  EXPECT_GT(violations(mutated([](auto& h) { h.insert(h.begin() + kFailed4 + 1, observe(4, 2450, "shard-1", 2450, 1500, true, 2)); }), "RTE-03"), 0u);
}

TEST(RoutingChecks, ObservationsStaleOrDropped) {
  EXPECT_GT(violations(mutated([](auto& h) { h[kBegin2]["observed"]["shard-9"] = load(-70000, 0); }), "RTE-04"), 0u);
  EXPECT_GT(violations(mutated([](auto& h) { h[kBegin2]["observed"] = json::object(); }), "RTE-04"), 0u);
}

TEST(RoutingChecks, OlderLoadReplacingAFresherOne) {
  EXPECT_GT(violations(mutated([](auto& h) { h[kObserve1]["kept"] = false; }), "RTE-05"), 0u);
  // Push 2 reports an older load of shard-0 and keeps it.
  EXPECT_GT(violations(mutated([](auto& h) {
              h[kObserve1 + 7] = observe(2, 1500, "shard-0", 900, 1000, true, 1);
            }),
            "RTE-05"),
            0u);
}

TEST(RoutingChecks, WidthJumpingOrSeenDifferently) {
  EXPECT_GT(violations(mutated([](auto& h) { h[kResize1]["after"] = 3; }), "RTE-06"), 0u);
  EXPECT_GT(violations(mutated([](auto& h) { h[kBegin2]["width"] = 1; }), "RTE-06"), 0u);
}

TEST(RoutingChecks, SelectionAgainstTheRule) {
  EXPECT_GT(violations(mutated([](auto& h) {
              h[kSelect2] = select(2, 1500, "shard-0", {0.1, 0.9});  // the observed candidate instead of the unobserved one
              h[kInvoke2] = invoke(2, 1500, "shard-0");
            }),
            "RTE-07"),
            0u);
}

TEST(RoutingChecks, ImpossibleCountersAndEnvelopes) {
  EXPECT_GT(violations(mutated([](auto& h) { h[kReply1]["load"]["inbound"]["averageProcessingMs"] = 5.0; }), "RTE-08"), 0u);
  EXPECT_GT(violations(mutated([](auto& h) { h[kReply1]["load"]["outbound"]["inFlight"] = -1; }), "RTE-08"), 0u);
  EXPECT_GT(violations(mutated([](auto& h) { h[kReply1]["error"] = true; }), "RTE-09"), 0u);
  EXPECT_GT(violations(mutated([](auto& h) { h[kReply2]["value"] = true; }), "RTE-09"), 0u);
}

TEST(RoutingChecks, EmptyShardInvoked) {
  EXPECT_GT(violations(mutated([](auto& h) { h.push_back(event("rte.invoke.start", 1, 2500, {{"shard", ""}}, "c2")); }), "RTE-10"), 0u);
}

TEST(RoutingChecks, EarlyTimeoutOrLateReplyKept) {
  EXPECT_GT(violations(mutated([](auto& h) { h[kFailed3]["now"] = 2050; }), "RTE-11"), 0u);
  EXPECT_GT(violations(mutated([](auto& h) { h[kFailed3 + 1]["late"] = false; }), "RTE-11"), 0u);
}

// ---- The application's side: what it pushed, what its invoke function ran, what it got back.

json app(const std::string& name, int64_t call, int64_t t, json fields = json::object()) {
  fields["ev"] = name;
  fields["call"] = call;
  fields["t"] = t;
  return fields;
}
json appPush(int64_t call, int64_t t, bool faulty = false) { return app("app.rte.push", call, t, {{"faulty", faulty}, {"timeoutMs", 100}}); }
json appInvoke(int64_t call, int64_t t) { return app("app.rte.invoke", call, t, {{"shard", "shard-0"}}); }
json appInvoked(int64_t call, int64_t t, json success) {
  return app("app.rte.invoked", call, t, {{"threw", success.is_null()}, {"success", success}});
}
json appPushed(int64_t call, int64_t t, const std::string& outcome, json success = nullptr) {
  return app("app.rte.pushed", call, t, {{"outcome", outcome}, {"success", success}});
}

// Calls 1-5: accepted, rejected, transport failure, timeout (its late reply discarded), refused.
std::vector<json> appHistory() {
  return {appPush(1, 0), appInvoke(1, 0), appInvoked(1, 40, true), appPushed(1, 40, "reply", true),
          appPush(2, 50), appInvoke(2, 50), appInvoked(2, 60, false), appPushed(2, 60, "reply", false),
          appPush(3, 70), appInvoke(3, 70), appInvoked(3, 90, nullptr), appPushed(3, 90, "threw"),
          appPush(4, 100), appInvoke(4, 100), appPushed(4, 200, "timeout"), appInvoked(4, 250, true),
          appPush(5, 300, true), appPushed(5, 300, "refused")};
}

std::vector<json> appMutated(const std::function<void(std::vector<json>&)>& change) {
  std::vector<json> events = appHistory();
  change(events);
  return events;
}

TEST(RoutingChecks, TheApplicationsSideOfCorrectCallsPasses) {
  const sim::Tallies tallies = check(appHistory());
  EXPECT_EQ(tallies.violations(), 0u);
  for (const char* id : {"RTE-01", "RTE-02", "RTE-03", "RTE-10", "RTE-11"}) EXPECT_GT(tallies.by_id().at(id).checked, 0u) << id;
}

// Each of these histories has client events that say nothing wrong (there are none): only the
// application's record of what ran shows the fault.
TEST(RoutingChecks, AnInvokeTheClientNeverReportedIsCaught) {
  EXPECT_GT(violations(appMutated([](auto& h) { h.insert(h.begin() + 11, appInvoke(3, 91)); }), "RTE-01"), 0u);
  EXPECT_GT(violations(appMutated([](auto& h) { h.push_back(appInvoke(1, 500)); }), "RTE-01"), 0u);
}

TEST(RoutingChecks, AReplyUnlikeWhatTheInvokeReturnedIsCaught) {
  EXPECT_GT(violations(appMutated([](auto& h) { h[7] = appPushed(2, 60, "reply", true); }), "RTE-02"), 0u);
  EXPECT_GT(violations(appMutated([](auto& h) { h[11] = appPushed(3, 90, "reply", true); }), "RTE-03"), 0u);
}

TEST(RoutingChecks, AFaultyShardingThatInvokesOrIsNotRefusedIsCaught) {
  EXPECT_GT(violations(appMutated([](auto& h) { h[17] = appPushed(5, 300, "threw"); }), "RTE-10"), 0u);
  EXPECT_GT(violations(appMutated([](auto& h) { h.insert(h.begin() + 17, appInvoke(5, 300)); }), "RTE-10"), 0u);
}

TEST(RoutingChecks, ATimeoutBeforeItsDeadlineOrALateReplyDeliveredIsCaught) {
  EXPECT_GT(violations(appMutated([](auto& h) { h[14] = appPushed(4, 199, "timeout"); }), "RTE-11"), 0u);
  EXPECT_GT(violations(appMutated([](auto& h) {
              h[14] = appInvoked(4, 150, true);
              h[15] = appPushed(4, 150, "timeout");
            }),
            "RTE-11"),
            0u);
  EXPECT_GT(violations(appMutated([](auto& h) {
              h[2] = appInvoked(1, 101, true);
              h[3] = appPushed(1, 101, "reply", true);
            }),
            "RTE-11"),
            0u);
}

// ---- An application's own RoutingLoad samples (RTE-08).

json sample(const std::string& name, int64_t now, json fields = json::object(), int64_t incarnation = 1) {
  fields["ev"] = name;
  fields["now"] = now;
  fields["object"] = "P/p0";
  fields["incarnation"] = incarnation;
  return fields;
}
json loadRead(int64_t now, int64_t inFlight, int64_t completed, json average, int64_t incarnation = 1) {
  return sample("app.load.read", now, {{"inFlight", inFlight}, {"completed", completed}, {"averageProcessingMs", average}}, incarnation);
}

// Sample 1 runs 0..500 (finished twice), sample 2 runs 59'600..59'800; reads at 1 s, 59.7 s, 60.2 s
// (sample 1's bucket, second 0, has left the window) and in a new incarnation.
std::vector<json> windowHistory() {
  return {sample("app.load.begin", 0, {{"sample", 1}}),       loadRead(100, 1, 0, nullptr),
          sample("app.load.finish", 500, {{"sample", 1}}),    sample("app.load.finish", 500, {{"sample", 1}}),
          loadRead(1000, 0, 1, 500.0),                        sample("app.load.begin", 59'600, {{"sample", 2}}),
          loadRead(59'700, 1, 1, 500.0),                      sample("app.load.finish", 59'800, {{"sample", 2}}),
          loadRead(60'200, 0, 1, 200.0),                      loadRead(60'300, 0, 0, nullptr, 2)};
}

TEST(RoutingChecks, ReadsOfAnApplicationsOwnLoadFollowTheWindow) {
  const sim::Tallies tallies = check(windowHistory());
  EXPECT_EQ(tallies.violations(), 0u);
  EXPECT_EQ(tallies.by_id().at("RTE-08").checked, 5u);
}

TEST(RoutingChecks, ADoubleFinishCountedOrAnOldBucketKeptIsCaught) {
  std::vector<json> counted = windowHistory();
  counted[4] = loadRead(1000, 0, 2, 500.0);
  EXPECT_GT(violations(counted, "RTE-08"), 0u);
  std::vector<json> kept = windowHistory();
  kept[8] = loadRead(60'200, 0, 2, 350.0);
  EXPECT_GT(violations(kept, "RTE-08"), 0u);
  std::vector<json> survived = windowHistory();
  survived[9] = loadRead(60'300, 0, 1, 200.0, 2);
  EXPECT_GT(violations(survived, "RTE-08"), 0u);
}

TEST(RoutingChecks, AMalformedEventIsAViolationOfTheCheckItFeeds) {
  RoutingChecks checks;
  EXPECT_NO_THROW(checks.record(json{{"ev", "rte.push.begin"}, {"push", 1}}));
  const sim::InvariantTally& tally = checks.tallies().by_id().at("RTE-01");
  ASSERT_EQ(tally.violated, 1u);
  EXPECT_NE(tally.examples.front().find("malformed 'rte.push.begin' event"), std::string::npos);
}

}  // namespace
}  // namespace durasim::properties
