// Mailbox and FanoutConsumer; see mailbox.h.
#include "workloads/mailbox.h"

#include <algorithm>
#include <utility>

#include "engine/errors.h"
#include "engine/fanout_events.h"
#include "engine/json_text.h"
#include "workloads/envelope.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kHangMinMs = 1'000, kHangMaxMs = 60'000;  // workload.handler_hang before forwarding
constexpr char kRouteStep[] = "route";

nlohmann::json storedJson(const StoredMessage& m) {
  nlohmann::json j = JsonFields()
      .add("id", m.id)
      .add("messageId", m.messageId)
      .add("target", m.target)
      .add("body", m.body)
      .add("enqueuedAt", m.enqueuedAt)
      .add("storedAt", m.storedAt)
      .add("attempts", m.attempts);
  if (m.failure) {
    j["failure"] = JsonFields().add("reason", m.failure->reason);
    if (m.failure->error) j["failure"]["error"] = JsonFields()
        .add("name", m.failure->error->name)
        .add("message", m.failure->error->message);
  }
  return j;
}

std::string resultOf(std::exception_ptr error) { return error ? serializeError(error).name : "ok"; }

}  // namespace

nlohmann::json MailboxConfig::toJson() const {
  return {{"ackOnReturn", ackOnReturn},       {"dlq", withDlq},
          {"alarms", withAlarms},             {"maxBatchSize", maxBatchSize},
          {"batchDelayMs", batchDelayMs},     {"attemptTimeoutMs", attemptTimeoutMs},
          {"maxAttempts", maxAttempts},       {"alarmMinDelayMs", scheduler.alarmMinDelayMs},
          {"alarmConcurrency", scheduler.alarmConcurrency}};
}

std::string storedKey(const std::string& mailbox, const std::string& deliveryId) {
  std::string key = mailbox;
  key += "/";
  key += deliveryId;
  return key;
}

// ---------------------------------------------------------------------------------------------
// Mailbox

Mailbox::Mailbox(ObjectContext& ctx, const MailboxConfig& config, sim::FaultInjector* faults)
    : ctx_(ctx), config_(config), faults_(faults), scheduler_(ctx, config.scheduler) {
  if (config_.withAlarms) {
    NamedAlarmOptions alarms;
    alarms.handlers[kTickAlarm] = [](const DurableAlarmInfo&) -> Task<void> { co_return; };
    alarms_ = std::make_unique<DurabilityAlarms>(scheduler_, std::move(alarms));
  }
  fanout_ = std::make_unique<DurabilityFanout>(scheduler_, options());
  nlohmann::json targets = nlohmann::json::array();
  if (config_.withArchive) targets.push_back(kArchiveTarget);
  targets.push_back(kConsumerTarget);
  ctx_.probe(fanout_events::kAppTargets, {{"mailbox", label()}, {"targets", std::move(targets)}});
}

FanoutOptions Mailbox::options() {
  FanoutOptions o;
  FanoutTarget consumer;
  consumer.deliver = [this](std::vector<FanoutMessage> messages) { return deliver(std::move(messages)); };
  consumer.ackOnReturn = config_.ackOnReturn;
  o.targets[kConsumerTarget] = consumer;
  if (config_.withArchive) {
    FanoutTarget archive;
    archive.storage = [this](const StoredMessage& m) { return store(kArchiveBucket, m); };
    o.targets[kArchiveTarget] = archive;
  }
  if (config_.withDlq) o.dlq = [this](const StoredMessage& m) { return store(kDeadLetterBucket, m); };
  o.maxBatchSize = config_.maxBatchSize;
  o.batchDelayMs = config_.batchDelayMs;
  o.attemptTimeoutMs = config_.attemptTimeoutMs;
  RetryOptions retries;
  retries.maxAttempts = config_.maxAttempts;
  o.retries = retries;
  return o;
}

Task<nlohmann::json> Mailbox::call(std::string_view method, const nlohmann::json& args) {
  if (method == "enqueue") {
    Task<nlohmann::json> enqueuing = enqueue(args);
    co_return co_await enqueuing;
  }
  if (method == "redrive") {
    Task<nlohmann::json> redriving = redrive(args.value("limit", int64_t{5}));
    co_return co_await redriving;
  }
  if (method == "schedule" && alarms_) {
    Task<void> scheduling = alarms_->schedule(kTickAlarm, args.at("at").get<int64_t>());
    co_await scheduling;
    co_return nlohmann::json::object();
  }
  if (method == "ping") {
    const LoadSnapshot load = co_await fanout_->load();
    reportLoad(load);
    co_return toJson(EnqueueResult<std::vector<std::string>>::ok({}, load));
  }
  throw std::invalid_argument("Mailbox has no method " + std::string(method));
}

Task<nlohmann::json> Mailbox::enqueue(nlohmann::json args) {
  std::vector<FanoutInput> inputs;
  for (const nlohmann::json& m : args.at("messages")) {
    FanoutInput in;
    if (m.contains("id")) in.id = m.at("id").get<std::string>();
    if (m.contains("key")) in.deduplicationKey = m.at("key").get<std::string>();
    in.body = m.at("body");
    inputs.push_back(std::move(in));
  }
  EnqueueOptions options;
  if (args.contains("targets")) options.targets = args.at("targets").get<std::vector<std::string>>();
  Task<EnqueueResult<std::vector<std::string>>> enqueuing = fanout_->enqueue(std::move(inputs), std::move(options));
  const EnqueueResult<std::vector<std::string>> result = co_await enqueuing;
  reportLoad(result.load);
  co_return toJson(result);
}

// What a client reads of the pending deliveries (FAN-13), reported as it is answered.
void Mailbox::reportLoad(const LoadSnapshot& load) {
  ctx_.probe(fanout_events::kAppLoad, {{"mailbox", label()}, {"pendingDeliveries", load.outbound.pendingDeliveries}});
}

// fanout.md 3, "Redrive": the application walks its own DLQ entries.
Task<nlohmann::json> Mailbox::redrive(int64_t limit) {
  ColdBucket& bucket = ctx_.bucket(kDeadLetterBucket);
  const ColdList listed = co_await bucket.list(label() + "/", std::nullopt, limit);
  int64_t redriven = 0;
  for (const ColdObject& object : listed.objects) {
    const std::optional<ColdObjectBody> got = co_await bucket.get(object.key);
    if (!got) continue;
    const nlohmann::json entry = parseJson(got->body);
    FanoutInput input;
    input.id = entry.at("messageId").get<std::string>();
    input.body = entry.at("body");
    input.deduplicationKey = entry.at("id").get<std::string>();
    EnqueueOptions options;
    options.targets = std::vector<std::string>{entry.at("target").get<std::string>()};
    Task<EnqueueResult<std::vector<std::string>>> enqueuing = fanout_->enqueue(std::move(input), std::move(options));
    const EnqueueResult<std::vector<std::string>> result = co_await enqueuing;
    if (result.success) {
      Task<void> removing = bucket.remove({object.key});
      co_await removing;
      ++redriven;
    }
    ctx_.probe(fanout_events::kAppRedrive, {{"mailbox", label()},
                                            {"key", object.key},
                                            {"delivery", entry.at("id")},
                                            {"id", entry.at("messageId")},
                                            {"target", entry.at("target")},
                                            {"success", result.success},
                                            {"removed", result.success}});
  }
  co_return nlohmann::json{{"redriven", redriven}};
}

Task<void> Mailbox::deliver(std::vector<FanoutMessage> messages) {
  const int64_t handedOutAt = ctx_.clock.now();
  const int64_t deadline = handedOutAt + config_.attemptTimeoutMs;  // the batch's, as the spec sets it
  co_await misbehave("fanout.deliver");
  nlohmann::json batch = nlohmann::json::array();
  for (const FanoutMessage& m : messages) {
    Task<nlohmann::json> routing = routeToken(m);
    const nlohmann::json token = co_await routing;
    batch.push_back(JsonFields()
        .add("deliveryId", m.deliveryId)
        .add("id", m.id)
        .add("attempt", m.attempt)
        .add("token", token)
        .add("body", m.body));
  }
  Stub consumer = ctx_.objects(config_.consumerClass).get(config_.consumerName);
  Task<nlohmann::json> calling =
      consumer.call("consume", JsonFields()
          .add("mailbox", label())
          .add("target", kConsumerTarget)
          .add("deadline", deadline)
          .add("messages", std::move(batch)));
  const nlohmann::json decisions = co_await calling;
  if (decisions.contains("error")) throw std::runtime_error("consumer failed: " + decisions.at("error").dump());
  for (std::size_t i = 0; i < messages.size(); ++i) {
    Task<void> settling = settle(messages[i], decisions.at("decisions").at(i), handedOutAt);
    co_await settling;
  }
}

// A step whose result must not change across attempts of one delivery (FAN-24): computed once,
// then read back from the memo.
Task<nlohmann::json> Mailbox::routeToken(FanoutMessage message) {
  const nlohmann::json identity =
      JsonFields().add("mailbox", label()).add("delivery", message.deliveryId).add("attempt", message.attempt).add("step", kRouteStep);
  Task<nlohmann::json> memoizing = message.memoize(kRouteStep, [this, identity]() -> Task<nlohmann::json> {
    nlohmann::json computed = identity;
    computed["value"] = static_cast<int64_t>(ctx_.random.random() * 1e9);
    ctx_.probe(fanout_events::kAppMemoCompute, computed);
    co_return computed.at("value");
  });
  const nlohmann::json token = co_await memoizing;
  nlohmann::json returned = identity;
  returned["value"] = token;
  ctx_.probe(fanout_events::kAppMemo, std::move(returned));
  co_return token;
}

// Applies one decision of the consumer (and, when it says so, a second call, which must fail).
Task<void> Mailbox::settle(FanoutMessage message, nlohmann::json decision, int64_t handedOutAt) {
  const std::string action = decision.at("action").get<std::string>();
  if (action == "none") co_return;
  const int calls = decision.value("again", false) ? 2 : 1;
  for (int call = 0; call < calls; ++call) {
    const int64_t sinceHandedOut = ctx_.clock.now() - handedOutAt;  // on this incarnation's clock
    std::exception_ptr error;
    try {
      if (action == "ack") {
        co_await message.ack();
      } else if (action == "retry") {
        Task<void> retrying = message.retry(decision.at("delayMs").get<int64_t>());
        co_await retrying;
      } else {
        co_await message.deadLetter();
      }
    } catch (const DurabilityError&) {
      error = std::current_exception();  // a refused settlement: FanoutSettlementError or RangeError
    }
    nlohmann::json reported = JsonFields()
        .add("mailbox", label())
        .add("delivery", message.deliveryId)
        .add("attempt", message.attempt)
        .add("action", action)
        .add("second", call == 1)
        .add("sinceHandedOut", sinceHandedOut)
        .add("result", resultOf(error));
    if (action == "retry") reported["delayMs"] = decision.at("delayMs");
    ctx_.probe(fanout_events::kAppSettle, std::move(reported));
  }
}

// A storage target's or the DLQ's write: create-only, keyed by delivery identity.
Task<void> Mailbox::store(const char* bucket, StoredMessage message) {
  ColdPutOptions options;
  options.etagDoesNotMatch = "*";
  const std::string key = storedKey(label(), message.id);
  Task<std::optional<ColdObject>> putting = ctx_.bucket(bucket).put(key, jsonText(storedJson(message)), options);
  const std::optional<ColdObject> created = co_await putting;
  nlohmann::json reported = JsonFields()
      .add("mailbox", label())
      .add("bucket", bucket)
      .add("key", key)
      .add("delivery", message.id)
      .add("target", message.target)
      .add("created", created.has_value())
      .add("attempts", message.attempts);
  if (message.failure) reported["reason"] = message.failure->reason;
  ctx_.probe(fanout_events::kAppStored, std::move(reported));
}

// workload.handler_throw / workload.handler_hang (runtime.md 11.2).
Task<void> Mailbox::misbehave(const char* point) {
  if (!faults_) co_return;
  const sim::FaultSite site{label(), ctx_.incarnation, point};
  if (faults_->fires(sim::FaultKind::workload_handler_throw, site)) throw std::runtime_error("injected consumer failure");
  int64_t hang = 0;
  if (faults_->fires(sim::FaultKind::workload_handler_hang, site, [&] {
        hang = kHangMinMs + static_cast<int64_t>(ctx_.random.random() * static_cast<double>(kHangMaxMs - kHangMinMs));
        return nlohmann::json{{"ms", hang}};
      }))
    co_await ctx_.clock.sleepFor(hang);
}

// ---------------------------------------------------------------------------------------------
// FanoutConsumer

FanoutConsumer::FanoutConsumer(ObjectContext& ctx, int64_t hangMs) : receiver_(ctx), hangMs_(hangMs) {}

Task<nlohmann::json> FanoutConsumer::call(std::string_view method, const nlohmann::json& args) {
  if (method != "consume") throw std::invalid_argument("FanoutConsumer has no method " + std::string(method));
  receiver_.receive(args);
  nlohmann::json decisions = nlohmann::json::array();
  for (std::size_t i = 0; i < args.at("messages").size(); ++i) decisions.push_back(receiver_.decide());
  Task<bool> pacing = receiver_.pace(args.at("deadline").get<int64_t>(), hangMs_);
  if (!co_await pacing) co_return nlohmann::json{{"error", "consumer refused the batch"}};
  co_return nlohmann::json{{"decisions", std::move(decisions)}};
}

}  // namespace durasim::workloads
