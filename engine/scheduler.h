// The shared scheduler (scheduler.md 2-3): the one engine per object incarnation that every
// capability attaches to. It owns the participants (one per record kind), the permit pool, the
// reconciliation of the object's single physical alarm inside every engine transaction, the early
// in-memory timer, and the alarm entry point with its handoff.
// Keeps SCH-02..04 (reconcile rule), SCH-05 (alarm changes roll back with their transaction),
// SCH-06 (timer armed only after commit), SCH-07/08 (permits), SCH-09 (unique participants), SCH-10.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/runtime.h"

namespace durasim {

struct SchedulerOptions {
  int64_t alarmConcurrency = 10;     // positive integer
  int64_t alarmMinDelayMs = 15'000;  // integer in [1000, 15000]
  int64_t alarmHandoffMs = 840'000;  // positive integer (14 minutes)
};
inline constexpr int64_t kMinAlarmMinDelayMs = 1'000;
inline constexpr int64_t kMaxAlarmMinDelayMs = 15'000;

// A kind of durable record that drives the alarm.
class Participant {
 public:
  virtual ~Participant() = default;
  virtual std::string kind() const = 0;  // "alarms" | "deliveries" | "outbox"
  // The earliest due time of this kind's pending rows, read inside a transaction.
  virtual std::optional<int64_t> nextPendingAt(StorageTxn& txn) = 0;
  virtual Task<void> runDue(int64_t startedAt, std::optional<AlarmInvocationInfo> info) = 0;
};

class Engine;

// One unit of the alarm-handler concurrency budget. Move-only; release() acts once (it hands the
// permit to the oldest waiter or returns it to the pool); the destructor releases.
class Permit {
 public:
  Permit() = default;
  Permit(Permit&& other) noexcept;
  Permit& operator=(Permit&& other) noexcept;
  Permit(const Permit&) = delete;
  Permit& operator=(const Permit&) = delete;
  ~Permit() { release(); }

  void release();
  bool held() const { return pool_ != nullptr; }

 private:
  friend class Engine;
  struct Pool;
  Permit(std::shared_ptr<Pool> pool, int64_t id) : pool_(std::move(pool)), id_(id) {}

  std::shared_ptr<Pool> pool_;
  int64_t id_ = 0;
};

// The StorageTxn of one engine transaction, with the request to reconcile the physical alarm.
class EngineTxn {
 public:
  StorageTxn& sql;
  // Requests reconciliation when this transaction commits (once per transaction; see Engine).
  void reconcile();

 private:
  friend class Engine;
  EngineTxn(StorageTxn& txn, Engine& engine, std::string kind) : sql(txn), engine_(engine), kind_(std::move(kind)) {}
  Engine& engine_;
  std::string kind_;  // the requesting participant (used by the reconcile_own_kind_only variant)
};

class Engine {
 public:
  Engine(ObjectContext& ctx, const SchedulerOptions& options);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  ObjectContext& context() const { return ctx_; }
  const SchedulerOptions& options() const { return options_; }

  // Throws TypeError("Scheduler participant \"<kind>\" is already attached") for a second one.
  void registerParticipant(Participant& participant);
  void unregisterParticipant(Participant& participant);
  bool hasParticipant(std::string_view kind) const;

  // A component shared by the capability instances of one kind on this engine (the outbox hub):
  // the one `make()` built for the first caller, for as long as some caller holds it.
  template <class T, class Make>
  std::shared_ptr<T> shared(const std::string& name, Make make) {
    std::weak_ptr<void>& slot = shared_[name];
    if (std::shared_ptr<void> existing = slot.lock()) return std::static_pointer_cast<T>(existing);
    std::shared_ptr<T> made = make();
    slot = made;
    return made;
  }

  // Runs `body` as one storage transaction that reconciles the alarm if the body asks; completes
  // when the commit is durable. `kind` names the requesting participant.
  // (`kind` is a string_view so that callers' co_await expressions hold no temporaries that g++ 12
  // would destroy twice.)
  template <class F>
  auto transaction(std::string_view kind, F body) -> Task<std::invoke_result_t<F&, EngineTxn&>> {
    return ctx_.storage.transaction([this, kind = std::string(kind), body = std::move(body)](StorageTxn& txn) mutable {
      ++stateChanges_;
      EngineTxn engineTxn(txn, *this, kind);
      return body(engineTxn);
    });
  }
  // The same request for a transaction the application owns.
  void reconcileWithin(StorageTxn& applicationTxn, std::string kind = {});
  // A participant's single write outside any engine transaction that changes what a reconcile
  // reads (a named alarm's success delete): a refresh that read the state before it is not joined.
  void noteStateChange() { ++stateChanges_; }

  // One engine transaction that only reconciles. A caller finding one in flight joins it when
  // nothing the reconcile reads can have changed since it ran (no engine transaction, no platform
  // alarm run began since), and otherwise waits for it and reconciles again (docs/decisions.md);
  // at most one is in flight.
  Task<void> scheduleNextAlarm();

  // The single entry point of the physical alarm (info set) and of the early timer (info empty).
  Task<void> alarm(std::optional<AlarmInvocationInfo> info);

  std::optional<Permit> tryAcquirePermit();
  Task<Permit> acquirePermit();  // FIFO wait
  int64_t freePermits() const;

  // Runs worker(i) for every i < count, at most alarmConcurrency at a time, in index order of
  // start. Every index runs even if some throw; the first exception is rethrown at the end.
  Task<void> runConcurrent(std::size_t count, std::function<Task<void>(std::size_t)> worker);

  // Starts `work` in the background (ctx.waitUntil); a failure is logged as
  // durability.background_execution.failed.
  void background(Task<void> work, const char* what);

 private:
  friend class EngineTxn;
  struct Refresh;
  struct EarlyTimer;

  void requestReconcile(StorageTxn& txn, const std::string& kind);
  void reconcileNow(StorageTxn& txn, const std::string& kind);
  void scheduleEarlyTimer(std::optional<int64_t> next, int64_t reconciledAt);
  Task<void> earlyTimerTask(std::shared_ptr<EarlyTimer> timer);
  struct AlarmRun;
  struct ConcurrentRun;
  Task<void> runParticipants(int64_t startedAt, std::optional<AlarmInvocationInfo> info, std::shared_ptr<AlarmRun> run);
  Task<void> handoff();
  Task<void> logged(Task<void> work, std::string what);
  void logFailure(std::exception_ptr failure, const std::string& what);
  Task<void> concurrentWorker(std::shared_ptr<ConcurrentRun> run);

  ObjectContext& ctx_;
  SchedulerOptions options_;
  bool ownKindOnly_;
  std::vector<Participant*> participants_;
  std::map<std::string, std::weak_ptr<void>> shared_;
  std::shared_ptr<Permit::Pool> pool_;
  std::shared_ptr<Refresh> refresh_;      // the scheduleNextAlarm transaction in flight
  // Events that may change what a reconcile reads: engine transactions and reconcile requests
  // begun, single writes noted by participants, platform alarm runs started (they hide the firing
  // alarm).
  uint64_t stateChanges_ = 0;
  std::shared_ptr<EarlyTimer> earlyTimer_;
};

// The handle applications construct (one per object incarnation) and capabilities take.
class DurabilityScheduler {
 public:
  // Validates `options` (RangeError) and that no other scheduler is attached to ctx.storage
  // (TypeError) before anything is written.
  explicit DurabilityScheduler(ObjectContext& ctx, SchedulerOptions options = {});
  ~DurabilityScheduler();
  DurabilityScheduler(const DurabilityScheduler&) = delete;
  DurabilityScheduler& operator=(const DurabilityScheduler&) = delete;

  // The application's alarm handler does nothing but `co_return co_await scheduler.alarm(info);`.
  Task<void> alarm(std::optional<AlarmInvocationInfo> info = std::nullopt) { return engine_->alarm(info); }
  Engine& engine() { return *engine_; }

 private:
  ObjectStorage* storage_;
  std::unique_ptr<Engine> engine_;
};

}  // namespace durasim
