// SqliteStore (see sqlite_store.h) on SQLite: runtime.md 4.1-4.5 and 7.1. RT-05/RT-07: confirm and
// decide replay exactly the bytes each commit wrote, in commit order; RT-06: SQLite undoes rolled-back
// writes in the image before a delta is taken.
#include "sim/sqlite_store.h"

#include <sqlite3.h>

#include <algorithm>
#include <array>
#include <climits>
#include <cstdint>
#include <cstring>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <utility>

#include "sim/hash.h"

namespace durasim::sim {
namespace {

// Limits set with sqlite3_limit (runtime.md 1).
constexpr int kRowMaxBytes = 2'000'000;   // string, BLOB or row
constexpr int kSqlMaxBytes = 100'000;     // statement text
constexpr int kSqlMaxParams = 100;        // bound parameters per statement
constexpr int kSqlMaxColumns = 100;       // columns per table
constexpr int kSqlMaxFunctionArgs = 32;   // arguments per SQL function
constexpr int kLikePatternMaxBytes = 50;  // LIKE / GLOB pattern

// Tables with this prefix are the runtime's; user SQL may not touch them (runtime.md 4.1).
constexpr char kInternalPrefix[] = "_cf_";
constexpr char kCreateAlarmTable[] =
    "CREATE TABLE IF NOT EXISTS _cf_alarm(id INTEGER PRIMARY KEY CHECK (id = 0), time INTEGER NOT NULL)";
constexpr char kUserObjects[] =
    "SELECT name FROM sqlite_schema WHERE type = ? AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' "
    "AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' ORDER BY name";
// Pragmas user SQL may run (runtime.md 4.1): read-only introspection, and defer_foreign_keys.
constexpr std::array<const char*, 5> kAllowedPragmas = {"table_info", "index_list", "index_info", "foreign_key_list",
                                                        "defer_foreign_keys"};
constexpr char kDeferForeignKeys[] = "defer_foreign_keys";
// Read by FTS5 inside CREATE VIRTUAL TABLE, which runs in the user statement: allowed read-only.
constexpr char kDataVersion[] = "data_version";
// SQL functions whose result depends on the connection's history rather than on the database.
constexpr std::array<const char*, 3> kConnectionFunctions = {"last_insert_rowid", "changes", "total_changes"};
constexpr char kNotAuthorized[] = "not authorized";  // runtime.md 4.1: `not authorized: SQLITE_AUTH`
// Where the schema cookie lives in the database header (sqlite.org/fileformat2.html, 1.3).
constexpr std::size_t kSchemaCookieOffset = 40;

// Errors that roll back the whole implicit transaction (runtime.md 4.4).
struct CriticalKind {
  int primary;
  SqlCriticalError::Code code;
  const char* message;
};
constexpr std::array<CriticalKind, 4> kCriticalKinds = {{
    {SQLITE_FULL, SqlCriticalError::Code::full, "database or disk is full: SQLITE_FULL"},
    {SQLITE_IOERR, SqlCriticalError::Code::ioerr, "disk I/O error: SQLITE_IOERR"},
    {SQLITE_NOMEM, SqlCriticalError::Code::nomem, "out of memory: SQLITE_NOMEM"},
    {SQLITE_INTERRUPT, SqlCriticalError::Code::interrupt, "interrupted: SQLITE_INTERRUPT"},
}};

// Primary result code -> its C name, for `<message>: SQLITE_<NAME>`.
constexpr std::array<const char*, 29> kCodeNames = {
    "SQLITE_OK",       "SQLITE_ERROR",  "SQLITE_INTERNAL", "SQLITE_PERM",     "SQLITE_ABORT",    "SQLITE_BUSY",
    "SQLITE_LOCKED",   "SQLITE_NOMEM",  "SQLITE_READONLY", "SQLITE_INTERRUPT", "SQLITE_IOERR",    "SQLITE_CORRUPT",
    "SQLITE_NOTFOUND", "SQLITE_FULL",   "SQLITE_CANTOPEN", "SQLITE_PROTOCOL", "SQLITE_EMPTY",    "SQLITE_SCHEMA",
    "SQLITE_TOOBIG",   "SQLITE_CONSTRAINT", "SQLITE_MISMATCH", "SQLITE_MISUSE", "SQLITE_NOLFS",  "SQLITE_AUTH",
    "SQLITE_FORMAT",   "SQLITE_RANGE",  "SQLITE_NOTADB",   "SQLITE_NOTICE",   "SQLITE_WARNING",
};

std::string code_name(int primary) {
  if (primary >= 0 && primary < static_cast<int>(kCodeNames.size())) return kCodeNames[static_cast<std::size_t>(primary)];
  return "SQLITE_CODE_" + std::to_string(primary);
}


// Sets a flag for the lifetime of the scope, then restores it.
class FlagScope {
 public:
  FlagScope(bool& flag, bool value) : flag_(flag), previous_(std::exchange(flag, value)) {}
  ~FlagScope() { flag_ = previous_; }
  FlagScope(const FlagScope&) = delete;
  FlagScope& operator=(const FlagScope&) = delete;

 private:
  bool& flag_;
  bool previous_;
};

bool is_internal_name(const char* name) {
  return name != nullptr && sqlite3_strnicmp(name, kInternalPrefix, static_cast<int>(std::strlen(kInternalPrefix))) == 0;
}

// Authorizer actions whose second argument names a table (sqlite.org/c3ref/c_alter_table.html).
bool second_argument_is_table(int action) {
  switch (action) {
    case SQLITE_CREATE_INDEX:
    case SQLITE_CREATE_TEMP_INDEX:
    case SQLITE_CREATE_TEMP_TRIGGER:
    case SQLITE_CREATE_TRIGGER:
    case SQLITE_DROP_INDEX:
    case SQLITE_DROP_TEMP_INDEX:
    case SQLITE_DROP_TEMP_TRIGGER:
    case SQLITE_DROP_TRIGGER:
    case SQLITE_ALTER_TABLE:
      return true;
    default:
      return false;
  }
}

// Whether a statement with this authorizer action may change the connection's schema: any action
// but reading and writing rows, calling functions and opening or releasing a transaction or
// savepoint (a rollback undoes schema changes; a PRAGMA may change the schema version).
bool may_change_schema(int action, const char* arg1) {
  switch (action) {
    case SQLITE_SELECT:
    case SQLITE_READ:
    case SQLITE_INSERT:
    case SQLITE_UPDATE:
    case SQLITE_DELETE:
    case SQLITE_FUNCTION:
    case SQLITE_RECURSIVE:
      return false;
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
      return arg1 == nullptr || sqlite3_stricmp(arg1, "ROLLBACK") == 0;
    default:
      return true;
  }
}

// Whether a statement reads or makes state that lives in the connection, not in the database file.
bool touches_connection_state(int action, const char* arg1, const char* arg2, const char* db) {
  if (db != nullptr && sqlite3_stricmp(db, "temp") == 0) return true;
  switch (action) {
    case SQLITE_CREATE_TEMP_INDEX:
    case SQLITE_CREATE_TEMP_TABLE:
    case SQLITE_CREATE_TEMP_TRIGGER:
    case SQLITE_CREATE_TEMP_VIEW:
      return true;
    case SQLITE_PRAGMA:
      return sqlite3_stricmp(arg1, kDataVersion) == 0;
    case SQLITE_FUNCTION:
      return std::any_of(kConnectionFunctions.begin(), kConnectionFunctions.end(),
                         [&](const char* name) { return sqlite3_stricmp(arg2, name) == 0; });
    default:
      return false;
  }
}

bool pragma_allowed(const char* name, const char* value) {
  if (value == nullptr && sqlite3_stricmp(name, kDataVersion) == 0) return true;
  return std::any_of(kAllowedPragmas.begin(), kAllowedPragmas.end(),
                     [&](const char* allowed) { return sqlite3_stricmp(name, allowed) == 0; });
}

std::string quote_identifier(std::string_view name) {
  std::string quoted = "\"";
  for (char c : name) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

uint32_t schema_cookie(const std::string& image) {
  if (image.size() < kSchemaCookieOffset + 4) return 0;
  uint32_t cookie = 0;
  for (std::size_t i = 0; i < 4; ++i) cookie = (cookie << 8) | static_cast<unsigned char>(image[kSchemaCookieOffset + i]);
  return cookie;
}

// ---------------------------------------------------------------------------------------------
// Values

int bind_value(sqlite3_stmt* stmt, int index, const SqlValue& value) {
  struct Binder {
    sqlite3_stmt* stmt;
    int index;
    int operator()(SqlNull) const { return sqlite3_bind_null(stmt, index); }
    int operator()(int64_t v) const { return sqlite3_bind_int64(stmt, index, v); }
    int operator()(double v) const { return sqlite3_bind_double(stmt, index, v); }
    int operator()(const std::string& v) const {
      return sqlite3_bind_text64(stmt, index, v.data(), v.size(), SQLITE_STATIC, SQLITE_UTF8);
    }
    int operator()(const SqlBlob& v) const { return sqlite3_bind_blob64(stmt, index, v.bytes.data(), v.bytes.size(), SQLITE_STATIC); }
  };
  return std::visit(Binder{stmt, index}, value);
}

SqlValue column_value(sqlite3_stmt* stmt, int i) {
  switch (sqlite3_column_type(stmt, i)) {
    case SQLITE_INTEGER:
      return static_cast<int64_t>(sqlite3_column_int64(stmt, i));
    case SQLITE_FLOAT:
      return sqlite3_column_double(stmt, i);
    case SQLITE_TEXT: {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(stmt, i));
      return std::string(text, static_cast<std::size_t>(sqlite3_column_bytes(stmt, i)));
    }
    case SQLITE_BLOB: {
      const auto* blob = static_cast<const char*>(sqlite3_column_blob(stmt, i));
      const auto size = static_cast<std::size_t>(sqlite3_column_bytes(stmt, i));
      return SqlBlob{size == 0 ? std::string() : std::string(blob, size)};
    }
    default:
      return SqlNull{};
  }
}

std::vector<SqlValue> row_values(sqlite3_stmt* stmt) {
  std::vector<SqlValue> values;
  const int count = sqlite3_column_count(stmt);
  values.reserve(static_cast<std::size_t>(count));
  for (int i = 0; i < count; ++i) values.push_back(column_value(stmt, i));
  return values;
}

// A value's text as SQLite converts it (a key of a WITHOUT ROWID table, for the row-change journal).
std::string_view value_text(sqlite3_value* value) {
  const auto* text = reinterpret_cast<const char*>(sqlite3_value_text(value));
  return text ? std::string_view(text, static_cast<std::size_t>(sqlite3_value_bytes(value))) : std::string_view();
}

// ---------------------------------------------------------------------------------------------
// Deterministic random() and randomblob(): one environment draw per call (runtime.md 2.4).

void sql_random(sqlite3_context* context, int, sqlite3_value**) {
  const auto* env = static_cast<const SqlEnvironment*>(sqlite3_user_data(context));
  auto value = static_cast<int64_t>(env->random_bits());
  // As SQLite's own random(): never INT64_MIN, so abs(random()) cannot overflow.
  if (value < 0) value = -(value & INT64_MAX);
  sqlite3_result_int64(context, value);
}

void sql_randomblob(sqlite3_context* context, int, sqlite3_value** argv) {
  const auto* env = static_cast<const SqlEnvironment*>(sqlite3_user_data(context));
  const int64_t size = std::max<int64_t>(sqlite3_value_int64(argv[0]), 1);
  if (size > sqlite3_limit(sqlite3_context_db_handle(context), SQLITE_LIMIT_LENGTH, -1)) {
    sqlite3_result_error_toobig(context);
    return;
  }
  std::string bytes(static_cast<std::size_t>(size), '\0');
  uint64_t state = env->random_bits();
  for (std::size_t i = 0; i < bytes.size(); ++i) {
    if (i % 8 == 0) state = splitmix64(state);
    bytes[i] = static_cast<char>((state >> (8 * (i % 8))) & 0xff);
  }
  sqlite3_result_blob64(context, bytes.data(), bytes.size(), SQLITE_TRANSIENT);
}

// ---------------------------------------------------------------------------------------------
// Internal queries that cannot fail in a well-formed database (a failure is a bug: logic_error).

std::vector<std::vector<SqlValue>> query_rows(sqlite3* db, std::string_view sql, const std::vector<SqlValue>& params = {}) {
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db, sql.data(), static_cast<int>(sql.size()), &raw, nullptr);
  Statement stmt(raw);
  for (std::size_t i = 0; rc == SQLITE_OK && i < params.size(); ++i) rc = bind_value(raw, static_cast<int>(i + 1), params[i]);
  std::vector<std::vector<SqlValue>> rows;
  while (rc == SQLITE_OK && (rc = sqlite3_step(raw)) == SQLITE_ROW) {
    rows.push_back(row_values(raw));
    rc = SQLITE_OK;
  }
  if (rc != SQLITE_DONE) throw std::logic_error("internal SQL failed: " + std::string(sql) + ": " + sqlite3_errmsg(db));
  return rows;
}

std::optional<int64_t> query_int(sqlite3* db, std::string_view sql) {
  const auto rows = query_rows(db, sql);
  if (rows.empty() || rows[0].empty() || !std::holds_alternative<int64_t>(rows[0][0])) return std::nullopt;
  return std::get<int64_t>(rows[0][0]);
}

std::vector<std::string> user_objects(sqlite3* db, const char* type) {
  std::vector<std::string> names;
  for (const auto& row : query_rows(db, kUserObjects, {std::string(type)})) names.push_back(std::get<std::string>(row[0]));
  return names;
}

// ---------------------------------------------------------------------------------------------
// Canonical dump for digests: length-prefixed, typed, so distinct states never encode alike.

void put_uint64(std::string& out, uint64_t value) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

void put_bytes(std::string& out, char tag, const std::string& bytes) {
  out.push_back(tag);
  put_uint64(out, bytes.size());
  out += bytes;
}

void put_value(std::string& out, const SqlValue& value) {
  struct Encoder {
    std::string& out;
    void operator()(SqlNull) const { out.push_back('n'); }
    void operator()(int64_t v) const {
      out.push_back('i');
      put_uint64(out, static_cast<uint64_t>(v));
    }
    void operator()(double v) const {
      uint64_t bits = 0;
      std::memcpy(&bits, &v, sizeof bits);
      out.push_back('r');
      put_uint64(out, bits);
    }
    void operator()(const std::string& v) const { put_bytes(out, 't', v); }
    void operator()(const SqlBlob& v) const { put_bytes(out, 'b', v.bytes); }
  };
  std::visit(Encoder{out}, value);
}

std::string encode_row(const std::vector<SqlValue>& row) {
  std::string out;
  put_uint64(out, row.size());
  for (const SqlValue& value : row) put_value(out, value);
  return out;
}

// Rows sorted by their encoding: independent of storage order and collations.
std::string dump_table(sqlite3* db, const std::string& table) {
  std::vector<std::string> rows;
  for (const auto& row : query_rows(db, "SELECT * FROM " + quote_identifier(table))) rows.push_back(encode_row(row));
  std::sort(rows.begin(), rows.end());
  std::string out;
  put_bytes(out, 'T', table);
  put_uint64(out, rows.size());
  for (const std::string& row : rows) out += row;
  return out;
}

std::string canonical_dump(sqlite3* db) {
  std::string out;
  for (const auto& row : query_rows(db,
                                    "SELECT type, name, tbl_name, sql FROM sqlite_schema "
                                    "WHERE name NOT LIKE '\\_cf\\_%' ESCAPE '\\' ORDER BY type, name"))
    out += encode_row(row);
  for (const auto& row : query_rows(db,
                                    "SELECT name FROM sqlite_schema WHERE type = 'table' "
                                    "AND name NOT LIKE '\\_cf\\_%' ESCAPE '\\' ORDER BY name"))
    out += dump_table(db, std::get<std::string>(row[0]));
  const std::optional<int64_t> alarm = query_int(db, "SELECT time FROM _cf_alarm");
  out += "alarm";
  out += encode_row({alarm ? SqlValue(*alarm) : SqlValue(SqlNull{})});
  return out;
}

// ---------------------------------------------------------------------------------------------
// The optional file mirror

std::string read_file(const std::optional<std::string>& path) {
  if (!path || !std::filesystem::exists(*path)) return {};
  std::ifstream in(*path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Construction and the live connection

void SqliteStore::ConnectionCloser::operator()(sqlite3* db) const { sqlite3_close_v2(db); }

SqliteStore::SqliteStore(SqlEnvironment env, std::optional<std::string> file_path)
    : env_(std::move(env)), file_path_(std::move(file_path)), live_image_(read_file(file_path_)) {
  open_live();
  internal(kCreateAlarmTable);  // autocommit: part of the initial durable state
  live_image_.forget_changes();
  durable_image_ = live_image_.bytes();
  mirror_image();
}

struct SqliteStore::DurableView {
  TrackedImage image;
  Connection db;
  StatementCache statements;  // after db: finalized before it closes
};

SqliteStore::~SqliteStore() = default;

void SqliteStore::open_live() {
  ++live_statements_run_;
  live_statements_.clear();
  live_has_connection_state_ = false;
  virtual_tables_read_at_.reset();
  live_.reset(open_image(live_image_));
  live_changes_.restart();
  configure_live();
}

void SqliteStore::configure_live() {
  sqlite3* db = live_.get();
  sqlite3_limit(db, SQLITE_LIMIT_LENGTH, kRowMaxBytes);
  sqlite3_limit(db, SQLITE_LIMIT_SQL_LENGTH, kSqlMaxBytes);
  sqlite3_limit(db, SQLITE_LIMIT_VARIABLE_NUMBER, kSqlMaxParams);
  sqlite3_limit(db, SQLITE_LIMIT_COLUMN, kSqlMaxColumns);
  sqlite3_limit(db, SQLITE_LIMIT_FUNCTION_ARG, kSqlMaxFunctionArgs);
  sqlite3_limit(db, SQLITE_LIMIT_LIKE_PATTERN_LENGTH, kLikePatternMaxBytes);
  sqlite3_create_function_v2(db, "random", 0, SQLITE_UTF8 | SQLITE_INNOCUOUS, &env_, sql_random, nullptr, nullptr, nullptr);
  sqlite3_create_function_v2(db, "randomblob", 1, SQLITE_UTF8 | SQLITE_INNOCUOUS, &env_, sql_randomblob, nullptr, nullptr,
                             nullptr);
  sqlite3_set_authorizer(db, &SqliteStore::authorize, this);
  // Also keeps DELETE without WHERE row by row (SQLite's truncation would note nothing).
  sqlite3_preupdate_hook(db, &SqliteStore::note_change, this);
  internal("PRAGMA temp_store = MEMORY");    // statement journals and temp tables stay off the disk
  internal("PRAGMA foreign_keys = ON");       // always enforced (runtime.md 4.1)
  apply_max_bytes();
}

// ---------------------------------------------------------------------------------------------
// Statements

SqlCursor SqliteStore::exec(std::string_view sql, const std::vector<SqlValue>& params) {
  ClockScope clock(env_);
  return run(sql, params, Access::user);
}

SqlCursor SqliteStore::internal(std::string_view sql, const std::vector<SqlValue>& params) {
  return run(sql, params, Access::internal);
}

std::optional<int64_t> SqliteStore::internal_int(std::string_view sql) {
  const std::optional<SqlRow> row = internal(sql).next();
  if (!row || row->size() == 0 || !std::holds_alternative<int64_t>((*row)[0])) return std::nullopt;
  return std::get<int64_t>((*row)[0]);
}

namespace {

// Counts a statement that threw as one that may have changed the schema: SQLite may roll back the
// whole transaction on an error, undoing its schema changes with the rest.
class CountIfThrown {
 public:
  explicit CountIfThrown(uint64_t& count) : count_(count) {}
  ~CountIfThrown() {
    if (std::uncaught_exceptions() > exceptions_) ++count_;
  }

 private:
  uint64_t& count_;
  const int exceptions_ = std::uncaught_exceptions();
};

}  // namespace

SqlCursor SqliteStore::run(std::string_view sql, const std::vector<SqlValue>& params, Access access) {
  const CountIfThrown failed(live_statements_run_);
  const bool user = access == Access::user;
  FlagScope scope(user_statement_, user);
  statement_needs_transaction_ = false;
  statement_may_change_schema_ = false;
  sqlite3* db = live_.get();

  StatementCache::Entry* entry = live_statements_.find(sql, user);
  StatementCache::Entry single_use;  // when the cache is full
  if (!entry) {
    sqlite3_stmt* raw = nullptr;
    const char* tail = nullptr;
    // Longer text than INT_MAX is still longer than the SQL length limit: SQLite reports TOOBIG.
    const int length = static_cast<int>(std::min<std::size_t>(sql.size(), INT_MAX));
    if (const int rc = sqlite3_prepare_v2(db, sql.data(), length, &raw, &tail); rc != SQLITE_OK) fail(rc);
    Statement stmt(raw);
    if (user) reject_more_statements(std::string_view(tail, static_cast<std::size_t>(sql.data() + length - tail)));
    if (!stmt) return SqlCursor();
    entry = &live_statements_.keep(sql, user, {std::move(stmt), statement_needs_transaction_, statement_may_change_schema_, nullptr}, single_use);
  }
  if (entry->may_change_schema) ++live_statements_run_;
  sqlite3_stmt* raw = entry->statement.get();
  const StatementReset reset(raw);
  if (params.size() != static_cast<std::size_t>(sqlite3_bind_parameter_count(raw)))
    throw SqlError("wrong number of parameter bindings for SQL query: SQLITE_RANGE");
  for (std::size_t i = 0; i < params.size(); ++i)
    if (const int rc = bind_value(raw, static_cast<int>(i + 1), params[i]); rc != SQLITE_OK) fail(rc);
  if (user && (entry->needs_transaction || !sqlite3_stmt_readonly(raw))) ensure_transaction();

  const int64_t changes_before = sqlite3_total_changes64(db);
  std::vector<SqlRow> rows;
  int rc = sqlite3_step(raw);
  // Names after the first step: a schema change may have re-prepared the statement.
  auto columns = StatementCache::columns(*entry);
  for (; rc == SQLITE_ROW; rc = sqlite3_step(raw)) rows.emplace_back(columns, row_values(raw));
  if (rc != SQLITE_DONE) fail(rc);
  const int64_t written = sqlite3_total_changes64(db) - changes_before;
  const int64_t read = std::max<int64_t>(static_cast<int64_t>(rows.size()),
                                         sqlite3_stmt_status(raw, SQLITE_STMTSTATUS_FULLSCAN_STEP, 1));
  return SqlCursor(std::move(columns), std::move(rows), read, written);
}

// ---------------------------------------------------------------------------------------------
// Observation

SqlCursor SqliteStore::observe_live(std::string_view sql, const std::vector<SqlValue>& params) {
  return observe(live_.get(), live_statements_, sql, params);
}

SqlCursor SqliteStore::observe_durable(std::string_view sql, const std::vector<SqlValue>& params) {
  sqlite3* db = durable_connection();
  return observe(db, durable_view_->statements, sql, params);
}

// Checks ask at most events whether a table exists; the answer changes only with the schema, so it
// is kept until a statement that may have changed the schema runs (as the schema version is).
bool SqliteStore::observe_live_has_table(std::string_view table) {
  if (tables_known_after_ != live_statements_run_) {
    tables_known_.clear();
    tables_known_after_ = live_statements_run_;
  }
  for (const auto& [name, exists] : tables_known_)
    if (name == table) return exists;
  ClockScope clock(env_);
  FlagScope scope(user_statement_, true);
  const std::string name(table);
  // With no column named, SQLITE_OK exactly when `name` is a table of the main schema (not a view).
  const bool exists = sqlite3_table_column_metadata(live_.get(), "main", name.c_str(), nullptr, nullptr, nullptr, nullptr, nullptr, nullptr) == SQLITE_OK;
  tables_known_.emplace_back(name, exists);
  return exists;
}

std::optional<std::vector<int64_t>> SqliteStore::observe_live_changes(std::string_view table, RowChangeCursor& cursor) {
  return live_changes_.since(table, cursor, live_schema_version());
}

std::optional<std::vector<std::string>> SqliteStore::observe_live_key_changes(std::string_view table, RowChangeCursor& cursor) {
  return live_changes_.keys_since(table, cursor, live_schema_version());
}

// Asked before every incremental read of a table: read again only after a statement ran on the live
// connection (the schema changes by no other way; reading it runs one, counted before it is read).
int64_t SqliteStore::live_schema_version() {
  if (schema_version_read_after_ != live_statements_run_) {
    schema_version_ = internal_int("PRAGMA schema_version").value_or(0);
    schema_version_read_after_ = live_statements_run_;
  }
  return schema_version_;
}

void SqliteStore::note_change(void* self, sqlite3* db, int op, const char* database, const char* table, sqlite3_int64 rowid_before,
                              sqlite3_int64 rowid_after) {
  if (std::strcmp(database, "main") != 0) return;
  RowChangeJournal& journal = static_cast<SqliteStore*>(self)->live_changes_;
  if (op != SQLITE_INSERT) journal.note(table, rowid_before);               // the row deleted or updated
  if (op != SQLITE_DELETE && (op == SQLITE_INSERT || rowid_after != rowid_before)) journal.note(table, rowid_after);
  // SQLite reports rowid 0 for a WITHOUT ROWID table: its rows are named by their first column.
  if (rowid_before != 0 || rowid_after != 0) return;
  sqlite3_value* key = nullptr;
  if (op != SQLITE_INSERT && sqlite3_preupdate_old(db, 0, &key) == SQLITE_OK) journal.note_key(table, value_text(key));
  if (op != SQLITE_DELETE && sqlite3_preupdate_new(db, 0, &key) == SQLITE_OK) journal.note_key(table, value_text(key));
}

std::optional<int64_t> SqliteStore::observe_live_alarm() { return internal_int("SELECT time FROM _cf_alarm"); }

std::optional<int64_t> SqliteStore::observe_durable_alarm() {
  return query_int(durable_connection(), "SELECT time FROM _cf_alarm");
}

sqlite3* SqliteStore::durable_connection() {
  if (!durable_view_) {
    durable_view_ = std::make_unique<DurableView>(DurableView{TrackedImage(durable_image()), nullptr, StatementCache()});
    durable_view_->db.reset(open_image(durable_view_->image));
    sqlite3_set_authorizer(durable_view_->db.get(), &SqliteStore::authorize, this);
  }
  return durable_view_->db.get();
}

SqlCursor SqliteStore::observe(sqlite3* db, StatementCache& statements, std::string_view sql, const std::vector<SqlValue>& params) {
  ClockScope clock(env_);
  FlagScope scope(user_statement_, true);
  const auto error = [db](int rc) { return SqlError(std::string(sqlite3_errmsg(db)) + ": " + code_name(rc & 0xff)); };
  StatementCache::Entry* entry = statements.find(sql, true);
  StatementCache::Entry single_use;  // when the cache is full
  if (!entry) {
    FlagScope needs(statement_needs_transaction_, false);  // set by the authorizer while preparing
    FlagScope changes(statement_may_change_schema_, false);
    sqlite3_stmt* raw = nullptr;
    const char* tail = nullptr;
    const int length = static_cast<int>(std::min<std::size_t>(sql.size(), INT_MAX));
    if (const int rc = sqlite3_prepare_v2(db, sql.data(), length, &raw, &tail); rc != SQLITE_OK) throw error(rc);
    Statement stmt(raw);
    if (!stmt) return SqlCursor();
    if (std::string_view(tail, static_cast<std::size_t>(sql.data() + length - tail)).find_first_not_of(" \t\r\n;") != std::string_view::npos)
      throw SqlError("the store view runs one statement at a time: SQLITE_ERROR");
    entry = &statements.keep(sql, true, {std::move(stmt), statement_needs_transaction_, statement_may_change_schema_, nullptr}, single_use);
  }
  sqlite3_stmt* raw = entry->statement.get();
  const StatementReset reset(raw);
  if (!sqlite3_stmt_readonly(raw)) throw SqlError("the store view is read-only: SQLITE_READONLY");
  if (params.size() != static_cast<std::size_t>(sqlite3_bind_parameter_count(raw)))
    throw SqlError("wrong number of parameter bindings for SQL query: SQLITE_RANGE");
  for (std::size_t i = 0; i < params.size(); ++i)
    if (const int rc = bind_value(raw, static_cast<int>(i + 1), params[i]); rc != SQLITE_OK) throw error(rc);
  std::vector<SqlRow> rows;
  int rc = sqlite3_step(raw);
  auto columns = StatementCache::columns(*entry);
  for (; rc == SQLITE_ROW; rc = sqlite3_step(raw)) rows.emplace_back(columns, row_values(raw));
  if (rc != SQLITE_DONE) throw error(rc);
  const auto count = static_cast<int64_t>(rows.size());
  return SqlCursor(std::move(columns), std::move(rows), count, 0);
}

void SqliteStore::reject_more_statements(std::string_view rest) {
  while (!rest.empty()) {
    sqlite3_stmt* raw = nullptr;
    const char* tail = nullptr;
    const int rc = sqlite3_prepare_v2(live_.get(), rest.data(), static_cast<int>(rest.size()), &raw, &tail);
    Statement stmt(raw);
    const auto consumed = static_cast<std::size_t>(tail - rest.data());
    if (rc != SQLITE_OK || stmt || consumed == 0)
      throw SqlError("only one SQL statement per exec is supported: SQLITE_ERROR");
    rest.remove_prefix(consumed);
  }
}

void SqliteStore::fail(int rc) {
  const int primary = rc & 0xff;
  for (const CriticalKind& kind : kCriticalKinds) {
    if (kind.primary != primary) continue;
    rollback_everything();
    throw SqlCriticalError(kind.code, kind.message);
  }
  // Every refusal reads as the platform's, whichever action the authorizer denied.
  const std::string detail = primary == SQLITE_AUTH ? kNotAuthorized : sqlite3_errmsg(live_.get());
  const std::string message = detail + ": " + code_name(primary);
  if (in_transaction_ && sqlite3_get_autocommit(live_.get()) != 0) restart_lost_transaction();
  throw SqlError(message);
}

// ---------------------------------------------------------------------------------------------
// The authorizer (runtime.md 4.1). Internal statements bypass it.

int SqliteStore::authorize(void* self, int action, const char* arg1, const char* arg2, const char* db, const char*) {
  auto* store = static_cast<SqliteStore*>(self);
  if (may_change_schema(action, arg1)) store->statement_may_change_schema_ = true;
  if (store->user_statement_ && touches_connection_state(action, arg1, arg2, db)) store->live_has_connection_state_ = true;
  return store->user_statement_ ? store->authorize_user(action, arg1, arg2) : SQLITE_OK;
}

int SqliteStore::authorize_user(int action, const char* arg1, const char* arg2) {
  switch (action) {
    case SQLITE_TRANSACTION:
    case SQLITE_SAVEPOINT:
    case SQLITE_ATTACH:
    case SQLITE_DETACH:
      return SQLITE_DENY;
    case SQLITE_PRAGMA:
      if (!pragma_allowed(arg1, arg2) || is_internal_name(arg2)) return SQLITE_DENY;
      if (sqlite3_stricmp(arg1, kDeferForeignKeys) == 0 && arg2 != nullptr) statement_needs_transaction_ = true;
      return SQLITE_OK;
    case SQLITE_ANALYZE:
      return SQLITE_OK;  // statistics of every table, internal ones included: no rows are read out
    default:
      if (is_internal_name(arg1) || (second_argument_is_table(action) && is_internal_name(arg2))) return SQLITE_DENY;
      return SQLITE_OK;
  }
}

// ---------------------------------------------------------------------------------------------
// The implicit transaction and savepoints

void SqliteStore::ensure_transaction() {
  if (in_transaction_) return;
  transaction_mark_ = live_changes_.mark(live_statements_run_);
  internal("BEGIN");
  in_transaction_ = true;
  schema_cookie_ = schema_cookie(live_image_.bytes());
}

void SqliteStore::rollback_everything() {
  FlagScope scope(user_statement_, false);
  // SQLite may already have rolled back by itself; then there is nothing left to undo.
  const uint64_t before = live_statements_run_++;
  if (sqlite3_get_autocommit(live_.get()) == 0) sqlite3_exec(live_.get(), "ROLLBACK", nullptr, nullptr, nullptr);
  if (in_transaction_) live_changes_.renote_since(transaction_mark_, before);
  in_transaction_ = false;
  savepoints_ = 0;
  savepoint_marks_.clear();
  live_image_.forget_changes();
}

// A conflict clause (OR ROLLBACK, RAISE(ROLLBACK)) rolled the whole implicit transaction back: it
// continues empty, with the savepoints the caller still holds.
void SqliteStore::restart_lost_transaction() {
  const uint64_t before = live_statements_run_++;  // SQLite rolled the transaction back, its schema changes with it
  live_changes_.renote_since(transaction_mark_, before);
  in_transaction_ = false;
  live_image_.forget_changes();
  ensure_transaction();
  for (std::size_t i = 0; i < savepoints_; ++i) internal("SAVEPOINT _cf_sp" + std::to_string(i));
  savepoint_marks_.assign(savepoints_, live_changes_.mark(live_statements_run_));
}

void SqliteStore::savepoint_begin() {
  ensure_transaction();
  savepoint_marks_.push_back(live_changes_.mark(live_statements_run_));
  internal("SAVEPOINT _cf_sp" + std::to_string(savepoints_));
  ++savepoints_;
}

void SqliteStore::savepoint_release() {
  if (savepoints_ == 0) return;
  --savepoints_;
  savepoint_marks_.pop_back();
  internal("RELEASE _cf_sp" + std::to_string(savepoints_));
}

void SqliteStore::savepoint_rollback() {
  if (savepoints_ == 0) return;
  --savepoints_;
  const std::string name = "_cf_sp" + std::to_string(savepoints_);
  const uint64_t before = live_statements_run_;  // not counting the rollback's own statements
  internal("ROLLBACK TO " + name);
  internal("RELEASE " + name);
  live_changes_.renote_since(savepoint_marks_.back(), before);
  savepoint_marks_.pop_back();
}

std::optional<LocalCommit> SqliteStore::commit_local() {
  if (savepoints_ > 0) throw std::logic_error("commit_local inside a savepoint");
  if (!in_transaction_) return std::nullopt;
  try {
    internal("COMMIT");
  } catch (const SqlError&) {
    rollback_everything();  // a deferred foreign key violation: the transaction cannot commit
    throw;
  }
  in_transaction_ = false;
  std::optional<PageDelta> delta = live_image_.take_changes();
  if (!delta) return std::nullopt;
  const LocalCommit commit{++last_number_, delta->hash(), schema_cookie(live_image_.bytes()) != schema_cookie_,
                           delta->payload_bytes()};
  mirror_delta(*delta);
  unconfirmed_.push_back(PendingCommit{commit.number, std::move(*delta)});
  return commit;
}

void SqliteStore::rollback_open() {
  if (in_transaction_) rollback_everything();
}

// ---------------------------------------------------------------------------------------------
// Alarm, deleteAll, size

std::optional<int64_t> SqliteStore::get_alarm() {
  const std::optional<std::vector<int64_t>> changed = live_changes_.since("_cf_alarm", alarm_cursor_, live_schema_version());
  if (alarm_read_ && changed && changed->empty()) return alarm_;
  alarm_read_ = false;  // until the read below succeeds
  alarm_ = internal_int("SELECT time FROM _cf_alarm");
  alarm_read_ = true;
  return alarm_;
}

void SqliteStore::set_alarm(int64_t time) {
  ensure_transaction();
  internal("INSERT INTO _cf_alarm(id, time) VALUES(0, ?) ON CONFLICT(id) DO UPDATE SET time = excluded.time", {time});
}

void SqliteStore::delete_alarm() {
  ensure_transaction();
  internal("DELETE FROM _cf_alarm WHERE id = 0");  // a seek: no page written when there is none
}

void SqliteStore::delete_all() {
  if (savepoints_ > 0) throw TypeError("deleteAll() cannot be called inside a transaction");
  ensure_transaction();
  sqlite3* db = live_.get();
  // Deferred, dropping a parent table before its child is no violation once both are gone.
  const bool deferred = query_int(db, "PRAGMA defer_foreign_keys").value_or(0) != 0;
  internal("PRAGMA defer_foreign_keys = ON");
  for (const std::string& view : user_objects(db, "view")) internal("DROP VIEW IF EXISTS " + quote_identifier(view));
  // IF EXISTS: dropping a virtual table drops its shadow tables, listed after it.
  for (const std::string& table : user_objects(db, "table")) internal("DROP TABLE IF EXISTS " + quote_identifier(table));
  internal(deferred ? "PRAGMA defer_foreign_keys = ON" : "PRAGMA defer_foreign_keys = OFF");
  internal("DELETE FROM _cf_alarm WHERE id = 0");  // a seek: no page written when there is none
}

int64_t SqliteStore::database_size() const {
  return query_int(live_.get(), "PRAGMA page_count").value_or(0) * query_int(live_.get(), "PRAGMA page_size").value_or(0);
}

void SqliteStore::set_max_bytes(int64_t cap) {
  max_bytes_ = cap;
  apply_max_bytes();
}

void SqliteStore::apply_max_bytes() {
  const int64_t page_size = query_int(live_.get(), "PRAGMA page_size").value_or(1);
  internal("PRAGMA max_page_count = " + std::to_string(std::max<int64_t>(max_bytes_ / page_size, 1)));
}

// ---------------------------------------------------------------------------------------------
// Durability

void SqliteStore::confirm(uint64_t number) {
  if (unconfirmed_.empty() || unconfirmed_.front().number != number)
    throw std::logic_error("RT-07: commit " + std::to_string(number) + " confirmed out of order");
  make_durable(std::move(unconfirmed_.front().delta));
  unconfirmed_.pop_front();
  durable_view_.reset();
  // Waiting deltas hold at most the image's size, or kMinWaitingBytes for a small image.
  if (confirmed_bytes_ > std::max(static_cast<int64_t>(durable_image_.size()), kMinWaitingBytes)) durable_image();
}

void SqliteStore::make_durable(PageDelta delta) {
  confirmed_bytes_ += delta.payload_bytes();
  confirmed_.push_back(std::move(delta));
}

const std::string& SqliteStore::durable_image() {
  if (!confirmed_.empty()) {
    PageDelta::apply_in_order(confirmed_, durable_image_);
    confirmed_.clear();
    confirmed_bytes_ = 0;
  }
  return durable_image_;
}

void SqliteStore::confirm_overtaking(uint64_t number) {
  while (!unconfirmed_.empty() && unconfirmed_.front().number <= number) confirm(unconfirmed_.front().number);
}

std::vector<uint64_t> SqliteStore::unconfirmed() const {
  std::vector<uint64_t> numbers;
  for (const PendingCommit& commit : unconfirmed_) numbers.push_back(commit.number);
  return numbers;
}

void SqliteStore::decide(std::size_t keep) {
  if (keep > unconfirmed_.size())
    throw std::logic_error("decide: keeping " + std::to_string(keep) + " of " + std::to_string(unconfirmed_.size()) + " commits");
  const bool keeps_every_commit = keep == unconfirmed_.size();
  for (std::size_t i = 0; i < keep; ++i) make_durable(std::move(unconfirmed_[i].delta));
  unconfirmed_.clear();
  durable_view_.reset();
  if (!keeps_every_commit || !reuse_live_connection()) {
    live_statements_.clear();
    live_.reset();  // closing the connection discards its open transaction
    in_transaction_ = false;
    savepoints_ = 0;
    savepoint_marks_.clear();
    live_image_.replace(durable_image());
    open_live();
  }
  mirror_image();
}

// Reopening costs every prepared statement, so the connection serves the next incarnation when that
// is indistinguishable from a fresh one: no per-connection state was ever touched, no virtual table
// (with caches of its own) exists, and rolling back the open transaction leaves exactly the durable
// bytes. Page caches and prepared statements are not observable.
bool SqliteStore::reuse_live_connection() {
  if (live_has_connection_state_) return false;
  rollback_everything();
  if (live_image_.bytes() != durable_image()) return false;
  return !live_holds_virtual_table();
}

// Asked at every reuse, answered from the schema once per schema: the live state is then a committed
// one, and on one connection every committed schema change raises the schema cookie (a rollback
// restores it with the schema; commits lost in a crash reopen the connection, which forgets).
bool SqliteStore::live_holds_virtual_table() {
  const uint32_t cookie = schema_cookie(live_image_.bytes());
  if (virtual_tables_read_at_ != cookie) {
    virtual_table_found_ = internal_int("SELECT 1 FROM sqlite_schema WHERE sql LIKE 'CREATE VIRTUAL TABLE%' LIMIT 1").has_value();
    virtual_tables_read_at_ = cookie;
  }
  return virtual_table_found_;
}

uint64_t SqliteStore::live_digest() { return fnv1a64(canonical_dump(live_.get())); }

bool SqliteStore::live_is_durable() {
  if (in_transaction_) return false;
  return live_image_.bytes() == durable_image() || live_digest() == durable_digest();
}

uint64_t SqliteStore::durable_digest() {
  TrackedImage copy(durable_image());
  Connection db(open_image(copy));
  return fnv1a64(canonical_dump(db.get()));
}

void SqliteStore::mirror_image() const {
  if (!file_path_) return;
  std::ofstream out(*file_path_, std::ios::binary | std::ios::trunc);
  out.write(live_image_.bytes().data(), static_cast<std::streamsize>(live_image_.bytes().size()));
  if (!out) throw std::runtime_error("cannot write the database mirror " + *file_path_);
}

void SqliteStore::mirror_delta(const PageDelta& delta) const {
  if (!file_path_) return;
  std::filesystem::resize_file(*file_path_, static_cast<std::uintmax_t>(delta.min_size));
  std::filesystem::resize_file(*file_path_, static_cast<std::uintmax_t>(delta.size));
  std::fstream out(*file_path_, std::ios::binary | std::ios::in | std::ios::out);
  for (const PageDelta::Chunk& chunk : delta.chunks) {
    out.seekp(chunk.offset);
    out.write(chunk.bytes.data(), static_cast<std::streamsize>(chunk.bytes.size()));
  }
  if (!out) throw std::runtime_error("cannot write the database mirror " + *file_path_);
}

}  // namespace durasim::sim
