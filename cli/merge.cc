// Merging shard results into one campaign's report; see merge.h.
#include "cli/merge.h"

#include <algorithm>
#include <fstream>
#include <map>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "cli/campaign_report.h"
#include "cli/commands.h"
#include "cli/user_io.h"
#include "traces/trace_file.h"

namespace durasim::cli {
namespace {

// What a file's summary line says about the campaign it belongs to.
struct ShardSummary {
  SeedSlice seeds;
  bool check_determinism = false;
  nlohmann::json workloads;  // [{"workload", "config", "seeds", "passed"}]: compared between files
  double wall_s = 0;
};

struct ResultFile {
  std::string path;
  ShardSummary summary;
  std::vector<SeedResult> seeds;
};

template <class T>
T summary_field(const nlohmann::json& summary, const nlohmann::json::json_pointer& pointer) {
  if (!summary.contains(pointer)) throw std::invalid_argument("summary line lacks " + pointer.to_string());
  try {
    return summary.at(pointer).get<T>();
  } catch (const nlohmann::json::exception&) {
    throw std::invalid_argument("summary line: " + pointer.to_string() + " has the wrong type");
  }
}

ShardSummary parse_summary(const nlohmann::json& j) {
  using ptr = nlohmann::json::json_pointer;
  ShardSummary s;
  s.seeds = make_slice(summary_field<uint64_t>(j, ptr("/seeds/first")), summary_field<uint64_t>(j, ptr("/seeds/last")),
                       parse_shard(summary_field<std::string>(j, ptr("/shard"))));
  s.check_determinism = summary_field<bool>(j, ptr("/check_determinism"));
  s.wall_s = summary_field<double>(j, ptr("/wall_s"));
  s.workloads = j.at("workloads");
  if (!s.workloads.is_array() || s.workloads.empty()) throw std::invalid_argument("summary line: no workloads");
  for (const nlohmann::json& w : s.workloads) {
    if (!w.is_object() || !w.contains("workload") || !w["workload"].is_string() || !w.contains("config"))
      throw std::invalid_argument("summary line: a workload without its name or config");
    if (summary_field<uint64_t>(w, ptr("/seeds")) != s.seeds.size())
      throw std::invalid_argument("summary line: workload " + w["workload"].get<std::string>() + " ran " +
                                  std::to_string(w["seeds"].get<uint64_t>()) + " seeds, its shard holds " + std::to_string(s.seeds.size()));
  }
  return s;
}

// Reads one `durasim run --json` file; every seed record must belong to its shard, in campaign order.
ResultFile read_results(const std::string& path) {
  require_input_file(path);
  std::ifstream in(path, std::ios::binary);
  ResultFile file{path, {}, {}};
  std::optional<nlohmann::json> summary;
  uint64_t number = 0;
  for (std::string line; std::getline(in, line);) {
    ++number;
    const std::string where = path + ":" + std::to_string(number) + ": ";
    if (summary) throw std::invalid_argument(where + "a line after the summary line");
    try {
      const nlohmann::json j = traces::parse_bounded_json(line);
      if (!j.is_object() || !j.contains("type")) throw std::invalid_argument("not a durasim result line");
      if (j["type"] == "summary") summary = j;
      else file.seeds.push_back(seed_result_from_json(j));
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(where + e.what());
    }
  }
  if (!summary) throw std::invalid_argument(path + ": no summary line: the run did not finish, or this is not a `durasim run --json` file");
  try {
    file.summary = parse_summary(*summary);
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(path + ": " + e.what());
  }
  const ShardSummary& s = file.summary;
  if (file.seeds.size() != s.workloads.size() * s.seeds.size())
    throw std::invalid_argument(path + ": holds " + std::to_string(file.seeds.size()) + " seed lines, its summary " +
                                std::to_string(s.workloads.size() * s.seeds.size()));
  for (std::size_t k = 0; k < file.seeds.size(); ++k) {
    const SeedResult& r = file.seeds[k];
    const std::string& workload = s.workloads[k / s.seeds.size()]["workload"].get_ref<const std::string&>();
    const uint64_t seed = s.seeds.seed_at(k % s.seeds.size());
    if (r.workload != workload || r.seed != seed)
      throw std::invalid_argument(path + ": seed line " + std::to_string(k + 1) + " is " + r.workload + " seed " + std::to_string(r.seed) +
                                  ", its shard's next is " + workload + " seed " + std::to_string(seed));
  }
  return file;
}

// The configuration of each workload, without the per-shard counts.
nlohmann::json campaign_of(const ShardSummary& s) {
  nlohmann::json configs = nlohmann::json::array();
  for (const nlohmann::json& w : s.workloads) configs.push_back({w["workload"], w["config"]});
  return configs;
}

// Checks that `files` are the shards 0/n .. n-1/n of one campaign, and orders them by shard.
void check_complete(std::vector<ResultFile>& files) {
  const ResultFile& first = files.front();
  for (const ResultFile& f : files) {
    const ShardSummary &a = first.summary, &b = f.summary;
    std::string differs;
    if (a.seeds.first != b.seeds.first || a.seeds.last != b.seeds.last) differs = "seed ranges";
    else if (a.seeds.shard.count != b.seeds.shard.count) differs = "shard counts";
    else if (a.check_determinism != b.check_determinism) differs = "--check-determinism settings";
    else if (campaign_of(a) != campaign_of(b)) differs = "workloads or configurations";
    if (!differs.empty()) throw std::invalid_argument(first.path + " and " + f.path + " are not shards of one campaign: their " + differs + " differ");
  }
  std::sort(files.begin(), files.end(), [](const ResultFile& x, const ResultFile& y) { return x.summary.seeds.shard.index < y.summary.seeds.shard.index; });
  const uint64_t count = first.summary.seeds.shard.count;
  for (std::size_t i = 0; i < files.size(); ++i) {
    const Shard& shard = files[i].summary.seeds.shard;
    if (i > 0 && shard.index == files[i - 1].summary.seeds.shard.index)
      throw std::invalid_argument("shard " + to_string(shard) + " appears twice: " + files[i - 1].path + " and " + files[i].path);
  }
  for (uint64_t index = 0; index < count; ++index) {
    const bool present = std::any_of(files.begin(), files.end(), [&](const ResultFile& f) { return f.summary.seeds.shard.index == index; });
    if (!present) throw std::invalid_argument("shard " + to_string(Shard{index, count}) + " is missing");
  }
}

}  // namespace

int merge_command(const MergeOptions& options, std::ostream& out, std::ostream& err) {
  std::vector<ResultFile> files;
  Campaign campaign;
  std::unique_ptr<std::ofstream> json, junit;
  try {
    if (options.files.empty()) throw std::invalid_argument("give the result files to merge");
    for (const std::string& path : options.files) files.push_back(read_results(path));
    check_complete(files);
    const ShardSummary& s = files.front().summary;
    for (const nlohmann::json& w : s.workloads) campaign.configs.push_back(workloads::RunConfig::from_json(w["config"]));
    campaign.seeds = make_slice(s.seeds.first, s.seeds.last, Shard{});
    campaign.check_determinism = s.check_determinism;
    if (options.json) json = open_output(*options.json);
    if (options.junit) junit = open_output(*options.junit);
  } catch (const std::exception& e) {
    err << "durasim merge: " << e.what() << "\n";
    return kExitBadInput;
  }

  CampaignReport report(campaign, {out, options.verbose, json.get(), junit.get(), nullptr});
  double wall_s = 0;
  for (const ResultFile& f : files) wall_s += f.summary.wall_s;
  for (std::size_t w = 0; w < campaign.configs.size(); ++w)
    for (const ResultFile& f : files) {
      const uint64_t per_workload = f.summary.seeds.size();
      for (uint64_t k = 0; k < per_workload; ++k) report.add(f.seeds[w * per_workload + k]);
    }
  const int code = report.finish({wall_s, 1, files.size()}, err);
  try {
    close_output(json, options.json.value_or(""));
    close_output(junit, options.junit.value_or(""));
  } catch (const std::exception& e) {
    err << "durasim merge: " << e.what() << "\n";
    return kExitBadInput;
  }
  return code;
}

}  // namespace durasim::cli
