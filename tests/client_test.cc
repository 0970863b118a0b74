// The workloads' client helper (workloads/client.h): answers, refusals and lost calls classified as
// ok / definite error / uncertain under each call style, enqueue envelopes, the backoff, and calls
// retried until definite on the simulated runtime (lost requests retried, refusals not).
#include <gtest/gtest.h>

#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "tests/runtime_test_harness.h"
#include "workloads/client.h"

namespace durasim::rt_test {
namespace {

using workloads::Backoff;
using workloads::CallStyle;
using workloads::ObjectClient;
using workloads::Reply;
using workloads::Settled;

constexpr const char* kClass = "Answerer";
constexpr CallStyle kEnveloped{true, false};

// Answers "plain" with its args, "enveloped" with {"result": args}, "refuse" with a library error
// in the envelope.
class Answerer final : public DurableObject {
 public:
  explicit Answerer(ObjectContext&) {}
  Task<json> call(std::string_view method, const json& args) override {
    if (method == "plain") co_return args;
    if (method == "enveloped") co_return json{{"result", args}};
    if (method == "refuse") co_return json{{"error", {{"name", "LogLeaseError"}, {"message", "not yours"}}}};
    throw std::invalid_argument("unknown method");
  }
};

RpcError rpcError(RpcError::Kind kind, bool overloaded, bool reset) {
  RpcError::Flags flags;
  flags.overloaded = overloaded;
  flags.durableObjectReset = reset;
  return RpcError(kind, flags, "failed");
}

TEST(ClientReply, AnswersByStyle) {
  const Reply plain = workloads::classifyAnswer(json{{"error", 1}}, workloads::kPlainCallStyle);
  EXPECT_TRUE(plain.ok());
  EXPECT_EQ(plain.value, (json{{"error", 1}}));
  const Reply ok = workloads::classifyAnswer(json{{"result", 7}}, kEnveloped);
  EXPECT_TRUE(ok.ok());
  EXPECT_EQ(ok.value, 7);
  EXPECT_EQ(ok.label(), "ok");
  const Reply error = workloads::classifyAnswer(json{{"error", {{"name", "TypeError"}, {"message", "m"}}}}, kEnveloped);
  EXPECT_TRUE(error.definite());
  EXPECT_TRUE(error.failedWith("TypeError"));
  EXPECT_FALSE(error.failedWith("LogLeaseError"));
  EXPECT_EQ(error.label(), "TypeError");
}

TEST(ClientReply, RefusalsAreDefiniteOnlyWhenTheStyleSaysSo) {
  const RpcError refused = rpcError(RpcError::Kind::overloaded, true, false);
  const Reply definite = workloads::classifyFailure(refused, workloads::kPlainCallStyle);
  EXPECT_TRUE(definite.failedWith("RpcError"));
  EXPECT_EQ(definite.value.at("message"), "failed");
  EXPECT_FALSE(workloads::classifyFailure(refused, kEnveloped).definite());
  // An overloaded reset may have run part of the call; a lost connection may have run all of it.
  for (const RpcError& error :
       {rpcError(RpcError::Kind::reset, true, true), rpcError(RpcError::Kind::disconnected, false, false)}) {
    const Reply reply = workloads::classifyFailure(error, workloads::kPlainCallStyle);
    EXPECT_FALSE(reply.definite());
    EXPECT_EQ(reply.label(), "uncertain");
    EXPECT_TRUE(reply.value.is_null());
  }
}

TEST(ClientReply, EnqueueEnvelopes) {
  const Reply accepted = workloads::classifyEnqueue(EnqueueResult<std::vector<int64_t>>::ok({3, 4}, LoadSnapshot{}));
  EXPECT_TRUE(accepted.ok());
  EXPECT_EQ(accepted.value, json::array({3, 4}));
  const Reply rejected = workloads::classifyEnqueue(
      EnqueueResult<std::vector<int64_t>>::rejected(ErrorInfo{"LogAppendError", "too many"}, LoadSnapshot{}));
  EXPECT_TRUE(rejected.failedWith("LogAppendError"));
  EXPECT_EQ(rejected.value.at("message"), "too many");
}

TEST(ClientBackoff, GrowsLinearlyUpToItsCap) {
  const Backoff backoff{500, 1'200};
  EXPECT_EQ(backoff.after(1), 500);
  EXPECT_EQ(backoff.after(2), 1'000);
  EXPECT_EQ(backoff.after(3), 1'200);
}

struct ClientRig : Rig {
  explicit ClientRig(CallStyle style) : client(world, runtime.client(kClass), style) {
    runtime.define_class(kClass, [](ObjectContext& ctx) { return std::make_unique<Answerer>(ctx); });
  }

  // Calls `method` on "a" until definite, from a client task; the result once it is in.
  std::shared_ptr<std::optional<Settled>> callUntilDefinite(const std::string& method, const Backoff& backoff) {
    auto out = std::make_shared<std::optional<Settled>>();
    world.tasks().spawn("client." + method, settle(&client, method, backoff, out));
    return out;
  }
  static Task<void> settle(ObjectClient* client, std::string method, Backoff backoff,
                           std::shared_ptr<std::optional<Settled>> out) {
    const json args = {{"n", 1}};
    Task<Settled> calling = client->callUntilDefinite("a", method, args, backoff);
    const Settled settled = co_await calling;
    *out = settled;
  }

  ObjectClient client;
};

TEST(ObjectClient, RetriesLostRequestsUntilDefinite) {
  ClientRig rig(workloads::kPlainCallStyle);
  rig.faults.arm(FaultKind::rpc_request_lost, 2);
  const SimTime start = rig.world.now();
  auto out = rig.callUntilDefinite("plain", Backoff{500, 10'000});
  rig.run_for(60'000);
  ASSERT_TRUE(out->has_value());
  EXPECT_TRUE((*out)->reply.ok());
  EXPECT_EQ((*out)->reply.value, (json{{"n", 1}}));
  EXPECT_EQ((*out)->attempts, 3);
  EXPECT_EQ(rig.client.calls(), 3);
  EXPECT_EQ(rig.client.uncertain(), 2);
  EXPECT_GE(rig.world.now() - start, 500 + 1'000);
}

TEST(ObjectClient, StopsAtARefusalItTakesAsDefinite) {
  ClientRig rig(workloads::kPlainCallStyle);
  rig.faults.arm(FaultKind::rpc_overloaded, 1);
  auto out = rig.callUntilDefinite("plain", Backoff{500, 10'000});
  rig.run_for(60'000);
  ASSERT_TRUE(out->has_value());
  EXPECT_TRUE((*out)->reply.failedWith("RpcError"));
  EXPECT_EQ((*out)->attempts, 1);
  EXPECT_EQ(rig.client.uncertain(), 0);
}

TEST(ObjectClient, EnvelopedAnswersAndRefusalsRetried) {
  ClientRig rig(kEnveloped);
  rig.faults.arm(FaultKind::rpc_overloaded, 1);
  auto ok = rig.callUntilDefinite("enveloped", Backoff{500, 10'000});
  rig.run_for(60'000);
  ASSERT_TRUE(ok->has_value());
  EXPECT_EQ((*ok)->reply.value, (json{{"n", 1}}));
  EXPECT_EQ((*ok)->attempts, 2);
  auto error = rig.callUntilDefinite("refuse", Backoff{500, 10'000});
  rig.run_for(60'000);
  ASSERT_TRUE(error->has_value());
  EXPECT_TRUE((*error)->reply.failedWith("LogLeaseError"));
  EXPECT_EQ((*error)->attempts, 1);
}

}  // namespace
}  // namespace durasim::rt_test
