// The row-change journal of a store's live state, for readers that keep a copy of a table and, at
// every commit, read again only the rows changed since their last look instead of the whole table
// (the incremental state checks of properties/). The store notes the table and rowid of every
// INSERT, UPDATE and DELETE of a rowid table, SQLite's preupdate hook being the source, so what is
// noted is what the storage did, not what the engine reports. Changes later undone by a statement
// or transaction rollback stay noted: a reader re-reads them, so an undone change costs one read and
// is never missed. The journal restarts when rows may have changed without a note (a new live
// connection, a schema change since the reader's last look, a journal grown past its bound): the
// reader then reads its table whole. It never draws a choice, schedules, or touches the store.
// Readers hold a RowChangeCursor (sim/store_view.h) per table.
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

  void note(std::string_view table, int64_t rowid) {
    if (notes_.size() >= kMaxNotes) restart();
    notes_.emplace_back(table_index(table), rowid);
  }
  void restart() {
    ++journal_;
    notes_.clear();
  }

  // The rowids of `table` noted since `cursor` (repeats possible), advancing it to now; nullopt when
  // the cursor is new, the journal restarted since, or the schema version moved: read it whole.
  std::optional<std::vector<int64_t>> since(std::string_view table, RowChangeCursor& cursor, int64_t schema_version) const {
    const bool whole = cursor.journal != journal_ || cursor.schema_version != schema_version;
    const std::size_t from = cursor.position;
    cursor = RowChangeCursor{journal_, notes_.size(), schema_version};
    if (whole) return std::nullopt;
    std::vector<int64_t> rowids;
    const auto wanted = find_table(table);
    if (!wanted) return rowids;
    for (std::size_t i = from; i < notes_.size(); ++i)
      if (notes_[i].first == *wanted) rowids.push_back(notes_[i].second);
    return rowids;
  }

 private:
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
  std::vector<std::string> tables_;                   // names seen, in order of first note
  std::vector<std::pair<uint32_t, int64_t>> notes_;   // (table index, rowid)
};

}  // namespace durasim::sim
