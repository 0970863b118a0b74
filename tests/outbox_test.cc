// DurabilityOutbox (outbox.md) on the simulated runtime: construction checks, staging inside the
// application's transaction and on its own, versions across deletes, restaging, channel passes
// (claim order, batch size, publish, acknowledgement fenced by generation), retry marks and late
// marks, publish failures and timeouts retried forever, policy fallback, batch delay, unattached
// channels, several channels on one scheduler, migration removal and one reconcile per transaction.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/errors.h"
#include "engine/outbox.h"
#include "engine/outbox_schema.h"
#include "engine/variants.h"
#include "tests/runtime_test_harness.h"

namespace durasim::rt_test {
namespace {

constexpr const char* kClass = "Account";
constexpr const char* kLabel = "Account/a";

class Host;
using Publish = std::function<Task<void>(Host&, std::vector<OutboxEntry>)>;

// One entry as the sink saw it.
struct Published {
  std::string channel, key;
  int64_t version = 0, attempt = 0, t = 0;
  json value;
};

// What the test configures and observes; outlives every incarnation.
struct Env {
  std::vector<std::string> channels{"default"};
  int64_t maxBatchSize = 50, batchDelayMs = 0, attemptTimeoutMs = 60'000;
  std::function<double(int64_t)> delay = [](int64_t) { return 1'000.0; };
  Publish publish;  // empty: return normally (acknowledge every entry)
  std::vector<Published> published;
  std::vector<std::size_t> batches;
  std::vector<OutboxEntry> kept;  // entries a publisher kept past its batch
  std::vector<LifecycleEvent> lifecycle;
  bool resetNow = false;
};

class Host final : public DurableObject {
 public:
  Host(ObjectContext& context, Env* environment) : ctx(context), env(environment), scheduler(context) {
    ctx.storage.exec("CREATE TABLE IF NOT EXISTS balances (key TEXT PRIMARY KEY, amount INTEGER NOT NULL)");
    for (const std::string& channel : env->channels) outboxes[channel] = std::make_unique<DurabilityOutbox>(scheduler, options(channel));
  }

  OutboxOptions options(const std::string& channel) {
    OutboxOptions o;
    Env* e = env;
    o.channel = channel;
    o.publish = [this, e](std::vector<OutboxEntry> entries) -> Task<void> {
      e->batches.push_back(entries.size());
      for (const OutboxEntry& entry : entries)
        e->published.push_back(Published{entry.channel, entry.key, entry.version, entry.attempt, ctx.clock.now(), entry.value});
      if (e->publish) {
        Task<void> publishing = e->publish(*this, entries);
        co_await publishing;
      }
    };
    o.maxBatchSize = env->maxBatchSize;
    o.batchDelayMs = env->batchDelayMs;
    o.attemptTimeoutMs = env->attemptTimeoutMs;
    o.retries.delay = env->delay;
    o.onLifecycleEvent = [e](const LifecycleEvent& event) { e->lifecycle.push_back(event); };
    return o;
  }

  bool hasAlarmHandler() const override { return true; }
  Task<void> alarm(const AlarmInvocationInfo& info) override { return scheduler.alarm(info); }

  // stage {channel?, stages: [{key, value}], abort?}: one application transaction writing a balance
  // row and staging each value; `abort` throws after the stages. Returns the versions.
  Task<json> call(std::string_view method, const json& args) override {
    DurabilityOutbox& outbox = *outboxes.at(args.value("channel", std::string("default")));
    if (method == "stage") {
      const json stages = args.at("stages");
      const bool abort = args.value("abort", false);
      json versions = json::array();
      try {
        Task<void> writing = ctx.storage.transaction([&](StorageTxn& txn) {
          for (const json& s : stages) {
            txn.exec("INSERT INTO balances (key, amount) VALUES (?, 1) ON CONFLICT (key) DO UPDATE SET amount = amount + 1",
                     s.at("key").get<std::string>());
            versions.push_back(outbox.stage(txn, s.at("key").get<std::string>(), s.at("value")));
          }
          if (abort) throw std::runtime_error("application aborted");
        });
        co_await writing;
      } catch (const DurabilityError& e) {
        co_return json{{"error", e.name()}};
      } catch (const std::runtime_error&) {
        co_return json{{"aborted", true}};
      }
      co_return json{{"versions", versions}};
    }
    if (method == "stageAlone") {
      Task<int64_t> staging = outbox.stage(args.at("key").get<std::string>(), args.at("value"));
      co_return co_await staging;
    }
    if (method == "pending") {
      Task<int64_t> counting = outbox.pending();
      co_return co_await counting;
    }
    co_return json::object();
  }

  ObjectContext& ctx;
  Env* env;
  DurabilityScheduler scheduler;
  std::map<std::string, std::unique_ptr<DurabilityOutbox>> outboxes;
};

struct EnvHolder {
  Env env;
};

struct OutboxRig : EnvHolder, ObjectRig {
  explicit OutboxRig(sim::RuntimeOptions options = {}) : ObjectRig(kClass, "a", &env.resetNow, std::move(options)) {
    Env* e = &env;
    runtime.define_class(kClass, [e](ObjectContext& ctx) { return std::make_unique<Host>(ctx, e); });
  }
  // Stages key=value pairs in one application transaction; returns the versions.
  json stage(std::vector<std::pair<std::string, json>> stages, const std::string& channel = "default", bool abort = false,
             SimTime ms = 100) {
    json list = json::array();
    for (auto& [key, value] : stages) list.push_back({{"key", key}, {"value", value}});
    return done("stage", {{"channel", channel}, {"stages", list}, {"abort", abort}}, ms);
  }
  json row(const std::string& channel, const std::string& key) {
    const json rows = query("SELECT * FROM " DURASIM_OUTBOX " WHERE channel = '" + channel + "' AND key = '" + key + "'");
    return rows.empty() ? json() : rows[0];
  }
  int64_t rows() { return query("SELECT count(*) AS n FROM " DURASIM_OUTBOX)[0].at("n").get<int64_t>(); }
  int64_t nextVersion() { return query("SELECT next_version FROM " DURASIM_OUTBOX_SEQ)[0].at("next_version").get<int64_t>(); }
  std::vector<json> ev(const std::string& type) const { return events(type, kLabel); }
  std::vector<Published> publishedOf(const std::string& key) const {
    std::vector<Published> out;
    for (const Published& p : env.published)
      if (p.key == key) out.push_back(p);
    return out;
  }
};

Publish throwing() {
  return [](Host&, std::vector<OutboxEntry>) -> Task<void> {
    throw std::runtime_error("sink down");
    co_return;
  };
}

// ---------------------------------------------------------------------------------------------
// Construction (outbox.md 1)

struct Probe final : DurableObject {
  Task<json> call(std::string_view, const json&) override { co_return json(); }
};

// Builds an outbox with `options` in a fresh object (a second one on the same channel with
// `twice`) and returns the error it threw ("" if none), noting any table it wrote first.
std::string constructionError(std::function<void(OutboxOptions&)> edit, bool twice = false) {
  std::string error;
  Rig rig;
  rig.runtime.define_class("C", [&](ObjectContext& ctx) {
    DurabilityScheduler scheduler(ctx);
    OutboxOptions o;
    o.publish = [](std::vector<OutboxEntry>) -> Task<void> { co_return; };
    edit(o);
    try {
      DurabilityOutbox first(scheduler, o);
      if (twice) DurabilityOutbox second(scheduler, o);
    } catch (const DurabilityError& e) {
      error = e.name() + ": " + e.what();
    }
    if (!twice) {
      const json tables = rows_json(ctx.storage.exec("SELECT name FROM sqlite_master WHERE name LIKE 'durability_outbox%'"));
      if (!error.empty() && !tables.empty()) error += " (and wrote " + tables.dump() + ")";
    }
    return std::make_unique<Probe>();
  });
  rig.call("C", "c", "ping");
  rig.run_for(1'000);
  return error;
}

TEST(OutboxConstruction, InvalidOptionsThrowBeforeAnyWrite) {
  EXPECT_EQ(constructionError([](OutboxOptions& o) { o.channel = ""; }), "TypeError: Outbox channel must be a non-empty string");
  EXPECT_EQ(constructionError([](OutboxOptions& o) { o.publish = nullptr; }), "TypeError: Outbox requires a publish function");
  EXPECT_EQ(constructionError([](OutboxOptions& o) { o.maxBatchSize = 0; }), "RangeError: maxBatchSize must be a positive integer");
  EXPECT_EQ(constructionError([](OutboxOptions& o) { o.batchDelayMs = -1; }), "RangeError: batchDelayMs must be a non-negative integer");
  EXPECT_EQ(constructionError([](OutboxOptions& o) { o.attemptTimeoutMs = 0; }),
            "RangeError: attemptTimeoutMs must be a positive integer");
  EXPECT_EQ(constructionError([](OutboxOptions&) {}), "");
}

TEST(OutboxConstruction, ASecondOutboxOnOneChannelThrowsAndAnotherChannelShares) {
  EXPECT_EQ(constructionError([](OutboxOptions& o) { o.channel = "orders"; }, true),
            "TypeError: Outbox channel \"orders\" is already attached to this scheduler");
  OutboxRig rig;
  rig.env.channels = {"a", "b"};
  rig.stage({{"k", 1}}, "a");
  rig.stage({{"k", 2}}, "b");
  rig.run_for(5'000);
  ASSERT_EQ(rig.env.published.size(), 2u) << "one hub serves both channels";
  EXPECT_EQ(rig.rows(), 0);
}

// ---------------------------------------------------------------------------------------------
// Stage (outbox.md 3)

TEST(OutboxStage, VersionsIncreaseAcrossChannelsAndAcknowledgedDeletes) {
  OutboxRig rig;
  rig.env.channels = {"a", "b"};
  EXPECT_EQ(rig.stage({{"x", 1}, {"y", 1}}, "a").at("versions"), json::array({1, 2}));
  rig.run_for(5'000);
  EXPECT_EQ(rig.rows(), 0) << "both acknowledged and deleted";
  EXPECT_EQ(rig.stage({{"x", 2}}, "b").at("versions"), json::array({3})) << "the counter survives the deletes";
  EXPECT_EQ(rig.nextVersion(), 4);
}

TEST(OutboxStage, AnAbortedApplicationTransactionStagesNothing) {
  OutboxRig rig;
  rig.env.publish = throwing();  // keep rows around
  rig.stage({{"x", 1}});
  const json before = rig.row("default", "x");
  const int64_t counter = rig.nextVersion();
  EXPECT_EQ(rig.stage({{"x", 2}, {"y", 1}}, "default", /*abort=*/true).at("aborted"), true);
  EXPECT_EQ(rig.row("default", "x"), before);
  EXPECT_TRUE(rig.row("default", "y").is_null());
  EXPECT_EQ(rig.nextVersion(), counter);
  EXPECT_TRUE(rig.query("SELECT * FROM balances WHERE key = 'y'").empty()) << "the application's write rolled back with it";
}

TEST(OutboxStage, RestagingReplacesTheRowWithANewVersionAndGeneration) {
  OutboxRig rig;
  rig.env.batchDelayMs = 60'000;  // the restaged row is not due before the test reads it
  rig.env.publish = throwing();
  rig.stage({{"x", 1}});
  rig.run_for(61'000);
  const json first = rig.row("default", "x");
  ASSERT_GE(first.at("attempt").get<int64_t>(), 1);
  rig.stage({{"x", 2}});
  const json second = rig.row("default", "x");
  EXPECT_GT(second.at("version").get<int64_t>(), first.at("version").get<int64_t>());
  EXPECT_NE(second.at("generation_id"), first.at("generation_id"));
  EXPECT_EQ(second.at("attempt"), 0);
  EXPECT_TRUE(second.at("last_error").is_null());
  EXPECT_EQ(second.at("value"), "{\"kind\":\"value\",\"value\":2}");
}

TEST(OutboxStage, BadArgumentsThrowAndWriteNothing) {
  OutboxRig rig;
  EXPECT_EQ(rig.stage({{"", 1}}).at("error"), "RangeError");
  EXPECT_EQ(rig.nextVersion(), 1);
  EXPECT_EQ(rig.rows(), 0);
}

TEST(OutboxStage, OnItsOwnItCommitsAndReturnsTheVersion) {
  OutboxRig rig;
  EXPECT_EQ(rig.done("stageAlone", {{"key", "x"}, {"value", 7}}), 1);
  rig.run_for(5'000);
  ASSERT_EQ(rig.env.published.size(), 1u);
  EXPECT_EQ(rig.env.published[0].value, 7);
}

TEST(OutboxStage, ManyStagesInOneApplicationTransactionReconcileOnce) {
  OutboxRig rig;
  rig.env.batchDelayMs = 60'000;  // no pass reconciles before the test counts
  rig.stage({{"x", 1}, {"y", 1}, {"z", 1}});
  EXPECT_EQ(rig.ev("sch.reconcile").size(), 1u);
}

TEST(OutboxStage, BatchDelayRoundsTheFirstDueTimeUpToTheWindow) {
  OutboxRig rig;
  rig.env.batchDelayMs = 60'000;
  rig.stage({{"x", 1}});
  const json r = rig.row("default", "x");
  const int64_t staged = r.at("staged_at").get<int64_t>();
  const int64_t due = r.at("next_attempt_at").get<int64_t>();
  EXPECT_EQ(due, (staged + 59'999) / 60'000 * 60'000);
  EXPECT_GT(due, staged) << "not on a boundary: due at the next one";
}

// ---------------------------------------------------------------------------------------------
// Passes (outbox.md 4-5)

TEST(OutboxPass, FirstStagesBeforeRetriesInVersionOrderAtMostMaxBatchSize) {
  OutboxRig rig;
  rig.env.maxBatchSize = 2;
  int calls = 0;
  rig.env.publish = [&calls](Host&, std::vector<OutboxEntry> entries) -> Task<void> {
    if (++calls == 1)
      for (OutboxEntry& e : entries) e.retry(0);  // the first batch comes back as retries
    co_return;
  };
  rig.stage({{"a", 1}, {"b", 1}, {"c", 1}, {"d", 1}}, "default", false, 5'000);
  ASSERT_GE(rig.env.batches.size(), 2u);
  EXPECT_EQ(rig.env.batches[0], 2u);
  std::vector<std::string> order;
  for (const Published& p : rig.env.published) order.push_back(p.key);
  EXPECT_EQ(order, (std::vector<std::string>{"a", "b", "c", "d", "a", "b"})) << "new stages (attempt 0) before the retried a, b";
  EXPECT_EQ(rig.rows(), 0);
}

TEST(OutboxPass, AnEntryCarriesItsStagedVersionValueAndAttempt) {
  OutboxRig rig;
  const json versions = rig.stage({{"x", json{{"balance", 5}}}});
  rig.run_for(5'000);
  ASSERT_EQ(rig.env.published.size(), 1u);
  const Published& p = rig.env.published[0];
  EXPECT_EQ(p.channel, "default");
  EXPECT_EQ(p.version, versions.at("versions")[0].get<int64_t>());
  EXPECT_EQ(p.value, (json{{"balance", 5}}));
  EXPECT_EQ(p.attempt, 1);
  EXPECT_EQ(rig.ev("obx.claim.write").size(), 1u);
}

TEST(OutboxPass, AFailingPublishIsRetriedForeverWithItsError) {
  OutboxRig rig;
  rig.env.publish = throwing();
  rig.stage({{"x", 1}});
  rig.run_for(60'000);
  const json r = rig.row("default", "x");
  ASSERT_FALSE(r.is_null()) << "no attempt limit, no dead letter";
  EXPECT_GT(r.at("attempt").get<int64_t>(), 10);
  EXPECT_EQ(r.at("last_error_name"), "Error");
  EXPECT_EQ(r.at("last_error"), "sink down");
  rig.env.publish = nullptr;
  rig.run_for(5'000);
  EXPECT_EQ(rig.rows(), 0) << "the newest value is published once the sink accepts";
}

TEST(OutboxPass, ATimedOutPublishIsRetriedAndItsLateMarksAreRejected) {
  OutboxRig rig;
  rig.env.attemptTimeoutMs = 1'000;
  int calls = 0;
  Env* env = &rig.env;
  rig.env.publish = [&calls, env](Host& host, std::vector<OutboxEntry> entries) -> Task<void> {
    if (++calls > 1) co_return;
    co_await host.ctx.clock.sleepFor(5'000);
    try {
      entries[0].retry();
    } catch (const OutboxSettlementError&) {
      env->kept.push_back(entries[0]);  // the late mark threw
    }
  };
  rig.stage({{"x", 1}});
  rig.run_for(1'500);
  const json r = rig.row("default", "x");
  EXPECT_EQ(r.at("last_error_name"), "OutboxPublishTimeoutError");
  EXPECT_EQ(r.at("last_error"), "Outbox publish timed out after 1000ms");
  rig.run_for(10'000);
  EXPECT_EQ(rig.env.kept.size(), 1u) << "retry() after the batch closed throws OutboxSettlementError";
  EXPECT_EQ(rig.rows(), 0);
}

TEST(OutboxPass, AMarkReschedulesByItsDelayAndAnInvalidDelayIsRefused) {
  OutboxRig rig;
  std::string refused;
  int calls = 0;
  rig.env.publish = [&](Host&, std::vector<OutboxEntry> entries) -> Task<void> {
    if (++calls > 1) co_return;
    entries[0].retry(4'000);
    entries[0].retry();  // keeps the 4000 ms
    try {
      entries[0].retry(-1);
    } catch (const RangeError& e) {
      refused = e.what();
    }
    co_return;
  };
  rig.stage({{"x", 1}});
  rig.run_for(100);
  const json settle = rig.ev("obx.settle.write").at(0);
  const json r = rig.row("default", "x");
  EXPECT_EQ(refused, "delayMs must be a non-negative safe integer");
  EXPECT_EQ(r.at("next_attempt_at").get<int64_t>(), settle.at("at").get<int64_t>() + 4'000);
  EXPECT_EQ(r.at("last_error_name"), "Retry");
  EXPECT_EQ(r.at("last_error"), "Retried by publisher");
  rig.run_for(10'000);
  EXPECT_EQ(rig.rows(), 0);
}

TEST(OutboxPass, AnAcknowledgementNeverDeletesANewerStage) {
  OutboxRig rig;
  int calls = 0;
  rig.env.publish = [&calls](Host& host, std::vector<OutboxEntry>) -> Task<void> {
    if (++calls == 1) co_await host.ctx.clock.sleepFor(2'000);  // restaged meanwhile
  };
  rig.stage({{"x", 1}});
  rig.run_for(500);
  ASSERT_EQ(rig.env.published.size(), 1u);
  rig.stage({{"x", 2}});
  rig.run_for(2'000);
  const json acked = rig.ev("obx.settle.write").at(0).at("acked");
  EXPECT_EQ(acked[0].at("matched"), false) << "the old publication's acknowledgement matched nothing";
  rig.run_for(10'000);
  ASSERT_EQ(rig.publishedOf("x").size(), 2u);
  EXPECT_EQ(rig.publishedOf("x")[1].value, 2) << "the newer stage is published in turn";
  EXPECT_EQ(rig.rows(), 0);
}

TEST(OutboxPass, AnInvalidRetryPolicyFallsBackToTheDefault) {
  OutboxRig rig;
  rig.env.delay = [](int64_t) -> double { throw std::runtime_error("bad policy"); };
  rig.env.publish = throwing();
  rig.stage({{"x", 1}});
  rig.run_for(100);
  const json r = rig.row("default", "x");
  ASSERT_FALSE(r.is_null());
  const int64_t at = rig.ev("obx.settle.write").at(0).at("at").get<int64_t>();
  const int64_t delay = r.at("next_attempt_at").get<int64_t>() - at;
  EXPECT_GE(delay, 500);  // jitter(exponential(1, 1000, 300000)) lies in [500, 1000]
  EXPECT_LE(delay, 1'000);
  const std::vector<json> logs = rig.ev("log");
  EXPECT_TRUE(std::any_of(logs.begin(), logs.end(), [](const json& e) { return e.at("event") == "durability.outbox.retry_policy_failed"; }));
}

TEST(OutboxPass, ACrashAfterTheClaimPublishesTheSameVersionAgainAtItsDeadline) {
  OutboxRig rig;
  rig.env.attemptTimeoutMs = 10'000;
  int calls = 0;
  Env* env = &rig.env;
  rig.env.publish = [&calls, env](Host& host, std::vector<OutboxEntry>) -> Task<void> {
    if (++calls == 1) {
      env->resetNow = true;
      co_await host.ctx.clock.sleepFor(60'000);
    }
  };
  rig.stage({{"x", 1}});
  rig.run_for(1'000);
  rig.done("pending", json::object(), 100);  // the reset fires at an opportunity of the next call
  rig.run_for(20'000);
  const std::vector<Published> seen = rig.publishedOf("x");
  ASSERT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen[1].version, seen[0].version);
  EXPECT_EQ(seen[1].attempt, 2);
  EXPECT_GE(seen[1].t, seen[0].t + 10'000) << "due again at its publish deadline";
  EXPECT_EQ(rig.rows(), 0);
}

// ---------------------------------------------------------------------------------------------
// Channels (outbox.md 4)

TEST(OutboxChannels, OneKeyInTwoChannelsIsTwoRowsAndEachPublishGetsItsOwn) {
  OutboxRig rig;
  rig.env.channels = {"a", "b"};
  rig.env.publish = throwing();
  rig.stage({{"k", 1}}, "a");
  rig.stage({{"k", 2}}, "b");
  EXPECT_EQ(rig.rows(), 2);
  rig.run_for(3'000);
  for (const json& publish : rig.ev("obx.publish")) EXPECT_EQ(publish.at("entries").size(), 1u);
  for (const Published& p : rig.env.published) EXPECT_EQ(p.value, p.channel == "a" ? 1 : 2);
}

TEST(OutboxChannels, RowsOfAnUnattachedChannelArePostponedNeverDroppedUntilItReturns) {
  OutboxRig rig;
  rig.env.channels = {"default", "orders"};
  rig.env.publish = throwing();
  rig.stage({{"o", 1}}, "orders");
  rig.run_for(100);
  const int64_t attempt = rig.row("orders", "o").at("attempt").get<int64_t>();
  rig.env.channels = {"default"};  // the next incarnation's code has no "orders"
  rig.env.resetNow = true;
  rig.done("pending", json::object(), 100);
  rig.run_for(200'000);
  const json r = rig.row("orders", "o");
  ASSERT_FALSE(r.is_null()) << "never dropped";
  EXPECT_EQ(r.at("attempt"), attempt) << "attempt unchanged while postponed";
  const std::vector<json> postponed = rig.ev("obx.postpone.write");
  ASSERT_GE(postponed.size(), 2u);
  EXPECT_EQ(postponed[1].at("t").get<int64_t>() - postponed[0].at("t").get<int64_t>(), kOutboxUnattachedDelayMs);
  rig.env.channels = {"default", "orders"};
  rig.env.publish = nullptr;
  rig.env.resetNow = true;
  rig.done("pending", json::object(), 100);
  rig.run_for(70'000);
  EXPECT_EQ(rig.rows(), 0) << "published once a deploy attaches the channel again";
}

// ---------------------------------------------------------------------------------------------
// Migration (outbox.md 8)

TEST(OutboxMigration, RemovingTheSchemaDropsBothTables) {
  Rig rig;
  std::string tables;
  rig.runtime.define_class("C", [&](ObjectContext& ctx) {
    DurabilityOutbox::migrate(ctx.storage);
    DurabilityOutbox::migrate(ctx.storage, MigrationTarget::none());
    tables = rows_json(ctx.storage.exec("SELECT name FROM sqlite_master WHERE name LIKE 'durability_outbox%'")).dump();
    return std::make_unique<Probe>();
  });
  rig.call("C", "c", "ping");
  rig.run_for(1'000);
  EXPECT_EQ(tables, "[]");
}

// ---------------------------------------------------------------------------------------------
// Calibration variants (hazards.md, engine/variants.h): each off gives the spec's behaviour, on
// the injected bug the OBX checks must catch.

sim::RuntimeOptions withVariant(std::string_view flag, bool on) {
  sim::RuntimeOptions options;
  if (on) options.variants.insert(std::string(flag));
  return options;
}

class OutboxVariant : public ::testing::TestWithParam<bool> {};
INSTANTIATE_TEST_SUITE_P(OffAndOn, OutboxVariant, ::testing::Bool(), [](const auto& info) { return info.param ? "On" : "Off"; });

TEST_P(OutboxVariant, AckIgnoringTheGenerationDeletesANewerStage) {
  const bool on = GetParam();
  OutboxRig rig(withVariant(variants::kOutboxAckIgnoresGeneration, on));
  int calls = 0;
  rig.env.publish = [&calls](Host& host, std::vector<OutboxEntry>) -> Task<void> {
    if (++calls == 1) co_await host.ctx.clock.sleepFor(2'000);  // restaged meanwhile
  };
  rig.stage({{"x", 1}});
  rig.run_for(500);
  rig.stage({{"x", 2}});
  rig.run_for(2'000);
  const json acked = rig.ev("obx.settle.write").at(0).at("acked");
  EXPECT_EQ(acked[0].at("matched"), on) << "the old publication's acknowledgement deleted the newer stage";
  rig.run_for(10'000);
  EXPECT_EQ(rig.publishedOf("x").size(), on ? 1u : 2u) << "the newer value is published only when its row survived";
}

TEST_P(OutboxVariant, StagingInATransactionOfItsOwnSurvivesTheApplicationsAbort) {
  const bool on = GetParam();
  OutboxRig rig(withVariant(variants::kOutboxStageOwnTransaction, on));
  rig.env.publish = throwing();
  EXPECT_EQ(rig.stage({{"x", 1}}, "default", /*abort=*/true).at("aborted"), true);
  rig.run_for(100);
  EXPECT_EQ(rig.row("default", "x").is_null(), !on);
  EXPECT_EQ(rig.nextVersion(), on ? 2 : 1);
  EXPECT_TRUE(rig.query("SELECT * FROM balances").empty()) << "the application's own write rolled back either way";
}

TEST_P(OutboxVariant, VersionsFromTheRowsRepeatAfterAcknowledgedDeletes) {
  const bool on = GetParam();
  OutboxRig rig(withVariant(variants::kOutboxVersionFromRows, on));
  EXPECT_EQ(rig.stage({{"x", 1}}).at("versions"), json::array({1}));
  rig.run_for(5'000);
  ASSERT_EQ(rig.rows(), 0);
  EXPECT_EQ(rig.stage({{"x", 2}}).at("versions"), json::array({on ? 1 : 2})) << "an acknowledged version is given out again";
}

TEST_P(OutboxVariant, GivingUpDeletesARowAfterFiveFailedPublishes) {
  const bool on = GetParam();
  OutboxRig rig(withVariant(variants::kOutboxGiveUpAfterMaxAttempts, on));
  rig.env.delay = [](int64_t) { return 1'000.0; };
  rig.env.publish = throwing();
  rig.stage({{"x", 1}});
  rig.run_for(30'000);
  EXPECT_EQ(rig.row("default", "x").is_null(), on);
  if (on) {
    EXPECT_EQ(rig.publishedOf("x").size(), 5u);
  } else {
    EXPECT_GT(rig.publishedOf("x").size(), 5u) << "retried forever";
  }
}

}  // namespace
}  // namespace durasim::rt_test
