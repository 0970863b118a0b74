// The core workload; see core_workload.h.
#include "workloads/core_workload.h"

#include <map>
#include <memory>
#include <stdexcept>

#include "workloads/options.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kDefaultWorkers = 8;
constexpr int64_t kDefaultOpsPerWorker = 40;
constexpr int64_t kMaxSleepMs = 5'000;
constexpr int64_t kMaxFanout = 6;
constexpr int64_t kMaxVictims = 5;

enum class Op : uint64_t { sleep, fanout, cancel_group, throw_and_catch, kCount };

struct Counters {
  int64_t ops_started = 0, ops_finished = 0;
  int64_t sleeps = 0, early_wakes = 0;
  int64_t fanouts = 0, children_finished = 0, children_expected = 0;
  int64_t victims_spawned = 0, victims_finished = 0, victims_cancelled = 0, victim_steps_after_cancel = 0;
  int64_t throws = 0, catches = 0;
  int64_t workers_done = 0;
};

class CoreWorkload final : public Workload {
 public:
  explicit CoreWorkload(const nlohmann::json& options) {
    reject_unknown_options(options, "core", {"workers", "ops"});
    workers_ = positive_option(options, "core", "workers", kDefaultWorkers);
    ops_per_worker_ = positive_option(options, "core", "ops", kDefaultOpsPerWorker);
  }

  void setup(sim::World& world, faults::FaultPlan&) override {
    world_ = &world;
    stream_ = world.random().stream("workload.core");
  }

  void start(sim::World& world) override {
    for (int64_t w = 0; w < workers_; ++w)
      world.tasks().spawn("core.worker." + std::to_string(w), worker(w));
  }

  bool drained() const override { return counters_.workers_done == workers_; }

  std::vector<std::string> pending() const override {
    return {std::to_string(workers_ - counters_.workers_done) + " core workers still running"};
  }

  void check(sim::World&, sim::Tallies& tallies) override {
    for (const Wake& wake : sleep_wakes_)
      tallies.check("RT-25", wake.woke >= wake.due, [&] {
        return "a sleep due at " + std::to_string(wake.due) + " resumed at " + std::to_string(wake.woke);
      });
    const Counters& c = counters_;
    tallies.check("CORE-01", c.ops_started == c.ops_finished && c.ops_started == workers_ * ops_per_worker_, [&] {
      return "operations started " + std::to_string(c.ops_started) + ", finished " + std::to_string(c.ops_finished);
    });
    tallies.check("CORE-01", c.children_finished == c.children_expected, [&] {
      return "when_all children finished " + std::to_string(c.children_finished) + " of " +
             std::to_string(c.children_expected);
    });
    tallies.check("CORE-02", c.victim_steps_after_cancel == 0, [&] {
      return std::to_string(c.victim_steps_after_cancel) + " steps of cancelled tasks ran";
    });
    tallies.check("CORE-02", c.victims_spawned == c.victims_finished + c.victims_cancelled, [&] {
      return "victims spawned " + std::to_string(c.victims_spawned) + " != finished " +
             std::to_string(c.victims_finished) + " + cancelled " + std::to_string(c.victims_cancelled);
    });
    tallies.check("CORE-03", c.throws == c.catches, [&] {
      return "exceptions thrown " + std::to_string(c.throws) + ", caught " + std::to_string(c.catches);
    });
  }

  nlohmann::json metrics() const override {
    const Counters& c = counters_;
    return {{"ops", c.ops_finished},       {"sleeps", c.sleeps},
            {"fanouts", c.fanouts},        {"victims_spawned", c.victims_spawned},
            {"victims_cancelled", c.victims_cancelled}, {"throws", c.throws}};
  }

 private:
  int64_t draw(int64_t lo, int64_t hi) { return world_->random().between(stream_, lo, hi); }

  // One timed sleep, checked against RT-25: never resumed before now + ms.
  Task<void> timed_sleep(int64_t ms, std::string who) {
    const sim::SimTime asked = world_->now();
    ++counters_.sleeps;
    co_await world_->sleep_for(ms);
    const sim::SimTime woke = world_->now();
    sleep_wakes_.push_back({asked + ms, woke});
    world_->emit("core.wake", {{"who", who}, {"slept", ms}, {"late", woke - asked - ms}});
  }

  Task<void> child(int64_t ms, std::string who) {
    Task<void> sleeping = timed_sleep(ms, who);
    co_await sleeping;
    ++counters_.children_finished;
  }

  Task<void> victim(std::shared_ptr<bool> cancelled, int64_t steps, std::string who) {
    for (int64_t i = 0; i < steps; ++i) {
      co_await world_->sleep_for(draw(0, kMaxSleepMs));
      if (*cancelled) ++counters_.victim_steps_after_cancel;
      world_->emit("core.victim_step", {{"who", who}, {"step", i}});
    }
    ++counters_.victims_finished;
  }

  Task<void> thrower(int64_t ms) {
    co_await world_->sleep_for(ms);
    ++counters_.throws;
    throw std::runtime_error("core: planned failure");
  }

  Task<void> run_op(int64_t worker, int64_t index) {
    const std::string who = "w" + std::to_string(worker) + "." + std::to_string(index);
    const auto op = static_cast<Op>(draw(0, static_cast<int64_t>(Op::kCount) - 1));
    switch (op) {
      case Op::sleep: {
        Task<void> sleeping = timed_sleep(draw(0, kMaxSleepMs), who);
        co_await sleeping;
        break;
      }
      case Op::fanout: {
        ++counters_.fanouts;
        std::vector<Task<void>> children;
        const int64_t n = draw(1, kMaxFanout);
        counters_.children_expected += n;
        for (int64_t i = 0; i < n; ++i) children.push_back(child(draw(0, kMaxSleepMs), who + ".c" + std::to_string(i)));
        Task<void> joined = when_all(std::move(children));
        co_await joined;
        world_->emit("core.joined", {{"who", who}, {"children", n}});
        break;
      }
      case Op::cancel_group: {
        // A group of victims with its own lifetime, cancelled while they are suspended: what an
        // incarnation's reset does to its coroutines.
        auto group = std::make_unique<sim::TaskGroup>(world_->executor());
        auto cancelled = std::make_shared<bool>(false);
        const int64_t n = draw(1, kMaxVictims);
        for (int64_t i = 0; i < n; ++i) {
          ++counters_.victims_spawned;
          group->spawn(who + ".v" + std::to_string(i), victim(cancelled, draw(1, 4), who + ".v" + std::to_string(i)));
        }
        co_await world_->sleep_for(draw(0, 2 * kMaxSleepMs));
        const auto live = static_cast<int64_t>(group->live());
        counters_.victims_cancelled += live;
        *cancelled = true;
        group->cancel_all();
        world_->emit("core.cancel", {{"who", who}, {"spawned", n}, {"cancelled", live}});
        break;
      }
      case Op::throw_and_catch:
        try {
          co_await thrower(draw(0, kMaxSleepMs));
        } catch (const std::runtime_error& e) {
          ++counters_.catches;
          world_->emit("core.caught", {{"who", who}, {"what", e.what()}});
        }
        break;
      case Op::kCount:
        break;
    }
  }

  Task<void> worker(int64_t w) {
    for (int64_t i = 0; i < ops_per_worker_; ++i) {
      ++counters_.ops_started;
      co_await run_op(w, i);
      ++counters_.ops_finished;
    }
    ++counters_.workers_done;
    world_->emit("core.worker_done", {{"worker", w}});
  }

  struct Wake {
    sim::SimTime due, woke;
  };

  sim::World* world_ = nullptr;
  sim::StreamId stream_;
  int64_t workers_, ops_per_worker_;
  Counters counters_;
  std::vector<Wake> sleep_wakes_;
};

}  // namespace

WorkloadInfo core_workload_info() {
  return {"core", "timers and tasks that interleave, fan out, throw and cancel (the World alone)",
          [](const nlohmann::json& options) -> std::unique_ptr<Workload> {
            return std::make_unique<CoreWorkload>(options);
          },
          {{"RT", ""}, {"CORE", ""}},
          {{"workers", kDefaultWorkers}, {"ops", kDefaultOpsPerWorker}},
          // The World alone: no objects, so no fault has an opportunity.
          faults::FaultSet{}};
}

}  // namespace durasim::workloads
