// FanoutReceiver; see fanout_receiver.h.
#include "workloads/fanout_receiver.h"

#include <string>

#include "engine/fanout_events.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kMaxRetryDelayMs = 3'000;
constexpr int64_t kNearDeadlineMs = 30;  // how early before a batch deadline a near-deadline answer is sent

}  // namespace

FanoutReceiver::FanoutReceiver(ObjectContext& ctx) : ctx_(ctx) {
  ctx_.storage.exec(
      "CREATE TABLE IF NOT EXISTS consumed (delivery TEXT NOT NULL, attempt INTEGER NOT NULL, mailbox TEXT NOT NULL,"
      " id TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (delivery, attempt))");
}

void FanoutReceiver::receive(const nlohmann::json& args) {
  const std::string mailbox = args.at("mailbox").get<std::string>();
  const std::string target = args.at("target").get<std::string>();
  for (const nlohmann::json& m : args.at("messages")) {
    const bool fresh = ctx_.storage
                           .exec("INSERT OR IGNORE INTO consumed (delivery, attempt, mailbox, id, at) VALUES (?, ?, ?, ?, ?)",
                                 m.at("deliveryId").get<std::string>(), m.at("attempt").get<int64_t>(), mailbox,
                                 m.at("id").get<std::string>(), ctx_.clock.now())
                           .rowsWritten() > 0;
    if (fresh)
      ctx_.probe(fanout_events::kAppConsume, {{"mailbox", mailbox}, {"target", target}, {"delivery", m.at("deliveryId")},
                                              {"id", m.at("id")}, {"attempt", m.at("attempt")}});
  }
}

nlohmann::json FanoutReceiver::decide() {
  const double roll = ctx_.random.random();
  nlohmann::json decision;
  if (roll < 0.60) {
    decision = {{"action", "ack"}};
  } else if (roll < 0.72) {
    // One retry in twenty asks for an invalid delay, which is refused without settling.
    const bool invalid = ctx_.random.random() < 0.05;
    decision = {{"action", "retry"},
                {"delayMs", invalid ? int64_t{-1} : static_cast<int64_t>(ctx_.random.random() * kMaxRetryDelayMs)}};
  } else if (roll < 0.76) {
    decision = {{"action", "deadLetter"}};
  } else {
    decision = {{"action", "none"}};
  }
  if (decision.at("action") != "none" && ctx_.random.random() < 0.05) decision["again"] = true;
  return decision;
}

Task<bool> FanoutReceiver::pace(int64_t deadline, int64_t hangMs) {
  const double roll = ctx_.random.random();
  if (roll < 0.03) co_await ctx_.clock.sleepFor(hangMs);  // answers after the batch deadline
  if (roll >= 0.03 && roll < 0.06) {
    // Answers just before the batch deadline, so that its settlements land around it.
    const int64_t at = deadline - static_cast<int64_t>(ctx_.random.random() * kNearDeadlineMs);
    if (at > ctx_.clock.now()) co_await ctx_.clock.sleepUntil(at);
  }
  co_return roll < 0.06 || roll >= 0.11;
}

}  // namespace durasim::workloads
