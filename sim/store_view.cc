// The read-only store view; see store_view.h.
#include "sim/store_view.h"

#include <stdexcept>

#include "sim/sqlite_store.h"

namespace durasim::sim {

// The empty store never runs SQL that draws or reads the clock on behalf of a run.
StoreView::StoreView()
    : empty_(std::make_unique<SqliteStore>(SqlEnvironment{[] { return uint64_t{0}; }, [] { return int64_t{0}; }})) {}

StoreView::~StoreView() = default;

std::vector<std::string> StoreView::labels() const {
  std::vector<std::string> labels;
  labels.reserve(stores_.size());
  for (const auto& [label, store] : stores_) labels.push_back(label);
  return labels;
}

SqliteStore& StoreView::store(std::string_view label) const {
  if (last_found_ != nullptr && last_found_->first == label) return *last_found_->second;
  const auto found = stores_.find(label);
  if (found == stores_.end()) return *empty_;
  last_found_ = &*found;
  return *found->second;
}

SqlCursor StoreView::live(std::string_view label, std::string_view sql, const std::vector<SqlValue>& params) const {
  return store(label).observe_live(sql, params);
}

SqlCursor StoreView::durable(std::string_view label, std::string_view sql, const std::vector<SqlValue>& params) const {
  return store(label).observe_durable(sql, params);
}

std::optional<int64_t> StoreView::live_alarm(std::string_view label) const { return store(label).observe_live_alarm(); }

std::optional<int64_t> StoreView::durable_alarm(std::string_view label) const { return store(label).observe_durable_alarm(); }

bool StoreView::has_table(std::string_view label, std::string_view table) const {
  return store(label).observe_live_has_table(table);
}

std::optional<std::vector<int64_t>> StoreView::live_changes(std::string_view label, std::string_view table,
                                                            RowChangeCursor& cursor) const {
  return store(label).observe_live_changes(table, cursor);
}

std::optional<std::vector<std::string>> StoreView::live_key_changes(std::string_view label, std::string_view table,
                                                                    RowChangeCursor& cursor) const {
  return store(label).observe_live_key_changes(table, cursor);
}

void StoreView::add(const std::string& label, SqliteStore& store) {
  if (!stores_.emplace(label, &store).second) throw std::logic_error("store view: '" + label + "' is registered twice");
}

void StoreView::remove(std::string_view label) {
  const auto found = stores_.find(label);
  if (found == stores_.end()) return;
  if (last_found_ == &*found) last_found_ = nullptr;
  stores_.erase(found);
}

}  // namespace durasim::sim
