// Fault accounting (runtime.md 11.5, RT-09): per fault, whether it was enabled, its drawn rate, its
// opportunities and its firings, for one run; merged over the seeds of a campaign, which names every
// fault enabled in some seed that never fired (a "false green").
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/fault_points.h"

namespace durasim::faults {

// One fault in one run. `firings` equals the number of "fault" trace events with its id (RT-09).
struct FaultCount {
  sim::FaultKind kind{};
  bool enabled = false;
  uint32_t rate_ppm = 0;
  uint64_t opportunities = 0;
  uint64_t firings = 0;
};

// Every fault of one run, indexed by FaultKind.
using FaultAccounting = std::array<FaultCount, sim::kFaultKindCount>;

// {"<fault id>": {"enabled", "rate_ppm", "opportunities", "firings"}, ...} for the run report.
nlohmann::json accounting_json(const FaultAccounting& run);

// One fault over the seeds of a campaign.
struct CampaignFaultCount {
  sim::FaultKind kind{};
  uint64_t seeds_enabled = 0;
  uint64_t seeds_fired = 0;
  uint64_t opportunities = 0;
  uint64_t firings = 0;
};

class FaultCampaign {
 public:
  FaultCampaign();

  // Adds one seed's accounting.
  void add(const FaultAccounting& run);
  // Adds another campaign's seeds (parallel campaigns merge their parts).
  void merge(const FaultCampaign& other);

  uint64_t seeds() const { return seeds_; }
  const std::array<CampaignFaultCount, sim::kFaultKindCount>& rows() const { return rows_; }
  // Faults enabled in some seed that never fired, in FaultKind order. Latency families are never
  // listed: they do not fire (atlas.h, Opportunity::latency_draw).
  std::vector<sim::FaultKind> false_greens() const;
  // A fixed-width table, one line per fault, then the false greens.
  std::string table() const;

 private:
  uint64_t seeds_ = 0;
  std::array<CampaignFaultCount, sim::kFaultKindCount> rows_;
};

}  // namespace durasim::faults
