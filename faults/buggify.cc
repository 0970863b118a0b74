// Buggify sites; see buggify.h. Each site draws in its own stream "buggify.<site>", so adding a site
// to engine code never shifts the draws of another (runtime.md 2.3).
#include "faults/buggify.h"

#include <cstdio>
#include <sstream>

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

void BuggifyCampaign::add(const std::map<std::string, BuggifyCount>& run) {
  for (const auto& [name, count] : run) {
    CampaignBuggifyCount& site = sites_[name];
    site.seeds_called += count.calls > 0 ? 1 : 0;
    site.seeds_enabled += count.enabled ? 1 : 0;
    site.seeds_fired += count.fires > 0 ? 1 : 0;
    site.calls += count.calls;
    site.fires += count.fires;
  }
}

void BuggifyCampaign::merge(const BuggifyCampaign& other) {
  for (const auto& [name, count] : other.sites_) {
    CampaignBuggifyCount& site = sites_[name];
    site.seeds_called += count.seeds_called;
    site.seeds_enabled += count.seeds_enabled;
    site.seeds_fired += count.seeds_fired;
    site.calls += count.calls;
    site.fires += count.fires;
  }
}

std::vector<std::string> BuggifyCampaign::never_fired(const std::vector<std::string>& known) const {
  std::vector<std::string> out;
  for (const std::string& name : known) {
    const auto found = sites_.find(name);
    if (found == sites_.end() || found->second.calls == 0) {
      out.push_back(name + " (never reached)");
    } else if (found->second.fires == 0) {
      const uint64_t enabled = found->second.seeds_enabled;
      out.push_back(name + (enabled == 0 ? std::string(" (never enabled)") : " (enabled in " + std::to_string(enabled) + " seeds, never fired)"));
    }
  }
  return out;
}

std::string BuggifyCampaign::table() const {
  std::ostringstream out;
  char line[160];
  std::snprintf(line, sizeof line, "%-44s %8s %8s %8s %10s %8s\n", "buggify site", "reached", "enabled", "fired", "calls", "fires");
  out << line;
  for (const auto& [name, site] : sites_) {
    std::snprintf(line, sizeof line, "%-44s %8llu %8llu %8llu %10llu %8llu\n", name.c_str(), static_cast<unsigned long long>(site.seeds_called),
                  static_cast<unsigned long long>(site.seeds_enabled), static_cast<unsigned long long>(site.seeds_fired),
                  static_cast<unsigned long long>(site.calls), static_cast<unsigned long long>(site.fires));
    out << line;
  }
  std::vector<std::string> reached;
  for (const auto& [name, site] : sites_)
    if (site.calls > 0) reached.push_back(name);
  const std::vector<std::string> never = never_fired(reached);
  out << "buggify sites reached but never fired:";
  if (never.empty()) out << " none";
  const char* separator = " ";
  for (const std::string& name : never) {
    out << separator << name;
    separator = ", ";
  }
  out << '\n';
  return out.str();
}

}  // namespace durasim::faults
