// DurabilityFanout (fanout.md, errors-and-contract.md 2) on the simulated runtime: construction
// checks, enqueue validation and deduplication, delivery passes and their order, settlement and its
// errors, timeouts, retries, exhaustion, dead letters with and without a DLQ, storage targets,
// removed targets, batch delay, memoize, load and the per-row claim variant.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "engine/conventions.h"
#include "engine/errors.h"
#include "engine/fanout.h"
#include "engine/fanout_schema.h"
#include "engine/variants.h"
#include "tests/runtime_test_harness.h"

namespace durasim::rt_test {
namespace {

constexpr const char* kClass = "Mailbox";
constexpr const char* kLabel = "Mailbox/a";

class Host;
using Consume = std::function<Task<void>(Host&, std::vector<FanoutMessage>)>;

// One batch message as the consumer saw it.
struct Seen {
  std::string id, deliveryId, target;
  int64_t attempt = 0, t = 0, enqueuedAt = 0;
  json body;
};

// What the test configures and observes; outlives every incarnation.
struct Env {
  std::set<std::string> consumers{"consumer"};
  std::set<std::string> storages;
  bool ackOnReturn = false;
  bool dlq = true;
  int64_t maxBatchSize = kDefaultFanoutBatchSize, batchDelayMs = 0;
  std::optional<int64_t> attemptTimeoutMs;
  std::optional<RetryOptions> retries;
  Consume consume;  // empty: acknowledge every message
  std::vector<Seen> seen;
  std::vector<std::size_t> batches;  // sizes of the batches delivered, in order
  std::map<std::string, StoredMessage> stored, dead;  // create-only, keyed by StoredMessage.id
  int64_t storedWrites = 0, deadWrites = 0;
  int64_t deadFailures = 0;      // the next n DLQ writes fail
  int64_t storageFailures = 0;   // the next n storage-target writes fail
  std::vector<LifecycleEvent> lifecycle;
  int64_t memoCalls = 0;
  bool resetNow = false;
};

Task<void> write(std::map<std::string, StoredMessage>& into, int64_t& writes, int64_t& failures, const StoredMessage& m) {
  ++writes;
  if (failures > 0) {
    --failures;
    throw std::runtime_error("write refused");
  }
  into.emplace(m.id, m);  // create-only: an existing entry is kept
  co_return;
}

class Host final : public DurableObject {
 public:
  Host(ObjectContext& context, Env* environment) : ctx(context), env(environment), scheduler(context) {
    fanout = std::make_unique<DurabilityFanout>(scheduler, options());
  }

  FanoutOptions options() {
    FanoutOptions o;
    Env* e = env;
    for (const std::string& id : env->consumers) {
      FanoutTarget t;
      t.deliver = [this, e](std::vector<FanoutMessage> messages) -> Task<void> {
        e->batches.push_back(messages.size());
        for (const FanoutMessage& m : messages)
          e->seen.push_back(Seen{m.id, m.deliveryId, m.target, m.attempt, ctx.clock.now(), m.enqueuedAt, m.body});
        if (e->consume) {
          Task<void> consuming = e->consume(*this, messages);
          co_await consuming;
          co_return;
        }
        for (FanoutMessage& m : messages) co_await m.ack();
      };
      t.ackOnReturn = env->ackOnReturn;
      o.targets[id] = t;
    }
    for (const std::string& id : env->storages) {
      FanoutTarget t;
      t.storage = [e](const StoredMessage& m) { return write(e->stored, e->storedWrites, e->storageFailures, m); };
      o.targets[id] = t;
    }
    if (env->dlq) o.dlq = [e](const StoredMessage& m) { return write(e->dead, e->deadWrites, e->deadFailures, m); };
    o.maxBatchSize = env->maxBatchSize;
    o.batchDelayMs = env->batchDelayMs;
    o.attemptTimeoutMs = env->attemptTimeoutMs;
    o.retries = env->retries;
    o.onLifecycleEvent = [e](const LifecycleEvent& event) { e->lifecycle.push_back(event); };
    return o;
  }

  bool hasAlarmHandler() const override { return true; }
  Task<void> alarm(const AlarmInvocationInfo& info) override { return scheduler.alarm(info); }
  Task<json> call(std::string_view method, const json& args) override {
    if (method == "enqueue") {
      std::vector<FanoutInput> inputs;
      for (const json& m : args.at("messages")) {
        FanoutInput in;
        if (m.contains("id")) in.id = m.at("id").get<std::string>();
        if (m.contains("key")) in.deduplicationKey = m.at("key").get<std::string>();
        in.body = m.value("body", json());
        inputs.push_back(std::move(in));
      }
      EnqueueOptions options;
      if (args.contains("targets")) options.targets = args.at("targets").get<std::vector<std::string>>();
      Task<EnqueueResult<std::vector<std::string>>> enqueuing = fanout->enqueue(std::move(inputs), std::move(options));
      const EnqueueResult<std::vector<std::string>> result = co_await enqueuing;
      json out{{"success", result.success}, {"pending", result.load.outbound.pendingDeliveries}};
      if (result.value) out["ids"] = *result.value;
      if (result.error) out["error"] = json{{"name", result.error->name}, {"message", result.error->message}};
      co_return out;
    }
    if (method == "load") {
      const LoadSnapshot load = co_await fanout->load();
      co_return load.outbound.pendingDeliveries;
    }
    co_return json::object();
  }

  ObjectContext& ctx;
  Env* env;
  DurabilityScheduler scheduler;
  std::unique_ptr<DurabilityFanout> fanout;
};

struct EnvHolder {
  Env env;
};

struct FanoutRig : EnvHolder, ObjectRig {
  explicit FanoutRig(sim::RuntimeOptions options = {}) : ObjectRig(kClass, "a", &env.resetNow, std::move(options)) {
    Env* e = &env;
    runtime.define_class(kClass, [e](ObjectContext& ctx) { return std::make_unique<Host>(ctx, e); });
  }
  json enqueue(json messages, std::optional<std::vector<std::string>> targets = std::nullopt, SimTime ms = 1'000) {
    json args{{"messages", std::move(messages)}};
    if (targets) args["targets"] = *targets;
    return done("enqueue", std::move(args), ms);
  }
  int64_t count(const char* table) { return query(std::string("SELECT count(*) AS n FROM ") + table)[0].at("n").get<int64_t>(); }
  json delivery(const std::string& key, const std::string& target) {
    const json rows = query("SELECT * FROM " DURASIM_FANOUT_DELIVERIES " WHERE id = '" + DurabilityFanout::rowId(key, target) + "'");
    return rows.empty() ? json() : rows[0];
  }
  std::vector<json> ev(const std::string& type) const { return events(type, kLabel); }
  std::vector<Seen> seenOf(const std::string& id) const {
    std::vector<Seen> out;
    for (const Seen& s : env.seen)
      if (s.id == id) out.push_back(s);
    return out;
  }
  std::vector<LifecycleEvent> lifecycle(LifecycleType type) const {
    std::vector<LifecycleEvent> out;
    for (const LifecycleEvent& e : env.lifecycle)
      if (e.type == type) out.push_back(e);
    return out;
  }
};

json msg(const std::string& id, json body = json{{"n", 1}}) { return json{{"id", id}, {"body", std::move(body)}}; }

RetryOptions retries(std::optional<int64_t> maxAttempts, std::function<double(int64_t)> delay = [](int64_t) { return 1000.0; }) {
  RetryOptions r;
  r.maxAttempts = maxAttempts;
  r.delay = std::move(delay);
  return r;
}

// Consumers.
Consume nothingSettled() {
  return [](Host&, std::vector<FanoutMessage>) -> Task<void> { co_return; };
}
Consume throwing() {
  return [](Host&, std::vector<FanoutMessage>) -> Task<void> {
    throw std::runtime_error("consumer failed");
    co_return;
  };
}
Consume retryingEvery(std::optional<int64_t> delayMs) {
  return [delayMs](Host&, std::vector<FanoutMessage> messages) -> Task<void> {
    for (FanoutMessage& m : messages) co_await m.retry(delayMs);
  };
}
Consume deadLettering() {
  return [](Host&, std::vector<FanoutMessage> messages) -> Task<void> {
    for (FanoutMessage& m : messages) co_await m.deadLetter();
  };
}

// ---------------------------------------------------------------------------------------------
// Construction (fanout.md 1)

struct Probe final : DurableObject {
  Task<json> call(std::string_view, const json&) override { co_return json(); }
};

// Builds a fanout with `options` in a fresh object and returns the error it threw ("" if none).
std::string constructionError(std::function<void(FanoutOptions&)> edit, bool twice = false) {
  std::string error;
  Rig rig;
  rig.runtime.define_class("C", [&](ObjectContext& ctx) {
    DurabilityScheduler scheduler(ctx);
    FanoutOptions o;
    FanoutTarget consumer;
    consumer.deliver = [](std::vector<FanoutMessage>) -> Task<void> { co_return; };
    o.targets["consumer"] = consumer;
    edit(o);
    try {
      DurabilityFanout first(scheduler, o);
      if (twice) DurabilityFanout second(scheduler, o);
    } catch (const DurabilityError& e) {
      error = e.name() + ": " + e.what();
    }
    if (error.empty() || !twice) {
      const json tables = rows_json(ctx.storage.exec("SELECT name FROM sqlite_master WHERE name LIKE 'durability_fanout%'"));
      if (!error.empty() && !tables.empty()) error += " (and wrote " + tables.dump() + ")";
    }
    return std::make_unique<Probe>();
  });
  rig.call("C", "c", "ping");
  rig.run_for(1'000);
  return error;
}

TEST(FanoutConstruction, InvalidOptionsThrowBeforeAnyWrite) {
  EXPECT_EQ(constructionError([](FanoutOptions& o) { o.maxBatchSize = 0; }), "RangeError: maxBatchSize must be a positive integer");
  EXPECT_EQ(constructionError([](FanoutOptions& o) { o.batchDelayMs = -1; }),
            "RangeError: batchDelayMs must be a non-negative integer");
  EXPECT_EQ(constructionError([](FanoutOptions& o) { o.targets.clear(); }), "TypeError: Fanout requires at least one static target");
  EXPECT_EQ(constructionError([](FanoutOptions& o) { o.targets[""] = o.targets.at("consumer"); }),
            "TypeError: Invalid fanout target \"\"");
  EXPECT_EQ(constructionError([](FanoutOptions& o) { o.targets["both"] = o.targets.at("consumer"); o.targets["both"].storage = [](const StoredMessage&) -> Task<void> { co_return; }; }),
            "TypeError: Invalid fanout target \"both\"");
  EXPECT_EQ(constructionError([](FanoutOptions& o) { o.targets["neither"] = FanoutTarget{}; }), "TypeError: Invalid fanout target \"neither\"");
  EXPECT_EQ(constructionError([](FanoutOptions& o) { o.attemptTimeoutMs = 0; }), "RangeError: attemptTimeoutMs must be a positive integer");
  EXPECT_EQ(constructionError([](FanoutOptions& o) { o.targets.at("consumer").retries = retries(0); }),
            "RangeError: maxAttempts must be a positive integer");
  EXPECT_EQ(constructionError([](FanoutOptions&) {}), "");
}

TEST(FanoutConstruction, OneFanoutPerScheduler) {
  EXPECT_EQ(constructionError([](FanoutOptions&) {}, true), "TypeError: Scheduler participant \"deliveries\" is already attached");
}

TEST(FanoutConstruction, MigrateNoneRemovesTheSchema) {
  FanoutRig rig;
  rig.enqueue(json::array({msg("m1")}));
  EXPECT_EQ(rig.count(DURASIM_FANOUT_SEQ), 1);
  rig.runtime.define_class("Drop", [](ObjectContext& ctx) {
    DurabilityFanout::migrate(ctx.storage, MigrationTarget::none());
    EXPECT_TRUE(rows_json(ctx.storage.exec("SELECT name FROM sqlite_master WHERE name LIKE 'durability_fanout%'")).empty());
    return std::make_unique<Probe>();
  });
  rig.call("Drop", "d", "ping");
  rig.run_for(1'000);
  EXPECT_EQ(rig.runtime.status().size(), 2u);
}

// ---------------------------------------------------------------------------------------------
// Enqueue (fanout.md 3)

TEST(FanoutEnqueue, RejectionsWriteNothing) {
  FanoutRig rig;
  rig.env.consumers = {"a", "b"};
  auto rejected = [&](json messages, std::optional<std::vector<std::string>> targets) {
    const json out = rig.enqueue(std::move(messages), std::move(targets));
    EXPECT_EQ(out.at("success"), false) << out.dump();
    EXPECT_EQ(out.at("error").at("name"), "FanoutEnqueueError") << out.dump();
    return out.at("error").at("message").get<std::string>();
  };
  const std::string targetsMessage = "Enqueue targets must be distinct configured target IDs";
  EXPECT_EQ(rejected(json::array({msg("m")}), std::vector<std::string>{"c"}), targetsMessage);
  EXPECT_EQ(rejected(json::array({msg("m")}), std::vector<std::string>{"a", "a"}), targetsMessage);
  EXPECT_EQ(rejected(json::array({msg("m")}), std::vector<std::string>{}), targetsMessage);
  EXPECT_EQ(rejected(json::array(), std::nullopt), "Enqueue requires at least one message");
  EXPECT_EQ(rejected(json::array({msg("ok"), msg("")}), std::nullopt), "Message id and deduplication key must be non-empty strings");
  EXPECT_EQ(rejected(json::array({json{{"id", "m"}, {"key", ""}}}), std::nullopt),
            "Message id and deduplication key must be non-empty strings");
  EXPECT_EQ(rejected(json::array({msg("m", json{{"x", std::nan("")}})}), std::nullopt), "Message body is not serializable JSON");
  EXPECT_EQ(rig.count(DURASIM_FANOUT_MESSAGES), 0);
  EXPECT_EQ(rig.count(DURASIM_FANOUT_DELIVERIES), 0);
  EXPECT_TRUE(rig.env.seen.empty());
}

TEST(FanoutEnqueue, WritesOneManifestAndOneRowPerTargetWithFrozenRecipients) {
  FanoutRig rig;
  rig.env.consumers = {"b", "a"};
  rig.env.consume = nothingSettled();
  rig.env.attemptTimeoutMs = 3'600'000;
  const json out = rig.enqueue(json::array({msg("m1"), json{{"body", 2}}}), std::nullopt, 10);
  ASSERT_EQ(out.at("success"), true) << out.dump();
  ASSERT_EQ(out.at("ids").size(), 2u);
  EXPECT_EQ(out.at("ids")[0], "m1");
  const std::string generated = out.at("ids")[1].get<std::string>();
  EXPECT_EQ(generated.size(), 36u) << "a UUID id, which is also the key";
  const json manifests = rig.query("SELECT * FROM " DURASIM_FANOUT_MESSAGES " ORDER BY seq");
  ASSERT_EQ(manifests.size(), 2u);
  EXPECT_EQ(manifests[0].at("key"), "m1");
  EXPECT_EQ(manifests[0].at("targets"), "[\"a\",\"b\"]");
  EXPECT_EQ(manifests[0].at("remaining"), 2);
  EXPECT_EQ(manifests[1].at("key"), generated);
  EXPECT_EQ(manifests[1].at("seq").get<int64_t>(), manifests[0].at("seq").get<int64_t>() + 1);
  const json row = rig.delivery("m1", "a");
  EXPECT_EQ(row.at("seq"), manifests[0].at("seq"));
  EXPECT_EQ(row.at("generation_id"), manifests[0].at("generation_id"));
  EXPECT_EQ(row.at("phase"), "delivery");
  EXPECT_EQ(rig.count(DURASIM_FANOUT_DELIVERIES), 4);
  EXPECT_EQ(out.at("pending"), 4);
  EXPECT_EQ(rig.lifecycle(LifecycleType::registered).size(), 4u);
  // Only some targets: the manifest names just those.
  rig.enqueue(json::array({msg("m3")}), std::vector<std::string>{"b"}, 10);
  EXPECT_EQ(rig.query("SELECT targets FROM " DURASIM_FANOUT_MESSAGES " WHERE key = 'm3'")[0].at("targets"), "[\"b\"]");
  EXPECT_TRUE(rig.delivery("m3", "a").is_null());
}

TEST(FanoutEnqueue, IdenticalWorkIsADedupHitAndDifferentWorkRejectsTheWholeBatch) {
  FanoutRig rig;
  rig.env.consume = nothingSettled();
  rig.env.attemptTimeoutMs = 3'600'000;
  rig.enqueue(json::array({msg("m1")}), std::nullopt, 10);
  const json before = rig.query("SELECT * FROM " DURASIM_FANOUT_DELIVERIES);
  const json again = rig.enqueue(json::array({msg("m1")}), std::nullopt, 10);
  EXPECT_EQ(again.at("success"), true);
  EXPECT_EQ(again.at("ids"), json::array({"m1"}));
  EXPECT_EQ(rig.query("SELECT * FROM " DURASIM_FANOUT_DELIVERIES), before) << "a hit writes nothing";
  const json conflict = rig.enqueue(json::array({msg("fresh"), msg("m1", json{{"n", 2}})}), std::nullopt, 10);
  EXPECT_EQ(conflict.at("success"), false);
  EXPECT_EQ(conflict.at("error").at("message"), "Deduplication key \"m1\" already identifies different work");
  EXPECT_EQ(rig.count(DURASIM_FANOUT_MESSAGES), 1) << "the whole batch rolled back";
  // A key repeated inside one batch: the second is a hit on the first.
  const json twice = rig.enqueue(json::array({msg("d"), msg("d")}), std::nullopt, 10);
  EXPECT_EQ(twice.at("ids"), json::array({"d", "d"}));
  EXPECT_EQ(rig.count(DURASIM_FANOUT_MESSAGES), 2);
}

TEST(FanoutEnqueue, SequenceSurvivesDeletesAndAKeyIsReusableOnceSettled) {
  FanoutRig rig;
  rig.enqueue(json::array({msg("m1")}));
  EXPECT_EQ(rig.count(DURASIM_FANOUT_MESSAGES), 0) << "acknowledged by the eager pass";
  EXPECT_EQ(rig.query("SELECT next_seq FROM " DURASIM_FANOUT_SEQ)[0].at("next_seq"), 1);
  rig.env.consume = nothingSettled();
  rig.env.attemptTimeoutMs = 3'600'000;
  rig.enqueue(json::array({msg("m1", json{{"n", 9}})}), std::nullopt, 10);
  EXPECT_EQ(rig.query("SELECT seq FROM " DURASIM_FANOUT_MESSAGES)[0].at("seq"), 1);
  ASSERT_EQ(rig.seenOf("m1").size(), 2u);
  EXPECT_NE(rig.seenOf("m1")[0].deliveryId, rig.seenOf("m1")[1].deliveryId) << "a fresh registration";
  EXPECT_EQ(rig.seenOf("m1")[1].attempt, 1);
}

// ---------------------------------------------------------------------------------------------
// Delivery and settlement (fanout.md 4, 5)

TEST(FanoutDelivery, TheConsumerSeesTheClaimAndAckRemovesRowAndManifest) {
  FanoutRig rig;
  rig.enqueue(json::array({msg("m1", json{{"k", "v"}})}));
  ASSERT_EQ(rig.env.seen.size(), 1u);
  const Seen& s = rig.env.seen[0];
  EXPECT_EQ(s.attempt, 1);
  EXPECT_EQ(s.body, (json{{"k", "v"}}));
  EXPECT_EQ(s.target, "consumer");
  EXPECT_EQ(json::parse(s.deliveryId)[1], "consumer");
  EXPECT_EQ(json::parse(s.deliveryId)[0].get<std::string>().size(), 36u);
  EXPECT_EQ(rig.count(DURASIM_FANOUT_DELIVERIES), 0);
  EXPECT_EQ(rig.count(DURASIM_FANOUT_MESSAGES), 0);
  EXPECT_EQ(rig.lifecycle(LifecycleType::attempt_settled).size(), 1u);
  EXPECT_EQ(rig.done("load"), 0);
}

TEST(FanoutDelivery, FirstDeliveriesInSeqOrderAheadOfRetriesAndAtMostMaxBatchSize) {
  FanoutRig rig;
  rig.env.maxBatchSize = 3;
  rig.env.retries = retries(5, [](int64_t) { return 1.0; });
  int round = 0;
  rig.env.consume = [&round](Host& h, std::vector<FanoutMessage> messages) -> Task<void> {
    // The first batch holds the pass for 20 s and leaves its messages unsettled (retries due 1 ms
    // after it ends); meanwhile two first deliveries become due. Later batches acknowledge.
    if (round++ == 0) {
      co_await h.ctx.clock.sleepFor(20'000);
      co_return;
    }
    for (FanoutMessage& m : messages) co_await m.ack();
  };
  rig.enqueue(json::array({msg("r1"), msg("r2")}), std::nullopt, 1'000);
  rig.enqueue(json::array({msg("f1"), msg("f2")}), std::nullopt, 60'000);
  std::vector<std::string> order;
  for (const Seen& s : rig.env.seen) order.push_back(s.id);
  EXPECT_EQ(order, (std::vector<std::string>{"r1", "r2", "f1", "f2", "r1", "r2"}))
      << "first deliveries in seq order ahead of the retries, which follow in seq order";
  EXPECT_EQ(rig.env.batches, (std::vector<std::size_t>{2, 3, 1})) << "at most maxBatchSize per pass";
  EXPECT_EQ(rig.count(DURASIM_FANOUT_DELIVERIES), 0);
}

TEST(FanoutDelivery, ReturningWithoutSettlingRetriesWithTheSpecifiedError) {
  FanoutRig rig;
  rig.env.consume = nothingSettled();
  rig.env.retries = retries(5, [](int64_t) { return 7'000.0; });
  const json out = rig.enqueue(json::array({msg("m1")}), std::nullopt, 100);
  ASSERT_EQ(out.at("success"), true);
  const json row = rig.delivery("m1", "consumer");
  EXPECT_EQ(row.at("attempt"), 1);
  EXPECT_EQ(row.at("last_error"), "Consumer returned without settling the message");
  EXPECT_EQ(row.at("last_error_name"), "Error");
  EXPECT_EQ(row.at("next_attempt_at"), rig.env.seen[0].t + 7'000);
  rig.run_for(10'000);
  ASSERT_EQ(rig.seenOf("m1").size(), 2u);
  EXPECT_EQ(rig.seenOf("m1")[1].attempt, 2);
  EXPECT_EQ(rig.seenOf("m1")[1].deliveryId, rig.seenOf("m1")[0].deliveryId) << "stable delivery identity";
}

TEST(FanoutDelivery, AckOnReturnAcknowledgesOnlyWhatIsUnsettledAndNothingAfterAThrow) {
  FanoutRig rig;
  rig.env.ackOnReturn = true;
  rig.env.consume = [](Host&, std::vector<FanoutMessage> messages) -> Task<void> {
    for (FanoutMessage& m : messages)
      if (m.id == "later") co_await m.retry(60'000);
  };
  rig.enqueue(json::array({msg("a1"), msg("later"), msg("a2")}));
  EXPECT_TRUE(rig.delivery("a1", "consumer").is_null());
  EXPECT_TRUE(rig.delivery("a2", "consumer").is_null());
  ASSERT_FALSE(rig.delivery("later", "consumer").is_null()) << "an explicit retry is respected";
  EXPECT_EQ(rig.delivery("later", "consumer").at("last_error_name"), "Retry");
  rig.env.consume = throwing();
  rig.enqueue(json::array({msg("t1")}));
  ASSERT_FALSE(rig.delivery("t1", "consumer").is_null()) << "a throw acknowledges nothing";
  EXPECT_EQ(rig.delivery("t1", "consumer").at("last_error"), "consumer failed");
}

TEST(FanoutSettlement, ASecondOrLateCallIsAFanoutSettlementError) {
  FanoutRig rig;
  auto errors = std::make_shared<std::vector<std::string>>();
  auto kept = std::make_shared<std::vector<FanoutMessage>>();
  rig.env.consume = [errors, kept](Host&, std::vector<FanoutMessage> messages) -> Task<void> {
    FanoutMessage& m = messages[0];
    co_await m.ack();
    for (int i = 0; i < 2; ++i) {
      try {
        if (i == 0) co_await m.retry();
        else co_await m.deadLetter();
      } catch (const FanoutSettlementError& e) {
        errors->push_back(e.what());
      }
    }
    kept->push_back(m);
  };
  rig.enqueue(json::array({msg("m1")}));
  EXPECT_EQ(*errors, (std::vector<std::string>{"Fanout delivery \"m1\" was already settled as \"ack\"",
                                               "Fanout delivery \"m1\" was already settled as \"ack\""}));
  // A copy of a message of a closed batch whose outcome was never chosen is stale.
  rig.env.consume = [kept](Host&, std::vector<FanoutMessage> messages) -> Task<void> {
    kept->push_back(messages[0]);
    co_return;
  };
  rig.enqueue(json::array({msg("m2")}));
  std::string late;
  rig.world.tasks().spawn("late", [](std::shared_ptr<std::vector<FanoutMessage>> kept, std::string* late) -> Task<void> {
    try {
      co_await kept->back().ack();
    } catch (const FanoutSettlementError& e) {
      *late = e.what();
    }
  }(kept, &late));
  rig.run_for(100);
  EXPECT_EQ(late, "Fanout delivery \"m2\" is stale");
}

TEST(FanoutSettlement, AnInvalidRetryDelayIsARangeErrorThatDoesNotConsumeTheSettlement) {
  FanoutRig rig;
  auto errors = std::make_shared<std::vector<std::string>>();
  rig.env.consume = [errors](Host&, std::vector<FanoutMessage> messages) -> Task<void> {
    for (int64_t bad : {int64_t{-1}, kMaxSafeInteger}) {
      try {
        co_await messages[0].retry(bad);
      } catch (const RangeError& e) {
        errors->push_back(e.what());
      }
    }
    co_await messages[0].ack();
  };
  rig.enqueue(json::array({msg("m1")}));
  EXPECT_EQ(errors->size(), 2u);
  EXPECT_EQ(errors->at(0), "delayMs must be a non-negative safe integer");
  EXPECT_TRUE(rig.delivery("m1", "consumer").is_null()) << "the ack after the rejected retry took effect";
}

TEST(FanoutSettlement, ATimedOutBatchIsRetriedAndItsLateAckRejected) {
  FanoutRig rig;
  rig.env.attemptTimeoutMs = 5'000;
  rig.env.retries = retries(5, [](int64_t) { return 1'000'000.0; });
  auto late = std::make_shared<std::string>();
  rig.env.consume = [late](Host& h, std::vector<FanoutMessage> messages) -> Task<void> {
    co_await h.ctx.clock.sleepFor(8'000);
    try {
      co_await messages[0].ack();
    } catch (const FanoutSettlementError& e) {
      *late = e.what();
    }
  };
  rig.enqueue(json::array({msg("m1")}), std::nullopt, 10'000);
  EXPECT_EQ(*late, "Fanout delivery \"m1\" is stale");
  const json row = rig.delivery("m1", "consumer");
  ASSERT_FALSE(row.is_null());
  EXPECT_EQ(row.at("last_error_name"), "FanoutTimeoutError");
  EXPECT_EQ(row.at("last_error"), "Fanout delivery timed out after 5000ms");
  EXPECT_EQ(row.at("next_attempt_at"), rig.env.seen[0].t + 5'000 + 1'000'000);
}

// ---------------------------------------------------------------------------------------------
// Exhaustion and dead letters (fanout.md 5.4, 6)

TEST(FanoutDeadLetters, ExhaustionWritesTheDlqEntryThenRemovesTheRow) {
  FanoutRig rig;
  rig.env.retries = retries(3, [](int64_t) { return 1'000.0; });
  rig.env.consume = throwing();
  rig.enqueue(json::array({msg("m1")}), std::nullopt, 60'000);
  EXPECT_EQ(rig.seenOf("m1").size(), 3u) << "maxAttempts deliveries";
  ASSERT_EQ(rig.env.dead.size(), 1u);
  const StoredMessage& entry = rig.env.dead.begin()->second;
  EXPECT_EQ(entry.id, rig.seenOf("m1")[0].deliveryId);
  EXPECT_EQ(entry.messageId, "m1");
  EXPECT_EQ(entry.attempts, 3);
  ASSERT_TRUE(entry.failure.has_value());
  EXPECT_EQ(entry.failure->reason, "exhausted");
  ASSERT_TRUE(entry.failure->error.has_value());
  EXPECT_EQ(entry.failure->error->message, "consumer failed");
  EXPECT_EQ(rig.count(DURASIM_FANOUT_DELIVERIES), 0);
  ASSERT_EQ(rig.lifecycle(LifecycleType::terminal).size(), 1u);
  EXPECT_EQ(rig.lifecycle(LifecycleType::terminal)[0].reason, TerminalReason::attempts_exhausted);
}

TEST(FanoutDeadLetters, AFailingDlqKeepsTheIntentAndNeverRedelivers) {
  FanoutRig rig;
  rig.env.deadFailures = 2;
  rig.env.consume = deadLettering();
  rig.enqueue(json::array({msg("m1")}), std::nullopt, 1'000);
  json row = rig.delivery("m1", "consumer");
  ASSERT_FALSE(row.is_null());
  EXPECT_EQ(row.at("phase"), "dead_letter");
  EXPECT_EQ(row.at("dead_letter_reason"), "explicit");
  const int64_t intentAt = row.at("dead_lettered_at").get<int64_t>();
  EXPECT_EQ(row.at("next_attempt_at"), intentAt + kFanoutDlqRetryMs);
  rig.run_for(200'000);
  EXPECT_EQ(rig.seenOf("m1").size(), 1u) << "the consumer is never called again";
  EXPECT_EQ(rig.env.deadWrites, 3);
  ASSERT_EQ(rig.env.dead.size(), 1u);
  EXPECT_EQ(rig.env.dead.begin()->second.storedAt, intentAt) << "the same dead_lettered_at on every try";
  EXPECT_EQ(rig.count(DURASIM_FANOUT_DELIVERIES), 0);
  ASSERT_EQ(rig.lifecycle(LifecycleType::terminal).size(), 1u);
  EXPECT_EQ(rig.lifecycle(LifecycleType::terminal)[0].reason, TerminalReason::dead_lettered);
}

TEST(FanoutDeadLetters, WithoutADlqTerminalDeliveriesAreDroppedAndReported) {
  FanoutRig rig;
  rig.env.dlq = false;
  rig.env.consume = deadLettering();
  rig.env.consumers = {"consumer", "other"};
  rig.enqueue(json::array({msg("m1")}));
  EXPECT_EQ(rig.count(DURASIM_FANOUT_DELIVERIES), 0);
  EXPECT_EQ(rig.count(DURASIM_FANOUT_MESSAGES), 0) << "the manifest goes with its last row";
  EXPECT_EQ(rig.lifecycle(LifecycleType::terminal).size(), 2u);
}

TEST(FanoutDeadLetters, ARetryOnTheLastAttemptDeadLettersAsExhausted) {
  FanoutRig rig;
  rig.env.retries = retries(1);
  rig.env.consume = retryingEvery(5);
  rig.enqueue(json::array({msg("m1")}));
  ASSERT_EQ(rig.env.dead.size(), 1u);
  EXPECT_EQ(rig.env.dead.begin()->second.failure->reason, "exhausted");
  EXPECT_EQ(rig.env.dead.begin()->second.failure->error->name, "Retry");
}

TEST(FanoutDeadLetters, AnInvalidDelayDeadLettersWithTheRetryPolicyError) {
  FanoutRig rig;
  rig.env.retries = retries(5, [](int64_t) { return -1.0; });
  rig.env.consume = throwing();
  rig.enqueue(json::array({msg("m1")}));
  ASSERT_EQ(rig.env.dead.size(), 1u);
  EXPECT_EQ(rig.env.dead.begin()->second.failure->error->name, "DurableRetryPolicyError");
  EXPECT_EQ(rig.env.dead.begin()->second.failure->error->message,
            "Retry policy for fanout target \"consumer\" must produce a non-negative safe-integer timestamp");
}

// ---------------------------------------------------------------------------------------------
// Storage targets, removed targets, batch delay (fanout.md 4.2, 5.1, 3)

TEST(FanoutTargets, AStorageTargetWritesTheDeliveryIdentityAndIsAcknowledged) {
  FanoutRig rig;
  rig.env.storages = {"archive"};
  rig.env.storageFailures = 1;
  rig.env.retries = retries(5, [](int64_t) { return 1'000.0; });
  rig.enqueue(json::array({msg("m1")}), std::nullopt, 5'000);
  ASSERT_EQ(rig.env.stored.size(), 1u);
  const StoredMessage& s = rig.env.stored.begin()->second;
  EXPECT_EQ(json::parse(s.id)[1], "archive");
  EXPECT_EQ(s.messageId, "m1");
  EXPECT_EQ(s.attempts, 2) << "the first write failed";
  EXPECT_FALSE(s.failure.has_value());
  EXPECT_TRUE(rig.delivery("m1", "archive").is_null());
  EXPECT_TRUE(rig.delivery("m1", "consumer").is_null());
}

TEST(FanoutTargets, RowsOfARemovedTargetArePostponedNeverDeliveredNorDropped) {
  FanoutRig rig;
  rig.env.consumers = {"consumer", "gone"};
  rig.env.batchDelayMs = 100'000;
  rig.enqueue(json::array({msg("m1")}), std::nullopt, 10);
  rig.env.consumers = {"consumer"};
  rig.env.resetNow = true;  // the next incarnation is built without "gone"
  rig.done("load", json::object(), 10);
  rig.run_for(400'000);
  const json row = rig.delivery("m1", "gone");
  ASSERT_FALSE(row.is_null());
  EXPECT_EQ(row.at("attempt"), 0);
  EXPECT_TRUE(row.at("last_error").is_null());
  EXPECT_GE(row.at("next_attempt_at").get<int64_t>(), rig.world.now());
  EXPECT_TRUE(rig.delivery("m1", "consumer").is_null()) << "the configured sibling was delivered";
  for (const Seen& s : rig.env.seen) EXPECT_NE(s.target, "gone");
  EXPECT_GE(rig.ev("fan.postpone.write").size(), 3u);
}

TEST(FanoutTargets, BatchDelayRoundsTheFirstDueTimeAndRunsNoEagerPass) {
  FanoutRig rig;
  rig.env.batchDelayMs = 60'000;
  rig.env.consume = nothingSettled();
  rig.env.attemptTimeoutMs = 3'600'000;
  rig.enqueue(json::array({msg("m1")}), std::nullopt, 10);
  const json row = rig.delivery("m1", "consumer");
  const int64_t created = row.at("created_at").get<int64_t>();
  const int64_t due = row.at("next_attempt_at").get<int64_t>();
  EXPECT_EQ(due % 60'000, 0);
  EXPECT_GE(due, created);
  EXPECT_LT(due, created + 60'000);
  EXPECT_TRUE(rig.env.seen.empty()) << "no eager pass";
}

// ---------------------------------------------------------------------------------------------
// Memoize and load (fanout.md 7, 8)

TEST(FanoutMemoize, AFinishedStepIsReusedByLaterAttemptsAndDeletedWithItsRow) {
  FanoutRig rig;
  rig.env.retries = retries(5, [](int64_t) { return 1'000.0; });
  rig.env.consume = [](Host& h, std::vector<FanoutMessage> messages) -> Task<void> {
    Env* e = h.env;
    const json v = co_await messages[0].memoize("step", [e]() -> Task<json> {
      ++e->memoCalls;
      co_return json{{"computed", e->memoCalls}};
    });
    EXPECT_EQ(v, (json{{"computed", 1}}));
    if (messages[0].attempt < 3) throw std::runtime_error("later step failed");
    co_await messages[0].ack();
  };
  rig.enqueue(json::array({msg("m1")}), std::nullopt, 10'000);
  EXPECT_EQ(rig.seenOf("m1").size(), 3u);
  EXPECT_EQ(rig.env.memoCalls, 1);
  EXPECT_EQ(rig.count(DURASIM_FANOUT_MEMOS), 0);
}

TEST(FanoutLoad, PendingCountsEveryStoredRow) {
  FanoutRig rig;
  rig.env.consumers = {"a", "b"};
  rig.env.consume = nothingSettled();
  rig.env.attemptTimeoutMs = 3'600'000;
  rig.enqueue(json::array({msg("m1"), msg("m2")}), std::nullopt, 10);
  EXPECT_EQ(rig.done("load", json::object(), 10), 4);
}

// ---------------------------------------------------------------------------------------------
// The whole-batch claim and its variant (fanout.md 4.2 step 6, hazards.md H-F1)

TEST(FanoutClaim, OneTransactionClaimsTheBatchAndTheVariantClaimsPerRow) {
  for (const bool perRow : {false, true}) {
    sim::RuntimeOptions options;
    if (perRow) options.variants.insert(std::string(variants::kFanoutPerRowClaim));
    FanoutRig rig(options);
    rig.env.batchDelayMs = 1'000;
    rig.enqueue(json::array({msg("m1"), msg("m2"), msg("m3")}), std::nullopt, 5'000);
    EXPECT_EQ(rig.env.batches, std::vector<std::size_t>({3}));
    EXPECT_EQ(rig.ev("fan.claim.write").size(), perRow ? 3u : 1u);
    EXPECT_EQ(rig.count(DURASIM_FANOUT_DELIVERIES), 0);
  }
}

}  // namespace
}  // namespace durasim::rt_test
