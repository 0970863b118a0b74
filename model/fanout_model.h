// Executable spec of DurabilityFanout's durable state (fanout.md 2-7): manifests, delivery rows and
// the sequence counter, advanced one engine commit point at a time (time is always an argument),
// and the queries and predicates checks ask of them. No SQLite, no coroutines; the engine is never
// called. Keeps FAN-01 (an enqueue is all or nothing), FAN-02 (remaining counts the live rows of a
// manifest, which is removed with its last row), FAN-03 (dedup), FAN-04 (frozen recipients),
// FAN-05 (seq never reused), FAN-10 (phase only moves to dead_letter), FAN-14 (due order), FAN-17
// (first due time), FAN-22 (no claim at attempt >= maxAttempts).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace durasim::model {

inline constexpr int64_t kFanoutDlqRetryMs = 60000;           // fanout.md 6 step 1
inline constexpr int64_t kFanoutRemovedTargetDelayMs = 60000;  // fanout.md 4.2 step 3

enum class FanoutPhase { delivery, deadLetter };
const char* phaseName(FanoutPhase phase);  // "delivery" | "dead_letter", as stored

// One manifest (durability_fanout_messages).
struct FanoutManifest {
  std::string key, id, payload;
  std::vector<std::string> targets;  // sorted
  int64_t remaining = 0, seq = 0, createdAt = 0;
  std::string generation;
  friend bool operator==(const FanoutManifest&, const FanoutManifest&) = default;
};

// One delivery row (durability_fanout_deliveries); error messages are kept as stored.
struct FanoutDelivery {
  std::string key, target, generation;
  int64_t seq = 0, attempt = 0, nextAttemptAt = 0, createdAt = 0;
  FanoutPhase phase = FanoutPhase::delivery;
  std::optional<std::string> lastError, lastErrorName, deadLetterReason;
  std::optional<int64_t> deadLetteredAt;
  std::string rowId() const;       // json([key, target])
  std::string deliveryId() const;  // json([generation, target])
  friend bool operator==(const FanoutDelivery&, const FanoutDelivery&) = default;
};

// One message of an enqueue batch after validation (ids and keys resolved, payload serialised).
struct FanoutAccepted {
  std::string id, key, payload;
};

// fanout.md 3: the first due time of a delivery created at `t` (t >= 0, batchDelayMs >= 0).
int64_t firstAttemptAt(int64_t t, int64_t batchDelayMs);

class FanoutModel {
 public:
  // The outcome of an enqueue transaction.
  struct Enqueued {
    bool rejected = false;                      // a key named different work: nothing changed
    std::string conflictKey;                    // the key that did, when rejected
    std::vector<std::string> registeredRows;    // row ids created, in order
  };

  // ---- Commit points (fenced writes that match nothing change nothing) ----

  // fanout.md 3 step 2, one transaction: per message in order, a dedup hit (same id, payload and
  // targets under a live key) writes nothing; different work rejects the whole batch; otherwise a
  // manifest with the next seq and `generations[i]`, and one row per target due at
  // firstAttemptAt(now, batchDelayMs). `targets` must be sorted and distinct; `generations` holds
  // one fresh generation per message (the ones used by hits are ignored).
  Enqueued enqueue(const std::vector<FanoutAccepted>& batch, const std::vector<std::string>& targets, int64_t now,
                   int64_t batchDelayMs, const std::vector<std::string>& generations);
  // 4.2 step 6: fenced by (generation, pending, phase delivery, attempt == listedAttempt,
  // attempt < maxAttempts); attempt + 1 and next_attempt_at = deadline. Returns the new attempt.
  std::optional<int64_t> claim(const std::string& rowId, const std::string& generation, int64_t listedAttempt,
                               int64_t maxAttempts, int64_t deadline);
  // 5.2 ack and 5.3 ackOnReturn: removal fenced by (generation, attempt, phase delivery).
  bool ack(const std::string& rowId, const std::string& generation, int64_t attempt);
  // 5.4 step 3: fenced by (generation, attempt, phase delivery).
  bool retry(const std::string& rowId, const std::string& generation, int64_t attempt, int64_t nextAttemptAt,
             const std::string& errorName, const std::string& errorMessage);
  // 6 step 1 (with a DLQ): fenced by (generation, attempt), any phase. `at` is the intent's
  // timestamp (the row's dead_lettered_at if it had one), `error` what is recorded.
  bool deadLetterIntent(const std::string& rowId, const std::string& generation, int64_t attempt, const std::string& reason,
                        int64_t at, int64_t now, const std::optional<std::pair<std::string, std::string>>& error);
  // 6 step 3 (with a DLQ): removal fenced by (generation, attempt, phase dead_letter).
  bool removeDeadLettered(const std::string& rowId, const std::string& generation, int64_t attempt);
  // 6 (without a DLQ): removal fenced by (generation, attempt), any phase.
  bool drop(const std::string& rowId, const std::string& generation, int64_t attempt);
  // 4.2 step 3: a removed target's row, fenced by (generation, attempt): next_attempt_at = until.
  bool postpone(const std::string& rowId, const std::string& generation, int64_t attempt, int64_t until);

  // ---- Queries ----

  const std::map<std::string, FanoutManifest>& manifests() const { return manifests_; }
  const std::map<std::string, FanoutDelivery>& deliveries() const { return deliveries_; }
  const FanoutDelivery* delivery(const std::string& rowId) const;
  int64_t nextSeq() const { return nextSeq_; }
  // 7: every stored row counts.
  int64_t pendingCount() const { return static_cast<int64_t>(deliveries_.size()); }
  // scheduler.md 3.1: MIN(next_attempt_at) over the rows.
  std::optional<int64_t> nextPending() const;
  // 4.2 step 2: the rows of `target` due at `now`, first deliveries by seq then retries by seq, at
  // most `limit` (dead-letter rows take slots).
  std::vector<const FanoutDelivery*> due(const std::string& target, int64_t now, int64_t limit) const;

  // ---- Invariant predicates over stored state (any source: this model, or rows read back) ----

  // FAN-02: every manifest's remaining equals its live rows (> 0), and every row has a manifest of
  // its generation. FAN-04: a manifest's rows are exactly its targets. Returns the first violation.
  static std::optional<std::string> accounting(const std::map<std::string, FanoutManifest>& manifests,
                                               const std::map<std::string, FanoutDelivery>& deliveries);
  // The part of accounting() that concerns one message key: its manifest (null when there is none)
  // and every delivery row of that key. accounting() finds a violation exactly when this is false
  // for some key (every rule it applies relates a row to the manifest of its own key).
  static bool keyAccounted(const FanoutManifest* manifest, const std::vector<const FanoutDelivery*>& rows);

  nlohmann::json toJson() const;

 private:
  FanoutDelivery* matching(const std::string& rowId, const std::string& generation, int64_t attempt);
  void remove(const std::string& rowId);

  std::map<std::string, FanoutManifest> manifests_;    // by key
  std::map<std::string, FanoutDelivery> deliveries_;   // by row id
  int64_t nextSeq_ = 0;
};

}  // namespace durasim::model
