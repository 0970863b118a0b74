// The alarms workload: AlarmApp objects (shared scheduler + named alarms, one handler behaviour per
// name family) driven by clients that schedule, replace, cancel and purge under crashes, storage
// faults and alarm retries, retrying uncertain outcomes (workloads/client.h). Each seed draws the
// scheduler's options (alarmConcurrency 1, 2 or 10; alarmMinDelayMs in [1000, 15000]) and states
// them, with the handler families' retry policies, in its "workload.config" event. It feeds every
// SCH and ALM invariant.
#include "workloads/alarms_workload.h"

#include <algorithm>
#include <cmath>

#include "engine/alarms_schema.h"
#include "engine/conventions.h"
#include "sim/object_runtime.h"
#include "workloads/actor_stream.h"
#include "workloads/alarm_app.h"
#include "workloads/client.h"
#include "workloads/options.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kDefaultObjects = 3;
constexpr int64_t kDefaultClients = 2;
constexpr int64_t kDefaultOpsPerClient = 25;
constexpr int64_t kDefaultNamesPerFamily = 1;
constexpr int64_t kMaxThinkMs = 5'000;
// After its dense calls each client makes a few more, far apart, so that calls continue after heal:
// their reconciles are the unrelated wakeups that take up work the scheduler failed to arm (SCH-14).
constexpr int64_t kLateOpsPerClient = 5, kMaxLatePauseMs = 300'000;
constexpr int64_t kScheduleAheadMinMs = -5'000, kScheduleAheadMaxMs = 60'000;
constexpr int64_t kPurgeLookBackMs = 120'000;
constexpr int64_t kScheduleGridMs = 5'000;
constexpr Backoff kRetryBackoff{500, 10'000};  // 500 ms more after each uncertain attempt, at most 10 s
constexpr int64_t kHandoffMs = 30'000;  // below "long.*" handlers' run time, so handoffs happen
constexpr int64_t kConcurrencyChoices[] = {1, 2, 10};

enum class Op { schedule, cancel, purge };

class AlarmsWorkload final : public Workload {
 public:
  explicit AlarmsWorkload(const nlohmann::json& options) {
    reject_unknown_options(options, "alarms", {"objects", "clients", "ops", "names"});
    objects_ = positive_option(options, "alarms", "objects", kDefaultObjects);
    clients_ = positive_option(options, "alarms", "clients", kDefaultClients);
    ops_ = positive_option(options, "alarms", "ops", kDefaultOpsPerClient);
    namesPerFamily_ = positive_option(options, "alarms", "names", kDefaultNamesPerFamily);
  }

  void setup(sim::World& world, faults::FaultPlan& faults) override {
    world_ = &world;
    stream_ = world.random().stream("workload.alarms");
    config_.scheduler.alarmConcurrency = kConcurrencyChoices[draw(0, 2)];
    config_.scheduler.alarmMinDelayMs = draw(kMinAlarmMinDelayMs, kMaxAlarmMinDelayMs);
    config_.scheduler.alarmHandoffMs = kHandoffMs;
    nlohmann::json stated = alarmPolicyJson(config_);
    stated["alarmConcurrency"] = config_.scheduler.alarmConcurrency;
    stated["alarmMinDelayMs"] = config_.scheduler.alarmMinDelayMs;
    stated["alarmHandoffMs"] = config_.scheduler.alarmHandoffMs;
    world.emit("workload.config", std::move(stated));
    runtime_ = std::make_unique<sim::ObjectRuntime>(world, faults);
    sim::FaultInjector* injector = &faults;
    const AlarmAppConfig config = config_;
    const int64_t names = namesPerFamily_;
    runtime_->define_class(AlarmApp::kClass, [config, names, injector](ObjectContext& ctx) {
      return std::make_unique<AlarmApp>(ctx, config, names, injector);
    });
    client_ = std::make_unique<ObjectClient>(world, runtime_->client(AlarmApp::kClass), kPlainCallStyle);
  }

  void start(sim::World& world) override {
    for (int64_t c = 0; c < clients_; ++c) world.tasks().spawn("alarms.client." + std::to_string(c), client(c));
  }

  void heal(sim::World&) override { runtime_->heal(); }

  bool drained() const override { return clients_done_ == clients_ && runtime_->pending().empty() && unsettled().empty(); }

  std::vector<std::string> pending() const override {
    std::vector<std::string> items = runtime_->pending();
    if (clients_done_ < clients_) items.push_back(std::to_string(clients_ - clients_done_) + " clients still running");
    for (const std::string& item : unsettled()) items.push_back(item);
    return items;
  }

  void check(sim::World&, sim::Tallies&) override {}  // every check is a trace or store check

  nlohmann::json metrics() const override {
    int64_t incarnations = 0;
    for (const sim::ObjectStatus& status : runtime_->status()) incarnations += status.incarnations;
    return {{"calls", client_->calls()}, {"retries", client_->uncertain()}, {"incarnations", incarnations},
            {"alarmConcurrency", config_.scheduler.alarmConcurrency}, {"alarmMinDelayMs", config_.scheduler.alarmMinDelayMs}};
  }

 private:
  static std::string objectName(int64_t i) {
    std::string name = "a";
    name += std::to_string(i);
    return name;
  }
  int64_t draw(int64_t lo, int64_t hi) { return world_->random().between(stream_, lo, hi); }

  // Objects that still hold a pending occurrence or a stored alarm (the liveness goal is none).
  std::vector<std::string> unsettled() const {
    std::vector<std::string> items;
    const sim::StoreView& stores = world_->stores();
    for (const sim::ObjectStatus& status : runtime_->status()) {
      const int64_t pendingRows =
          stores.has_table(status.label, DURASIM_ALARMS)
              ? stores.live(status.label, "SELECT count(*) AS n FROM " DURASIM_ALARMS " WHERE status = 'pending'").one().int64("n")
              : 0;
      if (pendingRows > 0) items.push_back(status.label + " has " + std::to_string(pendingRows) + " pending occurrences");
      else if (status.stored_alarm) items.push_back(status.label + " still stores an alarm");
    }
    return items;
  }

  // A third of schedules land on a shared grid, on a grid instant or 1 ms after it, so that rows fall
  // due together and exactly at each other's boundaries (a pass at t takes rows due at t, not t + 1).
  int64_t scheduleTime(ActorStream& ops) {
    const int64_t at = std::max<int64_t>(0, world_->now() + ops.between(kScheduleAheadMinMs, kScheduleAheadMaxMs));
    if (ops.between(0, 2) != 0) return at;
    return (at / kScheduleGridMs + 1) * kScheduleGridMs + ops.between(0, 1);
  }

  Task<void> client(int64_t c) {
    const std::vector<std::string> names = alarmNames(namesPerFamily_);
    ActorStream ops(world_->random(), "alarms", "client", c);
    for (int64_t i = 0; i < ops_ + kLateOpsPerClient && ops.next_operation(); ++i) {
      co_await world_->sleep_for(ops.between(0, i < ops_ ? kMaxThinkMs : kMaxLatePauseMs));
      const std::string target = objectName(ops.between(0, objects_ - 1));
      const std::string name = names[ops.index(names.size())];
      const int64_t roll = ops.between(0, 99);
      const Op op = roll < 75 ? Op::schedule : roll < 93 ? Op::cancel : Op::purge;
      nlohmann::json args;
      std::string method;
      switch (op) {
        case Op::schedule:
          method = "schedule";
          args = {{"name", name}, {"at", scheduleTime(ops)}};
          break;
        case Op::cancel:
          method = "cancel";
          args = {{"name", name}};
          break;
        case Op::purge:
          method = "purge";
          // A third of purges cut exactly at a row's created_at (kept: only older rows go).
          if (ops.between(0, 2) == 0) args = {{"boundaryOf", name}};
          else args = {{"before", std::max<int64_t>(0, world_->now() - ops.between(0, kPurgeLookBackMs))}};
          break;
      }
      // Each call is idempotent in effect (a repeated schedule replaces with the same time, cancel and
      // purge repeat harmlessly), so an uncertain outcome is retried until it is known.
      Task<Settled> performing = client_->callUntilDefinite(target, method, args, kRetryBackoff);
      co_await performing;
    }
    ++clients_done_;
  }

  sim::World* world_ = nullptr;
  sim::StreamId stream_;
  std::unique_ptr<sim::ObjectRuntime> runtime_;
  std::unique_ptr<ObjectClient> client_;
  AlarmAppConfig config_;
  int64_t objects_ = 0, clients_ = 0, ops_ = 0, namesPerFamily_ = 0;
  int64_t clients_done_ = 0;
};

}  // namespace

WorkloadInfo alarms_workload_info() {
  return {"alarms", "AlarmApp objects: named alarms on the shared scheduler, scheduled, replaced, cancelled and purged under faults",
          [](const nlohmann::json& options) -> std::unique_ptr<Workload> { return std::make_unique<AlarmsWorkload>(options); },
          {{"RT", ""}, {"SCH", AlarmApp::kClass}, {"ALM", AlarmApp::kClass}},
          {{"objects", kDefaultObjects}, {"clients", kDefaultClients}, {"ops", kDefaultOpsPerClient}, {"names", kDefaultNamesPerFamily}},
          // No cold store.
          faults::every_fault_but({"cold", "episode.cold_outage"})};
}

}  // namespace durasim::workloads
