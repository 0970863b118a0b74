// World core throughput: executor events per second for bare timers, for coroutine sleeps, and
// for whole seeds of the core workload. Ratios between these are what later work compares against.
#include <benchmark/benchmark.h>

#include "cli/seed_run.h"
#include "sim/world.h"

namespace {

class NullSink final : public durasim::sim::TraceSink {
 public:
  void record(const durasim::sim::TraceEvent&) override {}
};

void BM_ExecutorTimers(benchmark::State& state) {
  for (auto _ : state) {
    NullSink sink;
    durasim::sim::World world(0, durasim::sim::RandomSource::recording(1), sink);
    for (int i = 0; i < 10'000; ++i) world.executor().at(i % 97, [] {});
    world.run_until(INT64_MAX, [] { return true; });
  }
  state.SetItemsProcessed(state.iterations() * 10'000);
}
BENCHMARK(BM_ExecutorTimers);

durasim::Task<void> sleeper(durasim::sim::World& world, int n) {
  for (int i = 0; i < n; ++i) co_await world.sleep_for(i % 13);
}

void BM_CoroutineSleeps(benchmark::State& state) {
  for (auto _ : state) {
    NullSink sink;
    durasim::sim::World world(0, durasim::sim::RandomSource::recording(1), sink);
    for (int i = 0; i < 100; ++i) world.tasks().spawn("s", sleeper(world, 100));
    world.run_until(INT64_MAX, [] { return true; });
  }
  state.SetItemsProcessed(state.iterations() * 100 * 101);
}
BENCHMARK(BM_CoroutineSleeps);

void BM_CoreWorkloadSeed(benchmark::State& state) {
  durasim::workloads::RunConfig config;
  uint64_t seed = 0, events = 0;
  for (auto _ : state) events += durasim::cli::run_seed(config, seed++).executor_events;
  state.SetItemsProcessed(static_cast<int64_t>(events));
}
BENCHMARK(BM_CoreWorkloadSeed);

}  // namespace
