// The JUnit XML report of a campaign (`durasim run --junit FILE`, `durasim merge --junit FILE`), the
// format CI servers show: a test suite per workload and a test case per batch of kSeedsPerCase
// seeds, cut by seed value (seeds 0..24, 25..49, ...) so that a batch keeps its name in every shard
// and after a merge. A failing case lists each failing seed with the command that replays its saved
// trace and the one that reproduces it.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "cli/seed_result.h"
#include "cli/seed_slice.h"

namespace durasim::cli {

inline constexpr uint64_t kSeedsPerCase = 25;

class JUnitReport {
 public:
  JUnitReport(const SeedSlice& seeds, std::string faults);

  void add(const SeedResult& result);  // in campaign order: workload by workload, seeds ascending
  void write(std::ostream& out) const;

 private:
  struct Case {
    uint64_t batch = 0;  // seed / kSeedsPerCase
    uint64_t seeds = 0;
    double wall_s = 0;
    std::vector<std::string> failures;  // failure_text() of each failing seed
  };
  struct Suite {
    std::string workload;
    std::vector<Case> cases;
  };
  void write_suite(std::ostream& out, const Suite& suite) const;

  SeedSlice seeds_;
  std::string faults_;
  std::vector<Suite> suites_;
};

// `text` as XML character data or an attribute value: markup characters as entities, control
// characters XML cannot hold as "\xNN", bytes that are not UTF-8 as U+FFFD.
std::string xml_escape(std::string_view text);

}  // namespace durasim::cli
