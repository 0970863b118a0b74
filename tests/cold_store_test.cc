// The cold store model (sim/cold_store.h, runtime.md 10): etags, conditional puts, the per-key write
// rate (RT-22), limits, paginated listing, lifecycle expiry bounds (RT-21), vanish and the history.
#include <gtest/gtest.h>

#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "sim/cold_store.h"

namespace durasim {
namespace {

using sim::ColdEvent;
using sim::ColdEventKind;
using sim::ColdStore;

constexpr int64_t kStart = 1'700'000'000'000;
constexpr int64_t kDay = sim::kColdMsPerDay;
const std::string kBucket = "segments";

// A store whose lifecycle lag is `lag`, counting the draws.
struct Harness {
  int64_t lag = 0;
  std::vector<int64_t> draws;  // the `max` of every draw
  ColdStore store{[this](int64_t max) {
    draws.push_back(max);
    return lag;
  }};

  std::optional<ColdObject> put(const std::string& key, const std::string& body, int64_t now,
                                ColdPutOptions options = {}) {
    return store.put(kBucket, key, body, options, now);
  }
  std::optional<std::string> body(const std::string& key, int64_t now) {
    auto got = store.get(kBucket, key, now);
    if (!got) return std::nullopt;
    return got->body;
  }
};

ColdPutOptions create_only() {
  ColdPutOptions options;
  options.etagDoesNotMatch = "*";
  return options;
}

ColdPutOptions if_match(const std::string& etag) {
  ColdPutOptions options;
  options.etagMatches = etag;
  return options;
}

template <class F>
int64_t status_of(F&& call) {
  try {
    call();
  } catch (const ColdError& error) {
    return error.status();
  }
  return 0;
}

std::string key_number(int i) {
  char buffer[16];
  std::snprintf(buffer, sizeof buffer, "k%05d", i);
  return buffer;
}

TEST(ColdStore, EtagIs32LowerHexDigitsAndAFunctionOfTheBody) {
  Harness h;
  auto a = h.put("a", "hello", kStart);
  auto b = h.put("b", "hello", kStart);
  auto c = h.put("c", "hellp", kStart);
  ASSERT_TRUE(a && b && c);
  EXPECT_EQ(a->etag.size(), 32u);
  EXPECT_EQ(a->etag.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(a->etag, b->etag);
  EXPECT_NE(a->etag, c->etag);
  EXPECT_NE(a->etag.substr(0, 16), a->etag.substr(16));
  Harness other;
  EXPECT_EQ(other.put("z", "hello", kStart + 5)->etag, a->etag);
}

TEST(ColdStore, PutReturnsTheObjectAndGetHeadSeeIt) {
  Harness h;
  ColdPutOptions options;
  options.customMetadata = {{"writer", "w1"}};
  auto put = h.put("a", "12345", kStart, options);
  ASSERT_TRUE(put);
  EXPECT_EQ(put->key, "a");
  EXPECT_EQ(put->size, 5);
  EXPECT_EQ(put->uploaded, kStart);
  EXPECT_EQ(put->customMetadata, options.customMetadata);
  auto got = h.store.get(kBucket, "a", kStart);
  ASSERT_TRUE(got);
  EXPECT_EQ(got->body, "12345");
  EXPECT_EQ(got->etag, put->etag);
  auto head = h.store.head(kBucket, "a", kStart);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->etag, put->etag);
  EXPECT_EQ(head->customMetadata, options.customMetadata);
  EXPECT_FALSE(h.store.get(kBucket, "b", kStart));
  EXPECT_FALSE(h.store.head("other-bucket", "a", kStart));
}

TEST(ColdStore, CreateOnlyTwiceReturnsNulloptAndKeepsTheFirstBody) {
  Harness h;
  ASSERT_TRUE(h.put("a", "first", kStart, create_only()));
  EXPECT_FALSE(h.put("a", "second", kStart + 5'000, create_only()));
  EXPECT_EQ(h.body("a", kStart + 5'000), "first");
  EXPECT_EQ(h.store.history().size(), 1u);
}

TEST(ColdStore, FailedPreconditionIsNotAWriteForTheRateLimit) {
  Harness h;
  ASSERT_TRUE(h.put("a", "first", kStart, create_only()));
  EXPECT_FALSE(h.put("a", "second", kStart + 1'000, create_only()));
  EXPECT_TRUE(h.put("a", "third", kStart + 1'500));  // only 500 ms after the failed one
}

TEST(ColdStore, EtagMatchesReplacesOnlyTheMatchingObject) {
  Harness h;
  EXPECT_FALSE(h.put("a", "x", kStart, if_match("0123456789abcdef0123456789abcdef")));
  EXPECT_FALSE(h.body("a", kStart));
  auto first = h.put("a", "v1", kStart);
  EXPECT_FALSE(h.put("a", "v2", kStart + 1'000, if_match("0123456789abcdef0123456789abcdef")));
  EXPECT_EQ(h.body("a", kStart + 1'000), "v1");
  EXPECT_TRUE(h.put("a", "v2", kStart + 1'000, if_match(first->etag)));
  EXPECT_EQ(h.body("a", kStart + 1'000), "v2");
  EXPECT_TRUE(h.put("a", "v3", kStart + 2'000, if_match("*")));
}

TEST(ColdStore, EtagDoesNotMatchFailsOnlyOnTheCurrentEtag) {
  Harness h;
  auto first = h.put("a", "v1", kStart);
  ColdPutOptions options;
  options.etagDoesNotMatch = first->etag;
  EXPECT_FALSE(h.put("a", "v2", kStart + 1'000, options));
  options.etagDoesNotMatch = "0123456789abcdef0123456789abcdef";
  EXPECT_TRUE(h.put("a", "v2", kStart + 1'000, options));
}

TEST(ColdStore, QuotedEtagsThrowTypeError) {
  Harness h;
  for (std::string quoted : {"\"abc\"", "\"abc", "abc\""}) {
    EXPECT_THROW(h.put("a", "x", kStart, if_match(quoted)), TypeError);
    ColdPutOptions options;
    options.etagDoesNotMatch = quoted;
    EXPECT_THROW(h.put("a", "x", kStart, options), TypeError);
  }
  try {
    h.put("a", "x", kStart, if_match("\"abc\""));
  } catch (const TypeError& error) {
    EXPECT_STREQ(error.what(), "ETags must not be quoted");
  }
  EXPECT_TRUE(h.store.history().empty());
}

TEST(ColdStore, SecondWriteWithinASecondIs429AndChangesNothing) {
  Harness h;
  ASSERT_TRUE(h.put("a", "v1", kStart));
  try {
    h.put("a", "v2", kStart + 999);
    FAIL() << "expected ColdError";
  } catch (const ColdError& error) {
    EXPECT_EQ(error.status(), 429);
    EXPECT_TRUE(error.retryable());
    EXPECT_STREQ(error.what(), "Reduce your concurrent request rate for the same object.");
  }
  EXPECT_EQ(status_of([&] { h.store.remove(kBucket, {"a"}, kStart + 999); }), 429);
  EXPECT_EQ(h.body("a", kStart + 999), "v1");
  EXPECT_EQ(h.store.history().size(), 1u);
  EXPECT_TRUE(h.put("a", "v2", kStart + 1'000));  // exactly one interval later
  EXPECT_EQ(h.body("a", kStart + 1'000), "v2");
  EXPECT_TRUE(h.put("b", "other key", kStart + 1'000));
}

TEST(ColdStore, DeleteCountsAsAWriteEvenOfAMissingKey) {
  Harness h;
  h.store.remove(kBucket, {"missing"}, kStart);
  EXPECT_EQ(status_of([&] { h.put("missing", "x", kStart + 500); }), 429);
  EXPECT_TRUE(h.put("missing", "x", kStart + 1'000));
}

TEST(ColdStore, DeleteIsAllOrNothingUnderTheRateLimit) {
  Harness h;
  ASSERT_TRUE(h.put("a", "v", kStart));
  ASSERT_TRUE(h.put("b", "v", kStart + 800));
  EXPECT_EQ(status_of([&] { h.store.remove(kBucket, {"a", "b"}, kStart + 1'000); }), 429);
  EXPECT_TRUE(h.body("a", kStart + 1'000));
  h.store.remove(kBucket, {"a", "b", "a"}, kStart + 1'800);
  EXPECT_FALSE(h.body("a", kStart + 1'800));
  EXPECT_FALSE(h.body("b", kStart + 1'800));
}

TEST(ColdStore, KeyAndMetadataLimitsAre400) {
  Harness h;
  std::string longest(sim::kColdKeyMaxBytes, 'k');
  EXPECT_TRUE(h.put(longest, "x", kStart));
  std::string too_long = longest + "k";
  EXPECT_EQ(status_of([&] { h.put(too_long, "x", kStart); }), 400);
  EXPECT_EQ(status_of([&] { h.store.get(kBucket, too_long, kStart); }), 400);
  EXPECT_EQ(status_of([&] { h.store.remove(kBucket, {too_long}, kStart); }), 400);
  try {
    h.put(too_long, "x", kStart);
  } catch (const ColdError& error) {
    EXPECT_FALSE(error.retryable());
    EXPECT_NE(std::string(error.what()).find("1024"), std::string::npos);
  }

  ColdPutOptions options;
  options.customMetadata = {{"name", std::string(sim::kColdMetadataMaxBytes - 4, 'v')}};
  EXPECT_TRUE(h.put("m", "x", kStart, options));
  options.customMetadata["x"] = "";
  try {
    h.put("n", "x", kStart, options);
    FAIL() << "expected ColdError";
  } catch (const ColdError& error) {
    EXPECT_EQ(error.status(), 400);
    EXPECT_FALSE(error.retryable());
    EXPECT_NE(std::string(error.what()).find("8192"), std::string::npos);
  }
  EXPECT_FALSE(h.body("n", kStart));
}

TEST(ColdStore, ListPaginatesInKeyOrder) {
  Harness h;
  constexpr int kKeys = 2'500;
  for (int i = kKeys - 1; i >= 0; --i) ASSERT_TRUE(h.put(key_number(i), "x", kStart));
  ASSERT_TRUE(h.put("other", "x", kStart));
  std::vector<std::string> seen;
  std::optional<std::string> cursor;
  int pages = 0;
  for (bool more = true; more; ++pages) {
    ColdList page = h.store.list(kBucket, "k", cursor, sim::kColdListMax, kStart);
    for (const ColdObject& object : page.objects) seen.push_back(object.key);
    more = page.truncated;
    cursor = page.cursor;
    EXPECT_EQ(page.cursor.has_value(), page.truncated);
  }
  EXPECT_EQ(pages, 3);
  ASSERT_EQ(seen.size(), static_cast<size_t>(kKeys));
  for (int i = 0; i < kKeys; ++i) EXPECT_EQ(seen[i], key_number(i));
}

TEST(ColdStore, ListExactlyOnePageIsNotTruncated) {
  Harness h;
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(h.put(key_number(i), "x", kStart));
  ColdList page = h.store.list(kBucket, "", std::nullopt, 3, kStart);
  EXPECT_EQ(page.objects.size(), 3u);
  EXPECT_FALSE(page.truncated);
  EXPECT_FALSE(page.cursor);
  EXPECT_TRUE(h.store.list("empty", "", std::nullopt, 10, kStart).objects.empty());
}

TEST(ColdStore, ListLimitMustBe1To1000) {
  Harness h;
  EXPECT_EQ(status_of([&] { h.store.list(kBucket, "", std::nullopt, 0, kStart); }), 400);
  EXPECT_EQ(status_of([&] { h.store.list(kBucket, "", std::nullopt, sim::kColdListMax + 1, kStart); }), 400);
}

TEST(ColdStore, DeleteOfMoreThan1000KeysIsRejected) {
  Harness h;
  ASSERT_TRUE(h.put(key_number(0), "x", kStart));
  std::vector<std::string> keys;
  for (int i = 0; i <= sim::kColdDeleteMax; ++i) keys.push_back(key_number(i));
  EXPECT_EQ(status_of([&] { h.store.remove(kBucket, keys, kStart + 1'000); }), 400);
  EXPECT_TRUE(h.body(key_number(0), kStart + 1'000));
  keys.pop_back();
  h.store.remove(kBucket, keys, kStart + 1'000);
  EXPECT_FALSE(h.body(key_number(0), kStart + 1'000));
}

TEST(ColdStore, LifecycleRemovesBetweenDueAndDuePlusMaxLag) {
  Harness h;
  h.lag = sim::kColdLifecycleLagMaxMs;
  h.store.set_rules(kBucket, {{"seg/", 3}, {"seg/hot/", 1}});
  ASSERT_TRUE(h.put("seg/hot/a", "x", kStart));
  ASSERT_TRUE(h.put("keep", "x", kStart));
  EXPECT_EQ(h.draws, (std::vector<int64_t>{sim::kColdLifecycleLagMaxMs}));  // once, for the one subject
  const int64_t due = kStart + kDay;                                       // the smallest rule wins
  EXPECT_EQ(h.store.next_expiry(), due + h.lag);
  h.store.expire(due - 1);
  EXPECT_TRUE(h.body("seg/hot/a", due - 1));
  EXPECT_TRUE(h.body("seg/hot/a", due + h.lag - 1));
  EXPECT_EQ(h.store.list(kBucket, "seg/", std::nullopt, 10, due + h.lag - 1).objects.size(), 1u);
  EXPECT_FALSE(h.body("seg/hot/a", due + sim::kColdLifecycleLagMaxMs));
  EXPECT_FALSE(h.store.next_expiry());
  EXPECT_TRUE(h.body("keep", due + sim::kColdLifecycleLagMaxMs));
  EXPECT_EQ(h.draws.size(), 1u);
  const ColdEvent& removal = h.store.history().back();
  EXPECT_EQ(removal.kind, ColdEventKind::expire);
  EXPECT_EQ(removal.time, due + h.lag);
  EXPECT_EQ(removal.due, due);
}

TEST(ColdStore, ExpireAppliesRemovalsInTheOrderOfTheirScheduledTimes) {
  Harness h;
  h.store.set_rules(kBucket, {{"", 0}});
  h.lag = 20;
  auto a = h.put("a", "x", kStart);
  h.lag = 5;
  auto b = h.put("b", "y", kStart);
  h.store.expire(kStart + 100);
  ASSERT_EQ(h.store.history().size(), 4u);
  EXPECT_EQ(h.store.history()[2], (ColdEvent{kBucket, "b", ColdEventKind::expire, kStart + 5, b->etag, kStart}));
  EXPECT_EQ(h.store.history()[3], (ColdEvent{kBucket, "a", ColdEventKind::expire, kStart + 20, a->etag, kStart}));
}

TEST(ColdStore, RePutRestartsTheLifecycleClock) {
  Harness h;
  h.lag = 0;
  h.store.set_rules(kBucket, {{"", 1}});
  ASSERT_TRUE(h.put("a", "v1", kStart));
  ASSERT_TRUE(h.put("a", "v2", kStart + kDay - 10));
  EXPECT_EQ(h.draws.size(), 2u);
  EXPECT_EQ(h.store.next_expiry(), kStart + 2 * kDay - 10);
  EXPECT_EQ(h.body("a", kStart + kDay), "v2");
  EXPECT_FALSE(h.body("a", kStart + 2 * kDay - 10));
}

TEST(ColdStore, DeleteCancelsTheScheduledRemoval) {
  Harness h;
  h.store.set_rules(kBucket, {{"", 1}});
  ASSERT_TRUE(h.put("a", "v1", kStart));
  h.store.remove(kBucket, {"a"}, kStart + 1'000);
  EXPECT_FALSE(h.store.next_expiry());
}

TEST(ColdStore, RulesAreConfiguration) {
  Harness h;
  std::vector<sim::LifecycleRule> rules(sim::kColdLifecycleRulesMax, {"p", 1});
  h.store.set_rules(kBucket, rules);
  rules.push_back({"q", 1});
  EXPECT_THROW(h.store.set_rules(kBucket, rules), std::invalid_argument);
  EXPECT_THROW(h.store.set_rules(kBucket, {{"p", -1}}), std::invalid_argument);
  ASSERT_TRUE(h.put("a", "x", kStart));
  EXPECT_THROW(h.store.set_rules(kBucket, {}), std::logic_error);
}

TEST(ColdStore, TimeMustNotGoBackwards) {
  Harness h;
  h.store.expire(kStart);
  EXPECT_THROW(h.store.get(kBucket, "a", kStart - 1), std::logic_error);
}

TEST(ColdStore, VanishRemovesNowAndIsNotAWrite) {
  Harness h;
  h.store.set_rules(kBucket, {{"", 1}});
  auto put = h.put("a", "x", kStart);
  EXPECT_TRUE(h.store.vanish(kBucket, "a", kStart + 10));
  EXPECT_FALSE(h.store.vanish(kBucket, "a", kStart + 10));
  EXPECT_FALSE(h.body("a", kStart + 10));
  EXPECT_FALSE(h.store.next_expiry());
  EXPECT_EQ(h.store.history().back(),
            (ColdEvent{kBucket, "a", ColdEventKind::vanish, kStart + 10, put->etag, kStart + kDay}));
  EXPECT_EQ(status_of([&] { h.put("a", "y", kStart + 20); }), 429);  // the put is the last write
}

TEST(ColdStore, HistoryRecordsAcceptedWritesAndRemovals) {
  Harness h;
  auto v1 = h.put("a", "v1", kStart);
  EXPECT_FALSE(h.put("a", "v2", kStart + 1'000, create_only()));
  h.store.remove(kBucket, {"a", "none"}, kStart + 2'000);
  const std::vector<ColdEvent> expected = {
      {kBucket, "a", ColdEventKind::put, kStart, v1->etag, std::nullopt},
      {kBucket, "a", ColdEventKind::remove, kStart + 2'000, v1->etag, std::nullopt},
      {kBucket, "none", ColdEventKind::remove, kStart + 2'000, "", std::nullopt},
  };
  EXPECT_EQ(h.store.history(), expected);
}

}  // namespace
}  // namespace durasim
