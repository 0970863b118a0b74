// One simulated object's SQLite storage as a mechanism (runtime.md 4, 7.1): user SQL under the
// platform's authorizer and limits, the implicit transaction, savepoints, the stored alarm, local
// commits, confirmation and the durability decision. Keeps RT-05, RT-06 and RT-07.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "engine/runtime.h"
#include "sim/row_changes.h"
#include "sim/sqlite_vfs.h"
#include "sim/statement_cache.h"

struct sqlite3;

namespace durasim::sim {

inline constexpr int64_t kStorageMaxBytes = 10'000'000'000;  // runtime.md 1: per-object storage

struct LocalCommit {
  uint64_t number = 0;        // 1, 2, ... per store, across incarnations
  uint64_t changes_hash = 0;  // PageDelta::hash of the commit's page delta
  bool schema_changed = false;
  int64_t bytes = 0;          // bytes of database pages the commit wrote
};

// The live connection is the current incarnation's view (open implicit transaction included); the
// durable image holds the confirmed commits only, so it is always a prefix of the local commits
// (RT-07) holding every confirmed one (RT-05). Each unconfirmed commit keeps the page delta it wrote;
// confirming or keeping it replays exactly those bytes on the durable image (by the time the image
// is next read: confirmed deltas are replayed together, a page that several wrote copied once), and
// rolled-back writes never reach a delta (RT-06); only confirm_overtaking, for
// sim.mutant.confirm_out_of_order, makes commits durable before they are confirmed. Time, executor
// and faults belong to the object host.
// One thread at a time; SQL reads the clock and randomness of the store's SqlEnvironment.
class SqliteStore {
 public:
  // In memory; with `file_path`, the file's content (if any) is the initial durable state and the
  // file mirrors every local commit and durability decision.
  explicit SqliteStore(SqlEnvironment env, std::optional<std::string> file_path = std::nullopt);
  ~SqliteStore();
  SqliteStore(const SqliteStore&) = delete;
  SqliteStore& operator=(const SqliteStore&) = delete;

  // ---- The live connection
  // One user statement, `?` parameters bound in order, all rows materialised. A write opens the
  // implicit transaction. Throws SqlError (the statement had no effect, the transaction continues)
  // or SqlCriticalError (the whole implicit transaction was rolled back).
  SqlCursor exec(std::string_view sql, const std::vector<SqlValue>& params = {});
  bool in_transaction() const { return in_transaction_; }
  // Savepoints nest inside the implicit transaction (transactionSync); begin opens it if needed.
  // Once the whole transaction was rolled back (critical error, rollback_open) its savepoints are
  // gone, and releasing or rolling back with none open does nothing.
  void savepoint_begin();
  void savepoint_release();
  void savepoint_rollback();
  // Commits the implicit transaction locally. nullopt if none is open or it wrote nothing (no
  // number is used). REQUIRES: no savepoint open. Throws SqlError, the transaction rolled back, if
  // SQLite refuses the commit (a deferred foreign key violation).
  std::optional<LocalCommit> commit_local();
  // Discards the open implicit transaction, if any.
  void rollback_open();

  // ---- The object's single alarm, a row of an internal table: it joins the implicit transaction,
  // rolls back with savepoints and is durable with commits. get_alarm reads the row again only when
  // the row-change journal noted a change of its table since the last read (a write, a rollback
  // that undid one, a new connection or a schema change); otherwise it answers what that read gave.
  std::optional<int64_t> get_alarm();
  void set_alarm(int64_t time);
  void delete_alarm();

  // Drops every user table, view and row, and the alarm, inside the implicit transaction.
  // Throws TypeError inside a savepoint (runtime.md 4.3).
  void delete_all();
  int64_t database_size() const;
  // Growth past `cap` bytes is SqlCriticalError(full); the cap never drops below the current size.
  void set_max_bytes(int64_t cap);

  // ---- Durability
  // REQUIRES: `number` is the first unconfirmed commit (commits confirm in order).
  void confirm(uint64_t number);
  // sim.mutant.confirm_out_of_order only: `number` confirms ahead of earlier unconfirmed commits. A
  // page delta replays only on the image it was made from, so every unconfirmed commit up to
  // `number` becomes durable with it; a number no longer unconfirmed changes nothing.
  void confirm_overtaking(uint64_t number);
  // The number the next local commit will get (numbers never repeat, even after a decide()).
  uint64_t next_commit_number() const { return last_number_ + 1; }
  std::vector<uint64_t> unconfirmed() const;
  // The incarnation ended: the first `keep` unconfirmed commits become durable, the others and the
  // open transaction vanish, and the live connection reopens on exactly the durable state. When
  // every commit is kept and a fresh connection could not be told apart from the old one, the old
  // one (with its prepared statements) serves on: see reuse_live_connection.
  // REQUIRES: keep <= unconfirmed().size().
  void decide(std::size_t keep);

  // FNV-1a 64 of a canonical dump: schema, every table by name with its rows sorted, values typed,
  // and the alarm. durable_digest covers the confirmed commits only.
  uint64_t live_digest();
  uint64_t durable_digest();
  // Whether the live connection holds exactly the durable state (no open transaction, and the same
  // database file, or else the same canonical dump).
  bool live_is_durable();

  // ---- Observation (sim/store_view.h): one read-only statement, as user SQL sees it (the alarm
  // table stays hidden), on the live state (the open implicit transaction included) or on the
  // durable state (confirmed commits only). It never writes, never opens or ends the implicit
  // transaction, and leaves every page as it was. Throws SqlError for any error, and for a
  // statement that could write.
  SqlCursor observe_live(std::string_view sql, const std::vector<SqlValue>& params = {});
  SqlCursor observe_durable(std::string_view sql, const std::vector<SqlValue>& params = {});
  std::optional<int64_t> observe_live_alarm();
  std::optional<int64_t> observe_durable_alarm();
  // Whether the live schema (the open transaction's changes included) has a table named `table`,
  // read from the connection's parsed schema instead of by a statement over sqlite_master.
  bool observe_live_has_table(std::string_view table);
  // The rowids of the live table `table` changed since `cursor`, advancing it; nullopt when it must
  // be read whole (sim/row_changes.h).
  std::optional<std::vector<int64_t>> observe_live_changes(std::string_view table, RowChangeCursor& cursor);
  // The keys (first column) of the live WITHOUT ROWID table `table` changed since `cursor`, likewise.
  std::optional<std::vector<std::string>> observe_live_key_changes(std::string_view table, RowChangeCursor& cursor);

 private:
  enum class Access { user, internal };
  struct PendingCommit {
    uint64_t number = 0;
    PageDelta delta;
  };
  struct ConnectionCloser {
    void operator()(sqlite3* db) const;
  };
  using Connection = std::unique_ptr<sqlite3, ConnectionCloser>;

  // A connection on a copy of the durable image, for observe_durable; dropped when the image changes.
  struct DurableView;

  void open_live();
  bool reuse_live_connection();
  bool live_holds_virtual_table();
  void configure_live();
  SqlCursor observe(sqlite3* db, StatementCache& statements, std::string_view sql, const std::vector<SqlValue>& params);
  sqlite3* durable_connection();
  void make_durable(PageDelta delta);  // joins confirmed_, replayed on the next durable_image()
  const std::string& durable_image();  // with every confirmed commit replayed
  SqlCursor run(std::string_view sql, const std::vector<SqlValue>& params, Access access);
  SqlCursor internal(std::string_view sql, const std::vector<SqlValue>& params = {});
  // The first column of the first row of an internal query, if it is an integer.
  std::optional<int64_t> internal_int(std::string_view sql);
  void reject_more_statements(std::string_view rest);
  [[noreturn]] void fail(int rc);
  void ensure_transaction();
  void rollback_everything();
  void restart_lost_transaction();
  void apply_max_bytes();
  void mirror_image() const;
  void mirror_delta(const PageDelta& delta) const;
  static int authorize(void* self, int action, const char* arg1, const char* arg2, const char* db, const char* trigger);
  // The preupdate hook (its rowids are sqlite3_int64, that is long long).
  static void note_change(void* self, sqlite3* db, int op, const char* database, const char* table, long long rowid_before,
                          long long rowid_after);
  int authorize_user(int action, const char* arg1, const char* arg2);
  int64_t live_schema_version();

  SqlEnvironment env_;
  std::optional<std::string> file_path_;
  TrackedImage live_image_;    // the live connection's database file
  // The database file after the last confirmed commit: durable_image_ with confirmed_ replayed on
  // it. Confirmed deltas wait to be replayed together (a page written by several is copied once)
  // until the image is read or they hold more bytes than it (durable_image()).
  std::string durable_image_;
  static constexpr int64_t kMinWaitingBytes = 64 * 1024;
  std::vector<PageDelta> confirmed_;
  int64_t confirmed_bytes_ = 0;  // the payload bytes of confirmed_
  Connection live_;
  StatementCache live_statements_;  // after live_: finalized before it closes
  RowChangeJournal live_changes_;   // of the live connection; restarts with it
  // Statements run on the live connection that may have changed its schema (the authorizer saw a
  // schema action or a rollback while preparing them; any that failed; reopenings and rollbacks of
  // the store's own), and the live schema version as read after the last of them.
  uint64_t live_statements_run_ = 0, schema_version_read_after_ = ~uint64_t{0};
  int64_t schema_version_ = 0;
  // get_alarm's last read, valid while the journal notes no change of the alarm table after it.
  RowChangeCursor alarm_cursor_;
  std::optional<int64_t> alarm_;
  bool alarm_read_ = false;
  // Which tables the live schema has, as asked since the last such statement (tables_known_after_).
  std::vector<std::pair<std::string, bool>> tables_known_;
  uint64_t tables_known_after_ = ~uint64_t{0};
  bool in_transaction_ = false;
  uint32_t schema_cookie_ = 0;  // the schema cookie when the implicit transaction began
  std::size_t savepoints_ = 0;  // open savepoints of the implicit transaction
  // Where the journal stood when the implicit transaction and each open savepoint began.
  RowChangeJournal::Mark transaction_mark_;
  std::vector<RowChangeJournal::Mark> savepoint_marks_;
  std::deque<PendingCommit> unconfirmed_;
  uint64_t last_number_ = 0;
  int64_t max_bytes_ = kStorageMaxBytes;
  bool user_statement_ = false;         // the authorizer applies
  bool statement_needs_transaction_ = false;  // the authorizer saw PRAGMA defer_foreign_keys = ...
  bool statement_may_change_schema_ = false;  // the authorizer saw an action that may (may_change_schema)
  // A statement prepared on the live connection may have left state a fresh connection would not
  // have: temp objects, last_insert_rowid(), changes(), total_changes(), data_version.
  bool live_has_connection_state_ = false;
  // Whether the live schema holds a virtual table, as last read, and the schema cookie it was read
  // at: within one connection's life a committed schema has one cookie (see live_holds_virtual_table).
  std::optional<uint32_t> virtual_tables_read_at_;
  bool virtual_table_found_ = false;
  std::unique_ptr<DurableView> durable_view_;
};

}  // namespace durasim::sim
