// Storage of the simulated runtime as objects see it (runtime.md 4): implicit transactions per
// segment, transactionSync rollback, statement vs critical errors (RT-26), durability waits, in-order
// confirmation, commit failures, and the durability decision keeping a prefix (RT-05..07, property).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/runtime_test_harness.h"

namespace durasim::rt_test {
namespace {

constexpr const char* kClass = "Store";
constexpr const char* kLabel = "Store/a";

// One write as the object made it: which incarnation, which segment of the run, which call.
struct Write {
  int64_t incarnation;
  int64_t id;
  int64_t segment;
  int64_t call;
};

struct Journal {
  ScriptedFaults* faults = nullptr;
  std::vector<std::string> lines;
  std::vector<Write> writes;
  int64_t next_id = 1;   // unique across incarnations
  int64_t segment = 0;   // bumped wherever an object coroutine ends a segment
};

class StoreObject final : public DurableObject {
 public:
  StoreObject(ObjectContext& ctx, Journal* journal) : ctx_(ctx), j_(journal) {
    ctx_.storage.exec("CREATE TABLE IF NOT EXISTS w (id INTEGER PRIMARY KEY, tag TEXT)");
  }
  bool hasAlarmHandler() const override { return true; }

  Task<json> call(std::string_view method, const json& args) override {
    if (method == "warm") co_return true;
    if (method == "write2_then_sleep") {
      insert(1);
      insert(2);
      const int64_t seen = count();  // reads see the segment's own uncommitted writes
      co_await ctx_.clock.sleepFor(100);
      insert(3);
      co_return seen;
    }
    if (method == "txn_throw") co_return txn_throw();
    if (method == "bad_sql") co_return bad_sql();
    if (method == "injected_statement_error") {
      j_->faults->arm(FaultKind::storage_statement_error);
      std::string message;
      try {
        insert(7);
      } catch (const SqlError& e) {
        message = e.what();
      }
      insert(8);
      co_return json{{"message", message}, {"rows", count()}};
    }
    if (method == "critical") co_return co_await critical();
    if (method == "sync_elapsed") {
      insert(args.at("id").get<int64_t>());
      const int64_t t0 = ctx_.clock.now();
      j_->lines.push_back("sync start");
      co_await ctx_.storage.sync();
      j_->lines.push_back("sync end");
      co_return ctx_.clock.now() - t0;
    }
    if (method == "transaction_elapsed") {
      const int64_t t0 = ctx_.clock.now();
      const int64_t rows = co_await ctx_.storage.transaction([](StorageTxn& txn) {
        txn.exec("INSERT INTO w (id, tag) VALUES (?, 'txn')", int64_t{500});
        return txn.exec("SELECT COUNT(*) AS n FROM w").one().int64("n");
      });
      co_return json{{"elapsed", ctx_.clock.now() - t0}, {"rows", rows}};
    }
    if (method == "sync_nothing") {
      const int64_t t0 = ctx_.clock.now();
      co_await ctx_.storage.sync();
      co_return ctx_.clock.now() - t0;
    }
    if (method == "other") {
      j_->lines.push_back("other");
      co_return true;
    }
    if (method == "insert") {
      insert(args.at("id").get<int64_t>());
      co_return true;
    }
    if (method == "write_then_throw") {
      insert(args.at("id").get<int64_t>());
      throw std::runtime_error("handler failed after writing");
    }
    if (method == "delete_all") co_return delete_all();
    if (method == "commit_failure") co_return co_await commit_failure(args.at("kind").get<std::string>());
    if (method == "steps") co_return co_await steps(args);
    throw std::invalid_argument("unknown method");
  }

  Task<void> alarm(const AlarmInvocationInfo&) override { co_return; }

 private:
  void insert(int64_t id) { ctx_.storage.exec("INSERT INTO w (id, tag) VALUES (?, 'x')", id); }
  int64_t count() { return ctx_.storage.exec("SELECT COUNT(*) AS n FROM w").one().int64("n"); }

  json txn_throw() {
    const int64_t x = ctx_.clock.now() + 50'000, y = ctx_.clock.now() + 90'000;
    ctx_.storage.setAlarm(x);
    std::string caught;
    try {
      ctx_.storage.transactionSync([&](StorageTxn& txn) {
        txn.exec("INSERT INTO w (id, tag) VALUES (100, 'in txn')");
        txn.setAlarm(y);
        throw std::runtime_error("body failed");
      });
    } catch (const std::runtime_error& e) {
      caught = e.what();
    }
    // A nested savepoint that throws inside a successful one rolls back only itself.
    ctx_.storage.transactionSync([&](StorageTxn& txn) {
      txn.exec("INSERT INTO w (id, tag) VALUES (101, 'outer')");
      try {
        ctx_.storage.transactionSync([&](StorageTxn& inner) {
          inner.exec("INSERT INTO w (id, tag) VALUES (102, 'inner')");
          throw std::runtime_error("inner failed");
        });
      } catch (const std::runtime_error&) {
      }
    });
    return json{{"caught", caught}, {"alarm", *ctx_.storage.getAlarm()}, {"x", x}, {"rows", count()},
                {"has101", ctx_.storage.exec("SELECT id FROM w WHERE id = 101").toVector().size()},
                {"has102", ctx_.storage.exec("SELECT id FROM w WHERE id = 102").toVector().size()}};
  }

  json bad_sql() {
    insert(1);
    std::string message, name;
    try {
      ctx_.storage.exec("SELEC nonsense FROM nowhere");
    } catch (const SqlError& e) {
      message = e.what();
      name = e.name();
    }
    std::string constraint;
    try {
      insert(1);  // duplicate primary key: a constraint error, also a statement error
    } catch (const SqlError& e) {
      constraint = e.what();
    }
    insert(2);
    return json{{"message", message}, {"name", name}, {"constraint", constraint}, {"rows", count()}};
  }

  json delete_all() {
    ctx_.storage.setAlarm(ctx_.clock.now() + 60'000);
    std::string inside;
    try {
      ctx_.storage.transactionSync([&](StorageTxn&) { ctx_.storage.deleteAll(); });
    } catch (const TypeError& e) {
      inside = e.name() + ": " + e.what();
    }
    const int64_t before = count();
    ctx_.storage.deleteAll();
    const auto tables = ctx_.storage.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT GLOB '_cf_*'").toVector();
    return json{{"inside", inside}, {"before", before}, {"tables", tables.size()}, {"alarm", ctx_.storage.getAlarm().has_value()}};
  }

  Task<json> critical() {
    insert(10);
    j_->faults->arm(FaultKind::storage_critical);
    std::string first, second, third;
    try {
      insert(11);
    } catch (const SqlCriticalError& e) {
      first = e.what();
    }
    try {
      count();
    } catch (const SqlCriticalError& e) {
      second = e.what();
    }
    try {
      ctx_.storage.setAlarm(ctx_.clock.now() + 1'000);
    } catch (const SqlCriticalError& e) {
      third = e.what();
    }
    j_->lines.push_back("critical: " + first + " | " + second + " | " + third);
    co_await ctx_.clock.sleepFor(10);  // the reset happens here
    j_->lines.push_back("after the suspension");
    co_return true;
  }

  Task<json> commit_failure(std::string kind) {
    insert(20);
    j_->faults->arm(kind == "definite" ? FaultKind::storage_commit_definite : FaultKind::storage_commit_uncertain);
    try {
      co_await ctx_.storage.sync();
      j_->lines.push_back("sync returned");
    } catch (const StorageCommitError& e) {
      j_->lines.push_back(std::string("waiter: ") + e.what() + " / " +
                          (e.outcome() == StorageCommitError::Outcome::definite ? "definite" : "uncertain"));
    }
    try {
      insert(21);
    } catch (const std::exception& e) {
      j_->lines.push_back(std::string("after: ") + e.what());
    }
    co_await ctx_.clock.sleepFor(10);
    j_->lines.push_back("after the suspension");
    co_return true;
  }

  // A scripted call for the prefix property: a negative step writes a fresh row, a step >= 0 sleeps.
  Task<json> steps(json args) {
    const int64_t call = args.at("call").get<int64_t>();
    ++j_->segment;  // a call starts a segment of its own
    for (const json& step : args.at("steps")) {
      const int64_t s = step.get<int64_t>();
      if (s < 0) {
        const int64_t id = j_->next_id++;
        insert(id);
        j_->writes.push_back(Write{ctx_.incarnation, id, j_->segment, call});
      } else {
        ++j_->segment;
        co_await ctx_.clock.sleepFor(s);
        ++j_->segment;
      }
    }
    ++j_->segment;
    co_return true;
  }

  ObjectContext& ctx_;
  Journal* j_;
};

struct StoreRig : Rig {
  explicit StoreRig(uint64_t seed = 1) : Rig(seed) {
    journal.faults = &faults;
    Journal* j = &journal;
    runtime.define_class(kClass, [j](ObjectContext& ctx) { return std::make_unique<StoreObject>(ctx, j); });
  }
  CallPtr call(const std::string& method, json args = json::object(), SimTime delay = 0) {
    return Rig::call(kClass, "a", method, std::move(args), delay);
  }
  std::vector<int64_t> rows() { return column(runtime, kClass, "a", "w", "id"); }
  bool has_line(const std::string& line) const {
    return std::find(journal.lines.begin(), journal.lines.end(), line) != journal.lines.end();
  }
  Journal journal;
};

// ---------------------------------------------------------------------------------------------
// Implicit transactions

TEST(StorageRuntime, WritesOfOneSegmentFormOneCommitAtTheSegmentEnd) {
  StoreRig rig;
  rig.call("warm");
  CallPtr call = rig.call("write2_then_sleep", json::object(), 100);
  rig.run_for(1'000);
  ASSERT_TRUE(call->ok) << call->error;
  EXPECT_EQ(call->value, 2);
  const std::vector<json> commits = rig.events("commit", kLabel);
  ASSERT_EQ(commits.size(), 3u);  // the constructor's table, {1, 2}, {3}
  EXPECT_EQ(commits[0].at("commit"), 1);
  EXPECT_EQ(commits[1].at("commit"), 2);
  EXPECT_EQ(commits[2].at("commit"), 3);
  const SimTime delivered = rig.sink.of("rpc.deliver").at(1).at("t").get<SimTime>();
  EXPECT_EQ(commits[1].at("t").get<SimTime>(), delivered);
  EXPECT_EQ(commits[2].at("t").get<SimTime>(), delivered + 100);
  EXPECT_EQ(rig.rows(), (std::vector<int64_t>{1, 2, 3}));
}

TEST(StorageRuntime, ASegmentsWritesSurviveACrashTogetherOrNotAtAll) {
  std::set<std::size_t> outcomes;
  for (uint64_t seed = 1; seed <= 24; ++seed) {
    StoreRig rig(seed);
    rig.faults.set_latency(LatencyKind::confirm, 50);
    rig.call("warm");
    // The reset is injected at the suspension that ends the {1, 2} segment, before its confirmation.
    CallPtr call = rig.call("write2_then_sleep", json::object(), 1'000);
    rig.run_for(999);
    rig.faults.arm(FaultKind::object_reset);
    rig.run_for(10'000);
    ASSERT_TRUE(call->done);
    EXPECT_FALSE(call->ok);
    EXPECT_TRUE(call->flags.durableObjectReset);
    const std::vector<int64_t> rows = rig.rows();
    EXPECT_TRUE(rows.empty() || rows == (std::vector<int64_t>{1, 2})) << "seed " << seed << ": " << json(rows).dump();
    outcomes.insert(rows.size());
  }
  EXPECT_EQ(outcomes, (std::set<std::size_t>{0, 2})) << "the durability decision should go both ways over the seeds";
}

TEST(StorageRuntime, AThrowingTransactionSyncRollsBackItsWritesAndAlarmWithoutReset) {
  StoreRig rig;
  CallPtr call = rig.call("txn_throw");
  CallPtr next = rig.call("other", json::object(), 100);
  rig.run_for(1'000);
  ASSERT_TRUE(call->ok) << call->error;
  EXPECT_EQ(call->value.at("caught"), "body failed");
  EXPECT_EQ(call->value.at("alarm"), call->value.at("x"));
  EXPECT_EQ(call->value.at("rows"), 1);  // only 101
  EXPECT_EQ(call->value.at("has101"), 1);
  EXPECT_EQ(call->value.at("has102"), 0);
  ASSERT_TRUE(next->ok);
  EXPECT_EQ(rig.sink.count("incarnation.end"), 0u);
  EXPECT_EQ(rig.status(kLabel)->incarnations, 1);
  EXPECT_EQ(rig.rows(), (std::vector<int64_t>{101}));
  EXPECT_EQ(rig.status(kLabel)->stored_alarm, call->value.at("x").get<int64_t>());
}

TEST(StorageRuntime, AHandlerExceptionDoesNotRollBackItsWrites) {
  StoreRig rig;
  CallPtr call = rig.call("write_then_throw", {{"id", 9}});
  rig.run_for(1'000);
  ASSERT_TRUE(call->done);
  EXPECT_FALSE(call->ok);
  EXPECT_TRUE(call->flags.remote);
  EXPECT_EQ(call->error, "handler failed after writing");
  EXPECT_EQ(rig.rows(), (std::vector<int64_t>{9}));
  EXPECT_EQ(rig.sink.count("incarnation.end"), 0u);
}

TEST(StorageRuntime, DeleteAllRemovesEveryTableAndTheAlarmButNotInsideATransaction) {
  StoreRig rig;
  rig.call("insert", {{"id", 1}});
  CallPtr call = rig.call("delete_all", json::object(), 100);
  rig.run_for(1'000);
  ASSERT_TRUE(call->ok) << call->error;
  EXPECT_EQ(call->value.at("inside"), "TypeError: deleteAll() cannot be called inside a transaction");
  EXPECT_EQ(call->value.at("before"), 1);
  EXPECT_EQ(call->value.at("tables"), 0);
  EXPECT_EQ(call->value.at("alarm"), false);
  EXPECT_FALSE(rig.status(kLabel)->stored_alarm.has_value());
  EXPECT_TRUE(rig.rows().empty());
}

// ---------------------------------------------------------------------------------------------
// Statement and critical errors

TEST(StorageRuntime, StatementErrorsFailOnlyTheStatementAndTheObjectKeepsRunning) {
  StoreRig rig;
  CallPtr call = rig.call("bad_sql");
  CallPtr injected = rig.call("injected_statement_error", json::object(), 100);
  CallPtr next = rig.call("other", json::object(), 200);
  rig.run_for(1'000);
  ASSERT_TRUE(call->ok) << call->error;
  EXPECT_EQ(call->value.at("name"), "SqlError");
  EXPECT_NE(call->value.at("message").get<std::string>().find("syntax error"), std::string::npos) << call->value.dump();
  EXPECT_NE(call->value.at("constraint").get<std::string>().find("UNIQUE constraint failed"), std::string::npos)
      << call->value.dump();
  EXPECT_EQ(call->value.at("rows"), 2);
  ASSERT_TRUE(injected->ok) << injected->error;
  EXPECT_EQ(injected->value.at("message"), "SQL query failed: Network connection lost.");
  EXPECT_EQ(injected->value.at("rows"), 3);  // 1, 2, 8: the failed insert of 7 had no effect
  ASSERT_TRUE(next->ok);
  EXPECT_EQ(rig.sink.count("incarnation.end"), 0u) << "RT-26: a statement error never resets";
  EXPECT_EQ(rig.rows(), (std::vector<int64_t>{1, 2, 8}));
}

TEST(StorageRuntime, ACriticalErrorPoisonsStorageAndResetsAtTheNextSuspension) {
  StoreRig rig;
  rig.call("warm");
  CallPtr call = rig.call("critical", json::object(), 100);
  CallPtr after = rig.call("insert", {{"id", 30}}, 1'000);
  rig.run_for(5'000);
  // The code caught the error; every later storage call threw the same one.
  std::string line;
  for (const std::string& l : rig.journal.lines)
    if (l.rfind("critical: ", 0) == 0) line = l;
  ASSERT_FALSE(line.empty());
  const std::string message = line.substr(10, line.find(" | ") - 10);
  const std::set<std::string> allowed = {"disk I/O error: SQLITE_IOERR", "out of memory: SQLITE_NOMEM",
                                         "interrupted: SQLITE_INTERRUPT"};
  EXPECT_TRUE(allowed.count(message)) << line;
  EXPECT_EQ(line, "critical: " + message + " | " + message + " | " + message);
  EXPECT_FALSE(rig.has_line("after the suspension"));
  ASSERT_TRUE(call->done);
  EXPECT_FALSE(call->ok);
  EXPECT_TRUE(call->flags.durableObjectReset);
  EXPECT_EQ(call->error, "broken.outputGateBroken; " + message);
  // The whole implicit transaction (10 as well as 11) rolled back; the next incarnation works.
  ASSERT_TRUE(after->ok) << after->error;
  EXPECT_EQ(rig.status(kLabel)->incarnations, 2);
  EXPECT_EQ(rig.rows(), (std::vector<int64_t>{30}));
}

// ---------------------------------------------------------------------------------------------
// Durability waits and confirmation order

TEST(StorageRuntime, SyncAndTransactionWaitForConfirmationWithoutHoldingTheInputGate) {
  StoreRig rig;
  rig.faults.set_latency(LatencyKind::confirm, 250);
  rig.call("warm");
  CallPtr synced = rig.call("sync_elapsed", {{"id", 1}}, 1'000);
  CallPtr other = rig.call("other", json::object(), 1'010);
  CallPtr txn = rig.call("transaction_elapsed", json::object(), 2'000);
  CallPtr nothing = rig.call("sync_nothing", json::object(), 3'000);
  rig.run_for(10'000);
  ASSERT_TRUE(synced->ok && other->ok && txn->ok && nothing->ok);
  EXPECT_EQ(synced->value, 250);
  EXPECT_EQ(txn->value.at("elapsed"), 250);
  EXPECT_EQ(txn->value.at("rows"), 2);
  EXPECT_EQ(nothing->value, 0);
  // The other call ran while sync() waited.
  EXPECT_EQ(rig.journal.lines, (std::vector<std::string>{"sync start", "other", "sync end"}));
}

TEST(StorageRuntime, ConfirmationsHappenInCommitOrder) {
  StoreRig rig;
  int64_t draws = 0;
  // The constructor's commit confirms fast; then 300, 10, 10: the later commits wait for the first.
  rig.faults.set_latency([&draws](LatencyKind kind) -> int64_t {
    if (kind != LatencyKind::confirm) return 1;
    const int64_t n = ++draws;
    return n == 1 ? 1 : n == 2 ? 300 : 10;
  });
  rig.call("warm");
  CallPtr a = rig.call("insert", {{"id", 1}}, 100);
  CallPtr b = rig.call("insert", {{"id", 2}}, 110);
  CallPtr c = rig.call("sync_elapsed", {{"id", 3}}, 120);
  rig.run_for(5'000);
  ASSERT_TRUE(a->ok && b->ok && c->ok);
  const std::vector<json> confirms = rig.events("confirm", kLabel);
  ASSERT_EQ(confirms.size(), 4u);
  for (std::size_t i = 0; i < confirms.size(); ++i) EXPECT_EQ(confirms[i].at("commit"), static_cast<int64_t>(i + 1));
  const SimTime first = confirms[1].at("t").get<SimTime>();
  EXPECT_EQ(first, rig.events("commit", kLabel)[1].at("t").get<SimTime>() + 300);
  EXPECT_EQ(confirms[2].at("t").get<SimTime>(), first);
  EXPECT_EQ(confirms[3].at("t").get<SimTime>(), first);
  EXPECT_EQ(c->value, first - (kStart + 121)) << "sync waited for every earlier commit";
  // The output gate held b's reply (a read-free write) until its own confirmation.
  EXPECT_GE(b->finished, first);
}

// ---------------------------------------------------------------------------------------------
// Commit failures

void expect_commit_failure(const std::string& kind, const std::string& message) {
  StoreRig rig;
  rig.faults.set_latency(LatencyKind::confirm, 20);
  rig.call("warm");
  CallPtr call = rig.call("commit_failure", {{"kind", kind}}, 100);
  CallPtr after = rig.call("insert", {{"id", 40}}, 1'000);
  rig.run_for(5'000);
  EXPECT_TRUE(rig.has_line("waiter: " + message + " / " + kind)) << json(rig.journal.lines).dump();
  EXPECT_FALSE(rig.has_line("sync returned"));
  EXPECT_FALSE(rig.has_line("after the suspension"));
  // Storage is poisoned for the rest of the incarnation.
  bool poisoned = false;
  for (const std::string& l : rig.journal.lines) poisoned |= l.rfind("after: ", 0) == 0;
  EXPECT_TRUE(poisoned) << json(rig.journal.lines).dump();
  ASSERT_TRUE(call->done);
  EXPECT_FALSE(call->ok);
  EXPECT_TRUE(call->flags.durableObjectReset);
  EXPECT_EQ(call->error, "broken.outputGateBroken; " + message);
  ASSERT_TRUE(after->ok) << after->error;
  EXPECT_EQ(rig.status(kLabel)->incarnations, 2);
  const std::vector<json> failed = rig.events("commit.failed", kLabel);
  ASSERT_EQ(failed.size(), 1u);
  EXPECT_EQ(failed[0].at("outcome"), kind);
  const std::vector<int64_t> rows = rig.rows();
  if (kind == "definite") {
    EXPECT_EQ(rows, (std::vector<int64_t>{40}));
  } else {
    EXPECT_TRUE(rows == (std::vector<int64_t>{40}) || rows == (std::vector<int64_t>{20, 40})) << json(rows).dump();
  }
}

TEST(StorageRuntime, DefiniteCommitFailureGivesWaitersTheRolledBackError) {
  expect_commit_failure("definite", "Durable Object storage commit failed: the transaction was rolled back");
}

TEST(StorageRuntime, UncertainCommitFailureGivesWaitersTheDurabilityUnknownError) {
  expect_commit_failure("uncertain", "Durable Object storage commit failed: durability unknown");
}

// ---------------------------------------------------------------------------------------------
// The durability decision keeps a prefix (property)

constexpr int kMaxCalls = 5;
constexpr int kMaxSteps = 6;

// Survivors of each incarnation's writes must be a prefix of them that ends on a segment boundary;
// every write of an acknowledged call must survive.
void check_prefix(const Journal& journal, const std::vector<int64_t>& survivors, const std::vector<CallPtr>& calls) {
  const std::set<int64_t> alive(survivors.begin(), survivors.end());
  std::map<int64_t, std::vector<Write>> by_incarnation;
  for (const Write& w : journal.writes) by_incarnation[w.incarnation].push_back(w);
  std::set<int64_t> journaled;
  for (const Write& w : journal.writes) journaled.insert(w.id);
  for (int64_t id : survivors) RC_ASSERT(journaled.count(id) == 1u);
  for (const auto& [incarnation, writes] : by_incarnation) {
    std::size_t p = 0;
    while (p < writes.size() && alive.count(writes[p].id)) ++p;
    for (std::size_t i = p; i < writes.size(); ++i) RC_ASSERT(alive.count(writes[i].id) == 0u);  // a prefix
    if (p > 0 && p < writes.size()) RC_ASSERT(writes[p - 1].segment != writes[p].segment);  // whole segments
  }
  for (const Write& w : journal.writes)
    if (calls.at(static_cast<std::size_t>(w.call))->ok) RC_ASSERT(alive.count(w.id) == 1u);  // acknowledged
}

RC_GTEST_PROP(StorageRuntimeProp, TheDurableStateIsAPrefixOfTheLocalCommits, ()) {
  const uint64_t seed = *rc::gen::inRange<uint64_t>(1, 1'000'000);
  const int ncalls = *rc::gen::inRange(1, kMaxCalls + 1);
  std::vector<std::vector<int>> plans;
  std::vector<int> delays;
  for (int i = 0; i < ncalls; ++i) {
    const int nsteps = *rc::gen::inRange(1, kMaxSteps + 1);
    plans.push_back(*rc::gen::container<std::vector<int>>(static_cast<std::size_t>(nsteps),
                                                          rc::gen::oneOf(rc::gen::just(-1), rc::gen::inRange(0, 40))));
    delays.push_back(*rc::gen::inRange(0, 300));
  }
  const std::vector<int> latencies = *rc::gen::container<std::vector<int>>(4, rc::gen::inRange(1, 120));
  static const std::vector<FaultKind> kCrashes = {FaultKind::object_reset, FaultKind::storage_commit_uncertain,
                                                  FaultKind::storage_commit_definite, FaultKind::storage_critical,
                                                  FaultKind::storage_gate_timeout};
  const int ncrashes = *rc::gen::inRange(0, 4);
  std::vector<std::pair<int, int>> crashes;
  for (int i = 0; i < ncrashes; ++i)
    crashes.emplace_back(*rc::gen::inRange(0, static_cast<int>(kCrashes.size())), *rc::gen::inRange(1, 7));

  StoreRig rig(seed);
  int64_t draw = 0;
  rig.faults.set_latency([&latencies, &draw](LatencyKind kind) -> int64_t {
    if (kind != LatencyKind::confirm) return 1;
    return latencies[static_cast<std::size_t>(draw++) % latencies.size()];
  });
  for (const auto& [kind, nth] : crashes) rig.faults.fire_at(kCrashes[static_cast<std::size_t>(kind)], nth);
  std::vector<CallPtr> calls;
  for (int i = 0; i < ncalls; ++i)
    calls.push_back(rig.call("steps", {{"call", i}, {"steps", plans[static_cast<std::size_t>(i)]}}, delays[static_cast<std::size_t>(i)]));
  rig.run_for(600'000);
  for (const CallPtr& call : calls) RC_ASSERT(call->done);
  RC_ASSERT(rig.runtime.pending().empty());
  const std::vector<int64_t> rows = rig.rows();
  check_prefix(rig.journal, rows, calls);
  RC_CLASSIFY(rows.size() < rig.journal.writes.size(), "some writes vanished");
  RC_CLASSIFY(!rig.sink.of("durability").empty(), "a durability decision");
}

}  // namespace
}  // namespace durasim::rt_test
