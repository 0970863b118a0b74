// Internal structure of the simulated runtime (see object_runtime.h): a SimObject is what outlives
// incarnations (its store, commit bookkeeping, alarm manager); an Incarnation is one live instance
// with its task group, gates and storage facade. Only sim/ includes this file.
#pragma once

#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "sim/alarm_retry.h"
#include "sim/object_runtime.h"
#include "sim/one_shot.h"
#include "sim/sqlite_store.h"
#include "sim/stream_random.h"

namespace durasim::sim {

class Incarnation;

inline constexpr int64_t kHibernateIdleMs = 10'000;            // runtime.md 1
inline constexpr int64_t kEvictIdleMinMs = 70'000;             // runtime.md 1
inline constexpr int64_t kEvictIdleMaxMs = 140'000;            // runtime.md 1
inline constexpr int64_t kGateTimeoutMs = 30'000;              // runtime.md 1
inline constexpr int64_t kBlockConcurrencyTimeoutMs = 30'000;  // runtime.md 1
inline constexpr int64_t kShutdownGraceMs = 30'000;            // runtime.md 1: a zombie's grace period
inline constexpr int64_t kEarlyFireMs = 1'000;                 // sim.mutant.alarm_fires_early (sim/mutants.h)

// Why an incarnation ended; decides the callers' error message and the alarm failure class.
enum class EndCause { hibernate, evict, injected, abort, code_update, storage, gate_timeout, bcw_timeout, bcw_throw, alarm_limit };

struct ResetError {
  EndCause cause;
  std::string message;  // the runtime.md 6.2 message the callers get
  bool overloaded = false;
};

// What an incoming call delivers back to its caller.
using Reply = OneShot<nlohmann::json>;

// One local commit awaiting confirmation.
struct PendingCommit {
  uint64_t number = 0;
  int64_t confirm_at = 0;
  std::optional<int64_t> alarm_after;  // the stored alarm once this commit applies
  std::vector<std::function<void()>> after_commit;
  TimerId timer = kNoTimer;
  bool gate_timeout = false;
};

class SimObject {
 public:
  SimObject(ObjectRuntime& runtime, std::string className, std::string name, ObjectFactory factory);
  ~SimObject();

  const std::string& label() const { return label_; }
  const std::string& class_name() const { return class_name_; }
  const std::string& name() const { return name_; }
  ObjectRuntime& runtime() { return runtime_; }
  SqliteStore& store() { return store_; }
  Incarnation* live() { return live_.get(); }
  const Incarnation* live() const { return live_.get(); }
  int64_t incarnations() const { return next_incarnation_ - 1; }

  // The live incarnation, constructed now if there is none.
  Incarnation& ensure_live();
  // Ends the live incarnation (if any) for `cause`. Never called from inside one of its segments.
  void end_live(const ResetError& error);

  // Alarm manager (runtime.md 7.2): outside any incarnation, survives resets.
  void manager_consider_earlier(std::optional<int64_t> stored);   // before a local commit
  void manager_after_confirm(std::optional<int64_t> alarm_after);  // after a confirmation
  void alarm_outcome(int64_t scheduled, std::optional<AlarmFailure> failure);  // the handler finished
  bool alarm_running() const { return alarm_running_; }
  void set_alarm_running(bool running) { alarm_running_ = running; }
  // The per-object timed faults (object.code_update, rpc.partition and the episodes of
  // docs/fault-episodes.md): one opportunity each per simulated minute, until heal.
  void schedule_minute_faults();
  // episode.storage_slow: how much later a commit made now confirms (0 outside an episode).
  int64_t storage_slow_delay() const;
  // Heal: a slow-storage episode in progress ends.
  void end_episodes() { slow_until_ = 0; }

  uint64_t last_local = 0;      // commit numbers, per object, across incarnations
  uint64_t last_confirmed = 0;
  int64_t last_confirm_at = 0;  // c_{k-1}

 private:
  void arm_manager(std::optional<int64_t> at);
  void manager_fire();
  void delete_abandoned(int64_t scheduled);
  std::optional<int64_t> desired_fire(std::optional<int64_t> stored) const;
  // sim.mutant.memory_survives_reset: the last incarnation, if a reset ended it with its instance.
  std::unique_ptr<Incarnation> take_surviving_memory();

  ObjectRuntime& runtime_;
  std::string class_name_, name_, label_;
  ObjectFactory factory_;
  SqliteStore store_;
  std::unique_ptr<Incarnation> live_;
  std::vector<std::unique_ptr<Incarnation>> retired_;  // ended; destroyed at the next end or with the object
  std::map<int64_t, std::unique_ptr<Incarnation>> zombies_;  // ended incarnations in their grace period
  int64_t next_incarnation_ = 1;

  std::optional<int64_t> manager_at_;
  TimerId manager_timer_ = kNoTimer;
  // A fire an alarm fault moved: for the stored time `stored`, at `at` instead.
  struct FaultedFire {
    int64_t stored = 0;
    int64_t at = 0;
  };
  std::optional<FaultedFire> late_;    // alarm.late: this fire was delayed (and is not delayed again)
  std::optional<FaultedFire> early_;   // alarm.early: the handler runs at `at`, before its time
  std::optional<int64_t> lost_alarm_;  // alarm.lost: this stored time never fires
  // An occurrence abandoned after its counted retries, while it may still be stored (its delete
  // lost with a failed commit): it never runs again, and is deleted again (RT-12).
  std::optional<int64_t> abandoned_;
  bool alarm_running_ = false;
  // Retry state per stored occurrence that failed (runtime.md 7.4), by scheduled time, with its
  // announced retry. An occurrence keeps its state while another one runs: a reset may bring the
  // durable alarm back to it. Its success, abandonment, or a handler that replaced it ends it.
  struct OccurrenceRetry {
    AlarmRetryState state;
    std::optional<int64_t> at;
  };
  std::map<int64_t, OccurrenceRetry> retries_;
  void reset_burst_step(std::vector<int64_t> gaps);
  void offer_episodes();

  TimerId minute_timer_ = kNoTimer;
  TimerId burst_timer_ = kNoTimer;  // episode.reset_burst: the next reset
  int64_t slow_until_ = 0, slow_delay_ = 0;  // episode.storage_slow in progress
  StreamId jitter_stream_, fault_detail_stream_, episode_stream_;
};

// The storage facade of one incarnation (runtime.md 4): every call checks that the incarnation is
// alive and unpoisoned, gives the fault injector its opportunities, and writes into the object's
// store, whose open implicit transaction the incarnation commits at each segment end.
class IncarnationStorage final : public ObjectStorage, public StorageTxn {
 public:
  explicit IncarnationStorage(Incarnation& owner) : owner_(owner) {}

  SqlCursor execValues(std::string_view sql, std::vector<SqlValue> params) override;
  Task<void> sync() override;
  std::optional<int64_t> getAlarm() override;
  void setAlarm(int64_t scheduledTime) override;
  void deleteAlarm() override;
  void deleteAll() override;
  int64_t databaseSize() const override;
  void beforeCommit(std::function<void(StorageTxn&)> hook) override;
  void beforeCommitOnce(std::string_view key, std::function<void(StorageTxn&)> hook) override;
  void afterCommit(std::function<void()> hook) override;

 protected:
  void runTransaction(const std::function<void(StorageTxn&)>& body) override;

 private:
  friend class Incarnation;
  void check_usable();
  [[noreturn]] void critical(SqlCriticalError error);
  [[noreturn]] void statement_error(const SqlError& error);

  Incarnation& owner_;
  int savepoint_depth_ = 0;
  bool open_before_statement_ = false;  // whether an implicit transaction was open when exec began
  struct BeforeCommit {
    std::vector<std::function<void(StorageTxn&)>> hooks;
    std::set<std::string, std::less<>> keys;  // of the hooks registered once (beforeCommitOnce)
  };
  std::vector<BeforeCommit> before_commit_;  // per savepoint level
  std::vector<std::vector<std::function<void()>>> after_commit_;              // per savepoint level
  std::vector<std::function<void()>> open_after_commit_;  // hooks of the open implicit transaction
};

class Incarnation final : public SegmentHooks, public ObjectServices, public Clock, public Random, public Logger {
 public:
  // `predecessor`: under sim.mutant.memory_survives_reset, the reset incarnation whose instance this
  // one adopts instead of constructing its own; it stays allocated as long as this one.
  Incarnation(SimObject& object, int64_t number, const ObjectFactory& factory,
              std::unique_ptr<Incarnation> predecessor = nullptr);
  ~Incarnation() override;

  int64_t number() const { return number_; }
  SimObject& object() { return object_; }
  bool alive() const { return alive_; }
  TaskGroup& group() { return group_; }
  DurableObject& instance() { return *instance_; }
  FaultSite site(std::string_view point) const { return FaultSite{object_.label(), number_, point}; }
  bool constructing() const { return constructing_; }
  std::size_t held_effects() const { return held_.size(); }
  std::size_t calls_in_progress() const { return incoming_.size(); }
  int64_t busy() const { return busy_; }

  // SegmentHooks: the input gate and the implicit transaction per segment.
  bool admits(const TaskScope& scope) const override;
  bool section_holds_gate() const;
  void segment_begin(TaskScope& scope) override;
  void segment_end(TaskScope& scope) override;

  // ObjectServices.
  Task<void> blockConcurrencyWhile(std::function<Task<void>()> body) override;
  ObjectNamespace& objects(std::string_view className) override;
  ColdBucket& bucket(std::string_view name) override;
  [[noreturn]] void abort(std::string_view reason) override;
  std::shared_ptr<AsyncEvent> makeEvent() override;
  void probe(std::string_view event, EventFields fields) override;

  // Clock, Random, Logger of this incarnation.
  int64_t now() const override;
  Task<void> sleepFor(int64_t ms) override;
  Task<void> sleepUntil(int64_t t) override;
  double random() override;
  std::string uuid() override;
  void log(std::string_view level, std::string_view event, const nlohmann::json& fields) override;

  // Incoming work.
  void deliver_call(std::string method, nlohmann::json args, std::shared_ptr<Reply> reply);
  void run_alarm(AlarmInvocationInfo info);

  // Output gate (runtime.md 5.2): `release` runs once every write issued so far is confirmed, in
  // production order; `drop` runs instead if the gate breaks or the incarnation ends.
  void hold(std::string_view kind, std::function<void()> release, std::function<void()> drop);
  // The commit number that covers every write issued so far.
  uint64_t watermark() const;
  Task<void> wait_durable(uint64_t number);
  // Counts a wait on something outside the object (RPC or cold-store reply): not idle meanwhile.
  void begin_external_wait() { ++busy_; }
  void end_external_wait();

  // Runs `body` as a segment of its own from an executor event (runtime-internal writes).
  void system_segment(const std::function<void()>& body);

  // A fault or error that must end this incarnation: at once if no segment runs, else at its end.
  void doom(const ResetError& error);
  // Called by SimObject::end_live: tear down without resuming anything.
  void end(const ResetError& error, bool zombie = false);
  bool zombie() const { return zombie_; }
  // Whether it still holds its instance after its end (sim.mutant.memory_survives_reset).
  bool holds_instance() const;
  // The run is over: destroy frames and the instance without recording anything.
  void shutdown();

  bool alarm_touched = false;  // setAlarm/deleteAlarm called since the running handler started
  std::optional<SqlCriticalError> poison;

 private:
  friend class IncarnationStorage;
  ObjectContext make_context();
  void bind_context();
  void commit_segment();
  // Registers local commit `commit`, written by incarnation `writer` (this one, but for a zombie's
  // commit under sim.mutant.zombie_storage_write), as awaiting confirmation here.
  void await_confirmation(const LocalCommit& commit, std::optional<int64_t> alarm,
                          std::vector<std::function<void()>> after_commit, int64_t writer);
  void emit_commit(const LocalCommit& commit, std::optional<int64_t> alarm, int64_t writer);
  void commit_zombie_writes();
  void schedule_confirmation(const LocalCommit& commit);
  std::map<uint64_t, PendingCommit>::iterator next_confirmation();
  void confirm_due();
  void fail_commit(StorageCommitError::Outcome outcome);
  void release_effects();
  void settle_waiters();
  void break_gate();
  void cancel_timers();
  void update_idle();
  void finish_alarm(std::optional<AlarmFailure> failure);
  Task<void> run_call(std::string method, nlohmann::json args, std::shared_ptr<Reply> reply);
  Task<void> run_alarm_handler(AlarmInvocationInfo info);
  Task<void> bcw_section(std::function<Task<void>()> body);

  void emit_effect(const char* event, std::string_view kind, uint64_t produced, uint64_t required);

  struct Held {
    std::string kind;  // "reply", "call" or "cold"
    uint64_t produced;
    uint64_t required;
    std::function<void()> release, drop;
  };
  struct DurabilityWaiter {
    uint64_t required;
    std::shared_ptr<OneShot<Done>> shot;
  };

  SimObject& object_;
  int64_t number_;
  bool alive_ = true;
  bool zombie_ = false;  // ended, but its frames run on for the grace period (object.zombie)
  bool constructing_ = true;
  bool in_segment_ = false;
  std::optional<ResetError> doomed_;
  std::unique_ptr<Incarnation> predecessor_;  // destroyed after the instance it handed over
  TaskGroup group_;
  IncarnationStorage storage_;
  std::unique_ptr<ObjectContext> context_;
  std::unique_ptr<DurableObject> instance_;
  std::deque<Held> held_;
  std::vector<DurabilityWaiter> waiters_;
  std::map<uint64_t, PendingCommit> pending_;   // local commits awaiting confirmation
  std::vector<std::shared_ptr<Reply>> incoming_;  // calls in progress, failed on reset
  std::vector<const TaskScope*> sections_;         // open blockConcurrencyWhile sections
  std::deque<std::function<void()>> gated_;       // events waiting for the input gate
  int64_t sleeping_ = 0;                          // frames parked on a timer
  int64_t busy_ = 0;                              // calls, alarm runs and external waits in progress
  // Root ids (never reused, unlike addresses) of the waiters of a failed commit, admitted while doomed.
  std::vector<uint64_t> rescued_;
  std::optional<AlarmInvocationInfo> alarm_info_; // the running alarm handler's invocation
  uint64_t effects_produced_ = 0;
  int64_t clock_offset_ = 0;  // clock.incarnation_offset
  TimerId alarm_limit_timer_ = kNoTimer, idle_timer_ = kNoTimer, end_timer_ = kNoTimer;
  std::map<std::string, std::unique_ptr<ObjectNamespace>, std::less<>> namespaces_;
  StreamRandom random_;  // the incarnation's Random, stream "object.random"
  StreamId idle_stream_;
};

}  // namespace durasim::sim
