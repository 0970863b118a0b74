// LogPartition: one partition of a topic, as in the DurabilityLog documentation's `Partition`. It
// composes a DurabilityScheduler, a DurabilityLog (retention, cold segments in the object's bucket,
// optional leases) and DurabilityAlarms whose one named alarm, "retention", runs trim() and re-arms
// only while hot records remain; appends arm it. Every RPC reply says what happened in a way a client
// can act on: `{"result": ...}`, a library error `{"error": {name, message, ...fields}}` (a definite
// answer), or a thrown runtime error (the RPC fails: outcome unknown). `append` returns the
// EnqueueResult envelope itself.
// RPC methods: append {records: [{body, key?}]}, read {from, limit?}, commit {consumer, offset},
// cursor {consumer}, bounds, load, lease {consumer, limit?}, ack / nack {consumer, batchId},
// leases {consumer}, trim, forgetColdBefore {offset}, retire, and ping: an EnqueueResult of the
// application's own (routing.md 1), success with no value and the current load, taken outside any
// append (a retired partition answers it too, with no backlog).
// `retire` removes the log as an application retiring a topic would: DurabilityLog::migrate(ctx,
// none()), which honours the run's research variants (H19), and the flag `retired` in one transaction.
// A retired partition constructs no log again and answers every other method with the error
// PartitionRetired; its retention alarm does nothing.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "engine/alarms.h"
#include "engine/log.h"
#include "engine/load.h"
#include "engine/scheduler.h"
#include "workloads/envelope.h"
#include "workloads/outbound_samples.h"

namespace durasim::workloads {

// The lease options of a partition, drawn by the workload (the callback is the partition's own).
struct PartitionLeasePlan {
  int64_t maxParallelism = 2;
  int64_t leaseMs = 10'000;
  std::optional<int64_t> maxAttempts;
  bool onPoison = false;        // with maxAttempts: an onPoison that records the skipped range
  bool poisonThrows = false;    // that callback then throws after recording, half of the time
};

struct LogPartitionConfig {
  SchedulerOptions scheduler;
  int64_t maxBatchSize = 10;
  LogRetention retention;
  bool cold = true;                         // flush to the object's bucket, or delete
  std::optional<PartitionLeasePlan> leases;  // absent: the leases option is not set (LSE-16)
  int64_t retentionSweepMs = 10'000;         // the "retention" alarm's period while hot records remain
};

inline constexpr char kLogBucket[] = "segments";
inline constexpr char kColdPrefix[] = "segments/";
inline constexpr char kRetentionAlarm[] = "retention";
inline constexpr char kPartitionRetired[] = "PartitionRetired";  // the error name of a retired partition's answers

// The cold key of a segment: "segments/<partition>/<first>-<last>". A given first offset always
// flushes the same range (log.md 6), so a key is written once and a repeated write is refused.
std::string segmentKey(const std::string& partition, int64_t first, int64_t last);
// The partition name and the [first, last] of a segment key, or nullopt for another key.
struct SegmentRange {
  std::string partition;
  int64_t first = 0, last = 0;
};
std::optional<SegmentRange> parseSegmentKey(const std::string& key);

// JSON forms of what crosses RPC (the envelope's are in workloads/envelope.h).
nlohmann::json toJson(LogRecord record);
inline EnqueueResult<std::vector<int64_t>> appendResultFromJson(const nlohmann::json& reply) {
  return enqueueResultFromJson<std::vector<int64_t>>(reply);
}
// A library error as `{name, message}` plus requestedOffset/oldestOffset (LogTruncatedError) or
// batchId (LogLeaseError).
nlohmann::json errorJson(const DurabilityError& error);

class LogPartition final : public DurableObject {
 public:
  static constexpr const char* kClass = "LogPartition";

  LogPartition(ObjectContext& ctx, const LogPartitionConfig& config);

  bool hasAlarmHandler() const override { return true; }
  Task<nlohmann::json> call(std::string_view method, const nlohmann::json& args) override;
  Task<void> alarm(const AlarmInvocationInfo& info) override { return scheduler_.alarm(info); }

 private:
  LogOptions logOptions();
  NamedAlarmOptions alarmOptions();
  Task<nlohmann::json> dispatch(std::string_view method, const nlohmann::json& args);
  Task<nlohmann::json> append(const nlohmann::json& args);
  nlohmann::json retire();
  Task<void> armRetention();
  Task<void> enforceRetention(const DurableAlarmInfo& info);
  Task<std::string> writeSegment(const LogSegment& segment);
  Task<std::optional<std::vector<LogRecord>>> readSegment(const std::string& locator);
  Task<void> recordPoison(const LogLease& lease);

  ObjectContext& ctx_;
  LogPartitionConfig config_;
  DurabilityScheduler scheduler_;
  RoutingLoad routing_;
  OutboundSamples outbound_{ctx_, routing_};  // the reads served, as the application's own samples
  bool retired_ = false;
  std::unique_ptr<DurabilityLog> log_;  // none in an incarnation that starts retired
  std::unique_ptr<DurabilityAlarms> alarms_;
};

}  // namespace durasim::workloads
