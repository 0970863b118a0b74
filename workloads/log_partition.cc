// LogPartition: see log_partition.h.
#include "workloads/log_partition.h"

#include <set>
#include <stdexcept>

#include "engine/errors.h"
#include "engine/json_text.h"

namespace durasim::workloads {

namespace {

// A record of a segment read back (`j` is one item of the parsed body): its key and body are taken
// out of `j`, not copied. A field of the wrong type throws what get() throws.
LogRecord takeRecord(nlohmann::json& j) {
  const int64_t offset = j.at("offset").get<int64_t>();
  nlohmann::json& key = j.at("key");
  std::string deduplicationKey = key.is_string() ? std::move(key.get_ref<std::string&>()) : key.get<std::string>();
  nlohmann::json body = std::move(j.at("body"));
  return LogRecord{offset, std::move(deduplicationKey), std::move(body), j.at("appendedAt").get<int64_t>()};
}

nlohmann::json recordsJson(std::vector<LogRecord> records) {
  nlohmann::json out = nlohmann::json::array();
  out.get_ref<nlohmann::json::array_t&>().reserve(records.size());
  for (LogRecord& record : records) out.push_back(toJson(std::move(record)));
  return out;
}

nlohmann::json leaseJson(LogLease lease) {
  return JsonFields()
      .add("batchId", std::move(lease.batchId))
      .add("consumer", std::move(lease.consumer))
      .add("firstOffset", lease.firstOffset)
      .add("lastOffset", lease.lastOffset)
      .add("attempt", lease.attempt)
      .add("expiresAt", lease.expiresAt)
      .add("records", recordsJson(std::move(lease.records)));
}

const char* stateName(LeaseState state) {
  switch (state) {
    case LeaseState::active: return "active";
    case LeaseState::pending: return "pending";
    case LeaseState::acked: return "acked";
    case LeaseState::skipped: return "skipped";
  }
  return "unknown";
}

nlohmann::json leaseRowJson(const LogLeaseRow& row) {
  return {{"batchId", row.batchId},   {"consumer", row.consumer}, {"firstOffset", row.firstOffset},
          {"lastOffset", row.lastOffset}, {"state", stateName(row.state)}, {"attempt", row.attempt},
          {"expiresAt", row.expiresAt}, {"createdAt", row.createdAt}};
}

nlohmann::json result(nlohmann::json value) { return JsonFields().add("result", std::move(value)); }

std::optional<int64_t> optionalInt(const nlohmann::json& args, const char* key) {
  if (!args.contains(key) || args.at(key).is_null()) return std::nullopt;
  return args.at(key).get<int64_t>();
}

}  // namespace

std::string segmentKey(const std::string& partition, int64_t first, int64_t last) {
  return std::string(kColdPrefix) + partition + "/" + std::to_string(first) + "-" + std::to_string(last);
}

std::optional<SegmentRange> parseSegmentKey(const std::string& key) {
  const std::string prefix = kColdPrefix;
  if (key.rfind(prefix, 0) != 0) return std::nullopt;
  const std::size_t slash = key.rfind('/');
  const std::size_t dash = key.rfind('-');
  if (slash == std::string::npos || slash < prefix.size() || dash == std::string::npos || dash < slash) return std::nullopt;
  try {
    return SegmentRange{key.substr(prefix.size(), slash - prefix.size()), std::stoll(key.substr(slash + 1, dash - slash - 1)),
                        std::stoll(key.substr(dash + 1))};
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

nlohmann::json toJson(LogRecord record) {
  return JsonFields()
      .add("offset", record.offset)
      .add("key", std::move(record.deduplicationKey))
      .add("body", std::move(record.body))
      .add("appendedAt", record.appendedAt);
}

nlohmann::json errorJson(const DurabilityError& error) {
  nlohmann::json j = {{"name", error.name()}, {"message", error.what()}};
  if (const auto* truncated = dynamic_cast<const LogTruncatedError*>(&error)) {
    j["requestedOffset"] = truncated->requestedOffset();
    j["oldestOffset"] = truncated->oldestOffset();
  }
  if (const auto* lease = dynamic_cast<const LogLeaseError*>(&error)) j["batchId"] = lease->batchId();
  return j;
}

LogPartition::LogPartition(ObjectContext& ctx, const LogPartitionConfig& config)
    : ctx_(ctx), config_(config), scheduler_(ctx, config.scheduler), routing_(ctx.clock) {
  ctx_.storage.exec("CREATE TABLE IF NOT EXISTS app_partition (key TEXT PRIMARY KEY, value INTEGER NOT NULL)");
  ctx_.storage.exec(
      "CREATE TABLE IF NOT EXISTS app_poisoned (batch_id TEXT PRIMARY KEY, consumer TEXT NOT NULL, first_offset INTEGER NOT NULL,"
      " last_offset INTEGER NOT NULL, attempt INTEGER NOT NULL, at INTEGER NOT NULL)");
  retired_ = ctx_.storage.exec("SELECT value FROM app_partition WHERE key = 'retired'").next().has_value();
  if (!retired_) log_ = std::make_unique<DurabilityLog>(scheduler_, logOptions());
  alarms_ = std::make_unique<DurabilityAlarms>(scheduler_, alarmOptions());
}

LogOptions LogPartition::logOptions() {
  LogOptions options;
  options.maxBatchSize = config_.maxBatchSize;
  options.retention = config_.retention;
  options.routing = &routing_;
  if (config_.cold) {
    options.cold = LogColdStorage{[this](const LogSegment& segment) { return writeSegment(segment); },
                                  [this](const std::string& locator) { return readSegment(locator); }};
  }
  if (config_.leases) {
    LogLeaseOptions leases;
    leases.maxParallelism = config_.leases->maxParallelism;
    leases.leaseMs = config_.leases->leaseMs;
    leases.maxAttempts = config_.leases->maxAttempts;
    if (config_.leases->onPoison) leases.onPoison = [this](const LogLease& lease) { return recordPoison(lease); };
    options.leases = leases;
  }
  return options;
}

NamedAlarmOptions LogPartition::alarmOptions() {
  NamedAlarmOptions options;
  options.handlers[kRetentionAlarm] = [this](const DurableAlarmInfo& info) { return enforceRetention(info); };
  return options;
}

Task<nlohmann::json> LogPartition::call(std::string_view method, const nlohmann::json& args) {
  std::optional<OutboundSamples::Sample> serving;
  if (method == "read") serving.emplace(outbound_.begin());
  try {
    Task<nlohmann::json> running = dispatch(method, args);
    nlohmann::json reply = co_await running;
    if (serving) outbound_.end(*serving);
    co_return reply;
  } catch (const DurabilityError& e) {
    // A library error is a definite answer; runtime errors (storage, cold store, reset) propagate.
    if (serving) outbound_.end(*serving);
    co_return nlohmann::json{{"error", errorJson(e)}};
  } catch (...) {  // handed on as a value: no second unwinding (engine/task.h, Rethrow)
    if (serving) outbound_.end(*serving);
    co_return Rethrow{std::current_exception()};
  }
}

Task<nlohmann::json> LogPartition::dispatch(std::string_view method, const nlohmann::json& args) {
  if (method == "retire") co_return retire();
  if (method == "ping") {  // the application's own envelope: nothing written, the load as it stands
    if (retired_) co_return toJson(EnqueueResult<std::vector<int64_t>>::ok({}, routing_.snapshot(0)));
    Task<LoadSnapshot> loading = log_->load();
    const LoadSnapshot load = co_await loading;
    co_return toJson(EnqueueResult<std::vector<int64_t>>::ok({}, load));
  }
  if (retired_) {
    std::string message = "Partition ";
    message += ctx_.id.second;
    message += " was retired";
    co_return nlohmann::json{{"error", {{"name", kPartitionRetired}, {"message", message}}}};
  }
  if (method == "append") {
    Task<nlohmann::json> appending = append(args);
    co_return co_await appending;
  }
  if (method == "read") {
    Task<LogPage> reading = log_->read(args.at("from").get<int64_t>(), optionalInt(args, "limit"));
    LogPage page = co_await reading;
    co_return result(JsonFields()
                         .add("records", recordsJson(std::move(page.records)))
                         .add("nextOffset", page.nextOffset)
                         .add("lag", page.lag));
  }
  if (method == "bounds") {
    Task<LogBounds> reading = log_->bounds();
    const LogBounds b = co_await reading;
    co_return result({{"oldestOffset", b.oldestOffset}, {"hotOffset", b.hotOffset}, {"nextOffset", b.nextOffset}});
  }
  if (method == "load") {
    Task<LoadSnapshot> loading = log_->load();
    const LoadSnapshot load = co_await loading;
    co_return result(toJson(load));
  }
  if (method == "trim") {
    Task<int64_t> trimming = log_->trim();
    const int64_t removed = co_await trimming;
    co_return result(removed);
  }
  if (method == "forgetColdBefore") {
    Task<int64_t> forgetting = log_->forgetColdBefore(args.at("offset").get<int64_t>());
    const int64_t forgotten = co_await forgetting;
    co_return result(forgotten);
  }
  static const std::set<std::string_view> kConsumerMethods = {"commit", "cursor", "lease", "ack", "nack", "leases"};
  if (!kConsumerMethods.count(method)) throw std::invalid_argument("LogPartition has no method " + std::string(method));
  const std::string consumer = args.at("consumer").get<std::string>();
  if (method == "commit") {
    Task<void> committing = log_->commit(consumer, args.at("offset").get<int64_t>());
    co_await committing;
    co_return result(nullptr);
  }
  if (method == "cursor") {
    Task<std::optional<int64_t>> reading = log_->cursor(consumer);
    const std::optional<int64_t> cursor = co_await reading;
    co_return result(cursor ? nlohmann::json(*cursor) : nlohmann::json());
  }
  if (method == "lease") {
    Task<std::optional<LogLease>> leasing = log_->lease(consumer, optionalInt(args, "limit"));
    std::optional<LogLease> lease = co_await leasing;
    co_return result(lease ? leaseJson(std::move(*lease)) : nlohmann::json());
  }
  if (method == "ack" || method == "nack") {
    const std::string batchId = args.at("batchId").get<std::string>();
    Task<void> settling = method == "ack" ? log_->ack(consumer, batchId) : log_->nack(consumer, batchId);
    co_await settling;
    co_return result(nullptr);
  }
  Task<std::vector<LogLeaseRow>> listing = log_->leases(consumer);  // method == "leases"
  const std::vector<LogLeaseRow> rows = co_await listing;
  nlohmann::json out = nlohmann::json::array();
  for (const LogLeaseRow& row : rows) out.push_back(leaseRowJson(row));
  co_return result(out);
}

// The batch as LogAppendInputs; a record without "key" gets a generated one.
Task<nlohmann::json> LogPartition::append(const nlohmann::json& args) {
  std::vector<LogAppendInput> records;
  for (const nlohmann::json& r : args.at("records")) {
    LogAppendInput input{r.at("body"), std::nullopt};
    if (r.contains("key")) input.deduplicationKey = r.at("key").get<std::string>();
    records.push_back(std::move(input));
  }
  Task<EnqueueResult<std::vector<int64_t>>> appending = log_->append(std::move(records));
  const EnqueueResult<std::vector<int64_t>> appended = co_await appending;
  if (appended.success) {
    Task<void> arming = armRetention();
    co_await arming;
  }
  co_return toJson(appended);
}

// The log's schema goes, then the flag is stored, with no suspension between them: both commit
// together or not at all. Calls of this incarnation still running on the log may then fail.
nlohmann::json LogPartition::retire() {
  if (!retired_) {
    // One transaction: migrate reverts step by step, so a failure between two steps (or before the
    // flag) would otherwise leave some log tables gone and the partition not retired, and the next
    // incarnation would build a fresh log at offset 0.
    ctx_.storage.transactionSync([&](StorageTxn& txn) {
      DurabilityLog::migrate(ctx_, MigrationTarget::none());
      txn.exec("INSERT OR REPLACE INTO app_partition (key, value) VALUES ('retired', 1)");
    });
    retired_ = true;
  }
  return result(nullptr);
}

// Arms the sweep unless one is already armed. Scheduling replaces a pending time, so re-arming on
// every append would postpone retention while traffic lasts. The alarm is scheduled before the flag
// is stored: a crash in between leaves an armed sweep without the flag (the next append re-arms),
// never the flag without a sweep.
Task<void> LogPartition::armRetention() {
  if (ctx_.storage.exec("SELECT value FROM app_partition WHERE key = 'sweeping'").next()) co_return;
  const int64_t at = ctx_.clock.now() + config_.retentionSweepMs;
  const std::string name = kRetentionAlarm;
  Task<void> arming = alarms_->schedule(name, at);
  co_await arming;
  ctx_.storage.exec("INSERT OR REPLACE INTO app_partition (key, value) VALUES ('sweeping', 1)");
}

// The "retention" handler: trim, then re-arm while hot records remain (the hot window, not the
// oldest readable offset, which flushed segments keep low forever). The bounds check and the flag's
// removal run with no suspension between them, so an append that commits meanwhile is either seen
// as hot or finds the flag gone and re-arms.
Task<void> LogPartition::enforceRetention(const DurableAlarmInfo&) {
  if (retired_) co_return;
  Task<int64_t> trimming = log_->trim();
  co_await trimming;
  Task<LogBounds> reading = log_->bounds();
  const LogBounds b = co_await reading;
  if (b.hotOffset < b.nextOffset) {
    const int64_t at = ctx_.clock.now() + config_.retentionSweepMs;
    const std::string name = kRetentionAlarm;
    Task<void> rearming = alarms_->schedule(name, at);
    co_await rearming;
    co_return;
  }
  ctx_.storage.exec("DELETE FROM app_partition WHERE key = 'sweeping'");
}

// cold.write: create-only under the segment's key; a refused overwrite holds the same range.
Task<std::string> LogPartition::writeSegment(const LogSegment& segment) {
  const std::string key = segmentKey(ctx_.id.second, segment.firstOffset, segment.lastOffset);
  const std::string body = jsonText(recordsJson(segment.records));
  ColdPutOptions createOnly;
  createOnly.etagDoesNotMatch = "*";
  Task<std::optional<ColdObject>> putting = ctx_.bucket(kLogBucket).put(key, body, createOnly);
  co_await putting;
  co_return key;
}

// cold.read: nullopt when the object is gone (expired by the lifecycle rule, or vanished).
Task<std::optional<std::vector<LogRecord>>> LogPartition::readSegment(const std::string& locator) {
  Task<std::optional<ColdObjectBody>> getting = ctx_.bucket(kLogBucket).get(locator);
  const std::optional<ColdObjectBody> stored = co_await getting;
  if (!stored) co_return std::nullopt;
  nlohmann::json parsed = parseJson(stored->body);
  std::vector<LogRecord> records;
  records.reserve(parsed.size());
  for (nlohmann::json& r : parsed) records.push_back(takeRecord(r));
  co_return records;
}

// onPoison: records the skipped range once; with poisonThrows it then fails half of the time (the
// log logs and swallows that, the skip having committed first).
Task<void> LogPartition::recordPoison(const LogLease& lease) {
  ctx_.storage.exec(
      "INSERT OR IGNORE INTO app_poisoned (batch_id, consumer, first_offset, last_offset, attempt, at) VALUES (?, ?, ?, ?, ?, ?)",
      lease.batchId, lease.consumer, lease.firstOffset, lease.lastOffset, lease.attempt, ctx_.clock.now());
  if (config_.leases->poisonThrows && ctx_.random.random() < 0.5) throw std::runtime_error("poison handler failed");
  co_return;
}

}  // namespace durasim::workloads
