// Buggify sites (DESIGN.md "Faults and variants"): at commit, alarm, RPC and retry boundaries engine
// code asks whether to take a legal but rare path. A site is enabled per run with probability 0.25,
// then fires with probability 0.25 per call, both recorded choices (RT-23); off under `none` and after heal.
// A campaign merges the counts of its seeds (BuggifyCampaign) and names the sites that never fired.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "faults/fault_plan.h"
#include "sim/random.h"
#include "sim/world.h"

namespace durasim::faults {

inline constexpr uint32_t kBuggifyEnablePpm = 250'000;  // DESIGN.md: enabled per run with probability 0.25
inline constexpr uint32_t kBuggifyFirePpm = 250'000;    // DESIGN.md: then fires with probability 0.25

struct BuggifyCount {
  bool enabled = false;  // drawn at the site's first use while faults were on
  uint64_t calls = 0;
  uint64_t fires = 0;
};

class Buggify {
 public:
  // `world` and `plan` must outlive this; the plan says whether faults are on (profile, heal).
  Buggify(sim::World& world, const FaultPlan& plan) : world_(world), plan_(plan) {}
  Buggify(const Buggify&) = delete;
  Buggify& operator=(const Buggify&) = delete;

  // Whether `site` misbehaves now. Draws in "buggify.<site>": the enabling at the first call made
  // while faults are on, then one draw per call of an enabled site. Off: false without a draw.
  bool operator()(std::string_view site);

  // Per site, in name order.
  std::map<std::string, BuggifyCount> counts() const;

 private:
  struct Site {
    BuggifyCount count;
    bool drawn = false;    // the enabling draw happened
    sim::StreamId stream;  // "buggify.<site>", valid once drawn
  };
  Site& site_named(std::string_view name);
  bool off() const { return plan_.kind() == ProfileKind::none || plan_.healed(); }

  sim::World& world_;
  const FaultPlan& plan_;
  std::map<std::string, Site, std::less<>> sites_;
};

// One site over the seeds of a campaign.
struct CampaignBuggifyCount {
  uint64_t seeds_called = 0;   // seeds that reached the site
  uint64_t seeds_enabled = 0;  // seeds in which it was enabled
  uint64_t seeds_fired = 0;
  uint64_t calls = 0;
  uint64_t fires = 0;
};

class BuggifyCampaign {
 public:
  // Adds one seed's counts.
  void add(const std::map<std::string, BuggifyCount>& run);
  // Adds another campaign's seeds (parallel campaigns merge their parts).
  void merge(const BuggifyCampaign& other);

  const std::map<std::string, CampaignBuggifyCount>& sites() const { return sites_; }
  // Of `known` (every site the engine has), those that never fired, each with why: "never reached"
  // when no seed called it, else "enabled in N seeds, never fired" or "never enabled".
  std::vector<std::string> never_fired(const std::vector<std::string>& known) const;
  // A fixed-width table, one line per site reached, then those of them that never fired.
  std::string table() const;

 private:
  std::map<std::string, CampaignBuggifyCount> sites_;
};

}  // namespace durasim::faults
