// Keeping a copy of a stored table current from its row changes; see table_mirror.h.
#include "properties/table_mirror.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace durasim::properties {
namespace {

// Changed rowids closer than this are read with one range query (the rows between cost a step each,
// a query costs far more).
constexpr int64_t kRangeGap = 32;

}  // namespace

TableMirror::TableMirror(std::string table, std::string columns, Index index)
    : table_(std::move(table)),
      whole_("SELECT rowid AS _rowid, " + columns + " FROM " + table_),
      range_(whole_ + " WHERE rowid BETWEEN ? AND ?"),
      index_(std::move(index)) {}

void TableMirror::refresh(const StoreReader& reader, const std::string& label) {
  std::optional<std::vector<int64_t>> changed = reader.changedRows(label, table_, cursor_);
  if (!changed) return readWhole(reader, label);
  std::sort(changed->begin(), changed->end());
  try {
    for (std::size_t i = 0; i < changed->size();) {
      std::size_t j = i;
      while (j + 1 < changed->size() && (*changed)[j + 1] - (*changed)[j] <= kRangeGap) ++j;
      readRange(reader, label, (*changed)[i], (*changed)[j]);
      i = j + 1;
    }
  } catch (const SqlError&) {
    readWhole(reader, label);  // the table is gone: a rollback took back its creation and its rows
  }
}

void TableMirror::readWhole(const StoreReader& reader, const std::string& label) {
  erase(rows_.begin(), rows_.end());
  exists_ = reader.hasTable(label, table_);
  if (exists_) keep(reader(label, whole_));
}

void TableMirror::readRange(const StoreReader& reader, const std::string& label, int64_t first, int64_t last) {
  erase(rows_.lower_bound(first), rows_.upper_bound(last));
  keep(reader(label, range_, {first, last}));
}

void TableMirror::erase(std::map<int64_t, SqlRow>::iterator first, std::map<int64_t, SqlRow>::iterator last) {
  if (index_.drop)
    for (auto it = first; it != last; ++it) index_.drop(it->first, it->second);
  rows_.erase(first, last);
}

void TableMirror::keep(SqlCursor rows) {
  for (SqlRow& row : rows.toVector()) {
    const int64_t rowid = row.int64("_rowid");
    const auto kept = rows_.emplace(rowid, std::move(row)).first;
    if (index_.keep) index_.keep(rowid, kept->second);
  }
}

void MirroredMinimum::count(const SqlValue& value, int delta) {
  if (const int64_t* integer = std::get_if<int64_t>(&value)) {
    if (delta > 0) {
      values_.insert(*integer);
    } else if (const auto found = values_.find(*integer); found != values_.end()) {
      values_.erase(found);  // always found: a mirror drops only rows it kept
    }
  } else if (!std::holds_alternative<SqlNull>(value)) {
    irregular_ += delta;
  }
}

KeyedTableMirror::KeyedTableMirror(std::string table, const std::string& key, const std::string& columns, Index index)
    : table_(std::move(table)),
      whole_("SELECT " + key + " AS _key, " + columns + " FROM " + table_),
      one_(whole_ + " WHERE " + key + " = ?"),
      index_(std::move(index)) {}

void KeyedTableMirror::refresh(const StoreReader& reader, const std::string& label) {
  std::optional<std::vector<std::string>> changed = reader.changedKeys(label, table_, cursor_);
  if (!changed) return readWhole(reader, label);
  std::sort(changed->begin(), changed->end());
  changed->erase(std::unique(changed->begin(), changed->end()), changed->end());
  try {
    for (const std::string& key : *changed) {
      std::optional<SqlRow> row = reader(label, one_, {key}).next();
      if (row) rows_.insert_or_assign(key, std::move(*row));
      else rows_.erase(key);
      if (index_.changed) index_.changed(key);
    }
  } catch (const SqlError&) {
    readWhole(reader, label);  // the table is gone: a rollback took back its creation and its rows
  }
}

void KeyedTableMirror::readWhole(const StoreReader& reader, const std::string& label) {
  rows_.clear();
  if (index_.cleared) index_.cleared();
  exists_ = reader.hasTable(label, table_);
  if (!exists_) return;
  for (SqlRow& row : reader(label, whole_).toVector()) {
    std::string key = row.text("_key");
    rows_.emplace(std::move(key), std::move(row));
  }
}

}  // namespace durasim::properties
