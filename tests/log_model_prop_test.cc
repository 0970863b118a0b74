// Model-based property (RapidCheck rc::state, suite LogModelState): random append / read / commit /
// trim / forgetColdBefore / lease / ack / nack / leases / advance / crash sequences run against the
// real DurabilityLog on the simulated runtime and against model/log_model.h. After every command the
// returned values and every log table (records, seq, cursors, segments, flush intent, leases,
// allocations) must equal the model's, both cold stores must hold the same segments, and onPoison
// must have seen what the model expects. Retention, cold storage, maxBatchSize and the lease options
// are drawn per case; the batch ids the engine draws are fed to the model from its probes.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <cstdint>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/conventions.h"
#include "engine/errors.h"
#include "engine/log.h"
#include "engine/scheduler.h"
#include "model/log_model.h"
#include "tests/model_property.h"
#include "tests/runtime_test_harness.h"

namespace durasim {
namespace {

using namespace rt_test;

constexpr const char* kClass = "ModelLog";
constexpr const char* kObject = "a";
const std::string kLabel = std::string(kClass) + "/" + kObject;
constexpr int kMaxCommands = 60;
constexpr int kDefaultCases = 200;  // RC_PARAMS="max_success=N" overrides
const std::vector<std::string> kKeyPool = {"k0", "k1", "k2", "k3", "k4"};
const std::vector<std::string> kConsumers = {"c1", "c2"};
const char* const kColdFailure = "cold write lost";
const char* const kMissingId = "not-drawn-";  // stands for an id the engine did not draw

// ---------------------------------------------------------------------------------------------
// The case's configuration, drawn once per case, and the cold store each side writes to. A trim's
// cold writes are numbered from 0; the `failAt`-th stores its segment and then throws (a lost reply),
// the `emptyAt`-th stores it and returns an empty locator.

struct Config {
  int64_t maxBatchSize = 100;
  std::optional<int64_t> maxAgeMs, maxRecords, maxBytes;
  bool retention = false;
  bool cold = false;
  std::optional<model::LeaseOptions> leases;
};

struct WriteFaults {
  std::optional<int64_t> failAt, emptyAt;
  int64_t written = 0;
  enum class Outcome { stored, thrown, empty };
  Outcome next() {
    const int64_t n = written++;
    if (failAt == n) return Outcome::thrown;
    if (emptyAt == n) return Outcome::empty;
    return Outcome::stored;
  }
};

std::string locatorOf(int64_t first) { return "seg-" + std::to_string(first); }

struct EngineCold {
  std::map<std::string, std::vector<LogRecord>> stored;
  WriteFaults faults;
};

struct ModelCold {
  std::map<std::string, std::vector<model::Record>> stored;
  WriteFaults faults;
};

Task<std::string> engineColdWrite(std::shared_ptr<EngineCold> cold, LogSegment segment) {
  const std::string locator = locatorOf(segment.firstOffset);
  cold->stored[locator] = segment.records;
  switch (cold->faults.next()) {
    case WriteFaults::Outcome::thrown:
      throw std::runtime_error(kColdFailure);
    case WriteFaults::Outcome::empty:
      co_return std::string();
    case WriteFaults::Outcome::stored:
      break;
  }
  co_return locator;
}

Task<std::optional<std::vector<LogRecord>>> engineColdRead(std::shared_ptr<EngineCold> cold, std::string locator) {
  auto it = cold->stored.find(locator);
  if (it == cold->stored.end()) co_return std::nullopt;
  co_return it->second;
}

model::ColdStorage modelColdOf(const std::shared_ptr<ModelCold>& cold) {
  model::ColdStorage storage;
  storage.write = [cold](int64_t first, int64_t, const std::vector<model::Record>& records) {
    const std::string locator = locatorOf(first);
    cold->stored[locator] = records;
    switch (cold->faults.next()) {
      case WriteFaults::Outcome::thrown:
        return model::ColdWrite{std::nullopt, model::LogError{"Error", kColdFailure}};
      case WriteFaults::Outcome::empty:
        return model::ColdWrite{std::string(), {}};
      case WriteFaults::Outcome::stored:
        break;
    }
    return model::ColdWrite{locator, {}};
  };
  storage.read = [cold](const std::string& locator) -> std::optional<std::vector<model::Record>> {
    auto it = cold->stored.find(locator);
    if (it == cold->stored.end()) return std::nullopt;
    return it->second;
  };
  return storage;
}

struct Env {
  Config config;
  std::shared_ptr<EngineCold> cold = std::make_shared<EngineCold>();
  std::vector<LogLease> poisoned;  // what onPoison was called with, in order
};

Task<void> finished() { co_return; }

LogOptions engineOptions(Env& env) {
  LogOptions o;
  o.maxBatchSize = env.config.maxBatchSize;
  if (env.config.retention) o.retention = LogRetention{env.config.maxAgeMs, env.config.maxRecords, env.config.maxBytes};
  if (env.config.cold) {
    std::shared_ptr<EngineCold> cold = env.cold;
    LogColdStorage storage;
    storage.write = [cold](const LogSegment& s) { return engineColdWrite(cold, s); };
    storage.read = [cold](const std::string& l) { return engineColdRead(cold, l); };
    o.cold = storage;
  }
  if (const auto& l = env.config.leases) {
    LogLeaseOptions leases;
    leases.maxParallelism = l->maxParallelism;
    leases.leaseMs = l->leaseMs;
    leases.maxAttempts = l->maxAttempts;
    if (l->onPoison) {
      std::vector<LogLease>* poisoned = &env.poisoned;
      leases.onPoison = [poisoned](const LogLease& lease) {
        poisoned->push_back(lease);
        return finished();
      };
    }
    o.leases = leases;
  }
  return o;
}

model::LogModelOptions modelOptions(const Config& c, const std::shared_ptr<ModelCold>& cold) {
  model::LogModelOptions o;
  o.maxBatchSize = c.maxBatchSize;
  if (c.retention) o.retention = model::Retention{c.maxAgeMs, c.maxRecords, c.maxBytes};
  if (c.cold) o.cold = modelColdOf(cold);
  o.leases = c.leases;
  return o;
}

// ---------------------------------------------------------------------------------------------
// The application object: one DurabilityLog; each RPC method runs one log operation and returns
// its result, or {"error": {name, message, requested, oldest}} for what it threw.

json errorJson(std::exception_ptr failure) {
  const ErrorInfo info = serializeError(failure);
  json e{{"name", info.name}, {"message", info.message}};
  try {
    std::rethrow_exception(failure);
  } catch (const LogTruncatedError& t) {
    e["requested"] = t.requestedOffset();
    e["oldest"] = t.oldestOffset();
  } catch (...) {
  }
  return json{{"error", e}};
}

json recordJson(const LogRecord& r) {
  return json{{"offset", r.offset}, {"key", r.deduplicationKey}, {"payload", serialize(r.body).value_or("?")},
              {"appendedAt", r.appendedAt}};
}

json recordJson(const model::Record& r) {
  return json{{"offset", r.offset}, {"key", r.key}, {"payload", r.payload}, {"appendedAt", r.appendedAt}};
}

json leaseJson(const LogLease& l) {
  json records = json::array();
  for (const LogRecord& r : l.records) records.push_back(recordJson(r));
  return json{{"batchId", l.batchId}, {"consumer", l.consumer}, {"first", l.firstOffset}, {"last", l.lastOffset},
              {"attempt", l.attempt}, {"expiresAt", l.expiresAt}, {"records", records}};
}

json leaseJson(const model::Lease& l) {
  json records = json::array();
  for (const model::Record& r : l.records) records.push_back(recordJson(r));
  return json{{"batchId", l.batchId}, {"consumer", l.consumer}, {"first", l.firstOffset}, {"last", l.lastOffset},
              {"attempt", l.attempt}, {"expiresAt", l.expiresAt}, {"records", records}};
}

json leaseRowJson(const model::LeaseRow& r) {
  return json{{"batch_id", r.batchId},     {"consumer", r.consumer}, {"first_offset", r.firstOffset},
              {"last_offset", r.lastOffset}, {"state", model::leaseStateName(r.state)}, {"attempt", r.attempt},
              {"expires_at", r.expiresAt},   {"created_at", r.createdAt}};
}

const char* stateName(LeaseState state) {
  static const char* const names[] = {"active", "pending", "acked", "skipped"};
  return names[static_cast<int>(state)];
}

class LogApp final : public DurableObject {
 public:
  LogApp(ObjectContext& ctx, Env* env) : scheduler_(ctx, SchedulerOptions{}), log_(scheduler_, engineOptions(*env)) {}

  bool hasAlarmHandler() const override { return true; }
  Task<void> alarm(const AlarmInvocationInfo& info) override { return scheduler_.alarm(info); }

  Task<json> call(std::string_view method, const json& args) override {
    // Named locals only: no temporary with a destructor may sit inside a co_await (g++ 12).
    std::exception_ptr failure;
    try {
      if (method == "append") {
        std::vector<LogAppendInput> batch = inputsOf(args);
        Task<EnqueueResult<std::vector<int64_t>>> appending = log_.append(std::move(batch));
        EnqueueResult<std::vector<int64_t>> r = co_await appending;
        json out{{"success", r.success}, {"pending", r.load.outbound.pendingDeliveries}};
        if (r.value) out["offsets"] = *r.value;
        if (r.error) out["error"] = json{{"name", r.error->name}, {"message", r.error->message}};
        co_return out;
      }
      if (method == "read") {
        const int64_t from = args.at("from").get<int64_t>();
        const std::optional<int64_t> limit =
            args.at("limit").is_null() ? std::nullopt : std::optional<int64_t>(args.at("limit").get<int64_t>());
        Task<LogPage> reading = log_.read(from, limit);
        LogPage page = co_await reading;
        json records = json::array();
        for (const LogRecord& r : page.records) records.push_back(recordJson(r));
        co_return json{{"records", records}, {"nextOffset", page.nextOffset}, {"lag", page.lag}};
      }
      if (method == "commit") {
        const std::string consumer = args.at("consumer").get<std::string>();
        const int64_t offset = args.at("offset").get<int64_t>();
        Task<void> committing = log_.commit(consumer, offset);
        co_await committing;
        co_return json::object();
      }
      if (method == "trim") {
        const int64_t removed = co_await log_.trim();
        co_return json{{"removed", removed}};
      }
      if (method == "forget") {
        const int64_t offset = args.at("offset").get<int64_t>();
        const int64_t forgotten = co_await log_.forgetColdBefore(offset);
        co_return json{{"forgotten", forgotten}};
      }
      if (method == "lease") {
        const std::string consumer = args.at("consumer").get<std::string>();
        const std::optional<int64_t> limit =
            args.at("limit").is_null() ? std::nullopt : std::optional<int64_t>(args.at("limit").get<int64_t>());
        Task<std::optional<LogLease>> leasing = log_.lease(consumer, limit);
        std::optional<LogLease> lease = co_await leasing;
        co_return json{{"lease", lease ? leaseJson(*lease) : json()}};
      }
      if (method == "ack" || method == "nack") {
        const std::string consumer = args.at("consumer").get<std::string>();
        const std::string batchId = args.at("batchId").get<std::string>();
        Task<void> settling = method == "ack" ? log_.ack(consumer, batchId) : log_.nack(consumer, batchId);
        co_await settling;
        co_return json::object();
      }
      if (method == "leases") {
        const std::string consumer = args.at("consumer").get<std::string>();
        Task<std::vector<LogLeaseRow>> listing = log_.leases(consumer);
        std::vector<LogLeaseRow> rows = co_await listing;
        json out = json::array();
        for (const LogLeaseRow& r : rows)
          out.push_back(json{{"batch_id", r.batchId},     {"consumer", r.consumer},  {"first_offset", r.firstOffset},
                             {"last_offset", r.lastOffset}, {"state", stateName(r.state)}, {"attempt", r.attempt},
                             {"expires_at", r.expiresAt},   {"created_at", r.createdAt}});
        co_return json{{"rows", out}};
      }
      if (method == "ping") co_return json::object();
      throw std::invalid_argument("unknown method");
    } catch (...) {
      failure = std::current_exception();
    }
    co_return errorJson(failure);
  }

 private:
  // Inputs: {"body": json, "key": string or null, "bad": bool}; a bad body is a NaN (unserializable).
  static std::vector<LogAppendInput> inputsOf(const json& args) {
    std::vector<LogAppendInput> batch;
    for (const json& i : args.at("inputs")) {
      LogAppendInput input;
      input.body = i.at("bad").get<bool>() ? json(std::numeric_limits<double>::quiet_NaN()) : i.at("body");
      if (!i.at("key").is_null()) input.deduplicationKey = i.at("key").get<std::string>();
      batch.push_back(std::move(input));
    }
    return batch;
  }

  DurabilityScheduler scheduler_;
  DurabilityLog log_;
};

// ---------------------------------------------------------------------------------------------
// What the runs covered (summed over all cases, printed at the end).

struct Coverage {
  int64_t cases = 0, commands = 0, appends = 0, rejections = 0, dedupHits = 0, inBatchDuplicates = 0, reads = 0,
          readErrors = 0, rehydrated = 0, commits = 0, trims = 0, trimsRemoving = 0, trimsFailed = 0, intentsResumed = 0,
          forgets = 0, forgetsDeleting = 0, advances = 0, crashes = 0, leases = 0, granted = 0, reclaimed = 0, gaps = 0,
          leaseTruncations = 0, unreadable = 0, poisoned = 0, noneParallelism = 0, noneEmpty = 0, leaseErrors = 0, acks = 0,
          acksRejected = 0, nacks = 0, nacksRejected = 0, listings = 0, segmentsLost = 0;
};
Coverage& coverage() {
  static Coverage c;
  return c;
}

// ---------------------------------------------------------------------------------------------
// The system under test: the rig with the object, and the model with its cold store. All latencies
// are 0: a command runs and commits at the instant it is issued, which is the model's `now`.

struct InputSpec {
  std::optional<std::string> key;  // "" is an invalid (empty) key
  int body = 0;
  bool bad = false;
};

// An offset argument: a fixed value, or one relative to the log's bounds when the command runs
// (below the hot offset reaches cold segments; around nextOffset reaches the end).
struct OffsetSpec {
  enum class Anchor { fixed, oldest, hot, next } anchor = Anchor::fixed;
  int64_t delta = 0;
  int64_t resolve(const model::Bounds& b) const {
    switch (anchor) {
      case Anchor::oldest:
        return b.oldestOffset + delta;
      case Anchor::hot:
        return b.hotOffset + delta;
      case Anchor::next:
        return b.nextOffset + delta;
      case Anchor::fixed:
        break;
    }
    return delta;
  }
  friend std::ostream& operator<<(std::ostream& os, const OffsetSpec& o) {
    static const char* const names[] = {"", "oldest", "hot", "next"};
    if (o.anchor == Anchor::fixed) return os << o.delta;
    return os << names[static_cast<int>(o.anchor)] << std::showpos << o.delta << std::noshowpos;
  }
};

std::string describe(const model::LogError& e) { return e.name + ": " + e.message; }

class Sut {
 public:
  Sut(uint64_t seed, const Config& config)
      : rig_(seed), modelCold_(std::make_shared<ModelCold>()), model_(modelOptions(config, modelCold_)) {
    env_.config = config;
    rig_.faults.set_latency(LatencyKind::rpc, 0);
    rig_.faults.set_latency(LatencyKind::cold, 0);
    rig_.faults.set_latency(LatencyKind::confirm, 0);
    Env* env = &env_;
    rig_.runtime.define_class(kClass, [env](ObjectContext& ctx) { return std::make_unique<LogApp>(ctx, env); });
    call("ping", json::object());
    ++coverage().cases;
  }

  int64_t now() const { return rig_.world.now(); }
  int64_t offsetOf(const OffsetSpec& spec) const { return spec.resolve(model_.bounds()); }

  void append(const std::vector<InputSpec>& inputs) {
    ++coverage().appends;
    json specs = json::array();
    std::vector<model::AppendInput> modelInputs;
    for (const InputSpec& in : inputs) {
      const json body = json{{"n", in.body}};
      specs.push_back(json{{"body", body}, {"key", in.key ? json(*in.key) : json()}, {"bad", in.bad}});
      modelInputs.push_back(model::AppendInput{in.key, in.bad ? std::nullopt : serialize(body)});
    }
    const int64_t at = now();
    const std::size_t eventsBefore = rig_.sink.events.size();
    const json got = call("append", json{{"inputs", specs}});
    // The uuids the engine drew for inputs without a key, as its append transaction reports them.
    std::vector<std::string> uuids;
    if (const std::optional<json> write = probeSince(eventsBefore, "log.append.write"))
      for (std::size_t i = 0; i < inputs.size(); ++i)
        if (!inputs[i].key) uuids.push_back(write->at("keys").at(i).get<std::string>());
    const std::size_t before = model_.records().size();
    const auto expected = model_.append(modelInputs, at, uuids);
    if (!expected.ok()) {
      ++coverage().rejections;
      RC_ASSERT(!got.at("success").get<bool>());
      expectError(got, *expected.error, "append");
    } else {
      if (!got.at("success").get<bool>()) RC_FAIL("append failed: " + got.dump() + "; the model appends");
      RC_ASSERT(got.at("offsets").get<std::vector<int64_t>>() == expected.value.offsets);
      if (static_cast<int64_t>(model_.records().size() - before) < static_cast<int64_t>(inputs.size()))
        ++coverage().dedupHits;
      std::map<int64_t, int> seen;
      for (int64_t o : expected.value.offsets)
        if (++seen[o] == 2) ++coverage().inBatchDuplicates;
    }
    RC_ASSERT(got.at("pending").get<int64_t>() == model_.backlog());
    compare();
  }

  void read(int64_t from, std::optional<int64_t> limit) {
    ++coverage().reads;
    const json got = call("read", json{{"from", from}, {"limit", limit ? json(*limit) : json()}});
    const auto expected = model_.read(from, limit);
    if (!expected.ok()) {
      ++coverage().readErrors;
      expectError(got, *expected.error, "read");
    } else {
      if (got.contains("error")) RC_FAIL("read(" + std::to_string(from) + ") threw " + got.dump() + tables());
      json records = json::array();
      for (const model::Record& r : expected.value.records)
        records.push_back(json{{"offset", r.offset}, {"key", r.key}, {"payload", r.payload}, {"appendedAt", r.appendedAt}});
      const json want{{"records", records}, {"nextOffset", expected.value.nextOffset}, {"lag", expected.value.lag}};
      if (got != want) RC_FAIL("read(" + std::to_string(from) + ") returned " + got.dump() + ", the model " + want.dump());
      if (from < model_.bounds().hotOffset) ++coverage().rehydrated;
    }
    compare();
  }

  void commit(const std::string& consumer, int64_t offset) {
    ++coverage().commits;
    const int64_t at = now();
    const json got = call("commit", json{{"consumer", consumer}, {"offset", offset}});
    const auto expected = model_.commit(consumer, offset, at);
    if (!expected.ok())
      expectError(got, *expected.error, "commit");
    else if (got.contains("error"))
      RC_FAIL("commit threw " + got.dump());
    compare();
  }

  void trim(std::optional<int64_t> failAt, std::optional<int64_t> emptyAt) {
    ++coverage().trims;
    if (model_.flush()) ++coverage().intentsResumed;
    env_.cold->faults = WriteFaults{failAt, emptyAt, 0};
    modelCold_->faults = WriteFaults{failAt, emptyAt, 0};
    const int64_t at = now();
    const json got = call("trim", json::object());
    const auto expected = model_.trim(at);
    if (!expected.ok()) {
      ++coverage().trimsFailed;
      expectError(got, *expected.error, "trim");
    } else {
      if (got.contains("error")) RC_FAIL("trim threw " + got.dump() + ", the model removes " + std::to_string(expected.value));
      RC_ASSERT(got.at("removed").get<int64_t>() == expected.value);
      if (expected.value > 0) ++coverage().trimsRemoving;
    }
    compare();
  }

  void forget(int64_t offset) {
    ++coverage().forgets;
    const json got = call("forget", json{{"offset", offset}});
    const auto expected = model_.forgetColdBefore(offset);
    if (!expected.ok()) {
      expectError(got, *expected.error, "forgetColdBefore");
    } else {
      RC_ASSERT(got.at("forgotten").get<int64_t>() == expected.value);
      if (expected.value > 0) ++coverage().forgetsDeleting;
    }
    compare();
  }

  void advance(int64_t ms) {
    ++coverage().advances;
    rig_.world.executor().at(now() + ms, [] {});  // the clock reaches the target even when idle
    rig_.run_until(now() + ms);
    compare();
  }

  void lease(const std::string& consumer, std::optional<int64_t> limit) {
    ++coverage().leases;
    const int64_t at = now();
    const std::size_t poisonedBefore = env_.poisoned.size();
    const std::size_t eventsBefore = rig_.sink.events.size();
    const json got = call("lease", json{{"consumer", consumer}, {"limit", limit ? json(*limit) : json()}});
    const LeaseProbes probes = leaseProbes(eventsBefore);
    const auto expected = model_.lease(consumer, limit, at, probes.ids);
    for (const std::string& id : {probes.ids.batchId, probes.ids.gapBatchId, probes.ids.skippedBatchId})
      if (id.rfind(kMissingId, 0) != 0) knownIds_.push_back(id);
    const std::string what = "lease(" + consumer + ")";
    if (!expected.ok()) {
      countLeaseError(*expected.error);
      expectError(got, *expected.error, what);
    } else {
      if (got.contains("error")) RC_FAIL(what + " threw " + got.dump() + tables());
      const model::LeaseResult& r = expected.value;
      const json want = r.lease ? leaseJson(*r.lease) : json();
      if (got.at("lease") != want) RC_FAIL(what + " returned " + got.at("lease").dump() + ", the model " + want.dump() + tables());
      if (r.lease) {
        ++coverage().granted;
        if (r.lease->reclaimed) ++coverage().reclaimed;
        RC_ASSERT(probes.reclaimed == r.lease->reclaimed);
      }
      if (r.why == model::NoLease::parallelism || r.why == model::NoLease::empty) {
        const std::string reason = r.why == model::NoLease::parallelism ? "parallelism" : "empty";
        ++(r.why == model::NoLease::parallelism ? coverage().noneParallelism : coverage().noneEmpty);
        if (probes.noneReason != reason) RC_FAIL(what + " granted nothing for \"" + probes.noneReason + "\", the model for " + reason);
      }
      if (r.why == model::NoLease::poisoned) ++coverage().poisoned;
    }
    if (probes.gap) ++coverage().gaps;
    // onPoison ran exactly when the model's skip matched, with the lease the model expects.
    json calls = json::array();
    for (std::size_t i = poisonedBefore; i < env_.poisoned.size(); ++i) calls.push_back(leaseJson(env_.poisoned[i]));
    json wantCalls = json::array();
    if (expected.ok() && expected.value.poisonCallback) wantCalls.push_back(leaseJson(*expected.value.poisonCallback));
    if (calls != wantCalls) RC_FAIL(what + ": onPoison saw " + calls.dump() + ", the model expects " + wantCalls.dump());
    compare();
  }

  void settle(bool ack, const std::string& consumer, const std::string& batchId) {
    ++(ack ? coverage().acks : coverage().nacks);
    const int64_t at = now();
    const json got = call(ack ? "ack" : "nack", json{{"consumer", consumer}, {"batchId", batchId}});
    const auto expected = ack ? model_.ack(consumer, batchId, at) : model_.nack(consumer, batchId, at);
    const std::string what = std::string(ack ? "ack(" : "nack(") + consumer + ", " + batchId + ")";
    if (!expected.ok()) {
      ++(ack ? coverage().acksRejected : coverage().nacksRejected);
      expectError(got, *expected.error, what);
    } else if (got.contains("error")) {
      RC_FAIL(what + " threw " + got.dump() + tables());
    }
    compare();
  }

  void listLeases(const std::string& consumer) {
    ++coverage().listings;
    const json got = call("leases", json{{"consumer", consumer}});
    const auto expected = model_.leases(consumer);
    if (!expected.ok()) {
      expectError(got, *expected.error, "leases(" + consumer + ")");
    } else {
      json want = json::array();
      for (const model::LeaseRow& r : expected.value) want.push_back(leaseRowJson(r));
      if (got.value("rows", json()) != want)
        RC_FAIL("leases(" + consumer + ") returned " + got.dump() + ", the model " + want.dump());
    }
    compare();
  }

  // The batch id an ack/nack names: a row the model holds now (`live`) or any id ever drawn, or
  // one never drawn; `pick` chooses among them.
  std::string batchIdFor(bool live, int pick) const {
    std::vector<std::string> candidates;
    if (live)
      for (const auto& [id, row] : model_.leaseRows())
        if (row.state == model::LeaseState::active) candidates.push_back(id);
    if (candidates.empty()) {
      candidates = knownIds_;
      candidates.push_back("no-such-batch");
    }
    return candidates[static_cast<std::size_t>(pick) % candidates.size()];
  }
  // The consumer of that batch id's row, or `fallback`.
  std::string ownerOf(const std::string& batchId, const std::string& fallback) const {
    auto it = model_.leaseRows().find(batchId);
    return it == model_.leaseRows().end() ? fallback : it->second.consumer;
  }

  // The cold store loses a segment (both sides' fakes): reads and leases of its offsets must then
  // surface truncation, never a gap.
  void loseSegment(int pick) {
    ++coverage().segmentsLost;
    if (env_.cold->stored.empty()) return;
    auto it = std::next(env_.cold->stored.begin(), pick % static_cast<int>(env_.cold->stored.size()));
    modelCold_->stored.erase(it->first);
    env_.cold->stored.erase(it);
    compare();
  }

  // A reset of the object between commands: every commit is confirmed, so the next incarnation opens
  // exactly the model's rows (the trim mutex, in memory, is gone with the incarnation).
  void crash() {
    ++coverage().crashes;
    if (auto status = rig_.status(kLabel)) RC_ASSERT(status->unconfirmed_commits == 0u);
    const int64_t fired = rig_.faults.fired(FaultKind::object_reset);
    rig_.faults.arm(FaultKind::object_reset);  // fires at the end of the ping's segment
    rig_.call(kClass, kObject, "ping");
    rig_.run_until(now());
    RC_ASSERT(rig_.faults.fired(FaultKind::object_reset) == fired + 1);
    compare();
  }

 private:
  // Calls `method` on the object and runs the current instant; the call must complete.
  json call(const std::string& method, const json& args) {
    CallPtr c = rig_.call(kClass, kObject, method, args);
    rig_.run_until(now());
    RC_ASSERT(c->done);
    if (!c->ok) RC_FAIL(method + " failed at the RPC level: " + c->error);
    return c->value;
  }

  void expectError(const json& got, const model::LogError& want, const std::string& what) {
    if (!got.contains("error")) RC_FAIL(what + " returned " + got.dump() + ", the model ends with " + describe(want));
    const json& e = got.at("error");
    if (e.at("name") != want.name || e.at("message") != want.message)
      RC_FAIL(what + " ended with " + e.dump() + ", the model with " + describe(want));
    if (want.name == model::kLogTruncatedError)
      RC_ASSERT(e.at("requested").get<int64_t>() == want.requested && e.at("oldest").get<int64_t>() == want.oldest);
  }

  // What the engine's probes say about the lease call that emitted events from `from` on: the ids it
  // drew (placeholders for ids it did not draw), whether it reclaimed, why it granted nothing.
  struct LeaseProbes {
    model::LeaseIds ids;
    bool reclaimed = false, gap = false;
    std::string noneReason;
  };
  LeaseProbes leaseProbes(std::size_t from) {
    LeaseProbes p;
    const std::string missing = kMissingId + std::to_string(++missingIds_);
    p.ids = model::LeaseIds{missing + "-lease", missing + "-gap", missing + "-skipped"};
    const std::vector<json>& events = rig_.sink.events;
    for (std::size_t i = from; i < events.size(); ++i) {
      const json& e = events[i];
      if (!e.contains("object") || e.at("object") != kLabel) continue;
      const std::string ev = e.at("ev").get<std::string>();
      if (ev == "log.lease.write") {
        p.ids.batchId = e.at("batchId").get<std::string>();
        p.reclaimed = e.at("reclaimed").get<bool>();
        if (!e.at("gapBatchId").is_null()) {
          p.ids.gapBatchId = e.at("gapBatchId").get<std::string>();
          p.gap = true;
        }
      } else if (ev == "log.lease.gap.write") {
        p.ids.gapBatchId = e.at("gapBatchId").get<std::string>();
        p.gap = true;
      } else if (ev == "log.lease.truncate.write" && !e.at("skippedBatchId").is_null()) {
        p.ids.skippedBatchId = e.at("skippedBatchId").get<std::string>();
      } else if (ev == "log.lease.none") {
        p.noneReason = e.at("reason").get<std::string>();
      }
    }
    return p;
  }

  void countLeaseError(const model::LogError& e) {
    if (e.name != model::kLogTruncatedError) {
      ++coverage().leaseErrors;
      return;
    }
    // A trimmed prefix reports the lease's first offset; an unreadable offset reports max(o + 1, hot).
    ++(e.oldest == model_.bounds().oldestOffset ? coverage().leaseTruncations : coverage().unreadable);
  }

  // The first event named `name` of this object emitted since event number `from`.
  std::optional<json> probeSince(std::size_t from, const std::string& name) const {
    const std::vector<json>& events = rig_.sink.events;
    for (std::size_t i = from; i < events.size(); ++i)
      if (events[i].contains("object") && events[i].at("object") == kLabel && events[i].at("ev") == name) return events[i];
    return std::nullopt;
  }

  json query(const std::string& sql) { return rows_json(rig_.runtime.world().stores().live(durasim::sim::object_label(kClass, kObject), sql)); }

  json engineTables() {
    json t;
    t["records"] = query("SELECT \"offset\", dedup_key, payload, bytes, appended_at FROM durability_log_records ORDER BY \"offset\"");
    t["seq"] = query("SELECT next_offset, total_bytes FROM durability_log_seq");
    t["cursors"] = query("SELECT consumer, \"offset\", committed_at FROM durability_log_cursors ORDER BY consumer");
    t["segments"] = query(
        "SELECT first_offset, last_offset, locator, bytes, flushed_at FROM durability_log_segments ORDER BY first_offset");
    t["flush"] = query("SELECT first_offset, last_offset, created_at FROM durability_log_flush");
    const bool leaseTables = !query("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'durability_log_leases'").empty();
    t["leases"] = leaseTables ? query("SELECT batch_id, consumer, first_offset, last_offset, state, attempt, expires_at,"
                                      " created_at FROM durability_log_leases ORDER BY batch_id")
                              : json::array();
    t["allocations"] = leaseTables ? query("SELECT consumer, allocated_offset FROM durability_log_allocations ORDER BY consumer")
                                   : json::array();
    return t;
  }

  json modelTables() const {
    json t;
    t["records"] = json::array();
    for (const auto& [offset, r] : model_.records())
      t["records"].push_back(json{{"offset", r.offset}, {"dedup_key", r.key}, {"payload", r.payload}, {"bytes", r.bytes},
                                  {"appended_at", r.appendedAt}});
    t["seq"] = json::array({json{{"next_offset", model_.nextOffset()}, {"total_bytes", model_.totalBytes()}}});
    t["cursors"] = json::array();
    for (const auto& [consumer, c] : model_.cursors())
      t["cursors"].push_back(json{{"consumer", consumer}, {"offset", c.offset}, {"committed_at", c.committedAt}});
    t["segments"] = json::array();
    for (const auto& [first, s] : model_.segments())
      t["segments"].push_back(json{{"first_offset", s.firstOffset}, {"last_offset", s.lastOffset}, {"locator", s.locator},
                                   {"bytes", s.bytes}, {"flushed_at", s.flushedAt}});
    t["flush"] = json::array();
    if (const auto& f = model_.flush())
      t["flush"].push_back(json{{"first_offset", f->firstOffset}, {"last_offset", f->lastOffset}, {"created_at", f->createdAt}});
    t["leases"] = json::array();
    for (const auto& [id, row] : model_.leaseRows()) t["leases"].push_back(leaseRowJson(row));
    t["allocations"] = json::array();
    for (const auto& [consumer, offset] : model_.allocations())
      t["allocations"].push_back(json{{"consumer", consumer}, {"allocated_offset", offset}});
    return t;
  }

  std::string tables() { return "\nengine tables: " + engineTables().dump() + "\nmodel tables:  " + modelTables().dump(); }

  // Both cold stores hold the same segments, record for record (payloads as stored strings).
  void compareCold() {
    json engine = json::object(), modelSide = json::object();
    for (const auto& [locator, records] : env_.cold->stored)
      for (const LogRecord& r : records) engine[locator].push_back(recordJson(r));
    for (const auto& [locator, records] : modelCold_->stored)
      for (const model::Record& r : records)
        modelSide[locator].push_back(
            json{{"offset", r.offset}, {"key", r.key}, {"payload", r.payload}, {"appendedAt", r.appendedAt}});
    if (engine != modelSide) RC_FAIL("cold stores differ: engine " + engine.dump() + ", model " + modelSide.dump());
  }

  void compare() {
    ++coverage().commands;
    if (auto status = rig_.status(kLabel)) RC_ASSERT(status->unconfirmed_commits == 0u);
    const json engine = engineTables(), expected = modelTables();
    if (engine != expected) RC_FAIL("tables differ at " + std::to_string(now()) + tables());
    compareCold();
  }

  Env env_;
  Rig rig_;
  std::shared_ptr<ModelCold> modelCold_;
  model::LogModel model_;
  std::vector<std::string> knownIds_;  // every batch id the engine drew
  int64_t missingIds_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Commands. They carry their arguments only; the model lives with the system under test.

struct Plan {};
using LogCommand = rc::state::Command<Plan, Sut>;

// Keys from a small pool (dedup hits and in-batch duplicates) or none; rarely an invalid input.
rc::Gen<InputSpec> inputGen() {
  enum class Validity { valid, unserializable, emptyKey };
  return rc::gen::apply(
      [](std::optional<std::string> key, int body, Validity validity) {
        InputSpec in{std::move(key), body, validity == Validity::unserializable};
        if (validity == Validity::emptyKey) in.key = std::string();
        return in;
      },
      rc::gen::weightedOneOf<std::optional<std::string>>(
          {{3, rc::gen::map(rc::gen::elementOf(kKeyPool), [](std::string k) { return std::optional<std::string>(k); })},
           {1, rc::gen::just(std::optional<std::string>())}}),
      rc::gen::element(0, 1, 2, 3),
      rc::gen::weightedElement<Validity>({{40, Validity::valid}, {1, Validity::unserializable}, {1, Validity::emptyKey}}));
}

rc::Gen<std::optional<int64_t>> limitGen() {
  return rc::gen::oneOf(rc::gen::just(std::optional<int64_t>()),
                        rc::gen::map(rc::gen::weightedElement<int64_t>({{1, -1}, {1, 0}, {4, 1}, {4, 2}, {3, 3}, {2, 6}}), [](int64_t v) { return std::optional<int64_t>(v); }));
}

rc::Gen<OffsetSpec> offsetGen() {
  using Anchor = OffsetSpec::Anchor;
  return rc::gen::oneOf(
      rc::gen::map(rc::gen::element<int64_t>(-1, 0, 1, 2, 3, 5, 8, 13), [](int64_t v) { return OffsetSpec{Anchor::fixed, v}; }),
      rc::gen::map(rc::gen::element<int64_t>(0, 1, 2), [](int64_t d) { return OffsetSpec{Anchor::oldest, d}; }),
      rc::gen::map(rc::gen::element<int64_t>(-3, -2, -1, 0), [](int64_t d) { return OffsetSpec{Anchor::hot, d}; }),
      rc::gen::map(rc::gen::element<int64_t>(-2, -1, 0, 1), [](int64_t d) { return OffsetSpec{Anchor::next, d}; }));
}

struct Append final : LogCommand {
  // Mostly 1..4 inputs; sometimes none or more than a small maxBatchSize (rejections).
  std::vector<InputSpec> inputs = *rc::gen::container<std::vector<InputSpec>>(
      *rc::gen::weightedElement<std::size_t>({{12, 1}, {12, 2}, {8, 3}, {1, 0}, {1, 6}}), inputGen());
  void run(const Plan&, Sut& sut) const override { sut.append(inputs); }
  void show(std::ostream& os) const override {
    os << "Append(";
    for (const InputSpec& in : inputs)
      os << "[" << (in.key ? "\"" + *in.key + "\"" : std::string("-")) << " " << (in.bad ? std::string("NaN") : std::to_string(in.body))
         << "]";
    os << ")";
  }
};

struct Read final : LogCommand {
  OffsetSpec from = *offsetGen();
  std::optional<int64_t> limit = *limitGen();
  void run(const Plan&, Sut& sut) const override { sut.read(sut.offsetOf(from), limit); }
  void show(std::ostream& os) const override { os << "Read(" << from << ", " << (limit ? std::to_string(*limit) : "-") << ")"; }
};

struct Commit final : LogCommand {
  std::string consumer = *rc::gen::elementOf(kConsumers);
  OffsetSpec offset = *offsetGen();
  void run(const Plan&, Sut& sut) const override { sut.commit(consumer, sut.offsetOf(offset)); }
  void show(std::ostream& os) const override { os << "Commit(" << consumer << ", " << offset << ")"; }
};

struct Trim final : LogCommand {
  std::optional<int64_t> failAt = *rc::gen::oneOf(rc::gen::just(std::optional<int64_t>()),
                                                  rc::gen::map(rc::gen::element<int64_t>(0, 1), [](int64_t v) {
                                                    return std::optional<int64_t>(v);
                                                  }));
  std::optional<int64_t> emptyAt = *rc::gen::weightedOneOf<std::optional<int64_t>>(
      {{4, rc::gen::just(std::optional<int64_t>())}, {1, rc::gen::just(std::optional<int64_t>(0))}});
  void run(const Plan&, Sut& sut) const override { sut.trim(failAt, emptyAt); }
  void show(std::ostream& os) const override {
    os << "Trim(fail " << (failAt ? std::to_string(*failAt) : "-") << ", empty " << (emptyAt ? std::to_string(*emptyAt) : "-")
       << ")";
  }
};

struct Forget final : LogCommand {
  OffsetSpec offset = *offsetGen();
  void run(const Plan&, Sut& sut) const override { sut.forget(sut.offsetOf(offset)); }
  void show(std::ostream& os) const override { os << "ForgetColdBefore(" << offset << ")"; }
};

rc::Gen<std::string> leaseConsumerGen() {
  return rc::gen::weightedOneOf<std::string>({{20, rc::gen::elementOf(kConsumers)}, {1, rc::gen::just(std::string())}});
}

struct Lease final : LogCommand {
  std::string consumer = *leaseConsumerGen();
  std::optional<int64_t> limit = *rc::gen::weightedOneOf<std::optional<int64_t>>(
      {{1, limitGen()}, {3, rc::gen::just(std::optional<int64_t>())}});
  void run(const Plan&, Sut& sut) const override { sut.lease(consumer, limit); }
  void show(std::ostream& os) const override { os << "Lease(" << consumer << ", " << (limit ? std::to_string(*limit) : "-") << ")"; }
};

// Ack or nack of a live active row (usually by its own consumer) or of a stale or unknown id.
struct Settle final : LogCommand {
  bool ack = *rc::gen::weightedElement<bool>({{3, true}, {2, false}});
  bool live = *rc::gen::weightedElement<bool>({{4, true}, {1, false}});
  bool owner = *rc::gen::weightedElement<bool>({{5, true}, {1, false}});
  int pick = *rc::gen::element(0, 1, 2, 3, 4, 5, 6, 7);
  std::string consumer = *leaseConsumerGen();
  void run(const Plan&, Sut& sut) const override {
    const std::string batchId = sut.batchIdFor(live, pick);
    sut.settle(ack, owner ? sut.ownerOf(batchId, consumer) : consumer, batchId);
  }
  void show(std::ostream& os) const override {
    os << (ack ? "Ack" : "Nack") << "(" << (live ? "live" : "any") << " #" << pick << ", "
       << (owner ? "owner" : "as " + consumer) << ")";
  }
};

struct ListLeases final : LogCommand {
  std::string consumer = *leaseConsumerGen();
  void run(const Plan&, Sut& sut) const override { sut.listLeases(consumer); }
  void show(std::ostream& os) const override { os << "Leases(" << consumer << ")"; }
};

struct Advance final : LogCommand {
  int64_t ms = *rc::gen::element<int64_t>(1, 50, 100, 200, 400, 1000);
  void run(const Plan&, Sut& sut) const override { sut.advance(ms); }
  void show(std::ostream& os) const override { os << "Advance(" << ms << ")"; }
};

struct LoseSegment final : LogCommand {
  int pick = *rc::gen::element(0, 1, 2, 3);
  void run(const Plan&, Sut& sut) const override { sut.loseSegment(pick); }
  void show(std::ostream& os) const override { os << "LoseColdSegment(#" << pick << ")"; }
};

struct Crash final : LogCommand {
  void run(const Plan&, Sut& sut) const override { sut.crash(); }
  void show(std::ostream& os) const override { os << "Crash"; }
};

rc::Gen<std::optional<int64_t>> sometimes(rc::Gen<int64_t> gen) {
  return rc::gen::oneOf(rc::gen::just(std::optional<int64_t>()),
                        rc::gen::map(std::move(gen), [](int64_t v) { return std::optional<int64_t>(v); }));
}

Config configGen() {
  Config c;
  c.maxBatchSize = *rc::gen::element<int64_t>(3, 4, 5, 100).as("maxBatchSize");
  c.retention = *rc::gen::element(true, true, true, false).as("retention");
  c.maxAgeMs = *sometimes(rc::gen::element<int64_t>(50, 150, 500)).as("maxAgeMs");
  c.maxRecords = *sometimes(rc::gen::element<int64_t>(1, 2, 3, 4, 6)).as("maxRecords");
  c.maxBytes = *sometimes(rc::gen::element<int64_t>(40, 70, 100, 160)).as("maxBytes");
  c.cold = *rc::gen::arbitrary<bool>().as("cold");
  if (*rc::gen::weightedElement<bool>({{19, true}, {1, false}}).as("leases")) {
    model::LeaseOptions l;
    l.maxParallelism = *rc::gen::element<int64_t>(1, 2, 3).as("maxParallelism");
    l.leaseMs = *rc::gen::element<int64_t>(100, 300, 1000).as("leaseMs");
    l.maxAttempts = *sometimes(rc::gen::element<int64_t>(1, 2, 3)).as("maxAttempts");
    l.onPoison = *rc::gen::arbitrary<bool>().as("onPoison");
    c.leases = l;
  }
  return c;
}

void engineAgreesWithTheModel() {
  const uint64_t seed = *rc::gen::inRange<uint64_t>(1, 1'000'000).as("world seed");
  const Config config = configGen();
  const auto commands = *rc::gen::resize(
      kMaxCommands - 1,
      rc::state::gen::commands(Plan{}, rc::state::gen::execOneOfWithArgs<
                    Append, Append, Append, Append, Append, Read, Read, Commit, Trim, Trim, Trim, Forget, LoseSegment,
                    Lease, Lease, Lease, Lease, Settle, Settle, Settle, Settle, ListLeases, Advance, Advance, Crash>()));
  Sut sut(seed, config);
  rc::state::runAll(commands, Plan{}, sut);
}

TEST(LogModelState, EngineAgreesWithTheModelOverRandomCommandSequences) {
  const std::optional<std::string> failure =
      runModelProperty("LogModelState/EngineAgreesWithTheModelOverRandomCommandSequences", &engineAgreesWithTheModel, kDefaultCases);
  const Coverage& c = coverage();
  std::cout << "coverage over " << c.cases << " runs: " << c.commands << " compared steps, " << c.appends << " appends ("
            << c.rejections << " rejected, " << c.dedupHits << " with a dedup hit or duplicate, " << c.inBatchDuplicates
            << " in-batch duplicates), " << c.reads << " reads (" << c.readErrors << " errors, " << c.rehydrated
            << " rehydrated), " << c.commits << " commits, " << c.trims << " trims (" << c.trimsRemoving << " removing, "
            << c.trimsFailed << " failed, " << c.intentsResumed << " resuming an intent), " << c.forgets << " forgets ("
            << c.forgetsDeleting << " deleting), " << c.leases << " leases (" << c.granted << " granted, " << c.reclaimed
            << " reclaims, " << c.gaps << " with a gap row, " << c.leaseTruncations << " truncated, " << c.unreadable
            << " unreadable, " << c.poisoned << " poisoned, " << c.noneParallelism << " at maxParallelism, " << c.noneEmpty
            << " empty, " << c.leaseErrors << " argument errors), " << c.acks << " acks (" << c.acksRejected << " rejected), "
            << c.nacks << " nacks (" << c.nacksRejected << " rejected), " << c.listings << " leases() listings, "
            << c.segmentsLost << " cold segments lost, " << c.advances << " advances, " << c.crashes << " resets\n";
  if (failure) FAIL() << *failure;
}

}  // namespace
}  // namespace durasim
