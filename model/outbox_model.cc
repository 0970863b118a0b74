// The outbox's executable spec; see outbox_model.h.
#include "model/outbox_model.h"

#include <algorithm>
#include <tuple>

#include "model/fanout_model.h"

namespace durasim::model {

int64_t OutboxModel::stage(const std::string& channel, const std::string& key, const std::string& value, const std::string& generation,
                           int64_t now, int64_t batchDelayMs) {
  const int64_t version = nextVersion_++;
  rows_[{channel, key}] = OutboxRow{channel, key, value, generation, version, 0, firstAttemptAt(now, batchDelayMs), now, std::nullopt, std::nullopt};
  return version;
}

std::vector<OutboxRow> OutboxModel::due(const std::string& channel, int64_t now, int64_t maxBatchSize) const {
  std::vector<OutboxRow> out;
  for (const auto& [key, row] : rows_)
    if (row.channel == channel && row.nextAttemptAt <= now) out.push_back(row);
  std::sort(out.begin(), out.end(), [](const OutboxRow& a, const OutboxRow& b) {
    return std::make_tuple(a.attempt != 0, a.version) < std::make_tuple(b.attempt != 0, b.version);
  });
  if (static_cast<int64_t>(out.size()) > maxBatchSize) out.resize(static_cast<std::size_t>(maxBatchSize));
  return out;
}

bool OutboxModel::claim(const Key& key, const std::string& generation, int64_t attempt, int64_t deadline) {
  const auto row = rows_.find(key);
  if (row == rows_.end() || row->second.generation != generation || row->second.attempt != attempt) return false;
  row->second.attempt += 1;
  row->second.nextAttemptAt = deadline;
  return true;
}

bool OutboxModel::acknowledge(const Key& key, const std::string& generation) {
  const auto row = rows_.find(key);
  if (row == rows_.end() || row->second.generation != generation) return false;
  rows_.erase(row);
  return true;
}

bool OutboxModel::reschedule(const Key& key, const std::string& generation, int64_t attempt, int64_t next, const std::string& errorName,
                             const std::string& errorMessage) {
  const auto row = rows_.find(key);
  if (row == rows_.end() || row->second.generation != generation || row->second.attempt != attempt) return false;
  row->second.nextAttemptAt = next;
  row->second.lastError = errorMessage;
  row->second.lastErrorName = errorName;
  return true;
}

int64_t OutboxModel::postpone(const std::string& channel, int64_t now) {
  int64_t postponed = 0;
  for (auto& [key, row] : rows_) {
    if (row.channel != channel || row.nextAttemptAt > now) continue;
    row.nextAttemptAt = now + kOutboxUnattachedDelayMs;
    ++postponed;
  }
  return postponed;
}

std::optional<int64_t> OutboxModel::nextPendingAt() const {
  std::optional<int64_t> next;
  for (const auto& [key, row] : rows_)
    if (!next || row.nextAttemptAt < *next) next = row.nextAttemptAt;
  return next;
}

bool MaxVersionSink::accept(const OutboxModel::Key& key, int64_t version, const std::string& value) {
  const auto held = held_.find(key);
  if (held != held_.end() && held->second.version >= version) return false;
  held_[key] = Held{version, value};
  return true;
}

std::optional<MaxVersionSink::Held> MaxVersionSink::held(const OutboxModel::Key& key) const {
  const auto found = held_.find(key);
  return found == held_.end() ? std::nullopt : std::optional<Held>(found->second);
}

}  // namespace durasim::model
