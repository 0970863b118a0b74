// The read-only store view (sim/store_view.h): it reads an object's live state (the open implicit
// transaction included) and, separately, its durable state; it refuses every statement that could
// write; an unknown object reads as an empty store and is not created; reading changes nothing a
// run can see (no choice drawn, nothing scheduled, the trace hash unchanged).
#include <gtest/gtest.h>

#include <memory>
#include <string>

#include "sim/sqlite_store.h"
#include "sim/store_view.h"
#include "tests/runtime_test_harness.h"

namespace durasim::rt_test {
namespace {

constexpr const char* kClass = "Kv";
constexpr const char* kLabel = "Kv/a";

// Writes a row, then keeps the writing coroutine suspended (its commit unconfirmed) for `hold` ms.
class Kv final : public DurableObject {
 public:
  explicit Kv(ObjectContext& ctx) : ctx_(ctx) { ctx_.storage.exec("CREATE TABLE IF NOT EXISTS kv (k TEXT PRIMARY KEY, v INTEGER)"); }
  Task<json> call(std::string_view method, const json& args) override {
    if (method == "put") {
      ctx_.storage.exec("INSERT OR REPLACE INTO kv (k, v) VALUES (?, ?)", args.at("k").get<std::string>(), args.at("v").get<int64_t>());
      ctx_.storage.setAlarm(ctx_.clock.now() + 100'000);
    }
    co_return true;
  }
  bool hasAlarmHandler() const override { return true; }

 private:
  ObjectContext& ctx_;
};

struct ViewRig : Rig {
  ViewRig() {
    runtime.define_class(kClass, [](ObjectContext& ctx) { return std::make_unique<Kv>(ctx); });
  }
  const sim::StoreView& view() { return world.stores(); }
  int64_t rows(bool durable) {
    const std::string sql = "SELECT count(*) AS n FROM kv";
    return (durable ? view().durable(kLabel, sql) : view().live(kLabel, sql)).one().int64("n");
  }
};

TEST(StoreView, AnUnknownObjectReadsAsAnEmptyStoreAndIsNotCreated) {
  ViewRig rig;
  EXPECT_FALSE(rig.view().contains(kLabel));
  EXPECT_FALSE(rig.view().has_table(kLabel, "kv"));
  EXPECT_EQ(rig.view().live(kLabel, "SELECT count(*) AS n FROM sqlite_master WHERE name = 'kv'").one().int64("n"), 0);
  EXPECT_FALSE(rig.view().live_alarm(kLabel).has_value());
  EXPECT_THROW(rig.view().live(kLabel, "SELECT * FROM kv"), SqlError) << "a missing table is an error, as in an empty store";
  EXPECT_TRUE(rig.runtime.status().empty()) << "reading never creates the object";
  EXPECT_TRUE(rig.view().labels().empty());
}

// Reads go to the store registered under the label now: not to one removed since, nor to the one
// a label was registered with before (the view remembers the registration it found last).
TEST(StoreView, ReadsFollowTheRegistrationsAsTheyChange) {
  const sim::SqlEnvironment env{[] { return uint64_t{0}; }, [] { return int64_t{0}; }};
  sim::SqliteStore first(env), second(env);
  first.exec("CREATE TABLE a (x)");
  second.exec("CREATE TABLE b (x)");
  sim::StoreView view;
  view.add(kLabel, first);
  view.add("Kv/other", second);
  EXPECT_TRUE(view.has_table(kLabel, "a"));
  EXPECT_TRUE(view.has_table(kLabel, "a"));
  EXPECT_TRUE(view.has_table("Kv/other", "b"));
  EXPECT_TRUE(view.has_table(kLabel, "a"));
  view.remove(kLabel);
  EXPECT_FALSE(view.has_table(kLabel, "a")) << "a removed store reads as an empty one";
  view.add(kLabel, second);
  EXPECT_TRUE(view.has_table(kLabel, "b"));
  EXPECT_FALSE(view.has_table(kLabel, "a"));
  view.remove("Kv/other");
  EXPECT_FALSE(view.has_table("Kv/other", "b"));
  EXPECT_TRUE(view.has_table(kLabel, "b"));
}

TEST(StoreView, LiveIncludesUnconfirmedCommitsAndDurableOnlyConfirmedOnes) {
  ViewRig rig;
  rig.faults.set_latency(LatencyKind::confirm, 1'000);
  rig.call(kClass, "a", "put", {{"k", "x"}, {"v", 1}});
  rig.run_for(500);  // committed locally, not yet confirmed
  ASSERT_TRUE(rig.view().contains(kLabel));
  EXPECT_EQ(rig.rows(false), 1);
  EXPECT_TRUE(rig.view().has_table(kLabel, "kv")) << "the live schema includes unconfirmed commits";
  EXPECT_FALSE(rig.view().has_table(kLabel, "nope"));
  EXPECT_EQ(rig.view().durable(kLabel, "SELECT count(*) AS n FROM sqlite_master WHERE name = 'kv'").one().int64("n"), 0)
      << "the table's creation is not confirmed either";
  EXPECT_TRUE(rig.view().live_alarm(kLabel).has_value());
  EXPECT_FALSE(rig.view().durable_alarm(kLabel).has_value());
  rig.run_for(5'000);
  EXPECT_EQ(rig.rows(true), 1);
  EXPECT_EQ(rig.view().durable_alarm(kLabel), rig.view().live_alarm(kLabel));
}

TEST(StoreView, EveryStatementThatCouldWriteIsRefused) {
  ViewRig rig;
  rig.call(kClass, "a", "put", {{"k", "x"}, {"v", 1}});
  rig.run_for(5'000);
  for (const char* sql : {"INSERT INTO kv (k, v) VALUES ('y', 2)", "DELETE FROM kv", "UPDATE kv SET v = 3",
                          "CREATE TABLE t (a)", "DROP TABLE kv", "PRAGMA user_version = 3"}) {
    EXPECT_THROW(rig.view().live(kLabel, sql), SqlError) << sql;
    EXPECT_THROW(rig.view().durable(kLabel, sql), SqlError) << sql;
  }
  EXPECT_THROW(rig.view().live(kLabel, "SELECT * FROM _cf_alarm"), SqlError) << "the runtime's own table stays hidden";
  EXPECT_THROW(rig.view().live(kLabel, "SELECT 1; DELETE FROM kv"), SqlError) << "one statement at a time";
  EXPECT_EQ(rig.rows(false), 1);
  EXPECT_EQ(rig.view().live(kLabel, "SELECT v FROM kv WHERE k = ?", {std::string("x")}).one().int64("v"), 1);
}

TEST(StoreView, ReadingLeavesTheRunUnchanged) {
  const auto run = [](bool read) {
    ViewRig rig;
    for (int i = 0; i < 5; ++i) rig.call(kClass, "a", "put", {{"k", "k" + std::to_string(i)}, {"v", i}}, i * 10);
    for (int step = 0; step < 40; ++step) {
      rig.run_for(5);
      if (read && rig.view().contains(kLabel)) {
        rig.view().live(kLabel, "SELECT * FROM kv").toVector();
        rig.view().durable(kLabel, "SELECT * FROM kv").toVector();
      }
    }
    rig.run_for(200'000);
    return std::make_pair(rig.sink.events, rig.world.random().draws());
  };
  const auto without = run(false), with = run(true);
  EXPECT_EQ(without.second, with.second) << "no choice drawn by reading";
  EXPECT_EQ(without.first, with.first) << "the same events, in the same order";
}

}  // namespace
}  // namespace durasim::rt_test
