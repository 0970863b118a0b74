// SqliteStore (sim/sqlite_store.h): SQL values, statement errors, the authorizer and limits
// (runtime.md 4.1, 4.4), savepoints and the alarm row (4.3, 7.1), local commits, confirmation and the
// durability decision (4.2, 4.5; RT-05, RT-06, RT-07), deleteAll, and deterministic random()/time.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <string>
#include <unistd.h>
#include <vector>

#include "sim/sqlite_store.h"

namespace durasim::sim {
namespace {

constexpr int64_t kNow = 1'700'000'000'000;  // 2023-11-14 22:13:20 UTC
constexpr const char* kNotAuthorized = "not authorized: SQLITE_AUTH";

// A scripted environment: random_bits counts up from `next_bits`, the clock reads `now`.
struct FakeEnvironment {
  uint64_t next_bits = 1;
  int64_t now = kNow;
  SqlEnvironment env() {
    return SqlEnvironment{[this] { return next_bits++; }, [this] { return now; }};
  }
};

class SqliteStoreTest : public ::testing::Test {
 protected:
  FakeEnvironment fake;
  SqliteStore store{fake.env()};

  void create_kv() { store.exec("CREATE TABLE kv(k INTEGER PRIMARY KEY, v TEXT)"); }
  void put(int64_t k, const std::string& v) { store.exec("INSERT OR REPLACE INTO kv(k, v) VALUES(?, ?)", {k, v}); }
  std::map<int64_t, std::string> kv() {
    std::map<int64_t, std::string> rows;
    for (const SqlRow& row : store.exec("SELECT k, v FROM kv").toVector()) rows[row.int64("k")] = row.text("v");
    return rows;
  }
  uint64_t commit() {
    std::optional<LocalCommit> c = store.commit_local();
    EXPECT_TRUE(c.has_value());
    return c ? c->number : 0;
  }
  std::vector<std::string> user_tables() {
    std::vector<std::string> names;
    for (const SqlRow& row :
         store.exec("SELECT name FROM sqlite_schema WHERE name NOT LIKE '\\_cf\\_%' ESCAPE '\\' ORDER BY name").toVector())
      names.push_back(row.text("name"));
    return names;
  }
};

std::string sql_error_message(SqliteStore& store, std::string_view sql, const std::vector<SqlValue>& params = {}) {
  try {
    store.exec(sql, params);
  } catch (const SqlError& e) {
    return e.what();
  }
  return "(no error)";
}

// ---------------------------------------------------------------------------------------------
// Values and statements

TEST_F(SqliteStoreTest, EveryValueTypeRoundTripsExactly) {
  const std::vector<SqlValue> values = {
      SqlNull{},
      int64_t{0},
      std::numeric_limits<int64_t>::max(),
      std::numeric_limits<int64_t>::min(),
      int64_t{(int64_t{1} << 53) + 1},
      0.1,
      -1.5e300,
      std::string(),
      std::string("h\xC3\xA9llo"),
      std::string("nul\0inside", 10),
      SqlBlob{},
      SqlBlob{std::string("\0\x01\xff", 3)},
  };
  store.exec("CREATE TABLE t(i INTEGER PRIMARY KEY, v)");
  for (std::size_t i = 0; i < values.size(); ++i) store.exec("INSERT INTO t(i, v) VALUES(?, ?)", {static_cast<int64_t>(i), values[i]});
  std::vector<SqlRow> rows = store.exec("SELECT v FROM t ORDER BY i").toVector();
  ASSERT_EQ(rows.size(), values.size());
  for (std::size_t i = 0; i < values.size(); ++i) EXPECT_EQ(rows[i][0], values[i]) << "value " << i;
  for (const SqlValue& value : values) EXPECT_EQ(store.exec("SELECT ? AS x", {value}).one()[0], value);
}

// Statements are prepared once and cached per connection; past the cache's capacity they are
// prepared for one use, and a statement in use is never evicted, even when running it opens the
// implicit transaction (another statement) while the cache is full.
TEST_F(SqliteStoreTest, StatementsBeyondTheCacheCapacityStillRunAndCachedOnesStayCorrect) {
  create_kv();
  store.confirm(commit());
  store.decide(0);  // a fresh connection: an empty cache
  for (std::size_t i = 0; i + 1 < StatementCache::kCapacity; ++i)
    EXPECT_EQ(store.exec("SELECT " + std::to_string(i) + " AS n").one().int64("n"), static_cast<int64_t>(i));
  ASSERT_FALSE(store.in_transaction());
  put(1, "one");  // the INSERT fills the cache; the BEGIN it runs first is prepared for one use
  EXPECT_TRUE(store.in_transaction());
  put(2, "two");
  for (std::size_t i = 0; i < 20; ++i) EXPECT_EQ(store.exec("SELECT " + std::to_string(1000 + i) + " AS n").one().int64("n"), 1000 + static_cast<int64_t>(i));
  EXPECT_EQ(kv(), (std::map<int64_t, std::string>{{1, "one"}, {2, "two"}}));
  commit();
  put(1, "uno");
  EXPECT_EQ(kv().at(1), "uno");
  EXPECT_THROW(store.exec("INSERT INTO kv(k, v) VALUES(?, ?)", {int64_t{3}}), SqlError);  // bindings checked on every use
  EXPECT_EQ(store.exec("SELECT v FROM kv WHERE k = ?", {int64_t{2}}).one().text("v"), "two");
  EXPECT_EQ(store.exec("SELECT 7 AS n").one().int64("n"), 7);  // still cached
}

// The cache finds a statement again by the address of its text: a buffer that later holds other SQL
// of the same length finds that SQL's own statement, never the one it held before.
TEST_F(SqliteStoreTest, TextAtAnAddressThatHeldOtherSqlRunsItsOwnStatement) {
  std::string sql = "SELECT 1 AS n";
  const char* const address = sql.data();
  for (int64_t round = 0; round < 3; ++round) {
    for (char digit = '1'; digit <= '9'; ++digit) {
      sql[7] = digit;
      ASSERT_EQ(sql.data(), address);
      EXPECT_EQ(store.exec(sql).one().int64("n"), digit - '0');
    }
  }
  sql = "SELECT 2 AS m";  // same length and address, another column name
  ASSERT_EQ(sql.data(), address);
  EXPECT_EQ(store.exec(sql).one().int64("m"), 2);
}

// A cached statement whose table changes shape is prepared again by SQLite: its rows carry the new
// column names.
TEST_F(SqliteStoreTest, ACachedStatementSeesTheColumnsOfAChangedTable) {
  create_kv();
  put(1, "one");
  const std::string select = "SELECT * FROM kv";
  EXPECT_EQ(store.exec(select).columnNames(), (std::vector<std::string>{"k", "v"}));
  EXPECT_EQ(store.exec(select).columnNames(), (std::vector<std::string>{"k", "v"}));
  store.exec("ALTER TABLE kv ADD COLUMN w DEFAULT 3");
  SqlCursor after = store.exec(select);
  EXPECT_EQ(after.columnNames(), (std::vector<std::string>{"k", "v", "w"}));
  EXPECT_EQ(after.one().int64("w"), 3);
  store.exec("ALTER TABLE kv RENAME COLUMN w TO x");
  EXPECT_EQ(store.exec(select).columnNames(), (std::vector<std::string>{"k", "v", "x"}));
}

TEST_F(SqliteStoreTest, CursorHasColumnNamesAndRowCounts) {
  create_kv();
  SqlCursor insert = store.exec("INSERT INTO kv(k, v) VALUES(1, 'a'), (2, 'b'), (3, 'c')");
  EXPECT_EQ(insert.rowsWritten(), 3);
  SqlCursor select = store.exec("SELECT k AS key, v FROM kv");
  EXPECT_EQ(select.columnNames(), (std::vector<std::string>{"key", "v"}));
  EXPECT_EQ(select.rowsRead(), 3);
  EXPECT_EQ(select.rowsWritten(), 0);
  EXPECT_EQ(select.toVector().size(), 3u);
}

TEST_F(SqliteStoreTest, ReadsOpenNoTransactionWritesDo) {
  store.exec("SELECT 1");
  EXPECT_FALSE(store.in_transaction());
  EXPECT_FALSE(store.get_alarm().has_value());
  EXPECT_FALSE(store.in_transaction());
  create_kv();
  EXPECT_TRUE(store.in_transaction());
}

TEST_F(SqliteStoreTest, StatementErrorKeepsTheTransactionAndEarlierWrites) {
  store.exec("CREATE TABLE t(k TEXT PRIMARY KEY)");
  store.exec("INSERT INTO t VALUES('a')");
  EXPECT_EQ(sql_error_message(store, "INSERT INTO t VALUES('a')"), "UNIQUE constraint failed: t.k: SQLITE_CONSTRAINT");
  EXPECT_EQ(sql_error_message(store, "INSERT INTO t VALUES('b'), ('a')"), "UNIQUE constraint failed: t.k: SQLITE_CONSTRAINT");
  EXPECT_EQ(sql_error_message(store, "SELEC 1"), "near \"SELEC\": syntax error: SQLITE_ERROR");
  EXPECT_EQ(sql_error_message(store, "SELECT * FROM missing"), "no such table: missing: SQLITE_ERROR");
  EXPECT_TRUE(store.in_transaction());
  store.exec("INSERT INTO t VALUES('c')");
  commit();
  std::vector<std::string> keys;
  for (const SqlRow& row : store.exec("SELECT k FROM t ORDER BY k").toVector()) keys.push_back(row.text("k"));
  EXPECT_EQ(keys, (std::vector<std::string>{"a", "c"}));  // the failed two-row insert left no 'b'
}

TEST_F(SqliteStoreTest, OneStatementPerExec) {
  create_kv();
  EXPECT_EQ(sql_error_message(store, "INSERT INTO kv VALUES(1, 'a'); DROP TABLE kv"),
            "only one SQL statement per exec is supported: SQLITE_ERROR");
  EXPECT_EQ(sql_error_message(store, "SELECT 1; ; SELECT 2"), "only one SQL statement per exec is supported: SQLITE_ERROR");
  EXPECT_TRUE(kv().empty());  // the first statement never ran
  EXPECT_EQ(store.exec("SELECT 1 AS x; -- trailing comment\n").one().int64("x"), 1);
  EXPECT_EQ(store.exec("SELECT 2 AS x;;").one().int64("x"), 2);
  EXPECT_TRUE(store.exec("  -- nothing\n").columnNames().empty());
}

TEST_F(SqliteStoreTest, ParameterCountMustMatch) {
  EXPECT_EQ(sql_error_message(store, "SELECT ?, ?", {int64_t{1}}), "wrong number of parameter bindings for SQL query: SQLITE_RANGE");
  EXPECT_EQ(sql_error_message(store, "SELECT 1", {int64_t{1}}), "wrong number of parameter bindings for SQL query: SQLITE_RANGE");
}

// ---------------------------------------------------------------------------------------------
// Authorizer and limits (runtime.md 4.1)

TEST_F(SqliteStoreTest, AuthorizerRefusesTransactionControlAttachPragmasAndInternalTables) {
  create_kv();
  store.exec("CREATE VIEW sneaky AS SELECT * FROM _cf_alarm");  // created, but unreadable
  for (const char* sql : {"BEGIN", "COMMIT", "ROLLBACK", "SAVEPOINT s", "RELEASE s", "PRAGMA journal_mode",
                          "PRAGMA journal_mode = WAL", "PRAGMA foreign_keys = OFF", "PRAGMA writable_schema = ON",
                          "PRAGMA table_info(_cf_alarm)", "ATTACH ':memory:' AS other", "DETACH other",
                          "SELECT * FROM _cf_alarm", "SELECT * FROM _CF_ALARM", "SELECT * FROM sneaky",
                          "INSERT INTO _cf_alarm VALUES(0, 5)", "DELETE FROM _cf_alarm", "DROP TABLE _cf_alarm",
                          "CREATE TABLE _cf_mine(x)", "CREATE INDEX i ON _cf_alarm(time)",
                          "CREATE TRIGGER tr AFTER INSERT ON _cf_alarm BEGIN SELECT 1; END",
                          "ALTER TABLE _cf_alarm ADD COLUMN x"})
    EXPECT_EQ(sql_error_message(store, sql), kNotAuthorized) << sql;
  EXPECT_TRUE(store.in_transaction());  // refusals are statement errors
}

TEST_F(SqliteStoreTest, AllowedPragmasWork) {
  store.exec("CREATE TABLE parent(id INTEGER PRIMARY KEY)");
  store.exec("CREATE TABLE child(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent(id))");
  store.exec("CREATE INDEX child_parent ON child(parent)");
  EXPECT_EQ(store.exec("PRAGMA table_info(child)").toVector().size(), 2u);
  EXPECT_EQ(store.exec("PRAGMA index_list(child)").toVector().size(), 1u);
  EXPECT_EQ(store.exec("PRAGMA index_info(child_parent)").one().text("name"), "parent");
  EXPECT_EQ(store.exec("PRAGMA foreign_key_list(child)").one().text("table"), "parent");
  EXPECT_EQ(store.exec("PRAGMA defer_foreign_keys").one()[0], SqlValue(int64_t{0}));
  commit();

  // Foreign keys are enforced; deferred, they are checked at the implicit commit.
  EXPECT_EQ(sql_error_message(store, "INSERT INTO child VALUES(1, 7)"), "FOREIGN KEY constraint failed: SQLITE_CONSTRAINT");
  store.exec("PRAGMA defer_foreign_keys = ON");
  EXPECT_TRUE(store.in_transaction());
  store.exec("INSERT INTO child VALUES(1, 7)");
  store.exec("INSERT INTO parent VALUES(7)");
  commit();
  EXPECT_EQ(store.exec("SELECT count(*) AS n FROM child").one().int64("n"), 1);
}

TEST_F(SqliteStoreTest, VirtualTablesAndStatisticsWork) {
  store.exec("CREATE VIRTUAL TABLE docs USING fts5(body)");  // FTS5 reads PRAGMA data_version inside
  store.exec("INSERT INTO docs VALUES('hello world'), ('goodbye')");
  store.exec("ANALYZE");
  store.confirm(commit());
  store.decide(0);
  EXPECT_EQ(store.exec("SELECT body FROM docs WHERE docs MATCH 'hello'").one().text("body"), "hello world");
  EXPECT_EQ(sql_error_message(store, "PRAGMA data_version = 3"), kNotAuthorized);
  store.delete_all();
  EXPECT_EQ(user_tables(), (std::vector<std::string>{"sqlite_stat1"}));  // SQLite's own, emptied
  EXPECT_EQ(store.exec("SELECT count(*) AS n FROM sqlite_stat1").one().int64("n"), 0);
}

TEST_F(SqliteStoreTest, DeferredForeignKeyViolationFailsTheCommitAndRollsBack) {
  store.exec("CREATE TABLE parent(id INTEGER PRIMARY KEY)");
  store.exec("CREATE TABLE child(id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent(id))");
  commit();
  store.exec("PRAGMA defer_foreign_keys = ON");
  store.exec("INSERT INTO child VALUES(1, 7)");
  EXPECT_THROW(store.commit_local(), SqlError);
  EXPECT_FALSE(store.in_transaction());
  EXPECT_EQ(store.exec("SELECT count(*) AS n FROM child").one().int64("n"), 0);
  EXPECT_EQ(store.unconfirmed(), (std::vector<uint64_t>{1}));
}

TEST_F(SqliteStoreTest, LimitsAreStatementErrors) {
  std::string sql = "SELECT ?";
  std::vector<SqlValue> params(101, SqlValue(int64_t{7}));
  for (int i = 1; i < 101; ++i) sql += ", ?";
  EXPECT_EQ(sql_error_message(store, sql, params), "too many SQL variables: SQLITE_ERROR");
  params.pop_back();
  sql.resize(sql.size() - 3);
  EXPECT_EQ(store.exec(sql, params).one().size(), 100u);

  store.exec("CREATE TABLE t(v)");
  const std::string too_big(2'000'001, 'x');
  EXPECT_EQ(sql_error_message(store, "INSERT INTO t VALUES(?)", {SqlValue(too_big)}), "string or blob too big: SQLITE_TOOBIG");
  EXPECT_EQ(sql_error_message(store, "INSERT INTO t VALUES(?)", {SqlValue(SqlBlob{too_big})}),
            "string or blob too big: SQLITE_TOOBIG");
  EXPECT_EQ(sql_error_message(store, "SELECT randomblob(2000001)"), "string or blob too big: SQLITE_TOOBIG");
  std::string too_long = "SELECT '";
  too_long.append(100'000, 'x').append("'");
  EXPECT_EQ(sql_error_message(store, too_long), "statement too long: SQLITE_TOOBIG");

  std::string columns = "c0";
  for (int i = 1; i < 101; ++i) columns += ", c" + std::to_string(i);
  EXPECT_EQ(sql_error_message(store, "CREATE TABLE wide(" + columns + ")"), "too many columns on wide: SQLITE_ERROR");
  EXPECT_EQ(sql_error_message(store, "SELECT 'a' LIKE ?", {SqlValue(std::string(51, '%'))}),
            "LIKE or GLOB pattern too complex: SQLITE_ERROR");
  std::string args = "1";
  for (int i = 1; i < 33; ++i) args += ", 1";
  EXPECT_EQ(sql_error_message(store, "SELECT max(" + args + ")"), "too many arguments on function max: SQLITE_ERROR");
  EXPECT_TRUE(store.in_transaction());
}

// ---------------------------------------------------------------------------------------------
// Savepoints and the alarm (runtime.md 4.3, 7.1)

TEST_F(SqliteStoreTest, SavepointRollbackUndoesRowsAndAlarm) {
  create_kv();
  put(1, "kept");
  store.set_alarm(100);
  store.savepoint_begin();
  put(2, "undone");
  store.set_alarm(200);
  EXPECT_EQ(store.get_alarm(), 200);
  store.savepoint_rollback();
  EXPECT_EQ(kv(), (std::map<int64_t, std::string>{{1, "kept"}}));
  EXPECT_EQ(store.get_alarm(), 100);

  store.savepoint_begin();
  store.delete_alarm();
  store.savepoint_rollback();
  EXPECT_EQ(store.get_alarm(), 100);
  EXPECT_TRUE(store.in_transaction());
}

TEST_F(SqliteStoreTest, NestedSavepoints) {
  create_kv();
  store.savepoint_begin();
  put(1, "outer");
  store.savepoint_begin();
  put(2, "inner, undone");
  store.set_alarm(5);
  store.savepoint_rollback();
  store.savepoint_begin();
  put(3, "inner, released");
  store.savepoint_release();
  store.savepoint_release();
  EXPECT_EQ(kv(), (std::map<int64_t, std::string>{{1, "outer"}, {3, "inner, released"}}));
  EXPECT_FALSE(store.get_alarm().has_value());

  store.savepoint_begin();
  put(4, "gone with the outer rollback");
  store.savepoint_begin();
  put(5, "released into the outer, then undone");
  store.savepoint_release();
  store.savepoint_rollback();
  EXPECT_EQ(kv().size(), 2u);
}

TEST_F(SqliteStoreTest, SavepointOpensTheImplicitTransaction) {
  store.savepoint_begin();
  EXPECT_TRUE(store.in_transaction());
  EXPECT_THROW(store.commit_local(), std::logic_error);
  store.savepoint_release();
  EXPECT_FALSE(store.commit_local().has_value());  // nothing written
}

TEST_F(SqliteStoreTest, AlarmIsDurableWithCommits) {
  store.set_alarm(1234);
  const uint64_t first = commit();
  store.delete_alarm();
  commit();
  store.confirm(first);
  store.decide(0);
  EXPECT_EQ(store.get_alarm(), 1234);
  store.set_alarm(99);
  store.decide(0);  // the open transaction vanishes
  EXPECT_EQ(store.get_alarm(), 1234);
}

// ---------------------------------------------------------------------------------------------
// Commits, confirmation, durability decision (runtime.md 4.2, 4.5)

// A decision that keeps every commit may hand the old connection to the next incarnation; nothing
// a statement can see tells it from a fresh one.
TEST_F(SqliteStoreTest, NextIncarnationSeesNoConnectionStateOfThePreviousOne) {
  create_kv();
  put(1, "a");
  commit();
  store.exec("CREATE TEMP TABLE scratch(x)");
  store.exec("INSERT INTO kv(v) VALUES('b')");
  EXPECT_EQ(store.exec("SELECT last_insert_rowid() AS id").one().int64("id"), 2);
  EXPECT_EQ(store.exec("SELECT total_changes() AS n").one().int64("n"), 2);
  store.decide(1);  // the open transaction (temp table and row 2) vanishes
  EXPECT_EQ(store.exec("SELECT last_insert_rowid() AS id").one().int64("id"), 0);
  EXPECT_EQ(store.exec("SELECT total_changes() AS n").one().int64("n"), 0);
  EXPECT_EQ(store.exec("SELECT count(*) AS n FROM temp.sqlite_schema").one().int64("n"), 0);
  EXPECT_EQ(kv(), (std::map<int64_t, std::string>{{1, "a"}}));
  EXPECT_TRUE(store.live_is_durable());
}

TEST_F(SqliteStoreTest, KeepingEveryCommitLeavesTheDurableStateLiveWithStatementsThatStillWork) {
  create_kv();
  put(1, "a");
  commit();
  put(2, "b");  // open, never committed
  store.decide(1);
  EXPECT_TRUE(store.live_is_durable());
  EXPECT_EQ(kv(), (std::map<int64_t, std::string>{{1, "a"}}));
  put(3, "c");  // the cached INSERT on the next incarnation
  commit();
  store.decide(0);
  EXPECT_EQ(kv(), (std::map<int64_t, std::string>{{1, "a"}}));
}

TEST_F(SqliteStoreTest, CommitNumbersIncreaseAcrossIncarnations) {
  EXPECT_FALSE(store.commit_local().has_value());  // nothing open
  create_kv();
  EXPECT_EQ(commit(), 1u);
  put(1, "a");
  EXPECT_EQ(commit(), 2u);
  EXPECT_EQ(store.unconfirmed(), (std::vector<uint64_t>{1, 2}));
  store.decide(1);
  EXPECT_TRUE(store.unconfirmed().empty());
  put(2, "b");
  EXPECT_EQ(commit(), 3u);
  store.decide(0);
  store.exec("INSERT INTO kv VALUES(3, 'c')");
  EXPECT_EQ(commit(), 4u);
}

TEST_F(SqliteStoreTest, TransactionsThatWroteNothingUseNoNumber) {
  create_kv();
  put(1, "a");
  commit();
  store.exec("DELETE FROM kv WHERE k = 99");
  EXPECT_EQ(sql_error_message(store, "INSERT INTO kv VALUES(1, 'b')"), "UNIQUE constraint failed: kv.k: SQLITE_CONSTRAINT");
  store.delete_alarm();
  EXPECT_TRUE(store.in_transaction());
  EXPECT_FALSE(store.commit_local().has_value());
  EXPECT_FALSE(store.in_transaction());
  put(2, "b");
  EXPECT_EQ(commit(), 2u);
}

TEST_F(SqliteStoreTest, WritesUndoneBeforeTheCommitLeaveTheStateUnchanged) {
  // Pages SQLite wrote and restored still go out with the commit (as on the platform, whose
  // storage ships pages), carrying unchanged content.
  create_kv();
  put(1, "a");
  store.confirm(commit());
  store.savepoint_begin();
  put(2, "b");
  store.savepoint_rollback();
  EXPECT_EQ(sql_error_message(store, "INSERT INTO kv VALUES(3, 'c'), (1, 'dup')"), "UNIQUE constraint failed: kv.k: SQLITE_CONSTRAINT");
  if (std::optional<LocalCommit> unchanged = store.commit_local()) store.confirm(unchanged->number);
  EXPECT_EQ(kv(), (std::map<int64_t, std::string>{{1, "a"}}));
  EXPECT_EQ(store.live_digest(), store.durable_digest());
  store.decide(0);
  EXPECT_EQ(kv(), (std::map<int64_t, std::string>{{1, "a"}}));
}

TEST_F(SqliteStoreTest, CommitReportsSchemaChangesAndAHashOfItsBytes) {
  store.exec("CREATE TABLE t(v)");
  const LocalCommit created = *store.commit_local();
  EXPECT_TRUE(created.schema_changed);
  EXPECT_GT(created.bytes, 0);
  store.exec("INSERT INTO t VALUES(1)");
  const LocalCommit inserted = *store.commit_local();
  EXPECT_FALSE(inserted.schema_changed);
  EXPECT_NE(created.changes_hash, inserted.changes_hash);

  FakeEnvironment other_fake;
  SqliteStore other(other_fake.env());
  other.exec("CREATE TABLE t(v)");
  EXPECT_EQ(other.commit_local()->changes_hash, created.changes_hash);  // same writes, same bytes
}

// Commit hashes go into the trace (RT-01): the bytes SQLite writes must not depend on the heap's
// history. Runs the same script twice, with freed garbage in between.
TEST(SqliteStoreDeterminismTest, CommitHashesDoNotDependOnTheHeap) {
  auto script = [] {
    FakeEnvironment fake;
    SqliteStore s(fake.env());
    std::vector<uint64_t> hashes;
    auto commit = [&] { hashes.push_back(s.commit_local()->changes_hash); };
    s.exec("CREATE TABLE t(k INTEGER PRIMARY KEY, v, w TEXT)");
    s.exec("CREATE INDEX t_w ON t(w)");
    commit();
    for (int round = 0; round < 6; ++round) {
      for (int i = 0; i < 200; ++i)
        s.exec("INSERT OR REPLACE INTO t VALUES(?, randomblob(?), ?)", {int64_t{(i * 37 + round) % 300}, int64_t{i % 90 + round}, std::to_string(i * round)});
      s.exec("DELETE FROM t WHERE k % 3 = ?", {int64_t{round % 3}});
      s.set_alarm(round + 1);
      commit();
    }
    s.exec("DROP INDEX t_w");
    s.exec("UPDATE t SET v = NULL WHERE k < 50");
    commit();
    return hashes;
  };
  const std::vector<uint64_t> first = script();
  std::vector<std::string> garbage;  // freed every other one: holes full of a pattern
  for (int i = 0; i < 256; ++i) garbage.emplace_back(static_cast<std::size_t>(512 * (i % 16 + 1)), static_cast<char>(0xA5 + i));
  for (std::size_t i = 0; i < garbage.size(); i += 2) std::string().swap(garbage[i]);
  EXPECT_EQ(script(), first);
  EXPECT_EQ(garbage.back().size(), 8192u);
}

TEST_F(SqliteStoreTest, ConfirmThenDecideZeroKeepsExactlyTheConfirmedCommits) {
  create_kv();
  put(1, "a");
  const uint64_t first = commit();
  put(2, "b");
  const uint64_t second = commit();
  put(3, "c");
  commit();
  EXPECT_THROW(store.confirm(second), std::logic_error);  // out of order
  store.confirm(first);
  store.confirm(second);
  EXPECT_EQ(store.unconfirmed().size(), 1u);
  put(4, "open");
  store.decide(0);
  EXPECT_FALSE(store.in_transaction());
  EXPECT_EQ(kv(), (std::map<int64_t, std::string>{{1, "a"}, {2, "b"}}));
  EXPECT_EQ(store.live_digest(), store.durable_digest());
}

TEST_F(SqliteStoreTest, DecideKeepsAPrefixIncludingSchemaChanges) {
  // Commit 1 creates a table, 2 writes rows, 3 creates another and sets the alarm, 4 deletes and
  // alters: after decide(j) the live state is the state right after commit j.
  auto script = [](SqliteStore& s) {
    std::vector<uint64_t> digests = {s.live_digest()};
    s.exec("CREATE TABLE a(k INTEGER PRIMARY KEY, v)");
    s.commit_local();
    digests.push_back(s.live_digest());
    s.exec("INSERT INTO a VALUES(1, 'one'), (2, 'two')");
    s.commit_local();
    digests.push_back(s.live_digest());
    s.exec("CREATE TABLE b(x)");
    s.exec("INSERT INTO b VALUES(?)", {SqlBlob{std::string(10'000, 'b')}});
    s.set_alarm(777);
    s.commit_local();
    digests.push_back(s.live_digest());
    s.exec("DELETE FROM a WHERE k = 1");
    s.exec("ALTER TABLE a ADD COLUMN w DEFAULT 3");
    s.commit_local();
    digests.push_back(s.live_digest());
    s.exec("INSERT INTO a(k) VALUES(9)");  // left open
    return digests;
  };
  for (std::size_t keep = 0; keep <= 4; ++keep) {
    FakeEnvironment f;
    SqliteStore s(f.env());
    const std::vector<uint64_t> digests = script(s);
    ASSERT_EQ(s.unconfirmed().size(), 4u);
    s.decide(keep);
    EXPECT_EQ(s.live_digest(), digests[keep]) << "keep " << keep;
    EXPECT_EQ(s.durable_digest(), digests[keep]) << "keep " << keep;
    EXPECT_EQ(s.get_alarm().has_value(), keep >= 3);
  }
}

TEST_F(SqliteStoreTest, ConfirmedCommitsSurviveAnyLaterDecision) {
  create_kv();
  put(1, "a");
  store.confirm(commit());
  put(2, "b");
  commit();
  store.decide(0);
  EXPECT_EQ(kv(), (std::map<int64_t, std::string>{{1, "a"}}));
  store.decide(0);
  EXPECT_EQ(kv(), (std::map<int64_t, std::string>{{1, "a"}}));
}

TEST_F(SqliteStoreTest, RowsWithoutPrimaryKeyAndAutoincrementStateAreDurable) {
  // A changeset would miss all three: rowid tables without a PRIMARY KEY, NULL primary keys, and
  // sqlite_sequence. The page deltas keep them.
  store.exec("CREATE TABLE nopk(x)");
  store.exec("CREATE TABLE textpk(k TEXT PRIMARY KEY, v)");
  store.exec("CREATE TABLE seq(id INTEGER PRIMARY KEY AUTOINCREMENT, v)");
  store.confirm(commit());
  store.exec("INSERT INTO nopk VALUES(1)");
  store.exec("INSERT INTO textpk VALUES(NULL, 'null key')");
  store.exec("INSERT INTO seq(v) VALUES('a'), ('b')");
  store.exec("DELETE FROM seq");
  store.confirm(commit());
  store.decide(0);
  EXPECT_EQ(store.exec("SELECT count(*) AS n FROM nopk").one().int64("n"), 1);
  EXPECT_EQ(store.exec("SELECT count(*) AS n FROM textpk").one().int64("n"), 1);
  store.exec("INSERT INTO seq(v) VALUES('c')");
  EXPECT_EQ(store.exec("SELECT id FROM seq").one().int64("id"), 3);
}

TEST_F(SqliteStoreTest, TransactionsLargerThanThePageCacheRollBackAndCommitExactly) {
  // ~6 MB in one transaction: SQLite spills dirty pages to the file before the commit.
  store.exec("CREATE TABLE big(k INTEGER PRIMARY KEY, v BLOB)");
  store.confirm(commit());
  const uint64_t empty = store.live_digest();
  auto fill = [&](int64_t salt) {
    for (int64_t i = 0; i < 3'000; ++i) store.exec("INSERT OR REPLACE INTO big VALUES(?, randomblob(2000))", {(i * 7 + salt) % 3'000});
  };
  fill(0);
  store.rollback_open();
  EXPECT_EQ(store.live_digest(), empty);
  EXPECT_EQ(store.durable_digest(), empty);
  fill(1);
  const uint64_t filled = store.live_digest();
  store.confirm(commit());
  store.savepoint_begin();
  fill(2);
  store.savepoint_rollback();
  store.exec("DELETE FROM big WHERE k < 1500");
  commit();
  store.decide(0);
  EXPECT_EQ(store.live_digest(), filled);
  EXPECT_EQ(store.durable_digest(), filled);
}

TEST_F(SqliteStoreTest, RollbackOpenDiscardsTheTransaction) {
  create_kv();
  commit();
  put(1, "a");
  store.set_alarm(5);
  store.rollback_open();
  EXPECT_FALSE(store.in_transaction());
  EXPECT_TRUE(kv().empty());
  EXPECT_FALSE(store.get_alarm().has_value());
  EXPECT_FALSE(store.commit_local().has_value());
  store.rollback_open();  // nothing open: nothing to do
  put(2, "b");
  EXPECT_EQ(commit(), 2u);
}

TEST_F(SqliteStoreTest, ConflictClauseRollbackRestartsTheTransactionEmpty) {
  create_kv();
  commit();
  put(1, "a");
  store.savepoint_begin();
  EXPECT_EQ(sql_error_message(store, "INSERT OR ROLLBACK INTO kv VALUES(1, 'b')"),
            "UNIQUE constraint failed: kv.k: SQLITE_CONSTRAINT");
  EXPECT_TRUE(store.in_transaction());
  EXPECT_TRUE(kv().empty());
  put(2, "c");
  store.savepoint_release();
  commit();
  EXPECT_EQ(kv(), (std::map<int64_t, std::string>{{2, "c"}}));
}

TEST_F(SqliteStoreTest, GrowthPastTheCapIsCriticalAndRollsBackEverything) {
  create_kv();
  store.confirm(commit());
  put(1, "before the savepoint");
  store.set_alarm(42);
  store.savepoint_begin();
  put(2, "inside");
  store.savepoint_release();
  store.set_max_bytes(store.database_size() + 8'192);
  try {
    store.exec("INSERT INTO kv VALUES(3, ?)", {std::string(100'000, 'x')});
    FAIL() << "no critical error";
  } catch (const SqlCriticalError& e) {
    EXPECT_EQ(e.code(), SqlCriticalError::Code::full);
    EXPECT_STREQ(e.what(), "database or disk is full: SQLITE_FULL");
  }
  EXPECT_FALSE(store.in_transaction());
  EXPECT_TRUE(kv().empty());
  EXPECT_FALSE(store.get_alarm().has_value());
  store.savepoint_rollback();  // the savepoints went with the transaction: nothing to do
  EXPECT_FALSE(store.commit_local().has_value());

  store.set_max_bytes(kStorageMaxBytes);
  put(3, std::string(100'000, 'x'));
  EXPECT_EQ(commit(), 2u);
  EXPECT_GT(store.database_size(), 100'000);
}

TEST_F(SqliteStoreTest, DeleteAllDropsEverythingInsideTheTransaction) {
  store.exec("CREATE TABLE a_parent(id INTEGER PRIMARY KEY)");
  store.exec("CREATE TABLE b_child(id INTEGER PRIMARY KEY, p INTEGER REFERENCES a_parent(id))");
  store.exec("CREATE TABLE c_seq(id INTEGER PRIMARY KEY AUTOINCREMENT)");
  store.exec("CREATE INDEX b_child_p ON b_child(p)");
  store.exec("CREATE VIEW v AS SELECT * FROM b_child");
  store.exec("CREATE TRIGGER tr AFTER INSERT ON c_seq BEGIN INSERT INTO a_parent VALUES(NULL); END");
  store.exec("INSERT INTO a_parent VALUES(1)");
  store.exec("INSERT INTO b_child VALUES(1, 1)");
  store.exec("INSERT INTO c_seq DEFAULT VALUES");
  store.set_alarm(9);
  store.confirm(commit());

  store.savepoint_begin();
  EXPECT_THROW(store.delete_all(), TypeError);
  store.savepoint_release();

  store.delete_all();
  EXPECT_TRUE(store.in_transaction());
  EXPECT_EQ(user_tables(), (std::vector<std::string>{"sqlite_sequence"}));
  EXPECT_FALSE(store.get_alarm().has_value());
  EXPECT_EQ(store.exec("PRAGMA defer_foreign_keys").one()[0], SqlValue(int64_t{0}));
  const uint64_t wiped = commit();
  store.confirm(wiped);
  store.decide(0);
  EXPECT_EQ(user_tables(), (std::vector<std::string>{"sqlite_sequence"}));
  EXPECT_EQ(store.exec("SELECT count(*) AS n FROM sqlite_sequence").one().int64("n"), 0);

  store.exec("CREATE TABLE again(x)");  // the store stays usable
  commit();
}

TEST_F(SqliteStoreTest, DeleteAllThenRollbackRestores) {
  create_kv();
  put(1, "a");
  store.set_alarm(3);
  commit();
  store.delete_all();
  store.rollback_open();
  EXPECT_EQ(kv(), (std::map<int64_t, std::string>{{1, "a"}}));
  EXPECT_EQ(store.get_alarm(), 3);
}

// ---------------------------------------------------------------------------------------------
// Determinism (runtime.md 2.4)

TEST_F(SqliteStoreTest, RandomComesFromTheEnvironment) {
  fake.next_bits = 41;
  EXPECT_EQ(store.exec("SELECT random() AS r").one().int64("r"), 41);
  fake.next_bits = 0xFFFF'FFFF'FFFF'FFFFULL;  // negative as int64: mapped as SQLite does, never INT64_MIN
  EXPECT_EQ(store.exec("SELECT random() AS r").one().int64("r"), -INT64_MAX);
  EXPECT_EQ(store.exec("SELECT length(randomblob(0)) AS n").one().int64("n"), 1);

  FakeEnvironment a_fake, b_fake;
  SqliteStore a(a_fake.env()), b(b_fake.env());
  const char* sql = "SELECT random() AS r, randomblob(20) AS b, hex(randomblob(3)) AS h";
  for (int i = 0; i < 3; ++i) EXPECT_EQ(a.exec(sql).one().values(), b.exec(sql).one().values());
  EXPECT_EQ(a_fake.next_bits, 10u);  // one draw per call
  b_fake.next_bits = 100;
  EXPECT_NE(a.exec(sql).one().values(), b.exec(sql).one().values());

  // Defaults evaluated by an insert draw from the same environment.
  store.exec("CREATE TABLE r(x DEFAULT (random()))");
  fake.next_bits = 7;
  store.exec("INSERT INTO r DEFAULT VALUES");
  EXPECT_EQ(store.exec("SELECT x FROM r").one().int64("x"), 7);
}

TEST_F(SqliteStoreTest, TimeComesFromTheEnvironment) {
  SqlRow row = store.exec("SELECT date('now') AS d, datetime('now') AS t, unixepoch('now') AS u, "
                          "CAST(strftime('%f', 'now') AS TEXT) AS f, julianday('now') AS j")
                   .one();
  EXPECT_EQ(row.text("d"), "2023-11-14");
  EXPECT_EQ(row.text("t"), "2023-11-14 22:13:20");
  EXPECT_EQ(row.int64("u"), kNow / 1000);
  EXPECT_EQ(row.text("f"), "20.000");
  EXPECT_DOUBLE_EQ(row.real("j"), 2440587.5 + kNow / 86'400'000.0);
  fake.now = 0;
  EXPECT_EQ(store.exec("SELECT datetime('now') AS t").one().text("t"), "1970-01-01 00:00:00");
  fake.now = 1'234;
  EXPECT_EQ(store.exec("SELECT strftime('%Y-%m-%d %H:%M:%f', 'now') AS t").one().text("t"), "1970-01-01 00:00:01.234");
  store.exec("CREATE TABLE stamped(at DEFAULT CURRENT_TIMESTAMP)");
  store.exec("INSERT INTO stamped DEFAULT VALUES");
  EXPECT_EQ(store.exec("SELECT at FROM stamped").one().text("at"), "1970-01-01 00:00:01");
}

// ---------------------------------------------------------------------------------------------
// Digests

TEST_F(SqliteStoreTest, DigestsCompareLiveAndDurableState) {
  const uint64_t empty = store.live_digest();
  EXPECT_EQ(empty, store.durable_digest());
  create_kv();
  put(1, "a");
  store.set_alarm(10);
  EXPECT_NE(store.live_digest(), store.durable_digest());
  const uint64_t first = commit();
  EXPECT_NE(store.live_digest(), store.durable_digest());
  store.confirm(first);
  EXPECT_EQ(store.live_digest(), store.durable_digest());
  store.set_alarm(11);
  EXPECT_NE(store.live_digest(), store.durable_digest());  // the alarm is part of the state
  store.rollback_open();
  EXPECT_EQ(store.live_digest(), store.durable_digest());

  // Row order and physical layout do not matter; values and their types do.
  FakeEnvironment f1, f2;
  SqliteStore s1(f1.env()), s2(f2.env());
  for (SqliteStore* s : {&s1, &s2}) s->exec("CREATE TABLE t(v)");
  s1.exec("INSERT INTO t VALUES(1), (2)");
  s2.exec("INSERT INTO t VALUES(2), (1)");
  EXPECT_EQ(s1.live_digest(), s2.live_digest());
  s2.exec("UPDATE t SET v = 2.0 WHERE v = 2");
  EXPECT_NE(s1.live_digest(), s2.live_digest());
}

// ---------------------------------------------------------------------------------------------
// File mirror

TEST(SqliteStoreFileTest, TheFileMirrorsLocalCommitsAndDecisions) {
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / ("durasim_sqlite_store_" + std::to_string(::getpid()) + ".db");
  std::filesystem::remove(path);
  FakeEnvironment fake;
  {
    SqliteStore store(fake.env(), path.string());
    store.exec("CREATE TABLE t(v)");
    store.confirm(store.commit_local()->number);
    store.exec("INSERT INTO t VALUES('kept')");
    store.confirm(store.commit_local()->number);
    store.exec("INSERT INTO t VALUES(?)", {std::string(50'000, 'v')});
    store.commit_local();
    store.decide(0);
    store.set_alarm(77);
    store.commit_local();
  }
  SqliteStore reopened(fake.env(), path.string());
  EXPECT_EQ(reopened.exec("SELECT v FROM t").one().text("v"), "kept");
  EXPECT_EQ(reopened.get_alarm(), 77);  // the file holds every local commit
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace durasim::sim
