// One object's stored manifests and delivery rows as the FAN-02/FAN-04 accounting reads them,
// kept row by row from the FAN checks' table mirrors, with the accounting's verdict kept current
// the same way: each message key is judged again (FanoutModel::keyAccounted) only when its manifest
// or one of its rows changed, so a commit costs what it changed, not what the object stores. While
// every key is accounted for, fault() is nullopt without a pass over the rows; once one is not, it
// is FanoutModel::accounting over every row (its first violation, in its order and words).
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>

#include "model/fanout_model.h"

namespace durasim::properties {

class FanoutAccount {
 public:
  // A manifest row entered the copy (replacing the one of its key) or left it.
  void putManifest(model::FanoutManifest manifest);
  void eraseManifest(const std::string& key);
  // A delivery row, by row id, entered the copy (replacing the one of its id) or left it.
  void putDelivery(const std::string& id, model::FanoutDelivery delivery);
  void eraseDelivery(const std::string& id);

  // FanoutModel::accounting(manifests(), deliveries()).
  std::optional<std::string> fault();

  const std::map<std::string, model::FanoutManifest>& manifests() const { return manifests_; }
  const std::map<std::string, model::FanoutDelivery>& deliveries() const { return deliveries_; }

 private:
  bool accounted(const std::string& key) const;

  std::map<std::string, model::FanoutManifest> manifests_;  // by key
  std::map<std::string, model::FanoutDelivery> deliveries_;  // by row id
  std::map<std::string, std::set<std::string>> idsOfKey_;   // message key -> row ids of its deliveries
  std::set<std::string> changed_;                            // keys changed since the last fault()
  std::set<std::string> unaccounted_;                        // keys that failed keyAccounted when last judged
};

}  // namespace durasim::properties
