// Classifying call outcomes and retrying until definite; see client.h.
#include "workloads/client.h"

namespace durasim::workloads {

std::string Reply::label() const {
  switch (kind) {
    case Kind::ok:
      return "ok";
    case Kind::error:
      return value.at("name").get<std::string>();
    case Kind::uncertain:
      break;
  }
  return "uncertain";
}

Reply classifyAnswer(nlohmann::json answer, const CallStyle& style) {
  if (!style.enveloped) return {Reply::Kind::ok, std::move(answer)};
  if (answer.contains("error")) return {Reply::Kind::error, std::move(answer.at("error"))};
  return {Reply::Kind::ok, std::move(answer.at("result"))};
}

Reply classifyFailure(const RpcError& error, const CallStyle& style) {
  const bool refused = error.overloaded() && !error.durableObjectReset();
  if (refused && style.refusalDefinite) return {Reply::Kind::error, {{"name", error.name()}, {"message", error.what()}}};
  return {};
}

Task<Settled> retryUntilDefinite(sim::World& world, Backoff backoff, std::function<Task<Reply>()> attempt) {
  Settled settled;
  for (;;) {
    ++settled.attempts;
    Task<Reply> trying = attempt();
    settled.reply = co_await trying;
    if (settled.reply.definite()) co_return settled;
    co_await world.sleep_for(backoff.after(settled.attempts));
  }
}

Task<Reply> ObjectClient::call(std::string name, std::string method, nlohmann::json args) {
  ++calls_;
  Reply reply;
  try {
    Stub stub = objects_.get(name);
    Task<nlohmann::json> calling = stub.call(std::move(method), std::move(args));
    reply = classifyAnswer(co_await calling, style_);
  } catch (const RpcError& error) {
    reply = classifyFailure(error, style_);
  }
  if (!reply.definite()) ++uncertain_;
  co_return reply;
}

Task<Settled> ObjectClient::callUntilDefinite(std::string name, std::string method, nlohmann::json args, Backoff backoff) {
  const std::function<Task<Reply>()> attempt = [this, &name, &method, &args] { return call(name, method, args); };
  Task<Settled> retrying = retryUntilDefinite(world_, backoff, attempt);
  Settled settled = co_await retrying;
  co_return settled;
}

}  // namespace durasim::workloads
