// Property: random put / create-only put / delete / get sequences at non-decreasing times agree with
// a plain reference map on every outcome (RT-20, per-key linearizability in a sequential setting),
// and the store's history has accepted writes per key at least kColdWriteIntervalMs apart (RT-22).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "sim/cold_store.h"

namespace durasim {
namespace {

using sim::ColdEventKind;

constexpr int64_t kStart = 1'700'000'000'000;
constexpr int kKeys = 3;
constexpr int kBodies = 4;
constexpr int64_t kMaxStepMs = 1'500;  // steps straddle kColdWriteIntervalMs
const std::string kBucket = "b";

enum class OpKind { put, create_only, remove, get };
constexpr int kOpKinds = 4;

// What a write did: rejected by the rate limit, failed its precondition, or was accepted.
enum class Outcome { rate_limited, precondition_failed, accepted };

// The reference: what each key holds and when it was last written.
struct Reference {
  std::map<std::string, std::string> bodies;
  std::map<std::string, int64_t> last_write;

  bool rate_limited(const std::string& key, int64_t now) const {
    auto last = last_write.find(key);
    return last != last_write.end() && now - last->second < sim::kColdWriteIntervalMs;
  }
  Outcome write(OpKind kind, const std::string& key, const std::string& body, int64_t now) {
    if (rate_limited(key, now)) return Outcome::rate_limited;
    if (kind == OpKind::create_only && bodies.contains(key)) return Outcome::precondition_failed;
    if (kind == OpKind::remove)
      bodies.erase(key);
    else
      bodies[key] = body;
    last_write[key] = now;
    return Outcome::accepted;
  }
};

Outcome apply_write(sim::ColdStore& store, OpKind kind, const std::string& key, const std::string& body,
                    int64_t now) {
  try {
    if (kind == OpKind::remove) {
      store.remove(kBucket, {key}, now);
      return Outcome::accepted;
    }
    ColdPutOptions options;
    if (kind == OpKind::create_only) options.etagDoesNotMatch = "*";
    return store.put(kBucket, key, body, options, now) ? Outcome::accepted : Outcome::precondition_failed;
  } catch (const ColdError& error) {
    RC_ASSERT(error.status() == 429);
    return Outcome::rate_limited;
  }
}

// Time steps, often on the edges of the write interval.
rc::Gen<int64_t> step_gen() {
  constexpr int64_t kInterval = sim::kColdWriteIntervalMs;
  return rc::gen::oneOf(rc::gen::inRange<int64_t>(0, kMaxStepMs + 1),
                        rc::gen::element<int64_t>(0, 1, kInterval - 1, kInterval, kInterval + 1));
}

RC_GTEST_PROP(ColdStoreProp, AgreesWithAReferenceMapAndKeepsTheWriteRate, ()) {
  const auto ops = *rc::gen::container<std::vector<std::tuple<int, int, int, int64_t>>>(
      rc::gen::tuple(rc::gen::inRange(0, kOpKinds), rc::gen::inRange(0, kKeys), rc::gen::inRange(0, kBodies),
                     step_gen()));
  sim::ColdStore store([](int64_t max) { return max; });
  Reference reference;
  int64_t now = kStart;
  for (const auto& [kind_index, key_index, body_index, step] : ops) {
    now += step;
    const auto kind = static_cast<OpKind>(kind_index);
    const std::string key = "k" + std::to_string(key_index);
    const std::string body = "body" + std::to_string(body_index);
    if (kind == OpKind::get) {
      auto got = store.get(kBucket, key, now);
      auto expected = reference.bodies.find(key);
      RC_ASSERT(got.has_value() == (expected != reference.bodies.end()));
      if (got) RC_ASSERT(got->body == expected->second);
    } else {
      RC_ASSERT(apply_write(store, kind, key, body, now) == reference.write(kind, key, body, now));
    }
  }

  std::map<std::string, int64_t> last_write;
  for (const sim::ColdEvent& event : store.history()) {
    RC_ASSERT(event.kind == ColdEventKind::put || event.kind == ColdEventKind::remove);
    auto last = last_write.find(event.key);
    if (last != last_write.end()) RC_ASSERT(event.time - last->second >= sim::kColdWriteIntervalMs);
    last_write[event.key] = event.time;
  }
}

}  // namespace
}  // namespace durasim
