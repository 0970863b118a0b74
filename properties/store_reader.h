// The read-only window every state check uses onto the objects' live stores: it runs one statement,
// `?` parameters bound in order, on the store of the object labelled "Class/name" at the instant of
// the event being checked. Values go in parameters, not in the text, so that each statement is
// prepared once per store. Whether a table exists is asked apart: it is asked at most events. So are
// the rows (or keys) of a table changed since a check's last look (properties/table_mirror.h).
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/runtime.h"
#include "sim/store_view.h"

namespace durasim::properties {

struct StoreReader {
  std::function<SqlCursor(const std::string& label, std::string_view sql, const std::vector<SqlValue>& params)> read;
  // Whether the object's live store has the table (sim::StoreView::has_table); when not given, it is
  // asked of sqlite_master through `read`.
  std::function<bool(const std::string& label, std::string_view table)> tableExists = nullptr;
  // The rows of a live table changed since a cursor (sim::StoreView::live_changes); when not given,
  // every table is read whole.
  std::function<std::optional<std::vector<int64_t>>(const std::string& label, std::string_view table, sim::RowChangeCursor& cursor)>
      changes = nullptr;
  // The keys of a live WITHOUT ROWID table changed since a cursor (sim::StoreView::live_key_changes);
  // when not given, such a table is read whole.
  std::function<std::optional<std::vector<std::string>>(const std::string& label, std::string_view table, sim::RowChangeCursor& cursor)>
      keyChanges = nullptr;

  SqlCursor operator()(const std::string& label, std::string_view sql, const std::vector<SqlValue>& params = {}) const {
    return read(label, sql, params);
  }
  std::optional<std::vector<int64_t>> changedRows(const std::string& label, std::string_view table, sim::RowChangeCursor& cursor) const {
    if (changes) return changes(label, table, cursor);
    return std::nullopt;
  }
  std::optional<std::vector<std::string>> changedKeys(const std::string& label, std::string_view table, sim::RowChangeCursor& cursor) const {
    if (keyChanges) return keyChanges(label, table, cursor);
    return std::nullopt;
  }
  bool hasTable(const std::string& label, std::string_view table) const {
    if (tableExists) return tableExists(label, table);
    return read(label, "SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name = ?", {std::string(table)}).one().int64("n") > 0;
  }
};

}  // namespace durasim::properties
