// Figure (c) of `durasim bench`: the engine's DurabilityLog::append of 100-record batches against
// raw SQLite inserts of the same rows in one transaction, both on the same simulated store (one
// object, no faults), so the ratio is what the log adds over the physical work. The raw rows go to a
// table shaped as the log's records table, with the same indexes (log.md 2), so both write the
// same pages. Each side runs kAppendCostRounds times, the two alternating, and its fastest run is
// kept: the raw side lasts milliseconds at the default scale, so one run of each measured the
// machine's noise as much as the work (the figure read 1.3x one day and 2.0x the next).
#include "cli/bench.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "engine/log.h"
#include "engine/scheduler.h"
#include "faults/fault_plan.h"
#include "sim/object_runtime.h"
#include "sim/world.h"

namespace durasim::cli {

constexpr int kAppendCostRounds = 7;
namespace {

constexpr int kRecordsPerBatch = 100;

class NullSink final : public sim::TraceSink {
 public:
  void record(const sim::TraceEvent&) override {}
};

std::string keyOf(int64_t batch, int i) {
  std::string key = std::to_string(batch);
  key += '-';
  key += std::to_string(i);
  return key;
}
nlohmann::json bodyOf(int i) { return {{"n", i}, {"pad", std::string(40, static_cast<char>('a' + i % 26))}}; }

// One object holding a log: "append" appends a batch through the engine, "raw" inserts the same
// rows itself in one transaction.
class AppendHost final : public DurableObject {
 public:
  explicit AppendHost(ObjectContext& ctx) : ctx_(ctx), scheduler_(ctx, SchedulerOptions{}), log_(scheduler_, LogOptions{}) {
    ctx_.storage.exec(
        "CREATE TABLE IF NOT EXISTS bench_rows (\"offset\" INTEGER PRIMARY KEY, dedup_key TEXT NOT NULL UNIQUE, payload TEXT NOT NULL,"
        " bytes INTEGER NOT NULL, appended_at INTEGER NOT NULL)");
    ctx_.storage.exec("CREATE INDEX IF NOT EXISTS bench_rows_appended_idx ON bench_rows (appended_at, \"offset\")");
  }
  bool hasAlarmHandler() const override { return true; }
  Task<void> alarm(const AlarmInvocationInfo& info) override { return scheduler_.alarm(info); }
  Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) override {
    const int64_t batch = args.at("batch").get<int64_t>();
    if (method == "append") {
      std::vector<LogAppendInput> records;
      for (int i = 0; i < kRecordsPerBatch; ++i) records.push_back({bodyOf(i), keyOf(batch, i)});
      Task<EnqueueResult<std::vector<int64_t>>> appending = log_.append(std::move(records));
      const EnqueueResult<std::vector<int64_t>> result = co_await appending;
      co_return result.success;
    }
    const int64_t now = ctx_.clock.now();
    co_await ctx_.storage.transaction([&](StorageTxn& txn) {
      for (int i = 0; i < kRecordsPerBatch; ++i) {
        const std::string payload = bodyOf(i).dump();
        txn.exec("INSERT INTO bench_rows (\"offset\", dedup_key, payload, bytes, appended_at) VALUES (?, ?, ?, ?, ?)",
                 batch * kRecordsPerBatch + i, keyOf(batch, i), payload, static_cast<int64_t>(payload.size()), now);
      }
    });
    co_return true;
  }

 private:
  ObjectContext& ctx_;
  DurabilityScheduler scheduler_;
  DurabilityLog log_;
};

Task<void> client(Stub stub, std::string method, int batches, std::shared_ptr<int> succeeded) {
  for (int64_t b = 0; b < batches; ++b) {
    Task<nlohmann::json> calling = stub.call(method, {{"batch", b}});
    const nlohmann::json ok = co_await calling;
    if (ok.get<bool>()) ++*succeeded;
  }
}

// Wall seconds for `batches` calls of `method` on a fresh world.
double timeBatches(const std::string& method, int batches) {
  NullSink sink;
  sim::World world(sim::kDefaultStartTime, sim::RandomSource::recording(1), sink);
  faults::FaultPlan plan(world, faults::ProfileKind::none);
  sim::ObjectRuntime runtime(world, plan);
  runtime.define_class("Append", [](ObjectContext& ctx) { return std::make_unique<AppendHost>(ctx); });
  auto succeeded = std::make_shared<int>(0);
  world.tasks().spawn("bench.client", client(runtime.client("Append").get("a"), method, batches, succeeded));
  const auto start = std::chrono::steady_clock::now();
  world.run_until(world.now() + 3'600'000, [&] { return *succeeded < batches; });
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  world.tasks().cancel_all();
  if (*succeeded != batches) throw std::runtime_error("bench: " + method + " completed " + std::to_string(*succeeded) + " of " + std::to_string(batches) + " batches");
  return seconds;
}

}  // namespace

AppendCost measure_append_cost(int batches) {
  AppendCost cost;
  cost.batches = batches;
  cost.records_per_batch = kRecordsPerBatch;
  cost.engine_s = cost.raw_s = std::numeric_limits<double>::infinity();
  for (int round = 0; round < kAppendCostRounds; ++round) {
    cost.engine_s = std::min(cost.engine_s, timeBatches("append", batches));
    cost.raw_s = std::min(cost.raw_s, timeBatches("raw", batches));
  }
  return cost;
}

}  // namespace durasim::cli
