// The registry of research variants (hazards.md "Variant flag index", runtime.md 12): every engine
// flag and simulator mutant by name, with the contract it breaks, the invariants expected to catch
// it, and the workload that exercises it. `durasim run --variant` accepts exactly these names;
// `durasim mutants` runs them. It lives in cli/ because it names both engine flags (engine/
// variants.h) and simulator mutants (sim/mutants.h).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

namespace durasim::cli {

struct VariantInfo {
  std::string_view name;
  std::string_view origin;    // "H4", "runtime.md 12", ...
  std::string_view breaks;    // the contract, in one line
  std::vector<std::string_view> expected;  // invariant IDs expected to catch it
  // What exercises it; an empty workload means none does yet (`why_unreachable` says what is missing).
  std::string_view workload;
  std::string_view faults = "recoverable";
  nlohmann::json options = nlohmann::json::object();
  bool check_determinism = false;  // caught by RT-01/RT-23: every seed is run twice and replayed
  std::string_view why_unreachable;
};

// Every variant, engine flags first, in a fixed order.
const std::vector<VariantInfo>& variant_registry();
// The variant named `name`, or null.
const VariantInfo* find_variant(std::string_view name);
// Throws std::invalid_argument naming `name` and listing the known variants unless it is one.
void require_known_variant(std::string_view name);

}  // namespace durasim::cli
