// The read-only window of the observation surface onto the object stores of one World (DESIGN.md,
// "Checking"). For each object it reads what the storage holds at the instant of the event being
// observed (its live state, the open implicit transaction included, as the engine would read it
// then) and, separately, its confirmed durable state. It cannot write (every statement must be
// read-only, sqlite3_stmt_readonly), never creates an object (an unknown label reads as an empty
// store), never draws a choice and never schedules. Object hosts register their stores; checkers
// and workloads' drain conditions read them.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/runtime.h"

namespace durasim::sim {

class SqliteStore;

// "Class/name", the label of an object in traces and in the store view.
inline std::string object_label(std::string_view className, std::string_view name) {
  return std::string(className) + "/" + std::string(name);
}

// Where one reader of one live table stands in its store's row-change journal (sim/row_changes.h).
// A new cursor reads the table whole first.
struct RowChangeCursor {
  uint64_t journal = 0;         // the journal it read last (0: none yet)
  std::size_t position = 0;     // the notes of that journal it has seen
  int64_t schema_version = -1;  // the live schema version at its last look
  uint64_t rollbacks = 0;       // the journal's rollbacks that may have undone a schema change, then
};

class StoreView {
 public:
  StoreView();
  ~StoreView();
  StoreView(const StoreView&) = delete;
  StoreView& operator=(const StoreView&) = delete;

  // Labels ("Class/name") of every registered store, in label order.
  std::vector<std::string> labels() const;
  bool contains(std::string_view label) const { return stores_.count(label) > 0; }

  // One read-only statement on `label`'s live / durable state. Throws SqlError for an invalid or
  // writing statement (a missing table of an unknown object included: it reads as an empty store).
  SqlCursor live(std::string_view label, std::string_view sql, const std::vector<SqlValue>& params = {}) const;
  SqlCursor durable(std::string_view label, std::string_view sql, const std::vector<SqlValue>& params = {}) const;
  // The stored alarm, live or durable.
  std::optional<int64_t> live_alarm(std::string_view label) const;
  std::optional<int64_t> durable_alarm(std::string_view label) const;
  // Whether the live state of `label` has a table named `table`.
  bool has_table(std::string_view label, std::string_view table) const;
  // The rowids of the live table `table` of `label` changed since `cursor`, advancing it; nullopt
  // when the table must be read whole (sim/row_changes.h).
  std::optional<std::vector<int64_t>> live_changes(std::string_view label, std::string_view table, RowChangeCursor& cursor) const;
  // The keys of the live WITHOUT ROWID table `table` of `label` changed since `cursor`, likewise.
  std::optional<std::vector<std::string>> live_key_changes(std::string_view label, std::string_view table, RowChangeCursor& cursor) const;

  // For object hosts. REQUIRES: `label` is not registered; `store` outlives its registration.
  void add(const std::string& label, SqliteStore& store);
  void remove(std::string_view label);

 private:
  SqliteStore& store(std::string_view label) const;

  using Stores = std::map<std::string, SqliteStore*, std::less<>>;
  Stores stores_;
  std::unique_ptr<SqliteStore> empty_;  // what an unknown object reads
  // The registration found last: a checker's reads come in runs on one object. Forgotten when a
  // store is removed.
  mutable const Stores::value_type* last_found_ = nullptr;
};

}  // namespace durasim::sim
