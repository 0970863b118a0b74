// Figure (g) of `durasim bench`: the event bus's poll cost of events.md 11. One Bus object on a
// file-backed store holds a topic of N events read by two consumers: "c", whose handler fails event
// e10 every time (its bookmark frozen behind the waiting event until quarantine), and "h", which
// never fails. Each poll runs alone, so the store's counters over the call are the poll's own reads
// and the wall time around the call is the poll's cost. Topics of several sizes are measured side by
// side, one World each, their idle polls taken in turn, so that a spell in which the machine runs
// slower slows every size alike instead of the one measured then. Under
// events.full_rescan_when_frozen + events.failure_two_step the counts are the reference's.
#include "cli/bench.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "engine/events.h"
#include "engine/events_store.h"
#include "faults/fault_plan.h"
#include "sim/object_runtime.h"
#include "sim/world.h"

namespace durasim::cli {
namespace {

constexpr const char* kClass = "BenchBus";
constexpr const char* kTopic = "t";
constexpr const char* kFailing = "e10";
constexpr int64_t kEmitChunk = 5'000;  // events appended per unit

class NullSink final : public sim::TraceSink {
 public:
  void record(const sim::TraceEvent&) override {}
};

Task<void> failOn(std::string failing, const events::EventMeta& meta) {
  if (meta.id == failing) throw std::runtime_error("bench: " + failing + " fails");
  co_return;
}

// emit {from, to}: events e<from>..e<to - 1> in one unit; poll {consumer}: one pass ->
// {delivered, lists, gets} (the store's counters over the pass).
class BenchBus final : public DurableObject {
 public:
  explicit BenchBus(ObjectContext& ctx) : store_(ctx), bus_(events::EventsContext::of(ctx, store_)) {
    const auto handler = [](const nlohmann::json&, const events::EventMeta& meta) { return failOn(kFailing, meta); };
    const auto healthy = [](const nlohmann::json&, const events::EventMeta& meta) { return failOn("", meta); };
    consumers_["c"] = events::createConsumer(bus_, kTopic, handler, options("c"));
    consumers_["h"] = events::createConsumer(bus_, kTopic, healthy, options("h"));
  }

  Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) override {
    if (method == "emit") {
      store_.atomically([&](events::WorkTxn& txn) {
        for (int64_t i = args.at("from").get<int64_t>(); i < args.at("to").get<int64_t>(); ++i) {
          events::EmitOptions opts;
          std::string id = "e";
          id += std::to_string(i);
          opts.id = std::move(id);
          events::emitIn(bus_, txn, kTopic, nlohmann::json{{"n", i}}, opts);
        }
      });
      Task<void> syncing = store_.sync();
      co_await syncing;
      co_return nlohmann::json::object();
    }
    const events::StoreStats before = store_.stats();
    Task<int64_t> polling = consumers_.at(args.at("consumer").get<std::string>())->poll();
    const int64_t delivered = co_await polling;
    const events::StoreStats& after = store_.stats();
    co_return nlohmann::json{{"delivered", delivered}, {"lists", after.lists - before.lists}, {"gets", after.gets - before.gets}};
  }

 private:
  static events::ConsumerOptions options(std::string name) {
    events::ConsumerOptions o;
    o.name = std::move(name);
    return o;
  }
  events::SqliteWorkStore store_;
  events::EventsContext bus_;
  std::map<std::string, std::shared_ptr<events::Consumer>> consumers_;
};

Task<void> callInto(Stub stub, std::string method, nlohmann::json args, std::shared_ptr<std::optional<nlohmann::json>> out) {
  Task<nlohmann::json> calling = stub.call(std::move(method), std::move(args));
  *out = co_await calling;
}

// One Bus object in a World without faults, its store a file in a private temporary directory.
class BenchWorld {
 public:
  explicit BenchWorld(const std::set<std::string>& variants)
      : dir_(std::filesystem::temp_directory_path() /
             ("durasim-bench-events-" + std::to_string(::getpid()) + "-" + std::to_string(worlds_made_++))),
        world_(sim::kDefaultStartTime, sim::RandomSource::recording(1), sink_),
        plan_(world_, faults::ProfileKind::none),
        runtime_(world_, plan_, runtimeOptions(variants, dir_)) {
    runtime_.define_class(kClass, [](ObjectContext& ctx) { return std::make_unique<BenchBus>(ctx); });
  }
  ~BenchWorld() {
    world_.tasks().cancel_all();
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // Calls `method` and runs the World until it answers; `seconds` gets the wall time of the call.
  nlohmann::json call(const std::string& method, nlohmann::json args, double* seconds = nullptr) {
    auto out = std::make_shared<std::optional<nlohmann::json>>();
    world_.tasks().spawn("bench.events", callInto(runtime_.client(kClass).get("b"), method, std::move(args), out));
    const auto start = std::chrono::steady_clock::now();
    world_.run_until(world_.now() + 600'000, [&] { return !out->has_value(); });
    if (seconds) *seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (!out->has_value()) throw std::runtime_error("bench: the event bus's " + method + " did not answer");
    return **out;
  }
  void advance(int64_t ms) {
    const sim::SimTime t = world_.now() + ms;
    world_.executor().at(t, [] {});
    world_.run_until(t, [] { return true; });
  }

 private:
  static sim::RuntimeOptions runtimeOptions(const std::set<std::string>& variants, const std::filesystem::path& dir) {
    sim::RuntimeOptions o;
    o.variants = variants;
    o.storage_dir = dir.string();
    return o;
  }
  static inline std::atomic<int> worlds_made_{0};  // each World its own directory
  std::filesystem::path dir_;
  NullSink sink_;
  sim::World world_;
  faults::FaultPlan plan_;
  sim::ObjectRuntime runtime_;
};

// One poll of `consumer`: its counts, and its wall time in `seconds` when given.
PollCost pollCost(BenchWorld& bench, const char* consumer, double* seconds = nullptr) {
  const nlohmann::json r = bench.call("poll", {{"consumer", consumer}}, seconds);
  return {r.at("lists").get<int64_t>(), r.at("gets").get<int64_t>(), 0};
}

}  // namespace

std::vector<EventBusPollCost> measure_event_bus_polls(const std::vector<int64_t>& sizes, const std::set<std::string>& variants,
                                                      int idle_polls) {
  std::vector<std::unique_ptr<BenchWorld>> worlds;
  std::vector<EventBusPollCost> costs(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    BenchWorld& bench = *worlds.emplace_back(std::make_unique<BenchWorld>(variants));
    for (int64_t from = 0; from < sizes[i]; from += kEmitChunk)
      bench.call("emit", {{"from", from}, {"to", std::min(sizes[i], from + kEmitChunk)}});
    costs[i].events = sizes[i];
    costs[i].delivering = pollCost(bench, "c");
    pollCost(bench, "h");  // h's first pass: it is idle from here on
  }
  // Round after round, each World's frozen consumer and then its healthy one.
  std::vector<std::vector<double>> frozen(sizes.size()), healthy(sizes.size());
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    frozen[i].reserve(static_cast<std::size_t>(idle_polls));
    healthy[i].reserve(static_cast<std::size_t>(idle_polls));
  }
  for (int round = 0; round < idle_polls; ++round) {
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      costs[i].frozen = pollCost(*worlds[i], "c", &frozen[i].emplace_back());
      costs[i].healthy = pollCost(*worlds[i], "h", &healthy[i].emplace_back());
    }
  }
  for (std::size_t i = 0; i < sizes.size(); ++i) {
    costs[i].frozen.seconds = median(std::move(frozen[i]));
    costs[i].healthy.seconds = median(std::move(healthy[i]));
    BenchWorld& bench = *worlds[i];
    for (int attempt = 0; attempt < static_cast<int>(events::kDefaultMaxAttempts); ++attempt) {
      bench.advance(3'600'000);  // past the longest retry delay of the default schedule
      pollCost(bench, "c");
    }
    costs[i].quarantined = pollCost(bench, "c");
  }
  return costs;
}

}  // namespace durasim::cli
