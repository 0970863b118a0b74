// The row-change journal of a store's live state, for readers that keep a copy of a table and
// read again only the rows changed since their last look instead of the whole table (the
// incremental state checks of properties/). The store notes the table and rowid of every INSERT,
// UPDATE and DELETE of a rowid table, and the key (first column) of every such change of a WITHOUT
// ROWID table, SQLite's preupdate hook being the source, so what is noted is what the storage did,
// not what the engine reports. Changes later undone stay noted, and a rollback to a savepoint or of
// the whole transaction notes again every change it undid (renote_since), so a reader who looked
// between a change and its rollback, in the middle of a transaction, re-reads the row: an undone
// change costs a read and is never missed. The journal restarts when rows may have changed without
// a note (a new live connection, a journal grown past its bound), and a schema change since a
// reader's last look counts as one (a table dropped takes its rows without a note; a rollback may
// bring a table and its rows back): the reader then reads its table whole. The schema version alone
// would miss a change undone and another made between two looks (a rollback restores the version),
// so a rollback over a span in which the schema may have changed counts as a schema change of its
// own. It never draws a choice, schedules, or touches the store. Readers hold a RowChangeCursor
// (sim/store_view.h) per table.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "sim/store_view.h"

namespace durasim::sim {

class RowChangeJournal {
 public:
  // Notes beyond this many start the journal anew (the readers then read whole tables once).
  static constexpr std::size_t kMaxNotes = 1 << 20;

  // Where the journal stands, to note again what a rollback to here undoes.
  struct Mark {
    uint64_t journal = 0;
    std::size_t position = 0;
    uint64_t schema_statements = 0;  // the store's count of statements that may change the schema, then
  };

  void note(std::string_view table, int64_t rowid) {
    if (notes_.size() >= kMaxNotes) restart();
    notes_.emplace_back(table_index(table), rowid);
  }
  // A change of a WITHOUT ROWID table, named by its key (its first column).
  void note_key(std::string_view table, std::string_view key) {
    if (notes_.size() >= kMaxNotes) restart();
    notes_.emplace_back(table_index(table) | kKeyed, static_cast<int64_t>(keys_.size()));
    keys_.emplace_back(key);
  }
  void restart() {
    ++journal_;
    notes_.clear();
    keys_.clear();
  }

  // `schema_statements`: how many statements that may change the schema the store has run so far.
  Mark mark(uint64_t schema_statements) const { return Mark{journal_, notes_.size(), schema_statements}; }
  // A rollback to `mark` undid the changes noted since: they are noted again, so that a reader who
  // looked between a change and its rollback reads the row once more. When statements that may
  // change the schema ran since the mark (`schema_statements` moved), the rollback may have undone a
  // schema change: it counts as one for every reader.
  void renote_since(const Mark& mark, uint64_t schema_statements) {
    if (mark.journal != journal_) return;  // restarted since: every reader reads whole anyway
    if (schema_statements != mark.schema_statements) ++schema_rollbacks_;
    const std::size_t end = notes_.size();
    if (end + (end - mark.position) > kMaxNotes) return restart();
    for (std::size_t i = mark.position; i < end; ++i) notes_.push_back(notes_[i]);
  }

  // The rowids of `table` noted since `cursor` (repeats possible), advancing it to now; nullopt when
  // the cursor is new, the journal restarted since, or the schema changed: read it whole.
  std::optional<std::vector<int64_t>> since(std::string_view table, RowChangeCursor& cursor, int64_t schema_version) const {
    std::optional<std::vector<int64_t>> rowids;
    visit(table, false, cursor, schema_version, rowids, [](int64_t rowid) { return rowid; });
    return rowids;
  }
  // The keys of the WITHOUT ROWID table `table` noted since `cursor`, as `since` does for rowids.
  std::optional<std::vector<std::string>> keys_since(std::string_view table, RowChangeCursor& cursor, int64_t schema_version) const {
    std::optional<std::vector<std::string>> keys;
    visit(table, true, cursor, schema_version, keys, [this](int64_t index) { return keys_[static_cast<std::size_t>(index)]; });
    return keys;
  }

 private:
  static constexpr uint32_t kKeyed = 1u << 31;  // in a note's table index: its second half indexes keys_

  template <typename T, typename Of>
  void visit(std::string_view table, bool keyed, RowChangeCursor& cursor, int64_t schema_version, std::optional<std::vector<T>>& out,
             Of of) const {
    const bool whole = cursor.journal != journal_ || cursor.schema_version != schema_version || cursor.rollbacks != schema_rollbacks_;
    const std::size_t from = cursor.position;
    cursor = RowChangeCursor{journal_, notes_.size(), schema_version, schema_rollbacks_};
    if (whole) return;
    out.emplace();
    const auto wanted = find_table(table);
    if (!wanted) return;
    const uint32_t index = *wanted | (keyed ? kKeyed : 0);
    for (std::size_t i = from; i < notes_.size(); ++i)
      if (notes_[i].first == index) out->push_back(of(notes_[i].second));
  }
  uint32_t table_index(std::string_view table) {
    if (const auto found = find_table(table)) return *found;
    tables_.emplace_back(table);
    return static_cast<uint32_t>(tables_.size() - 1);
  }
  std::optional<uint32_t> find_table(std::string_view table) const {
    for (std::size_t i = 0; i < tables_.size(); ++i)
      if (tables_[i] == table) return static_cast<uint32_t>(i);
    return std::nullopt;
  }

  uint64_t journal_ = 1;
  uint64_t schema_rollbacks_ = 0;  // rollbacks that may have undone a schema change
  std::vector<std::string> tables_;                   // names seen, in order of first note
  std::vector<std::pair<uint32_t, int64_t>> notes_;   // (table index, rowid or index in keys_)
  std::vector<std::string> keys_;                     // the keys of keyed notes
};

}  // namespace durasim::sim
