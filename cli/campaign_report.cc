// A campaign's printed summary and its files; see campaign_report.h.
#include "cli/campaign_report.h"

#include <algorithm>

#include "cli/commands.h"
#include "cli/format.h"
#include "engine/buggify.h"

namespace durasim::cli {
namespace {

std::string plural(uint64_t n, const char* one, const char* many) { return with_commas(n) + " " + (n == 1 ? one : many); }

// The engine's buggify sites a run of `config` can reach: every site but those only research
// variants reach, unless the run switches a variant on.
std::vector<std::string> known_sites(const workloads::RunConfig& config) {
  std::vector<std::string> sites;
  for (std::string_view site : buggify::kSites) {
    const bool variantOnly = std::find(buggify::kVariantOnlySites.begin(), buggify::kVariantOnlySites.end(), site) != buggify::kVariantOnlySites.end();
    if (!variantOnly || !config.variants.empty()) sites.emplace_back(site);
  }
  return sites;
}

void print_names(std::ostream& out, const char* label, const std::vector<std::string>& names) {
  out << label << (names.empty() ? "none" : "");
  for (std::size_t i = 0; i < names.size(); ++i) out << (i ? ", " : "") << names[i];
  out << "\n";
}

std::string range_text(const SeedSlice& seeds) {
  std::string text = std::to_string(seeds.first);
  text += "..";
  text += std::to_string(seeds.last);
  if (!seeds.shard.whole()) text += ", shard " + to_string(seeds.shard);
  return text;
}

}  // namespace

CampaignReport::CampaignReport(const Campaign& campaign, ReportSinks sinks)
    : campaign_(campaign), sinks_(sinks), totals_(campaign.configs.size()) {
  if (sinks_.junit) junit_.emplace(campaign.seeds, campaign.configs.empty() ? "" : campaign.configs.front().faults);
}

void CampaignReport::add(const SeedResult& r) {
  const auto config = std::find_if(campaign_.configs.begin(), campaign_.configs.end(),
                                   [&](const workloads::RunConfig& c) { return c.workload == r.workload; });
  const auto index = static_cast<std::size_t>(config - campaign_.configs.begin());
  Totals& t = totals_.at(index);
  ++t.seeds;
  t.passed += r.passed ? 1 : 0;
  t.executor_events += r.executor_events;
  t.trace_events += r.trace_events;
  t.simulated_ms += r.simulated_ms;
  t.wall_s += r.wall_s;
  for (const auto& [id, counts] : r.invariants) t.tallies.add(id, counts.first, counts.second, "");
  t.faults.add(r.faults);
  t.buggify.add(r.buggify);
  if (!r.passed) t.failures.push_back(failure_text(r));

  if (sinks_.progress && sinks_.verbose) sinks_.progress->clear();
  if (sinks_.verbose) sinks_.out << verbose_line(r) << "\n";
  if (sinks_.json) *sinks_.json << json_line(to_json(r)) << "\n";
  if (junit_) junit_->add(r);
  if (t.seeds == campaign_.seeds.size())
    while (summarised_ <= index) print_summary(summarised_++);
}

void CampaignReport::print_summary(std::size_t index) {
  if (sinks_.progress) sinks_.progress->clear();
  const Totals& c = totals_.at(index);
  const workloads::RunConfig& config = campaign_.configs.at(index);
  std::ostream& out = sinks_.out;
  out << "durasim run: workload " << config.workload << ", faults " << config.faults << ", seeds " << range_text(campaign_.seeds)
      << " (" << (c.seeds == 1 ? "1 seed" : std::to_string(c.seeds) + " seeds") << ")\n";
  out << "  passed " << c.passed << "/" << c.seeds << "\n";
  const double simulated_s = static_cast<double>(c.simulated_ms) / 1000.0;
  const double wall = c.wall_s > 0 ? c.wall_s : 1e-9;
  out << "  simulated " << format("%.1f", simulated_s) << " s in " << format("%.3f", c.wall_s)
      << " s wall: " << format("%.0f", simulated_s / wall) << "x real time\n";
  out << "  executor: " << with_commas(c.executor_events) << " events, "
      << with_commas(static_cast<uint64_t>(static_cast<double>(c.executor_events) / wall)) << " events/s; "
      << format("%.1f", static_cast<double>(c.seeds) / wall) << " seeds/s; " << with_commas(c.trace_events)
      << " trace events\n";
  out << "  invariants (checked / violated):\n";
  for (const auto& [id, tally] : c.tallies.by_id()) {
    out << "    " << id << "  " << with_commas(tally.checked) << " / " << tally.violated
        << (tally.checked == 0 ? "  NEVER CHECKED" : "") << "\n";
  }
  out << "  faults (seeds enabled / seeds fired / opportunities / firings):\n" << c.faults.table();
  out << c.buggify.table();
  for (const std::string& failure : c.failures) out << "  FAILED " << failure << "\n";
  out << std::flush;
}

int CampaignReport::finish(const CampaignTiming& timing, std::ostream& err) {
  while (summarised_ < totals_.size()) print_summary(summarised_++);
  uint64_t seeds = 0, passed = 0;
  sim::Tallies tallies;
  faults::FaultCampaign faults;
  faults::BuggifyCampaign buggify;
  for (const Totals& t : totals_) {
    seeds += t.seeds;
    passed += t.passed;
    tallies.merge(t.tallies);
    faults.merge(t.faults);
    buggify.merge(t.buggify);
  }
  std::ostream& out = sinks_.out;
  // Over several workloads, the fault kinds and sites no workload fired and the invariants no
  // workload checked (a workload's summary named its own misses, some of which another covers).
  if (campaign_.configs.size() > 1 && campaign_.configs.front().faults != "none") {
    std::vector<std::string> kinds;
    for (sim::FaultKind kind : faults.false_greens()) kinds.emplace_back(sim::fault_name(kind));
    print_names(out, "fault kinds enabled in some workload that fired in none: ", kinds);
    print_names(out, "buggify sites that fired in no workload: ", buggify.never_fired(known_sites(campaign_.configs.front())));
  }
  if (campaign_.configs.size() > 1) {
    std::vector<std::string> unchecked;
    for (const auto& [id, tally] : tallies.by_id())
      if (tally.checked == 0) unchecked.push_back(id);
    print_names(out, "invariants checked in no workload: ", unchecked);
  }
  const double wall = timing.wall_s > 0 ? timing.wall_s : 1e-9;
  if (timing.merged_files > 0) {
    out << "campaign: " << plural(seeds, "seed", "seeds") << " merged from " << plural(timing.merged_files, "file", "files")
        << "; their runs took " << format("%.1f", timing.wall_s) << " s wall in all\n";
  } else {
    out << "campaign: " << plural(seeds, "seed", "seeds") << " in " << format("%.1f", timing.wall_s) << " s wall on "
        << plural(timing.jobs, "job", "jobs") << ": " << format("%.1f", static_cast<double>(seeds) / wall) << " seeds/s, "
        << format("%.1f", static_cast<double>(seeds) / wall / timing.jobs) << " per job\n";
  }
  out << "total: passed " << passed << "/" << seeds << " seeds of " << plural(totals_.size(), "workload", "workloads");
  if (passed < seeds) out << "; " << seeds - passed << " FAILED";
  out << "\n" << std::flush;
  if (sinks_.json) write_json_summary(timing);
  if (junit_) junit_->write(*sinks_.junit);
  if (report_unknown_invariants(tallies, err) > 0) return kExitBadInput;
  return passed == seeds ? kExitOk : kExitFailed;
}

void CampaignReport::write_json_summary(const CampaignTiming& timing) {
  nlohmann::ordered_json workloads = nlohmann::ordered_json::array();
  uint64_t seeds = 0, passed = 0;
  for (std::size_t i = 0; i < totals_.size(); ++i) {
    workloads.push_back({{"workload", campaign_.configs[i].workload},
                         {"config", campaign_.configs[i].to_json()},
                         {"seeds", totals_[i].seeds},
                         {"passed", totals_[i].passed}});
    seeds += totals_[i].seeds;
    passed += totals_[i].passed;
  }
  const nlohmann::ordered_json summary = {{"type", "summary"},
                                          {"seeds", {{"first", campaign_.seeds.first}, {"last", campaign_.seeds.last}}},
                                          {"shard", to_string(campaign_.seeds.shard)},
                                          {"check_determinism", campaign_.check_determinism},
                                          {"workloads", workloads},
                                          {"seeds_run", seeds},
                                          {"passed", passed},
                                          {"wall_s", timing.wall_s},
                                          {"jobs", timing.jobs}};
  *sinks_.json << json_line(summary) << std::endl;
}

}  // namespace durasim::cli
