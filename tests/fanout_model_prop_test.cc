// Model-based property (RapidCheck rc::state, suite FanoutModelState): random enqueue / advance /
// DLQ outage / crash sequences run against the real DurabilityFanout on the simulated runtime and
// against model/fanout_model.h, compared after every command.
//
// The engine's commit points (its "fan.*.write" probes, in trace order) are replayed into the model,
// each checked against what the model allows: enqueues accepted or rejected as the model predicts
// (FAN-01, FAN-03), claims only of due delivery-phase rows with the next attempt and below
// maxAttempts (FAN-06, FAN-22), acknowledgements, retries, dead-letter intents and removals fenced
// exactly as the model fences them (FAN-08..12, FAN-25). Consumers behave as a function of (message,
// target, attempt) the test knows, so every outcome write must be the one that behaviour calls for.
// After every command the stored manifests, delivery rows and sequence counter must equal the
// model's (FAN-02, FAN-04, FAN-05); a final drain with the DLQ healthy must leave nothing.
// All latencies are 0, so after running the current instant every commit is confirmed.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/state.h>

#include <algorithm>
#include <cstdint>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/errors.h"
#include "engine/fanout.h"
#include "engine/fanout_schema.h"
#include "engine/scheduler.h"
#include "model/fanout_model.h"
#include "tests/model_property.h"
#include "tests/runtime_test_harness.h"

namespace durasim {
namespace {

using namespace rt_test;
using model::FanoutDelivery;
using model::FanoutManifest;
using model::FanoutModel;

constexpr const char* kClass = "ModelFanout";
constexpr const char* kObject = "a";
const std::string kLabel = std::string(kClass) + "/" + kObject;

constexpr int64_t kMaxAttempts = 3;
constexpr int64_t kRetryDelayMs = 1'000;     // every policy retry
constexpr int64_t kExplicitRetryMs = 500;    // retry(500)
constexpr int64_t kTimeoutMs = 10'000;       // attemptTimeoutMs
constexpr int64_t kSlowMs = 2'000;           // the slow behaviour's run time after its first attempt
constexpr int64_t kHungMs = 12'000;          // its first attempt's, past the timeout
constexpr int64_t kDrainMs = 900'000;
constexpr int kMaxCommands = 25;
constexpr int kDefaultCases = 100;  // RC_PARAMS="max_success=N" overrides

const std::vector<std::string> kTargets{"ack", "c", "s"};  // "ack": ackOnReturn consumer; "s": storage
const std::vector<std::string> kIds{"m0", "m1", "m2", "m3", "m4", "m5"};

// How attempt `attempt` of message `id` ends at a consumer target.
enum class Behaviour { ack, retryThenAck, unsettled, throwOnce, deadLetter, slowAck };
Behaviour behaviourOf(const std::string& id) {
  static const std::map<std::string, Behaviour> of = {{"m0", Behaviour::ack},       {"m1", Behaviour::retryThenAck},
                                                      {"m2", Behaviour::unsettled}, {"m3", Behaviour::throwOnce},
                                                      {"m4", Behaviour::deadLetter}, {"m5", Behaviour::slowAck}};
  return of.at(id);
}
// The storage target refuses the first write of m3.
bool storageRefuses(const std::string& id, int64_t attempt) { return id == "m3" && attempt == 1; }

struct Coverage {
  int64_t cases = 0, enqueues = 0, rejected = 0, hits = 0, claims = 0, acks = 0, retries = 0, intents = 0, removals = 0,
          drops = 0, crashes = 0, staleWrites = 0, dlqOutages = 0, lateAcksRefused = 0;
};
Coverage& coverage() {
  static Coverage c;
  return c;
}

struct Shared {
  bool dlqDown = false;
  std::map<std::string, StoredMessage> dead, stored;
};

class ModelApp final : public DurableObject {
 public:
  ModelApp(ObjectContext& ctx, Shared* shared) : ctx_(ctx), shared_(shared), scheduler_(ctx), fanout_(scheduler_, options()) {}

  bool hasAlarmHandler() const override { return true; }
  Task<void> alarm(const AlarmInvocationInfo& info) override { return scheduler_.alarm(info); }
  Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) override {
    if (method != "enqueue") co_return nlohmann::json::object();
    std::vector<FanoutInput> inputs;
    for (const nlohmann::json& m : args.at("messages")) {
      FanoutInput in;
      in.id = m.at("id").get<std::string>();
      if (m.contains("key")) in.deduplicationKey = m.at("key").get<std::string>();
      in.body = m.at("body");
      inputs.push_back(std::move(in));
    }
    EnqueueOptions options;
    if (args.contains("targets")) options.targets = args.at("targets").get<std::vector<std::string>>();
    Task<EnqueueResult<std::vector<std::string>>> enqueuing = fanout_.enqueue(std::move(inputs), std::move(options));
    const EnqueueResult<std::vector<std::string>> result = co_await enqueuing;
    co_return nlohmann::json{{"success", result.success}};
  }

 private:
  FanoutOptions options() {
    FanoutOptions o;
    for (const char* id : {"ack", "c"}) {
      FanoutTarget t;
      t.deliver = [this](std::vector<FanoutMessage> messages) { return consume(std::move(messages)); };
      t.ackOnReturn = std::string(id) == "ack";
      o.targets[id] = t;
    }
    FanoutTarget s;
    Shared* shared = shared_;
    s.storage = [shared](const StoredMessage& m) -> Task<void> {
      if (storageRefuses(m.messageId, m.attempts)) throw std::runtime_error("storage refused");
      shared->stored.emplace(m.id, m);
      co_return;
    };
    o.targets["s"] = s;
    o.dlq = [shared](const StoredMessage& m) -> Task<void> {
      if (shared->dlqDown) throw std::runtime_error("dlq down");
      shared->dead.emplace(m.id, m);
      co_return;
    };
    o.attemptTimeoutMs = kTimeoutMs;
    RetryOptions retries;
    retries.maxAttempts = kMaxAttempts;
    retries.delay = [](int64_t) { return static_cast<double>(kRetryDelayMs); };
    o.retries = retries;
    return o;
  }

  Task<void> consume(std::vector<FanoutMessage> messages) {
    bool fail = false;
    for (FanoutMessage& m : messages) {
      switch (behaviourOf(m.id)) {
        case Behaviour::ack:
          co_await m.ack();
          break;
        case Behaviour::retryThenAck:
          if (m.attempt == 1) co_await m.retry(kExplicitRetryMs);
          else co_await m.ack();
          break;
        case Behaviour::unsettled:
          break;
        case Behaviour::throwOnce:
          if (m.attempt == 1) fail = true;
          else co_await m.ack();
          break;
        case Behaviour::deadLetter:
          co_await m.deadLetter();
          break;
        case Behaviour::slowAck:
          co_await ctx_.clock.sleepFor(m.attempt == 1 ? kHungMs : kSlowMs);
          try {
            co_await m.ack();
          } catch (const FanoutSettlementError&) {
            RC_ASSERT(m.attempt == 1);  // FAN-21: only the timed-out attempt's late ack is refused
            ++coverage().lateAcksRefused;
          }
          break;
      }
    }
    if (fail) throw std::runtime_error("consumer failed");
  }

  ObjectContext& ctx_;
  Shared* shared_;
  DurabilityScheduler scheduler_;
  DurabilityFanout fanout_;
};

// One message of an Enqueue command.
struct Sent {
  std::string id;
  std::optional<std::string> key;
  int body = 0;
};

class Sut {
 public:
  explicit Sut(uint64_t seed) : rig_(seed) {
    rig_.faults.set_latency(LatencyKind::rpc, 0);
    rig_.faults.set_latency(LatencyKind::cold, 0);
    rig_.faults.set_latency(LatencyKind::confirm, 0);
    Shared* shared = &shared_;
    rig_.runtime.define_class(kClass, [shared](ObjectContext& ctx) { return std::make_unique<ModelApp>(ctx, shared); });
    ++coverage().cases;
  }
  ~Sut() { rig_.world.tasks().cancel_all(); }

  int64_t now() const { return rig_.world.now(); }

  void enqueue(const std::vector<Sent>& batch, const std::optional<std::vector<std::string>>& targets) {
    ++coverage().enqueues;
    std::vector<std::string> sorted = targets.value_or(kTargets);
    std::sort(sorted.begin(), sorted.end());
    // The model's prediction: a live key with other work rejects the whole batch.
    bool conflict = false;
    std::map<std::string, std::pair<std::string, int>> staged;  // key -> (id, body) of this batch
    for (const Sent& m : batch) {
      const std::string key = m.key.value_or(m.id);
      auto live = model_.manifests().find(key);
      const std::pair<std::string, int> work{m.id, m.body};
      if (auto earlier = staged.find(key); earlier != staged.end()) {
        conflict |= earlier->second != work;
        continue;
      }
      if (live != model_.manifests().end()) {
        conflict |= live->second.id != m.id || bodyOf_.at(key) != m.body || live->second.targets != sorted;
        continue;
      }
      staged[key] = work;
    }
    nlohmann::json messages = nlohmann::json::array();
    for (const Sent& m : batch) {
      nlohmann::json j{{"id", m.id}, {"body", {{"n", m.body}}}};
      if (m.key) j["key"] = *m.key;
      messages.push_back(j);
    }
    nlohmann::json args{{"messages", messages}};
    if (targets) args["targets"] = *targets;
    CallPtr call = rig_.call(kClass, kObject, "enqueue", args);
    settle();
    RC_ASSERT(call->done);
    if (!call->ok) RC_FAIL("enqueue failed: " + call->error);
    RC_ASSERT(call->value.at("success").get<bool>() == !conflict);  // FAN-01, FAN-03
    if (conflict) ++coverage().rejected;
    if (!conflict)
      for (const auto& [key, work] : staged) bodyOf_[key] = work.second;
  }

  void advance(int64_t ms) {
    advanceTo(now() + ms);
    compare();
  }

  void dlqOutage(bool down) {
    if (down) ++coverage().dlqOutages;
    shared_.dlqDown = down;
  }

  // A reset of the object at a point where every commit is confirmed (a slow consumer may be in
  // flight: its claim is durable, its outcome lost).
  void crash() {
    ++coverage().crashes;
    if (auto status = rig_.status(kLabel)) RC_ASSERT(status->unconfirmed_commits == 0u);
    rig_.faults.arm(FaultKind::object_reset);
    rig_.call(kClass, kObject, "ping");
    settle();
  }

  void drain() {
    shared_.dlqDown = false;
    advance(kDrainMs);
    if (!model_.deliveries().empty()) RC_FAIL("after the drain rows remain: " + model_.toJson().dump());
    if (auto status = rig_.status(kLabel))
      if (status->stored_alarm) RC_FAIL("nothing pending but the alarm is set");
  }

 private:
  static bool ours(const nlohmann::json& e) { return e.contains("object") && e.at("object") == kLabel; }

  void advanceTo(int64_t target) {
    rig_.world.executor().at(target, [] {});
    rig_.run_until(target);
    replay();
  }
  void settle() {
    rig_.run_until(now());
    replay();
    compare();
  }

  // ---- Replay of the engine's commit points ----

  void replay() {
    const std::vector<nlohmann::json>& events = rig_.sink.events;
    for (; replayed_ < events.size(); ++replayed_) {
      const nlohmann::json& e = events[replayed_];
      if (!ours(e)) continue;
      const std::string ev = e.at("ev").get<std::string>();
      const int64_t t = e.at("t").get<int64_t>();
      if (ev == "fan.enqueue.write") onEnqueue(e);
      else if (ev == "fan.claim.write") onClaim(e, t);
      else if (ev == "fan.ack.write") onAck(e);
      else if (ev == "fan.retry.write") onRetry(e, t);
      else if (ev == "fan.dead.intent.write") onIntent(e, t);
      else if (ev == "fan.remove.write") onRemove(e);
    }
  }

  static std::string idOfKey(const FanoutModel& m, const std::string& rowId) {
    const FanoutDelivery* d = m.delivery(rowId);
    return d ? m.manifests().at(d->key).id : "";
  }

  void onEnqueue(const nlohmann::json& e) {
    std::vector<model::FanoutAccepted> batch;
    std::vector<std::string> generations;
    std::vector<std::string> targets;
    for (const nlohmann::json& m : e.at("messages")) {
      batch.push_back({m.at("id").get<std::string>(), m.at("key").get<std::string>(), m.at("payload").get<std::string>()});
      generations.push_back(m.value("generation", ""));
      targets = m.at("targets").get<std::vector<std::string>>();
      if (m.at("hit").get<bool>()) ++coverage().hits;
    }
    const FanoutModel::Enqueued out = model_.enqueue(batch, targets, e.at("at").get<int64_t>(), 0, generations);
    RC_ASSERT(!out.rejected);  // the engine wrote it, so the model must accept it
    std::size_t fresh = 0;
    for (const nlohmann::json& m : e.at("messages")) fresh += m.at("hit").get<bool>() ? 0 : targets.size();
    RC_ASSERT(out.registeredRows.size() == fresh);
  }

  void onClaim(const nlohmann::json& e, int64_t t) {
    const int64_t deadline = e.at("deadline").get<int64_t>();
    RC_ASSERT(deadline == e.at("claimAt").get<int64_t>() + kTimeoutMs);
    for (const nlohmann::json& c : e.at("claimed")) {
      ++coverage().claims;
      const std::string row = c.at("row").get<std::string>();
      const FanoutDelivery* before = model_.delivery(row);
      RC_ASSERT(before != nullptr);
      RC_ASSERT(before->nextAttemptAt <= t);  // only due rows
      const std::optional<int64_t> attempt =
          model_.claim(row, c.at("generation").get<std::string>(), c.at("attempt").get<int64_t>() - 1, kMaxAttempts, deadline);
      if (!attempt || *attempt != c.at("attempt").get<int64_t>()) RC_FAIL("claim the model refuses: " + c.dump() + " " + model_.toJson().dump());
    }
  }

  void onAck(const nlohmann::json& e) {
    const std::string row = e.at("row").get<std::string>();
    const std::string id = idOfKey(model_, row);
    const std::string target = model_.delivery(row) ? model_.delivery(row)->target : "";
    const bool matched = model_.ack(row, e.at("generation").get<std::string>(), e.at("attempt").get<int64_t>());
    RC_ASSERT(matched == e.at("matched").get<bool>());
    if (!matched) ++coverage().staleWrites;
    if (matched) ++coverage().acks;
    if (matched && e.at("how") == "ackOnReturn") RC_ASSERT(target == "ack");
    if (matched && id == "m2") RC_ASSERT(target == "ack" || target == "s");  // never settled by the consumer itself
    if (matched && id == "m4") RC_ASSERT(target == "s");                    // dead-lettered by every consumer
  }

  void onRetry(const nlohmann::json& e, int64_t t) {
    ++coverage().retries;
    const std::string row = e.at("row").get<std::string>();
    const std::string id = idOfKey(model_, row);
    const int64_t next = e.at("next").get<int64_t>();
    const std::string name = e.at("error").at("name").get<std::string>();
    RC_ASSERT(next == t + (name == "Retry" ? kExplicitRetryMs : kRetryDelayMs));
    if (name == "Retry") RC_ASSERT(id == "m1");
    const bool matched = model_.retry(row, e.at("generation").get<std::string>(), e.at("attempt").get<int64_t>(), next, name,
                                      e.at("error").at("message").get<std::string>());
    RC_ASSERT(matched == e.at("matched").get<bool>());
  }

  void onIntent(const nlohmann::json& e, int64_t t) {
    ++coverage().intents;
    const std::string row = e.at("row").get<std::string>();
    const FanoutDelivery* d = model_.delivery(row);
    RC_ASSERT(d != nullptr);
    const std::string reason = e.at("reason").get<std::string>();
    if (reason == "explicit") RC_ASSERT(idOfKey(model_, row) == "m4");  // FAN-09: only a consumer's deadLetter
    if (reason == "exhausted") RC_ASSERT(d->attempt >= kMaxAttempts);   // FAN-22
    if (d->deadLetteredAt) RC_ASSERT(e.at("at") == *d->deadLetteredAt);  // a repeated intent keeps its time
    std::optional<std::pair<std::string, std::string>> error;
    if (!e.at("error").is_null()) error = std::make_pair(e.at("error").at("name").get<std::string>(), e.at("error").at("message").get<std::string>());
    const bool matched = model_.deadLetterIntent(row, e.at("generation").get<std::string>(), e.at("attempt").get<int64_t>(), reason,
                                                 e.at("at").get<int64_t>(), t, error);
    RC_ASSERT(matched == e.at("matched").get<bool>());
  }

  void onRemove(const nlohmann::json& e) {
    const std::string row = e.at("row").get<std::string>();
    const std::string generation = e.at("generation").get<std::string>();
    const int64_t attempt = e.at("attempt").get<int64_t>();
    const bool viaDlq = e.at("why") == "dlq";
    if (viaDlq) RC_ASSERT(!shared_.dlqDown || shared_.dead.count(model_.delivery(row) ? model_.delivery(row)->deliveryId() : "") == 1u);
    const bool matched = viaDlq ? model_.removeDeadLettered(row, generation, attempt) : model_.drop(row, generation, attempt);
    RC_ASSERT(matched == e.at("matched").get<bool>());
    if (matched) ++(viaDlq ? coverage().removals : coverage().drops);
  }

  // ---- Comparison of stored state with the model ----

  void compare() {
    if (!rig_.status(kLabel) || !rig_.runtime.world().stores().has_table(kLabel, DURASIM_FANOUT_MESSAGES)) {  // nothing enqueued yet
      RC_ASSERT(model_.manifests().empty());
      return;
    }
    std::map<std::string, FanoutManifest> manifests;
    for (const SqlRow& r : rig_.runtime.world().stores().live(kLabel, "SELECT * FROM " DURASIM_FANOUT_MESSAGES).toVector())
      manifests[r.text("key")] = FanoutManifest{r.text("key"), r.text("id"), r.text("payload"),
                                                nlohmann::json::parse(r.text("targets")).get<std::vector<std::string>>(),
                                                r.int64("remaining"), r.int64("seq"), r.int64("created_at"), r.text("generation_id")};
    std::map<std::string, FanoutDelivery> deliveries;
    for (const SqlRow& r : rig_.runtime.world().stores().live(kLabel, "SELECT * FROM " DURASIM_FANOUT_DELIVERIES).toVector()) {
      FanoutDelivery d;
      d.key = r.text("message_key");
      d.target = r.text("target_id");
      d.generation = r.text("generation_id");
      d.seq = r.int64("seq");
      d.attempt = r.int64("attempt");
      d.nextAttemptAt = r.int64("next_attempt_at");
      d.createdAt = r.int64("created_at");
      d.phase = r.text("phase") == "delivery" ? model::FanoutPhase::delivery : model::FanoutPhase::deadLetter;
      d.lastError = r.optText("last_error");
      d.lastErrorName = r.optText("last_error_name");
      d.deadLetterReason = r.optText("dead_letter_reason");
      d.deadLetteredAt = r.optInt64("dead_lettered_at");
      RC_ASSERT(r.text("id") == d.rowId());
      deliveries[d.rowId()] = d;
    }
    if (auto violation = FanoutModel::accounting(manifests, deliveries)) RC_FAIL("FAN-02/04: " + *violation);
    if (manifests != model_.manifests()) RC_FAIL("manifests differ from the model: " + model_.toJson().dump());
    if (deliveries != model_.deliveries()) RC_FAIL("delivery rows differ from the model: " + model_.toJson().dump());
    if (model_.nextSeq() > 0) {
      const int64_t stored =
          rig_.runtime.world().stores().live(kLabel, "SELECT next_seq FROM " DURASIM_FANOUT_SEQ).toVector().at(0).int64("next_seq");
      RC_ASSERT(stored == model_.nextSeq());  // FAN-05
    }
  }

  Rig rig_;
  Shared shared_;
  FanoutModel model_;
  std::map<std::string, int> bodyOf_;  // key -> body of its live manifest, as enqueued
  std::size_t replayed_ = 0;
};

// ---------------------------------------------------------------------------------------------
// Commands

struct Plan {};
using FanoutCommand = rc::state::Command<Plan, Sut>;

struct Enqueue final : FanoutCommand {
  std::vector<Sent> batch;
  std::optional<std::vector<std::string>> targets;
  Enqueue() {
    const int size = *rc::gen::inRange(1, 4);
    for (int i = 0; i < size; ++i) {
      Sent m;
      m.id = *rc::gen::elementOf(kIds);
      if (*rc::gen::inRange(0, 3) == 0) m.key = *rc::gen::element<std::string>("k0", "k1");
      m.body = *rc::gen::inRange(0, 4) == 0 ? 1 : 0;
      batch.push_back(m);
    }
    if (*rc::gen::inRange(0, 3) == 0)
      targets = *rc::gen::elementOf(std::vector<std::vector<std::string>>{{"c"}, {"s"}, {"ack", "c"}, {"c", "s"}});
  }
  void run(const Plan&, Sut& sut) const override { sut.enqueue(batch, targets); }
  void show(std::ostream& os) const override {
    os << "Enqueue(";
    for (const Sent& m : batch) os << m.id << (m.key ? "/" + *m.key : "") << "=" << m.body << " ";
    os << (targets ? nlohmann::json(*targets).dump() : "all") << ")";
  }
};

struct Advance final : FanoutCommand {
  int64_t ms = *rc::gen::element<int64_t>(0, 1, 400, 1'000, 2'500, 15'000, 60'000);
  void run(const Plan&, Sut& sut) const override { sut.advance(ms); }
  void show(std::ostream& os) const override { os << "Advance(" << ms << ")"; }
};

struct Crash final : FanoutCommand {
  void run(const Plan&, Sut& sut) const override { sut.crash(); }
  void show(std::ostream& os) const override { os << "Crash"; }
};

struct DlqOutage final : FanoutCommand {
  bool down = *rc::gen::arbitrary<bool>();
  void run(const Plan&, Sut& sut) const override { sut.dlqOutage(down); }
  void show(std::ostream& os) const override { os << "DlqOutage(" << (down ? "down" : "up") << ")"; }
};

void engineAgreesWithTheModel() {
  const uint64_t seed = *rc::gen::inRange<uint64_t>(1, 1'000'000).as("world seed");
  const auto commands = *rc::gen::resize(
      kMaxCommands - 1,
      rc::state::gen::commands(Plan{}, rc::state::gen::execOneOfWithArgs<Enqueue, Enqueue, Enqueue, Advance, Advance, Advance, Advance,
                                                                         Crash, DlqOutage>()));
  Sut sut(seed);
  rc::state::runAll(commands, Plan{}, sut);
  sut.drain();
}

TEST(FanoutModelState, EngineAgreesWithTheModelOverRandomCommandSequences) {
  const std::optional<std::string> failure =
      runModelProperty("FanoutModelState/EngineAgreesWithTheModelOverRandomCommandSequences", &engineAgreesWithTheModel, kDefaultCases);
  const Coverage& c = coverage();
  std::cout << "coverage over " << c.cases << " runs: " << c.enqueues << " enqueues (" << c.rejected << " rejected, " << c.hits
            << " dedup hits), " << c.claims << " claims, " << c.acks << " acks, " << c.retries << " retries, " << c.intents
            << " dead-letter intents, " << c.removals << " DLQ removals, " << c.drops << " drops, " << c.staleWrites
            << " stale writes, " << c.lateAcksRefused << " late acks refused, " << c.crashes << " resets, " << c.dlqOutages << " DLQ outages\n";
  if (failure) FAIL() << *failure;
}

}  // namespace
}  // namespace durasim
