// The prepared statements of one SQLite connection, kept by SQL text so that a statement the port or
// a checker runs again is not parsed again (the engine's statements are few and fixed). A statement
// is always stepped to completion and reset before its next use; SQLite re-prepares it by itself
// after a schema change. Clear the cache before closing its connection.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <sqlite3.h>

namespace durasim::sim {

struct StatementFinalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};
using Statement = std::unique_ptr<sqlite3_stmt, StatementFinalizer>;

class StatementCache {
 public:
  // What the first preparation learnt besides the statement itself.
  struct Entry {
    Statement statement;
    bool needs_transaction = false;  // the authorizer asked for the implicit transaction
    bool may_change_schema = false;  // the authorizer saw a schema action or a rollback
    std::shared_ptr<const std::vector<std::string>> columns;  // the names the last run saw
    int reprepared = -1;  // how often SQLite had prepared the statement again when they were read
  };

  // At most this many statements are kept (statements whose text embeds values would otherwise grow
  // the cache without bound); past it, new statements are prepared for one use. Entries are never
  // evicted: a statement in use (one whose run opens the implicit transaction runs another) stays.
  static constexpr std::size_t kCapacity = 512;

  // The statement prepared for `sql` under `user` access, or null.
  Entry* find(std::string_view sql, bool user);
  // Keeps a freshly prepared statement and returns it; when the cache is full it goes to the
  // caller's `single_use` slot instead (which must outlive the statement's run).
  Entry& keep(std::string_view sql, bool user, Entry prepared, Entry& single_use);
  void clear() {
    recent_.fill(Recent{});
    entries_.clear();
  }

  // The column names of `stmt` after its first step, shared with the previous run's if they are
  // the same (a schema change may rename them).
  static std::shared_ptr<const std::vector<std::string>> columns(Entry& entry);

 private:
  struct Hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };
  using Entries = std::unordered_map<std::string, Entry, Hash, std::equal_to<>>;
  // The entry last found for SQL text at an address: most statements are string literals, found
  // again here by comparing their text with the entry's key instead of hashing it.
  struct Recent {
    const char* sql = nullptr;
    Entries::value_type* entry = nullptr;
  };
  static constexpr std::size_t kRecent = 64;
  Recent& recent(std::string_view sql, bool user) {
    return recent_[((reinterpret_cast<std::uintptr_t>(sql.data()) >> 3) ^ sql.size() ^ (user ? kRecent - 1 : 0)) % kRecent];
  }

  // Keys are the SQL text prefixed with 'u' (user) or 'i' (internal access).
  Entries entries_;
  std::array<Recent, kRecent> recent_{};
  std::string key_;  // scratch for lookups
};

// Resets a cached statement and clears its bindings when the scope ends, however it ends.
class StatementReset {
 public:
  explicit StatementReset(sqlite3_stmt* stmt) : stmt_(stmt) {}
  ~StatementReset() {
    sqlite3_reset(stmt_);
    sqlite3_clear_bindings(stmt_);
  }
  StatementReset(const StatementReset&) = delete;
  StatementReset& operator=(const StatementReset&) = delete;

 private:
  sqlite3_stmt* stmt_;
};

}  // namespace durasim::sim
