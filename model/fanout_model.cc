// The fanout model; see fanout_model.h. Every rule is stated from fanout.md, never from engine code.
#include "model/fanout_model.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace durasim::model {

using nlohmann::json;

const char* phaseName(FanoutPhase phase) { return phase == FanoutPhase::delivery ? "delivery" : "dead_letter"; }

std::string FanoutDelivery::rowId() const { return json::array({key, target}).dump(); }
std::string FanoutDelivery::deliveryId() const { return json::array({generation, target}).dump(); }

int64_t firstAttemptAt(int64_t t, int64_t batchDelayMs) {
  return batchDelayMs == 0 ? t : ((t + batchDelayMs - 1) / batchDelayMs) * batchDelayMs;
}

FanoutModel::Enqueued FanoutModel::enqueue(const std::vector<FanoutAccepted>& batch, const std::vector<std::string>& targets,
                                           int64_t now, int64_t batchDelayMs, const std::vector<std::string>& generations) {
  // Staged on copies: a conflict anywhere leaves the model as it was.
  std::map<std::string, FanoutManifest> manifests = manifests_;
  std::map<std::string, FanoutDelivery> deliveries = deliveries_;
  int64_t nextSeq = nextSeq_;
  Enqueued out;
  for (std::size_t i = 0; i < batch.size(); ++i) {
    const FanoutAccepted& m = batch[i];
    if (auto found = manifests.find(m.key); found != manifests.end()) {
      const FanoutManifest& existing = found->second;
      if (existing.id == m.id && existing.payload == m.payload && existing.targets == targets) continue;
      Enqueued rejected;
      rejected.rejected = true;
      rejected.conflictKey = m.key;
      return rejected;
    }
    FanoutManifest manifest{m.key, m.id, m.payload, targets, static_cast<int64_t>(targets.size()), nextSeq++, now, generations.at(i)};
    for (const std::string& target : targets) {
      FanoutDelivery row;
      row.key = m.key;
      row.target = target;
      row.generation = manifest.generation;
      row.seq = manifest.seq;
      row.nextAttemptAt = firstAttemptAt(now, batchDelayMs);
      row.createdAt = now;
      out.registeredRows.push_back(row.rowId());
      deliveries[row.rowId()] = row;
    }
    manifests[m.key] = std::move(manifest);
  }
  manifests_ = std::move(manifests);
  deliveries_ = std::move(deliveries);
  nextSeq_ = nextSeq;
  return out;
}

FanoutDelivery* FanoutModel::matching(const std::string& rowId, const std::string& generation, int64_t attempt) {
  auto found = deliveries_.find(rowId);
  if (found == deliveries_.end() || found->second.generation != generation || found->second.attempt != attempt) return nullptr;
  return &found->second;
}

void FanoutModel::remove(const std::string& rowId) {
  const std::string key = deliveries_.at(rowId).key;
  deliveries_.erase(rowId);
  if (auto manifest = manifests_.find(key); manifest != manifests_.end() && --manifest->second.remaining <= 0)
    manifests_.erase(manifest);
}

std::optional<int64_t> FanoutModel::claim(const std::string& rowId, const std::string& generation, int64_t listedAttempt,
                                          int64_t maxAttempts, int64_t deadline) {
  FanoutDelivery* row = matching(rowId, generation, listedAttempt);
  if (!row || row->phase != FanoutPhase::delivery || row->attempt >= maxAttempts) return std::nullopt;
  row->attempt += 1;
  row->nextAttemptAt = deadline;
  return row->attempt;
}

bool FanoutModel::ack(const std::string& rowId, const std::string& generation, int64_t attempt) {
  FanoutDelivery* row = matching(rowId, generation, attempt);
  if (!row || row->phase != FanoutPhase::delivery) return false;
  remove(rowId);
  return true;
}

bool FanoutModel::retry(const std::string& rowId, const std::string& generation, int64_t attempt, int64_t nextAttemptAt,
                        const std::string& errorName, const std::string& errorMessage) {
  FanoutDelivery* row = matching(rowId, generation, attempt);
  if (!row || row->phase != FanoutPhase::delivery) return false;
  row->nextAttemptAt = nextAttemptAt;
  row->lastErrorName = errorName;
  row->lastError = errorMessage;
  return true;
}

bool FanoutModel::deadLetterIntent(const std::string& rowId, const std::string& generation, int64_t attempt, const std::string& reason,
                                   int64_t at, int64_t now, const std::optional<std::pair<std::string, std::string>>& error) {
  FanoutDelivery* row = matching(rowId, generation, attempt);
  if (!row) return false;
  row->phase = FanoutPhase::deadLetter;
  row->deadLetteredAt = at;
  row->deadLetterReason = reason;
  row->nextAttemptAt = now + kFanoutDlqRetryMs;
  row->lastErrorName = error ? std::optional<std::string>(error->first) : std::nullopt;
  row->lastError = error ? std::optional<std::string>(error->second) : std::nullopt;
  return true;
}

bool FanoutModel::removeDeadLettered(const std::string& rowId, const std::string& generation, int64_t attempt) {
  FanoutDelivery* row = matching(rowId, generation, attempt);
  if (!row || row->phase != FanoutPhase::deadLetter) return false;
  remove(rowId);
  return true;
}

bool FanoutModel::drop(const std::string& rowId, const std::string& generation, int64_t attempt) {
  if (!matching(rowId, generation, attempt)) return false;
  remove(rowId);
  return true;
}

bool FanoutModel::postpone(const std::string& rowId, const std::string& generation, int64_t attempt, int64_t until) {
  FanoutDelivery* row = matching(rowId, generation, attempt);
  if (!row) return false;
  row->nextAttemptAt = until;
  return true;
}

const FanoutDelivery* FanoutModel::delivery(const std::string& rowId) const {
  auto found = deliveries_.find(rowId);
  return found == deliveries_.end() ? nullptr : &found->second;
}

std::optional<int64_t> FanoutModel::nextPending() const {
  std::optional<int64_t> next;
  for (const auto& [id, row] : deliveries_)
    if (!next || row.nextAttemptAt < *next) next = row.nextAttemptAt;
  return next;
}

std::vector<const FanoutDelivery*> FanoutModel::due(const std::string& target, int64_t now, int64_t limit) const {
  std::vector<const FanoutDelivery*> out;
  for (const auto& [id, row] : deliveries_)
    if (row.target == target && row.nextAttemptAt <= now) out.push_back(&row);
  std::stable_sort(out.begin(), out.end(), [](const FanoutDelivery* a, const FanoutDelivery* b) {
    const bool aFirst = a->attempt == 0, bFirst = b->attempt == 0;
    if (aFirst != bFirst) return aFirst;
    return a->seq < b->seq;
  });
  if (static_cast<int64_t>(out.size()) > limit) out.resize(static_cast<std::size_t>(limit));
  return out;
}

std::optional<std::string> FanoutModel::accounting(const std::map<std::string, FanoutManifest>& manifests,
                                                   const std::map<std::string, FanoutDelivery>& deliveries) {
  // (key, target) of every live row, sorted and without repeats: each key's distinct targets, in
  // order, next to each other (checked at every commit: pointers, not copies).
  std::vector<std::pair<const std::string*, const std::string*>> live;
  live.reserve(deliveries.size());
  for (const auto& [id, row] : deliveries) {
    auto manifest = manifests.find(row.key);
    if (manifest == manifests.end()) return "delivery row " + id + " has no manifest";
    if (manifest->second.generation != row.generation)
      return "delivery row " + id + " is of generation " + row.generation + ", its manifest of " + manifest->second.generation;
    live.emplace_back(&manifest->first, &row.target);
  }
  const auto less = [](const auto& a, const auto& b) { return *a.first != *b.first ? *a.first < *b.first : *a.second < *b.second; };
  const auto same = [](const auto& a, const auto& b) { return *a.first == *b.first && *a.second == *b.second; };
  std::sort(live.begin(), live.end(), less);
  live.erase(std::unique(live.begin(), live.end(), same), live.end());
  auto next = live.begin();
  for (const auto& [key, manifest] : manifests) {
    const auto first = next;
    while (next != live.end() && *next->first == key) ++next;
    const auto count = static_cast<int64_t>(next - first);
    if (manifest.remaining <= 0 || manifest.remaining != count)
      return "manifest " + key + " has remaining " + std::to_string(manifest.remaining) + " for " + std::to_string(count) + " live rows";
    for (auto it = first; it != next; ++it)
      if (!std::binary_search(manifest.targets.begin(), manifest.targets.end(), *it->second))
        return "manifest " + key + " has a row for " + *it->second + ", which is not among its targets";
  }
  return std::nullopt;
}

bool FanoutModel::keyAccounted(const FanoutManifest* manifest, const std::vector<const FanoutDelivery*>& rows) {
  if (manifest == nullptr) return rows.empty();
  std::vector<const std::string*> targets;  // of the live rows, without repeats
  targets.reserve(rows.size());
  for (const FanoutDelivery* row : rows) {
    if (row->generation != manifest->generation) return false;
    targets.push_back(&row->target);
  }
  std::sort(targets.begin(), targets.end(), [](const std::string* a, const std::string* b) { return *a < *b; });
  targets.erase(std::unique(targets.begin(), targets.end(), [](const std::string* a, const std::string* b) { return *a == *b; }), targets.end());
  if (manifest->remaining <= 0 || manifest->remaining != static_cast<int64_t>(targets.size())) return false;
  return std::all_of(targets.begin(), targets.end(),
                     [&](const std::string* target) { return std::binary_search(manifest->targets.begin(), manifest->targets.end(), *target); });
}

json FanoutModel::toJson() const {
  json manifests = json::array(), deliveries = json::array();
  for (const auto& [key, m] : manifests_)
    manifests.push_back({{"key", key}, {"id", m.id}, {"targets", m.targets}, {"remaining", m.remaining}, {"seq", m.seq},
                         {"generation", m.generation}});
  for (const auto& [id, d] : deliveries_)
    deliveries.push_back({{"row", id}, {"generation", d.generation}, {"attempt", d.attempt}, {"phase", phaseName(d.phase)},
                          {"next", d.nextAttemptAt}, {"seq", d.seq}});
  return json{{"manifests", manifests}, {"deliveries", deliveries}, {"nextSeq", nextSeq_}};
}

}  // namespace durasim::model
