// ColdLossWatch; see cold_loss.h.
#include "properties/cold_loss.h"

#include "properties/event_fields.h"

namespace durasim::properties {

void ColdLossWatch::observe(EventType ev, const EventFields& e) {
  using fields::num;
  using fields::text;
  if (ev == "fault") {
    const std::string fault = text(e, "fault");
    if (fault == "cold.vanish") {
      const std::string site = text(e, "object");  // "bucket/key"
      const std::size_t slash = site.find('/');
      vanished_.insert(slash == std::string::npos ? site : site.substr(slash + 1));
    }
    if (fault == "cold.lifecycle_lag") pendingLag_ = e.at("details").at("lag").get<int64_t>();
    return;
  }
  if (ev != "cold.call") return;
  const std::optional<int64_t> lag = healed_ ? std::optional<int64_t>(pendingLag_.value_or(0)) : pendingLag_;
  pendingLag_.reset();
  if (!lag || text(e, "op") != "put" || !e.value("applied", false)) return;
  expirableFrom_[text(e, "key")] = num(e, "t") + *lag;
}

bool ColdLossWatch::lossPossible(const std::string& key, int64_t now) const {
  if (vanished_.count(key)) return true;
  const auto expirable = expirableFrom_.find(key);
  return expirable != expirableFrom_.end() && now >= expirable->second;
}

}  // namespace durasim::properties
