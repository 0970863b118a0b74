// The checker registry; see checkers.h. Each entry adapts one checker of properties/ to the run's
// phases: it forwards every event, finishes the checker at "phase: check" (reading what it needs at
// that instant from the store view) and, for the checkers with liveness checks, tells it of the heal
// at "phase: liveness".
#include "properties/checkers.h"

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>
#include <utility>

#include "model/alarms_model.h"
#include "properties/alarm_checks.h"
#include "properties/event_bus_checks.h"
#include "properties/fanout_checks.h"
#include "properties/lease_checks.h"
#include "properties/log_checks.h"
#include "properties/object_checker.h"
#include "properties/outbox_checks.h"
#include "properties/registry.h"
#include "properties/routing_checks.h"
#include "properties/runtime_checks.h"
#include "properties/time_order_check.h"

namespace durasim::properties {
namespace {

using nlohmann::json;

// The phase a "phase" event opens.
std::string_view opened_phase(const sim::TraceEvent& event) {
  const json* phase = event.fields().find("phase");
  return phase && phase->is_string() ? std::string_view(phase->get_ref<const std::string&>()) : "";
}
// The phase a "phase" event opens ("" for any other event): every family asks at every event.
[[gnu::always_inline]] inline std::string_view phase_of(const sim::TraceEvent& event) {
  return event.is("phase") ? opened_phase(event) : "";
}

StoreReader reader_of(const sim::StoreView& stores) {
  return StoreReader{[&stores](const std::string& label, std::string_view sql, const std::vector<SqlValue>& params) { return stores.live(label, sql, params); },
                     [&stores](const std::string& label, std::string_view table) { return stores.has_table(label, table); },
                     [&stores](const std::string& label, std::string_view table, sim::RowChangeCursor& cursor) {
                       return stores.live_changes(label, table, cursor);
                     },
                     [&stores](const std::string& label, std::string_view table, sim::RowChangeCursor& cursor) {
                       return stores.live_key_changes(label, table, cursor);
                     }};
}

// RT: the runtime's history checks and the order of time over every event.
class RuntimeFamily final : public Checker {
 public:
  void record(const sim::TraceEvent& event) override {
    time_.record(event);
    runtime_.record(event);
  }
  void report(sim::Tallies& tallies, const RunFacts& facts) const override {
    time_.report(tallies);
    runtime_.report(tallies);
    runtime_.report_faults(tallies, facts.faults);
  }

 private:
  TimeOrderCheck time_;
  RuntimeChecks runtime_;
};

// The application's named-alarm policy as the workload describes it in its "workload.config" event
// (the one of the checker's class, or one naming no class):
// {"alarmPolicies": {"<family>": {"maxAttempts": n, "retryDelayMs": d, "invalid": bool}},
//  "defaultMaxAttempts": n, "alarmMinDelayMs": n, "alarmHandoffMs": n}; a family is the part of a
// name before its first '.'. Names without an entry use the default attempts and the default retry
// delay. The scheduler options bound SCH-14.
struct AlarmPolicy {
  struct Family {
    std::optional<int64_t> maxAttempts, retryDelayMs;
    bool invalid = false;
  };
  int64_t defaultMaxAttempts = model::kDefaultMaxAttempts;
  std::map<std::string, Family> families;
  AlarmChecks::SchedulerView scheduler;

  const Family* family(const std::string& name) const {
    const auto found = families.find(name.substr(0, name.find('.')));
    return found == families.end() ? nullptr : &found->second;
  }
  void learn(const json& config) {
    scheduler.alarmMinDelayMs = config.value("alarmMinDelayMs", scheduler.alarmMinDelayMs);
    scheduler.alarmHandoffMs = config.value("alarmHandoffMs", scheduler.alarmHandoffMs);
    defaultMaxAttempts = config.value("defaultMaxAttempts", defaultMaxAttempts);
    if (!config.contains("alarmPolicies")) return;
    for (const auto& [name, p] : config.at("alarmPolicies").items()) {
      Family f;
      if (p.contains("maxAttempts")) f.maxAttempts = p.at("maxAttempts").get<int64_t>();
      if (p.contains("retryDelayMs")) f.retryDelayMs = p.at("retryDelayMs").get<int64_t>();
      f.invalid = p.value("invalid", false);
      families[name] = f;
    }
  }
  AlarmPolicyView view() const {
    AlarmPolicyView v;
    v.maxAttempts = [this](const std::string& name) {
      const Family* f = family(name);
      return f && f->maxAttempts ? *f->maxAttempts : defaultMaxAttempts;
    };
    v.retryDelay = [this](const std::string& name, int64_t attempt) -> std::optional<std::pair<int64_t, int64_t>> {
      const Family* f = family(name);
      if (f && f->invalid) return std::nullopt;
      if (f && f->retryDelayMs) return std::make_pair(*f->retryDelayMs, *f->retryDelayMs);
      // From the spec's model, never from the engine's own retry code (which it checks).
      const model::TimeRange range = model::defaultDelayRange(attempt);
      return std::make_pair(range.lo, range.hi);
    };
    v.policyInvalid = [this](const std::string& name) {
      const Family* f = family(name);
      return f && f->invalid;
    };
    return v;
  }
};

// SCH and ALM over the objects of one class.
class AlarmFamilies final : public Checker {
 public:
  explicit AlarmFamilies(const CheckerScope& scope)
      : stores_(scope.stores), className_(scope.className), policy_(std::make_unique<AlarmPolicy>()),
        checks_(reader_of(scope.stores), policy_->view(), scope.className) {}

  void record(const sim::TraceEvent& event) override {
    if (event.is("workload.config") && config_of_class(event.fields(), className_)) policy_->learn(event.json());
    checks_.record(event);
    const std::string_view phase = phase_of(event);
    if (phase == "liveness") checks_.healed(event.t(), policy_->scheduler);
    if (phase != "check") return;
    std::map<std::string, std::optional<int64_t>> stored;
    for (const std::string& label : stores_.labels())
      if (of_class(label, className_)) stored[label] = stores_.live_alarm(label);
    checks_.finish(stored, event.t(), policy_->scheduler.alarmMinDelayMs);
  }
  void report(sim::Tallies& tallies, const RunFacts&) const override { tallies.merge(checks_.tallies()); }

 private:
  const sim::StoreView& stores_;
  std::string className_;
  std::unique_ptr<AlarmPolicy> policy_;  // before checks_, which holds views of it
  AlarmChecks checks_;
};

class LogFamily final : public Checker {
 public:
  explicit LogFamily(const CheckerScope& scope) : checks_(reader_of(scope.stores), scope.className) {}
  void record(const sim::TraceEvent& event) override {
    checks_.record(event);
    const std::string_view phase = phase_of(event);
    if (phase == "liveness") checks_.healed();
    if (phase == "check") checks_.finish();
  }
  void report(sim::Tallies& tallies, const RunFacts&) const override { tallies.merge(checks_.tallies()); }

 private:
  LogChecks checks_;
};

class LeaseFamily final : public Checker {
 public:
  explicit LeaseFamily(const CheckerScope& scope) : checks_(reader_of(scope.stores), scope.className) {}
  void record(const sim::TraceEvent& event) override {
    checks_.record(event);
    const std::string_view phase = phase_of(event);
    if (phase == "liveness") checks_.healed();
    if (phase == "check") checks_.finish(event.t());
  }
  void report(sim::Tallies& tallies, const RunFacts&) const override { tallies.merge(checks_.tallies()); }

 private:
  LeaseChecks checks_;
};

// A capability's checker that learns the heal time at phase "liveness" and runs its end-of-run
// checks at phase "check" (fanout, outbox, event bus).
template <class Checks>
class HealedFamily final : public Checker {
 public:
  explicit HealedFamily(const CheckerScope& scope) : checks_(reader_of(scope.stores), scope.className) {}
  void record(const sim::TraceEvent& event) override {
    checks_.record(event);
    const std::string_view phase = phase_of(event);
    if (phase == "liveness") checks_.healed(event.t());
    if (phase == "check") checks_.finish();
  }
  void report(sim::Tallies& tallies, const RunFacts&) const override { tallies.merge(checks_.tallies()); }

 private:
  Checks checks_;
};

class RoutingFamily final : public Checker {
 public:
  void record(const sim::TraceEvent& event) override {
    checks_.record(event);
    if (phase_of(event) == "check") checks_.finish();
  }
  void report(sim::Tallies& tallies, const RunFacts&) const override { tallies.merge(checks_.tallies()); }

 private:
  RoutingChecks checks_;
};

template <class C>
std::function<std::unique_ptr<Checker>(const CheckerScope&)> with_scope() {
  return [](const CheckerScope& scope) { return std::make_unique<C>(scope); };
}

template <class C>
std::function<std::unique_ptr<Checker>(const CheckerScope&)> unscoped() {
  return [](const CheckerScope&) { return std::make_unique<C>(); };
}

}  // namespace

const std::vector<CheckerEntry>& checker_registry() {
  static const std::vector<CheckerEntry> registry = {
      {"runtime", {"RT"}, unscoped<RuntimeFamily>()},
      {"alarms", {"SCH", "ALM"}, with_scope<AlarmFamilies>()},
      {"log", {"LOG"}, with_scope<LogFamily>()},
      {"leases", {"LSE"}, with_scope<LeaseFamily>()},
      {"routing", {"RTE"}, unscoped<RoutingFamily>()},
      {"fanout", {"FAN"}, with_scope<HealedFamily<FanoutChecks>>()},
      {"outbox", {"OBX"}, with_scope<HealedFamily<OutboxChecks>>()},
      {"events", {"EVT"}, with_scope<HealedFamily<EventBusChecks>>()},
  };
  return registry;
}

const CheckerEntry* checker_for_family(std::string_view family) {
  for (const CheckerEntry& entry : checker_registry())
    if (std::find(entry.families.begin(), entry.families.end(), family) != entry.families.end()) return &entry;
  return nullptr;
}

std::vector<std::unique_ptr<Checker>> make_checkers(const std::vector<FamilyScope>& scopes, const sim::StoreView& stores) {
  std::set<std::pair<const CheckerEntry*, std::string>> wanted;
  for (const FamilyScope& scope : scopes) {
    const auto& families = invariant_families();
    if (std::none_of(families.begin(), families.end(), [&](const InvariantFamily& f) { return f.id == scope.family; }))
      throw std::invalid_argument("unknown invariant family '" + scope.family + "'");
    if (const CheckerEntry* entry = checker_for_family(scope.family)) wanted.insert({entry, scope.className});
  }
  std::vector<std::unique_ptr<Checker>> checkers;
  for (const CheckerEntry& entry : checker_registry())
    for (const auto& [wantedEntry, className] : wanted)
      if (wantedEntry == &entry) checkers.push_back(entry.make(CheckerScope{stores, className}));
  return checkers;
}

}  // namespace durasim::properties
