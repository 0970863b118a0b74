// Schema migrations (scheduler.md 8) on the simulated runtime's SQLite store: apply, idempotence,
// revert to none and restore, named targets, unknown targets, future migrations (<= 2 reverted, 3
// refused unchanged), step-4 atomicity, refreshed downs, independent capabilities (SCH-11, SCH-12),
// applied_at from the simulated clock, and the statement splitter the scripts run through.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/errors.h"
#include "engine/migrations.h"
#include "tests/runtime_test_harness.h"

namespace durasim::rt_test {
namespace {

constexpr const char* kClass = "Migrating";
constexpr const char* kApp = "app";
constexpr int64_t kAlarmDelay = 3'600'000;  // far beyond every run of these tests

using Step = std::function<json(ObjectContext&)>;

// Runs the step the test registered under the called method's name, inside the call body.
class StepObject final : public DurableObject {
 public:
  StepObject(ObjectContext& ctx, std::map<std::string, Step>* steps) : ctx_(ctx), steps_(steps) {}
  bool hasAlarmHandler() const override { return true; }
  Task<json> call(std::string_view method, const json&) override { co_return steps_->at(std::string(method))(ctx_); }

 private:
  ObjectContext& ctx_;
  std::map<std::string, Step>* steps_;
};

json toJson(const MigrationResult& r) { return json{{"applied", r.applied}, {"rolledBack", r.rolledBack}}; }

// migrate inside an object; a MigrationError or SqlError comes back as {"error": name, "message": what}.
json migrateStep(ObjectContext& ctx, const std::string& capability, const std::vector<Migration>& list,
                 const MigrationTarget& target) {
  try {
    return toJson(migrate(ctx.storage, capability, list, target));
  } catch (const MigrationError& e) {
    return json{{"error", e.name()}, {"message", e.what()}};
  } catch (const SqlError& e) {
    return json{{"error", e.name()}, {"message", e.what()}};
  }
}

struct MigrateRig : Rig {
  MigrateRig() {
    runtime.define_class(kClass, [this](ObjectContext& ctx) { return std::make_unique<StepObject>(ctx, &steps); });
  }

  // Runs `step` in the object, called `delay` ms from now, and waits until its writes are confirmed.
  json run(Step step, SimTime delay = 0) {
    const std::string method = "step" + std::to_string(steps.size() + 1);
    steps.emplace(method, std::move(step));
    CallPtr result = call(kClass, "a", method, json::object(), delay);
    run_for(delay + 10'000);
    EXPECT_TRUE(result->ok) << result->error;
    return result->value;
  }
  json migrate(const std::string& capability, const std::vector<Migration>& list, MigrationTarget target) {
    return run([=](ObjectContext& ctx) { return migrateStep(ctx, capability, list, target); });
  }
  json migrate(const std::vector<Migration>& list, MigrationTarget target = MigrationTarget::latest()) {
    return migrate(kApp, list, std::move(target));
  }

  json query(const std::string& sql) { return rows_json(runtime.world().stores().live(durasim::sim::object_label(kClass, "a"), sql)); }
  // Every schema object the application can see (sqlite_sequence included, the runtime's own not).
  json schema() { return query("SELECT type, name, sql FROM sqlite_master WHERE name NOT GLOB '_cf_*' ORDER BY type, name"); }
  std::vector<std::string> tables() {
    std::vector<std::string> names;
    for (const json& row : query("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT GLOB '_cf_*' "
                                 "AND name != 'sqlite_sequence' ORDER BY name"))
      names.push_back(row.at("name"));
    return names;
  }
  bool hasHistoryTable() {
    for (const std::string& t : tables())
      if (t == kMigrationTable) return true;
    return false;
  }
  json history() {
    if (!hasHistoryTable()) return json::array();
    return query("SELECT id, name, applied_at, capability, down FROM durability_migrations ORDER BY id");
  }
  std::vector<std::string> historyNames(const std::string& capability = kApp) {
    std::vector<std::string> names;
    for (const json& row : history())
      if (row.at("capability") == capability) names.push_back(row.at("name"));
    return names;
  }

  std::map<std::string, Step> steps;
};

const Migration m1{"app_0001_create_a", "CREATE TABLE a (id INTEGER PRIMARY KEY, v TEXT);\nCREATE INDEX a_v ON a (v);",
                   "DROP INDEX IF EXISTS a_v; DROP TABLE IF EXISTS a;"};
const Migration m2{"app_0002_create_b", "CREATE TABLE b (id INTEGER PRIMARY KEY); INSERT INTO b (id) VALUES (1);",
                   "DROP TABLE IF EXISTS b"};
const Migration m3{"app_0003_create_c",
                   "CREATE TABLE c (note TEXT DEFAULT 'a;b'); -- a comment; with a semicolon\n"
                   "INSERT INTO c (note) VALUES ('it''s; quoted');",
                   "/* drop; it */ DROP TABLE IF EXISTS c;"};
const Migration m4{"app_0004_create_d", "CREATE TABLE d (x)", "DROP TABLE IF EXISTS d"};
const std::vector<Migration> kAll = {m1, m2, m3};

json result(std::vector<std::string> applied, std::vector<std::string> rolledBack) {
  return json{{"applied", applied}, {"rolledBack", rolledBack}};
}

// ---------------------------------------------------------------------------------------------
// Applying and reverting

TEST(Migrations, LatestAppliesEveryMigrationInOrderAndRecordsItsHistory) {
  MigrateRig rig;
  const json out = rig.run([](ObjectContext& ctx) {
    ctx.storage.setAlarm(ctx.clock.now() + kAlarmDelay);
    const int64_t now = ctx.clock.now();
    json r = toJson(migrate(ctx.storage, kApp, kAll, MigrationTarget::latest()));
    r["now"] = now;
    r["alarm"] = *ctx.storage.getAlarm();
    r["notes"] = ctx.storage.exec("SELECT note FROM c").one().text("note");
    return r;
  });
  EXPECT_EQ(out.at("applied"), json({m1.name, m2.name, m3.name}));
  EXPECT_EQ(out.at("rolledBack"), json::array());
  EXPECT_EQ(out.at("notes"), "it's; quoted");
  EXPECT_EQ(out.at("alarm"), out.at("now").get<int64_t>() + kAlarmDelay) << "migrate never touches the alarm";
  EXPECT_EQ(rig.tables(), (std::vector<std::string>{"a", "b", "c", "durability_migrations"}));
  const json history = rig.history();
  ASSERT_EQ(history.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(history[i].at("name"), kAll[i].name);
    EXPECT_EQ(history[i].at("capability"), kApp);
    EXPECT_EQ(history[i].at("down"), kAll[i].down);
    // applied_at is the simulated time, read by SQL through the runtime's clock (millisecond precision).
    EXPECT_EQ(history[i].at("applied_at"), out.at("now"));
  }
  EXPECT_GT(out.at("now").get<int64_t>(), kStart);
}

TEST(Migrations, AppliedAtFollowsTheSimulatedClock) {
  MigrateRig rig;
  rig.migrate({m1});
  const json now = rig.run(
      [](ObjectContext& ctx) {
        migrate(ctx.storage, kApp, {m1, m2}, MigrationTarget::latest());
        return json(ctx.clock.now());
      },
      123'457);
  const json history = rig.history();
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[1].at("applied_at"), now);
  EXPECT_GE(history[1].at("applied_at").get<int64_t>() - history[0].at("applied_at").get<int64_t>(), 123'457);
}

TEST(Migrations, ASecondLatestAppliesNothingAndChangesNothing) {
  MigrateRig rig;
  rig.migrate(kAll);
  const json schema = rig.schema(), history = rig.history();
  EXPECT_EQ(rig.migrate(kAll), result({}, {}));
  EXPECT_EQ(rig.schema(), schema);
  EXPECT_EQ(rig.history(), history);
}

TEST(Migrations, NoneRevertsNewestFirstAndDropsTheHistoryTable) {
  MigrateRig rig;
  rig.migrate(kAll);
  EXPECT_EQ(rig.migrate(kAll, MigrationTarget::none()), result({}, {m3.name, m2.name, m1.name}));
  EXPECT_TRUE(rig.tables().empty()) << json(rig.tables()).dump();
  EXPECT_FALSE(rig.hasHistoryTable());
  // Only SQLite's sqlite_sequence (created with the AUTOINCREMENT history table, never droppable) remains.
  EXPECT_EQ(rig.schema().size(), 1u) << rig.schema().dump();
}

TEST(Migrations, NoneOnAnEmptyStoreLeavesNoHistoryTable) {
  MigrateRig rig;
  EXPECT_EQ(rig.migrate(kAll, MigrationTarget::none()), result({}, {}));
  EXPECT_TRUE(rig.tables().empty());
}

TEST(Migrations, NoneThenLatestRestoresTheFullSchema) {
  MigrateRig rig;
  rig.migrate(kAll);
  const json schema = rig.schema();
  rig.migrate(kAll, MigrationTarget::none());
  EXPECT_EQ(rig.migrate(kAll), result({m1.name, m2.name, m3.name}, {}));
  EXPECT_EQ(rig.schema(), schema);
  EXPECT_EQ(rig.historyNames(), (std::vector<std::string>{m1.name, m2.name, m3.name}));
}

TEST(Migrations, ANamedTargetAppliesOrRevertsUpToIt) {
  MigrateRig rig;
  EXPECT_EQ(rig.migrate(kAll, MigrationTarget::named(m2.name)), result({m1.name, m2.name}, {}));
  EXPECT_EQ(rig.tables(), (std::vector<std::string>{"a", "b", "durability_migrations"}));
  EXPECT_EQ(rig.migrate(kAll), result({m3.name}, {}));
  EXPECT_EQ(rig.migrate(kAll, MigrationTarget::named(m1.name)), result({}, {m3.name, m2.name}));
  EXPECT_EQ(rig.tables(), (std::vector<std::string>{"a", "durability_migrations"}));
  EXPECT_EQ(rig.historyNames(), (std::vector<std::string>{m1.name}));
  EXPECT_EQ(rig.migrate(kAll, MigrationTarget::named(m1.name)), result({}, {}));
}

TEST(Migrations, AnUnknownTargetThrowsAndChangesNothing) {
  MigrateRig rig;
  const json expected = {{"error", "MigrationError"}, {"message", "Unknown durability migration target"}};
  EXPECT_EQ(rig.migrate(kAll, MigrationTarget::named("app_9999_missing")), expected);
  EXPECT_TRUE(rig.schema().empty()) << "not even the history table";
  rig.migrate({m1});
  const json schema = rig.schema(), history = rig.history();
  EXPECT_EQ(rig.migrate(kAll, MigrationTarget::named("app_9999_missing")), expected);
  EXPECT_EQ(rig.schema(), schema);
  EXPECT_EQ(rig.history(), history);
}

// ---------------------------------------------------------------------------------------------
// Future migrations (a newer version's history)

TEST(Migrations, OneFutureMigrationIsRevertedWithItsStoredDown) {
  MigrateRig rig;
  rig.migrate(kAll);
  EXPECT_EQ(rig.migrate({m1, m2}), result({}, {m3.name}));
  EXPECT_EQ(rig.tables(), (std::vector<std::string>{"a", "b", "durability_migrations"}));
  EXPECT_EQ(rig.historyNames(), (std::vector<std::string>{m1.name, m2.name}));
}

TEST(Migrations, TwoFutureMigrationsAreRevertedNewestFirstBeforeTheTargetStep) {
  MigrateRig rig;
  rig.migrate(kAll);
  EXPECT_EQ(rig.migrate({m1}), result({}, {m3.name, m2.name}));
  EXPECT_EQ(rig.tables(), (std::vector<std::string>{"a", "durability_migrations"}));
  rig.migrate(kAll);
  // Future reverts come first in rolledBack, then the reverts of step 4.
  EXPECT_EQ(rig.migrate({m1}, MigrationTarget::none()), result({}, {m3.name, m2.name, m1.name}));
  EXPECT_TRUE(rig.tables().empty());
}

TEST(Migrations, ThreeFutureMigrationsAreRefusedWithNoChange) {
  MigrateRig rig;
  rig.migrate({m1, m2, m3, m4});
  const json schema = rig.schema(), history = rig.history();
  EXPECT_EQ(rig.migrate({m1}),
            (json{{"error", "MigrationError"},
                  {"message", "Durability history has 3 unknown migrations for app; refusing to revert more than 2"}}));
  EXPECT_EQ(rig.schema(), schema);
  EXPECT_EQ(rig.history(), history);
}

// ---------------------------------------------------------------------------------------------
// Atomicity and stored downs

TEST(Migrations, AFailingUpLeavesSchemaAndHistoryExactlyUnchanged) {
  MigrateRig rig;
  rig.migrate({m1});
  const json schema = rig.schema(), history = rig.history();
  const Migration bad{"app_0003_bad", "CREATE TABLE e (x); INSERT INTO nowhere VALUES (1)", "DROP TABLE IF EXISTS e"};
  Migration m1Refreshed = m1;
  m1Refreshed.down = "DROP TABLE IF EXISTS a";  // its refresh would also be part of the failed step
  const json out = rig.migrate({m1Refreshed, m2, bad});
  EXPECT_EQ(out.at("error"), "SqlError");
  EXPECT_NE(out.at("message").get<std::string>().find("no such table: nowhere"), std::string::npos) << out.dump();
  EXPECT_EQ(rig.schema(), schema);
  EXPECT_EQ(rig.history(), history);
}

TEST(Migrations, AFailingFirstMigrationLeavesNoHistoryTable) {
  MigrateRig rig;
  const Migration bad{"app_0001_bad", "CREATE TABLE e (x); CREATE TABLE e (y)", "DROP TABLE IF EXISTS e"};
  EXPECT_EQ(rig.migrate({bad}).at("error"), "SqlError");
  EXPECT_TRUE(rig.tables().empty()) << json(rig.tables()).dump();
}

TEST(Migrations, AChangedDownIsStoredAndUsedForTheNextRevert) {
  MigrateRig rig;
  rig.migrate({m1, m2});
  Migration m2Changed = m2;
  m2Changed.down = "DROP TABLE IF EXISTS b; CREATE TABLE b_reverted (x)";
  EXPECT_EQ(rig.migrate({m1, m2Changed}), result({}, {}));
  const json history = rig.history();
  ASSERT_EQ(history.size(), 2u);
  EXPECT_EQ(history[0].at("down"), m1.down);
  EXPECT_EQ(history[1].at("down"), m2Changed.down);
  // A later revert runs the stored down, even when the list passed then holds another one.
  EXPECT_EQ(rig.migrate({m1, m2}, MigrationTarget::named(m1.name)), result({}, {m2.name}));
  EXPECT_EQ(rig.tables(), (std::vector<std::string>{"a", "b_reverted", "durability_migrations"}));
}

TEST(Migrations, CapabilitiesInOneStoreMigrateIndependently) {
  MigrateRig rig;
  const Migration o1{"other_0001_create_o", "CREATE TABLE o (id INTEGER PRIMARY KEY)", "DROP TABLE IF EXISTS o"};
  rig.migrate({m1, m2});
  EXPECT_EQ(rig.migrate("other", {o1}, MigrationTarget::latest()), result({o1.name}, {}));
  // Neither capability counts the other's rows as future migrations.
  EXPECT_EQ(rig.migrate({m1, m2}), result({}, {}));
  EXPECT_EQ(rig.migrate("other", {o1}, MigrationTarget::latest()), result({}, {}));

  EXPECT_EQ(rig.migrate({m1, m2}, MigrationTarget::none()), result({}, {m2.name, m1.name}));
  EXPECT_EQ(rig.tables(), (std::vector<std::string>{"durability_migrations", "o"})) << "kept while other has rows";
  EXPECT_EQ(rig.historyNames("other"), (std::vector<std::string>{o1.name}));
  EXPECT_EQ(rig.migrate("other", {o1}, MigrationTarget::none()), result({}, {o1.name}));
  EXPECT_TRUE(rig.tables().empty());
}

TEST(Migrations, TriggerBodiesRunAsOneStatement) {
  MigrateRig rig;
  const Migration trig{"app_0002_audit",
                       "CREATE TABLE audit (v TEXT);\n"
                       "CREATE TRIGGER a_audit AFTER INSERT ON a BEGIN\n"
                       "  INSERT INTO audit (v) VALUES (NEW.v);\n"
                       "  INSERT INTO audit (v) VALUES (CASE WHEN NEW.v = 'x' THEN 'was x' ELSE 'other' END);\n"
                       "END;\n"
                       "CREATE INDEX audit_v ON audit (v);",
                       "DROP TRIGGER IF EXISTS a_audit; DROP TABLE IF EXISTS audit;"};
  EXPECT_EQ(rig.migrate({m1, trig}), result({m1.name, trig.name}, {}));
  const json audit = rig.run([](ObjectContext& ctx) {
    ctx.storage.exec("INSERT INTO a (v) VALUES ('x')");
    json rows = json::array();
    for (const SqlRow& row : ctx.storage.exec("SELECT v FROM audit ORDER BY rowid").toVector()) rows.push_back(row.text("v"));
    return rows;
  });
  EXPECT_EQ(audit, json({"x", "was x"}));
  EXPECT_EQ(rig.migrate({m1, trig}, MigrationTarget::none()), result({}, {trig.name, m1.name}));
  EXPECT_TRUE(rig.tables().empty());
}

// ---------------------------------------------------------------------------------------------
// The statement splitter

TEST(SplitSqlStatements, SplitsOnSemicolonsOutsideQuotesCommentsAndTriggerBodies) {
  using V = std::vector<std::string>;
  EXPECT_EQ(splitSqlStatements("SELECT 1; SELECT 2;"), (V{"SELECT 1", "SELECT 2"}));
  EXPECT_EQ(splitSqlStatements("  SELECT 1  "), (V{"SELECT 1"}));
  EXPECT_EQ(splitSqlStatements(""), V{});
  EXPECT_EQ(splitSqlStatements(" ; ;\n -- only a comment;\n /* and; another */ ;"), V{});
  EXPECT_EQ(splitSqlStatements("SELECT 'a;b', \"c;d\", `e;f`, [g;h]; SELECT 'it''s;'"),
            (V{"SELECT 'a;b', \"c;d\", `e;f`, [g;h]", "SELECT 'it''s;'"}));
  EXPECT_EQ(splitSqlStatements("SELECT 1 -- x; y\n; SELECT /* ; */ 2"), (V{"SELECT 1 -- x; y", "SELECT /* ; */ 2"}));
  EXPECT_EQ(splitSqlStatements("SELECT 1 - -1; SELECT 2/1"), (V{"SELECT 1 - -1", "SELECT 2/1"}));
  EXPECT_EQ(splitSqlStatements("SELECT 'unterminated; still one"), (V{"SELECT 'unterminated; still one"}));

  const std::string trigger =
      "create temp trigger t after insert on a begin insert into b values (1); "
      "select case when 1 then 2 end; end";
  EXPECT_EQ(splitSqlStatements(trigger + "; SELECT 3"), (V{trigger, "SELECT 3"}));
  // A table named like a keyword is not a trigger.
  EXPECT_EQ(splitSqlStatements("CREATE TABLE [trigger] (x); SELECT 1"), (V{"CREATE TABLE [trigger] (x)", "SELECT 1"}));
  EXPECT_EQ(splitSqlStatements("DROP TRIGGER IF EXISTS t; SELECT end_x FROM y"),
            (V{"DROP TRIGGER IF EXISTS t", "SELECT end_x FROM y"}));
}

}  // namespace
}  // namespace durasim::rt_test
