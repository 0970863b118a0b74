// The event bus's store adapters; see events_store.h. Every statement is the one events.md 3.5
// prescribes; keys, namespaces and ids are bound as TEXT, unmodified.
#include "engine/events_store.h"

#include <iterator>

#include "engine/conventions.h"
#include "engine/event_bus_schema.h"
#include "engine/variants.h"

namespace durasim::events {

using nlohmann::json;

namespace {

std::string stored(const json& value) {
  std::optional<std::string> text = serialize(value);
  if (!text) throw TypeError("event store value is not serializable");
  return std::move(*text);
}

LogRecord recordOf(const SqlRow& row) {
  return LogRecord{row.int64("seq"), row.text("id"), deserialize(row.text("payload")), row.int64("ts")};
}

const char* const kCreateTables =
    "CREATE TABLE IF NOT EXISTS " DURASIM_EVENTS_LOG " ("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " ns TEXT NOT NULL,"
    " id TEXT NOT NULL,"
    " payload TEXT NOT NULL,"
    " ts INTEGER NOT NULL,"
    " UNIQUE (ns, id));";
const char* const kCreateSeqIndex = "CREATE INDEX IF NOT EXISTS " DURASIM_EVENTS_LOG_NS_SEQ_INDEX " ON " DURASIM_EVENTS_LOG " (ns, seq);";
const char* const kCreateKv =
    "CREATE TABLE IF NOT EXISTS " DURASIM_EVENTS_KV " ("
    " key TEXT PRIMARY KEY,"
    " value TEXT NOT NULL) WITHOUT ROWID;";
const char* const kCreateTsIndex = "CREATE INDEX IF NOT EXISTS " DURASIM_EVENTS_LOG_NS_TS_INDEX " ON " DURASIM_EVENTS_LOG " (ns, ts, id);";

}  // namespace

// ---------------------------------------------------------------------------------------------
// SQLite operations (events.md 3.5)

std::optional<json> SqlWorkTxn::get(std::string_view key) {
  ++stats_.gets;
  std::vector<SqlRow> rows = exec_("SELECT value FROM " DURASIM_EVENTS_KV " WHERE key = ?", {toSqlValue(key)}).toVector();
  if (rows.empty()) return std::nullopt;
  return deserialize(rows[0].text("value"));
}

void SqlWorkTxn::put(std::string_view key, const json& value) {
  ++stats_.writes;
  exec_("INSERT INTO " DURASIM_EVENTS_KV " (key, value) VALUES (?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value",
        {toSqlValue(key), toSqlValue(stored(value))});
}

bool SqlWorkTxn::putIfAbsent(std::string_view key, const json& value) {
  ++stats_.writes;
  return exec_("INSERT INTO " DURASIM_EVENTS_KV " (key, value) VALUES (?, ?) ON CONFLICT (key) DO NOTHING",
               {toSqlValue(key), toSqlValue(stored(value))})
             .rowsWritten() == 1;
}

bool SqlWorkTxn::compareAndSwap(std::string_view key, const json& expected, const json& value) {
  ++stats_.writes;
  const std::optional<std::string> was = serialize(expected);
  if (!was) return false;  // nothing stored can equal an unserializable value
  return exec_("UPDATE " DURASIM_EVENTS_KV " SET value = ? WHERE key = ? AND value = ?",
               {toSqlValue(stored(value)), toSqlValue(key), toSqlValue(*was)})
             .rowsWritten() == 1;
}

bool SqlWorkTxn::erase(std::string_view key) {
  ++stats_.writes;
  return exec_("DELETE FROM " DURASIM_EVENTS_KV " WHERE key = ?", {toSqlValue(key)}).rowsWritten() > 0;
}

AppendResult SqlWorkTxn::append(std::string_view ns, std::string_view id, const json& payload) {
  ++stats_.writes;
  std::vector<SqlRow> inserted = exec_("INSERT INTO " DURASIM_EVENTS_LOG " (ns, id, payload, ts) VALUES (?, ?, ?, ?)"
                                       " ON CONFLICT (ns, id) DO NOTHING RETURNING seq",
                                       {toSqlValue(ns), toSqlValue(id), toSqlValue(stored(payload)), toSqlValue(clock_.now())})
                                     .toVector();
  if (!inserted.empty()) return AppendResult{std::string(id), inserted[0].int64("seq"), true};
  const int64_t seq =
      exec_("SELECT seq FROM " DURASIM_EVENTS_LOG " WHERE ns = ? AND id = ?", {toSqlValue(ns), toSqlValue(id)}).one().int64("seq");
  return AppendResult{std::string(id), seq, false};
}

std::optional<LogRecord> SqlWorkTxn::getRecord(std::string_view ns, std::string_view id) {
  ++stats_.gets;
  std::vector<SqlRow> rows =
      exec_("SELECT seq, id, payload, ts FROM " DURASIM_EVENTS_LOG " WHERE ns = ? AND id = ?", {toSqlValue(ns), toSqlValue(id)}).toVector();
  if (rows.empty()) return std::nullopt;
  return recordOf(rows[0]);
}

LogPage SqlWorkTxn::list(std::string_view ns, int64_t after, int64_t limit) {
  ++stats_.lists;
  std::vector<SqlRow> rows =
      orderByTimestamp_
          ? exec_("SELECT seq, id, payload, ts FROM " DURASIM_EVENTS_LOG " WHERE ns = ? ORDER BY ts, id LIMIT ? OFFSET ?",
                  {toSqlValue(ns), toSqlValue(limit + 1), toSqlValue(after)})
                .toVector()
          : exec_("SELECT seq, id, payload, ts FROM " DURASIM_EVENTS_LOG " WHERE ns = ? AND seq > ? ORDER BY seq LIMIT ?",
                  {toSqlValue(ns), toSqlValue(after), toSqlValue(limit + 1)})
                .toVector();
  LogPage page;
  page.more = static_cast<int64_t>(rows.size()) > limit;
  if (page.more) rows.erase(rows.begin() + limit, rows.end());
  for (const SqlRow& row : rows) page.items.push_back(recordOf(row));
  return page;
}

int64_t SqlWorkTxn::count(std::string_view ns, int64_t limit) {
  ++stats_.counts;
  return exec_("SELECT COUNT(*) AS n FROM (SELECT 1 FROM " DURASIM_EVENTS_LOG " WHERE ns = ? LIMIT ?)", {toSqlValue(ns), toSqlValue(limit)})
      .one()
      .int64("n");
}

bool SqlWorkTxn::eraseRecord(std::string_view ns, std::string_view id) {
  ++stats_.writes;
  return exec_("DELETE FROM " DURASIM_EVENTS_LOG " WHERE ns = ? AND id = ?", {toSqlValue(ns), toSqlValue(id)}).rowsWritten() > 0;
}

// ---------------------------------------------------------------------------------------------
// The SQLite adapter

SqliteWorkStore::SqliteWorkStore(ObjectContext& ctx)
    : SqliteWorkStore(ctx.storage, ctx.clock, variants::enabled(ctx, variants::kEventsOrderByTimestamp)) {}

SqliteWorkStore::SqliteWorkStore(ObjectStorage& storage, Clock& clock, bool orderByTimestamp)
    : storage_(storage),
      clock_(clock),
      orderByTimestamp_(orderByTimestamp),
      ops_([&storage](std::string_view sql, std::vector<SqlValue> params) { return storage.execValues(sql, std::move(params)); }, clock,
           stats_, orderByTimestamp) {
  storage_.exec(kCreateTables);
  storage_.exec(kCreateSeqIndex);
  storage_.exec(kCreateKv);
  if (orderByTimestamp_) storage_.exec(kCreateTsIndex);
}

SqlWorkTxn SqliteWorkStore::within(StorageTxn& txn) {
  return SqlWorkTxn([&txn](std::string_view sql, std::vector<SqlValue> params) { return txn.execValues(sql, std::move(params)); }, clock_,
                    stats_, orderByTimestamp_);
}

void SqliteWorkStore::runAtomically(const std::function<void(WorkTxn&)>& body) {
  try {
    storage_.transactionSync([&](StorageTxn& txn) {
      SqlWorkTxn ops = within(txn);
      body(ops);
    });
  } catch (...) {
    ++stats_.atomics;
    throw;
  }
  ++stats_.atomics;
}

// ---------------------------------------------------------------------------------------------
// The in-memory adapter (events.md 3.6)

std::optional<json> InMemoryWorkStore::get(std::string_view key) {
  ++stats_.gets;
  const auto it = current_->kv.find(key);
  if (it == current_->kv.end()) return std::nullopt;
  return deserialize(it->second);
}

void InMemoryWorkStore::put(std::string_view key, const json& value) {
  ++stats_.writes;
  current_->kv.insert_or_assign(std::string(key), stored(value));
}

bool InMemoryWorkStore::putIfAbsent(std::string_view key, const json& value) {
  ++stats_.writes;
  std::string text = stored(value);
  return current_->kv.emplace(std::string(key), std::move(text)).second;
}

bool InMemoryWorkStore::compareAndSwap(std::string_view key, const json& expected, const json& value) {
  ++stats_.writes;
  const auto it = current_->kv.find(key);
  const std::optional<std::string> was = serialize(expected);
  if (it == current_->kv.end() || !was || it->second != *was) return false;
  it->second = stored(value);
  return true;
}

bool InMemoryWorkStore::erase(std::string_view key) {
  ++stats_.writes;
  const auto it = current_->kv.find(key);
  if (it == current_->kv.end()) return false;
  current_->kv.erase(it);
  return true;
}

AppendResult InMemoryWorkStore::append(std::string_view ns, std::string_view id, const json& payload) {
  ++stats_.writes;
  const std::pair<std::string, std::string> name{std::string(ns), std::string(id)};
  if (const auto it = current_->byId.find(name); it != current_->byId.end()) return AppendResult{name.second, it->second, false};
  std::string text = stored(payload);
  const int64_t seq = ++current_->lastSeq;
  current_->log[seq] = Record{name.second, std::move(text), now_(), name.first};
  current_->byId[name] = seq;
  return AppendResult{name.second, seq, true};
}

std::optional<LogRecord> InMemoryWorkStore::getRecord(std::string_view ns, std::string_view id) {
  ++stats_.gets;
  const auto it = current_->byId.find({std::string(ns), std::string(id)});
  if (it == current_->byId.end()) return std::nullopt;
  const Record& r = current_->log.at(it->second);
  return LogRecord{it->second, r.id, deserialize(r.payload), r.ts};
}

LogPage InMemoryWorkStore::list(std::string_view ns, int64_t after, int64_t limit) {
  ++stats_.lists;
  LogPage page;
  for (auto it = current_->log.upper_bound(after); it != current_->log.end(); ++it) {
    if (it->second.ns != ns) continue;
    if (static_cast<int64_t>(page.items.size()) == limit) {
      page.more = true;
      break;
    }
    page.items.push_back(LogRecord{it->first, it->second.id, deserialize(it->second.payload), it->second.ts});
  }
  return page;
}

int64_t InMemoryWorkStore::count(std::string_view ns, int64_t limit) {
  ++stats_.counts;
  int64_t n = 0;
  for (const auto& [seq, record] : current_->log)
    if (record.ns == ns && n < limit) ++n;
  return n;
}

bool InMemoryWorkStore::eraseRecord(std::string_view ns, std::string_view id) {
  ++stats_.writes;
  const auto it = current_->byId.find({std::string(ns), std::string(id)});
  if (it == current_->byId.end()) return false;
  current_->log.erase(it->second);
  current_->byId.erase(it);
  return true;
}

void InMemoryWorkStore::runAtomically(const std::function<void(WorkTxn&)>& body) {
  State copy = *current_;
  State* outer = current_;
  current_ = &copy;
  try {
    body(*this);
  } catch (...) {
    current_ = outer;
    ++stats_.atomics;
    throw;
  }
  current_ = outer;
  *current_ = std::move(copy);
  ++stats_.atomics;
}

}  // namespace durasim::events
