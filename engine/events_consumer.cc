// A consumer of the event bus (events.md 6-8): one pass over its pending index then the new log
// records, invoke with the ack written only after success, the failure record in one unit, and
// the background poll loop with empty-poll backoff. The reference pass of variant
// events.full_rescan_when_frozen (events.md 13) and the split failure record of
// events.failure_two_step live here too. Probes: engine/event_bus_events.h.
#include <algorithm>
#include <charconv>
#include <cmath>
#include <set>
#include <stdexcept>
#include <utility>

#include "engine/buggify.h"
#include "engine/conventions.h"
#include "engine/event_bus_events.h"
#include "engine/events.h"
#include "engine/variants.h"

namespace durasim::events {

using nlohmann::json;
namespace ev = event_bus_events;

struct Consumer::Pass {
  int64_t id = 0;
  int64_t delivered = 0;
  std::set<std::string> seen;  // ids examined in phase A
  int64_t pendingExamined = 0, newRecords = 0;
  std::optional<int64_t> frontier;
};

namespace {

json seqPayload(int64_t seq) { return json{{"seq", seq}}; }

std::string maxText(double m) { return std::isinf(m) && m > 0 ? "inf" : numberText(m); }

std::string errorText(std::exception_ptr error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    return validUtf8(e.what());
  } catch (...) {
    return "unknown exception";
  }
}

// Owns the handler, its payload copy and meta for as long as the call runs.
Task<void> runHandler(EventHandler handler, json payload, EventMeta meta) {
  Task<void> handling = handler(payload, meta);
  co_await handling;
}

struct HandlerRun {
  std::shared_ptr<AsyncEvent> done;
  std::exception_ptr error;
};

Task<void> runInto(Task<void> work, std::shared_ptr<HandlerRun> run) {
  try {
    co_await work;
  } catch (...) {
    run->error = std::current_exception();
  }
  run->done->set();
}

const char* outcomeName(int o) {
  static const char* const kNames[] = {"delivered",    "ackLost",         "releasedDuringAttempt", "alreadyDelivered",
                                       "attemptRaced", "quarantineRaced", "quarantined",           "retrying"};
  return kNames[o];
}

json statsJson(const StoreStats& a, const StoreStats& b) {
  return JsonFields()
      .add("lists", b.lists - a.lists)
      .add("gets", b.gets - a.gets)
      .add("counts", b.counts - a.counts)
      .add("writes", b.writes - a.writes)
      .add("atomics", b.atomics - a.atomics);
}

}  // namespace

Consumer::Consumer(const Private&, EventsContext& ctx, std::string topic, EventHandler handler, ConsumerOptions options)
    : ctx_(ctx),
      topic_(std::move(topic)),
      handler_(std::move(handler)),
      options_(std::move(options)),
      keys_(ctx.keys(topic_, options_.name)) {
  const int64_t pollMs = std::max<int64_t>(options_.pollMs, 1);
  maxPollMs_ = options_.maxPollMs ? *options_.maxPollMs
                                  : (pollMs > kMaxSafeInteger / kBackoffCapFactor ? kMaxSafeInteger : pollMs * kBackoffCapFactor);
  json delay = "default";
  if (const double* d = std::get_if<double>(&options_.retryDelayMs)) delay = *d;
  else if (std::holds_alternative<RetryDelayFn>(options_.retryDelayMs)) delay = "function";
  const double m = options_.maxAttempts;
  ctx_.probe(ev::kOptions, {{"topic", topic_},
                            {"consumer", options_.name},
                            {"pollMs", options_.pollMs},
                            {"maxPollMs", maxPollMs_},
                            {"backoff", options_.backoff},
                            {"maxAttempts", std::isfinite(m) ? json(m) : json(maxText(m) == "inf" ? "inf" : numberText(m))},
                            {"retryDelay", delay},
                            {"handlerTimeoutMs", options_.handlerTimeoutMs ? json(*options_.handlerTimeoutMs) : json()},
                            {"variants", ctx_.flags.names()}});
}

json Consumer::fields(const std::string& id) const { return {{"topic", topic_}, {"consumer", options_.name}, {"eventId", id}}; }

Task<void> Consumer::yieldAt(std::string_view site) {
  if (!ctx_.fires(site)) co_return;
  Task<void> yielding = ctx_.clock.sleepFor(0);
  co_await yielding;
}

int64_t Consumer::readCursor(WorkTxn& txn) const {
  const std::optional<json> stored = txn.get(keys_.cursor());
  if (!stored || !stored->is_string()) return 0;
  const std::string& text = stored->get_ref<const std::string&>();
  int64_t value = 0;
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (error != std::errc() || end != text.data() + text.size() || value < 0) return 0;
  return value;
}

// events.md 6.4: the cursor only moves forward.
void Consumer::advanceCursor(Pass& pass, int64_t to) {
  ctx_.work.atomically([&](WorkTxn& txn) {
    const int64_t from = readCursor(txn);
    const bool moved = to > from;
    if (moved) txn.put(keys_.cursor(), std::to_string(to));
    ctx_.probe(ev::kCursorWrite, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"from", from}, {"to", to},
                                  {"moved", moved}, {"rewind", false}});
  });
}

void Consumer::erasePending(Pass& pass, const LogRecord& record, const char* reason, bool onlyIfQuarantined) {
  ctx_.work.atomically([&](WorkTxn& txn) {
    bool changed = false;
    if (!onlyIfQuarantined || isQuarantined(txn.get(keys_.dead(record.id)), ctx_.flags.timestampTruthiness))
      changed = txn.eraseRecord(keys_.pending(), record.id);
    ctx_.probe(ev::kPendingWrite, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"id", record.id}, {"seq", record.seq},
                                   {"op", "erase"}, {"reason", reason}, {"changed", changed}});
  });
}

// ---------------------------------------------------------------------------------------------
// poll (events.md 6.4)

Task<int64_t> Consumer::poll() { return pollOf(shared_from_this()); }

Task<int64_t> Consumer::pollOf(std::shared_ptr<Consumer> self) {
  Pass pass;
  pass.id = self->ctx_.nextPass();
  Task<int64_t> running = self->runPass(pass);
  co_return co_await running;
}

Task<int64_t> Consumer::runPass(Pass& pass) {
  const StoreStats before = ctx_.work.stats();
  ctx_.probe(ev::kPollBegin, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"at", ctx_.clock.now()}});
  std::optional<std::string> failed;
  try {
    if (ctx_.flags.fullRescan) {
      Task<int64_t> reference = referencePass(pass);
      co_await reference;
    } else {
      Task<void> pending = phasePending(pass);
      co_await pending;
      Task<void> fresh = phaseLog(pass);
      co_await fresh;
    }
  } catch (...) {
    failed = errorText(std::current_exception());
    ctx_.probe(ev::kPollEnd, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"delivered", pass.delivered},
                              {"failed", *failed}, {"pendingExamined", pass.pendingExamined}, {"newRecords", pass.newRecords},
                              {"frontier", pass.frontier ? json(*pass.frontier) : json()}, {"reads", statsJson(before, ctx_.work.stats())}});
    throw;
  }
  ctx_.probe(ev::kPollEnd, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"delivered", pass.delivered},
                            {"failed", nullptr}, {"pendingExamined", pass.pendingExamined}, {"newRecords", pass.newRecords},
                            {"frontier", pass.frontier ? json(*pass.frontier) : json()}, {"reads", statsJson(before, ctx_.work.stats())}});
  co_return pass.delivered;
}

// Phase A: the events this consumer still owes below its frontier.
Task<void> Consumer::phasePending(Pass& pass) {
  const bool t = ctx_.flags.timestampTruthiness;
  int64_t after = 0;
  while (true) {
    const LogPage page = ctx_.work.list(keys_.pending(), after, kPageSize);
    int64_t erased = 0;
    for (const LogRecord& entry : page.items) {
      if (!ctx_.flags.orderByTimestamp) after = entry.seq;
      pass.seen.insert(entry.id);
      ++pass.pendingExamined;
      const int64_t seq = intField(entry.payload, "seq").value_or(0);
      const LogRecord named{seq, entry.id, json(), 0};
      auto examined = [&](const char* decision, std::optional<int64_t> nextAt) {
        ctx_.probe(ev::kExamine, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"phase", "pending"}, {"id", entry.id},
                                  {"seq", seq}, {"decision", decision}, {"nextAt", nextAt ? json(*nextAt) : json()}});
      };
      // A1: waiting (checked first: a waiting entry costs one read).
      std::optional<json> attRaw = ctx_.work.get(keys_.attempts(entry.id));
      const Attempts att = readAttempts(attRaw, t);
      if (att.nextAt > ctx_.clock.now()) {
        examined("waiting", att.nextAt);
        continue;
      }
      // A2: delivered meanwhile (stale entry).
      if (ctx_.work.get(keys_.ack(entry.id))) {
        examined("acked", att.nextAt);
        erasePending(pass, named, "acked", false);
        ++erased;
        continue;
      }
      // A3: quarantined (re-read inside the unit: a release in between keeps its entry).
      std::optional<json> dead = ctx_.work.get(keys_.dead(entry.id));
      if (isQuarantined(dead, t)) {
        examined("quarantined", att.nextAt);
        erasePending(pass, named, "quarantined", true);
        ++erased;
        continue;
      }
      // A4: the log record was erased by a retention sweep.
      std::optional<LogRecord> record = ctx_.work.getRecord(keys_.log(), entry.id);
      if (!record) {
        examined("gone", att.nextAt);
        erasePending(pass, named, "gone", false);
        ++erased;
        continue;
      }
      examined("due", att.nextAt);
      Task<Outcome> invoking = invoke(pass, std::move(*record), std::move(dead), std::move(attRaw), att, true);
      const Outcome outcome = co_await invoking;
      if (outcome == Outcome::delivered || outcome == Outcome::ackLost || outcome == Outcome::alreadyDelivered ||
          outcome == Outcome::quarantined)
        ++erased;
    }
    if (!page.more || page.items.empty()) co_return;
    if (ctx_.flags.orderByTimestamp) after += static_cast<int64_t>(page.items.size()) - erased;
  }
}

// Phase B: the log records past the frontier.
Task<void> Consumer::phaseLog(Pass& pass) {
  const bool t = ctx_.flags.timestampTruthiness;
  int64_t pos = readCursor(ctx_.work);
  pass.frontier = pos;
  while (true) {
    const LogPage page = ctx_.work.list(keys_.log(), pos, kPageSize);
    for (const LogRecord& r : page.items) {
      ++pass.newRecords;
      auto examined = [&](const char* decision, std::optional<int64_t> nextAt) {
        ctx_.probe(ev::kExamine, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"phase", "log"}, {"id", r.id},
                                  {"seq", r.seq}, {"decision", decision}, {"nextAt", nextAt ? json(*nextAt) : json()}});
      };
      if (pass.seen.count(r.id)) {
        examined("seen", std::nullopt);
        continue;
      }
      if (ctx_.work.get(keys_.ack(r.id))) {  // B1
        examined("acked", std::nullopt);
        continue;
      }
      std::optional<json> dead = ctx_.work.get(keys_.dead(r.id));  // B2
      if (isQuarantined(dead, t)) {
        examined("quarantined", std::nullopt);
        continue;
      }
      std::optional<json> attRaw = ctx_.work.get(keys_.attempts(r.id));  // B3
      const Attempts att = readAttempts(attRaw, t);
      if (att.nextAt > ctx_.clock.now()) {
        examined("waiting", att.nextAt);
        ctx_.work.atomically([&](WorkTxn& txn) {
          const bool changed = txn.append(keys_.pending(), r.id, seqPayload(r.seq)).inserted;
          ctx_.probe(ev::kPendingWrite, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"id", r.id}, {"seq", r.seq},
                                         {"op", "add"}, {"reason", "waiting"}, {"changed", changed}});
        });
        continue;
      }
      examined("due", att.nextAt);
      Task<Outcome> invoking = invoke(pass, r, std::move(dead), std::move(attRaw), att, false);  // B4
      co_await invoking;
    }
    if (!page.items.empty()) {
      if (ctx_.flags.orderByTimestamp) {
        // D1's reference: the offset of the next page, persisted only when there is one.
        pos += static_cast<int64_t>(page.items.size());
        if (page.more) advanceCursor(pass, pos);
      } else {
        pos = page.items.back().seq;
        advanceCursor(pass, pos);
      }
      Task<void> yielding = yieldAt(buggify::kEventsYieldAfterPage);
      co_await yielding;
    }
    if (!page.more || page.items.empty()) co_return;
  }
}

// The reference pass (variant events.full_rescan_when_frozen, events.md 13): no pending index; the
// cursor is the frozen bookmark; a release's rescan flag rewinds it to the start.
Task<int64_t> Consumer::referencePass(Pass& pass) {
  const bool t = ctx_.flags.timestampTruthiness;
  const std::optional<json> flag = ctx_.work.get(keys_.rescan());
  const bool rescan = flag && flag->is_boolean() && flag->get<bool>();
  int64_t pos = 0;
  if (rescan) {
    ctx_.work.atomically([&](WorkTxn& txn) {
      const int64_t from = readCursor(txn);
      txn.put(keys_.cursor(), "");
      ctx_.probe(ev::kCursorWrite, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"from", from}, {"to", 0},
                                    {"moved", from != 0}, {"rewind", true}});
    });
  } else {
    pos = readCursor(ctx_.work);
  }
  pass.frontier = pos;
  bool frozen = false;
  while (true) {
    const LogPage page = ctx_.work.list(keys_.log(), pos, kPageSize);
    for (const LogRecord& r : page.items) {
      ++pass.newRecords;
      auto examined = [&](const char* decision, std::optional<int64_t> nextAt) {
        ctx_.probe(ev::kExamine, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"phase", "log"}, {"id", r.id},
                                  {"seq", r.seq}, {"decision", decision}, {"nextAt", nextAt ? json(*nextAt) : json()}});
      };
      if (ctx_.work.get(keys_.ack(r.id))) {
        examined("acked", std::nullopt);
        continue;
      }
      std::optional<json> dead = ctx_.work.get(keys_.dead(r.id));
      if (isQuarantined(dead, t)) {
        examined("quarantined", std::nullopt);
        continue;
      }
      std::optional<json> attRaw = ctx_.work.get(keys_.attempts(r.id));
      const Attempts att = readAttempts(attRaw, t);
      if (att.nextAt > ctx_.clock.now()) {
        examined("waiting", att.nextAt);
        frozen = true;
        continue;
      }
      examined("due", att.nextAt);
      Task<Outcome> invoking = invoke(pass, r, std::move(dead), std::move(attRaw), att, false);
      const Outcome outcome = co_await invoking;
      if (outcome == Outcome::releasedDuringAttempt || outcome == Outcome::attemptRaced || outcome == Outcome::quarantineRaced ||
          outcome == Outcome::retrying)
        frozen = true;
    }
    if (!page.more || page.items.empty()) {
      if (rescan) {
        ctx_.work.put(keys_.rescan(), false);
        ctx_.probe(ev::kRescanWrite, {{"topic", topic_}, {"consumer", options_.name}, {"value", false}, {"by", "poll"}});
      }
      co_return pass.delivered;
    }
    pos = ctx_.flags.orderByTimestamp ? pos + static_cast<int64_t>(page.items.size()) : page.items.back().seq;
    if (!frozen) {
      ctx_.work.put(keys_.cursor(), std::to_string(pos));
      ctx_.probe(ev::kCursorWrite, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"from", nullptr}, {"to", pos},
                                    {"moved", true}, {"rewind", false}});
    }
    Task<void> yielding = yieldAt(buggify::kEventsYieldAfterPage);
    co_await yielding;
  }
}

// ---------------------------------------------------------------------------------------------
// invoke (events.md 6.5)

Task<std::optional<std::string>> Consumer::callHandler(Pass& pass, const LogRecord& record, bool& timedOut) {
  EventMeta meta{record.id, topic_};
  Task<void> work = runHandler(handler_, record.payload, std::move(meta));
  if (!options_.handlerTimeoutMs || !ctx_.makeEvent) {
    try {
      co_await work;
    } catch (...) {
      co_return errorText(std::current_exception());
    }
    co_return std::nullopt;
  }
  auto run = std::make_shared<HandlerRun>();
  run->done = ctx_.makeEvent();
  ctx_.waitUntil(runInto(std::move(work), run));
  const bool inTime = co_await run->done->wait(*options_.handlerTimeoutMs);
  if (!inTime) {
    timedOut = true;
    std::string text = "handler timed out after ";
    text += std::to_string(*options_.handlerTimeoutMs);
    text += " ms";
    co_return text;
  }
  if (run->error) co_return errorText(run->error);
  co_return std::nullopt;
}

Task<Consumer::Outcome> Consumer::invoke(Pass& pass, LogRecord record, std::optional<json> dead0, std::optional<json> attRaw, Attempts att,
                                         bool fromIndex) {
  const bool t = ctx_.flags.timestampTruthiness;
  ctx_.probe(ev::kInvoke, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"id", record.id}, {"seq", record.seq},
                           {"attempt", att.n + 1}, {"fromIndex", fromIndex}, {"stamp", stamp(dead0, t)}});
  bool timedOut = false;
  Task<std::optional<std::string>> calling = callHandler(pass, record, timedOut);
  const std::optional<std::string> error = co_await calling;
  ctx_.probe(ev::kHandled, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"id", record.id}, {"ok", !error},
                            {"timedOut", timedOut}, {"error", error ? json(*error) : json()}});
  if (!error) {
    Task<void> yielding = yieldAt(buggify::kEventsYieldBeforeAck);
    co_await yielding;
    const bool won = ctx_.work.atomically([&](WorkTxn& txn) {
      const bool created = txn.putIfAbsent(keys_.ack(record.id), true);
      const bool erased = fromIndex && !ctx_.flags.fullRescan && txn.eraseRecord(keys_.pending(), record.id);
      ctx_.probe(ev::kAckWrite, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"id", record.id}, {"seq", record.seq},
                                 {"won", created}, {"pendingErased", erased}});
      return created;
    });
    if (won) ++pass.delivered;
    co_return won ? Outcome::delivered : Outcome::ackLost;
  }
  Task<void> yielding = yieldAt(buggify::kEventsYieldBeforeFailure);
  co_await yielding;
  if (ctx_.flags.failureTwoStep) {
    Task<Outcome> recording = recordFailureTwoStep(pass, record, dead0, attRaw, att, *error);
    co_return co_await recording;
  }
  Task<Outcome> recording = recordFailure(pass, record, dead0, attRaw, att, *error);
  co_return co_await recording;
}

// ---------------------------------------------------------------------------------------------
// The failure record (events.md 6.6), one unit

Task<Consumer::Outcome> Consumer::recordFailure(Pass& pass, const LogRecord& record, const std::optional<json>& dead0,
                                                const std::optional<json>& attRaw, const Attempts& att, const std::string& error) {
  const bool t = ctx_.flags.timestampTruthiness;
  const bool indexed = !ctx_.flags.fullRescan;
  const int64_t n = att.n + 1;
  const int64_t delay = delayFor(n, record.id);
  const std::string& id = record.id;
  const Outcome outcome = ctx_.work.atomically([&](WorkTxn& txn) {
    EventFields probe = {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"id", id}, {"seq", record.seq}, {"n", n},
                  {"delayMs", delay}, {"expected", attRaw ? *attRaw : json()}, {"attempts", nullptr}, {"error", error}, {"pending", nullptr}};
    auto done = [&](Outcome o) {
      probe["outcome"] = outcomeName(static_cast<int>(o));
      ctx_.probe(ev::kFailureWrite, probe);
      return o;
    };
    const std::optional<json> fresh = txn.get(keys_.dead(id));
    if (stamp(fresh, t) != stamp(dead0, t)) {
      if (indexed) txn.append(keys_.pending(), id, seqPayload(record.seq)), probe["pending"] = "add";
      return done(Outcome::releasedDuringAttempt);
    }
    if (txn.get(keys_.ack(id))) {
      if (indexed) txn.eraseRecord(keys_.pending(), id), probe["pending"] = "erase";
      return done(Outcome::alreadyDelivered);
    }
    const int64_t now = ctx_.clock.now();
    Attempts next{n, att.firstAt ? att.firstAt : std::optional<int64_t>(now), std::min(now + delay, kMaxSafeInteger), att.gen};
    if (delay > kMaxSafeInteger - now) next.nextAt = kMaxSafeInteger;
    const json nextJson = next.toJson();
    bool won = false;
    if (attRaw)
      won = txn.compareAndSwap(keys_.attempts(id), *attRaw, nextJson);
    else if (ctx_.flags.plainPutOnAbsent)
      txn.put(keys_.attempts(id), nextJson), won = true;
    else
      won = txn.putIfAbsent(keys_.attempts(id), nextJson);
    if (!won) {
      if (indexed) txn.append(keys_.pending(), id, seqPayload(record.seq)), probe["pending"] = "add";
      return done(Outcome::attemptRaced);
    }
    probe["attempts"] = nextJson;
    if (static_cast<double>(n) >= options_.maxAttempts) {
      json dead = {{"error", error}, {"attempts", n}, {"at", now}, {"seq", record.seq}};
      if (fresh)
        if (const std::optional<int64_t> releases = intField(*fresh, "releases")) dead["releases"] = *releases;
      bool written = false;
      if (fresh)
        written = txn.compareAndSwap(keys_.dead(id), *fresh, dead);
      else if (ctx_.flags.plainPutOnAbsent)
        txn.put(keys_.dead(id), dead), written = true;
      else
        written = txn.putIfAbsent(keys_.dead(id), dead);
      if (!written) throw std::logic_error("EVT-18: the quarantine write lost inside the unit that read the dead record");
      if (indexed) {
        txn.append(keys_.deadIndex(), id, seqPayload(record.seq));
        txn.eraseRecord(keys_.pending(), id);
        probe["pending"] = "erase";
      }
      ctx_.probe(ev::kQuarantineWrite, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"id", id}, {"seq", record.seq},
                                        {"dead", dead}, {"replaced", fresh.has_value()}});
      return done(Outcome::quarantined);
    }
    if (indexed) txn.append(keys_.pending(), id, seqPayload(record.seq)), probe["pending"] = "add";
    return done(Outcome::retrying);
  });
  logFailure(outcome, id, n, delay, error);
  co_return outcome;
}

// Variant events.failure_two_step (D7): the re-read, the attempt write and the dead write as
// separate store calls, the yield between the two writes, the ack re-checked only at maxAttempts.
Task<Consumer::Outcome> Consumer::recordFailureTwoStep(Pass& pass, const LogRecord& record, const std::optional<json>& dead0,
                                                       const std::optional<json>& attRaw, const Attempts& att, const std::string& error) {
  const bool t = ctx_.flags.timestampTruthiness;
  const bool indexed = !ctx_.flags.fullRescan;
  const int64_t n = att.n + 1;
  const int64_t delay = delayFor(n, record.id);
  const std::string& id = record.id;
  auto probeStep = [&](const char* step, Outcome o, const json& attempts, const char* pending) {
    ctx_.probe(ev::kFailureWrite, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"id", id}, {"seq", record.seq},
                                   {"n", n}, {"delayMs", delay}, {"expected", attRaw ? *attRaw : json()}, {"attempts", attempts},
                                   {"error", error}, {"pending", pending ? json(pending) : json()}, {"outcome", outcomeName(static_cast<int>(o))},
                                   {"step", step}});
  };
  auto keepPending = [&](const char* step, Outcome o, const json& attempts) {
    ctx_.work.atomically([&](WorkTxn& txn) {
      if (indexed) txn.append(keys_.pending(), id, seqPayload(record.seq));
      probeStep(step, o, attempts, indexed ? "add" : nullptr);
    });
  };
  Outcome outcome = Outcome::retrying;
  const std::optional<json> fresh = ctx_.work.get(keys_.dead(id));
  const int64_t now = ctx_.clock.now();
  Attempts next{n, att.firstAt ? att.firstAt : std::optional<int64_t>(now), delay > kMaxSafeInteger - now ? kMaxSafeInteger : now + delay,
                att.gen};
  const json nextJson = next.toJson();
  if (stamp(fresh, t) != stamp(dead0, t)) {
    outcome = Outcome::releasedDuringAttempt;
    keepPending("attempts", outcome, nullptr);
  } else {
    const bool won = ctx_.work.atomically([&](WorkTxn& txn) {
      bool w = false;
      if (attRaw)
        w = txn.compareAndSwap(keys_.attempts(id), *attRaw, nextJson);
      else if (ctx_.flags.plainPutOnAbsent)
        txn.put(keys_.attempts(id), nextJson), w = true;
      else
        w = txn.putIfAbsent(keys_.attempts(id), nextJson);
      if (w) probeStep("attempts", static_cast<double>(n) >= options_.maxAttempts ? Outcome::quarantined : Outcome::retrying, nextJson, nullptr);
      return w;
    });
    if (!won) {
      outcome = Outcome::attemptRaced;
      keepPending("attempts", outcome, nullptr);
    } else if (static_cast<double>(n) < options_.maxAttempts) {
      outcome = Outcome::retrying;
      keepPending("pending", outcome, nextJson);
    } else if (ctx_.work.get(keys_.ack(id))) {
      outcome = Outcome::alreadyDelivered;
      ctx_.work.atomically([&](WorkTxn& txn) {
        if (indexed) txn.eraseRecord(keys_.pending(), id);
        probeStep("dead", outcome, nextJson, indexed ? "erase" : nullptr);
      });
    } else {
      Task<void> between = yieldAt(buggify::kEventsYieldBetweenSteps);
      co_await between;
      json dead = {{"error", error}, {"attempts", n}, {"at", now}, {"seq", record.seq}};
      if (fresh)
        if (const std::optional<int64_t> releases = intField(*fresh, "releases")) dead["releases"] = *releases;
      const bool written = ctx_.work.atomically([&](WorkTxn& txn) {
        bool w = false;
        if (fresh)
          w = txn.compareAndSwap(keys_.dead(id), *fresh, dead);
        else if (ctx_.flags.plainPutOnAbsent)
          txn.put(keys_.dead(id), dead), w = true;
        else
          w = txn.putIfAbsent(keys_.dead(id), dead);
        if (w) {
          if (indexed) {
            txn.append(keys_.deadIndex(), id, seqPayload(record.seq));
            txn.eraseRecord(keys_.pending(), id);
          }
          ctx_.probe(ev::kQuarantineWrite, {{"topic", topic_}, {"consumer", options_.name}, {"pass", pass.id}, {"id", id},
                                            {"seq", record.seq}, {"dead", dead}, {"replaced", fresh.has_value()}});
          probeStep("dead", Outcome::quarantined, nextJson, indexed ? "erase" : nullptr);
        }
        return w;
      });
      if (written) {
        outcome = Outcome::quarantined;
      } else {
        outcome = Outcome::quarantineRaced;
        keepPending("dead", outcome, nextJson);
      }
    }
  }
  logFailure(outcome, id, n, delay, error);
  co_return outcome;
}

void Consumer::logFailure(Outcome outcome, const std::string& id, int64_t n, int64_t delay, const std::string& error) const {
  std::string where = "topic=";
  where += topic_;
  where += " consumer=";
  where += options_.name;
  where += " event=";
  where += id;
  json f = fields(id);
  std::string message = "events: ";
  switch (outcome) {
    case Outcome::retrying:
      message += "handler failed ";
      message += where;
      message += " attempt=";
      message += std::to_string(n);
      message += '/';
      message += maxText(options_.maxAttempts);
      message += "; retrying in ";
      message += std::to_string(delay);
      message += "ms: ";
      message += error;
      f["message"] = message;
      ctx_.logger.warn("events.handler.retrying", f);
      return;
    case Outcome::quarantined:
      message += "event QUARANTINED after ";
      message += std::to_string(n);
      message += " failed attempts ";
      message += where;
      message += ": ";
      message += error;
      f["message"] = message;
      ctx_.logger.error("events.handler.quarantined", f);
      return;
    case Outcome::releasedDuringAttempt:
      message += "handler failed but the event was RELEASED while it ran; attempt discarded ";
      message += where;
      message += ": ";
      message += error;
      f["message"] = message;
      ctx_.logger.warn("events.handler.released_during_attempt", f);
      return;
    case Outcome::alreadyDelivered:
      message += "handler failed but the event was already DELIVERED under this consumer name; attempt discarded ";
      message += where;
      message += ": ";
      message += error;
      f["message"] = message;
      ctx_.logger.warn("events.handler.already_delivered", f);
      return;
    case Outcome::attemptRaced:
      message += "attempt record changed concurrently; attempt not counted ";
      message += where;
      message += ": ";
      message += error;
      f["message"] = message;
      ctx_.logger.warn("events.attempt.write_raced", f);
      return;
    case Outcome::quarantineRaced:
      message += "dead-letter record changed concurrently; quarantine not written ";
      message += where;
      f["message"] = message;
      ctx_.logger.warn("events.quarantine.write_raced", f);
      return;
    default:
      return;
  }
}

// events.md 8.2
int64_t Consumer::delayFor(int64_t n, const std::string& id) const {
  const int64_t fallback = defaultRetryDelayMs(n);
  const bool lax = ctx_.flags.unvalidatedOptions;
  auto warn = [&](const char* event, const std::string& what) {
    json f = {{"topic", topic_}, {"consumer", options_.name}, {"eventId", id}, {"attempt", n}, {"message", what}};
    ctx_.logger.warn(event, f);
  };
  auto invalid = [&](double raw) {
    std::string message = "events: retryDelayMs returned ";
    message += numberText(raw);
    message += " for attempt ";
    message += std::to_string(n);
    message += " event=";
    message += id;
    message += "; using default ";
    message += std::to_string(fallback);
    message += "ms";
    warn("events.retry_delay.invalid", message);
    return fallback;
  };
  if (const double* d = std::get_if<double>(&options_.retryDelayMs)) {
    if (lax && !std::isfinite(*d)) return invalid(*d);
    if (lax && *d < 0) return 0;
    return static_cast<int64_t>(jsRound(*d));
  }
  if (const RetryDelayFn* f = std::get_if<RetryDelayFn>(&options_.retryDelayMs)) {
    double raw = 0;
    try {
      raw = (*f)(n);
    } catch (...) {
      std::string message = "events: retryDelayMs threw for attempt ";
      message += std::to_string(n);
      message += " event=";
      message += id;
      message += ": ";
      message += errorText(std::current_exception());
      message += "; using default ";
      message += std::to_string(fallback);
      message += "ms";
      warn("events.retry_delay.threw", message);
      return fallback;
    }
    if (lax && raw < 0) return 0;
    if (!std::isfinite(raw) || raw < 0 || jsRound(raw) > static_cast<double>(kMaxSafeInteger)) return invalid(raw);
    return static_cast<int64_t>(jsRound(raw));
  }
  return fallback;
}

// ---------------------------------------------------------------------------------------------
// The poll loop (events.md 7)

void Consumer::start() {
  if (running_) return;
  running_ = true;
  const int64_t generation = ++generation_;
  interval_ = options_.pollMs;
  ctx_.probe(ev::kLoopStart, {{"topic", topic_}, {"consumer", options_.name}, {"generation", generation}});
  ctx_.waitUntil(loop(shared_from_this(), generation));
}

void Consumer::stop() {
  if (running_) ctx_.probe(ev::kLoopStop, {{"topic", topic_}, {"consumer", options_.name}, {"generation", generation_}});
  running_ = false;
  ++generation_;
}

Task<void> Consumer::loop(std::shared_ptr<Consumer> self, int64_t generation) {
  Consumer& c = *self;
  const bool doubleChain = c.ctx_.flags.pollLoopDoubleChain;
  // Each probe's fields built in place (a copy of shared fields would cost more than the list).
  const auto who = [&] { return EventFields{{"topic", c.topic_}, {"consumer", c.options_.name}, {"generation", generation}}; };
  auto ended = [&] { c.ctx_.probe(ev::kLoopEnd, who()); };
  int64_t gap = c.interval_;
  while (true) {
    Task<void> sleeping = c.ctx_.clock.sleepFor(gap);
    co_await sleeping;
    if (!c.running_ || (!doubleChain && c.generation_ != generation)) {
      ended();
      co_return;
    }
    if (c.ticking_) {
      c.ctx_.probe(ev::kTickSkipped, who());
      if (doubleChain) {
        ended();
        co_return;
      }
      gap = c.options_.pollMs;
      continue;
    }
    c.ctx_.probe(ev::kTickBegin, {{"topic", c.topic_}, {"consumer", c.options_.name}, {"generation", generation}, {"gap", gap}});
    c.ticking_ = true;
    int64_t delivered = 0;
    std::optional<std::string> failed;
    try {
      Task<int64_t> polling = pollOf(self);
      delivered = co_await polling;
    } catch (...) {
      failed = errorText(std::current_exception());
    }
    c.ticking_ = false;
    if (failed) {
      std::string message = "events: poll-loop tick failed (chain continues) topic=";
      message += c.topic_;
      message += " consumer=";
      message += c.options_.name;
      message += ": ";
      message += *failed;
      c.ctx_.logger.warn("events.poll_loop.tick_failed", {{"topic", c.topic_}, {"consumer", c.options_.name}, {"message", message}});
    }
    const bool progressed = delivered > 0;
    c.interval_ = (!c.options_.backoff || progressed) ? c.options_.pollMs : std::min(c.interval_ * 2, c.maxPollMs_);
    if (c.interval_ < 1) c.interval_ = 1;
    gap = c.interval_;
    c.ctx_.probe(ev::kTickEnd, {{"topic", c.topic_},
                                {"consumer", c.options_.name},
                                {"generation", generation},
                                {"delivered", delivered},
                                {"failed", failed ? json(*failed) : json()},
                                {"next", gap}});
  }
}

}  // namespace durasim::events
