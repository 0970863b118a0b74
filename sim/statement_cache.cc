// The per-connection statement cache; see statement_cache.h.
#include "sim/statement_cache.h"

namespace durasim::sim {

StatementCache::Entry* StatementCache::find(std::string_view sql, bool user) {
  key_.assign(1, user ? 'u' : 'i');
  key_.append(sql);
  const auto found = entries_.find(std::string_view(key_));
  return found == entries_.end() ? nullptr : &found->second;
}

StatementCache::Entry& StatementCache::keep(std::string_view sql, bool user, Entry prepared, Entry& single_use) {
  if (entries_.size() >= kCapacity) return single_use = std::move(prepared);
  std::string key(1, user ? 'u' : 'i');
  key.append(sql);
  return entries_[std::move(key)] = std::move(prepared);
}

std::shared_ptr<const std::vector<std::string>> StatementCache::columns(Entry& entry) {
  sqlite3_stmt* stmt = entry.statement.get();
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
