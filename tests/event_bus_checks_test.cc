// The EVT checks (properties/event_bus_checks.h): the events workload's stream without faults passes
// every check; a stream mutated on its way to the checker (one event changed, the stores left as the
// engine wrote them) is caught by the check of the invariant the mutation breaks; hand-made streams
// over a store written by the test show the checks that need a particular state or order.
#include <gtest/gtest.h>

#include <string>
#include <utility>

#include "engine/conventions.h"
#include "engine/event_bus_events.h"
#include "engine/event_bus_schema.h"
#include "engine/events_keys.h"
#include "properties/event_bus_checks.h"
#include "sim/sqlite_store.h"
#include "tests/mutated_stream.h"

namespace durasim {
namespace {

using mutated::Checked;
using mutated::Mutation;
using nlohmann::json;
namespace ev = event_bus_events;

constexpr uint64_t kSeed = 0;

Checked run(Mutation mutation = {}) { return mutated::runMutated("events", {{"EVT", "Bus"}}, kSeed, std::move(mutation)); }

TEST(EventBusChecks, TheUnmutatedStreamPassesEveryCheck) {
  const Checked checked = run();
  EXPECT_EQ(checked.tallies.violations(), 0u) << checked.examples();
  for (const char* id : {"EVT-01", "EVT-02", "EVT-03", "EVT-04", "EVT-05", "EVT-06", "EVT-07", "EVT-08", "EVT-09", "EVT-10", "EVT-11",
                         "EVT-12", "EVT-13", "EVT-14", "EVT-15", "EVT-16", "EVT-17", "EVT-18", "EVT-19", "EVT-20", "EVT-21", "EVT-22",
                         "EVT-23", "EVT-24", "EVT-25", "EVT-27", "EVT-28", "EVT-29", "EVT-30", "EVT-31", "EVT-32", "EVT-33", "EVT-35",
                         "EVT-38", "EVT-41", "EVT-42", "EVT-43", "EVT-44"})
    EXPECT_GT(checked.tallies.by_id().count(id) ? checked.tallies.by_id().at(id).checked : 0u, 0u) << id << " was never checked";
}

using Case = mutated::MutationCase;

class EventBusCheckMutations : public ::testing::TestWithParam<Case> {};

TEST_P(EventBusCheckMutations, AreCaughtByTheirInvariant) {
  const Case& c = GetParam();
  const Checked checked = run(c.mutation);
  ASSERT_TRUE(checked.applied) << "the stream has no event to mutate";
  EXPECT_GT(checked.violations(c.caught_by), 0u) << checked.examples();
}

int64_t numberOf(const json& e, const char* field) { return e.at(field).get<int64_t>(); }

const Case kCases[] = {
    // The first emit reported with another payload than the one stored.
    {"StoredPayloadNotTheFirst", {std::string(ev::kEmitWrite), 0, [](json& e) { e["payload"] = *serialize(json("other")); }}, "EVT-01"},
    // An emit the application saw return, of an id the bus never stored.
    {"ReturnedEmitNotStored", {std::string(ev::kAppEmitted), 0, [](json& e) { e["id"] = "never-emitted"; }}, "EVT-02"},
    // An append reported under a depth bound the topic already exceeds.
    {"AppendPastTheDepthBound", {std::string(ev::kEmitWrite), 0, [](json& e) { e["maxDepth"] = 0; }}, "EVT-03"},
    // A handler called with a record the topic's log does not hold at that seq.
    {"CallWithAnotherTopicsRecord", {std::string(ev::kInvoke), 0, [](json& e) { e["seq"] = numberOf(e, "seq") + 1'000; }}, "EVT-04"},
    // A record reported under another id: the stored keys of the real one belong to no event.
    {"KeysOfNoEvent", {std::string(ev::kEmitWrite), 0, [](json& e) { e["id"] = "ghost"; }}, "EVT-05"},
    // An ack marker reported for another consumer than the one whose key is stored.
    {"AckOfAnotherConsumer", {std::string(ev::kAckWrite), 0, [](json& e) { e["consumer"] = "ghost"; }}, "EVT-06"},
    // A pass returning more than the markers it created.
    {"PollCountsTooMany", {std::string(ev::kPollEnd), 0, [](json& e) { e["delivered"] = numberOf(e, "delivered") + 1; }}, "EVT-07"},
    // A second ack write with no second successful call.
    {"AckWithoutASuccess", {std::string(ev::kAckWrite), 0, [](json&) {}, 2}, "EVT-08"},
    // A stored marker whose insert reports it lost: nothing created it.
    {"MarkerNoCallCreated", {std::string(ev::kAckWrite), 0, [](json& e) { e["won"] = false; }}, "EVT-09"},
    // A consumer that never polled: the topic's events are never delivered to it.
    {"ConsumerNeverDelivers", {std::string(ev::kOptions), 0, [](json& e) { e["consumer"] = "ghost"; }}, "EVT-10"},
    // A due event examined as waiting.
    {"DueEventSkipped", {std::string(ev::kExamine), 0, [](json& e) { e["decision"] = "waiting"; }}, "EVT-12"},
    // A record reported far past the frontier the passes reach.
    {"FrontierShortOfTheLog", {std::string(ev::kEmitWrite), 0, [](json& e) { e["seq"] = 1'000'000; }}, "EVT-14"},
    // A cursor reported at a position the store does not hold.
    {"CursorNotAsStored", {std::string(ev::kCursorWrite), 0, [](json& e) { e["to"] = numberOf(e, "to") + 1; }}, "EVT-16"},
    // A quarantine after more failures than maxAttempts.
    {"QuarantineLate", {std::string(ev::kQuarantineWrite), 0, [](json& e) { e["dead"]["attempts"] = numberOf(e["dead"], "attempts") + 1; }}, "EVT-18"},
    // A call reported at an attempt the stored record does not give.
    {"AttemptSkipsAhead", {std::string(ev::kInvoke), 0, [](json& e) { e["attempt"] = numberOf(e, "attempt") + 4; }}, "EVT-19"},
    // An attempt record due a millisecond later than its delay.
    {"NextAtOffTheDelay", {std::string(ev::kFailureWrite), 0, [](json& e) { e["attempts"]["nextAt"] = numberOf(e["attempts"], "nextAt") + 1; }}, "EVT-23"},
    // An attempt record due before the failure.
    {"NextAtBeforeTheFailure", {std::string(ev::kFailureWrite), 0, [](json& e) { e["attempts"]["nextAt"] = 0; }}, "EVT-24"},
    // A failure reported as lost to a concurrent attempt write, which it made all the same.
    {"DiscardedAttemptWrites", {std::string(ev::kFailureWrite), 0, [](json& e) { e["outcome"] = "attemptRaced"; }}, "EVT-19"},
    // A refusal with a message the spec does not give.
    {"RefusalMessage", {std::string(ev::kRejected), 0, [](json& e) { e["message"] = "bad input"; }}, "EVT-25"},
    // A release reported as finding no dead record while one is stored.
    {"ReleaseOutcomeWrong", {std::string(ev::kRelease), 0, [](json& e) { e["outcome"] = "notQuarantined"; }}, "EVT-27"},
    // A release counting five releases at once.
    {"ReleasesJump", {std::string(ev::kReleaseWrite), 0, [](json& e) { e["dead"]["releases"] = 9; }}, "EVT-30"},
    // A call started over a release stamp the stored dead record does not have.
    {"StampNotStored", {std::string(ev::kInvoke), 0, [](json& e) { e["stamp"] = "9@9"; }}, "EVT-31"},
    // A dead record reported with another quarantine time than the one stored.
    {"DeadRecordNotAsStored", {std::string(ev::kQuarantineWrite), 0, [](json& e) { e["dead"]["at"] = numberOf(e["dead"], "at") + 1; }}, "EVT-32"},
    // A loop tick that sets a gap neither pollMs nor the doubled one.
    {"LoopGapOff", {std::string(ev::kTickEnd), 0, [](json& e) { e["next"] = numberOf(e, "next") + 1; }}, "EVT-38"},
    // A listing costing one list too many.
    {"ListingCost", {std::string(ev::kList), 0, [](json& e) { e["reads"]["lists"] = numberOf(e["reads"], "lists") + 1; }}, "EVT-42"},
    // A retrying failure's warning (the run's second log line, in this seed) logged under another name.
    {"FailureLogLine", {"log", 1, [](json& e) { e["event"] = "events.other"; }}, "EVT-43"},
    // A handler receiving another payload than the stored one.
    {"HandlerPayloadChanged", {std::string(ev::kAppHandle), 0, [](json& e) { e["payload"] = "tampered"; }}, "EVT-44"},
    // A malformed probe is a violation, not a crash.
    {"MalformedInvoke", {std::string(ev::kInvoke), 0, [](json& e) { e.erase("id"); }}, "EVT-13"},
};

INSTANTIATE_TEST_SUITE_P(Stream, EventBusCheckMutations, ::testing::ValuesIn(kCases), [](const auto& info) { return std::string(info.param.name); });

// ---------------------------------------------------------------------------------------------
// Hand-made streams of object "Bus/b0" over a store holding the bus's two tables

constexpr char kTopic[] = "a:b";
constexpr char kConsumer[] = "c%1";

class StreamRig {
 public:
  StreamRig()
      : checks_(properties::StoreReader{[this](const std::string&, std::string_view sql, const std::vector<SqlValue>& params) {
                  return store_.exec(sql, params);
                }},
                "Bus") {
    store_.exec("CREATE TABLE " DURASIM_EVENTS_LOG
                " (seq INTEGER PRIMARY KEY AUTOINCREMENT, ns TEXT NOT NULL, id TEXT NOT NULL, payload TEXT NOT NULL, ts INTEGER NOT NULL, "
                "UNIQUE (ns, id))",
                {});
    store_.exec("CREATE TABLE " DURASIM_EVENTS_KV " (key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID", {});
    of(std::string(ev::kOptions), {{"pollMs", 100}, {"maxPollMs", 800}, {"backoff", true}, {"maxAttempts", 2}, {"retryDelay", 1'000},
                                   {"handlerTimeoutMs", nullptr}, {"variants", json::array()}});
  }

  // An event `ev` of the consumer, at trace time `t` (clock offset 0).
  void of(const std::string& ev, json fields) {
    fields["ev"] = ev;
    fields["t"] = t_;
    fields["object"] = "Bus/b0";
    fields["incarnation"] = 1;
    if (!fields.contains("topic")) fields["topic"] = kTopic;
    const bool consumer = (ev.substr(0, 4) == "evt." && ev != ev::kEmitWrite) || ev == ev::kAppHandle;
    if (!fields.contains("consumer") && consumer) fields["consumer"] = kConsumer;
    checks_.record(fields);
  }
  void at(int64_t t) { t_ = t; }
  // Appends a record to the topic's log, and reports it as an emit.
  int64_t emit(const std::string& id) {
    const std::string payload = *serialize(json{{"n", id}});
    store_.exec("INSERT INTO " DURASIM_EVENTS_LOG " (ns, id, payload, ts) VALUES (?, ?, ?, 0)", {keys().log(), id, payload});
    const int64_t seq = store_.exec("SELECT seq FROM " DURASIM_EVENTS_LOG " WHERE id = ?", {id}).one().int64("seq");
    of(std::string(ev::kEmitWrite), {{"id", id}, {"seq", seq}, {"inserted", true}, {"payload", payload}, {"ts", 0}, {"depth", nullptr}, {"maxDepth", nullptr}});
    return seq;
  }
  void put(const std::string& key, const json& value) {
    store_.exec("INSERT INTO " DURASIM_EVENTS_KV " (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value", {key, *serialize(value)});
  }
  void pend(const std::string& id, int64_t seq) {
    store_.exec("INSERT INTO " DURASIM_EVENTS_LOG " (ns, id, payload, ts) VALUES (?, ?, ?, 0)", {keys().pending(), id, *serialize(json{{"seq", seq}})});
  }
  // A record's append gone from the store (a reset rolled it back).
  void drop(const std::string& id) { store_.exec("DELETE FROM " DURASIM_EVENTS_LOG " WHERE id = ?", {id}); }
  void commit() { of("commit", {{"commit", ++commit_}, {"alarm", nullptr}}); }
  void begin(int64_t pass) { of(std::string(ev::kPollBegin), {{"pass", pass}, {"at", t_}}); }
  void end(int64_t pass, int64_t delivered) {
    of(std::string(ev::kPollEnd), {{"pass", pass}, {"delivered", delivered}, {"failed", nullptr}, {"pendingExamined", 0}, {"newRecords", 1},
                                   {"frontier", 0}, {"reads", {{"lists", 2}, {"gets", 4}, {"counts", 0}, {"writes", 1}, {"atomics", 1}}}});
  }
  void invoke(int64_t pass, const std::string& id, int64_t seq, const std::string& stamp = "0@-") {
    of(std::string(ev::kExamine), {{"pass", pass}, {"phase", "log"}, {"id", id}, {"seq", seq}, {"decision", "due"}, {"nextAt", 0}});
    of(std::string(ev::kInvoke), {{"pass", pass}, {"id", id}, {"seq", seq}, {"attempt", 1}, {"fromIndex", false}, {"stamp", stamp}});
  }
  // A successful call of `id` in `pass`, its marker stored and written.
  void deliver(int64_t pass, const std::string& id, int64_t seq) {
    invoke(pass, id, seq);
    of(std::string(ev::kAppHandle), {{"id", id}, {"payload", {{"n", id}}}, {"failed", false}, {"error", nullptr}});
    of(std::string(ev::kHandled), {{"pass", pass}, {"id", id}, {"ok", true}, {"timedOut", false}, {"error", nullptr}});
    put(keys().ack(id), true);
    of(std::string(ev::kAckWrite), {{"pass", pass}, {"id", id}, {"seq", seq}, {"won", true}, {"pendingErased", false}});
  }
  void cursor(int64_t pass, int64_t from, int64_t to) {
    put(keys().cursor(), std::to_string(to));
    of(std::string(ev::kCursorWrite), {{"pass", pass}, {"from", from}, {"to", to}, {"moved", true}, {"rewind", false}});
  }
  void finish() { checks_.finish(); }
  static events::Keys keys() { return events::Keys(kTopic, kConsumer, true); }
  uint64_t violations(const std::string& id) const {
    const auto& tallies = checks_.tallies().by_id();
    return tallies.count(id) ? tallies.at(id).violated : 0;
  }
  uint64_t checked(const std::string& id) const {
    const auto& tallies = checks_.tallies().by_id();
    return tallies.count(id) ? tallies.at(id).checked : 0;
  }
  properties::EventBusChecks& checks() { return checks_; }

 private:
  sim::SqliteStore store_{sim::SqlEnvironment{[] { return uint64_t{7}; }, [] { return int64_t{0}; }}};
  properties::EventBusChecks checks_;
  int64_t t_ = 1'000;
  uint64_t commit_ = 0;
};

TEST(EventBusChecksStream, ADeliveredEventPassesEveryCheckItFeeds) {
  StreamRig rig;
  const int64_t seq = rig.emit("e1");
  rig.commit();
  rig.begin(1);
  rig.deliver(1, "e1", seq);
  rig.cursor(1, 0, seq);
  rig.end(1, 1);
  rig.commit();
  rig.finish();
  EXPECT_EQ(rig.checks().tallies().violations(), 0u);
  for (const char* id : {"EVT-01", "EVT-04", "EVT-07", "EVT-08", "EVT-10", "EVT-12", "EVT-13", "EVT-14", "EVT-15", "EVT-16", "EVT-17", "EVT-35", "EVT-36", "EVT-44"})
    EXPECT_GT(rig.checked(id), 0u) << id;
}

TEST(EventBusChecksStream, ASolitaryPassReadingPastItsBoundViolatesEvt17) {
  StreamRig rig;
  const int64_t seq = rig.emit("e1");
  rig.commit();
  rig.begin(1);
  rig.deliver(1, "e1", seq);
  rig.cursor(1, 0, seq);
  rig.of(std::string(ev::kPollEnd), {{"pass", 1}, {"delivered", 1}, {"failed", nullptr}, {"pendingExamined", 0}, {"newRecords", 1}, {"frontier", 0},
                                     {"reads", {{"lists", 3}, {"gets", 4}, {"counts", 0}, {"writes", 2}, {"atomics", 2}}}});
  EXPECT_EQ(rig.violations("EVT-17"), 1u) << "one new record allows 2 lists";
}

TEST(EventBusChecksStream, ACallOfAnAckedQuarantinedOrWaitingEventViolatesEvt13Evt20Evt22) {
  StreamRig rig;
  const int64_t seq = rig.emit("e1");
  rig.commit();
  rig.put(StreamRig::keys().ack("e1"), true);
  rig.put(StreamRig::keys().dead("e1"), json{{"error", "x"}, {"attempts", 2}, {"at", 0}, {"seq", seq}});
  rig.put(StreamRig::keys().attempts("e1"), json{{"n", 2}, {"nextAt", 5'000}});
  rig.begin(1);
  rig.of(std::string(ev::kInvoke), {{"pass", 1}, {"id", "e1"}, {"seq", seq}, {"attempt", 3}, {"fromIndex", false}, {"stamp", "0@-"}});
  EXPECT_EQ(rig.violations("EVT-13"), 1u);
  EXPECT_EQ(rig.violations("EVT-20"), 1u);
  EXPECT_EQ(rig.violations("EVT-22"), 1u);
  EXPECT_EQ(rig.violations("EVT-12"), 1u) << "called without being examined as due";
}

TEST(EventBusChecksStream, AFrontierPassingAnUnaccountedEventViolatesEvt15) {
  StreamRig rig;
  const int64_t seq = rig.emit("e1");
  rig.commit();
  rig.begin(1);
  rig.cursor(1, 0, seq);
  rig.commit();
  EXPECT_EQ(rig.violations("EVT-15"), 1u);
  EXPECT_EQ(rig.violations("EVT-16"), 0u);
}

TEST(EventBusChecksStream, AQuarantineKeepingItsPendingEntryViolatesEvt21AndOneWithoutAFailedCallEvt33) {
  StreamRig rig;
  const int64_t seq = rig.emit("e1");
  rig.commit();
  rig.pend("e1", seq);
  const json dead = {{"error", "x"}, {"attempts", 2}, {"at", 1'000}, {"seq", seq}};
  rig.put(StreamRig::keys().dead("e1"), dead);
  rig.of(std::string(ev::kQuarantineWrite), {{"pass", 1}, {"id", "e1"}, {"seq", seq}, {"dead", dead}, {"replaced", false}});
  EXPECT_EQ(rig.violations("EVT-33"), 1u);
  rig.of(std::string(ev::kFailureWrite), {{"pass", 1}, {"id", "e1"}, {"seq", seq}, {"outcome", "quarantined"}, {"n", 2}, {"delayMs", 1'000},
                                          {"expected", {{"n", 1}, {"nextAt", 0}}}, {"attempts", nullptr}, {"error", "x"}, {"pending", "erase"}});
  rig.commit();
  EXPECT_EQ(rig.violations("EVT-21"), 1u);
}

// Events workload, arbitrary faults, seeds 235, 533, 615: a concurrent pass's call fails after the
// quarantine, finds its attempt record changed, and adds the event to the pending index again (the
// next pass erases it); a reset's durability decision drops that erase. The store then holds both,
// which EVT-21 (about the quarantining transaction) allows.
TEST(EventBusChecksStream, APendingEntryARacedFailureAddsAfterTheQuarantineIsNoEvt21Violation) {
  StreamRig rig;
  const int64_t seq = rig.emit("e1");
  rig.commit();
  const json dead = {{"error", "x"}, {"attempts", 1}, {"at", 1'000}, {"seq", seq}};
  rig.put(StreamRig::keys().dead("e1"), dead);
  rig.of(std::string(ev::kQuarantineWrite), {{"pass", 1}, {"id", "e1"}, {"seq", seq}, {"dead", dead}, {"replaced", false}});
  rig.of(std::string(ev::kFailureWrite), {{"pass", 1}, {"id", "e1"}, {"seq", seq}, {"outcome", "quarantined"}, {"n", 1}, {"delayMs", 0},
                                          {"expected", nullptr}, {"attempts", {{"firstAt", 1'000}, {"n", 1}, {"nextAt", 1'000}}}, {"error", "x"},
                                          {"pending", "erase"}});
  rig.commit();
  EXPECT_GT(rig.checked("EVT-21"), 0u);
  rig.pend("e1", seq);
  rig.of(std::string(ev::kFailureWrite), {{"pass", 2}, {"id", "e1"}, {"seq", seq}, {"outcome", "attemptRaced"}, {"n", 1}, {"delayMs", 0},
                                          {"expected", nullptr}, {"attempts", nullptr}, {"error", "x"}, {"pending", "add"}});
  rig.commit();
  rig.checks().record({{"ev", "durability"}, {"t", 2'000}, {"object", "Bus/b0"}, {"incarnation", 1}, {"kept", 2}, {"unconfirmed", 2}});
  EXPECT_EQ(rig.violations("EVT-21"), 0u);
}

TEST(EventBusChecksStream, AFailureWithoutItsLogLineViolatesEvt43) {
  StreamRig rig;
  const int64_t seq = rig.emit("e1");
  rig.commit();
  rig.begin(1);
  rig.invoke(1, "e1", seq);
  rig.of(std::string(ev::kHandled), {{"pass", 1}, {"id", "e1"}, {"ok", false}, {"timedOut", false}, {"error", "boom"}});
  const json attempts = {{"n", 1}, {"firstAt", 1'000}, {"nextAt", 2'000}};
  rig.put(StreamRig::keys().attempts("e1"), attempts);
  rig.of(std::string(ev::kFailureWrite), {{"pass", 1}, {"id", "e1"}, {"seq", seq}, {"outcome", "retrying"}, {"n", 1}, {"delayMs", 1'000},
                                          {"expected", nullptr}, {"attempts", attempts}, {"error", "boom"}, {"pending", "add"}});
  EXPECT_EQ(rig.violations("EVT-23"), 0u) << "a fixed delay of 1000 ms";
  EXPECT_EQ(rig.violations("EVT-18"), 0u);
  rig.end(1, 0);
  EXPECT_EQ(rig.violations("EVT-43"), 1u);
}

TEST(EventBusChecksStream, AFirstFailureAtTimeZeroMustKeepFirstAtZeroEvt34) {
  StreamRig rig;
  rig.at(0);
  const int64_t seq = rig.emit("e1");
  rig.commit();
  rig.begin(1);
  rig.invoke(1, "e1", seq);
  const json attempts = {{"n", 1}, {"nextAt", 1'000}};
  rig.of(std::string(ev::kFailureWrite), {{"pass", 1}, {"id", "e1"}, {"seq", seq}, {"outcome", "retrying"}, {"n", 1}, {"delayMs", 1'000},
                                          {"expected", nullptr}, {"attempts", attempts}, {"error", "boom"}, {"pending", "add"}});
  EXPECT_EQ(rig.violations("EVT-34"), 1u);
  EXPECT_EQ(rig.violations("EVT-23"), 1u);
}

TEST(EventBusChecksStream, AHealthyPassAfterHealThatMissesAnEventViolatesEvt11) {
  StreamRig rig;
  rig.emit("e1");
  rig.commit();
  rig.checks().healed(500);
  rig.begin(1);
  rig.end(1, 0);
  EXPECT_EQ(rig.violations("EVT-11"), 1u);
}

TEST(EventBusChecksStream, APassAfterAReleaseThatNeverCallsItViolatesEvt26) {
  StreamRig rig;
  const int64_t seq = rig.emit("e1");
  rig.commit();
  const json released = {{"error", "x"}, {"attempts", 2}, {"at", 0}, {"seq", seq}, {"releasedAt", 1'000}, {"releases", 1}};
  const json reset = {{"n", 0}, {"nextAt", 0}, {"gen", "1@1000"}};
  rig.of(std::string(ev::kReleaseWrite), {{"id", "e1"}, {"try", 1}, {"step", "all"}, {"outcome", "released"}, {"dead", released}, {"attempts", reset}, {"seq", seq}});
  EXPECT_EQ(rig.violations("EVT-32"), 1u) << "released with no dead record before it";
  rig.put(StreamRig::keys().dead("e1"), released);
  rig.put(StreamRig::keys().attempts("e1"), reset);
  rig.commit();
  EXPECT_EQ(rig.violations("EVT-28"), 1u) << "released without its pending entry";
  rig.of(std::string(ev::kRelease), {{"id", "e1"}, {"outcome", "released"}, {"tries", 1}});
  rig.at(2'000);
  rig.begin(1);
  rig.end(1, 0);
  EXPECT_EQ(rig.violations("EVT-26"), 1u);
}

TEST(EventBusChecksStream, APendingEntryOfAnotherTopicViolatesEvt41) {
  StreamRig rig;
  rig.emit("e1");
  rig.commit();
  rig.pend("elsewhere", 99);
  rig.begin(1);
  rig.end(1, 0);
  EXPECT_EQ(rig.violations("EVT-41"), 1u);
}

TEST(EventBusChecksStream, AReturnedEmitLostInADurabilityDecisionViolatesEvt02) {
  StreamRig rig;
  rig.emit("e1");
  rig.commit();
  rig.of("confirm", {{"commit", 1}});
  rig.of(std::string(ev::kAppEmitted), {{"id", "e1"}, {"ok", true}, {"error", nullptr}, {"payload", json{{"n", "e1"}}.dump()}});
  EXPECT_EQ(rig.violations("EVT-02"), 0u);
  EXPECT_EQ(rig.violations("EVT-01"), 0u);
  rig.checks().record({{"ev", "durability"}, {"t", 2'000}, {"object", "Bus/b0"}, {"incarnation", 1}, {"kept", 0}, {"unconfirmed", 0}});
  EXPECT_EQ(rig.violations("EVT-02"), 0u);
  // The record gone from the store the next incarnation opens.
  StreamRig lost;
  lost.of(std::string(ev::kAppEmitted), {{"id", "e9"}, {"ok", true}, {"error", nullptr}, {"payload", "{}"}});
  EXPECT_EQ(lost.violations("EVT-02"), 1u) << "returned before any record of it was durable";
}

// Mixed workload, arbitrary faults, seeds 349 and 1069: a reset rolls back the append of an event a
// call was just made with, or a pass's cursor write, and an object.zombie keeps the incarnation
// running: its handler receives the event, its pass ends reporting no failure. What an ended
// incarnation still runs is not followed; the same history in a live incarnation is a violation.
TEST(EventBusChecksStream, AnEndedIncarnationsZombieIsNotFollowed) {
  for (const bool ended : {false, true}) {
    StreamRig rig;
    const int64_t seq = rig.emit("e1");
    rig.commit();
    rig.begin(1);
    rig.invoke(1, "e1", seq);
    rig.drop("e1");
    if (ended) rig.of("incarnation.end", {{"reset", true}, {"cause", "Durable Object was reset"}});
    rig.of(std::string(ev::kAppHandle), {{"id", "e1"}, {"payload", {{"n", "e1"}}}, {"failed", false}, {"error", nullptr}});
    rig.end(1, 1);
    EXPECT_EQ(rig.violations("EVT-44"), ended ? 0u : 1u);
    EXPECT_EQ(rig.violations("EVT-14"), ended ? 0u : 1u);
  }
}

TEST(EventBusChecksStream, ExtraRecordsInARunWithoutFailuresViolateEvt36) {
  StreamRig rig;
  rig.emit("e1");
  rig.commit();
  rig.put(StreamRig::keys().attempts("e1"), json{{"n", 0}, {"nextAt", 0}});
  rig.finish();
  EXPECT_EQ(rig.violations("EVT-36"), 1u);
  EXPECT_EQ(rig.violations("EVT-19"), 1u) << "an attempt record no reported write left";
  EXPECT_EQ(rig.violations("EVT-10"), 1u) << "e1 was never delivered";
}

}  // namespace
}  // namespace durasim
