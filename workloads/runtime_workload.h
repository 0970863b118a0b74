// The runtime workload (one of the default campaign's): Counter objects on the simulated runtime,
// driven by retrying clients, with counters that must add up after every crash.
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/cold_store.h"
#include "sim/tally.h"
#include "workloads/workload.h"

namespace durasim::workloads {

WorkloadInfo runtime_workload_info();

// The workload's cold-store checks, over the store's record of accepted writes and removals
// (sim::ColdStore::history()) and what clients read; expectations from runtime.md 10 and the
// workload's own rules, never from the store's code.

// RT-21: every expiry in `bucket` (whose rule is `expire_after_days`) happened within [due, due +
// 86,400,000 ms], due = the key's last put + expire_after_days days.
void check_expiries(const std::vector<sim::ColdEvent>& history, const std::string& bucket, int64_t expire_after_days,
                    sim::Tallies& tallies);
// RT-20: every put to `bucket` is create-only, so between two removals of a key at most one is accepted.
void check_create_only(const std::vector<sim::ColdEvent>& history, const std::string& bucket, sim::Tallies& tallies);
// The keys of `bucket` that cold.vanish (arbitrary) removed: exempt from the checks that an
// acknowledged object stays readable.
std::set<std::string> vanished_keys(const std::vector<sim::ColdEvent>& history, const std::string& bucket);

// What a rewrite (put "first", wait, put "second", read) read back: "second" if the second put was
// accepted, "first" if it was rejected with 429 (RT-22: a rejected write changes nothing; RT-20:
// a read after an accepted put reflects it). Keys cold.vanish removed are exempt.
struct RewriteRead {
  std::string key;
  bool rejected = false;
  nlohmann::json seen;  // the body read, or null
};
void check_rewrites(const std::vector<sim::ColdEvent>& history, const std::string& bucket, const std::vector<RewriteRead>& rewrites,
                    sim::Tallies& tallies);

}  // namespace durasim::workloads
