// The row-change journal (sim/row_changes.h) of SqliteStore's live state and the checkers' table
// mirrors built on it (properties/table_mirror.h): every way SQLite can change a row is noted (also
// DELETE without WHERE and rows displaced by REPLACE), by rowid or, in a WITHOUT ROWID table, by
// key; undone changes stay noted and a rollback notes again what it undid; a new live connection or
// a schema change sends readers back to a whole read; and a mirror refreshed from the journal, at
// any moment, always equals the table read whole, whatever random writes, savepoints, rollbacks,
// commits and durability decisions came between.
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "properties/table_mirror.h"
#include "sim/sqlite_store.h"

namespace durasim {
namespace {

using sim::RowChangeCursor;
using sim::RowChangeJournal;
using sim::SqliteStore;

TEST(RowChangeJournal, ANewCursorReadsWholeThenOnlyItsTablesNotes) {
  RowChangeJournal journal;
  RowChangeCursor cursor;
  EXPECT_FALSE(journal.since("t", cursor, 1).has_value()) << "a new cursor reads the table whole";
  journal.note("t", 5);
  journal.note("u", 6);
  journal.note("t", 7);
  EXPECT_EQ(journal.since("t", cursor, 1), (std::vector<int64_t>{5, 7}));
  EXPECT_EQ(journal.since("t", cursor, 1), std::vector<int64_t>{}) << "each note is handed out once";
  journal.note("t", 8);
  EXPECT_FALSE(journal.since("t", cursor, 2).has_value()) << "a schema change since the last look";
  journal.note("t", 9);
  journal.restart();
  EXPECT_FALSE(journal.since("t", cursor, 2).has_value()) << "the journal restarted since the last look";
  EXPECT_EQ(journal.since("nowhere", cursor, 2), std::vector<int64_t>{});
}

TEST(RowChangeJournal, KeyedNotesGoToKeyReadersOnly) {
  RowChangeJournal journal;
  RowChangeCursor rows, keys;
  journal.since("kv", rows, 1);
  journal.keys_since("kv", keys, 1);
  journal.note_key("kv", "a");
  journal.note("kv", 3);
  journal.note_key("kv", "b");
  EXPECT_EQ(journal.keys_since("kv", keys, 1), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(journal.since("kv", rows, 1), (std::vector<int64_t>{3}));
}

TEST(RowChangeJournal, ARollbackNotesAgainWhatItUndid) {
  RowChangeJournal journal;
  RowChangeCursor rows, keys;
  journal.since("t", rows, 1);
  journal.keys_since("kv", keys, 1);
  journal.note("t", 1);
  const RowChangeJournal::Mark mark = journal.mark(7);
  journal.note("t", 2);
  journal.note_key("kv", "a");
  EXPECT_EQ(journal.since("t", rows, 1), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(journal.keys_since("kv", keys, 1), std::vector<std::string>{"a"});
  journal.renote_since(mark, 7);  // rows 2 and key a are back as they were before the mark
  EXPECT_EQ(journal.since("t", rows, 1), std::vector<int64_t>{2});
  EXPECT_EQ(journal.keys_since("kv", keys, 1), std::vector<std::string>{"a"});
  journal.restart();
  journal.renote_since(mark, 7);  // a mark of a journal since restarted notes nothing
  EXPECT_FALSE(journal.since("t", rows, 1).has_value());
}

TEST(RowChangeJournal, ARollbackOverAPossibleSchemaChangeSendsReadersToAWholeRead) {
  RowChangeJournal journal;
  RowChangeCursor cursor;
  journal.since("t", cursor, 1);
  const RowChangeJournal::Mark mark = journal.mark(3);
  journal.note("t", 1);
  journal.renote_since(mark, 3);
  EXPECT_EQ(journal.since("t", cursor, 1), (std::vector<int64_t>{1, 1})) << "no statement could have changed the schema";
  const RowChangeJournal::Mark later = journal.mark(3);
  EXPECT_EQ(journal.since("t", cursor, 2), std::nullopt) << "a table was dropped: the version moved";
  journal.renote_since(later, 4);  // the drop undone: the version is back to 1
  EXPECT_EQ(journal.since("t", cursor, 2), std::nullopt) << "the same version as at the last look, yet another schema";
}

constexpr int64_t kNow = 1'700'000'000'000;

struct Store {
  uint64_t bits = 1;
  SqliteStore store{sim::SqlEnvironment{[this] { return bits++; }, [] { return kNow; }}};
  RowChangeCursor cursor;

  Store() {
    store.exec("CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT UNIQUE, v INTEGER)");
    store.exec("CREATE TABLE kv(key TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID");
    const std::optional<sim::LocalCommit> created = store.commit_local();
    store.confirm_overtaking(created->number);  // durable: no decision drops the table
    changes();  // the first look reads whole
  }
  // The distinct rowids of t noted since the last look, or nullopt for "read it whole".
  std::optional<std::set<int64_t>> changes() {
    const std::optional<std::vector<int64_t>> rowids = store.observe_live_changes("t", cursor);
    if (!rowids) return std::nullopt;
    return std::set<int64_t>(rowids->begin(), rowids->end());
  }
  // The distinct keys of kv noted since the last look, or nullopt for "read it whole".
  std::optional<std::set<std::string>> keyChanges() {
    const std::optional<std::vector<std::string>> keys = store.observe_live_key_changes("kv", keyCursor);
    if (!keys) return std::nullopt;
    return std::set<std::string>(keys->begin(), keys->end());
  }
  void commit() { store.commit_local(); }

  // What a checker reads the store through: its statements, its row and key changes.
  properties::StoreReader reader() {
    return properties::StoreReader{
        [this](const std::string&, std::string_view sql, const std::vector<SqlValue>& params) { return store.observe_live(sql, params); }, nullptr,
        [this](const std::string&, std::string_view table, RowChangeCursor& cursor) { return store.observe_live_changes(table, cursor); },
        [this](const std::string&, std::string_view table, RowChangeCursor& cursor) { return store.observe_live_key_changes(table, cursor); }};
  }

  RowChangeCursor keyCursor;
};

TEST(RowChangeJournal, NotesInsertsUpdatesAndDeletesOfTheLiveStore) {
  Store s;
  s.store.exec("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2), (3, 'c', 3)");
  EXPECT_EQ(s.changes(), (std::set<int64_t>{1, 2, 3}));
  s.store.exec("UPDATE t SET v = 9 WHERE id = 2");
  EXPECT_EQ(s.changes(), (std::set<int64_t>{2}));
  s.store.exec("UPDATE t SET id = 7 WHERE id = 3");
  EXPECT_EQ(s.changes(), (std::set<int64_t>{3, 7})) << "a rowid update notes the old and the new rowid";
  s.store.exec("DELETE FROM t WHERE id = 1");
  EXPECT_EQ(s.changes(), (std::set<int64_t>{1}));
}

TEST(RowChangeJournal, NotesADeleteWithoutWhereRowByRow) {
  Store s;
  s.store.exec("INSERT INTO t VALUES (1, 'a', 1), (2, 'b', 2)");
  s.commit();
  s.changes();
  s.store.exec("DELETE FROM t");  // SQLite truncates such a table unless a preupdate hook is set
  EXPECT_EQ(s.changes(), (std::set<int64_t>{1, 2}));
}

TEST(RowChangeJournal, NotesTheRowAReplaceDisplaces) {
  Store s;
  s.store.exec("INSERT INTO t VALUES (1, 'a', 1)");
  s.changes();
  s.store.exec("INSERT OR REPLACE INTO t VALUES (2, 'a', 5)");  // conflicts on k: row 1 goes
  EXPECT_EQ(s.changes(), (std::set<int64_t>{1, 2}));
}

TEST(RowChangeJournal, ChangesUndoneByARollbackStayNoted) {
  Store s;
  s.store.savepoint_begin();
  s.store.exec("INSERT INTO t VALUES (4, 'd', 4)");
  s.store.savepoint_rollback();
  EXPECT_EQ(s.changes(), (std::set<int64_t>{4})) << "a reader re-reads it and finds it gone";
}

TEST(RowChangeJournal, NotesTheKeysOfAWithoutRowidTable) {
  Store s;
  s.keyChanges();
  s.store.exec("INSERT INTO kv VALUES ('a', 1), ('b', 2)");
  EXPECT_EQ(s.keyChanges(), (std::set<std::string>{"a", "b"}));
  s.store.exec("UPDATE kv SET v = 5 WHERE key = 'b'");
  EXPECT_EQ(s.keyChanges(), std::set<std::string>{"b"});
  s.store.exec("UPDATE kv SET key = 'c' WHERE key = 'a'");
  EXPECT_EQ(s.keyChanges(), (std::set<std::string>{"a", "c"})) << "a key update notes the old and the new key";
  s.store.exec("INSERT OR REPLACE INTO kv VALUES ('b', 7)");
  EXPECT_EQ(s.keyChanges(), std::set<std::string>{"b"});
  s.store.exec("DELETE FROM kv");
  EXPECT_EQ(s.keyChanges(), (std::set<std::string>{"b", "c"}));
}

TEST(RowChangeJournal, ARowReadBeforeItsRollbackIsNotedAgain) {
  Store s;
  s.keyChanges();
  s.store.savepoint_begin();
  s.store.exec("INSERT INTO t VALUES (4, 'd', 4)");
  s.store.exec("INSERT INTO kv VALUES ('d', 4)");
  EXPECT_EQ(s.changes(), std::set<int64_t>{4});  // a reader in the middle of the transaction
  EXPECT_EQ(s.keyChanges(), std::set<std::string>{"d"});
  s.store.savepoint_rollback();
  EXPECT_EQ(s.changes(), std::set<int64_t>{4}) << "the rollback to the savepoint undid it";
  EXPECT_EQ(s.keyChanges(), std::set<std::string>{"d"});
  s.store.exec("INSERT INTO t VALUES (5, 'e', 5)");
  EXPECT_EQ(s.changes(), std::set<int64_t>{5});
  s.store.rollback_open();
  EXPECT_EQ(s.changes(), std::nullopt) << "the rollback to the savepoint ran statements that may change the schema";

  Store t;
  t.store.exec("INSERT INTO t VALUES (4, 'd', 4)");
  t.store.exec("UPDATE t SET v = 5 WHERE id = 4");
  EXPECT_EQ(t.changes(), std::set<int64_t>{4});
  t.store.exec("INSERT INTO t VALUES (5, 'e', 5)");
  t.store.rollback_open();
  EXPECT_EQ(t.changes(), (std::set<int64_t>{4, 5})) << "the rollback of the whole transaction undid both";
}

// A table dropped in a savepoint rolled back, then another table created: the schema version reads
// as at the look inside the savepoint, yet the rows the rollback brought back were never noted. The
// mirror must read the table whole.
TEST(RowChangeJournal, ASchemaChangeUndoneThenAnotherIsNotMissed) {
  Store s;
  properties::TableMirror mirror("t", "k, v");
  const properties::StoreReader reader = s.reader();
  s.store.exec("INSERT INTO t VALUES (1, 'a', 1)");
  mirror.refresh(reader, "t");
  s.store.savepoint_begin();
  s.store.exec("DROP TABLE t");
  mirror.refresh(reader, "t");
  EXPECT_FALSE(mirror.exists());
  s.store.savepoint_rollback();
  s.store.exec("CREATE TABLE other(x)");
  mirror.refresh(reader, "t");
  EXPECT_TRUE(mirror.exists());
  EXPECT_EQ(mirror.rows().size(), 1u) << "row 1 is back";
}

TEST(RowChangeJournal, SchemaChangesAndNewConnectionsSendReadersBackToAWholeRead) {
  Store s;
  s.store.exec("CREATE TABLE other(x)");
  EXPECT_FALSE(s.changes().has_value()) << "a schema change";
  EXPECT_EQ(s.changes(), std::set<int64_t>{});
  s.store.exec("INSERT INTO t VALUES (1, 'a', 1)");
  s.commit();
  s.store.decide(0);  // the commit is dropped: a new live connection on the durable state
  EXPECT_FALSE(s.changes().has_value());
}

// ---------------------------------------------------------------------------------------------
// A mirror refreshed from the journal equals the table read whole.

enum Op {
  kInsert, kReplace, kUpdate, kDeleteRange, kDeleteAll, kRollback, kCommit, kDecide, kRecreate,
  kKvPut, kKvRename, kKvDelete, kSavepoint, kRelease, kRollbackTo, kRollbackAll, kOpCount
};

std::map<int64_t, std::vector<SqlValue>> wholeTable(SqliteStore& store) {
  std::map<int64_t, std::vector<SqlValue>> rows;
  for (const SqlRow& row : store.observe_live("SELECT rowid AS _rowid, k, v FROM t").toVector()) rows[row.int64("_rowid")] = row.values();
  return rows;
}

std::map<int64_t, std::vector<SqlValue>> mirrored(const properties::TableMirror& mirror) {
  std::map<int64_t, std::vector<SqlValue>> rows;
  for (const auto& [rowid, row] : mirror.rows()) rows[rowid] = row.values();
  return rows;
}

std::map<std::string, std::vector<SqlValue>> wholeKv(SqliteStore& store) {
  std::map<std::string, std::vector<SqlValue>> rows;
  if (!store.observe_live_has_table("kv")) return rows;
  for (const SqlRow& row : store.observe_live("SELECT key AS _key, v FROM kv").toVector()) rows[row.text("_key")] = row.values();
  return rows;
}

std::map<std::string, std::vector<SqlValue>> mirrored(const properties::KeyedTableMirror& mirror) {
  std::map<std::string, std::vector<SqlValue>> rows;
  for (const auto& [key, row] : mirror.rows()) rows[key] = row.values();
  return rows;
}

// Whether sqlite_master lists `table`: the answer observe_live_has_table keeps between schema changes.
bool listed(SqliteStore& store, const std::string& table) {
  return store.observe_live("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?", {table}).one().int64("n") > 0;
}

SqlValue keyOf(int64_t n) { return std::string("k").append(std::to_string(n)); }

// Mirrors refreshed at random moments, in the middle of transactions and savepoints too, equal
// their tables read whole; whether a table exists is answered as sqlite_master lists it.
RC_GTEST_PROP(TableMirror, EqualsTheWholeTableAfterAnyChanges, ()) {
  Store s;
  properties::TableMirror mirror("t", "k, v");
  properties::KeyedTableMirror keyed("kv", "key", "v");
  const properties::StoreReader reader = s.reader();
  int savepoints = 0;
  const auto releaseAll = [&] {
    for (; savepoints > 0; --savepoints) s.store.savepoint_release();
  };
  const int steps = *rc::gen::inRange(1, 80);
  for (int step = 0; step < steps; ++step) {
    const auto op = static_cast<Op>(*rc::gen::inRange(0, static_cast<int>(kOpCount)));
    const int64_t a = *rc::gen::inRange(0, 80), b = *rc::gen::inRange(0, 80);
    switch (op) {
      case kInsert: s.store.exec("INSERT OR IGNORE INTO t VALUES (?, ?, ?)", {a, keyOf(b), b}); break;
      case kReplace: s.store.exec("INSERT OR REPLACE INTO t VALUES (?, ?, ?)", {a, keyOf(b), b}); break;
      case kUpdate: s.store.exec("UPDATE OR IGNORE t SET v = v + 1, id = id + ? WHERE id BETWEEN ? AND ?", {b % 3, a, a + 5}); break;
      case kDeleteRange: s.store.exec("DELETE FROM t WHERE id BETWEEN ? AND ?", {std::min(a, b), std::max(a, b)}); break;
      case kDeleteAll: s.store.exec("DELETE FROM t"); break;
      case kRollback:
        s.store.savepoint_begin();
        s.store.exec("INSERT OR REPLACE INTO t VALUES (?, ?, ?)", {a, keyOf(b), b});
        s.store.savepoint_rollback();
        break;
      case kCommit:
        releaseAll();
        s.store.commit_local();
        break;
      case kDecide: {
        releaseAll();
        s.store.commit_local();
        const std::size_t unconfirmed = s.store.unconfirmed().size();
        s.store.decide(static_cast<std::size_t>(b) % (unconfirmed + 1));
        break;
      }
      case kRecreate:
        s.store.exec("DROP TABLE t");
        s.store.exec("CREATE TABLE t(id INTEGER PRIMARY KEY, k TEXT UNIQUE, v INTEGER)");
        if (a % 2) s.store.exec("INSERT INTO t VALUES (?, 'x', 0)", {b});
        s.store.exec("DROP TABLE IF EXISTS kv");
        if (b % 2) s.store.exec("CREATE TABLE kv(key TEXT PRIMARY KEY, v INTEGER) WITHOUT ROWID");
        break;
      case kKvPut:
      case kKvRename:
      case kKvDelete:
        if (!s.store.observe_live_has_table("kv")) break;
        if (op == kKvPut) s.store.exec("INSERT OR REPLACE INTO kv VALUES (?, ?)", {keyOf(a % 20), b});
        else if (op == kKvRename) s.store.exec("UPDATE OR REPLACE kv SET key = ? WHERE key = ?", {keyOf(b % 20), keyOf(a % 20)});
        else s.store.exec("DELETE FROM kv WHERE key >= ?", {keyOf(a % 20)});
        break;
      case kSavepoint:
        s.store.savepoint_begin();
        ++savepoints;
        break;
      case kRelease:
        if (savepoints > 0) {
          s.store.savepoint_release();
          --savepoints;
        }
        break;
      case kRollbackTo:
        if (savepoints > 0) {
          s.store.savepoint_rollback();
          --savepoints;
        }
        break;
      case kRollbackAll:
        s.store.rollback_open();
        savepoints = 0;
        break;
      case kOpCount: break;
    }
    RC_ASSERT(s.store.observe_live_has_table("kv") == listed(s.store, "kv"));
    if (*rc::gen::inRange(0, 3) == 0) continue;  // some changes pile up between two looks
    mirror.refresh(reader, "t");
    keyed.refresh(reader, "t");
    RC_ASSERT(mirrored(mirror) == wholeTable(s.store));
    RC_ASSERT(mirrored(keyed) == wholeKv(s.store));
  }
}

}  // namespace
}  // namespace durasim
