// A state check's copy of one stored table of one object, brought up to date before each check by
// reading only the rows the store's row-change journal names since the last look
// (sim/row_changes.h), or the whole table when the journal says so or the reader has no journal.
// What it holds is what the live store holds at the instant of the event, as if the check had read
// the whole table, at the cost of the rows that changed: a TableMirror keys a rowid table by rowid,
// a KeyedTableMirror a WITHOUT ROWID table by its first column. A table that does not exist reads
// as empty.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>

#include "properties/store_reader.h"
#include "sim/store_view.h"

namespace durasim::properties {

class TableMirror {
 public:
  // Told of each row as it leaves the copy and as it enters it (a check's own index of the rows).
  struct Index {
    std::function<void(int64_t rowid, const SqlRow& row)> drop, keep;
  };

  // `columns`: the select list of what to keep of each row, e.g. "bytes, dedup_key".
  TableMirror(std::string table, std::string columns, Index index = {});

  // Reads what changed in `label`'s table since the last call (all of it the first time).
  void refresh(const StoreReader& reader, const std::string& label);
  const std::map<int64_t, SqlRow>& rows() const { return rows_; }
  bool exists() const { return exists_; }  // the table exists (at the last refresh)

 private:
  void readWhole(const StoreReader& reader, const std::string& label);
  void readRange(const StoreReader& reader, const std::string& label, int64_t first, int64_t last);
  void erase(std::map<int64_t, SqlRow>::iterator first, std::map<int64_t, SqlRow>::iterator last);
  void keep(SqlCursor rows);  // adds the rows read (their first column is the rowid)

  std::string table_;
  std::string whole_, range_;  // the statements
  Index index_;
  sim::RowChangeCursor cursor_;
  std::map<int64_t, SqlRow> rows_;
  bool exists_ = false;
};

// One column's least value over the rows a mirror keeps, as SQL's MIN gives it, kept up to date from
// the mirror's index as rows enter (+1) and leave (-1): NULLs are skipped and integers tallied; while
// any row holds another type MIN orders mixed types SQLite's way, and the statement must answer.
class MirroredMinimum {
 public:
  void count(const SqlValue& value, int delta);
  bool regular() const { return irregular_ == 0; }
  // MIN over the integers (NULL when there is none). REQUIRES: regular().
  std::optional<int64_t> least() const { return values_.empty() ? std::nullopt : std::optional<int64_t>(*values_.begin()); }

 private:
  std::multiset<int64_t> values_;
  int64_t irregular_ = 0;  // rows whose value is neither an integer nor NULL
};

class KeyedTableMirror {
 public:
  // Told of each key whose row may have changed (a check's own cache of what the rows hold), and
  // when every row may have.
  struct Index {
    std::function<void(const std::string& key)> changed;
    std::function<void()> cleared;
  };

  // `key`: the table's first column, its primary key; `columns`: the select list of what to keep.
  KeyedTableMirror(std::string table, const std::string& key, const std::string& columns, Index index = {});

  void refresh(const StoreReader& reader, const std::string& label);
  const std::map<std::string, SqlRow, std::less<>>& rows() const { return rows_; }
  bool exists() const { return exists_; }

 private:
  void readWhole(const StoreReader& reader, const std::string& label);

  std::string table_;
  std::string whole_, one_;  // the statements
  Index index_;
  sim::RowChangeCursor cursor_;
  std::map<std::string, SqlRow, std::less<>> rows_;
  bool exists_ = false;
};

}  // namespace durasim::properties
