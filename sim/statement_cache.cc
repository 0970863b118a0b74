// The per-connection statement cache; see statement_cache.h.
#include "sim/statement_cache.h"

namespace durasim::sim {

StatementCache::Entry* StatementCache::find(std::string_view sql, bool user) {
  Recent& recent = this->recent(sql, user);
  if (recent.sql == sql.data() && recent.entry) {
    const std::string& key = recent.entry->first;
    if (key.size() == sql.size() + 1 && key[0] == (user ? 'u' : 'i') && std::string_view(key).substr(1) == sql) return &recent.entry->second;
  }
  key_.assign(1, user ? 'u' : 'i');
  key_.append(sql);
  const auto found = entries_.find(std::string_view(key_));
  if (found == entries_.end()) return nullptr;
  recent = Recent{sql.data(), &*found};
  return &found->second;
}

StatementCache::Entry& StatementCache::keep(std::string_view sql, bool user, Entry prepared, Entry& single_use) {
  if (entries_.size() >= kCapacity) return single_use = std::move(prepared);
  std::string key(1, user ? 'u' : 'i');
  key.append(sql);
  return entries_[std::move(key)] = std::move(prepared);
}

std::shared_ptr<const std::vector<std::string>> StatementCache::columns(Entry& entry) {
  sqlite3_stmt* stmt = entry.statement.get();
  // The names are the prepared statement's: they change only when SQLite prepares it again.
  const int reprepared = sqlite3_stmt_status(stmt, SQLITE_STMTSTATUS_REPREPARE, 0);
  if (entry.columns && reprepared == entry.reprepared) return entry.columns;
  entry.reprepared = reprepared;
  const int count = sqlite3_column_count(stmt);
  bool same = entry.columns && entry.columns->size() == static_cast<std::size_t>(count);
  for (int i = 0; same && i < count; ++i) same = (*entry.columns)[static_cast<std::size_t>(i)] == sqlite3_column_name(stmt, i);
  if (!same) {
    std::vector<std::string> names;
    names.reserve(static_cast<std::size_t>(count));
    for (int i = 0; i < count; ++i) names.emplace_back(sqlite3_column_name(stmt, i));
    entry.columns = std::make_shared<const std::vector<std::string>>(std::move(names));
  }
  return entry.columns;
}

}  // namespace durasim::sim
