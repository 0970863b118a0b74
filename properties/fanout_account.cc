// The FAN-02/FAN-04 accounting kept current row by row; see fanout_account.h.
#include "properties/fanout_account.h"

#include <utility>
#include <vector>

namespace durasim::properties {

void FanoutAccount::putManifest(model::FanoutManifest manifest) {
  changed_.insert(manifest.key);
  std::string key = manifest.key;
  manifests_.insert_or_assign(std::move(key), std::move(manifest));
}

void FanoutAccount::eraseManifest(const std::string& key) {
  if (manifests_.erase(key) > 0) changed_.insert(key);
}

void FanoutAccount::putDelivery(const std::string& id, model::FanoutDelivery delivery) {
  eraseDelivery(id);
  changed_.insert(delivery.key);
  idsOfKey_[delivery.key].insert(id);
  deliveries_.emplace(id, std::move(delivery));
}

void FanoutAccount::eraseDelivery(const std::string& id) {
  const auto found = deliveries_.find(id);
  if (found == deliveries_.end()) return;
  const std::string& key = found->second.key;
  changed_.insert(key);
  const auto ids = idsOfKey_.find(key);
  ids->second.erase(id);
  if (ids->second.empty()) idsOfKey_.erase(ids);
  deliveries_.erase(found);
}

bool FanoutAccount::accounted(const std::string& key) const {
  const auto manifest = manifests_.find(key);
  std::vector<const model::FanoutDelivery*> rows;
  if (const auto ids = idsOfKey_.find(key); ids != idsOfKey_.end())
    for (const std::string& id : ids->second) rows.push_back(&deliveries_.at(id));
  return model::FanoutModel::keyAccounted(manifest == manifests_.end() ? nullptr : &manifest->second, rows);
}

std::optional<std::string> FanoutAccount::fault() {
  for (const std::string& key : changed_) {
    if (accounted(key)) unaccounted_.erase(key);
    else unaccounted_.insert(key);
  }
  changed_.clear();
  if (unaccounted_.empty()) return std::nullopt;
  return model::FanoutModel::accounting(manifests_, deliveries_);
}

}  // namespace durasim::properties
