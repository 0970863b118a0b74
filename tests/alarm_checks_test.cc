// The SCH and ALM checks (properties/alarm_checks.h) on the real alarms workload's event stream: a
// run without faults passes every check; a run whose stream is mutated on its way to the checker
// (one event changed, the store left as the engine wrote it) is caught by the check of the
// invariant the mutation breaks. The run itself is never changed: the mutation happens in the
// observer, after the recorder saw the event.
#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "engine/outbox_schema.h"
#include "properties/alarm_checks.h"
#include "sim/sqlite_store.h"
#include "tests/mutated_stream.h"

namespace durasim {
namespace {

using nlohmann::json;

constexpr uint64_t kSeed = 1;

struct AlarmPolicyStub {
  properties::AlarmPolicyView view() const {
    properties::AlarmPolicyView v;
    v.maxAttempts = [](const std::string&) { return int64_t{5}; };
    v.retryDelay = [](const std::string&, int64_t) { return std::optional<std::pair<int64_t, int64_t>>{}; };
    v.policyInvalid = [](const std::string&) { return false; };
    return v;
  }
};

using mutated::Checked;
using mutated::Mutation;

// The alarms workload, seed kSeed, no faults, its SCH and ALM checks behind `mutation`.
Checked run(Mutation mutation = {}) {
  return mutated::runMutated("alarms", {{"SCH", "AlarmApp"}, {"ALM", "AlarmApp"}}, kSeed, std::move(mutation));
}

TEST(AlarmChecks, TheUnmutatedStreamPassesEveryCheck) {
  const Checked checked = run();
  EXPECT_EQ(checked.tallies.violations(), 0u) << checked.examples();
  for (const char* id : {"SCH-02", "SCH-03", "SCH-05", "SCH-06", "SCH-07", "SCH-09", "SCH-12", "ALM-08", "ALM-11", "ALM-13"})
    EXPECT_GT(checked.tallies.by_id().at(id).checked, 0u) << id;
}

using Case = mutated::MutationCase;

class AlarmCheckMutations : public testing::TestWithParam<Case> {};

TEST_P(AlarmCheckMutations, AreCaughtByTheirInvariant) {
  const Case& c = GetParam();
  const Checked checked = run(c.mutation);
  ASSERT_TRUE(checked.applied) << "the stream has no event to mutate";
  EXPECT_GT(checked.violations(c.caught_by), 0u) << checked.examples();
}

const Case kCases[] = {
    // A reconcile that wrote an alarm sooner than now + alarmMinDelayMs.
    {"ReconcileWritesTooEarly", {"sch.reconcile", 0, [](json& e) { e["written"] = e["now"]; }}, "SCH-03"},
    // The after-commit step of a reconcile that never committed.
    {"DurableStepOfAnUncommittedReconcile", {"sch.reconcile.durable", 3, [](json& e) { e["reconciled_at"] = 1; }}, "SCH-05"},
    // An early timer that fires before its time.
    {"TimerFiresEarly", {"sch.timer.fire", 0, [](json& e) { e["now"] = e["next"].get<int64_t>() - 1; }}, "SCH-06"},
    // A permit released that was never acquired.
    {"ReleaseOfAPermitNotHeld", {"sch.permit", 1, [](json& e) { e["permit"] = 999; }}, "SCH-07"},
    // A second participant of one kind accepted.
    {"SecondParticipantAccepted", {"sch.participant", 0, [](json& e) { e["accepted"] = false; }}, "SCH-09"},
    // migrate(latest) on a migrated store changed the schema.
    {"MigrateOnAMigratedStoreApplies", {"app.migrate", 0, [](json& e) { e["applied"] = 1; }}, "SCH-12"},
    // The stored alarm after a commit is not the one its reconcile computed.
    {"CommitLeavesAnotherAlarm", {"commit", 1, [](json& e) { e["alarm"] = 1; }}, "SCH-02"},
    // A purge that reports another count than the rows it removed: the check reads the store.
    {"PurgeCountDisagreesWithTheRows", {"alm.purge.write", 0, [](json& e) { e["count"] = 7; }}, "ALM-10"},
    // The application's handler ran more often than maxAttempts, though the engine reported one
    // invocation: ALM-01 counts what the handler ran.
    {"HandlerRunsBeyondTheAttemptBound", {"app.alarm.handler", 0, [](json&) {}, 6}, "ALM-01"},
    // A malformed probe is a violation, not a crash.
    {"MalformedClaim", {"alm.claim", 0, [](json& e) { e.erase("attempt"); }}, "ALM-13"},
};

INSTANTIATE_TEST_SUITE_P(Stream, AlarmCheckMutations, testing::ValuesIn(kCases), [](const auto& info) { return std::string(info.param.name); });

// SCH-06 is judged at the reconcile's commit, not at the arm-time clock the engine reads: a reconcile
// at 1000 with next 6000 and alarmMinDelayMs 5000 wrote the physical alarm for 6000, so a timer armed
// for 6000 after the confirmation wait (at 3000, when 6000 < 3000 + 5000) would run the work twice.
TEST(AlarmChecksStream, ATimerForANextThePhysicalAlarmHoldsViolatesSch06) {
  sim::SqliteStore store{sim::SqlEnvironment{[] { return uint64_t{7}; }, [] { return int64_t{0}; }}};
  const AlarmPolicyStub policy;
  properties::AlarmChecks checks(
      properties::StoreReader{[&store](const std::string&, std::string_view sql, const std::vector<SqlValue>& params) { return store.exec(sql, params); }},
      policy.view(), "AlarmApp");
  const auto event = [](const char* ev, int64_t t, json fields) {
    fields["ev"] = ev;
    fields["t"] = t;
    fields["object"] = "AlarmApp/a";
    fields["incarnation"] = 1;
    return fields;
  };
  checks.record(event("sch.reconcile", 1000,
                      {{"now", 1000}, {"next", 6000}, {"before", nullptr}, {"written", 6000}, {"deleted", false}, {"min_delay", 5000}}));
  checks.record(event("commit", 1000, {{"commit", 1}, {"alarm", 6000}}));
  checks.record(event("confirm", 3000, {{"commit", 1}}));
  checks.record(event("sch.reconcile.durable", 3000, {{"reconciled_at", 1000}, {"next", 6000}}));
  checks.record(event("sch.timer.arm", 3000, {{"next", 6000}, {"now", 3000}, {"min_delay", 5000}}));
  const auto& tallies = checks.tallies().by_id();
  ASSERT_TRUE(tallies.count("SCH-06"));
  EXPECT_EQ(tallies.at("SCH-06").violated, 1u);
  EXPECT_EQ(tallies.count("SCH-05") ? tallies.at("SCH-05").violated : 0u, 0u);
}

// A checker over a bare store holding the alarms table, fed hand-made events of object "AlarmApp/a".
class StreamRig {
 public:
  StreamRig()
      : checks_(properties::StoreReader{[this](const std::string&, std::string_view sql, const std::vector<SqlValue>& params) {
                  return store_.exec(sql, params);
                }},
                policy_.view(), "AlarmApp") {
    store_.exec(
        "CREATE TABLE durability_alarms (name TEXT PRIMARY KEY, generation_id TEXT NOT NULL, status TEXT NOT NULL,"
        " scheduled_at INTEGER NOT NULL, next_attempt_at INTEGER NOT NULL, attempt INTEGER NOT NULL DEFAULT 0,"
        " last_error TEXT, last_error_name TEXT, created_at INTEGER NOT NULL)",
        {});
  }
  void sql(std::string_view statement) { store_.exec(statement, {}); }
  void record(const char* ev, int64_t t, json fields = json::object()) {
    fields["ev"] = ev;
    fields["t"] = t;
    fields["object"] = "AlarmApp/a";
    fields["incarnation"] = 1;
    checks_.record(fields);
  }
  properties::AlarmChecks& checks() { return checks_; }
  uint64_t violations(const std::string& id) const {
    const auto& tallies = checks_.tallies().by_id();
    return tallies.count(id) ? tallies.at(id).violated : 0u;
  }

 private:
  sim::SqliteStore store_{sim::SqlEnvironment{[] { return uint64_t{7}; }, [] { return int64_t{0}; }}};
  AlarmPolicyStub policy_;
  properties::AlarmChecks checks_;
};

// SCH-01 is judged at every commit that reconciled, not only at quiescence: a reconcile that found
// nothing pending and kept a visible alarm breaks it (SCH-02 says nothing without a next).
TEST(AlarmChecksStream, AnAlarmKeptWithNothingPendingViolatesSch01AtTheCommit) {
  StreamRig rig;
  rig.record("sch.reconcile", 1000, {{"now", 1000}, {"next", nullptr}, {"before", 6000}, {"written", nullptr}, {"deleted", false}, {"min_delay", 5000}});
  rig.record("commit", 1000, {{"commit", 1}, {"alarm", 6000}});
  EXPECT_EQ(rig.violations("SCH-01"), 1u);
  EXPECT_EQ(rig.violations("SCH-02"), 0u);
}

// ALM-03 compares a write with the row just before it: a success delete of generation A that
// removed generation B's row matched something it must not, though no row of A is left after it.
TEST(AlarmChecksStream, ADeleteThatRemovedAnotherGenerationViolatesAlm03) {
  StreamRig rig;
  rig.sql("INSERT INTO durability_alarms VALUES ('self.0', 'B', 'pending', 5000, 5000, 0, NULL, NULL, 1000)");
  rig.record("sch.alarm.start", 1000, {{"platform", true}});
  rig.sql("DELETE FROM durability_alarms WHERE name = 'self.0'");
  rig.record("alm.write", 1001, {{"name", "self.0"}, {"generation", "A"}, {"attempt", 1}, {"write", "delete"}, {"matched", true}});
  EXPECT_EQ(rig.violations("ALM-03"), 1u);
}

// SCH-14 bounds how late a due row is taken up after heal: a row due at 10,000 must see a pass by
// max(due, heal + alarm.late) + alarmMinDelayMs + alarmHandoffMs + clock offset = 96,500. A pass at
// 150,000 that then runs it leaves nothing overdue at the end, so only the bound rejects it.
TEST(AlarmChecksStream, ARowTakenUpAfterTheBoundViolatesSch14) {
  for (const int64_t passAt : {90'000, 150'000}) {
    StreamRig rig;
    rig.sql("INSERT INTO durability_alarms VALUES ('ok.0', 'A', 'pending', 10000, 10000, 0, NULL, NULL, 500)");
    rig.record("sch.alarm.start", 500, {{"platform", true}});
    rig.checks().healed(1000, {5000, 30000});
    rig.record("sch.alarm.start", passAt, {{"platform", true}});
    rig.sql("DELETE FROM durability_alarms");
    rig.record("commit", passAt + 1, {{"commit", 1}, {"alarm", nullptr}});
    rig.checks().finish({{"AlarmApp/a", std::nullopt}}, 200'000, 5000);
    EXPECT_EQ(rig.violations("SCH-14"), passAt > 96'500 ? 1u : 0u) << passAt;
  }
}

// ALM-14 at the end judges what is due: an application that re-arms a periodic alarm from its
// handler (the log partition's retention sweep, in the mixed workload) always has its next
// occurrence pending, due later than the end; a row already due at the end is still a violation.
TEST(AlarmChecksStream, OnlyAPendingRowAlreadyDueAtTheEndViolatesAlm14) {
  StreamRig rig;
  rig.sql("INSERT INTO durability_alarms VALUES ('retention', 'A', 'pending', 230000, 230000, 0, NULL, NULL, 190000)");
  rig.sql("INSERT INTO durability_alarms VALUES ('stuck.0', 'B', 'pending', 150000, 150000, 0, NULL, NULL, 500)");
  rig.checks().healed(1000, {5000, 30000});
  rig.checks().finish({{"AlarmApp/a", 150000}}, 200'000, 5000);
  EXPECT_EQ(rig.violations("ALM-14"), 1u);
  EXPECT_EQ(rig.checks().tallies().by_id().at("ALM-14").checked, 2u);
  EXPECT_NE(rig.checks().tallies().by_id().at("ALM-14").examples.at(0).find("stuck.0"), std::string::npos);
}

// SCH-02 at a commit holds the reconcile's next against the earliest due time of the pending rows
// as stored, over every participant table: a failed alarm row does not count, a row turned pending
// does, and an outbox due time stored as text (which SQLite's MIN orders after every number) leaves
// the earliest to the numbers.
TEST(AlarmChecksStream, TheNextOfAReconcileIsTheEarliestPendingDueTimeAsStored) {
  StreamRig rig;
  int64_t commit = 0;
  // Whether a reconcile that computed `next` (and wrote the alarm there) is held to be wrong.
  const auto rejected = [&](int64_t next) {
    const uint64_t before = rig.violations("SCH-02");
    rig.record("sch.reconcile", 1000, {{"now", 1000}, {"next", next}, {"before", nullptr}, {"written", next}, {"deleted", false}, {"min_delay", 0}});
    rig.record("commit", 1000, {{"commit", ++commit}, {"alarm", next}});
    return rig.violations("SCH-02") > before;
  };
  rig.sql("INSERT INTO durability_alarms VALUES ('a', 'A', 'pending', 7000, 7000, 0, NULL, NULL, 0)");
  rig.sql("INSERT INTO durability_alarms VALUES ('b', 'B', 'failed', 3000, 3000, 1, 'x', 'Error', 0)");
  EXPECT_FALSE(rejected(7000));
  EXPECT_TRUE(rejected(3000)) << "a failed row is not pending";
  rig.sql("UPDATE durability_alarms SET status = 'pending' WHERE name = 'b'");
  EXPECT_FALSE(rejected(3000)) << "the row turned pending is the earliest";
  rig.sql("DELETE FROM durability_alarms WHERE name = 'b'");
  rig.sql("CREATE TABLE " DURASIM_OUTBOX " (id INTEGER PRIMARY KEY, next_attempt_at)");
  rig.sql("INSERT INTO " DURASIM_OUTBOX " VALUES (1, 'soon'), (2, 6500)");
  EXPECT_FALSE(rejected(6500)) << "text orders after every number";
  EXPECT_TRUE(rejected(7000));
  rig.sql("DELETE FROM " DURASIM_OUTBOX " WHERE id = 1");
  EXPECT_FALSE(rejected(6500));
  EXPECT_TRUE(rejected(7000));
}

}  // namespace
}  // namespace durasim
