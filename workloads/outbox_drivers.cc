// The shared Account drivers; see outbox_drivers.h.
#include "workloads/outbox_drivers.h"

#include "engine/outbox_schema.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kConcurrencyChoices[] = {1, 2, 10};
constexpr int64_t kBatchSizeChoices[] = {1, 3, 50};
constexpr int64_t kBatchDelayChoices[] = {0, 0, 250, 1'000};
constexpr int64_t kTimeoutChoices[] = {5'000, 20'000};
constexpr int64_t kFixedDelayChoices[] = {0, 1'500, 10'000};

}  // namespace

AccountConfig drawAccountConfig(const Draw& draw, bool withAudit) {
  AccountConfig config;
  config.scheduler.alarmConcurrency = pick(draw, kConcurrencyChoices);
  config.scheduler.alarmMinDelayMs = draw(kMinAlarmMinDelayMs, kMaxAlarmMinDelayMs);
  if (withAudit && draw(0, 1) == 0) config.channels.push_back(kAuditChannel);
  config.maxBatchSize = pick(draw, kBatchSizeChoices);
  config.batchDelayMs = pick(draw, kBatchDelayChoices);
  config.attemptTimeoutMs = pick(draw, kTimeoutChoices);
  switch (draw(0, 3)) {
    case 0:
      config.retryKind = "fixed";
      config.retryDelayMs = pick(draw, kFixedDelayChoices);
      break;
    case 1:
      config.retryKind = "invalid";
      break;
    default:
      config.retryKind = "default";
      break;
  }
  return config;
}

std::vector<std::string> unsettledAccounts(const sim::StoreView& stores, const std::vector<sim::ObjectStatus>& objects) {
  std::vector<std::string> items;
  for (const sim::ObjectStatus& status : objects) {
    if (status.label.rfind(Account::kClass, 0) != 0) continue;
    const int64_t rows = stores.has_table(status.label, DURASIM_OUTBOX)
                             ? stores.live(status.label, "SELECT count(*) AS n FROM " DURASIM_OUTBOX).one().int64("n")
                             : 0;
    if (rows > 0) items.push_back(status.label + " has " + std::to_string(rows) + " outbox rows");
    else if (status.stored_alarm) items.push_back(status.label + " still stores an alarm");
  }
  return items;
}

}  // namespace durasim::workloads
