// The runtime history checks (properties/runtime_checks.h) on hand-written event sequences: for each
// invariant one sequence that passes and at least one that violates it, so every check is shown to
// be able to fail; and a few runtime-workload seeds that check every one of them without violation.
#include <gtest/gtest.h>

#include <initializer_list>
#include <string>

#include "cli/seed_run.h"
#include "engine/runtime_events.h"
#include "properties/runtime_checks.h"
#include "tests/tally_result.h"

namespace durasim::properties {
namespace {

using nlohmann::json;

constexpr const char* kObj = "Counter/c0";

using Result = test::TallyResult;

// Feeds `events` to a fresh checker and returns the tally of `id`.
Result run(const std::string& id, std::initializer_list<json> events) {
  RuntimeChecks checks;
  for (const json& event : events) checks.record(event);
  sim::Tallies tallies;
  checks.report(tallies);
  return test::tally_of(tallies, id);
}

#define EXPECT_PASSES(result)            \
  do {                                   \
    const Result r_ = (result);          \
    EXPECT_GT(r_.checked, 0u);           \
    EXPECT_EQ(r_.violated, 0u) << r_.first; \
  } while (0)

#define EXPECT_VIOLATES(result, text)                                              \
  do {                                                                             \
    const Result r_ = (result);                                                    \
    EXPECT_GT(r_.violated, 0u);                                                    \
    EXPECT_NE(r_.first.find(text), std::string::npos) << "message: " << r_.first; \
  } while (0)

// Event builders: the schemas the runtime emits.
json start(int64_t t, int64_t inc, const char* obj = kObj) {
  return {{"ev", "incarnation.start"}, {"t", t}, {"object", obj}, {"incarnation", inc}};
}
json end(int64_t t, int64_t inc, const char* obj = kObj) {
  return {{"ev", "incarnation.end"}, {"t", t}, {"object", obj}, {"incarnation", inc}, {"reset", true}, {"cause", "x"}};
}
// `alarm`: the stored alarm once the commit applies (null: none).
json commit(int64_t t, int64_t inc, uint64_t k, json alarm = nullptr) {
  return {{"ev", "commit"}, {"t", t}, {"object", kObj}, {"incarnation", inc}, {"commit", k}, {"changes", "00"}, {"alarm", alarm}};
}
json confirm(int64_t t, int64_t inc, uint64_t k) {
  return {{"ev", "confirm"}, {"t", t}, {"object", kObj}, {"incarnation", inc}, {"commit", k}};
}
json durability(int64_t t, int64_t inc, int64_t kept, int64_t unconfirmed) {
  return {{"ev", "durability"}, {"t", t}, {"object", kObj}, {"incarnation", inc}, {"kept", kept}, {"unconfirmed", unconfirmed}};
}
json effect(int64_t t, int64_t inc, uint64_t produced, uint64_t required, uint64_t confirmed, bool dropped = false) {
  return {{"ev", dropped ? "effect.dropped" : "effect"}, {"t", t}, {"object", kObj}, {"incarnation", inc}, {"kind", "reply"},
          {"produced", produced}, {"required", required}, {"confirmed", confirmed}};
}
json alarm_run(int64_t t, int64_t inc, int64_t scheduled, int64_t retry_count = 0) {
  return {{"ev", "alarm.run"}, {"t", t}, {"object", kObj}, {"incarnation", inc}, {"scheduled", scheduled}, {"retryCount", retry_count}};
}
json alarm_success(int64_t t, int64_t scheduled) {
  return {{"ev", "alarm.success"}, {"t", t}, {"object", kObj}, {"scheduled", scheduled}};
}
json alarm_failure(int64_t t, int64_t scheduled, bool counted, int64_t retry_count, int64_t delay, int64_t jitter, int64_t next) {
  return {{"ev", "alarm.failure"}, {"t", t},         {"object", kObj},         {"scheduled", scheduled}, {"counted", counted},
          {"retryCount", retry_count}, {"delay", delay}, {"jitter", jitter}, {"next", next}};
}
json alarm_abandoned(int64_t t, int64_t scheduled, int64_t retry_count) {
  return {{"ev", "alarm.failure"}, {"t", t}, {"object", kObj}, {"scheduled", scheduled}, {"counted", true},
          {"retryCount", retry_count}, {"abandoned", true}};
}
json fault(int64_t t, const char* id, const char* obj = kObj, int64_t inc = 1, json details = json::object()) {
  return {{"ev", "fault"}, {"t", t}, {"fault", id}, {"object", obj}, {"incarnation", inc}, {"point", "p"}, {"details", details}};
}
json early_fault(int64_t t, int64_t scheduled) { return fault(t, "alarm.early", kObj, 1, {{"early", scheduled - t}, {"scheduled", scheduled}}); }
json check_phase(int64_t t, bool idle) { return {{"ev", "phase"}, {"t", t}, {"phase", "check"}, {"drained", false}, {"idle", idle}}; }
json rpc_call(int64_t t, uint64_t call, uint64_t stub) {
  return {{"ev", "rpc.call"}, {"t", t}, {"call", call}, {"stub", stub}, {"from", "client"}, {"to", kObj}, {"method", "add"}};
}
json rpc_deliver(int64_t t, uint64_t call, uint64_t stub, int64_t inc = 1) {
  return {{"ev", "rpc.deliver"}, {"t", t}, {"call", call}, {"stub", stub}, {"to", kObj}, {"incarnation", inc}};
}
json rpc_reply(int64_t t, uint64_t call, bool ok = true) { return {{"ev", "rpc.reply"}, {"t", t}, {"call", call}, {"ok", ok}}; }
json rpc_fail(int64_t t, uint64_t call, uint64_t stub, const char* how) {
  return {{"ev", "rpc.fail"}, {"t", t}, {"call", call}, {"stub", stub}, {"how", how}, {"error", "Network connection lost."}};
}
json cold_put(int64_t t, const char* key, const char* outcome = "ok", bool applied = true) {
  return {{"ev", "cold.call"}, {"t", t}, {"from", kObj}, {"bucket", "b"}, {"op", "put"}, {"key", key}, {"outcome", outcome}, {"applied", applied}};
}

// ---------------------------------------------------------------------------------------------

TEST(RuntimeChecks, Rt03AlarmNeverEarly) {
  EXPECT_PASSES(run("RT-03", {start(0, 1), alarm_run(100, 1, 100), alarm_success(101, 100), alarm_run(250, 1, 200)}));
  EXPECT_VIOLATES(run("RT-03", {start(0, 1), alarm_run(99, 1, 100)}), "before its scheduled time");
  // alarm.early (arbitrary profile) exempts the one early run of the scheduled time it was drawn for.
  EXPECT_EQ(run("RT-03", {start(0, 1), early_fault(50, 100), alarm_run(60, 1, 100), alarm_success(61, 100)}).violated, 0u);
  EXPECT_VIOLATES(run("RT-03", {start(0, 1), early_fault(50, 100), alarm_run(60, 1, 100), alarm_success(61, 100),
                                alarm_run(62, 1, 100)}),
                  "alarm run for 100 at t=62: before its scheduled time");
  EXPECT_VIOLATES(run("RT-03", {start(0, 1), early_fault(50, 100), alarm_run(60, 1, 90)}), "alarm run for 90 at t=60");
}

TEST(RuntimeChecks, Rt04OneHandlerAtATime) {
  EXPECT_PASSES(run("RT-04", {start(0, 1), alarm_run(10, 1, 10), alarm_success(20, 10), alarm_run(30, 1, 30)}));
  // A run also ends with its incarnation.
  EXPECT_PASSES(run("RT-04", {start(0, 1), alarm_run(10, 1, 10), end(15, 1), start(16, 2), alarm_run(17, 2, 10)}));
  EXPECT_VIOLATES(run("RT-04", {start(0, 1), alarm_run(10, 1, 10), alarm_run(12, 1, 10)}), "has not finished");
  // The end of another incarnation does not end the run.
  EXPECT_VIOLATES(run("RT-04", {start(0, 1), alarm_run(10, 1, 10), end(11, 1), start(12, 2), alarm_run(13, 2, 10),
                                end(14, 3), alarm_run(15, 2, 10)}),
                  "has not finished");
}

TEST(RuntimeChecks, Rt07ConfirmationsInOrderAndPrefixDecisions) {
  EXPECT_PASSES(run("RT-07", {start(0, 1), commit(1, 1, 1), commit(1, 1, 2), confirm(5, 1, 1), confirm(5, 1, 2), commit(6, 1, 3),
                              commit(6, 1, 4), durability(7, 1, 1, 2), end(7, 1), start(8, 2), commit(9, 2, 5), confirm(10, 2, 5)}));
  EXPECT_VIOLATES(run("RT-07", {start(0, 1), commit(1, 1, 1), commit(1, 1, 2), confirm(5, 1, 2)}), "before commit 1");
  EXPECT_VIOLATES(run("RT-07", {start(0, 1), commit(1, 1, 2), commit(2, 1, 1)}), "commit 1 follows commit 2");
  EXPECT_VIOLATES(run("RT-07", {start(0, 1), commit(1, 1, 1), durability(2, 1, 2, 1)}), "keeps 2 of 1");
  EXPECT_VIOLATES(run("RT-07", {start(0, 1), commit(1, 1, 1), commit(1, 1, 2), durability(2, 1, 0, 1)}), "the trace shows 2");
  EXPECT_VIOLATES(run("RT-07", {start(0, 1), commit(1, 1, 1), commit(1, 1, 2), durability(2, 1, 1, 2), end(2, 1), start(3, 2),
                                confirm(4, 2, 2)}),
                  "which a durability decision dropped");
  EXPECT_VIOLATES(run("RT-07", {start(0, 1), commit(1, 1, 1), end(2, 1)}), "no durability decision");
}

TEST(RuntimeChecks, Rt08WritesOnlyFromTheLiveIncarnation) {
  EXPECT_PASSES(run("RT-08", {start(0, 1), commit(1, 1, 1), confirm(2, 1, 1), end(3, 1), start(4, 2), commit(5, 2, 2)}));
  EXPECT_VIOLATES(run("RT-08", {start(0, 1), end(3, 1), start(4, 2), commit(5, 1, 2)}), "while incarnation 2 is live");
  EXPECT_VIOLATES(run("RT-08", {start(0, 1), commit(1, 1, 1), end(3, 1), confirm(5, 1, 1)}), "no incarnation is live");
  EXPECT_VIOLATES(run("RT-08", {start(0, 1), start(1, 2)}), "while incarnation 1 was live");
}

TEST(RuntimeChecks, Rt18APoisonedIncarnationCommitsAndSendsNothing) {
  EXPECT_PASSES(run("RT-18", {start(0, 1), commit(1, 1, 1), fault(2, "storage.critical"), end(2, 1), start(3, 2),
                              commit(4, 2, 2), confirm(5, 2, 2), effect(5, 2, 1, 2, 2)}));
  EXPECT_VIOLATES(run("RT-18", {start(0, 1), fault(1, "storage.critical"), commit(2, 1, 1)}),
                  "after a critical error poisoned its storage");
  EXPECT_VIOLATES(run("RT-18", {start(0, 1), commit(1, 1, 1), confirm(2, 1, 1), fault(3, "storage.critical"),
                                effect(3, 1, 1, 1, 1)}),
                  "left after a critical error broke the gate");
}

TEST(RuntimeChecks, Rt09FaultEventsMatchTheAccounting) {
  RuntimeChecks checks;
  checks.record(fault(1, "object.reset"));
  checks.record(fault(2, "object.reset"));
  checks.record(fault(3, "rpc.stall", "", 0));
  faults::FaultAccounting accounting{};
  for (std::size_t i = 0; i < accounting.size(); ++i) accounting[i].kind = static_cast<sim::FaultKind>(i);
  accounting[static_cast<std::size_t>(sim::FaultKind::object_reset)].firings = 2;
  accounting[static_cast<std::size_t>(sim::FaultKind::rpc_stall)].firings = 1;
  {
    sim::Tallies tallies;
    checks.report_faults(tallies, accounting);
    EXPECT_EQ(tallies.by_id().at("RT-09").checked, sim::kFaultKindCount);
    EXPECT_EQ(tallies.by_id().at("RT-09").violated, 0u);
  }
  accounting[static_cast<std::size_t>(sim::FaultKind::object_reset)].firings = 3;  // one firing without its event
  sim::Tallies tallies;
  checks.report_faults(tallies, accounting);
  EXPECT_EQ(tallies.by_id().at("RT-09").violated, 1u);
  EXPECT_NE(tallies.by_id().at("RT-09").examples.front().find("object.reset fired 3 times but 2"), std::string::npos);
}

TEST(RuntimeChecks, Rt10OutputGate) {
  EXPECT_PASSES(run("RT-10", {start(0, 1), commit(1, 1, 1), effect(1, 1, 1, 0, 0), confirm(3, 1, 1), effect(3, 1, 2, 1, 1),
                              commit(4, 1, 2), effect(5, 1, 3, 2, 2, true), durability(5, 1, 1, 1), end(5, 1)}));
  // Kept commits of a durability decision count as confirmed.
  EXPECT_PASSES(run("RT-10", {start(0, 1), commit(1, 1, 1), durability(2, 1, 1, 1), end(2, 1), start(3, 2), effect(3, 2, 1, 1, 1)}));
  EXPECT_VIOLATES(run("RT-10", {start(0, 1), commit(1, 1, 1), effect(1, 1, 1, 1, 0)}), "waits for commit 1 and the last confirmed is 0");
  EXPECT_VIOLATES(run("RT-10", {start(0, 1), commit(1, 1, 1), confirm(2, 1, 1), effect(2, 1, 1, 1, 0)}), "reports last confirmed commit 0");
  EXPECT_VIOLATES(run("RT-10", {start(0, 1), effect(1, 1, 2, 0, 0), effect(1, 1, 1, 0, 0)}), "released after effect #2");
  EXPECT_VIOLATES(run("RT-10", {start(0, 1), effect(1, 1, 1, 0, 0, true), effect(2, 1, 1, 0, 0)}), "released after it was dropped");
  EXPECT_VIOLATES(run("RT-10", {start(0, 1), end(1, 1), effect(2, 1, 1, 0, 0)}), "after the incarnation ended");
  // Every reply a caller receives left its callee through the output gate (a released reply effect).
  EXPECT_PASSES(run("RT-10", {start(0, 1), rpc_call(1, 2, 1), rpc_deliver(2, 2, 1), effect(3, 1, 1, 0, 0), rpc_reply(5, 2),
                              rpc_call(6, 4, 3), rpc_deliver(7, 4, 3), effect(8, 1, 2, 0, 0), rpc_reply(9, 4, false)}));
  EXPECT_VIOLATES(run("RT-10", {start(0, 1), rpc_call(1, 2, 1), rpc_deliver(2, 2, 1), rpc_reply(5, 2)}),
                  "call 2 received a reply from Counter/c0, whose output gate released 0 replies for 1 received");
  EXPECT_VIOLATES(run("RT-10", {start(0, 1), rpc_call(1, 2, 1), rpc_call(1, 4, 3), rpc_deliver(2, 2, 1), rpc_deliver(2, 4, 3),
                                effect(3, 1, 1, 0, 0), rpc_reply(5, 2), rpc_reply(5, 4)}),
                  "released 1 replies for 2 received");
}

TEST(RuntimeChecks, Rt12RetrySchedule) {
  // Counted, counted, then a success: delays 2,000 and 4,000; jitter within a quarter.
  EXPECT_PASSES(run("RT-12", {start(0, 1), alarm_run(1'000, 1, 1'000), alarm_failure(1'000, 1'000, true, 1, 2'000, 500, 3'500),
                              alarm_run(3'500, 1, 1'000, 1), alarm_failure(3'600, 1'000, true, 2, 4'000, 0, 7'600),
                              alarm_run(8'000, 1, 1'000, 2), alarm_success(8'001, 1'000), alarm_run(9'000, 1, 1'000, 0)}));
  // An uncounted failure keeps retryCount 0; a counted one after it resets the exponent.
  EXPECT_PASSES(run("RT-12", {start(0, 1), alarm_run(10, 1, 10), alarm_failure(10, 10, false, 0, 2'000, 0, 2'010),
                              alarm_run(2'010, 1, 10, 0), alarm_failure(2'010, 10, false, 0, 4'000, 0, 6'010),
                              alarm_run(6'010, 1, 10, 0), alarm_failure(6'010, 10, true, 1, 2'000, 0, 8'010)}));
  EXPECT_VIOLATES(run("RT-12", {start(0, 1), alarm_run(10, 1, 10), alarm_failure(10, 10, true, 1, 4'000, 0, 4'010)}),
                  "delay 4000 but the schedule gives 2000");
  EXPECT_VIOLATES(run("RT-12", {start(0, 1), alarm_run(10, 1, 10), alarm_failure(10, 10, true, 1, 2'000, 501, 2'511)}),
                  "jitter 501 outside [0, 500]");
  EXPECT_VIOLATES(run("RT-12", {start(0, 1), alarm_run(10, 1, 10), alarm_failure(10, 10, true, 1, 2'000, 5, 2'000)}),
                  "next 2000 != t + delay + jitter = 2015");
  EXPECT_VIOLATES(run("RT-12", {start(0, 1), alarm_run(10, 1, 10), alarm_failure(10, 10, true, 1, 2'000, 5, 2'015),
                                alarm_run(2'014, 1, 10, 1)}),
                  "before the announced retry at 2015");
  EXPECT_VIOLATES(run("RT-12", {start(0, 1), alarm_run(10, 1, 10), alarm_failure(10, 10, true, 1, 2'000, 5, 2'015),
                                alarm_run(2'015, 1, 10, 0)}),
                  "retryCount 0 after 1 counted failures");
  EXPECT_VIOLATES(run("RT-12", {start(0, 1), alarm_run(10, 1, 10), alarm_failure(10, 10, false, 1, 2'000, 0, 2'010)}),
                  "reports retryCount 1 but 0 counted");
}

// Seven counted failures of one occurrence: six retries, then abandoned (runtime.md 7.4).
std::vector<json> seven_counted_failures(int extra_before_abandon) {
  std::vector<json> events{start(0, 1)};
  int64_t t = 10, exponent = 0;
  const int failures = 6 + extra_before_abandon;
  for (int c = 1; c <= failures; ++c) {
    events.push_back(alarm_run(t, 1, 10, c - 1));
    const int64_t delay = int64_t{2'000} << exponent;
    exponent = std::min<int64_t>(exponent + 1, 9);
    events.push_back(alarm_failure(t, 10, true, c, delay, 0, t + delay));
    t += delay;
  }
  events.push_back(alarm_run(t, 1, 10, failures));
  events.push_back(alarm_abandoned(t, 10, failures + 1));
  return events;
}

TEST(RuntimeChecks, Rt12AbandonsAfterTheSeventhCountedFailure) {
  const auto feed = [](const std::vector<json>& events) {
    RuntimeChecks checks;
    for (const json& event : events) checks.record(event);
    sim::Tallies tallies;
    checks.report(tallies);
    return tallies.by_id().at("RT-12");
  };
  EXPECT_EQ(feed(seven_counted_failures(0)).violated, 0u);
  // One counted retry too many (sim.mutant.alarm_retry_off_by_one).
  const sim::InvariantTally late = feed(seven_counted_failures(1));
  EXPECT_GT(late.violated, 0u);
  EXPECT_NE(late.examples.front().find("not abandoned after 7 counted failures"), std::string::npos) << late.examples.front();
  // Nothing fires for an abandoned occurrence.
  std::vector<json> after = seven_counted_failures(0);
  after.push_back(alarm_run(1'000'000, 1, 10, 0));
  const sim::InvariantTally ran = feed(after);
  EXPECT_GT(ran.violated, 0u);
  EXPECT_NE(ran.examples.front().find("after the occurrence was abandoned"), std::string::npos) << ran.examples.front();
  // Uncounted failures never abandon.
  json uncounted_abandon = alarm_abandoned(10, 10, 0);
  uncounted_abandon["counted"] = false;
  EXPECT_VIOLATES(run("RT-12", {start(0, 1), alarm_run(10, 1, 10), uncounted_abandon}), "abandoned after 0 counted failures (uncounted)");
}

TEST(RuntimeChecks, Rt15StubOrderAndDeadStubs) {
  EXPECT_PASSES(run("RT-15", {start(0, 1), rpc_call(1, 2, 1), rpc_call(1, 3, 1), rpc_deliver(5, 2, 1), rpc_deliver(6, 3, 1),
                              rpc_reply(9, 2), rpc_reply(9, 3)}));
  EXPECT_VIOLATES(run("RT-15", {start(0, 1), rpc_call(1, 2, 1), rpc_call(1, 3, 1), rpc_deliver(5, 3, 1), rpc_deliver(6, 2, 1)}),
                  "delivered after call number 2");
  EXPECT_VIOLATES(run("RT-15", {start(0, 1), rpc_call(1, 2, 1), rpc_call(1, 3, 1), rpc_deliver(5, 2, 1), rpc_deliver(6, 3, 1),
                                rpc_fail(8, 2, 1, "reply_lost"), rpc_reply(9, 3)}),
                  "after a call on it failed");
  // A failure on another stub does not matter.
  EXPECT_PASSES(run("RT-15", {start(0, 1), rpc_call(1, 2, 1), rpc_call(1, 3, 4), rpc_fail(2, 2, 1, "request_lost"),
                              rpc_deliver(6, 3, 4), rpc_reply(9, 3)}));
}

TEST(RuntimeChecks, Rt16ErrorSemantics) {
  EXPECT_PASSES(run("RT-16", {start(0, 1), rpc_call(1, 2, 1), rpc_fail(5, 2, 1, "request_lost"), rpc_call(6, 4, 3),
                              rpc_deliver(7, 4, 3), rpc_fail(9, 4, 3, "reply_lost"), rpc_call(10, 6, 5), rpc_fail(11, 6, 5, "not_delivered")}));
  EXPECT_VIOLATES(run("RT-16", {start(0, 1), rpc_call(1, 2, 1), rpc_deliver(2, 2, 1), rpc_fail(5, 2, 1, "request_lost")}),
                  "failed with request_lost but was delivered");
  EXPECT_VIOLATES(run("RT-16", {start(0, 1), rpc_call(1, 2, 1), rpc_fail(2, 2, 1, "not_delivered"), rpc_deliver(5, 2, 1)}),
                  "delivered after it failed with not_delivered");
  EXPECT_VIOLATES(run("RT-16", {start(0, 1), rpc_call(1, 2, 1), rpc_fail(5, 2, 1, "reply_lost")}),
                  "failed with reply_lost but was delivered 0 times");
  EXPECT_VIOLATES(run("RT-16", {start(0, 1), rpc_call(1, 2, 1), rpc_deliver(2, 2, 1), rpc_deliver(3, 2, 1)}), "delivered a second time");
  // rpc.duplicate_delivery (arbitrary profile) allows one extra delivery to that callee.
  EXPECT_EQ(run("RT-16", {start(0, 1), rpc_call(1, 2, 1), fault(2, "rpc.duplicate_delivery", kObj, 0), rpc_deliver(2, 2, 1),
                          rpc_deliver(3, 2, 1)}).violated,
            0u);
}

TEST(RuntimeChecks, Rt19NothingOutlivesItsIncarnation) {
  EXPECT_PASSES(run("RT-19", {start(0, 1), commit(1, 1, 1), effect(2, 1, 1, 1, 0, true), durability(2, 1, 0, 1), end(2, 1),
                              effect(2, 1, 2, 0, 0, true), start(3, 2), commit(4, 2, 2)}));
  EXPECT_VIOLATES(run("RT-19", {start(0, 1), end(2, 1), effect(3, 1, 1, 0, 0, true)}), "after its end at t=2");
  EXPECT_VIOLATES(run("RT-19", {start(0, 1), end(2, 1),
                                json{{"ev", "log"}, {"t", 2}, {"object", kObj}, {"incarnation", 1}, {"level", "info"}}}),
                  "'log' of Counter/c0 incarnation 1");
  EXPECT_VIOLATES(run("RT-19", {start(0, 1), end(2, 1), end(3, 1)}), "a second time");
  // object.zombie (arbitrary profile): the old incarnation runs on for up to 30,000 ms.
  EXPECT_EQ(run("RT-19", {start(0, 1), fault(1, "object.zombie"), end(2, 1), fault(500, "workload.handler_throw")}).violated, 0u);
  EXPECT_GT(run("RT-19", {start(0, 1), fault(1, "object.zombie"), end(2, 1), fault(40'000, "workload.handler_throw")}).violated, 0u);
  // A canary: the memory an incarnation runs on was set up by that incarnation.
  const auto canary = [](int64_t t, int64_t inc, int64_t born) {
    return json{{"ev", runtime_events::kCanary}, {"t", t}, {"object", kObj}, {"incarnation", inc}, {runtime_events::kBorn, born}};
  };
  EXPECT_PASSES(run("RT-19", {start(0, 1), canary(1, 1, 1), end(2, 1), start(3, 2), canary(4, 2, 2)}));
  EXPECT_VIOLATES(run("RT-19", {start(0, 1), canary(1, 1, 1), end(2, 1), start(3, 2), canary(4, 2, 1)}),
                  "Counter/c0 incarnation 2 runs on memory set up by incarnation 1");
}

TEST(RuntimeChecks, Rt22ColdWriteRate) {
  EXPECT_PASSES(run("RT-22", {cold_put(1'000, "k"), cold_put(2'000, "k", "reply_lost"), cold_put(2'500, "other"),
                              // rejected and not-applied writes do not count
                              cold_put(2'100, "k", "Reduce your concurrent request rate for the same object.", false),
                              cold_put(3'000, "k", "ok", false), cold_put(3'500, "k")}));
  EXPECT_VIOLATES(run("RT-22", {cold_put(1'000, "k"), cold_put(1'999, "k")}), "999 ms after the previous accepted write");
  EXPECT_VIOLATES(run("RT-22", {cold_put(1'000, "k", "reply_lost"),
                                json{{"ev", "cold.call"}, {"t", 1'500}, {"from", kObj}, {"bucket", "b"}, {"op", "delete"},
                                     {"key", "k"}, {"outcome", "ok"}, {"applied", true}}}),
                  "accepted delete of b/k");
}

// RT-14 / RT-24: the stored alarm is followed through commits, confirmations and durability
// decisions; at the check phase one due and not running is overdue after kAlarmMaxLateMs, or at once
// when nothing is left to run.
TEST(RuntimeChecks, Rt14AStoredAlarmWhoseTimePassedMustHaveRun) {
  constexpr int64_t kLate = RuntimeChecks::kAlarmMaxLateMs;
  // Set, run, deleted by the deferred delete: nothing stored at the check.
  EXPECT_PASSES(run("RT-14", {start(0, 1), commit(1, 1, 1, 100), confirm(2, 1, 1), alarm_run(100, 1, 100),
                              commit(101, 1, 2), alarm_success(102, 100), confirm(102, 1, 2), check_phase(500'000, true)}));
  // Stored and due, but not late yet, and something is left to run it.
  EXPECT_PASSES(run("RT-14", {start(0, 1), commit(1, 1, 1, 100), confirm(2, 1, 1), check_phase(100 + kLate, false)}));
  // A failure announced a retry: lateness counts from it.
  EXPECT_PASSES(run("RT-14", {start(0, 1), commit(1, 1, 1, 100), confirm(2, 1, 1), alarm_run(100, 1, 100),
                              alarm_failure(150, 100, true, 1, 2'000, 0, 2'150), check_phase(2'150 + kLate, false)}));
  // A run in progress is not overdue.
  EXPECT_PASSES(run("RT-14", {start(0, 1), commit(1, 1, 1, 100), confirm(2, 1, 1), alarm_run(100, 1, 100), check_phase(900'000, true)}));
  // Under alarm.lost (arbitrary) a silent alarm is allowed.
  EXPECT_PASSES(run("RT-14", {start(0, 1), fault(1, "alarm.lost"), commit(1, 1, 1, 100), confirm(2, 1, 1), check_phase(900'000, true)}));

  EXPECT_VIOLATES(run("RT-14", {start(0, 1), commit(1, 1, 1, 100), confirm(2, 1, 1), check_phase(101 + kLate, false)}),
                  "stores an alarm for 100, due since 100, that has not run");
  EXPECT_VIOLATES(run("RT-14", {start(0, 1), commit(1, 1, 1, 100), confirm(2, 1, 1), check_phase(100, true)}),
                  "nothing is left to run it");
  // The story of alarms seed 1343 and log seed 1091: a commit moving the alarm later vanishes in a reset, and
  // the durable alarm (in the past) never runs.
  EXPECT_VIOLATES(run("RT-14", {start(0, 1), commit(1, 1, 1, 100), confirm(2, 1, 1), commit(50, 1, 2, 5'000),
                                durability(30'050, 1, 0, 1), end(30'050, 1), check_phase(10'000'000, false)}),
                  "stores an alarm for 100");
  // The same move kept by the decision: the later alarm is the one owed.
  EXPECT_VIOLATES(run("RT-14", {start(0, 1), commit(1, 1, 1, 100), confirm(2, 1, 1), commit(50, 1, 2, 5'000),
                                durability(30'050, 1, 1, 1), end(30'050, 1), alarm_run(30'051, 2, 100), alarm_success(30'052, 100),
                                check_phase(10'000'000, false)}),
                  "stores an alarm for 5000");
  // RT-24 reports the same, and a commit left awaiting confirmation with nothing left to confirm it.
  EXPECT_VIOLATES(run("RT-24", {start(0, 1), commit(1, 1, 1, 100), confirm(2, 1, 1), check_phase(100, true)}), "stores an alarm for 100");
  EXPECT_VIOLATES(run("RT-24", {start(0, 1), commit(1, 1, 1), check_phase(100, true)}), "commit 1 still awaits confirmation");
  EXPECT_PASSES(run("RT-24", {start(0, 1), commit(1, 1, 1), check_phase(100, false)}));
}

// Each run is timely too, not only what is stored at the check: a run more than kAlarmMaxLateMs after
// its time, its announced retry and the end of the previous run is late, whatever the check finds.
TEST(RuntimeChecks, Rt14EveryRunIsTimely) {
  constexpr int64_t kLate = RuntimeChecks::kAlarmMaxLateMs;
  EXPECT_PASSES(run("RT-14", {start(0, 1), alarm_run(100 + kLate, 1, 100), alarm_success(100 + kLate, 100)}));
  // Lateness counts from the announced retry, and from the end of a previous (long) run.
  EXPECT_PASSES(run("RT-14", {start(0, 1), alarm_run(100, 1, 100), alarm_failure(150, 100, true, 1, 2'000, 0, 2'150),
                              alarm_run(2'150 + kLate, 1, 100, 1)}));
  EXPECT_PASSES(run("RT-14", {start(0, 1), alarm_run(100, 1, 100), alarm_success(500'000, 100), alarm_run(500'000 + kLate, 1, 200)}));
  EXPECT_PASSES(run("RT-14", {start(0, 1), fault(1, "alarm.lost"), alarm_run(900'000, 1, 100)}));
  // No check phase in these: only the run itself can be late.
  EXPECT_VIOLATES(run("RT-14", {start(0, 1), alarm_run(101 + kLate, 1, 100)}), "is 60001 ms after it was due at 100");
  EXPECT_VIOLATES(run("RT-14", {start(0, 1), alarm_run(100, 1, 100), alarm_failure(150, 100, true, 1, 2'000, 0, 2'150),
                                alarm_run(2'151 + kLate, 1, 100, 1)}),
                  "after it was due at 2150");
}

// RT-25: a reported sleep resumed no earlier than asked + ms.
TEST(RuntimeChecks, Rt25SleepsNeverResumeEarly) {
  const auto slept = [](int64_t t, int64_t asked, int64_t ms, int64_t woke) {
    return json{{"ev", runtime_events::kSlept}, {"t", t}, {"object", kObj}, {"incarnation", 1},
                {runtime_events::kAsked, asked}, {runtime_events::kSleptMs, ms}, {runtime_events::kWoke, woke}};
  };
  EXPECT_PASSES(run("RT-25", {start(0, 1), slept(1'000, 0, 1'000, 1'000), slept(3'000, 1'000, 1'000, 3'000)}));
  EXPECT_VIOLATES(run("RT-25", {start(0, 1), slept(999, 0, 1'000, 999)}), "slept 1000 ms from 0 and woke at 999");
}

TEST(RuntimeChecks, MalformedEventsAreViolations) {
  EXPECT_VIOLATES(run("RT-07", {start(0, 1), json{{"ev", "commit"}, {"t", 1}, {"object", kObj}, {"incarnation", 1}}}),
                  "malformed 'commit' event");
}

// The checks as wired into a run: a few runtime-workload seeds check every invariant without violation.
TEST(RuntimeChecks, RuntimeWorkloadSeedsCheckEveryInvariant) {
  workloads::RunConfig config;
  config.workload = "runtime";
  config.faults = "recoverable";
  sim::Tallies all;
  for (uint64_t seed = 0; seed < 8; ++seed) {
    const cli::SeedOutcome outcome = cli::run_seed(config, seed);
    ASSERT_TRUE(outcome.passed()) << "seed " << seed << ": " << outcome.failure();
    all.merge(outcome.tallies);
  }
  for (const char* id : {"RT-03", "RT-04", "RT-07", "RT-08", "RT-09", "RT-10", "RT-12", "RT-14", "RT-15", "RT-16", "RT-19",
                         "RT-20", "RT-21", "RT-22", "RT-24", "RT-25"}) {
    ASSERT_TRUE(all.by_id().count(id)) << id << " was never reported";
    EXPECT_GT(all.by_id().at(id).checked, 0u) << id;
    EXPECT_EQ(all.by_id().at(id).violated, 0u) << id;
  }
}

}  // namespace
}  // namespace durasim::properties
