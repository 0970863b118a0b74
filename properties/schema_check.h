// SCH-11 (invariants-engine.md, "Schema validity") over the stored schema of one object: for each
// capability given, its `durability_*` tables are all present when its migration is recorded in the
// history table and all absent otherwise; a capability that extends another (the log's leases extend
// the log, log.md 2) is recorded only together with it; and the history table exists exactly when it
// holds rows. It judges the schema and the history rows as stored, read through a StoreReader.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "properties/store_reader.h"

namespace durasim::properties {

struct CapabilitySchema {
  std::string_view capability;           // "log"
  std::string_view migration;            // its one migration (scheduler.md 8)
  std::vector<std::string_view> tables;  // every table the migration creates
  std::string_view extends;              // the capability it needs, "" for none
};

// The retained log's capabilities: `log`, and `logLeases`, which extends it (H19).
const std::vector<CapabilitySchema>& logCapabilities();

// What breaks SCH-11 in the stored schema of `object` for `capabilities`; nullopt when it holds.
std::optional<std::string> schemaFault(const StoreReader& read, const std::string& object,
                                       const std::vector<CapabilitySchema>& capabilities);

}  // namespace durasim::properties
