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

TableMirror::TableMirror(std::string table, std::string columns)
    : table_(std::move(table)),
      whole_("SELECT rowid AS _rowid, " + columns + " FROM " + table_),
      range_(whole_ + " WHERE rowid BETWEEN ? AND ?") {}

void TableMirror::refresh(const StoreReader& reader, const std::string& label) {
  std::optional<std::vector<int64_t>> changed = reader.changedRows(label, table_, cursor_);
  if (!changed) return readWhole(reader, label);
  std::sort(changed->begin(), changed->end());
  for (std::size_t i = 0; i < changed->size();) {
    std::size_t j = i;
    while (j + 1 < changed->size() && (*changed)[j + 1] - (*changed)[j] <= kRangeGap) ++j;
    readRange(reader, label, (*changed)[i], (*changed)[j]);
    i = j + 1;
  }
}

void TableMirror::readWhole(const StoreReader& reader, const std::string& label) {
  rows_.clear();
  keep(reader(label, whole_));
}

void TableMirror::readRange(const StoreReader& reader, const std::string& label, int64_t first, int64_t last) {
  rows_.erase(rows_.lower_bound(first), rows_.upper_bound(last));
  keep(reader(label, range_, {first, last}));
}

void TableMirror::keep(SqlCursor rows) {
  for (SqlRow& row : rows.toVector()) {
    const int64_t rowid = row.int64("_rowid");
    rows_.emplace(rowid, std::move(row));
  }
}

}  // namespace durasim::properties
