// One incarnation of a simulated object: its segments and implicit transactions (runtime.md 4.2),
// confirmation and commit failures (4.5), the input and output gates (5), idleness (6.1), the end of
// the incarnation (6.2), incoming calls and alarm runs. Keeps RT-05..08, RT-10, RT-11, RT-19, which
// the mutants wall_clock_leak (RT-01), keep_open_txn_on_reset, confirm_out_of_order,
// zombie_storage_write, output_gate_bypass, input_gate_leak and memory_survives_reset break here
// when the World has them (sim/mutants.h).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>

#include "sim/async_event.h"
#include "sim/object_internals.h"

namespace durasim::sim {
namespace {

constexpr int64_t kClockOffsetMaxMs = 500;  // runtime.md 11.2 clock.incarnation_offset

std::string reset_message_for_storage(const std::string& error) { return "broken.outputGateBroken; " + error; }

// sim.mutant.wall_clock_leak: 0, 1 or 2 ms from the host's wall clock, which no seed decides (RT-01).
int64_t host_clock_ms_mod3() {
  return static_cast<int64_t>(std::chrono::system_clock::now().time_since_epoch().count() % 3);
}

}  // namespace

Incarnation::Incarnation(SimObject& object, int64_t number, const ObjectFactory& factory,
                         std::unique_ptr<Incarnation> predecessor)
    : object_(object),
      number_(number),
      predecessor_(std::move(predecessor)),
      group_(object.runtime().world().executor(), this),
      storage_(*this),
      random_(object.runtime().world().random(), object.runtime().world().random().stream("object.random")) {
  ObjectRuntime& runtime = object.runtime();
  World& world = runtime.world();
  // clock.incarnation_offset (arbitrary): this incarnation's now() is the World's plus a constant.
  runtime.faults().fires(FaultKind::clock_incarnation_offset, site("start"), [&] {
    clock_offset_ = world.random().between(world.random().stream("clock.offset"), -kClockOffsetMaxMs, kClockOffsetMaxMs);
    return nlohmann::json{{"offset", clock_offset_}};
  });
  idle_stream_ = world.random().stream("object.idle");
  bind_context();
  world.emit("incarnation.start", {{"object", object.label()}, {"incarnation", number}});
  // RT-17: a new incarnation opens exactly the durable state the last durability decision chose.
  SqliteStore& store = object.store();
  runtime.self_checks().check("RT-17", store.live_is_durable(), [&] {
    return object.label() + " incarnation " + std::to_string(number) + " does not open the durable state";
  });
  in_segment_ = true;
  try {
    // A new instance, its constructor the first segment (RT-19) -- but under
    // sim.mutant.memory_survives_reset the reset predecessor's instance, memory and all.
    if (predecessor_) instance_ = std::move(predecessor_->instance_);
    else instance_ = factory(*context_);
  } catch (const std::exception& e) {
    log("error", "runtime.constructor.failed", {{"error", e.what()}});
    doom(ResetError{EndCause::abort, "broken.reset; Durable Object was reset"});
  }
  in_segment_ = false;
  constructing_ = false;
  commit_segment();
  if (doomed_) doom(*doomed_);  // the constructor failed: end now, not at a segment that never runs
  update_idle();
}

Incarnation::~Incarnation() {
  // end() has already destroyed the frames; this only releases memory.
}

ObjectContext Incarnation::make_context() {
  ObjectRuntime& runtime = object_.runtime();
  return ObjectContext{
      {object_.class_name(), object_.name()},
      number_,
      storage_,
      *this,
      *this,
      *this,
      [this](Task<void> work) {
        group_.spawn("waitUntil", std::move(work), [this](std::exception_ptr error) {
          if (!error) return;
          try {
            std::rethrow_exception(error);
          } catch (const std::exception& e) {
            log("error", "runtime.wait_until.failed", {{"error", e.what()}});
          }
        });
      },
      [&runtime](std::string_view site) { return runtime.buggify() ? runtime.buggify()(site) : runtime.faults().buggify(site); },
      runtime.options().variants,
      *this};
}

// An adopted instance (sim.mutant.memory_survives_reset) holds a reference to its predecessor's
// context: that object is rebuilt in place for this incarnation (same address and type, so the
// reference now names the new one), and the predecessor stays allocated behind it, so whatever the
// instance kept of the old context refers to an ended incarnation, never to freed memory.
void Incarnation::bind_context() {
  if (!predecessor_) {
    context_ = std::make_unique<ObjectContext>(make_context());
    return;
  }
  context_ = std::move(predecessor_->context_);
  std::destroy_at(context_.get());
  std::construct_at(context_.get(), make_context());
}

bool Incarnation::holds_instance() const { return instance_ != nullptr; }

// ---------------------------------------------------------------------------------------------
// Segments and the input gate

bool Incarnation::admits(const TaskScope& scope) const {
  if (zombie_) return true;  // a zombie's frames run on until its grace period ends
  if (doomed_) return std::find(rescued_.begin(), rescued_.end(), scope.id()) != rescued_.end();
  return !section_holds_gate() || std::find(sections_.begin(), sections_.end(), &scope) != sections_.end();
}

// An open blockConcurrencyWhile section holds the input gate (RT-11) -- not under
// sim.mutant.input_gate_leak, whose sections let every event in.
bool Incarnation::section_holds_gate() const {
  return !sections_.empty() && !object_.runtime().world().mutants().input_gate_leak;
}

// RT-11: segments of one object never overlap, and while a blockConcurrencyWhile section is open
// only its own continuations run.
void Incarnation::segment_begin(TaskScope& scope) {
  const bool inside_section = sections_.empty() || std::find(sections_.begin(), sections_.end(), &scope) != sections_.end();
  object_.runtime().self_checks().check("RT-11", !in_segment_ && (inside_section || doomed_), [&] {
    return object_.label() + ": a segment of '" + scope.name() + "' started " +
           (in_segment_ ? "inside another segment" : "inside another task's blockConcurrencyWhile section");
  });
  in_segment_ = true;
}

void Incarnation::segment_end(TaskScope&) {
  in_segment_ = false;
  if (zombie_) {
    // A zombie cannot write: nothing to commit, no faults to offer -- unless its storage calls go
    // through (sim.mutant.zombie_storage_write).
    if (object_.runtime().world().mutants().zombie_storage_write) commit_zombie_writes();
    return;
  }
  commit_segment();
  // object.reset: every segment end is a suspension point (or a completion) of the object.
  if (!doomed_ && object_.runtime().faults().fires(FaultKind::object_reset, site("suspend")))
    doom(ResetError{EndCause::injected, "broken.reset; Durable Object was reset"});
  if (doomed_ && end_timer_ == kNoTimer) doom(*doomed_);
  update_idle();
}

void Incarnation::system_segment(const std::function<void()>& body) {
  if (!alive_ || doomed_) return;
  in_segment_ = true;
  try {
    body();
  } catch (const std::exception& e) {
    log("error", "runtime.system_write.failed", {{"error", e.what()}});
  }
  in_segment_ = false;
  commit_segment();
  if (doomed_ && end_timer_ == kNoTimer) doom(*doomed_);
  update_idle();
}

// ---------------------------------------------------------------------------------------------
// Local commit and confirmation

uint64_t Incarnation::watermark() const {
  const SqliteStore& store = object_.store();
  return store.in_transaction() ? store.next_commit_number() : object_.last_local;
}

void Incarnation::commit_segment() {
  SqliteStore& store = object_.store();
  if (!store.in_transaction()) return;
  // A reset discards the open implicit transaction (RT-06); sim.mutant.keep_open_txn_on_reset
  // commits it like any other.
  if (doomed_ && !object_.runtime().world().mutants().keep_open_txn_on_reset) {
    store.rollback_open();
    return;
  }
  FaultInjector& faults = object_.runtime().faults();
  const std::optional<int64_t> alarm = store.get_alarm();
  if (faults.fires(FaultKind::alarm_schedule_reject, site("commit"))) {
    store.rollback_open();
    storage_.open_after_commit_.clear();
    break_gate();
    doom(ResetError{EndCause::storage, reset_message_for_storage("alarm scheduling was rejected")});
    return;
  }
  if (faults.fires(FaultKind::storage_commit_definite, site("commit"))) {
    store.rollback_open();
    storage_.open_after_commit_.clear();
    fail_commit(StorageCommitError::Outcome::definite);
    return;
  }
  const std::optional<LocalCommit> commit = store.commit_local();
  if (!commit) {
    // Nothing changed after all: whatever waited for this commit waits for the previous one, and
    // so do its after-commit hooks (they run now if every earlier commit is already confirmed).
    std::vector<std::function<void()>> hooks = std::move(storage_.open_after_commit_);
    storage_.open_after_commit_.clear();
    if (!hooks.empty()) object_.runtime().world().emit("commit.noop", {{"object", object_.label()}, {"incarnation", number_}});
    if (!pending_.empty()) {
      auto& later = pending_.rbegin()->second.after_commit;
      later.insert(later.end(), std::make_move_iterator(hooks.begin()), std::make_move_iterator(hooks.end()));
    } else if (!hooks.empty()) {
      system_segment([&] {
        for (auto& hook : hooks) hook();
      });
    }
    release_effects();
    settle_waiters();
    return;
  }
  std::vector<std::function<void()>> hooks = std::move(storage_.open_after_commit_);
  storage_.open_after_commit_.clear();
  await_confirmation(*commit, alarm, std::move(hooks), number_);
}

void Incarnation::await_confirmation(const LocalCommit& commit, std::optional<int64_t> alarm,
                                     std::vector<std::function<void()>> after_commit, int64_t writer) {
  object_.manager_consider_earlier(alarm);
  object_.last_local = commit.number;
  PendingCommit pending;
  pending.number = commit.number;
  pending.alarm_after = alarm;
  pending.after_commit = std::move(after_commit);
  pending_.emplace(commit.number, std::move(pending));
  emit_commit(commit, alarm, writer);
  schedule_confirmation(commit);
}

void Incarnation::emit_commit(const LocalCommit& commit, std::optional<int64_t> alarm, int64_t writer) {
  char changes[17];
  std::snprintf(changes, sizeof changes, "%016llx", static_cast<unsigned long long>(commit.changes_hash));
  object_.runtime().world().emit("commit", EventFields()
                                               .add("object", object_.label())
                                               .add("incarnation", writer)
                                               .add("commit", commit.number)
                                               .add("changes", changes)
                                               .add("alarm", json_or_null(alarm)));
}

// sim.mutant.zombie_storage_write: what a zombie's segment wrote commits as its own (RT-08),
// awaiting confirmation among the live incarnation's commits, or durable at once when none is live
// (every earlier commit was then settled by the last durability decision).
void Incarnation::commit_zombie_writes() {
  SqliteStore& store = object_.store();
  const std::optional<int64_t> alarm = store.get_alarm();
  const std::optional<LocalCommit> commit = store.commit_local();
  storage_.open_after_commit_.clear();
  if (!commit) return;
  if (Incarnation* live = object_.live()) {
    live->await_confirmation(*commit, alarm, {}, number_);
    return;
  }
  object_.manager_consider_earlier(alarm);
  emit_commit(*commit, alarm, number_);
  store.confirm(commit->number);
  object_.last_local = object_.last_confirmed = commit->number;
  object_.runtime().world().emit("confirm", EventFields().add("object", object_.label()).add("incarnation", number_).add("commit", commit->number));
  object_.manager_after_confirm(alarm);
}

void Incarnation::schedule_confirmation(const LocalCommit& commit) {
  World& world = object_.runtime().world();
  FaultInjector& faults = object_.runtime().faults();
  RandomSource& random = world.random();
  const StreamId stream = random.stream("storage.latency");
  int64_t latency = faults.latency(LatencyKind::confirm);
  if (world.mutants().wall_clock_leak) latency += host_clock_ms_mod3();
  bool gate_timeout = false;
  if (faults.fires(FaultKind::storage_gate_timeout, site("confirm"), [&] {
        latency = random.between(stream, kGateTimeoutMs + 1, 2 * kGateTimeoutMs);
        return nlohmann::json{{"latency", latency}};
      })) {
    gate_timeout = true;
  } else {
    faults.fires(FaultKind::storage_confirm_latency, site("confirm"), [&] {
      const int64_t tail = random.between(stream, 100, 5'000);
      latency += tail;
      return nlohmann::json{{"tail", tail}};
    });
  }
  latency += object_.storage_slow_delay();  // episode.storage_slow
  // c_k = max(c_{k-1}, commit time + latency_k): commits confirm in order (RT-07). Under
  // sim.mutant.confirm_out_of_order each confirms when its own latency is over.
  const int64_t confirm_at = world.mutants().confirm_out_of_order ? world.now() + latency
                                                                  : std::max(object_.last_confirm_at, world.now() + latency);
  object_.last_confirm_at = std::max(object_.last_confirm_at, confirm_at);
  PendingCommit& pending = pending_.at(commit.number);
  pending.confirm_at = confirm_at;
  pending.gate_timeout = gate_timeout;
  const uint64_t number = commit.number;
  pending.timer = world.executor().at(confirm_at, [this] { confirm_due(); });
  if (gate_timeout) {
    // This timer is not cancelled at the end: reach the incarnation through its object, since an
    // ended one may already be freed (as the idle and limit timers do).
    SimObject* object = &object_;
    const int64_t incarnation = number_;
    world.executor().at(world.now() + kGateTimeoutMs, [object, incarnation, number] {
      Incarnation* live = object->live();
      if (!live || live->number() != incarnation || !live->pending_.count(number) || live->doomed_) return;
      live->break_gate();
      live->doom(ResetError{EndCause::gate_timeout,
                            "Durable Object storage operation exceeded timeout which caused object to be reset.", true});
    });
  }
}

// The pending commit to confirm now, if any: the first one, once its time has come. Under
// sim.mutant.confirm_out_of_order, the first one whose own time has come.
std::map<uint64_t, PendingCommit>::iterator Incarnation::next_confirmation() {
  const int64_t now = object_.runtime().world().now();
  const auto due = [now](const auto& entry) { return entry.second.confirm_at <= now; };
  if (object_.runtime().world().mutants().confirm_out_of_order) return std::find_if(pending_.begin(), pending_.end(), due);
  return pending_.empty() || !due(*pending_.begin()) ? pending_.end() : pending_.begin();
}

// Confirms, in commit order, every pending commit whose confirmation time has come (several may
// fall due at the same instant; the executor may run their events in any order).
void Incarnation::confirm_due() {
  for (auto next = next_confirmation(); alive_ && !doomed_ && next != pending_.end(); next = next_confirmation()) {
    const uint64_t number = next->first;
    next->second.timer = kNoTimer;
    if (object_.runtime().faults().fires(FaultKind::storage_commit_uncertain, site("confirm"))) {
      fail_commit(StorageCommitError::Outcome::uncertain);
      return;
    }
    if (object_.runtime().world().mutants().confirm_out_of_order) object_.store().confirm_overtaking(number);
    else object_.store().confirm(number);
    object_.last_confirmed = std::max(object_.last_confirmed, number);
    PendingCommit done = std::move(next->second);
    pending_.erase(next);
    object_.runtime().world().emit("confirm", EventFields().add("object", object_.label()).add("incarnation", number_).add("commit", number));
    if (pending_.empty()) object_.manager_after_confirm(done.alarm_after);
    if (!done.after_commit.empty()) {
      system_segment([&] {
        for (auto& hook : done.after_commit) hook();
      });
    }
    release_effects();
    settle_waiters();
  }
  update_idle();
}

void Incarnation::fail_commit(StorageCommitError::Outcome outcome) {
  const StorageCommitError error(outcome);
  object_.runtime().world().emit("commit.failed", {{"object", object_.label()},
                                                   {"incarnation", number_},
                                                   {"outcome", outcome == StorageCommitError::Outcome::definite ? "definite" : "uncertain"}});
  poison = SqlCriticalError(SqlCriticalError::Code::ioerr, error.what());
  break_gate();
  // Waiters see the commit error; the reset follows at their next suspension point.
  for (DurabilityWaiter& waiter : waiters_) {
    if (const TaskScope* scope = waiter.shot->waiting_scope()) rescued_.push_back(scope->id());
    waiter.shot->set_error(std::make_exception_ptr(error));
  }
  waiters_.clear();
  doom(ResetError{EndCause::storage, reset_message_for_storage(error.what())});
}

void Incarnation::hold(std::string_view kind, std::function<void()> release, std::function<void()> drop) {
  const uint64_t produced = ++effects_produced_;
  if (zombie_) {
    // A zombie's calls and cold-store requests still leave (runtime.md 6.3); its callers already
    // had their reset error, so a reply goes nowhere. Not gated: it has no commit to wait for.
    if (kind == "reply") {
      emit_effect("effect.dropped", kind, produced, object_.last_confirmed);
      drop();
      return;
    }
    emit_effect("effect.zombie", kind, produced, object_.last_confirmed);
    release();
    return;
  }
  if (doomed_ || !alive_) {
    emit_effect("effect.dropped", kind, produced, watermark());
    drop();
    return;
  }
  const uint64_t required = watermark();
  if (held_.empty() && required <= object_.last_confirmed) {
    emit_effect("effect", kind, produced, required);
    release();
    return;
  }
  held_.push_back(Held{std::string(kind), produced, required, std::move(release), std::move(drop)});
}

// RT-10 evidence: each effect says which commit it waited for, and its production order.
void Incarnation::emit_effect(const char* event, std::string_view kind, uint64_t produced, uint64_t required) {
  object_.runtime().world().emit(event, EventFields()
                                            .add("object", object_.label())
                                            .add("incarnation", number_)
                                            .add("kind", kind)
                                            .add("produced", produced)
                                            .add("required", required)
                                            .add("confirmed", object_.last_confirmed));
}

void Incarnation::release_effects() {
  const uint64_t ceiling = std::min(object_.last_local, watermark());
  while (!held_.empty() && std::min(held_.front().required, ceiling) <= object_.last_confirmed) {
    Held effect = std::move(held_.front());
    held_.pop_front();
    // The commit it waited for: an open transaction that committed nothing leaves only `ceiling`.
    emit_effect("effect", effect.kind, effect.produced, std::min(effect.required, ceiling));
    effect.release();
  }
}

void Incarnation::break_gate() {
  std::deque<Held> dropped = std::move(held_);
  held_.clear();
  for (Held& effect : dropped) {
    emit_effect("effect.dropped", effect.kind, effect.produced, effect.required);
    effect.drop();
  }
}

Task<void> Incarnation::wait_durable(uint64_t number) {
  if (number <= object_.last_confirmed) co_return;
  auto shot = std::make_shared<OneShot<Done>>(object_.runtime().world().executor());
  waiters_.push_back(DurabilityWaiter{number, shot});
  ++busy_;
  struct Leave {
    Incarnation* self;
    ~Leave() { self->end_external_wait(); }
  } leave{this};
  co_await *shot;
}

void Incarnation::settle_waiters() {
  const uint64_t ceiling = std::min(object_.last_local, watermark());
  std::erase_if(waiters_, [&](DurabilityWaiter& waiter) {
    if (std::min(waiter.required, ceiling) > object_.last_confirmed) return false;
    waiter.shot->set_value(Done{});
    return true;
  });
}

void Incarnation::end_external_wait() {
  if (busy_ > 0) --busy_;
}

// ---------------------------------------------------------------------------------------------
// Ending: doom, reset, hibernation, eviction

void Incarnation::doom(const ResetError& error) {
  if (!alive_) return;
  if (!doomed_) doomed_ = error;
  if (in_segment_ || end_timer_ != kNoTimer) return;
  Executor& executor = object_.runtime().world().executor();
  // Rescued waiters (of a failed commit) get one segment to see the error before the end.
  const int64_t delay = rescued_.empty() ? 0 : 1;
  SimObject* object = &object_;
  const int64_t number = number_;
  const ResetError reason = *doomed_;
  end_timer_ = executor.at(executor.clock().now() + delay, [object, number, reason] {
    if (object->live() && object->live()->number() == number) object->end_live(reason);
  });
}

void Incarnation::end(const ResetError& error, bool zombie) {
  World& world = object_.runtime().world();
  const bool reset = error.cause != EndCause::hibernate && error.cause != EndCause::evict;
  alive_ = false;
  zombie_ = zombie;
  cancel_timers();
  // Every frame of the incarnation goes, without resuming any (RT-19) -- unless it lingers as a
  // zombie (runtime.md 6.3), whose frames run on without storage until its grace period ends.
  if (!zombie) group_.cancel_all();

  SqliteStore& store = object_.store();
  store.rollback_open();
  const auto unconfirmed = static_cast<int64_t>(pending_.size());
  if (unconfirmed > 0) {
    const int64_t kept = world.random().between(world.random().stream("storage.durability"), 0, unconfirmed);
    // Commits an overtaking confirmation already made durable (sim.mutant.confirm_out_of_order) are
    // no longer the store's to decide.
    const int64_t already_durable = unconfirmed - static_cast<int64_t>(store.unconfirmed().size());
    store.decide(static_cast<std::size_t>(std::max<int64_t>(0, kept - already_durable)));
    auto it = pending_.begin();
    for (int64_t i = 0; i < kept; ++i, ++it) object_.last_confirmed = std::max(object_.last_confirmed, it->first);
    world.emit("durability", {{"object", object_.label()}, {"incarnation", number_}, {"kept", kept}, {"unconfirmed", unconfirmed}});
  } else {
    store.decide(0);
  }
  pending_.clear();
  object_.last_local = object_.last_confirmed;  // vanished commits are no one's watermark any more
  break_gate();
  RpcError::Flags flags;
  flags.durableObjectReset = true;
  flags.overloaded = error.overloaded;
  for (const std::shared_ptr<Reply>& reply : incoming_)
    reply->set_error(std::make_exception_ptr(RpcError(RpcError::Kind::reset, flags, error.message)));
  incoming_.clear();
  gated_.clear();
  waiters_.clear();
  world.emit("incarnation.end", {{"object", object_.label()},
                                 {"incarnation", number_},
                                 {"reset", reset},
                                 {"cause", error.message}});
  if (alarm_info_) {
    const bool counted = error.cause == EndCause::alarm_limit;
    const int64_t scheduled = alarm_info_->scheduledTime;
    alarm_info_.reset();
    object_.alarm_outcome(scheduled, counted ? AlarmFailure::counted : AlarmFailure::uncounted);
  }
  // Its memory goes with it (RT-19); its destructor may not touch storage: every call now throws.
  // Under sim.mutant.memory_survives_reset a reset keeps the instance for the next incarnation.
  if (!zombie && !(reset && world.mutants().memory_survives_reset)) instance_.reset();
  object_.manager_after_confirm(store.get_alarm());
}

// The incarnation's own timers: idleness, the alarm limit, a scheduled end, pending confirmations.
void Incarnation::cancel_timers() {
  Executor& executor = object_.runtime().world().executor();
  for (TimerId timer : {idle_timer_, alarm_limit_timer_, end_timer_})
    if (timer != kNoTimer) executor.cancel(timer);
  for (auto& [number, pending] : pending_)
    if (pending.timer != kNoTimer) executor.cancel(pending.timer);
}

void Incarnation::shutdown() {
  alive_ = false;
  zombie_ = false;  // from here on nothing of it is observable (probes from frame destructors drop)
  cancel_timers();
  group_.cancel_all();
  instance_.reset();
}

void Incarnation::update_idle() {
  if (!alive_ || doomed_) return;
  Executor& executor = object_.runtime().world().executor();
  if (idle_timer_ != kNoTimer) executor.cancel(idle_timer_);
  idle_timer_ = kNoTimer;
  // Live roots that are not parked on a timer are runnable or waiting on something: not idle.
  const bool idle = !in_segment_ && busy_ == 0 && pending_.empty() && held_.empty() && gated_.empty() &&
                    sections_.empty() && !alarm_info_ && (group_.live() == 0 || sleeping_ > 0);
  if (!idle) return;
  const bool timers = group_.live() > 0;
  RandomSource& random = object_.runtime().world().random();
  const int64_t after = timers ? random.between(idle_stream_, kEvictIdleMinMs, kEvictIdleMaxMs) : kHibernateIdleMs;
  SimObject* object = &object_;
  const int64_t number = number_;
  idle_timer_ = executor.at(executor.clock().now() + after, [object, number, timers] {
    if (!object->live() || object->live()->number() != number) return;
    object->live()->idle_timer_ = kNoTimer;
    object->end_live(ResetError{timers ? EndCause::evict : EndCause::hibernate, timers ? "evicted" : "hibernated"});
  });
}

// ---------------------------------------------------------------------------------------------
// Incoming calls and alarm runs

void Incarnation::deliver_call(std::string method, nlohmann::json args, std::shared_ptr<Reply> reply) {
  incoming_.push_back(reply);
  ++busy_;
  if (doomed_ || !instance_) {
    doom(doomed_.value_or(ResetError{EndCause::abort, "broken.reset; Durable Object was reset"}));
    return;
  }
  // Started once, so the call's method and arguments move into it.
  auto start = [this, method = std::move(method), args = std::move(args), reply]() mutable {
    std::string name = "call." + method;
    group_.spawn_now(std::move(name), run_call(std::move(method), std::move(args), reply));
  };
  if (section_holds_gate()) {
    gated_.push_back(std::move(start));
    return;
  }
  start();
}

Task<void> Incarnation::run_call(std::string method, nlohmann::json args, std::shared_ptr<Reply> reply) {
  std::optional<nlohmann::json> result;
  std::exception_ptr error;
  try {
    result = co_await instance_->call(method, args);
  } catch (const std::exception& e) {
    RpcError::Flags flags;
    flags.remote = true;
    error = std::make_exception_ptr(RpcError(RpcError::Kind::remote, flags, e.what()));
  }
  // Released once, so the result moves through it to the caller.
  auto send = [this, reply, result = std::move(result), error]() mutable {
    std::erase(incoming_, reply);
    end_external_wait();
    if (error) reply->set_error(error);
    else reply->set_value(std::move(*result));
  };
  // The reply is an outbound effect (RT-10); sim.mutant.output_gate_bypass sends it at once.
  if (object_.runtime().world().mutants().output_gate_bypass) send();
  else hold("reply", std::move(send), [] {});
}

void Incarnation::run_alarm(AlarmInvocationInfo info) {
  if (instance_ && !instance_->hasAlarmHandler()) {
    // runtime.md 7.1: an alarm a handler-less class set in its constructor is dropped without a call.
    system_segment([this] { object_.store().delete_alarm(); });
    return;
  }
  ++busy_;
  alarm_info_ = info;
  alarm_touched = false;
  object_.set_alarm_running(true);
  World& world = object_.runtime().world();
  world.emit("alarm.run", {{"object", object_.label()},
                           {"incarnation", number_},
                           {"scheduled", info.scheduledTime},
                           {"retryCount", info.retryCount}});
  SimObject* object = &object_;
  const int64_t number = number_;
  alarm_limit_timer_ = world.executor().at(world.now() + kAlarmHandlerLimitMs, [object, number] {
    Incarnation* live = object->live();
    if (!live || live->number() != number) return;
    live->alarm_limit_timer_ = kNoTimer;
    live->doom(ResetError{EndCause::alarm_limit, "Alarm exceeded its allowed execution time", true});
  });
  auto start = [this, info] { group_.spawn_now("alarm", run_alarm_handler(info)); };
  if (section_holds_gate()) {
    gated_.push_back(std::move(start));
    return;
  }
  start();
}

Task<void> Incarnation::run_alarm_handler(AlarmInvocationInfo info) {
  std::optional<AlarmFailure> failure;
  // RT-13: from the handler's start the alarm reads as none. (Not asked of poisoned storage, whose
  // every call throws: a run started in a doomed incarnation fails at its first storage access.)
  if (!poison) object_.runtime().self_checks().check("RT-13", !storage_.getAlarm().has_value(), [&] {
    return object_.label() + ": getAlarm() inside the handler of " + std::to_string(info.scheduledTime) + " is not none";
  });
  try {
    co_await instance_->alarm(info);
    co_await storage_.sync();
  } catch (const SqlCriticalError& e) {
    failure = e.code() == SqlCriticalError::Code::interrupt ? AlarmFailure::counted : AlarmFailure::uncounted;
  } catch (const StorageCommitError&) {
    failure = AlarmFailure::uncounted;
  } catch (const ObjectResetError&) {
    failure = AlarmFailure::uncounted;
  } catch (...) {
    failure = AlarmFailure::counted;
  }
  if (!failure && !alarm_touched && alive_) {
    object_.store().delete_alarm();  // the deferred delete
    object_.runtime().self_checks().check("RT-13", !object_.store().get_alarm().has_value(), [&] {
      return object_.label() + ": the alarm survived its handler's success";
    });
  }
  finish_alarm(failure);
}

void Incarnation::finish_alarm(std::optional<AlarmFailure> failure) {
  if (!alarm_info_) return;
  const int64_t scheduled = alarm_info_->scheduledTime;
  alarm_info_.reset();
  end_external_wait();
  if (alarm_limit_timer_ != kNoTimer) object_.runtime().world().executor().cancel(alarm_limit_timer_);
  alarm_limit_timer_ = kNoTimer;
  object_.alarm_outcome(scheduled, failure);
}

// ---------------------------------------------------------------------------------------------
// ObjectServices

namespace {
struct CurrentScope {
  TaskScope* scope = nullptr;
  bool await_ready() const noexcept { return false; }
  template <detail::TaskPromise P>
  bool await_suspend(std::coroutine_handle<P> frame) noexcept {
    scope = frame.promise().scope;
    return false;
  }
  TaskScope* await_resume() const noexcept { return scope; }
};
}  // namespace

Task<void> Incarnation::blockConcurrencyWhile(std::function<Task<void>()> body) { return bcw_section(std::move(body)); }

Task<void> Incarnation::bcw_section(std::function<Task<void>()> body) {
  TaskScope* scope = co_await CurrentScope{};
  sections_.push_back(scope);
  Executor& executor = object_.runtime().world().executor();
  SimObject* object = &object_;
  const int64_t number = number_;
  const TimerId timeout = executor.at(executor.clock().now() + kBlockConcurrencyTimeoutMs, [object, number] {
    Incarnation* live = object->live();
    if (!live || live->number() != number) return;
    live->doom(ResetError{EndCause::bcw_timeout,
                          "A call to blockConcurrencyWhile() in a Durable Object waited for too long. The call was "
                          "canceled and the Durable Object was reset.",
                          true});
  });
  struct Close {
    Incarnation* self;
    TaskScope* scope;
    TimerId timeout;
    ~Close() {
      self->object_.runtime().world().executor().cancel(timeout);
      std::erase(self->sections_, scope);
      if (self->sections_.empty() && self->alive_) {
        std::deque<std::function<void()>> gated = std::move(self->gated_);
        self->gated_.clear();
        Executor& executor = self->object_.runtime().world().executor();
        for (auto& start : gated) executor.at(executor.clock().now(), std::move(start));
        self->group_.resume_deferred();
      }
    }
  } close{this, scope, timeout};
  try {
    co_await body();
  } catch (const std::exception& e) {
    doom(ResetError{EndCause::bcw_throw, "broken.reset; Durable Object was reset"});
    throw;
  }
}

std::shared_ptr<AsyncEvent> Incarnation::makeEvent() {
  return std::make_shared<SimAsyncEvent>(object_.runtime().world().executor(), sleeping_);
}

void Incarnation::probe(std::string_view event, EventFields fields) {
  if (!alive_ && !zombie_) return;  // frames being destroyed at the end observe nothing (RT-19)
  fields["object"] = object_.label();
  fields["incarnation"] = number_;
  object_.runtime().world().emit(event, std::move(fields));
}

void Incarnation::abort(std::string_view reason) {
  doom(ResetError{EndCause::abort, "broken.reset; Durable Object was reset"});
  throw ObjectResetError("Durable Object was reset: " + std::string(reason));
}

// ---------------------------------------------------------------------------------------------
// Clock, Random, Logger

int64_t Incarnation::now() const { return object_.runtime().world().now() + clock_offset_; }

namespace {
// A sleep of an incarnation: counted so idleness knows a timer is pending.
class IncarnationSleep {
 public:
  IncarnationSleep(Executor& executor, SimTime until, int64_t& sleeping, Tallies& checks)
      : inner_(executor, until), executor_(executor), until_(until), sleeping_(sleeping), checks_(checks) {}
  ~IncarnationSleep() {
    if (parked_) --sleeping_;
  }
  bool await_ready() const noexcept { return false; }
  template <detail::TaskPromise P>
  void await_suspend(std::coroutine_handle<P> frame) {
    inner_.await_suspend(frame);
    parked_ = true;
    ++sleeping_;
  }
  void await_resume() {
    parked_ = false;
    --sleeping_;
    const SimTime now = executor_.clock().now();
    checks_.check("RT-25", now >= until_, [&] {
      return "a sleep until " + std::to_string(until_) + " resumed at " + std::to_string(now);
    });
  }

 private:
  SleepAwaiter inner_;
  Executor& executor_;
  SimTime until_;
  int64_t& sleeping_;
  Tallies& checks_;
  bool parked_ = false;
};
}  // namespace

Task<void> Incarnation::sleepFor(int64_t ms) {
  if (ms < 0) throw std::invalid_argument("sleepFor requires ms >= 0, got " + std::to_string(ms));
  World& world = object_.runtime().world();
  co_await IncarnationSleep(world.executor(), world.now() + ms, sleeping_, object_.runtime().self_checks());
}

Task<void> Incarnation::sleepUntil(int64_t t) {
  World& world = object_.runtime().world();
  co_await IncarnationSleep(world.executor(), std::max(t - clock_offset_, world.now()), sleeping_,
                            object_.runtime().self_checks());
}

double Incarnation::random() { return random_.random(); }

std::string Incarnation::uuid() { return random_.uuid(); }

void Incarnation::log(std::string_view level, std::string_view event, const nlohmann::json& fields) {
  object_.runtime().world().emit("log", {{"object", object_.label()},
                                         {"incarnation", number_},
                                         {"level", level},
                                         {"event", event},
                                         {"fields", fields}});
}

}  // namespace durasim::sim
