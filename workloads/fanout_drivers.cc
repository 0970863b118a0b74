// The shared Mailbox drivers; see fanout_drivers.h.
#include "workloads/fanout_drivers.h"

#include "engine/alarms_schema.h"
#include "engine/fanout_schema.h"

namespace durasim::workloads {
namespace {

constexpr int64_t kConcurrencyChoices[] = {1, 2, 10};
constexpr int64_t kBatchDelayChoices[] = {0, 0, 250, 1'000};
constexpr int64_t kBatchSizeChoices[] = {1, 3, 10};
constexpr int64_t kTimeoutChoices[] = {5'000, 20'000};
constexpr int64_t kAttemptChoices[] = {2, 4, 6};

}  // namespace

MailboxConfig drawMailboxConfig(const Draw& draw, bool dlqAlways) {
  MailboxConfig config;
  config.scheduler.alarmConcurrency = pick(draw, kConcurrencyChoices);
  config.scheduler.alarmMinDelayMs = draw(kMinAlarmMinDelayMs, kMaxAlarmMinDelayMs);
  config.ackOnReturn = draw(0, 2) == 0;
  config.withDlq = dlqAlways || draw(0, 4) != 0;
  config.withAlarms = draw(0, 2) == 0;
  config.batchDelayMs = pick(draw, kBatchDelayChoices);
  config.maxBatchSize = pick(draw, kBatchSizeChoices);
  config.attemptTimeoutMs = pick(draw, kTimeoutChoices);
  config.maxAttempts = pick(draw, kAttemptChoices);
  return config;
}

std::vector<std::string> unsettledMailboxes(const sim::StoreView& stores, const std::vector<sim::ObjectStatus>& objects) {
  std::vector<std::string> items;
  for (const sim::ObjectStatus& status : objects) {
    if (status.label.rfind(Mailbox::kClass, 0) != 0) continue;
    const int64_t rows = stores.has_table(status.label, DURASIM_FANOUT_DELIVERIES)
                             ? stores.live(status.label, "SELECT count(*) AS n FROM " DURASIM_FANOUT_DELIVERIES).one().int64("n")
                             : 0;
    const int64_t alarms =
        stores.has_table(status.label, DURASIM_ALARMS)
            ? stores.live(status.label, "SELECT count(*) AS n FROM " DURASIM_ALARMS " WHERE status = 'pending'").one().int64("n")
            : 0;
    if (rows > 0) items.push_back(status.label + " has " + std::to_string(rows) + " deliveries");
    else if (alarms > 0) items.push_back(status.label + " has " + std::to_string(alarms) + " pending alarms");
    else if (status.stored_alarm) items.push_back(status.label + " still stores an alarm");
  }
  return items;
}

}  // namespace durasim::workloads
