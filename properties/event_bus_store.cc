// The event bus's stored tables as the checks read them; see event_bus_store.h.
#include "properties/event_bus_store.h"

#include "engine/conventions.h"
#include "engine/event_bus_schema.h"
#include "engine/events_keys.h"

namespace durasim::properties {
namespace {

using nlohmann::json;

// The keys of `rows` starting with `prefix`: [prefix, the prefix with its last byte raised). Every
// prefix asked for ends with ':'.
template <typename Map>
std::pair<typename Map::const_iterator, typename Map::const_iterator> under(const Map& rows, std::string_view prefix) {
  if (prefix.empty()) return {rows.begin(), rows.end()};
  std::string past(prefix);
  past.back() = static_cast<char>(past.back() + 1);
  return {rows.lower_bound(prefix), rows.lower_bound(past)};
}

}  // namespace

StoredBus::StoredBus()
    : log_(DURASIM_EVENTS_LOG, "ns, id, seq, payload",
           TableMirror::Index{[this](int64_t, const SqlRow& row) { dropEntry(row); }, [this](int64_t rowid, const SqlRow& row) { keepEntry(rowid, row); }}),
      kv_(DURASIM_EVENTS_KV, "key", "value",
          KeyedTableMirror::Index{[this](const std::string& key) { parsed_.erase(key); }, [this] { parsed_.clear(); }}) {}

void StoredBus::dropEntry(const SqlRow& row) {
  const auto ns = byNamespace_.find(row.text("ns"));
  if (ns == byNamespace_.end()) return;
  ns->second.erase(row.text("id"));
  if (ns->second.empty()) byNamespace_.erase(ns);
}

void StoredBus::keepEntry(int64_t rowid, const SqlRow& row) {
  const std::string& ns = row.text("ns");
  int64_t seq = row.int64("seq");
  if (!ns.starts_with(events::keys::kTopicLog)) {
    const json payload = deserialize(row.text("payload"));
    seq = payload.is_object() && payload.contains("seq") && payload.at("seq").is_number_integer() ? payload.at("seq").get<int64_t>() : -1;
  }
  byNamespace_[ns][row.text("id")] = Entry{rowid, seq};
}

void StoredBus::refresh(const StoreReader& reader, const std::string& label) {
  log_.refresh(reader, label);
  kv_.refresh(reader, label);
}

std::optional<json> StoredBus::value(std::string_view key) const {
  const auto found = kv_.rows().find(key);
  if (found == kv_.rows().end()) return std::nullopt;
  auto parsed = parsed_.find(key);
  if (parsed == parsed_.end()) parsed = parsed_.emplace(found->first, deserialize(found->second.text("value"))).first;
  return parsed->second;
}

std::set<std::string> StoredBus::keysUnder(std::string_view prefix) const {
  std::set<std::string> keys;
  const auto [first, last] = under(kv_.rows(), prefix);
  for (auto it = first; it != last; ++it) keys.insert(keys.end(), it->first);
  return keys;
}

std::map<std::string, json> StoredBus::valuesUnder(std::string_view prefix) const {
  std::map<std::string, json> values;
  const auto [first, last] = under(kv_.rows(), prefix);
  for (auto it = first; it != last; ++it) values.emplace_hint(values.end(), it->first, *value(it->first));
  return values;
}

int64_t StoredBus::countUnder(std::string_view prefix) const {
  const auto [first, last] = under(kv_.rows(), prefix);
  return static_cast<int64_t>(std::distance(first, last));
}

const StoredBus::Ids* StoredBus::namespaceOf(std::string_view ns) const {
  const auto found = byNamespace_.find(ns);
  return found == byNamespace_.end() ? nullptr : &found->second;
}

std::optional<std::pair<int64_t, std::string>> StoredBus::entry(std::string_view ns, std::string_view id) const {
  const Ids* ids = namespaceOf(ns);
  if (!ids) return std::nullopt;
  const auto found = ids->find(id);
  if (found == ids->end()) return std::nullopt;
  const SqlRow& row = log_.rows().at(found->second.rowid);
  return std::make_pair(row.int64("seq"), row.text("payload"));
}

int64_t StoredBus::count(std::string_view ns) const {
  const Ids* ids = namespaceOf(ns);
  return ids ? static_cast<int64_t>(ids->size()) : 0;
}

std::map<std::string, int64_t> StoredBus::entries(std::string_view ns) const {
  std::map<std::string, int64_t> out;
  if (const Ids* ids = namespaceOf(ns))
    for (const auto& [id, entry] : *ids) out.emplace_hint(out.end(), id, entry.seq);
  return out;
}

}  // namespace durasim::properties
