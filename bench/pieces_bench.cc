// The pieces behind `durasim bench` (docs/performance.md), one Google Benchmark each: a statement
// on the simulated store (prepared once, then cached), the page-delta hash every commit pays, the
// log's append of a 100-record batch against raw inserts of the same rows, whole seeds of the
// log workload with and without checkers, and the happens-before checker on synthetic histories.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

#include "cli/bench.h"
#include "cli/seed_run.h"
#include "sim/sqlite_store.h"
#include "sim/sqlite_vfs.h"

namespace {

using durasim::sim::SqliteStore;

durasim::sim::SqlEnvironment fixed_environment() {
  return durasim::sim::SqlEnvironment{[] { return uint64_t{42}; }, [] { return int64_t{1'700'000'000'000}; }};
}

// One insert and one keyed select per iteration, in the implicit transaction, committed every 100.
void BM_StoreInsertAndSelect(benchmark::State& state) {
  SqliteStore store(fixed_environment());
  store.exec("CREATE TABLE t (k TEXT PRIMARY KEY, v TEXT NOT NULL)");
  int64_t i = 0;
  for (auto _ : state) {
    const std::string key = "key-" + std::to_string(i++);
    store.exec("INSERT INTO t (k, v) VALUES (?, ?)", {key, std::string(64, 'v')});
    benchmark::DoNotOptimize(store.exec("SELECT v FROM t WHERE k = ?", {key}));
    if (i % 100 == 0) {
      if (auto commit = store.commit_local()) store.confirm(commit->number);
    }
  }
  state.SetItemsProcessed(state.iterations() * 2);
}
BENCHMARK(BM_StoreInsertAndSelect);

// FNV-1a over a commit that rewrote `pages` 4 KiB pages.
void BM_PageDeltaHash(benchmark::State& state) {
  durasim::sim::PageDelta delta;
  const auto pages = state.range(0);
  for (int64_t p = 0; p < pages; ++p) delta.chunks.push_back({p * 4096, std::string(4096, static_cast<char>(p))});
  delta.size = delta.min_size = pages * 4096;
  for (auto _ : state) benchmark::DoNotOptimize(delta.hash());
  state.SetBytesProcessed(state.iterations() * pages * 4096);
}
BENCHMARK(BM_PageDeltaHash)->Arg(1)->Arg(8)->Arg(64);

// (c): 20 batches of 100 records through DurabilityLog::append, against raw inserts; the two
// timings are reported as counters, their ratio is figure (c).
void BM_LogAppendAgainstRawInserts(benchmark::State& state) {
  double engine = 0, raw = 0;
  for (auto _ : state) {
    const durasim::cli::AppendCost cost = durasim::cli::measure_append_cost(20);
    engine += cost.engine_s;
    raw += cost.raw_s;
  }
  state.counters["engine_s_per_batch"] = engine / (20.0 * static_cast<double>(state.iterations()));
  state.counters["raw_s_per_batch"] = raw / (20.0 * static_cast<double>(state.iterations()));
  state.counters["ratio"] = engine / raw;
}
BENCHMARK(BM_LogAppendAgainstRawInserts)->Unit(benchmark::kMillisecond);

// Whole log seeds at defaults, checked (argument 1) or not (0): their difference is figure (f).
void BM_LogWorkloadSeed(benchmark::State& state) {
  durasim::workloads::RunConfig config;
  config.workload = "log";
  uint64_t seed = 0;
  for (auto _ : state) {
    const durasim::cli::SeedOutcome outcome =
        state.range(0) ? durasim::cli::run_seed(config, seed++) : durasim::cli::run_seed_unchecked(config, seed++);
    benchmark::DoNotOptimize(outcome.hash);
  }
}
BENCHMARK(BM_LogWorkloadSeed)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond);

// (h): the happens-before checker on a synthetic log history of N operations; the complexity fit
// should say O(N).
void BM_HappensBeforeCheck(benchmark::State& state) {
  int64_t events = 0;
  for (auto _ : state) {
    const durasim::cli::HappensBeforeCost cost = durasim::cli::measure_happens_before(state.range(0));
    events = cost.events;
    benchmark::DoNotOptimize(cost.checks);
  }
  state.counters["events"] = static_cast<double>(events);
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_HappensBeforeCheck)->Arg(10'000)->Arg(100'000)->Complexity(benchmark::oN)->Unit(benchmark::kMillisecond);

}  // namespace
