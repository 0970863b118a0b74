// The event bus's two stored tables of one object (events.md 3.5) as the EVT state checks read
// them: work_log (records, pending and dead-letter index entries) indexed by namespace and id, and
// work_kv (markers, attempt and dead records, cursors) by key, kept current from the store's
// row-change journal (properties/table_mirror.h). Refreshed once per event checked, it answers what
// the live store holds at that instant, as the statements it replaces did. A stored value is parsed
// from its text the first time it is read after it changed; an index entry's seq when it is stored.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>

#include <nlohmann/json.hpp>

#include "properties/store_reader.h"
#include "properties/table_mirror.h"

namespace durasim::properties {

class StoredBus {
 public:
  StoredBus();
  StoredBus(const StoredBus&) = delete;  // the log mirror's index points back here
  StoredBus& operator=(const StoredBus&) = delete;

  void refresh(const StoreReader& reader, const std::string& label);
  bool hasLog() const { return log_.exists(); }
  bool hasKv() const { return kv_.exists(); }

  // work_kv: the value stored at `key`, and the keys (values) starting with `prefix`.
  std::optional<nlohmann::json> value(std::string_view key) const;
  std::set<std::string> keysUnder(std::string_view prefix) const;
  std::map<std::string, nlohmann::json> valuesUnder(std::string_view prefix) const;
  int64_t countUnder(std::string_view prefix) const;

  // work_log: the record (seq, payload) of `id` in namespace `ns`; the number of entries of `ns`;
  // its entries, id -> seq (the record's own for a topic log, its payload's for an index).
  std::optional<std::pair<int64_t, std::string>> entry(std::string_view ns, std::string_view id) const;
  int64_t count(std::string_view ns) const;
  std::map<std::string, int64_t> entries(std::string_view ns) const;

 private:
  struct Entry {
    int64_t rowid = 0;
    int64_t seq = 0;  // the record's seq for a topic log, its payload's for an index (-1: none)
  };
  using Ids = std::map<std::string, Entry, std::less<>>;  // id -> entry
  const Ids* namespaceOf(std::string_view ns) const;
  void dropEntry(const SqlRow& row);
  void keepEntry(int64_t rowid, const SqlRow& row);

  std::map<std::string, Ids, std::less<>> byNamespace_;
  mutable std::map<std::string, nlohmann::json, std::less<>> parsed_;  // key -> its value, parsed
  TableMirror log_;
  KeyedTableMirror kv_;
};

}  // namespace durasim::properties
