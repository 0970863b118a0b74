// Schema migrations (scheduler.md 8): target resolution, future-migration reversal, the atomic
// revert/apply/refresh step and the history table's lifetime (SCH-11, SCH-12). Scripts run one
// statement at a time because ObjectStorage::exec accepts exactly one.
#include "engine/migrations.h"

#include <algorithm>
#include <cctype>
#include <map>
#include <optional>
#include <set>

#include "engine/errors.h"

namespace durasim {

namespace {

// The simulated time in milliseconds, read by SQL: the runtime's store serves its clock to
// julianday('now') at millisecond precision (runtime.md 2.4); ROUND undoes the double's error.
constexpr char kNowMsSql[] = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000.0) AS INTEGER)";

const std::string kTable = kMigrationTable;

struct HistoryRow {
  int64_t id;
  std::string name, down;
};

bool isIdentifierChar(char c) {
  const auto u = static_cast<unsigned char>(c);
  return std::isalnum(u) != 0 || c == '_' || c == '$' || u >= 0x80;
}

std::string upper(std::string_view word) {
  std::string out(word);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string trimmed(std::string_view s) {
  const auto first = s.find_first_not_of(" \t\r\n\f\v");
  if (first == std::string_view::npos) return {};
  const auto last = s.find_last_not_of(" \t\r\n\f\v");
  return std::string(s.substr(first, last - first + 1));
}

// Whether the leading words of a statement open a CREATE [TEMP|TEMPORARY] TRIGGER.
bool opensTrigger(const std::vector<std::string>& lead) {
  if (lead.size() < 2 || lead[0] != "CREATE") return false;
  if (lead[1] == "TRIGGER") return true;
  return lead.size() >= 3 && (lead[1] == "TEMP" || lead[1] == "TEMPORARY") && lead[2] == "TRIGGER";
}

template <class Exec>
void runScript(Exec& db, const std::string& script) {
  for (const std::string& statement : splitSqlStatements(script)) db.exec(statement);
}

// This capability's history rows, oldest first.
std::vector<HistoryRow> readHistory(StorageTxn& txn, const std::string& capability) {
  std::vector<HistoryRow> rows;
  for (const SqlRow& row :
       txn.exec("SELECT id, name, down FROM " + kTable + " WHERE capability = ? ORDER BY id", capability).toVector())
    rows.push_back(HistoryRow{row.int64("id"), row.text("name"), row.text("down")});
  return rows;
}

// Step 1: how many leading migrations of `list` the target keeps applied.
std::size_t resolveTarget(const std::vector<Migration>& list, const MigrationTarget& target) {
  switch (target.kind()) {
    case MigrationTarget::Kind::latest:
      return list.size();
    case MigrationTarget::Kind::none:
      return 0;
    case MigrationTarget::Kind::named:
      break;
  }
  const auto it = std::find_if(list.begin(), list.end(), [&](const Migration& m) { return m.name == target.name(); });
  if (it == list.end()) throw MigrationError("Unknown durability migration target");
  return static_cast<std::size_t>(it - list.begin()) + 1;
}

// Step 3: reverts this capability's history rows whose names the list does not know, newest first.
std::vector<std::string> revertFuture(ObjectStorage& storage, const std::string& capability,
                                      const std::vector<Migration>& list) {
  std::set<std::string> known;
  for (const Migration& m : list) known.insert(m.name);
  return storage.transactionSync([&](StorageTxn& txn) {
    std::vector<HistoryRow> future;
    for (const HistoryRow& row : readHistory(txn, capability))
      if (!known.count(row.name)) future.push_back(row);
    std::reverse(future.begin(), future.end());
    if (future.size() > kMaxFutureMigrations)
      throw MigrationError("Durability history has " + std::to_string(future.size()) + " unknown migrations for " +
                           capability + "; refusing to revert more than " + std::to_string(kMaxFutureMigrations));
    std::vector<std::string> reverted;
    for (const HistoryRow& row : future) {
      runScript(txn, row.down);
      txn.exec("DELETE FROM " + kTable + " WHERE id = ?", row.id);
      reverted.push_back(row.name);
    }
    return reverted;
  });
}

// Step 4, all or nothing: revert past the target (newest first), apply up to it, refresh stored downs.
MigrationResult moveToTarget(ObjectStorage& storage, const std::string& capability, const std::vector<Migration>& list,
                             std::size_t keep) {
  return storage.transactionSync([&](StorageTxn& txn) {
    std::map<std::string, HistoryRow> applied;
    for (HistoryRow& row : readHistory(txn, capability)) applied.emplace(row.name, std::move(row));
    MigrationResult result;
    for (std::size_t i = list.size(); i-- > keep;) {
      const auto it = applied.find(list[i].name);
      if (it == applied.end()) continue;
      runScript(txn, it->second.down);
      txn.exec("DELETE FROM " + kTable + " WHERE id = ?", it->second.id);
      result.rolledBack.push_back(list[i].name);
    }
    for (std::size_t i = 0; i < keep; ++i) {
      const Migration& m = list[i];
      const auto it = applied.find(m.name);
      if (it == applied.end()) {
        runScript(txn, m.up);
        txn.exec("INSERT INTO " + kTable + " (name, applied_at, capability, down) VALUES (?, " + kNowMsSql + ", ?, ?)",
                 m.name, capability, m.down);
        result.applied.push_back(m.name);
      } else if (it->second.down != m.down) {
        txn.exec("UPDATE " + kTable + " SET down = ? WHERE id = ?", m.down, it->second.id);
      }
    }
    return result;
  });
}

// Step 5: drops the history table when no capability has rows in it.
void dropHistoryIfEmpty(ObjectStorage& storage) {
  if (storage.exec("SELECT COUNT(*) AS n FROM " + kTable).one().int64("n") == 0)
    storage.exec("DROP TABLE " + kTable);
}

}  // namespace

std::vector<std::string> splitSqlStatements(std::string_view script) {
  std::vector<std::string> statements;
  std::size_t start = 0;            // where the current statement began
  std::size_t tokens = 0;           // its significant tokens so far (comments and spaces excluded)
  std::vector<std::string> lead;    // its first words, upper case, while every token was a word
  bool trigger = false;             // it is a CREATE TRIGGER: only `; END ;` ends it
  int endState = 0;                 // in a trigger: 1 after a `;`, 2 after `; END`
  const auto finish = [&](std::size_t end) {
    if (tokens > 0) statements.push_back(trimmed(script.substr(start, end - start)));
    start = end + 1;
    tokens = 0;
    lead.clear();
    trigger = false;
    endState = 0;
  };
  // Skips to just after the first `close` at or after `from` (to the end if there is none).
  const auto skipPast = [&](std::string_view close, std::size_t from) {
    const std::size_t at = script.find(close, from);
    return at == std::string_view::npos ? script.size() : at + close.size();
  };

  std::size_t i = 0;
  while (i < script.size()) {
    const char c = script[i];
    const char next = i + 1 < script.size() ? script[i + 1] : '\0';
    if (std::isspace(static_cast<unsigned char>(c)) != 0) {
      ++i;
    } else if (c == '-' && next == '-') {
      i = skipPast("\n", i + 2);
    } else if (c == '/' && next == '*') {
      i = skipPast("*/", i + 2);
    } else if (c == ';') {
      if (!trigger || endState == 2) {
        finish(i);
      } else {
        ++tokens;
        endState = 1;
      }
      ++i;
    } else if (c == '\'' || c == '"' || c == '`' || c == '[') {
      // A doubled quote inside a string ends it and opens the next one: the boundaries stay right.
      ++tokens;
      endState = 0;
      i = skipPast(std::string_view(c == '[' ? "]" : std::string_view(&c, 1)), i + 1);
    } else if (isIdentifierChar(c)) {
      std::size_t j = i;
      while (j < script.size() && isIdentifierChar(script[j])) ++j;
      const std::string word = upper(script.substr(i, j - i));
      if (lead.size() == tokens && lead.size() < 3) {
        lead.push_back(word);
        trigger = opensTrigger(lead);
      }
      ++tokens;
      endState = (trigger && endState == 1 && word == "END") ? 2 : 0;
      i = j;
    } else {
      ++tokens;
      endState = 0;
      ++i;
    }
  }
  if (start < script.size()) finish(script.size());
  return statements;
}

MigrationResult migrate(ObjectStorage& storage, const std::string& capability, const std::vector<Migration>& list,
                        MigrationTarget target) {
  const std::size_t keep = resolveTarget(list, target);  // step 1: throws before any change

  storage.exec("CREATE TABLE IF NOT EXISTS " + kTable +
               " (id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL UNIQUE, applied_at INTEGER NOT NULL,"
               " capability TEXT NOT NULL, down TEXT NOT NULL)");  // step 2
  MigrationResult result;
  try {
    result.rolledBack = revertFuture(storage, capability, list);              // step 3
    MigrationResult moved = moveToTarget(storage, capability, list, keep);   // step 4
    result.applied = std::move(moved.applied);
    result.rolledBack.insert(result.rolledBack.end(), moved.rolledBack.begin(), moved.rolledBack.end());
  } catch (...) {
    // The failed step rolled itself back; a history table created by step 2 goes too.
    try {
      dropHistoryIfEmpty(storage);
    } catch (...) {  // storage is poisoned or the table is unreadable: the original error says more
    }
    throw;
  }
  dropHistoryIfEmpty(storage);  // step 5
  return result;                // step 6
}

}  // namespace durasim
