// Executable spec of DurabilityOutbox's durable state (outbox.md 2-5) and of the sink contract
// (outbox.md 6): the rows per (channel, key), the object-wide version counter, and a sink that keeps
// the highest version per key; advanced one commit point at a time (time is always an argument).
// No SQLite, no coroutines; the engine is never called. Keeps OBX-01/02 (versions from a counter
// that survives deletes), OBX-03 (a stage replaces its key's row), OBX-05 (an acknowledgement
// deletes only the generation it published), OBX-07 (due order and batch size), OBX-09 (rows leave
// only by acknowledgement), OBX-11 (first due time), OBX-13 (postponement of unattached channels),
// OBX-14 (a correct sink never regresses).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace durasim::model {

inline constexpr int64_t kOutboxUnattachedDelayMs = 60000;  // outbox.md 4

// One row of durability_outbox; the value as stored (serialized).
struct OutboxRow {
  std::string channel, key, value, generation;
  int64_t version = 0, attempt = 0, nextAttemptAt = 0, stagedAt = 0;
  std::optional<std::string> lastError, lastErrorName;
  friend bool operator==(const OutboxRow&, const OutboxRow&) = default;
};

class OutboxModel {
 public:
  using Key = std::pair<std::string, std::string>;  // (channel, key)

  // outbox.md 3: the next version, and the row replaced (new generation, attempt 0, first due at
  // firstAttemptAt(now, batchDelayMs)). Returns the version.
  int64_t stage(const std::string& channel, const std::string& key, const std::string& value, const std::string& generation, int64_t now,
                int64_t batchDelayMs);
  // outbox.md 5.1: the rows of `channel` due at `now`, first stages (attempt 0) before retries, each
  // in version order, at most `maxBatchSize`.
  std::vector<OutboxRow> due(const std::string& channel, int64_t now, int64_t maxBatchSize) const;
  // The claim of one due row: attempt + 1 and the publish deadline, if the row still holds this
  // generation at this attempt.
  bool claim(const Key& key, const std::string& generation, int64_t attempt, int64_t deadline);
  // outbox.md 5.4: an acknowledgement deletes the row only if it holds `generation`.
  bool acknowledge(const Key& key, const std::string& generation);
  // outbox.md 5.4: a reschedule, if the row holds this generation at this attempt.
  bool reschedule(const Key& key, const std::string& generation, int64_t attempt, int64_t next, const std::string& errorName,
                  const std::string& errorMessage);
  // outbox.md 4: the due rows of an unattached channel are due again at now + 60 s. Returns how many.
  int64_t postpone(const std::string& channel, int64_t now);

  const std::map<Key, OutboxRow>& rows() const { return rows_; }
  int64_t nextVersion() const { return nextVersion_; }
  // The earliest due time over every row (what the alarm must cover), if any.
  std::optional<int64_t> nextPendingAt() const;

 private:
  std::map<Key, OutboxRow> rows_;
  int64_t nextVersion_ = 1;
};

// outbox.md 6: a correct sink keeps the highest version per (channel, key) and ignores any write
// whose version is not higher. `accept` applies a write and says whether it changed the sink.
class MaxVersionSink {
 public:
  struct Held {
    int64_t version = 0;
    std::string value;
    friend bool operator==(const Held&, const Held&) = default;
  };
  bool accept(const OutboxModel::Key& key, int64_t version, const std::string& value);
  std::optional<Held> held(const OutboxModel::Key& key) const;

 private:
  std::map<OutboxModel::Key, Held> held_;
};

}  // namespace durasim::model
