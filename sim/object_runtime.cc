// Objects outside their incarnations (runtime.md 3, 7): lazy construction, ending incarnations,
// the alarm manager with its retry schedule, per-object timed faults; and the runtime's registry.
// Keeps RT-03 (a handler never starts before its stored time), RT-04, RT-12, RT-13, RT-14; the
// mutants alarm_fires_early (RT-03), alarm_retry_off_by_one (RT-12) and, with incarnation.cc,
// memory_survives_reset (RT-19) break them here when the World has them (sim/mutants.h).
#include <cctype>
#include <cstdio>
#include <filesystem>

#include "sim/object_internals.h"

namespace durasim::sim {
namespace {

constexpr int64_t kMinuteMs = 60'000;
constexpr int64_t kHourMs = 3'600'000;
constexpr int64_t kShortestSafetyMs = 60'000;                // runtime.md 11.4: safety lasts at least 60 s
constexpr int64_t kStorageFullMarginMaxBytes = 1'000'000;     // runtime.md 11.2 storage.full
constexpr int64_t kPartitionMinMs = 1'000, kPartitionMaxMs = 300'000;  // runtime.md 11.2 rpc.partition
// docs/fault-episodes.md
constexpr int64_t kBurstMinResets = 2, kBurstMaxResets = 5;              // episode.reset_burst
constexpr int64_t kBurstMinGapMs = 100, kBurstMaxGapMs = 3'000;
constexpr int64_t kIsolationMinMs = 60'000, kIsolationMaxMs = 600'000;  // episode.isolation
constexpr int64_t kColdOutageMinMs = 10'000, kColdOutageMaxMs = 300'000;  // episode.cold_outage
constexpr int64_t kSlowMinMs = 10'000, kSlowMaxMs = 120'000;            // episode.storage_slow
constexpr int64_t kSlowMinDelayMs = 1'000, kSlowMaxDelayMs = 20'000;

SqlEnvironment environment_for(World& world) {
  RandomSource* random = &world.random();
  const StreamId stream = random->stream("sqlite.random");
  return SqlEnvironment{[random, stream] { return random->bits(stream); }, [&world] { return world.now(); }};
}

// The file of a file-backed object store, emptied for this run: the label with every character outside [A-Za-z0-9._-]
// escaped as %XX, so distinct objects never share a file.
std::optional<std::string> store_path(const RuntimeOptions& options, const std::string& label) {
  if (!options.storage_dir) return std::nullopt;
  std::string name;
  for (unsigned char c : label) {
    if (std::isalnum(c) || c == '.' || c == '_' || c == '-') {
      name += static_cast<char>(c);
    } else {
      char escaped[4];
      std::snprintf(escaped, sizeof escaped, "%%%02X", c);
      name += escaped;
    }
  }
  // Each run starts its objects empty: a file left by an earlier run is replaced.
  std::filesystem::create_directories(*options.storage_dir);
  const std::string path = *options.storage_dir + "/" + name + ".sqlite";
  std::filesystem::remove(path);
  return path;
}

}  // namespace

SimObject::SimObject(ObjectRuntime& runtime, std::string className, std::string name, ObjectFactory factory)
    : runtime_(runtime),
      class_name_(std::move(className)),
      name_(std::move(name)),
      label_(class_name_ + "/" + name_),
      factory_(std::move(factory)),
      store_(environment_for(runtime.world()), store_path(runtime.options(), label_)) {
  RandomSource& random = runtime.world().random();
  jitter_stream_ = random.stream("alarm.jitter");
  fault_detail_stream_ = random.stream("alarm.faults");
  runtime.world().stores().add(label_, store_);
  episode_stream_ = random.stream("faults.episodes");
  schedule_minute_faults();
}

SimObject::~SimObject() {
  runtime_.world().stores().remove(label_);
  Executor& executor = runtime_.world().executor();
  for (TimerId timer : {manager_timer_, minute_timer_, burst_timer_})
    if (timer != kNoTimer) executor.cancel(timer);
  if (live_) live_->shutdown();
  for (auto& [number, zombie] : zombies_) zombie->shutdown();
}

Incarnation& SimObject::ensure_live() {
  if (!live_) live_ = std::make_unique<Incarnation>(*this, next_incarnation_++, factory_, take_surviving_memory());
  return *live_;
}

std::unique_ptr<Incarnation> SimObject::take_surviving_memory() {
  if (retired_.empty() || !retired_.back()->holds_instance()) return nullptr;
  std::unique_ptr<Incarnation> last = std::move(retired_.back());
  retired_.pop_back();
  return last;
}

void SimObject::end_live(const ResetError& error) {
  if (!live_) return;
  retired_.clear();  // earlier retired incarnations are no longer on any stack
  std::unique_ptr<Incarnation> ending = std::move(live_);
  const bool reset = error.cause != EndCause::hibernate && error.cause != EndCause::evict;
  const bool zombie = reset && runtime_.faults().fires(FaultKind::object_zombie, FaultSite{label_, ending->number(), "reset"});
  ending->end(error, zombie);
  if (!zombie) {
    retired_.push_back(std::move(ending));
    return;
  }
  // object.zombie (arbitrary): its coroutines run on, without storage, for kShutdownGraceMs.
  const int64_t number = ending->number();
  zombies_.emplace(number, std::move(ending));
  runtime_.world().executor().after(kShutdownGraceMs, [this, number] {
    auto it = zombies_.find(number);
    if (it == zombies_.end()) return;
    it->second->shutdown();
    retired_.push_back(std::move(it->second));
    zombies_.erase(it);
  });
}

// object.code_update, rpc.partition and the per-object episodes: rates in events per simulated minute,
// each drawn as one opportunity per simulated minute of the object's existence.
void SimObject::schedule_minute_faults() {
  Executor& executor = runtime_.world().executor();
  if (runtime_.faults().healed()) return;
  minute_timer_ = executor.at(executor.clock().now() + kMinuteMs, [this] {
    minute_timer_ = kNoTimer;
    if (live_ && runtime_.faults().fires(FaultKind::object_code_update, FaultSite{label_, live_->number(), "minute"}))
      live_->doom(ResetError{EndCause::code_update, "Durable Object reset because its code was updated."});
    World& world = runtime_.world();
    int64_t length = 0;
    if (runtime_.faults().fires(FaultKind::rpc_partition, FaultSite{label_, live_ ? live_->number() : 0, "minute"}, [&] {
          length = world.random().between(fault_detail_stream_, kPartitionMinMs, kPartitionMaxMs);
          return nlohmann::json{{"length", length}};
        }))
      runtime_.partition(label_, world.now() + length);
    offer_episodes();
    schedule_minute_faults();
  });
}

// docs/fault-episodes.md: a burst of resets, an isolation, a slow-storage period.
void SimObject::offer_episodes() {
  World& world = runtime_.world();
  FaultInjector& faults = runtime_.faults();
  RandomSource& random = world.random();
  const FaultSite site{label_, live_ ? live_->number() : 0, "minute"};
  std::vector<int64_t> gaps;
  if (faults.fires(FaultKind::episode_reset_burst, site, [&] {
        const int64_t resets = random.between(episode_stream_, kBurstMinResets, kBurstMaxResets);
        gaps.push_back(random.between(episode_stream_, 0, kMinuteMs - 1));
        for (int64_t i = 1; i < resets; ++i) gaps.push_back(random.between(episode_stream_, kBurstMinGapMs, kBurstMaxGapMs));
        return nlohmann::json{{"resets", resets}, {"first", gaps.front()}, {"gaps", std::vector<int64_t>(gaps.begin() + 1, gaps.end())}};
      }))
    reset_burst_step(std::move(gaps));
  int64_t length = 0;
  if (faults.fires(FaultKind::episode_isolation, site, [&] {
        length = random.between(episode_stream_, kIsolationMinMs, kIsolationMaxMs);
        return nlohmann::json{{"length", length}};
      }))
    runtime_.isolate(label_, world.now() + length);
  int64_t delay = 0;
  if (faults.fires(FaultKind::episode_storage_slow, site, [&] {
        length = random.between(episode_stream_, kSlowMinMs, kSlowMaxMs);
        delay = random.between(episode_stream_, kSlowMinDelayMs, kSlowMaxDelayMs);
        return nlohmann::json{{"length", length}, {"delay", delay}};
      })) {
    slow_until_ = world.now() + length;
    slow_delay_ = delay;
  }
}

// episode.reset_burst: waits the next gap, resets the live incarnation (if any), and goes on with
// the rest; heal ends the burst.
void SimObject::reset_burst_step(std::vector<int64_t> gaps) {
  Executor& executor = runtime_.world().executor();
  if (burst_timer_ != kNoTimer) executor.cancel(burst_timer_);
  burst_timer_ = kNoTimer;
  if (gaps.empty()) return;
  const int64_t gap = gaps.front();
  gaps.erase(gaps.begin());
  burst_timer_ = executor.after(gap, [this, rest = std::move(gaps)]() mutable {
    burst_timer_ = kNoTimer;
    if (runtime_.faults().healed()) return;
    if (live_) live_->doom(ResetError{EndCause::injected, "broken.reset; Durable Object was reset"});
    reset_burst_step(std::move(rest));
  });
}

int64_t SimObject::storage_slow_delay() const { return slow_until_ > runtime_.world().now() ? slow_delay_ : 0; }

// ---------------------------------------------------------------------------------------------
// The alarm manager

// When the manager should next fire for `stored`: at its time; for an occurrence that failed, at its
// announced retry but never before the stored time (a failed early run may announce a retry earlier
// than its time; firing for it then would find nothing due and re-arm at once); after an alarm.late
// fault, not before the delayed time; after an alarm.early fault, at the early time (for a first
// run only: a fault moves one fire, and an outcome of the occurrence clears it). The faults'
// times belong to the stored value they were drawn for, so a confirmation that re-derives the
// manager's time keeps them. Under sim.mutant.alarm_fires_early a first run is due kEarlyFireMs
// before the stored time (RT-03).
std::optional<int64_t> SimObject::desired_fire(std::optional<int64_t> stored) const {
  if (!stored || stored == lost_alarm_) return std::nullopt;  // alarm.lost: silent until set again
  int64_t at = *stored;
  const auto retry = retries_.find(*stored);
  if (retry != retries_.end() && retry->second.at) at = std::max(at, *retry->second.at);
  else if (early_ && early_->stored == *stored) at = std::min(at, early_->at);
  else if (runtime_.world().mutants().alarm_fires_early) at -= kEarlyFireMs;
  if (late_ && late_->stored == *stored) at = std::max(at, late_->at);
  return at;
}

void SimObject::arm_manager(std::optional<int64_t> at) {
  Executor& executor = runtime_.world().executor();
  if (manager_timer_ != kNoTimer) executor.cancel(manager_timer_);
  manager_timer_ = kNoTimer;
  manager_at_ = at;
  if (!at) return;
  // manager_at_ names the pending timer and nothing else: once it fired, no time is armed (a stale
  // time here would make a later arm for that same time look redundant, and lose the alarm).
  manager_timer_ = executor.at(*at, [this] {
    manager_timer_ = kNoTimer;
    manager_at_.reset();
    manager_fire();
  });
}

void SimObject::manager_consider_earlier(std::optional<int64_t> stored) {
  World& world = runtime_.world();
  const FaultSite site{label_, live_ ? live_->number() : 0, "alarm_set"};
  if (stored && stored != lost_alarm_ && stored != manager_at_) {
    lost_alarm_.reset();
    if (runtime_.faults().fires(FaultKind::alarm_lost, site)) lost_alarm_ = stored;
  }
  const std::optional<int64_t> target = desired_fire(stored);
  if (!target || (manager_at_ && *manager_at_ <= *target)) return;
  // alarm.early: the manager fires, and the handler runs, up to a minute before the stored time
  // (offered for a fresh stored time, not for the retry of a failed one).
  int64_t early = 0;
  if (target == stored && runtime_.faults().fires(FaultKind::alarm_early, site, [&] {
        early = world.random().between(fault_detail_stream_, 1, kAlarmMaxLateMs);
        return nlohmann::json{{"early", early}, {"scheduled", *target}};
      })) {
    early_ = FaultedFire{*stored, std::max(world.now(), *target - early)};
  }
  arm_manager(desired_fire(stored));
  int64_t spurious_at = 0;
  if (runtime_.faults().fires(FaultKind::alarm_spurious, site, [&] {
        spurious_at = world.random().between(fault_detail_stream_, world.now(), std::max(world.now(), *target));
        return nlohmann::json{{"at", spurious_at}};
      })) {
    world.executor().at(spurious_at, [this] { manager_fire(); });
  }
}

void SimObject::manager_after_confirm(std::optional<int64_t> alarm_after) {
  if (alarm_after != abandoned_) abandoned_.reset();  // durably deleted or replaced: an ordinary time again
  const std::optional<int64_t> target = desired_fire(alarm_after);
  if (target != manager_at_) arm_manager(target);
}

// A fire of the manager, its own timer's or a spurious one: reads the stored alarm (the live view)
// and runs the handler only if it is due (runtime.md 7.2), or early for an alarm.early fault.
void SimObject::manager_fire() {
  World& world = runtime_.world();
  const int64_t now = world.now();
  const std::optional<int64_t> stored = store_.get_alarm();
  if (!stored) return;
  if (stored == abandoned_) {
    // Its delete was lost (the commit failed): nothing more runs for it, the delete is made again.
    delete_abandoned(*stored);
    return;
  }
  if (early_ && early_->stored != *stored) early_.reset();  // drawn for a time no longer stored
  if (late_ && late_->stored != *stored) late_.reset();
  if (early_ && now >= early_->at && !alarm_running_) {
    early_.reset();
    ensure_live().run_alarm(AlarmInvocationInfo{0, false, *stored});
    return;
  }
  const std::optional<int64_t> due = desired_fire(stored);
  if (*due > now) {
    if (due != manager_at_) arm_manager(due);
    return;
  }
  if (alarm_running_) return;  // the running handler's outcome re-arms
  const FaultSite site{label_, live_ ? live_->number() : 0, "fire"};
  int64_t late = 0;
  if (!late_ && runtime_.faults().fires(FaultKind::alarm_late, site, [&] {
        late = world.random().between(fault_detail_stream_, 1, kAlarmMaxLateMs);
        return nlohmann::json{{"delay", late}};
      })) {
    late_ = FaultedFire{*stored, now + late};
    arm_manager(late_->at);
    return;
  }
  late_.reset();
  AlarmInvocationInfo info;
  info.scheduledTime = *stored;
  const auto retry = retries_.find(*stored);
  info.retryCount = retry != retries_.end() ? retry->second.state.counted : 0;
  info.isRetry = info.retryCount > 0;
  if (runtime_.faults().fires(FaultKind::alarm_infra_failure, site)) {
    world.emit("alarm.infra_failure", {{"object", label_}, {"scheduled", *stored}});
    alarm_outcome(*stored, AlarmFailure::uncounted);
    return;
  }
  ensure_live().run_alarm(info);
}

// Deletes the stored alarm only if it still holds the abandoned occurrence (a newer setAlarm
// survives), as a write of its own.
void SimObject::delete_abandoned(int64_t scheduled) {
  World& world = runtime_.world();
  world.executor().at(world.now(), [this, scheduled] {
    ensure_live().system_segment([this, scheduled] {
      if (store_.get_alarm() == scheduled) store_.delete_alarm();
    });
  });
}

void SimObject::alarm_outcome(int64_t scheduled, std::optional<AlarmFailure> failure) {
  alarm_running_ = false;
  early_.reset();  // the fire the faults moved has happened
  late_.reset();
  World& world = runtime_.world();
  const std::optional<int64_t> stored = store_.get_alarm();
  if (!failure) {
    retries_.erase(scheduled);
    world.emit("alarm.success", {{"object", label_}, {"scheduled", scheduled}});
    if (runtime_.faults().fires(FaultKind::alarm_duplicate, FaultSite{label_, live_ ? live_->number() : 0, "success"})) {
      // A recoverable fault never runs a handler early (RT-03): the duplicate of a run that
      // alarm.early started ahead of its time waits for that time (docs/decisions.md).
      world.executor().at(std::max(world.now(), scheduled), [this, scheduled] {
        if (alarm_running_) return;
        AlarmInvocationInfo info{0, false, scheduled};
        ensure_live().run_alarm(info);
      });
    }
    arm_manager(desired_fire(stored));
    return;
  }
  if (stored != scheduled) {
    // The handler set or deleted the alarm: the new state takes precedence over the retry.
    retries_.erase(scheduled);
    world.emit("alarm.failure", {{"object", label_}, {"scheduled", scheduled}, {"superseded", true}});
    arm_manager(desired_fire(stored));
    return;
  }
  OccurrenceRetry& retry = retries_[scheduled];
  // sim.mutant.alarm_retry_off_by_one: one counted retry more than runtime.md 7.4 allows (RT-12).
  const int64_t max_counted_retries = kAlarmMaxCountedRetries + (world.mutants().alarm_retry_off_by_one ? 1 : 0);
  const RetryDecision decision = on_alarm_failure(retry.state, *failure, max_counted_retries);
  if (decision.abandoned) {
    world.emit("alarm.failure", {{"object", label_},
                                 {"scheduled", scheduled},
                                 {"counted", true},
                                 {"retryCount", retry.state.counted},
                                 {"abandoned", true}});
    retries_.erase(scheduled);
    arm_manager(std::nullopt);
    abandoned_ = scheduled;
    delete_abandoned(scheduled);
    return;
  }
  const int64_t jitter = world.random().between(jitter_stream_, 0, decision.max_jitter);
  retry.at = world.now() + decision.delay + jitter;
  world.emit("alarm.failure", {{"object", label_},
                               {"scheduled", scheduled},
                               {"counted", *failure == AlarmFailure::counted},
                               {"retryCount", retry.state.counted},
                               {"delay", decision.delay},
                               {"jitter", jitter},
                               {"next", *retry.at}});
  arm_manager(retry.at);
}

// ---------------------------------------------------------------------------------------------
// The runtime

ObjectRuntime::ObjectRuntime(World& world, FaultInjector& faults, RuntimeOptions options)
    : world_(world),
      faults_(faults),
      options_(std::move(options)),
      cold_([this](int64_t max) { return draw_lifecycle_lag(max); }),
      lag_stream_(world.random().stream("cold.lifecycle_lag")) {
  options_.variants.insert(world.variants().begin(), world.variants().end());
  for (const auto& [bucket, rules] : options_.bucket_rules) cold_.set_rules(bucket, rules);
  arm_storage_full();
  arm_cold_vanish();
  arm_cold_outage();
}

// episode.cold_outage: one opportunity per simulated minute of the run; while it lasts the cold
// store refuses every call.
void ObjectRuntime::arm_cold_outage() {
  if (!faults_.may_fire(FaultKind::episode_cold_outage)) return;
  world_.executor().after(kMinuteMs, [this] {
    if (faults_.healed()) return;
    int64_t length = 0;
    if (faults_.fires(FaultKind::episode_cold_outage, FaultSite{"", 0, "minute"}, [&] {
          length = world_.random().between(world_.random().stream("faults.episodes"), kColdOutageMinMs, kColdOutageMaxMs);
          return nlohmann::json{{"length", length}};
        }))
      cold_outage_until_ = world_.now() + length;
    arm_cold_outage();
  });
}

// cold.vanish (arbitrary): every stored cold object gets one opportunity per simulated hour, all at
// one instant of the hour drawn per run (so a safety phase shorter than an hour still meets it in
// some seeds).
void ObjectRuntime::arm_cold_vanish() {
  if (!faults_.may_fire(FaultKind::cold_vanish)) return;
  sweep_cold_vanish_after(world_.random().between(world_.random().stream("cold.vanish"), 1, kHourMs));
}

void ObjectRuntime::sweep_cold_vanish_after(int64_t delay) {
  world_.executor().after(delay, [this] {
    if (faults_.healed()) return;
    const int64_t now = world_.now();
    for (const std::string& bucket : bucket_names_) {
      std::vector<std::string> keys;
      std::optional<std::string> cursor;
      do {
        const ColdList page = cold_.list(bucket, "", cursor, kColdListMax, now);
        for (const ColdObject& object : page.objects) keys.push_back(object.key);
        cursor = page.cursor;
      } while (cursor);
      for (const std::string& key : keys)
        if (faults_.fires(FaultKind::cold_vanish, FaultSite{bucket + "/" + key, 0, "hour"})) cold_.vanish(bucket, key, now);
    }
    sweep_cold_vanish_after(kHourMs);
  });
}

// cold.lifecycle_lag (always on): each object written under an expiry rule draws its removal lag.
int64_t ObjectRuntime::draw_lifecycle_lag(int64_t max) {
  int64_t lag = 0;
  faults_.fires(FaultKind::cold_lifecycle_lag, FaultSite{"", 0, "put"}, [&] {
    lag = world_.random().between(lag_stream_, 0, max);
    return nlohmann::json{{"lag", lag}};
  });
  return lag;
}

// storage.full (one opportunity per run): at a time within the shortest safety phase, every object's
// storage cap drops to its current size plus a drawn margin; heal() lifts it (runtime.md 11.2).
void ObjectRuntime::arm_storage_full() {
  int64_t at = 0, margin = 0;
  const StreamId stream = world_.random().stream("storage.full");
  if (!faults_.fires(FaultKind::storage_full, FaultSite{"", 0, "run"}, [&] {
        at = world_.random().between(stream, world_.now(), world_.now() + kShortestSafetyMs);
        margin = world_.random().between(stream, 0, kStorageFullMarginMaxBytes);
        return nlohmann::json{{"at", at}, {"margin", margin}};
      }))
    return;
  world_.executor().at(at, [this, margin] {
    if (faults_.healed()) return;
    for (auto& [key, object] : objects_) object->store().set_max_bytes(object->store().database_size() + margin);
  });
}

ObjectRuntime::~ObjectRuntime() { objects_.clear(); }

void ObjectRuntime::define_class(const std::string& className, ObjectFactory factory) {
  classes_[className] = std::move(factory);
}

SimObject& ObjectRuntime::object(const std::string& className, const std::string& name) {
  auto key = std::make_pair(className, name);
  auto it = objects_.find(key);
  if (it != objects_.end()) return *it->second;
  auto cls = classes_.find(className);
  if (cls == classes_.end()) throw std::invalid_argument("no object class named '" + className + "'");
  auto object = std::make_unique<SimObject>(*this, className, name, cls->second);
  SimObject& ref = *object;
  objects_.emplace(std::move(key), std::move(object));
  return ref;
}

// runtime.md 11.4: every fault is switched off, a partition or an episode in progress included (only
// running hangs finish on their drawn time); storage caps are lifted.
void ObjectRuntime::heal() {
  for (auto& [key, object] : objects_) {
    object->store().set_max_bytes(kStorageMaxBytes);
    object->end_episodes();
  }
  partitioned_until_.clear();
  isolated_until_.clear();
  cold_outage_until_ = 0;
}

std::vector<ObjectStatus> ObjectRuntime::status() const {
  std::vector<ObjectStatus> all;
  for (const auto& [key, object] : objects_) {
    ObjectStatus s;
    s.label = object->label();
    s.incarnations = object->incarnations();
    s.live = object->live() != nullptr;
    if (const Incarnation* live = object->live()) {
      s.held_effects = live->held_effects();
      s.calls_in_progress = live->calls_in_progress();
    }
    s.stored_alarm = object->store().get_alarm();
    s.unconfirmed_commits = object->store().unconfirmed().size();
    all.push_back(std::move(s));
  }
  return all;
}

std::vector<std::string> ObjectRuntime::pending() const {
  std::vector<std::string> items;
  for (const ObjectStatus& s : status()) {
    if (s.unconfirmed_commits) items.push_back(s.label + ": " + std::to_string(s.unconfirmed_commits) + " unconfirmed commits");
    if (s.held_effects) items.push_back(s.label + ": " + std::to_string(s.held_effects) + " outbound effects held by the output gate");
    if (s.calls_in_progress) items.push_back(s.label + ": " + std::to_string(s.calls_in_progress) + " calls in progress");
    if (s.stored_alarm && *s.stored_alarm <= world_.now())
      items.push_back(s.label + ": alarm due at " + std::to_string(*s.stored_alarm) + " has not fired");
  }
  return items;
}

}  // namespace durasim::sim
