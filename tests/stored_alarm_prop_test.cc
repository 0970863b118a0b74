// SqliteStore::get_alarm answers from its last read while the row-change journal notes no change of
// the alarm table (sim/sqlite_store.h). Property: after any sequence of alarm writes, savepoints,
// rollbacks, failed statements, schema changes, commits, confirmations and durability decisions,
// with the alarm read at random moments in between (so that a stale answer would be kept across the
// change that made it stale), get_alarm gives what a fresh read of the live store gives.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "sim/sqlite_store.h"

namespace durasim::sim {
namespace {

SqlEnvironment environment() {
  return SqlEnvironment{[] { return uint64_t{7}; }, [] { return int64_t{1'700'000'000'000}; }};
}

enum class Op { set, remove, begin, release, rollback, failedStatement, schema, commit, confirm, decide, rollbackOpen, deleteAll };

// `savepoints`: the savepoints the sequence holds open (commit and deleteAll need none).
void apply(SqliteStore& store, int& savepoints, Op op, int64_t value) {
  switch (op) {
    case Op::set:
      return store.set_alarm(value);
    case Op::remove:
      return store.delete_alarm();
    case Op::begin:
      ++savepoints;
      return store.savepoint_begin();
    case Op::release:
      savepoints = std::max(savepoints - 1, 0);
      return store.savepoint_release();
    case Op::rollback:
      savepoints = std::max(savepoints - 1, 0);
      return store.savepoint_rollback();
    case Op::failedStatement:
      // A statement that fails after changing rows: SQLite undoes its own changes.
      store.exec("CREATE TABLE IF NOT EXISTS t(k INTEGER PRIMARY KEY)");
      store.exec("INSERT OR IGNORE INTO t(k) VALUES(1)");
      try {
        store.exec("INSERT INTO t(k) VALUES(2), (1)");
      } catch (const SqlError&) {
      }
      return;
    case Op::schema:
      store.exec("CREATE TABLE IF NOT EXISTS s" + std::to_string(value % 3) + "(x)");
      return;
    case Op::commit:
      if (savepoints == 0) store.commit_local();
      return;
    case Op::confirm:
      if (const auto pending = store.unconfirmed(); !pending.empty()) store.confirm(pending.front());
      return;
    case Op::decide:
      savepoints = 0;
      return store.decide(static_cast<std::size_t>(value) % (store.unconfirmed().size() + 1));
    case Op::rollbackOpen:
      savepoints = 0;
      return store.rollback_open();
    case Op::deleteAll:
      if (savepoints == 0) store.delete_all();
      return;
  }
}

RC_GTEST_PROP(StoredAlarm, GetAlarmGivesWhatAFreshReadGives, ()) {
  SqliteStore store(environment());
  const auto steps = *rc::gen::container<std::vector<std::tuple<Op, int64_t, bool>>>(
      rc::gen::tuple(rc::gen::element(Op::set, Op::remove, Op::begin, Op::release, Op::rollback, Op::failedStatement, Op::schema, Op::commit,
                                      Op::confirm, Op::decide, Op::rollbackOpen, Op::deleteAll),
                     rc::gen::inRange<int64_t>(0, 5), rc::gen::arbitrary<bool>()));
  int savepoints = 0;
  for (const auto& [op, value, read] : steps) {
    apply(store, savepoints, op, value);
    if (read) RC_ASSERT(store.get_alarm() == store.observe_live_alarm());
  }
  RC_ASSERT(store.get_alarm() == store.observe_live_alarm());
}

}  // namespace
}  // namespace durasim::sim
