// Buggify sites; see buggify.h. Each site draws in its own stream "buggify.<site>", so adding a site
// to engine code never shifts the draws of another (runtime.md 2.3).
#include "faults/buggify.h"

namespace durasim::faults {
namespace {

constexpr std::string_view kStreamPrefix = "buggify.";

}  // namespace

bool Buggify::operator()(std::string_view name) {
  Site& site = site_named(name);
  ++site.count.calls;
  if (off()) return false;
  if (!site.drawn) {
    site.drawn = true;
    site.stream = world_.random().stream(std::string(kStreamPrefix) + std::string(name));
    site.count.enabled = world_.random().chance(site.stream, kBuggifyEnablePpm);
  }
  if (!site.count.enabled || !world_.random().chance(site.stream, kBuggifyFirePpm)) return false;
  ++site.count.fires;
  return true;
}

Buggify::Site& Buggify::site_named(std::string_view name) {
  if (auto it = sites_.find(name); it != sites_.end()) return it->second;
  return sites_.emplace(std::string(name), Site{}).first->second;
}

std::map<std::string, BuggifyCount> Buggify::counts() const {
  std::map<std::string, BuggifyCount> out;
  for (const auto& [name, site] : sites_) out.emplace(name, site.count);
  return out;
}

}  // namespace durasim::faults
