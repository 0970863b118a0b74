// Fault accounting per run and per campaign; see accounting.h. Pure bookkeeping over the counts a
// FaultPlan keeps: no draws, no events (RT-09 is kept by the plan that produced the counts).
#include "faults/accounting.h"

#include <iomanip>
#include <sstream>

#include "faults/atlas.h"

namespace durasim::faults {
namespace {

constexpr int kIdWidth = 26;     // the longest fault id, "clock.incarnation_offset", and a gap
constexpr int kClassWidth = 6;
constexpr int kCountWidth = 14;

bool is_latency(sim::FaultKind kind) { return fault_spec(kind).opportunity == Opportunity::latency_draw; }

std::string seeds_of(uint64_t count, uint64_t seeds) { return std::to_string(count) + "/" + std::to_string(seeds); }

void print_header(std::ostringstream& out) {
  out << std::left << std::setw(kIdWidth) << "fault" << std::setw(kClassWidth) << "class" << std::right
      << std::setw(kCountWidth) << "enabled in" << std::setw(kCountWidth) << "fired in" << std::setw(kCountWidth)
      << "opportunities" << std::setw(kCountWidth) << "firings" << '\n';
}

void print_row(std::ostringstream& out, const CampaignFaultCount& row, uint64_t seeds) {
  const bool latency = is_latency(row.kind);
  out << std::left << std::setw(kIdWidth) << sim::fault_name(row.kind) << std::setw(kClassWidth)
      << promise_class_name(fault_spec(row.kind).promise) << std::right << std::setw(kCountWidth)
      << seeds_of(row.seeds_enabled, seeds) << std::setw(kCountWidth)
      << (latency ? "(latency)" : seeds_of(row.seeds_fired, seeds)) << std::setw(kCountWidth) << row.opportunities
      << std::setw(kCountWidth) << (latency ? "-" : std::to_string(row.firings)) << '\n';
}

}  // namespace

nlohmann::json accounting_json(const FaultAccounting& run) {
  nlohmann::json out = nlohmann::json::object();
  for (const FaultCount& count : run)
    out[std::string(sim::fault_name(count.kind))] = {{"enabled", count.enabled},
                                                     {"rate_ppm", count.rate_ppm},
                                                     {"opportunities", count.opportunities},
                                                     {"firings", count.firings}};
  return out;
}

FaultCampaign::FaultCampaign() {
  for (std::size_t i = 0; i < rows_.size(); ++i) rows_[i].kind = static_cast<sim::FaultKind>(i);
}

void FaultCampaign::add(const FaultAccounting& run) {
  ++seeds_;
  for (const FaultCount& count : run) {
    CampaignFaultCount& row = rows_.at(static_cast<std::size_t>(count.kind));
    row.seeds_enabled += count.enabled ? 1 : 0;
    row.seeds_fired += count.firings > 0 ? 1 : 0;
    row.opportunities += count.opportunities;
    row.firings += count.firings;
  }
}

void FaultCampaign::merge(const FaultCampaign& other) {
  seeds_ += other.seeds_;
  for (std::size_t i = 0; i < rows_.size(); ++i) {
    rows_[i].seeds_enabled += other.rows_[i].seeds_enabled;
    rows_[i].seeds_fired += other.rows_[i].seeds_fired;
    rows_[i].opportunities += other.rows_[i].opportunities;
    rows_[i].firings += other.rows_[i].firings;
  }
}

std::vector<sim::FaultKind> FaultCampaign::false_greens() const {
  std::vector<sim::FaultKind> out;
  for (const CampaignFaultCount& row : rows_)
    if (row.seeds_enabled > 0 && row.firings == 0 && !is_latency(row.kind)) out.push_back(row.kind);
  return out;
}

std::string FaultCampaign::table() const {
  std::ostringstream out;
  print_header(out);
  for (const CampaignFaultCount& row : rows_) print_row(out, row, seeds_);
  const std::vector<sim::FaultKind> never = false_greens();
  out << "false greens (enabled in some seed, never fired):";
  if (never.empty()) out << " none";
  const char* separator = " ";
  for (sim::FaultKind kind : never) {
    out << separator << sim::fault_name(kind);
    separator = ", ";
    if (rows_.at(static_cast<std::size_t>(kind)).opportunities == 0) out << " (no opportunity)";
  }
  out << '\n';
  return out.str();
}

}  // namespace durasim::faults
