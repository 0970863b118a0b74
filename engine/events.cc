// The event bus outside the poll (events.md 5, 6.1, 9): the context, emit, consumer validation,
// dead-letter listing and release. The poll and its loop: events_consumer.cc. Probes ("evt.*",
// engine/event_bus_events.h) report every write inside its unit and every decision.
#include "engine/events.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "engine/buggify.h"
#include "engine/conventions.h"
#include "engine/event_bus_events.h"
#include "engine/variants.h"

namespace durasim::events {

using nlohmann::json;
namespace ev = event_bus_events;

namespace {

bool has(const std::set<std::string>& flags, std::string_view flag) { return flags.count(std::string(flag)) > 0; }

// Refuses a call: probes the refusal, then throws `error`.
template <class E>
[[noreturn]] void refuse(const EventsContext& ctx, const char* op, std::string_view topic, E error) {
  ctx.probe(ev::kRejected, {{"op", op}, {"error", error.name()}, {"message", error.what()}, {"topic", validUtf8(topic)}});
  throw error;
}

json seqPayload(int64_t seq) { return json{{"seq", seq}}; }

Task<void> yieldIf(EventsContext& ctx, std::string_view site) {
  if (!ctx.fires(site)) co_return;
  Task<void> yielding = ctx.clock.sleepFor(0);
  co_await yielding;
}

json readsOf(const StoreStats& before, const StoreStats& after) {
  return JsonFields().add("lists", after.lists - before.lists).add("gets", after.gets - before.gets);
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Variants and context

EventsVariants EventsVariants::from(const std::set<std::string>& f) {
  EventsVariants v;
  v.orderByTimestamp = has(f, variants::kEventsOrderByTimestamp);
  v.timestampTruthiness = has(f, variants::kEventsTimestampTruthiness);
  v.releaseTwoStep = has(f, variants::kEventsReleaseTwoStep);
  v.unvalidatedMaxAttempts = has(f, variants::kEventsUnvalidatedMaxAttempts);
  v.depthCheckNonatomic = has(f, variants::kEventsDepthCheckNonatomic);
  v.fullRescan = has(f, variants::kEventsFullRescanWhenFrozen);
  v.failureTwoStep = has(f, variants::kEventsFailureTwoStep);
  v.plainPutOnAbsent = has(f, variants::kEventsPlainPutOnAbsent);
  v.listDeadFullScan = has(f, variants::kEventsListDeadFullScan);
  v.pollLoopDoubleChain = has(f, variants::kEventsPollLoopDoubleChain);
  v.unvalidatedOptions = has(f, variants::kEventsUnvalidatedOptions);
  v.unescapedKeys = has(f, variants::kEventsUnescapedKeys);
  return v;
}

json EventsVariants::names() const {
  json out = json::array();
  const std::pair<bool, std::string_view> all[] = {
      {orderByTimestamp, variants::kEventsOrderByTimestamp},     {timestampTruthiness, variants::kEventsTimestampTruthiness},
      {releaseTwoStep, variants::kEventsReleaseTwoStep},         {unvalidatedMaxAttempts, variants::kEventsUnvalidatedMaxAttempts},
      {depthCheckNonatomic, variants::kEventsDepthCheckNonatomic}, {fullRescan, variants::kEventsFullRescanWhenFrozen},
      {failureTwoStep, variants::kEventsFailureTwoStep},         {plainPutOnAbsent, variants::kEventsPlainPutOnAbsent},
      {listDeadFullScan, variants::kEventsListDeadFullScan},     {pollLoopDoubleChain, variants::kEventsPollLoopDoubleChain},
      {unvalidatedOptions, variants::kEventsUnvalidatedOptions}, {unescapedKeys, variants::kEventsUnescapedKeys}};
  for (const auto& [on, name] : all)
    if (on) out.push_back(name);
  return out;
}

EventsContext::EventsContext(WorkStore& w, Clock& c, Random& r, Logger& l, std::function<void(Task<void>)> wait,
                             std::function<bool(std::string_view)> bug, const std::set<std::string>& flagSet,
                             std::function<std::shared_ptr<AsyncEvent>()> event, std::function<void(std::string_view, EventFields)> sink)
    : work(w),
      clock(c),
      random(r),
      logger(l),
      waitUntil(std::move(wait)),
      buggify(std::move(bug)),
      variants(flagSet),
      makeEvent(std::move(event)),
      probeSink(std::move(sink)),
      flags(EventsVariants::from(flagSet)) {}

EventsContext EventsContext::of(ObjectContext& ctx, WorkStore& work) {
  ObjectContext* object = &ctx;
  return EventsContext(work, ctx.clock, ctx.random, ctx.logger, ctx.waitUntil, ctx.buggify, ctx.variants,
                       [object] { return object->makeEvent(); },
                       [object](std::string_view event, EventFields fields) { object->probe(event, std::move(fields)); });
}

// ---------------------------------------------------------------------------------------------
// emit (events.md 5)

EventDepthExceededError::EventDepthExceededError(std::string t, int64_t d, int64_t m)
    : DurabilityError("topic depth limit exceeded (" + std::to_string(d) + " >= " + std::to_string(m) + ") for topic \"" + t + "\""),
      topic(std::move(t)),
      depth(d),
      maxDepth(m) {}

namespace {

// events.md 5 step 1; returns the id to use (step 2).
std::string validatedEmit(EventsContext& ctx, std::string_view topic, const json& payload, const EmitOptions& opts) {
  const bool lax = ctx.flags.unvalidatedOptions;
  if (topic.empty() && !lax) refuse(ctx, "emit", topic, TypeError("event topic must be a non-empty string"));
  if (opts.id && opts.id->empty() && !lax) refuse(ctx, "emit", topic, TypeError("event id must be a non-empty string"));
  if (opts.maxDepth && *opts.maxDepth < 0 && !lax) refuse(ctx, "emit", topic, RangeError("maxDepth must be a non-negative integer"));
  if (!serialize(payload)) refuse(ctx, "emit", topic, TypeError("event payload is not serializable"));
  return opts.id ? *opts.id : ctx.random.uuid();
}

json writeProbe(std::string_view topic, const std::string& id, const AppendResult& appended, const json& payload, std::optional<int64_t> ts,
                std::optional<int64_t> depth, const EmitOptions& opts) {
  return JsonFields()
      .add("topic", topic)
      .add("id", id)
      .add("seq", appended.seq)
      .add("inserted", appended.inserted)
      .add("payload", appended.inserted ? json(*serialize(payload)) : json())
      .add("ts", ts ? json(*ts) : json())
      .add("depth", depth ? json(*depth) : json())
      .add("maxDepth", opts.maxDepth ? json(*opts.maxDepth) : json());
}

// events.md 5 step 3, in the unit `txn`: the existing record, or the depth check and the append.
std::pair<std::string, AppendResult> appendChecked(EventsContext& ctx, WorkTxn& txn, std::string_view topic, std::string id,
                                                   const json& payload, const EmitOptions& opts) {
  const std::string ns = ctx.keys(topic).log();
  if (opts.id) {
    if (std::optional<LogRecord> existing = txn.getRecord(ns, id)) {
      AppendResult found{id, existing->seq, false};
      ctx.probe(ev::kEmitWrite, writeProbe(topic, id, found, payload, std::nullopt, std::nullopt, opts));
      return {id, found};
    }
  }
  std::optional<int64_t> depth;
  if (opts.maxDepth) {
    depth = txn.count(ns, std::max<int64_t>(*opts.maxDepth, 0));
    if (*depth >= *opts.maxDepth) {
      ctx.probe(ev::kEmitRefused, {{"topic", topic}, {"id", id}, {"depth", *depth}, {"maxDepth", *opts.maxDepth}});
      throw EventDepthExceededError(std::string(topic), *depth, *opts.maxDepth);
    }
  }
  const AppendResult appended = txn.append(ns, id, payload);
  ctx.probe(ev::kEmitWrite, writeProbe(topic, id, appended, payload, ctx.clock.now(), depth, opts));
  return {id, appended};
}

// Variant events.depth_check_nonatomic: the depth counted by paging, stopping at the first page
// boundary where it reaches maxDepth (the reference's count).
int64_t pagedDepth(WorkTxn& txn, const std::string& ns, int64_t maxDepth) {
  int64_t depth = 0, after = 0;
  while (true) {
    const LogPage page = txn.list(ns, after, kPageSize);
    depth += static_cast<int64_t>(page.items.size());
    if (!page.more || depth >= maxDepth || page.items.empty()) return depth;
    after = page.items.back().seq;
  }
}

}  // namespace

std::string emitIn(EventsContext& ctx, WorkTxn& txn, std::string_view topic, const json& payload, EmitOptions opts) {
  std::string id = validatedEmit(ctx, topic, payload, opts);
  return appendChecked(ctx, txn, topic, std::move(id), payload, opts).first;
}

Task<std::string> emit(EventsContext& ctx, std::string topic, json payload, EmitOptions opts) {
  std::string id = validatedEmit(ctx, topic, payload, opts);
  AppendResult appended;
  if (ctx.flags.depthCheckNonatomic) {
    const std::string ns = ctx.keys(topic).log();
    std::optional<int64_t> depth;
    if (opts.maxDepth) depth = pagedDepth(ctx.work, ns, *opts.maxDepth);
    Task<void> yielding = yieldIf(ctx, buggify::kEventsYieldBetweenSteps);
    co_await yielding;
    if (depth && *depth >= *opts.maxDepth) {
      ctx.probe(ev::kEmitRefused, {{"topic", topic}, {"id", id}, {"depth", *depth}, {"maxDepth", *opts.maxDepth}});
      throw EventDepthExceededError(topic, *depth, *opts.maxDepth);
    }
    ctx.work.atomically([&](WorkTxn& txn) {
      appended = txn.append(ns, id, payload);
      ctx.probe(ev::kEmitWrite, writeProbe(topic, id, appended, payload, ctx.clock.now(), depth, opts));
    });
  } else {
    appended = ctx.work.atomically([&](WorkTxn& txn) { return appendChecked(ctx, txn, topic, id, payload, opts).second; });
  }
  Task<void> syncing = ctx.work.sync();
  co_await syncing;
  ctx.probe(ev::kEmit, {{"topic", topic}, {"id", id}, {"seq", appended.seq}, {"inserted", appended.inserted}});
  co_return id;
}

// ---------------------------------------------------------------------------------------------
// createConsumer (events.md 6.1)

std::shared_ptr<Consumer> createConsumer(EventsContext& ctx, std::string topic, EventHandler handler, ConsumerOptions opts) {
  const bool lax = ctx.flags.unvalidatedOptions;
  const char* op = "createConsumer";
  if (topic.empty() && !lax) refuse(ctx, op, topic, TypeError("event topic must be a non-empty string"));
  if (!handler) refuse(ctx, op, topic, TypeError("event handler must be callable"));
  if (opts.name.empty() && !lax) refuse(ctx, op, topic, TypeError("consumer name is required"));
  if (opts.pollMs < 1 && !lax) refuse(ctx, op, topic, RangeError("pollMs must be a positive integer"));
  if (opts.maxPollMs && *opts.maxPollMs < opts.pollMs && !lax) refuse(ctx, op, topic, RangeError("maxPollMs must be an integer >= pollMs"));
  const double m = opts.maxAttempts;
  const bool attemptsOk = !std::isnan(m) && m > 0 && (std::isinf(m) || m == std::floor(m));
  if (!attemptsOk && !ctx.flags.unvalidatedMaxAttempts)
    refuse(ctx, op, topic, RangeError("maxAttempts must be a positive integer or Infinity"));
  if (const double* d = std::get_if<double>(&opts.retryDelayMs)) {
    const bool ok = std::isfinite(*d) && *d >= 0 && jsRound(*d) <= static_cast<double>(kMaxSafeInteger);
    if (!ok && !lax) refuse(ctx, op, topic, RangeError("retryDelayMs must be a finite non-negative number of milliseconds"));
  }
  if (opts.handlerTimeoutMs && *opts.handlerTimeoutMs <= 0 && !lax) refuse(ctx, op, topic, RangeError("handlerTimeoutMs must be a positive integer"));
  return std::make_shared<Consumer>(Consumer::Private{}, ctx, std::move(topic), std::move(handler), std::move(opts));
}

// ---------------------------------------------------------------------------------------------
// Dead letters (events.md 9.1)

std::string_view toString(DeadStatus status) {
  switch (status) {
    case DeadStatus::quarantined: return "quarantined";
    case DeadStatus::released: return "released";
    case DeadStatus::delivered: return "delivered";
  }
  return "quarantined";
}

std::string_view toString(ReleaseOutcome outcome) {
  switch (outcome) {
    case ReleaseOutcome::released: return "released";
    case ReleaseOutcome::notQuarantined: return "notQuarantined";
    case ReleaseOutcome::alreadyDelivered: return "alreadyDelivered";
    case ReleaseOutcome::contended: return "contended";
  }
  return "released";
}

namespace {

void requireNames(EventsContext& ctx, const char* op, std::string_view topic, std::string_view consumer, const std::string* id) {
  if (ctx.flags.unvalidatedOptions) return;
  if (topic.empty()) refuse(ctx, op, topic, TypeError("event topic must be a non-empty string"));
  if (consumer.empty()) refuse(ctx, op, topic, TypeError("consumer name is required"));
  if (id && id->empty()) refuse(ctx, op, topic, TypeError("event id must be a non-empty string"));
}

DeadEvent deadEventOf(EventsContext& ctx, const std::string& topic, const std::string& consumer, const LogRecord& record, const json& dead,
                      bool acked) {
  const bool t = ctx.flags.timestampTruthiness;
  DeadEvent out;
  out.id = record.id;
  out.topic = topic;
  out.consumer = consumer;
  out.payload = record.payload;
  out.status = acked ? DeadStatus::delivered : isReleased(dead, t) ? DeadStatus::released : DeadStatus::quarantined;
  out.error = dead.is_object() && dead.contains("error") && dead.at("error").is_string() ? dead.at("error").get<std::string>() : "";
  out.attempts = intField(dead, "attempts").value_or(0);
  out.at = intField(dead, "at").value_or(0);
  out.releasedAt = intField(dead, "releasedAt");
  out.releases = intField(dead, "releases").value_or(0);
  return out;
}

}  // namespace

Task<std::vector<DeadEvent>> listDeadEvents(EventsContext& ctx, std::string topic, std::string consumer) {
  requireNames(ctx, "listDeadEvents", topic, consumer, nullptr);
  const Keys keys = ctx.keys(topic, consumer);
  const StoreStats before = ctx.work.stats();
  std::vector<std::pair<int64_t, DeadEvent>> found;
  if (ctx.flags.listDeadFullScan || ctx.flags.fullRescan) {
    // The reference: every record of the topic, one get each, one more per dead record.
    int64_t after = 0;
    while (true) {
      const LogPage page = ctx.work.list(keys.log(), after, kPageSize);
      for (const LogRecord& r : page.items) {
        const std::optional<json> dead = ctx.work.get(keys.dead(r.id));
        if (!dead) continue;
        const bool acked = ctx.work.get(keys.ack(r.id)).has_value();
        found.emplace_back(r.seq, deadEventOf(ctx, topic, consumer, r, *dead, acked));
      }
      if (!page.more || page.items.empty()) break;
      after = ctx.flags.orderByTimestamp ? after + static_cast<int64_t>(page.items.size()) : page.items.back().seq;
    }
  } else {
    int64_t after = 0;
    while (true) {
      const LogPage page = ctx.work.list(keys.deadIndex(), after, kPageSize);
      for (const LogRecord& entry : page.items) {
        const std::optional<json> dead = ctx.work.get(keys.dead(entry.id));
        const bool acked = ctx.work.get(keys.ack(entry.id)).has_value();
        const std::optional<LogRecord> record = ctx.work.getRecord(keys.log(), entry.id);
        if (!dead || !record) continue;
        found.emplace_back(record->seq, deadEventOf(ctx, topic, consumer, *record, *dead, acked));
      }
      if (!page.more || page.items.empty()) break;
      after = ctx.flags.orderByTimestamp ? after + static_cast<int64_t>(page.items.size()) : page.items.back().seq;
    }
  }
  std::stable_sort(found.begin(), found.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<DeadEvent> out;
  json listed = json::array();
  for (auto& [seq, e] : found) {
    listed.push_back({{"id", e.id}, {"seq", seq}, {"status", toString(e.status)}, {"attempts", e.attempts}, {"releases", e.releases}});
    out.push_back(std::move(e));
  }
  ctx.probe(ev::kList, {{"topic", topic}, {"consumer", consumer}, {"events", std::move(listed)}, {"reads", readsOf(before, ctx.work.stats())}});
  co_return out;
}

// ---------------------------------------------------------------------------------------------
// Release (events.md 9.2)

namespace {

struct ReleasePlan {
  json released;   // the dead record with the release applied
  json reset;      // the attempt record's fresh budget
  int64_t seq = 0; // for the pending entry
};

ReleasePlan planRelease(EventsContext& ctx, WorkTxn& txn, const Keys& keys, const std::string& id, const json& dead) {
  ReleasePlan plan;
  plan.released = dead;
  plan.released["releasedAt"] = ctx.clock.now();
  plan.released["releases"] = intField(dead, "releases").value_or(0) + 1;
  plan.reset = {{"n", 0}, {"nextAt", 0}, {"gen", stamp(plan.released, ctx.flags.timestampTruthiness)}};
  if (ctx.flags.timestampTruthiness) plan.reset["firstAt"] = 0;
  if (const std::optional<int64_t> seq = intField(dead, "seq"))
    plan.seq = *seq;
  else if (const std::optional<LogRecord> record = txn.getRecord(keys.log(), id))
    plan.seq = record->seq;
  return plan;
}

}  // namespace

Task<ReleaseOutcome> releaseDeadEvent(EventsContext& ctx, std::string topic, std::string consumer, std::string eventId) {
  requireNames(ctx, "retryDeadEvent", topic, consumer, &eventId);
  const Keys keys = ctx.keys(topic, consumer);
  const std::string deadKey = keys.dead(eventId), ackKey = keys.ack(eventId), attKey = keys.attempts(eventId);
  const EventFields who = {{"topic", topic}, {"consumer", consumer}, {"id", eventId}};
  auto finish = [&](ReleaseOutcome outcome, int tries) {
    EventFields fields = who;
    fields["outcome"] = toString(outcome);
    fields["tries"] = tries;
    ctx.probe(ev::kRelease, std::move(fields));
    return outcome;
  };
  auto written = [&](int attempt, const char* step, const char* outcome, const ReleasePlan* plan, bool withDead, bool withReset) {
    EventFields fields = who;
    fields["try"] = attempt;
    fields["step"] = step;
    fields["outcome"] = outcome;
    fields["dead"] = plan && withDead ? plan->released : json();
    fields["attempts"] = plan && withReset ? plan->reset : json();
    fields["seq"] = plan ? json(plan->seq) : json();
    ctx.probe(ev::kReleaseWrite, std::move(fields));
  };
  for (int attempt = 1; attempt <= kReleaseCasTries; ++attempt) {
    const std::optional<json> dead = ctx.work.get(deadKey);
    if (!dead) co_return finish(ReleaseOutcome::notQuarantined, attempt);
    if (ctx.work.get(ackKey)) co_return finish(ReleaseOutcome::alreadyDelivered, attempt);
    Task<void> yielding = yieldIf(ctx, buggify::kEventsReleaseYieldBeforeCas);
    co_await yielding;
    const ReleasePlan plan = planRelease(ctx, ctx.work, keys, eventId, *dead);
    if (ctx.flags.releaseTwoStep) {
      // D3's reference order: the attempt reset, the dead CAS, then the index (or rescan flag).
      ctx.work.atomically([&](WorkTxn& txn) {
        txn.put(attKey, plan.reset);
        written(attempt, "attempts", "written", &plan, false, true);
      });
      Task<void> between = yieldIf(ctx, buggify::kEventsYieldBetweenSteps);
      co_await between;
      const bool won = ctx.work.atomically([&](WorkTxn& txn) {
        const bool cas = txn.compareAndSwap(deadKey, *dead, plan.released);
        written(attempt, "dead", cas ? "written" : "lost", &plan, cas, false);
        return cas;
      });
      if (!won) continue;
      Task<void> after = yieldIf(ctx, buggify::kEventsYieldBetweenSteps);
      co_await after;
      ctx.work.atomically([&](WorkTxn& txn) {
        if (ctx.flags.fullRescan) {
          txn.put(keys.rescan(), true);
          written(attempt, "rescan", "released", &plan, false, false);
          ctx.probe(ev::kRescanWrite, {{"topic", topic}, {"consumer", consumer}, {"value", true}, {"by", "release"}});
        } else {
          txn.append(keys.pending(), eventId, seqPayload(plan.seq));
          written(attempt, "pending", "released", &plan, false, false);
        }
      });
      Task<void> syncing = ctx.work.sync();
      co_await syncing;
      co_return finish(ReleaseOutcome::released, attempt);
    }
    enum class Try { released, lost, alreadyDelivered };
    const Try result = ctx.work.atomically([&](WorkTxn& txn) {
      if (txn.get(ackKey)) {
        written(attempt, "all", "alreadyDelivered", nullptr, false, false);
        return Try::alreadyDelivered;
      }
      if (!txn.compareAndSwap(deadKey, *dead, plan.released)) {
        written(attempt, "all", "lost", nullptr, false, false);
        return Try::lost;
      }
      txn.put(attKey, plan.reset);
      if (ctx.flags.fullRescan) {
        txn.put(keys.rescan(), true);
        ctx.probe(ev::kRescanWrite, {{"topic", topic}, {"consumer", consumer}, {"value", true}, {"by", "release"}});
      } else {
        txn.append(keys.pending(), eventId, seqPayload(plan.seq));
      }
      written(attempt, "all", "released", &plan, true, true);
      return Try::released;
    });
    if (result == Try::lost) continue;
    if (result == Try::alreadyDelivered) co_return finish(ReleaseOutcome::alreadyDelivered, attempt);
    Task<void> syncing = ctx.work.sync();
    co_await syncing;
    co_return finish(ReleaseOutcome::released, attempt);
  }
  std::string message = "events: release abandoned topic=";
  message += topic;
  message += " consumer=";
  message += consumer;
  message += " event=";
  message += eventId;
  message += " tries=5: the dead-letter record kept changing; call retryDeadEvent again";
  ctx.logger.warn("events.release.abandoned", {{"topic", topic}, {"consumer", consumer}, {"eventId", eventId}, {"message", message}});
  co_return finish(ReleaseOutcome::contended, kReleaseCasTries);
}

Task<bool> retryDeadEvent(EventsContext& ctx, std::string topic, std::string consumer, std::string eventId) {
  Task<ReleaseOutcome> releasing = releaseDeadEvent(ctx, std::move(topic), std::move(consumer), std::move(eventId));
  const ReleaseOutcome outcome = co_await releasing;
  co_return outcome == ReleaseOutcome::released;
}

int64_t defaultRetryDelayMs(int64_t n) {
  if (n < 1) n = 1;
  if (n >= 7) return kRetryCapMs;
  return std::min<int64_t>(kRetryBaseMs << (n - 1), kRetryCapMs);
}

}  // namespace durasim::events
