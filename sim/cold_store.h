// The R2-like cold store as a synchronous model with time as an argument (runtime.md 10): buckets,
// etags, conditional puts, the per-key write rate, limits, paginated listing and lifecycle expiry.
// Keeps RT-20 (create-only, strong consistency), RT-21 (lifecycle bounds), RT-22 (per-key write rate).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "engine/runtime.h"

namespace durasim::sim {

// runtime.md 1 and 10.
inline constexpr int64_t kColdKeyMaxBytes = 1'024;          // key length
inline constexpr int64_t kColdMetadataMaxBytes = 8'192;     // sum of custom metadata key + value bytes
inline constexpr int64_t kColdListMax = 1'000;              // objects per list page
inline constexpr int64_t kColdDeleteMax = 1'000;            // keys per delete
inline constexpr int64_t kColdWriteIntervalMs = 1'000;      // at most one accepted write per key per second
inline constexpr int64_t kColdLifecycleLagMaxMs = 86'400'000;  // removal lag after due: U[0, 24 h]
inline constexpr std::size_t kColdLifecycleRulesMax = 1'000;   // lifecycle rules per bucket
inline constexpr int64_t kColdMsPerDay = 86'400'000;           // due = uploaded + expireAfterDays x this

// An object whose key starts with `prefix` is due `expireAfterDays` days after its upload.
struct LifecycleRule {
  std::string prefix;
  int64_t expireAfterDays = 0;
};

enum class ColdEventKind { put, remove, expire, vanish };

// One accepted write or removal. `etag` is that of the object written or removed (empty for a
// delete of a key that held nothing). `due` is the lifecycle due time of the object written (put)
// or removed (expire), if it was subject to expiry.
struct ColdEvent {
  std::string bucket, key;
  ColdEventKind kind = ColdEventKind::put;
  int64_t time = 0;
  std::string etag;
  std::optional<int64_t> due;
  friend bool operator==(const ColdEvent&, const ColdEvent&) = default;
};

// Every bucket the store is asked about exists (empty until written). Decisions where runtime.md 10
// is silent:
//  - Times never go backwards across calls (else std::logic_error). Every op first applies the
//    lifecycle removals due at or before its `now`, so the model is consistent on its own.
//  - put checks, in order: quoted etags (TypeError), key and metadata limits (400), the write rate
//    (429), then the preconditions (nullopt). So a rate-limited put throws 429 even if its
//    precondition would fail. etagMatches "*" means "any object exists" (HTTP If-Match).
//  - remove is all-or-nothing: limits (400) and the rate of every key (429) are checked before any
//    key is removed. Duplicate keys count once. Every key deleted is an accepted write for the rate
//    limit and a history entry, whether or not it held an object (R2 deletes are idempotent).
//  - Key length is checked by put, get, head and remove; a list prefix is not checked.
//  - Lifecycle rules are configuration: set_rules on a bucket that holds objects throws
//    std::logic_error, so every object's due time follows from the rules in force when written.
//    Several matching rules: the smallest expireAfterDays wins. A due time beyond int64 is "never".
//  - Lifecycle removals and vanish are not writes: they do not count for the rate limit.
//  - list includes custom metadata; `cursor` is the last key returned, set only when truncated.
class ColdStore {
 public:
  // `draw_lag(max)` returns a uniform lag in [0, max] (the host backs it with a recorded choice);
  // called once per accepted put of an object subject to expiry.
  explicit ColdStore(std::function<int64_t(int64_t max)> draw_lag);

  // At most kColdLifecycleRulesMax rules with expireAfterDays >= 0, else std::invalid_argument.
  void set_rules(const std::string& bucket, std::vector<LifecycleRule> rules);

  std::optional<ColdObject> put(const std::string& bucket, const std::string& key, std::string body,
                                const ColdPutOptions& options, int64_t now);
  std::optional<ColdObjectBody> get(const std::string& bucket, const std::string& key, int64_t now);
  std::optional<ColdObject> head(const std::string& bucket, const std::string& key, int64_t now);
  void remove(const std::string& bucket, const std::vector<std::string>& keys, int64_t now);
  ColdList list(const std::string& bucket, const std::string& prefix, const std::optional<std::string>& cursor,
                int64_t limit, int64_t now);

  // Arbitrary fault cold.vanish: the object disappears now, due or not. Returns whether it existed.
  bool vanish(const std::string& bucket, const std::string& key, int64_t now);
  // Applies the lifecycle removals scheduled at or before `now`, each at its scheduled time.
  void expire(int64_t now);
  // The earliest pending lifecycle removal time, if any.
  std::optional<int64_t> next_expiry() const;
  const std::vector<ColdEvent>& history() const { return history_; }

 private:
  struct Stored {
    ColdObjectBody object;
    std::optional<int64_t> due;
    std::optional<int64_t> removal;  // due + lag
  };
  struct Bucket {
    std::vector<LifecycleRule> rules;
    std::map<std::string, Stored> objects;
    std::map<std::string, int64_t> last_write;  // time of the last accepted put or delete per key
  };
  using Removal = std::tuple<int64_t, std::string, std::string>;  // (time, bucket, key)

  void check_rate(const Bucket& bucket, const std::string& key, int64_t now) const;
  std::optional<int64_t> due_time(const Bucket& bucket, const std::string& key, int64_t uploaded) const;
  void schedule(const std::string& bucket, const std::string& key, Stored& stored);
  // Removes the object (unscheduling it) and returns it; REQUIRES: it exists.
  Stored take(Bucket& bucket, const std::string& bucket_name, const std::string& key);
  const ColdObjectBody* find(const std::string& bucket, const std::string& key) const;

  std::function<int64_t(int64_t)> draw_lag_;
  std::map<std::string, Bucket> buckets_;
  std::set<Removal> removals_;
  std::vector<ColdEvent> history_;
  int64_t now_ = INT64_MIN;
};

}  // namespace durasim::sim
