// Executable spec of named alarms; see alarms_model.h. Every operation is the effect of one engine
// write on the rows, including its fence; nothing here reads a clock or draws randomness.
#include "model/alarms_model.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <tuple>
#include <utility>

namespace durasim::model {

namespace {

bool isSafe(int64_t x) { return x >= 0 && x <= kMaxSafeInteger; }

// Rows in the order runDue reads them: (next_attempt_at, name).
bool runsBefore(const AlarmRow& a, const AlarmRow& b) {
  return std::tie(a.nextAttemptAt, a.name) < std::tie(b.nextAttemptAt, b.name);
}

}  // namespace

double jsRound(double x) { return std::floor(x + 0.5); }

const char* statusName(AlarmStatus status) { return status == AlarmStatus::pending ? "pending" : "failed"; }

nlohmann::json AlarmRow::toJson() const {
  nlohmann::json j{{"name", name},
                   {"generation", generation},
                   {"status", statusName(status)},
                   {"scheduled_at", scheduledAt},
                   {"next_attempt_at", nextAttemptAt},
                   {"attempt", attempt},
                   {"last_error_name", lastErrorName ? nlohmann::json(*lastErrorName) : nlohmann::json()},
                   {"created_at", createdAt}};
  if (nextAttemptAtMax != nextAttemptAt) j["next_attempt_at_max"] = nextAttemptAtMax;
  return j;
}

TimeRange defaultDelayRange(int64_t attempt) {
  const double d =
      std::min(kDefaultInitialDelayMs * std::pow(2.0, static_cast<double>(attempt - 1)), kDefaultMaxDelayMs);
  return TimeRange{static_cast<int64_t>(jsRound(d / 2)), static_cast<int64_t>(d)};
}

RetryVerdict decideRetry(const AlarmPolicy& policy, int64_t attempt, ErrorKind kind, const std::string& errorName,
                         int64_t now) {
  const std::string original = kind == ErrorKind::nonRetryable ? kNonRetryableErrorName
                               : kind == ErrorKind::timeout    ? kTimeoutErrorName
                                                               : errorName;
  auto terminal = [now](std::string name) { return RetryVerdict{true, TimeRange{now, now}, std::move(name)}; };
  // Step 1: terminal with the original error.
  if (kind == ErrorKind::nonRetryable || attempt >= policy.maxAttempts ||
      (kind == ErrorKind::timeout && !policy.retryTimeouts))
    return terminal(original);
  // Step 2: terminal with DurableRetryPolicyError when the delay is unusable.
  if (kind == ErrorKind::policyInvalid) return terminal(kRetryPolicyErrorName);
  TimeRange delay;
  if (!policy.delay) {
    delay = defaultDelayRange(attempt);
  } else {
    double raw = 0;
    try {
      raw = policy.delay(attempt);
    } catch (...) {
      return terminal(kRetryPolicyErrorName);
    }
    if (!std::isfinite(raw) || raw < 0)
      return terminal(kRetryPolicyErrorName);  // -0.1 included: checked before rounding
    const double rounded = jsRound(raw);
    if (rounded > static_cast<double>(kMaxSafeInteger)) return terminal(kRetryPolicyErrorName);
    delay = TimeRange{static_cast<int64_t>(rounded), static_cast<int64_t>(rounded)};
  }
  if (now > kMaxSafeInteger - delay.lo) return terminal(kRetryPolicyErrorName);
  // A default delay whose upper end would overflow the safe range is undetermined there; the model
  // keeps the part of the range the engine can retry at.
  const int64_t hi = now > kMaxSafeInteger - delay.hi ? kMaxSafeInteger : now + delay.hi;
  // Step 3: retry.
  return RetryVerdict{false, TimeRange{now + delay.lo, hi}, original};
}

// ---------------------------------------------------------------------------------------------
// Policies

void AlarmsModel::setPolicy(const std::string& name, AlarmPolicy policy) { policies_[name] = std::move(policy); }

const AlarmPolicy& AlarmsModel::policyOf(const std::string& name) const {
  auto it = policies_.find(name);
  return it == policies_.end() ? defaultPolicy_ : it->second;
}

// ---------------------------------------------------------------------------------------------
// Commit points

AlarmRow* AlarmsModel::matching(const std::string& name, const std::string& generation) {
  auto it = rows_.find(name);
  if (it == rows_.end() || it->second.generation != generation || it->second.status != AlarmStatus::pending)
    return nullptr;
  return &it->second;
}

void AlarmsModel::schedule(const std::string& name, int64_t t, int64_t now, const std::string& generation) {
  if (!isSafe(t)) throw std::out_of_range("scheduledTime must be a non-negative safe integer");
  AlarmRow row;
  row.name = name;
  row.generation = generation;
  row.status = AlarmStatus::pending;
  row.scheduledAt = row.nextAttemptAt = row.nextAttemptAtMax = t;
  row.attempt = 0;
  row.createdAt = now;
  rows_[name] = std::move(row);
}

bool AlarmsModel::cancel(const std::string& name) { return rows_.erase(name) > 0; }

int64_t AlarmsModel::purgeBefore(int64_t before) {
  if (!isSafe(before)) throw std::out_of_range("before must be a non-negative safe integer");
  int64_t count = 0;
  for (auto it = rows_.begin(); it != rows_.end();) {
    if (it->second.createdAt < before) {
      it = rows_.erase(it);
      ++count;
    } else {
      ++it;
    }
  }
  return count;
}

std::optional<int64_t> AlarmsModel::claim(const std::string& name, const std::string& generation, int64_t maxAttempts) {
  AlarmRow* row = matching(name, generation);
  if (!row || row->attempt >= maxAttempts) return std::nullopt;
  return ++row->attempt;
}

bool AlarmsModel::succeed(const std::string& name, const std::string& generation, int64_t attempt) {
  AlarmRow* row = matching(name, generation);
  if (!row || row->attempt != attempt) return false;
  rows_.erase(name);
  return true;
}

bool AlarmsModel::fail(const std::string& name, const std::string& generation, int64_t attempt, ErrorKind kind,
                       int64_t now, const std::string& errorName) {
  AlarmRow* row = matching(name, generation);
  if (!row || row->attempt != attempt) return false;
  const RetryVerdict verdict = decideRetry(policyOf(name), attempt, kind, errorName, now);
  row->status = verdict.terminal ? AlarmStatus::failed : AlarmStatus::pending;
  row->nextAttemptAt = verdict.nextAttemptAt.lo;
  row->nextAttemptAtMax = verdict.nextAttemptAt.hi;
  row->lastErrorName = verdict.errorName;
  return true;
}

bool AlarmsModel::exhaust(const std::string& name, const std::string& generation, int64_t now) {
  AlarmRow* row = matching(name, generation);
  if (!row || row->attempt < maxAttemptsOf(name)) return false;
  row->status = AlarmStatus::failed;
  row->nextAttemptAt = row->nextAttemptAtMax = now;
  row->lastErrorName = kAttemptsExhaustedErrorName;
  return true;
}

bool AlarmsModel::pinNextAttempt(const std::string& name, const std::string& generation, int64_t at) {
  auto it = rows_.find(name);
  if (it == rows_.end() || it->second.generation != generation) return false;
  AlarmRow& row = it->second;
  if (at < row.nextAttemptAt || at > row.nextAttemptAtMax) return false;
  row.nextAttemptAt = row.nextAttemptAtMax = at;
  return true;
}

// ---------------------------------------------------------------------------------------------
// Queries

const AlarmRow* AlarmsModel::row(const std::string& name) const {
  auto it = rows_.find(name);
  return it == rows_.end() ? nullptr : &it->second;
}

std::optional<int64_t> AlarmsModel::nextPending() const {
  std::optional<int64_t> next;
  for (const auto& [name, row] : rows_)
    if (row.status == AlarmStatus::pending && (!next || row.nextAttemptAt < *next)) next = row.nextAttemptAt;
  return next;
}

std::optional<TimeRange> AlarmsModel::physicalAlarmWindow(int64_t now, int64_t alarmMinDelayMs) const {
  const std::optional<int64_t> next = nextPending();
  if (!next) return std::nullopt;
  return TimeRange{*next, std::max(*next, now + alarmMinDelayMs)};
}

std::vector<std::string> AlarmsModel::dueNow(int64_t now) const {
  std::vector<const AlarmRow*> due;
  for (const auto& [name, row] : rows_)
    if (row.status == AlarmStatus::pending && row.nextAttemptAt <= now) due.push_back(&row);
  std::sort(due.begin(), due.end(), [](const AlarmRow* a, const AlarmRow* b) { return runsBefore(*a, *b); });
  if (due.size() > kAlarmPassLimit) due.resize(kAlarmPassLimit);
  std::vector<std::string> names;
  names.reserve(due.size());
  for (const AlarmRow* row : due) names.push_back(row->name);
  return names;
}

std::optional<AlarmsModel::NextRun> AlarmsModel::nextToRun() const {
  const AlarmRow* first = nullptr;
  for (const auto& [name, row] : rows_)
    if (row.status == AlarmStatus::pending && (!first || runsBefore(row, *first))) first = &row;
  if (!first) return std::nullopt;
  return NextRun{first->nextAttemptAt, first->name};
}

// ---------------------------------------------------------------------------------------------
// Invariant predicates

std::optional<std::string> AlarmsModel::fieldConsistency(
    const std::function<int64_t(const std::string&)>& maxAttemptsOf) const {
  std::vector<AlarmRow> all;
  all.reserve(rows_.size());
  for (const auto& [name, row] : rows_) all.push_back(row);
  return fieldConsistency(all, maxAttemptsOf);
}

std::optional<std::string> AlarmsModel::fieldConsistency(
    const std::vector<AlarmRow>& rows, const std::function<int64_t(const std::string&)>& maxAttemptsOf) {
  for (const AlarmRow& row : rows) {
    auto violation = [&row](const std::string& what) {
      return "ALM-05: alarm \"" + row.name + "\" " + what + ": " + row.toJson().dump();
    };
    const int64_t max = maxAttemptsOf(row.name);
    if (row.attempt < 0) return violation("has a negative attempt");
    if (row.attempt > max) return violation("has attempt above maxAttempts " + std::to_string(max));
    if (row.nextAttemptAt > row.nextAttemptAtMax) return violation("has an empty next_attempt_at range");
    if (row.status == AlarmStatus::failed) {
      if (!row.lastErrorName) return violation("is failed without last_error_name");
      if (row.attempt == 0) return violation("is failed without ever being claimed");
    } else if (row.attempt == 0) {
      if (row.lastErrorName) return violation("is pending with attempt 0 but has an error");
      if (row.nextAttemptAt != row.scheduledAt)
        return violation("is pending with attempt 0 but next_attempt_at != scheduled_at");
    }
  }
  return std::nullopt;
}

nlohmann::json AlarmsModel::toJson() const {
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& [name, row] : rows_) rows.push_back(row.toJson());
  return rows;
}

}  // namespace durasim::model
