// The shared scheduler (scheduler.md 2-3); see scheduler.h. Probes ("sch.*") report what the
// engine did for the history checks in properties/; they never change behaviour.
#include "engine/scheduler.h"

#include <algorithm>
#include <set>
#include <utility>

#include "engine/buggify.h"
#include "engine/errors.h"
#include "engine/scheduler_events.h"
#include "engine/variants.h"

namespace durasim {

namespace {
// Storage instances with a scheduler attached (one per object incarnation, scheduler.md 2).
std::set<const ObjectStorage*>& attachedStorages() {
  thread_local std::set<const ObjectStorage*> attached;
  return attached;
}

nlohmann::json optionalJson(const std::optional<int64_t>& v) { return v ? nlohmann::json(*v) : nlohmann::json(); }
}  // namespace

// ---------------------------------------------------------------------------------------------
// Permits (scheduler.md 3.5)

struct Permit::Pool {
  struct Waiter {
    int64_t ticket = 0;  // arrival order
    std::shared_ptr<AsyncEvent> granted;
    int64_t permit = 0;  // the permit handed over, once granted
  };
  ObjectContext* ctx = nullptr;
  int64_t capacity = 0;
  int64_t free = 0;
  int64_t lastId = 0;
  int64_t lastTicket = 0;
  std::deque<std::shared_ptr<Waiter>> waiters;  // FIFO

  // Reported after each change, so free + held == capacity holds at every probe (SCH-07).
  void probe(std::string_view op, int64_t id, int64_t ticket = 0) {
    ctx->probe(scheduler_events::kPermit, {{"op", op}, {"permit", id}, {"ticket", ticket}, {"free", free}, {"capacity", capacity},
                              {"waiting", static_cast<int64_t>(waiters.size())}});
  }
};

Permit::Permit(Permit&& other) noexcept : pool_(std::move(other.pool_)), id_(other.id_) {}

Permit& Permit::operator=(Permit&& other) noexcept {
  if (this != &other) {
    release();
    pool_ = std::move(other.pool_);
    id_ = other.id_;
  }
  return *this;
}

void Permit::release() {
  if (!pool_) return;
  std::shared_ptr<Pool> pool = std::move(pool_);
  pool_.reset();
  if (pool->waiters.empty()) {
    ++pool->free;
    pool->probe("release", id_);
    return;
  }
  std::shared_ptr<Pool::Waiter> waiter = pool->waiters.front();
  pool->waiters.pop_front();
  waiter->permit = ++pool->lastId;
  pool->ctx->probe(scheduler_events::kPermit, {{"op", "handoff"}, {"permit", id_}, {"granted", waiter->permit}, {"ticket", waiter->ticket},
                                  {"free", pool->free}, {"capacity", pool->capacity},
                                  {"waiting", static_cast<int64_t>(pool->waiters.size())}});
  waiter->granted->set();
}

std::optional<Permit> Engine::tryAcquirePermit() {
  if (pool_->free <= 0) return std::nullopt;
  --pool_->free;
  Permit permit(pool_, ++pool_->lastId);
  pool_->probe("acquire", permit.id_);
  return permit;
}

Task<Permit> Engine::acquirePermit() {
  if (std::optional<Permit> permit = tryAcquirePermit()) co_return std::move(*permit);
  auto waiter = std::make_shared<Permit::Pool::Waiter>();
  waiter->ticket = ++pool_->lastTicket;
  waiter->granted = ctx_.makeEvent();
  pool_->waiters.push_back(waiter);
  pool_->probe("wait", 0, waiter->ticket);
  co_await waiter->granted->wait();
  co_return Permit(pool_, waiter->permit);
}

int64_t Engine::freePermits() const { return pool_->free; }

// ---------------------------------------------------------------------------------------------
// Construction and participants (scheduler.md 2, 3.1)

Engine::Engine(ObjectContext& ctx, const SchedulerOptions& options)
    : ctx_(ctx),
      options_(options),
      ownKindOnly_(variants::enabled(ctx, variants::kReconcileOwnKindOnly)),
      pool_(std::make_shared<Permit::Pool>()) {
  pool_->ctx = &ctx;
  pool_->capacity = options.alarmConcurrency;
  pool_->free = options.alarmConcurrency;
}

Engine::~Engine() = default;

void Engine::registerParticipant(Participant& participant) {
  const std::string kind = participant.kind();
  if (hasParticipant(kind)) {
    ctx_.probe(scheduler_events::kParticipant, {{"kind", kind}, {"accepted", false}});
    throw TypeError("Scheduler participant \"" + kind + "\" is already attached");
  }
  participants_.push_back(&participant);
  ctx_.probe(scheduler_events::kParticipant, {{"kind", kind}, {"accepted", true}});
}

void Engine::unregisterParticipant(Participant& participant) {
  participants_.erase(std::remove(participants_.begin(), participants_.end(), &participant), participants_.end());
}

bool Engine::hasParticipant(std::string_view kind) const {
  return std::any_of(participants_.begin(), participants_.end(), [&](Participant* p) { return p->kind() == kind; });
}

// ---------------------------------------------------------------------------------------------
// Reconciliation (scheduler.md 3.2)

void EngineTxn::reconcile() { engine_.requestReconcile(sql, kind_); }

void Engine::reconcileWithin(StorageTxn& applicationTxn, std::string kind) {
  ++stateChanges_;
  requestReconcile(applicationTxn, kind);
}

// Once per transaction (scheduler.md 3.2): later requests on the same transaction are no-ops.
void Engine::requestReconcile(StorageTxn& txn, const std::string& kind) {
  txn.beforeCommitOnce("durability.reconcile", [this, kind](StorageTxn& hookTxn) { reconcileNow(hookTxn, kind); });
}

void Engine::reconcileNow(StorageTxn& txn, const std::string& kind) {
  std::optional<int64_t> next;
  for (Participant* participant : participants_) {
    // The variant (hazards.md H-A) narrows a participant's own request; the engine's own refresh
    // (kind "") still covers every participant.
    if (ownKindOnly_ && !kind.empty() && participant->kind() != kind) continue;
    const std::optional<int64_t> candidate = participant->nextPendingAt(txn);
    if (candidate && (!next || *candidate < *next)) next = candidate;
  }
  const int64_t now = ctx_.clock.now();
  const std::optional<int64_t> current = txn.getAlarm();
  std::optional<int64_t> written;
  bool deleted = false;
  if (!next) {
    if (current) {
      txn.deleteAlarm();
      deleted = true;
    }
  } else {
    const int64_t target = std::max(*next, now + options_.alarmMinDelayMs);
    if (!current || *current < *next || *current > target) {
      txn.setAlarm(target);
      written = target;
    }
  }
  ctx_.probe(scheduler_events::kReconcile, {{"now", now},
                               {"next", optionalJson(next)},
                               {"before", optionalJson(current)},
                               {"written", optionalJson(written)},
                               {"deleted", deleted},
                               {"min_delay", options_.alarmMinDelayMs}});
  txn.afterCommit([this, next, now] {
    ctx_.probe(scheduler_events::kReconcileDurable, {{"reconciled_at", now}, {"next", optionalJson(next)}});
    scheduleEarlyTimer(next, now);
  });
}

struct Engine::Refresh {
  uint64_t readAt = 0;  // stateChanges_ when its reconcile read the state
  std::shared_ptr<AsyncEvent> done;
  std::exception_ptr error;
};

// A refresh reconciles synchronously as it begins. Joining one whose reconcile read the state before
// the caller's latest changes (a named alarm's success delete, a platform run that now hides the
// firing alarm) could leave the alarm for rows that no longer exist, or none for rows still pending
// once the platform's deferred delete follows (alarms seed 9159): such a refresh is waited for,
// then a fresh one runs.
Task<void> Engine::scheduleNextAlarm() {
  while (std::shared_ptr<Refresh> inFlight = refresh_) {
    const bool current = inFlight->readAt == stateChanges_;
    co_await inFlight->done->wait();
    if (!current) continue;
    if (inFlight->error) std::rethrow_exception(inFlight->error);
    co_return;
  }
  auto refresh = std::make_shared<Refresh>();
  refresh->done = ctx_.makeEvent();
  refresh_ = refresh;
  try {
    // Trivial captures only: g++ 12 may destroy a non-trivial temporary of a co_await twice.
    Refresh* reading = refresh.get();
    Task<void> yielding = buggify::yieldIf(ctx_, buggify::kSchedulerYieldBeforeRefresh);
    co_await yielding;
    co_await transaction("", [reading, this](EngineTxn& txn) {
      txn.reconcile();
      reading->readAt = stateChanges_;
    });
  } catch (...) {
    refresh->error = std::current_exception();
  }
  if (refresh_ == refresh) refresh_.reset();
  refresh->done->set();
  if (refresh->error) std::rethrow_exception(refresh->error);
}

// ---------------------------------------------------------------------------------------------
// Early timer (scheduler.md 3.3)

struct Engine::EarlyTimer {
  int64_t next = 0;
  std::shared_ptr<AsyncEvent> cancelled;
};

// Whether to arm is decided at the reconcile's time, when its physical alarm was chosen, not after
// the confirmation wait: a `next` the physical alarm already holds gets no timer (SCH-06,
// docs/decisions.md).
void Engine::scheduleEarlyTimer(std::optional<int64_t> next, int64_t reconciledAt) {
  if (earlyTimer_ && next && earlyTimer_->next == *next) return;
  if (earlyTimer_) {
    ctx_.probe(scheduler_events::kTimerCancel, {{"next", earlyTimer_->next}});
    earlyTimer_->cancelled->set();
    earlyTimer_.reset();
  }
  if (!next || *next >= reconciledAt + options_.alarmMinDelayMs) return;
  const int64_t now = ctx_.clock.now();
  auto timer = std::make_shared<EarlyTimer>();
  timer->next = *next;
  timer->cancelled = ctx_.makeEvent();
  earlyTimer_ = timer;
  ctx_.probe(scheduler_events::kTimerArm, {{"next", *next}, {"now", now}, {"min_delay", options_.alarmMinDelayMs}});
  ctx_.waitUntil(earlyTimerTask(std::move(timer)));
}

Task<void> Engine::earlyTimerTask(std::shared_ptr<EarlyTimer> timer) {
  const bool cancelled = co_await timer->cancelled->wait(std::max<int64_t>(timer->next - ctx_.clock.now(), 0));
  if (cancelled) co_return;
  if (earlyTimer_ == timer) earlyTimer_.reset();
  ctx_.probe(scheduler_events::kTimerFire, {{"next", timer->next}, {"now", ctx_.clock.now()}});
  try {
    co_await alarm(std::nullopt);
  } catch (...) {
    logFailure(std::current_exception(), "early_timer");
  }
}

// ---------------------------------------------------------------------------------------------
// The alarm entry point and handoff (scheduler.md 3.4)

struct Engine::AlarmRun {
  std::shared_ptr<AsyncEvent> done;
  std::exception_ptr error;
};

Task<void> Engine::alarm(std::optional<AlarmInvocationInfo> info) {
  const int64_t startedAt = ctx_.clock.now();
  if (info) ++stateChanges_;  // from here the runtime hides the firing alarm (runtime.md 7.3)
  ctx_.probe(scheduler_events::kAlarmStart, {{"platform", info.has_value()}});
  auto run = std::make_shared<AlarmRun>();
  run->done = ctx_.makeEvent();
  ctx_.waitUntil(runParticipants(startedAt, info, run));
  const int64_t remaining = std::max<int64_t>(options_.alarmHandoffMs - (ctx_.clock.now() - startedAt), 0);
  const bool finished = co_await run->done->wait(remaining);
  if (!finished) {
    co_await handoff();
    co_return;
  }
  if (run->error) std::rethrow_exception(run->error);
  Task<void> yielding = buggify::yieldIf(ctx_, buggify::kSchedulerYieldBeforeReschedule);
  co_await yielding;
  co_await scheduleNextAlarm();
  ctx_.probe(scheduler_events::kAlarmEnd, {{"started_at", startedAt}});
}

Task<void> Engine::runParticipants(int64_t startedAt, std::optional<AlarmInvocationInfo> info,
                                   std::shared_ptr<AlarmRun> run) {
  std::vector<Task<void>> runs;
  runs.reserve(participants_.size());
  for (Participant* participant : participants_) runs.push_back(participant->runDue(startedAt, info));
  Task<void> joined = when_all(std::move(runs));
  try {
    co_await joined;
  } catch (...) {
    run->error = std::current_exception();
  }
  run->done->set();
}

Task<void> Engine::handoff() {
  const int64_t now = ctx_.clock.now();
  const int64_t t = now + options_.alarmMinDelayMs;
  std::optional<int64_t> before, written;
  co_await ctx_.storage.transaction([&](StorageTxn& txn) {
    before = txn.getAlarm();
    if (!before || *before > t) {
      txn.setAlarm(t);
      written = t;
    }
  });
  ctx_.probe(scheduler_events::kHandoff, {{"now", now}, {"before", optionalJson(before)}, {"written", optionalJson(written)},
                             {"min_delay", options_.alarmMinDelayMs}});
}

// ---------------------------------------------------------------------------------------------
// Concurrency helpers (scheduler.md 3.5) and background work

struct Engine::ConcurrentRun {
  std::size_t count = 0;
  std::size_t nextIndex = 0;
  std::function<Task<void>(std::size_t)> worker;
  std::exception_ptr firstError;
};

Task<void> Engine::runConcurrent(std::size_t count, std::function<Task<void>(std::size_t)> worker) {
  auto run = std::make_shared<ConcurrentRun>();
  run->count = count;
  run->worker = std::move(worker);
  const std::size_t workers = std::min<std::size_t>(static_cast<std::size_t>(options_.alarmConcurrency), count);
  std::vector<Task<void>> tasks;
  tasks.reserve(workers);
  for (std::size_t i = 0; i < workers; ++i) tasks.push_back(concurrentWorker(run));
  Task<void> joined = when_all(std::move(tasks));
  co_await joined;
  if (run->firstError) std::rethrow_exception(run->firstError);
}

Task<void> Engine::concurrentWorker(std::shared_ptr<ConcurrentRun> run) {
  while (run->nextIndex < run->count) {
    const std::size_t index = run->nextIndex++;
    try {
      co_await run->worker(index);
    } catch (...) {
      if (!run->firstError) run->firstError = std::current_exception();
    }
  }
}

void Engine::background(Task<void> work, const char* what) { ctx_.waitUntil(logged(std::move(work), what)); }

Task<void> Engine::logged(Task<void> work, std::string what) {
  try {
    co_await std::move(work);
  } catch (...) {
    logFailure(std::current_exception(), what);
  }
}

void Engine::logFailure(std::exception_ptr failure, const std::string& what) {
  const ErrorInfo error = serializeError(failure);
  ctx_.logger.error("durability.background_execution.failed", {{"what", what}, {"error", error.message}, {"name", error.name}});
}

// ---------------------------------------------------------------------------------------------
// DurabilityScheduler (scheduler.md 2)

namespace {
const SchedulerOptions& validated(const SchedulerOptions& options) {
  if (options.alarmConcurrency <= 0) throw RangeError("alarmConcurrency must be a positive integer");
  if (options.alarmMinDelayMs < kMinAlarmMinDelayMs || options.alarmMinDelayMs > kMaxAlarmMinDelayMs)
    throw RangeError("alarmMinDelayMs must be between 1000 and 15000");
  if (options.alarmHandoffMs <= 0) throw RangeError("alarmHandoffMs must be a positive integer");
  return options;
}
}  // namespace

DurabilityScheduler::DurabilityScheduler(ObjectContext& ctx, SchedulerOptions options) : storage_(&ctx.storage) {
  validated(options);
  if (!attachedStorages().insert(storage_).second)
    throw TypeError("A DurabilityScheduler is already attached to this object");
  engine_ = std::make_unique<Engine>(ctx, options);
}

DurabilityScheduler::~DurabilityScheduler() { attachedStorages().erase(storage_); }

}  // namespace durasim
