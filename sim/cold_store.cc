// The R2-like cold store model (runtime.md 10); see cold_store.h for the decisions taken where the
// spec is silent. Keeps RT-20 (preconditions, strong consistency), RT-21 (removal in [due, due +
// lag max]) and RT-22 (accepted writes per key at least kColdWriteIntervalMs apart).
#include "sim/cold_store.h"

#include <stdexcept>
#include <utility>

#include "sim/hash.h"

namespace durasim::sim {
namespace {

// runtime.md 10: the error texts the platform returns.
constexpr const char* kRateLimitedMessage = "Reduce your concurrent request rate for the same object.";
constexpr const char* kQuotedEtagMessage = "ETags must not be quoted";
constexpr int64_t kStatusBadRequest = 400;
constexpr int64_t kStatusTooManyRequests = 429;
// Seeds the second FNV-1a 64 hash of the body, so the two halves of an etag differ.
constexpr uint64_t kEtagSecondBasis = splitmix64(kFnvOffsetBasis);

void append_hex(std::string& out, uint64_t value) {
  static constexpr char kDigits[] = "0123456789abcdef";
  for (int shift = 60; shift >= 0; shift -= 4) out.push_back(kDigits[(value >> shift) & 0xf]);
}

// 32 lower-case hex digits, a function of the body alone.
std::string etag_of(const std::string& body) {
  std::string etag;
  append_hex(etag, fnv1a64(body));
  append_hex(etag, fnv1a64(body, kEtagSecondBasis));
  return etag;
}

void check_not_quoted(const std::optional<std::string>& etag) {
  if (etag && (etag->starts_with('"') || etag->ends_with('"'))) throw TypeError(kQuotedEtagMessage);
}

void check_key(const std::string& key) {
  if (static_cast<int64_t>(key.size()) > kColdKeyMaxBytes)
    throw ColdError(kStatusBadRequest, false,
                    "Object key is longer than the limit of " + std::to_string(kColdKeyMaxBytes) + " bytes.");
}

void check_metadata(const std::map<std::string, std::string>& metadata) {
  int64_t bytes = 0;
  for (const auto& [name, value] : metadata) bytes += static_cast<int64_t>(name.size() + value.size());
  if (bytes > kColdMetadataMaxBytes)
    throw ColdError(kStatusBadRequest, false,
                    "Custom metadata is larger than the limit of " + std::to_string(kColdMetadataMaxBytes) + " bytes.");
}

bool precondition_holds(const ColdObjectBody* current, const ColdPutOptions& options) {
  if (options.etagMatches) {
    if (!current) return false;
    if (*options.etagMatches != "*" && current->etag != *options.etagMatches) return false;
  }
  if (options.etagDoesNotMatch && current)
    if (*options.etagDoesNotMatch == "*" || current->etag == *options.etagDoesNotMatch) return false;
  return true;
}

}  // namespace

ColdStore::ColdStore(std::function<int64_t(int64_t max)> draw_lag) : draw_lag_(std::move(draw_lag)) {}

void ColdStore::set_rules(const std::string& bucket, std::vector<LifecycleRule> rules) {
  if (rules.size() > kColdLifecycleRulesMax)
    throw std::invalid_argument("a bucket has at most " + std::to_string(kColdLifecycleRulesMax) + " lifecycle rules");
  for (const LifecycleRule& rule : rules)
    if (rule.expireAfterDays < 0) throw std::invalid_argument("lifecycle rule with negative expireAfterDays");
  Bucket& target = buckets_[bucket];
  if (!target.objects.empty()) throw std::logic_error("lifecycle rules set on a bucket that holds objects: " + bucket);
  target.rules = std::move(rules);
}

std::optional<ColdObject> ColdStore::put(const std::string& bucket, const std::string& key, std::string body,
                                         const ColdPutOptions& options, int64_t now) {
  expire(now);
  check_not_quoted(options.etagMatches);
  check_not_quoted(options.etagDoesNotMatch);
  check_key(key);
  check_metadata(options.customMetadata);
  Bucket& target = buckets_[bucket];
  check_rate(target, key, now);
  auto current = target.objects.find(key);
  bool exists = current != target.objects.end();
  if (!precondition_holds(exists ? &current->second.object : nullptr, options)) return std::nullopt;
  if (exists) take(target, bucket, key);

  Stored stored;
  stored.object.key = key;
  stored.object.etag = etag_of(body);
  stored.object.size = static_cast<int64_t>(body.size());
  stored.object.uploaded = now;
  stored.object.customMetadata = options.customMetadata;
  stored.object.body = std::move(body);
  stored.due = due_time(target, key, now);
  schedule(bucket, key, stored);
  target.last_write[key] = now;
  history_.push_back({bucket, key, ColdEventKind::put, now, stored.object.etag, stored.due});
  ColdObject written = stored.object;
  target.objects.emplace(key, std::move(stored));
  return written;
}

std::optional<ColdObjectBody> ColdStore::get(const std::string& bucket, const std::string& key, int64_t now) {
  expire(now);
  check_key(key);
  const ColdObjectBody* found = find(bucket, key);
  if (!found) return std::nullopt;
  return *found;
}

std::optional<ColdObject> ColdStore::head(const std::string& bucket, const std::string& key, int64_t now) {
  expire(now);
  check_key(key);
  const ColdObjectBody* found = find(bucket, key);
  if (!found) return std::nullopt;
  return static_cast<const ColdObject&>(*found);
}

void ColdStore::remove(const std::string& bucket, const std::vector<std::string>& keys, int64_t now) {
  expire(now);
  if (static_cast<int64_t>(keys.size()) > kColdDeleteMax)
    throw ColdError(kStatusBadRequest, false,
                    "A delete accepts at most " + std::to_string(kColdDeleteMax) + " keys.");
  std::set<std::string> unique(keys.begin(), keys.end());
  for (const std::string& key : unique) check_key(key);
  Bucket& target = buckets_[bucket];
  for (const std::string& key : unique) check_rate(target, key, now);
  for (const std::string& key : unique) {
    std::string etag;
    if (target.objects.contains(key)) etag = take(target, bucket, key).object.etag;
    target.last_write[key] = now;
    history_.push_back({bucket, key, ColdEventKind::remove, now, std::move(etag), std::nullopt});
  }
}

ColdList ColdStore::list(const std::string& bucket, const std::string& prefix,
                         const std::optional<std::string>& cursor, int64_t limit, int64_t now) {
  expire(now);
  if (limit < 1 || limit > kColdListMax)
    throw ColdError(kStatusBadRequest, false,
                    "A list limit must be between 1 and " + std::to_string(kColdListMax) + ".");
  ColdList page;
  auto found = buckets_.find(bucket);
  if (found == buckets_.end()) return page;
  const std::map<std::string, Stored>& objects = found->second.objects;
  auto it = cursor && *cursor >= prefix ? objects.upper_bound(*cursor) : objects.lower_bound(prefix);
  for (; it != objects.end() && it->first.starts_with(prefix); ++it) {
    if (static_cast<int64_t>(page.objects.size()) == limit) {
      page.truncated = true;
      page.cursor = page.objects.back().key;
      break;
    }
    page.objects.push_back(it->second.object);
  }
  return page;
}

bool ColdStore::vanish(const std::string& bucket, const std::string& key, int64_t now) {
  expire(now);
  auto found = buckets_.find(bucket);
  if (found == buckets_.end() || !found->second.objects.contains(key)) return false;
  Stored gone = take(found->second, bucket, key);
  history_.push_back({bucket, key, ColdEventKind::vanish, now, gone.object.etag, gone.due});
  return true;
}

void ColdStore::expire(int64_t now) {
  if (now < now_) throw std::logic_error("cold store: time went backwards");
  now_ = now;
  while (!removals_.empty() && std::get<0>(*removals_.begin()) <= now) {
    auto [time, bucket, key] = *removals_.begin();
    Stored gone = take(buckets_.at(bucket), bucket, key);
    history_.push_back({bucket, key, ColdEventKind::expire, time, gone.object.etag, gone.due});
  }
}

std::optional<int64_t> ColdStore::next_expiry() const {
  if (removals_.empty()) return std::nullopt;
  return std::get<0>(*removals_.begin());
}

void ColdStore::check_rate(const Bucket& bucket, const std::string& key, int64_t now) const {
  auto last = bucket.last_write.find(key);
  if (last != bucket.last_write.end() && now - last->second < kColdWriteIntervalMs)
    throw ColdError(kStatusTooManyRequests, true, kRateLimitedMessage);
}

// The smallest expireAfterDays of the rules matching `key`; nullopt when none matches or when the
// removal time could exceed int64.
std::optional<int64_t> ColdStore::due_time(const Bucket& bucket, const std::string& key, int64_t uploaded) const {
  std::optional<int64_t> days;
  for (const LifecycleRule& rule : bucket.rules)
    if (key.starts_with(rule.prefix) && (!days || rule.expireAfterDays < *days)) days = rule.expireAfterDays;
  if (!days) return std::nullopt;
  int64_t after = 0, due = 0, latest = 0;
  if (__builtin_mul_overflow(*days, kColdMsPerDay, &after) || __builtin_add_overflow(uploaded, after, &due) ||
      __builtin_add_overflow(due, kColdLifecycleLagMaxMs, &latest))
    return std::nullopt;
  return due;
}

void ColdStore::schedule(const std::string& bucket, const std::string& key, Stored& stored) {
  if (!stored.due) return;
  int64_t lag = draw_lag_(kColdLifecycleLagMaxMs);
  if (lag < 0 || lag > kColdLifecycleLagMaxMs) throw std::logic_error("cold store: lifecycle lag out of range");
  stored.removal = *stored.due + lag;
  removals_.emplace(*stored.removal, bucket, key);
}

ColdStore::Stored ColdStore::take(Bucket& bucket, const std::string& bucket_name, const std::string& key) {
  auto it = bucket.objects.find(key);
  Stored stored = std::move(it->second);
  bucket.objects.erase(it);
  if (stored.removal) removals_.erase(Removal{*stored.removal, bucket_name, key});
  return stored;
}

const ColdObjectBody* ColdStore::find(const std::string& bucket, const std::string& key) const {
  auto found = buckets_.find(bucket);
  if (found == buckets_.end()) return nullptr;
  auto it = found->second.objects.find(key);
  return it == found->second.objects.end() ? nullptr : &it->second.object;
}

}  // namespace durasim::sim
