// Model-based property (RapidCheck rc::state, suite OutboxModelState): random stage (some aborted
// with the application's transaction) / advance / sink outage / crash sequences run against the real
// DurabilityOutbox on the simulated runtime and against model/outbox_model.h, compared after every
// command.
//
// The engine's commit points (its "obx.*.write" probes, in trace order) are replayed into the model,
// each checked against what the model allows: a stage takes the model's next version (OBX-01/02) and
// an aborted one writes nothing (OBX-04); a claim takes exactly the model's due rows in its order
// and batch size (OBX-07); acknowledgements and reschedules match exactly when the model's fencing
// by generation and attempt lets them (OBX-05), each reschedule by the delay the test's policy and
// marks call for (OBX-10). The publisher behaves as a function of (key, attempt) the test knows:
// k1 is marked for retry on its first attempt, k2's first publish hangs past the deadline, k3's is
// slow (restages land during it), a sink outage makes every other publish throw.
// After every command the stored rows and version counter must equal the model's (OBX-03); a sink
// keeping the highest version per key never regresses (OBX-14), and a final drain with the sink up
// leaves no row and the sink holding every key's last staged value (OBX-16).
// All latencies are 0, so after running the current instant every commit is confirmed.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "engine/errors.h"
#include "engine/outbox.h"
#include "engine/outbox_schema.h"
#include "engine/scheduler.h"
#include "model/outbox_model.h"
#include "tests/model_property.h"
#include "tests/runtime_test_harness.h"

namespace durasim {
namespace {

using namespace rt_test;
using model::MaxVersionSink;
using model::OutboxModel;
using model::OutboxRow;

constexpr const char* kClass = "ModelAccount";
constexpr const char* kObject = "a";
const std::string kLabel = std::string(kClass) + "/" + kObject;
constexpr const char* kChannel = "default";

constexpr int64_t kMaxBatchSize = 2;
constexpr int64_t kRetryDelayMs = 1'000;   // the policy's delay for every attempt
constexpr int64_t kMarkDelayMs = 500;      // retry(500) on k1's first attempt
constexpr int64_t kTimeoutMs = 10'000;     // attemptTimeoutMs
constexpr int64_t kHungMs = 12'000;        // k2's first publish, past the timeout
constexpr int64_t kSlowMs = 3'000;         // k3's first publish, within it
constexpr int64_t kDrainMs = 900'000;
constexpr int kMaxCommands = 25;
constexpr int kDefaultCases = 100;  // RC_PARAMS="max_success=N" overrides

const std::vector<std::string> kKeys{"k0", "k1", "k2", "k3"};

struct Coverage {
  int64_t cases = 0, stages = 0, aborted = 0, claims = 0, acks = 0, staleAcks = 0, reschedules = 0, timeouts = 0, lateMarksRefused = 0,
          crashes = 0, outages = 0, regressionsRefused = 0;
};
Coverage& coverage() {
  static Coverage c;
  return c;
}

struct Shared {
  bool sinkDown = false;
  MaxVersionSink sink;
};

class ModelAccount final : public DurableObject {
 public:
  ModelAccount(ObjectContext& ctx, Shared* shared) : ctx_(ctx), shared_(shared), scheduler_(ctx), outbox_(scheduler_, options()) {}

  bool hasAlarmHandler() const override { return true; }
  Task<void> alarm(const AlarmInvocationInfo& info) override { return scheduler_.alarm(info); }
  // stage {stages: [[key, value]], abort}: one application transaction.
  Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) override {
    if (method != "stage") co_return nlohmann::json::object();
    try {
      Task<void> writing = ctx_.storage.transaction([&](StorageTxn& txn) {
        for (const nlohmann::json& s : args.at("stages")) outbox_.stage(txn, s.at(0).get<std::string>(), s.at(1));
        if (args.at("abort").get<bool>()) throw std::runtime_error("aborted");
      });
      co_await writing;
    } catch (const std::runtime_error&) {
      co_return nlohmann::json{{"aborted", true}};
    }
    co_return nlohmann::json{{"aborted", false}};
  }

 private:
  OutboxOptions options() {
    OutboxOptions o;
    o.channel = kChannel;
    o.maxBatchSize = kMaxBatchSize;
    o.attemptTimeoutMs = kTimeoutMs;
    o.retries.delay = [](int64_t) { return static_cast<double>(kRetryDelayMs); };
    o.publish = [this](std::vector<OutboxEntry> entries) { return publish(std::move(entries)); };
    return o;
  }

  Task<void> publish(std::vector<OutboxEntry> entries) {
    for (OutboxEntry& e : entries)
      if (e.key == "k2" && e.attempt == 1) {
        co_await ctx_.clock.sleepFor(kHungMs);
        try {
          e.retry();
        } catch (const OutboxSettlementError&) {
          ++coverage().lateMarksRefused;  // OBX-18
        }
        co_return;
      }
    for (const OutboxEntry& e : entries)
      if (e.key == "k3" && e.attempt == 1) co_await ctx_.clock.sleepFor(kSlowMs);  // restages may land meanwhile
    if (shared_->sinkDown) throw std::runtime_error("sink down");
    for (OutboxEntry& e : entries) {
      if (e.key == "k1" && e.attempt == 1) {
        e.retry(kMarkDelayMs);
        continue;
      }
      const MaxVersionSink::Held before = shared_->sink.held({e.channel, e.key}).value_or(MaxVersionSink::Held{});
      if (!shared_->sink.accept({e.channel, e.key}, e.version, e.value.dump())) ++coverage().regressionsRefused;
      RC_ASSERT(shared_->sink.held({e.channel, e.key})->version >= before.version);  // OBX-14
    }
  }

  ObjectContext& ctx_;
  Shared* shared_;
  DurabilityScheduler scheduler_;
  DurabilityOutbox outbox_;
};

class Sut {
 public:
  explicit Sut(uint64_t seed) : rig_(seed) {
    rig_.faults.set_latency(LatencyKind::rpc, 0);
    rig_.faults.set_latency(LatencyKind::cold, 0);
    rig_.faults.set_latency(LatencyKind::confirm, 0);
    Shared* shared = &shared_;
    rig_.runtime.define_class(kClass, [shared](ObjectContext& ctx) { return std::make_unique<ModelAccount>(ctx, shared); });
    ++coverage().cases;
  }
  ~Sut() { rig_.world.tasks().cancel_all(); }

  void stage(const std::vector<std::pair<std::string, int>>& stages, bool abort) {
    ++coverage().stages;
    nlohmann::json list = nlohmann::json::array();
    for (const auto& [key, value] : stages) list.push_back({key, value});
    CallPtr call = rig_.call(kClass, kObject, "stage", {{"stages", list}, {"abort", abort}});
    rig_.run_until(now());
    RC_ASSERT(call->done);
    if (!call->ok) RC_FAIL("stage failed: " + call->error);
    RC_ASSERT(call->value.at("aborted").get<bool>() == abort);
    if (abort) ++coverage().aborted;
    replay(abort);
    if (!abort)
      for (const auto& [key, value] : stages) lastStaged_[key] = nlohmann::json(value).dump();
    compare();
  }

  void advance(int64_t ms) {
    const int64_t target = now() + ms;
    rig_.world.executor().at(target, [] {});
    rig_.run_until(target);
    replay(false);
    compare();
  }

  void sinkOutage(bool down) {
    if (down) ++coverage().outages;
    shared_.sinkDown = down;
  }

  // A reset of the object at a point where every commit is confirmed (a publish may be in flight:
  // its claim is durable, its settlement lost).
  void crash() {
    ++coverage().crashes;
    if (auto status = rig_.status(kLabel)) RC_ASSERT(status->unconfirmed_commits == 0u);
    rig_.faults.arm(FaultKind::object_reset);
    rig_.call(kClass, kObject, "ping");
    rig_.run_until(now());
    replay(false);
    compare();
  }

  // OBX-16: with the sink up every key's last committed stage reaches it and no row is left.
  void drain() {
    shared_.sinkDown = false;
    advance(kDrainMs);
    if (!model_.rows().empty()) RC_FAIL("after the drain rows remain");
    for (const auto& [key, value] : lastStaged_) {
      const std::optional<MaxVersionSink::Held> held = shared_.sink.held({kChannel, key});
      RC_ASSERT(held.has_value());
      RC_ASSERT(held->value == value);
    }
    if (auto status = rig_.status(kLabel))
      if (status->stored_alarm) RC_FAIL("nothing pending but the alarm is set");
  }

 private:
  int64_t now() const { return rig_.world.now(); }
  static bool ours(const nlohmann::json& e) { return e.contains("object") && e.at("object") == kLabel; }

  // Applies the engine's writes since the last replay; `rolledBack`: the stage writes among them
  // belong to an aborted application transaction and must leave no trace.
  void replay(bool rolledBack) {
    const std::vector<nlohmann::json>& events = rig_.sink.events;
    for (; replayed_ < events.size(); ++replayed_) {
      const nlohmann::json& e = events[replayed_];
      if (!ours(e)) continue;
      const std::string ev = e.at("ev").get<std::string>();
      if (ev == "obx.stage.write" && !rolledBack) onStage(e);
      else if (ev == "obx.claim.write") onClaim(e);
      else if (ev == "obx.settle.write") onSettle(e);
      else if (ev == "obx.published" && e.at("timedOut").get<bool>()) ++coverage().timeouts;
    }
  }

  void onStage(const nlohmann::json& e) {
    RC_ASSERT(e.at("version").get<int64_t>() == model_.nextVersion());  // OBX-01/02
    model_.stage(kChannel, e.at("key").get<std::string>(), e.at("value").get<std::string>(), e.at("generation").get<std::string>(),
                 e.at("at").get<int64_t>(), 0);
  }

  void onClaim(const nlohmann::json& e) {
    const int64_t at = e.at("claimAt").get<int64_t>();
    const std::vector<OutboxRow> due = model_.due(kChannel, at, kMaxBatchSize);
    const nlohmann::json& claimed = e.at("claimed");
    RC_ASSERT(claimed.size() == due.size());  // OBX-07: exactly the due batch
    for (std::size_t i = 0; i < due.size(); ++i) {
      RC_ASSERT(claimed[i].at("key").get<std::string>() == due[i].key);
      RC_ASSERT(claimed[i].at("attempt").get<int64_t>() == due[i].attempt + 1);
      RC_ASSERT(model_.claim({kChannel, due[i].key}, due[i].generation, due[i].attempt, at + kTimeoutMs));
      ++coverage().claims;
    }
  }

  void onSettle(const nlohmann::json& e) {
    const int64_t at = e.at("at").get<int64_t>();
    for (const nlohmann::json& a : e.at("acked")) {
      const bool matched = model_.acknowledge({kChannel, a.at("key").get<std::string>()}, a.at("generation").get<std::string>());
      RC_ASSERT(a.at("matched").get<bool>() == matched);  // OBX-05
      ++(matched ? coverage().acks : coverage().staleAcks);
    }
    for (const nlohmann::json& r : e.at("retried")) {
      const std::string name = r.at("error").at("name").get<std::string>();
      const int64_t expected = at + (name == "Retry" ? kMarkDelayMs : kRetryDelayMs);  // OBX-10
      RC_ASSERT(r.at("next").get<int64_t>() == expected);
      const bool matched = model_.reschedule({kChannel, r.at("key").get<std::string>()}, r.at("generation").get<std::string>(),
                                             r.at("attempt").get<int64_t>(), expected, name, r.at("error").at("message").get<std::string>());
      RC_ASSERT(r.at("matched").get<bool>() == matched);
      if (matched) ++coverage().reschedules;
    }
  }

  // OBX-03: the stored rows and counter are the model's.
  void compare() {
    if (!rig_.runtime.world().stores().has_table(kLabel, DURASIM_OUTBOX)) {
      RC_ASSERT(model_.rows().empty());
      return;
    }
    std::map<OutboxModel::Key, OutboxRow> stored;
    for (const SqlRow& r : rig_.runtime.world().stores().live(kLabel, "SELECT * FROM " DURASIM_OUTBOX).toVector()) {
      OutboxRow row{r.text("channel"), r.text("key"), r.text("value"), r.text("generation_id"), r.int64("version"), r.int64("attempt"),
                    r.int64("next_attempt_at"), r.int64("staged_at"), r.optText("last_error"), r.optText("last_error_name")};
      stored[{row.channel, row.key}] = row;
    }
    if (stored != model_.rows()) RC_FAIL("stored rows differ from the model");
    const int64_t counter = rig_.runtime.world().stores().live(kLabel, "SELECT next_version FROM " DURASIM_OUTBOX_SEQ).one().int64("next_version");
    RC_ASSERT(counter == model_.nextVersion());
  }

  Rig rig_;
  Shared shared_;
  OutboxModel model_;
  std::map<std::string, std::string> lastStaged_;  // key -> value of its last committed stage (dumped)
  std::size_t replayed_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Commands

struct Plan {};
using OutboxCommand = rc::state::Command<Plan, Sut>;

struct Stage final : OutboxCommand {
  std::vector<std::pair<std::string, int>> stages;
  bool abort = *rc::gen::inRange(0, 5) == 0;
  Stage() {
    const int size = *rc::gen::inRange(1, 4);
    for (int i = 0; i < size; ++i) stages.emplace_back(*rc::gen::elementOf(kKeys), *rc::gen::inRange(0, 100));
  }
  void run(const Plan&, Sut& sut) const override { sut.stage(stages, abort); }
  void show(std::ostream& os) const override {
    os << "Stage(";
    for (const auto& [key, value] : stages) os << key << "=" << value << " ";
    os << (abort ? "aborted)" : "committed)");
  }
};

struct Advance final : OutboxCommand {
  int64_t ms = *rc::gen::element<int64_t>(0, 1, 400, 1'000, 2'500, 11'000, 60'000);
  void run(const Plan&, Sut& sut) const override { sut.advance(ms); }
  void show(std::ostream& os) const override { os << "Advance(" << ms << ")"; }
};

struct Crash final : OutboxCommand {
  void run(const Plan&, Sut& sut) const override { sut.crash(); }
  void show(std::ostream& os) const override { os << "Crash"; }
};

struct SinkOutage final : OutboxCommand {
  bool down = *rc::gen::arbitrary<bool>();
  void run(const Plan&, Sut& sut) const override { sut.sinkOutage(down); }
  void show(std::ostream& os) const override { os << "SinkOutage(" << (down ? "down" : "up") << ")"; }
};

void engineAgreesWithTheModel() {
  const uint64_t seed = *rc::gen::inRange<uint64_t>(1, 1'000'000).as("world seed");
  const auto commands = *rc::gen::resize(
      kMaxCommands - 1,
      rc::state::gen::commands(Plan{}, rc::state::gen::execOneOfWithArgs<Stage, Stage, Stage, Advance, Advance, Advance, Crash, SinkOutage>()));
  Sut sut(seed);
  rc::state::runAll(commands, Plan{}, sut);
  sut.drain();
}

TEST(OutboxModelState, EngineAgreesWithTheModelOverRandomCommandSequences) {
  const std::optional<std::string> failure =
      runModelProperty("OutboxModelState/EngineAgreesWithTheModelOverRandomCommandSequences", &engineAgreesWithTheModel, kDefaultCases);
  const Coverage& c = coverage();
  std::cout << "coverage over " << c.cases << " runs: " << c.stages << " stages (" << c.aborted << " aborted), " << c.claims << " claims, "
            << c.acks << " acks, " << c.staleAcks << " stale acks, " << c.reschedules << " reschedules, " << c.timeouts << " timeouts, "
            << c.lateMarksRefused << " late marks refused, " << c.regressionsRefused << " regressions refused by the sink, " << c.crashes
            << " resets, " << c.outages << " sink outages\n";
  if (failure) FAIL() << *failure;
}

}  // namespace
}  // namespace durasim
