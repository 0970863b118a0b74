// The log workload's producers: each pushes `ops` batches through a RoutingClient (default
// selection over "shard-0".."shard-(w-1)", a push deadline), with record keys "<producer>-<seq>".
// An uncertain outcome (RPC failure, lost reply, RoutingTimeoutError) is retried with the same batch
// and keys, pinned to the shard the first attempt reached, until a definite answer. Some batches are
// invalid (empty, oversized, an empty key) and must be rejected (LOG-14); every accepted batch is an
// `app.produce` event. Some valid batches repeat a key with another body (LOG-02). An append that
// throws a library error instead of answering in its envelope breaks LOG-14. Some batches are first
// pushed through a sharding function that names no shard, which must be refused before anything is
// sent (RTE-10). Every push and every run of the invoke function is an `app.rte.*` event: what the
// RTE checks judge the routing client by. A heartbeat pushes pings through the same default-selection
// client (an append's own envelope always counts the append in flight, so only a ping's lets the
// width shrink).
#include <functional>
#include <string>
#include <string_view>

#include "engine/errors.h"
#include "engine/log_events.h"
#include "engine/routing_events.h"
#include "sim/async_event.h"
#include "workloads/log_roles.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kMaxThinkMs = 4'000;
constexpr int64_t kMaxPadBytes = 200;
constexpr uint32_t kInvalidBatchPpm = 60'000;  // 6% of batches are invalid
constexpr uint32_t kDuplicateKeyPpm = 150'000;  // 15% of valid batches repeat a key with another body
constexpr uint32_t kRefusedPushPpm = 30'000;    // 3% are first pushed to no shard
constexpr int64_t kMinHeartbeatMs = 2'000, kMaxHeartbeatMs = 8'000;
constexpr Backoff kPushBackoff{500, 30'000};

// "workload.<workload>.routing": the routing clients' own draws.
std::string routingStream(const char* workload) {
  std::string name = "workload.";
  name += workload;
  name += ".routing";
  return name;
}

// Forwards a routing client's `rte.*` events to the trace, naming the client.
std::function<void(std::string_view, EventFields)> tracing(sim::World* world, const char* client) {
  return [world, client](std::string_view event, EventFields fields) {
    fields["client"] = client;
    world->emit(event, std::move(fields));
  };
}

}  // namespace

LogProducers::LogProducers(LogRun& run)
    : run_(run), clock_(*run.world), random_(run.world->random(), run.world->random().stream(routingStream(run.name))) {
  sim::World* world = run_.world;
  AppendClient::Options options;
  options.invoke = [this](const ShardAddress& address, const AppendBatch& batch) { return invokeAppend(address, batch); };
  options.probe = tracing(world, "routed");
  options.softBacklogLimit = run_.softBacklogLimit;
  options.makeEvent = [this, world] { return std::make_shared<sim::SimAsyncEvent>(world->executor(), sleepingWaits_); };
  options.background = [world](Task<void> work) { world->tasks().spawn("log.append.invoke", std::move(work)); };
  routed_.emplace(AppendClient(clock_, random_, options).withTimeout(run_.pushTimeoutMs));
  options.sharding = [](const AppendBatch&, const std::optional<nlohmann::json>& context, const Observations&) {
    return ShardAddress{context->at("shard").get<std::string>(), std::nullopt};
  };
  options.probe = tracing(world, "pinned");
  pinned_.emplace(AppendClient(clock_, random_, options).withTimeout(run_.pushTimeoutMs));
  options.sharding = [](const AppendBatch&, const std::optional<nlohmann::json>&, const Observations&) {
    return ShardAddress{"", std::nullopt};
  };
  options.probe = tracing(world, "faulty");
  faulty_.emplace(AppendClient(clock_, random_, options).withTimeout(run_.pushTimeoutMs));
}

Task<void> LogProducers::producer(int64_t p) {
  int64_t seq = 0;
  ActorStream ops(run_.world->random(), run_.name, "producer", p);
  for (int64_t i = 0; i < run_.ops && ops.next_operation(); ++i) {
    co_await run_.world->sleep_for(ops.between(0, kMaxThinkMs));
    const bool invalid = ops.chance(kInvalidBatchPpm);
    nlohmann::json records = nlohmann::json::array();
    if (invalid) {
      records = invalidBatch(ops, p, seq);
    } else {
      const int64_t size = ops.between(1, run_.base.maxBatchSize);
      for (int64_t r = 0; r < size; ++r) records.push_back(record(ops, p, seq++));
      if (size > 1 && ops.chance(kDuplicateKeyPpm)) records.back() = repeated(ops, p, records[ops.index(static_cast<std::size_t>(size - 1))]);
    }
    Task<void> producing = produce(ops, p, std::make_shared<const nlohmann::json>(std::move(records)), invalid);
    co_await producing;
  }
  ++run_.counts.producersDone;
}

Task<void> LogProducers::heartbeat() {
  ActorStream ops(run_.world->random(), run_.name, "heartbeat");
  while (ops.next_operation()) {
    co_await run_.world->sleep_for(ops.between(kMinHeartbeatMs, kMaxHeartbeatMs));
    AppendBatch batch{std::make_shared<const nlohmann::json>(nlohmann::json::array())};
    batch.ping = true;
    pinging_ = true;
    Task<std::optional<AppendResult>> pinging = tracedPush(*routed_, batch, false, std::nullopt);
    co_await pinging;
    pinging_ = false;
  }
}

// "shard-<i>" is served by partition p(i mod partitions).
std::string LogProducers::partitionOfShard(const std::string& shard) const {
  const int64_t index = std::stoll(shard.substr(std::string(kRoutingShardPrefix).size()));
  return partitionName(index % run_.partitions);
}

// The invoke function: one append RPC to the partition serving the shard (none serves an empty or
// unknown shard: that throws).
Task<AppendResult> LogProducers::invokeAppend(const ShardAddress& address, const AppendBatch& batch) {
  *batch.shard = address.shard;
  run_.world->emit(routing_events::kAppInvoke, {{"call", batch.call}, {"shard", address.shard}});
  ++calls_;
  std::optional<AppendResult> result;
  try {
    const std::string name = partitionOfShard(address.shard);
    Stub stub = run_.runtime->client(LogPartition::kClass).get(name);
    const std::string method = batch.ping ? "ping" : "append";
    nlohmann::json args = batch.ping ? nlohmann::json::object() : JsonFields().add("records", *batch.records);
    Task<nlohmann::json> calling = stub.call(method, std::move(args));
    const nlohmann::json reply = co_await calling;
    // append and ping answer in their envelope; a library error thrown instead (the partition's
    // error reply) breaks LOG-14 and counts as a rejection.
    const bool enveloped = !reply.contains("error") || reply.contains("success");
    run_.expectations.check("LOG-14", enveloped, [&] { return name + " " + method + " threw " + reply.at("error").dump() + " instead of returning success = false"; });
    if (enveloped)
      result.emplace(appendResultFromJson(reply));
    else
      result.emplace(AppendResult::rejected(ErrorInfo{reply.at("error").at("name").get<std::string>(), reply.at("error").at("message").get<std::string>()}, LoadSnapshot{}));
  } catch (...) {  // handed on as a value: no second unwinding (engine/task.h, Rethrow)
    run_.world->emit(routing_events::kAppInvoked, {{"call", batch.call}, {"threw", true}, {"success", nullptr}});
    co_return Rethrow{std::current_exception()};
  }
  run_.world->emit(routing_events::kAppInvoked, {{"call", batch.call}, {"threw", false}, {"success", result->success}});
  co_return std::move(*result);
}

nlohmann::json LogProducers::record(ActorStream& ops, int64_t p, int64_t seq) {
  std::string pad(static_cast<std::size_t>(ops.between(0, kMaxPadBytes)), static_cast<char>('a' + seq % 26));
  return JsonFields()
      .add("key", producerName(p) + "-" + std::to_string(seq))
      .add("body", JsonFields().add("producer", p).add("seq", seq).add("pad", std::move(pad)));
}

// `original`'s key again, with another body: the log keeps one record, with this last body (LOG-02).
nlohmann::json LogProducers::repeated(ActorStream& ops, int64_t p, const nlohmann::json& original) {
  const std::string pad(static_cast<std::size_t>(ops.between(0, kMaxPadBytes)), 'Z');
  return {{"key", original.at("key")}, {"body", {{"producer", p}, {"seq", original.at("body").at("seq")}, {"pad", pad}, {"again", true}}}};
}

// A batch the log must reject: empty, one record over maxBatchSize, or a record with an empty key.
nlohmann::json LogProducers::invalidBatch(ActorStream& ops, int64_t p, int64_t& seq) {
  nlohmann::json records = nlohmann::json::array();
  switch (ops.between(0, 2)) {
    case 0:
      break;
    case 1:
      for (int64_t i = 0; i <= run_.base.maxBatchSize; ++i) records.push_back(record(ops, p, seq++));
      break;
    default:
      records.push_back(record(ops, p, seq++));
      records.push_back({{"key", ""}, {"body", {{"producer", p}, {"seq", -1}}}});
      break;
  }
  return records;
}

// Pushes until a definite answer; retries go to the shard the first attempt reached.
Task<void> LogProducers::produce(ActorStream& ops, int64_t p, AppendRecords records, bool invalid) {
  if (ops.chance(kRefusedPushPpm)) {
    Task<void> refusing = refusedPush(records);
    co_await refusing;
  }
  std::string shard;  // empty until an attempt reached one
  const std::function<Task<Reply>()> attempt = [this, &records, &shard] { return pushOnce(records, shard); };
  Task<Settled> pushing = retryUntilDefinite(*run_.world, kPushBackoff, attempt);
  const Settled settled = co_await pushing;
  settleAppend(p, *records, invalid, settled.reply, shard);
}

// One push of `records`: routed while `shard` is empty, else pinned to it; `shard` becomes the
// shard this push reached, if any.
Task<Reply> LogProducers::pushOnce(AppendRecords records, std::string& shard) {
  AppendBatch batch{std::move(records)};
  std::optional<nlohmann::json> context;
  if (!shard.empty()) context = nlohmann::json{{"shard", shard}};
  Task<std::optional<AppendResult>> pushing = tracedPush(shard.empty() ? *routed_ : *pinned_, batch, false, std::move(context));
  const std::optional<AppendResult> result = co_await pushing;
  const Reply reply = result ? classifyEnqueue(*result) : Reply{};
  if (!batch.shard->empty()) shard = *batch.shard;
  if (!reply.definite()) ++uncertain_;
  co_return reply;
}

// A push whose sharding names no shard: the client must throw RoutingError without invoking. Any
// other outcome is recorded for the checks and otherwise ignored (the batch is pushed again anyway).
Task<void> LogProducers::refusedPush(AppendRecords records) {
  AppendBatch batch{std::move(records)};
  Task<std::optional<AppendResult>> pushing = tracedPush(*faulty_, batch, true, std::nullopt);
  co_await pushing;
}

// One push of `batch` through `client`, between its `app.rte.push` and `app.rte.pushed` events: the
// result, or nullopt when the push timed out or the transport failed. For a `faulty` push (its
// sharding names no shard) RoutingError ("refused") and any other exception ("threw") are outcomes
// too; for every other push they propagate.
Task<std::optional<AppendResult>> LogProducers::tracedPush(const AppendClient& client, AppendBatch& batch, bool faulty,
                                                           std::optional<nlohmann::json> context) {
  batch.call = ++pushes_;
  run_.world->emit(routing_events::kAppPush, {{"call", batch.call}, {"faulty", faulty}, {"timeoutMs", run_.pushTimeoutMs}});
  std::optional<AppendResult> result;
  std::string_view outcome = "reply";
  try {
    Task<AppendResult> pushing = client.push(batch, std::move(context));
    result.emplace(co_await pushing);
  } catch (const RoutingTimeoutError&) {
    outcome = "timeout";
  } catch (const RpcError&) {
    outcome = "threw";
  } catch (const RoutingError&) {
    if (!faulty) throw;
    outcome = "refused";
  } catch (const std::exception&) {
    if (!faulty) throw;
    outcome = "threw";
  }
  run_.world->emit(routing_events::kAppPushed, {{"call", batch.call},
                                                {"outcome", outcome},
                                                {"success", result ? nlohmann::json(result->success) : nlohmann::json()}});
  co_return result;
}

void LogProducers::settleAppend(int64_t p, const nlohmann::json& records, bool invalid, const Reply& reply,
                                const std::string& shard) {
  if (invalid) {
    run_.expectations.check("LOG-14", !reply.ok(), [&] {
      return "an invalid batch of " + std::to_string(records.size()) + " records was accepted by " + shard;
    });
    return;
  }
  if (!reply.ok()) {
    ++run_.counts.rejected;
    return;
  }
  nlohmann::json keys = nlohmann::json::array(), bodies = nlohmann::json::array();
  for (const nlohmann::json& r : records) {
    keys.push_back(r.at("key"));
    bodies.push_back(r.at("body"));
  }
  run_.counts.appended += static_cast<int64_t>(records.size());
  run_.world->emit(log_events::kAppProduce, {{"partition", partitionLabel(partitionOfShard(shard))},
                                   {"producer", producerName(p)},
                                   {"keys", std::move(keys)},
                                   {"bodies", std::move(bodies)},
                                   {"offsets", reply.value}});
}

}  // namespace durasim::workloads
