// A state check's copy of one stored table of one object, keyed by rowid, brought up to date before
// each check by reading only the rows the store's row-change journal names since the last look
// (sim/row_changes.h), or the whole table when the journal says so or the reader has no journal.
// What it holds is what the live store holds at the instant of the event, as if the check had read
// the whole table, at the cost of the rows that changed.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "properties/store_reader.h"
#include "sim/store_view.h"

namespace durasim::properties {

class TableMirror {
 public:
  // `columns`: the select list of what to keep of each row, e.g. "bytes, dedup_key".
  TableMirror(std::string table, std::string columns);

  // Reads what changed in `label`'s table since the last call (all of it the first time).
  void refresh(const StoreReader& reader, const std::string& label);
  const std::map<int64_t, SqlRow>& rows() const { return rows_; }

 private:
  void readWhole(const StoreReader& reader, const std::string& label);
  void readRange(const StoreReader& reader, const std::string& label, int64_t first, int64_t last);
  void keep(SqlCursor rows);  // adds the rows read (their first column is the rowid)

  std::string table_;
  std::string whole_, range_;  // the statements
  sim::RowChangeCursor cursor_;
  std::map<int64_t, SqlRow> rows_;
};

}  // namespace durasim::properties
