// SCH-11 over a stored schema; see schema_check.h.
#include "properties/schema_check.h"

#include <algorithm>
#include <set>

#include "engine/log_schema.h"
#include "engine/migrations.h"

namespace durasim::properties {

const std::vector<CapabilitySchema>& logCapabilities() {
  static const std::vector<CapabilitySchema> capabilities = {
      {"log",
       DURASIM_LOG_MIGRATION,
       {DURASIM_LOG_RECORDS, DURASIM_LOG_CURSORS, DURASIM_LOG_SEGMENTS, DURASIM_LOG_SEQ, DURASIM_LOG_FLUSH},
       ""},
      {"logLeases", DURASIM_LOG_LEASES_MIGRATION, {DURASIM_LOG_LEASES, DURASIM_LOG_ALLOCATIONS}, "log"},
  };
  return capabilities;
}

std::optional<std::string> schemaFault(const StoreReader& read, const std::string& object,
                                       const std::vector<CapabilitySchema>& capabilities) {
  std::set<std::string, std::less<>> tables, recorded;
  for (const SqlRow& row : read(object, "SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'durability%'").toVector())
    tables.insert(row.text("name"));
  if (tables.count(DURASIM_MIGRATIONS)) {
    for (const SqlRow& row : read(object, "SELECT name FROM " DURASIM_MIGRATIONS).toVector()) recorded.insert(row.text("name"));
    if (recorded.empty()) return "the migration history table exists without rows";
  }
  std::set<std::string_view> applied;
  for (const CapabilitySchema& capability : capabilities) {
    const bool isApplied = recorded.count(capability.migration) > 0;
    const auto present = std::count_if(capability.tables.begin(), capability.tables.end(), [&](std::string_view t) { return tables.count(t) > 0; });
    if (static_cast<std::size_t>(present) != (isApplied ? capability.tables.size() : 0)) {
      std::string fault = "capability ";
      fault += capability.capability;
      fault += isApplied ? " is applied but has " : " is not applied but has ";
      fault += std::to_string(present) + " of its " + std::to_string(capability.tables.size()) + " tables";
      return fault;
    }
    if (isApplied) applied.insert(capability.capability);
  }
  for (const CapabilitySchema& capability : capabilities) {
    if (!applied.count(capability.capability) || capability.extends.empty() || applied.count(capability.extends)) continue;
    std::string fault = "capability ";
    fault += capability.capability;
    fault += " and its tables remain without ";
    fault += capability.extends;
    fault += ", which it extends";
    return fault;
  }
  return std::nullopt;
}

}  // namespace durasim::properties
