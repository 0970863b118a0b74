// The load envelope (engine/load.h; RTE-08, RTE-09 of invariants-engine.md): RoutingLoad's
// in-flight, completed and average counters over the 60 s window, and the EnqueueResult shape,
// driven by a clock that moves only when the test sets it.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <type_traits>

#include "engine/errors.h"
#include "engine/load.h"
#include "engine/runtime.h"
#include "engine/task.h"

namespace durasim {
namespace {

// Time set by the test; RoutingLoad only reads it.
class ManualClock final : public Clock {
 public:
  int64_t now() const override { return now_; }
  Task<void> sleepFor(int64_t) override { throw std::logic_error("RoutingLoad never sleeps"); }
  Task<void> sleepUntil(int64_t) override { throw std::logic_error("RoutingLoad never sleeps"); }

  void set(int64_t t) { now_ = t; }
  void advance(int64_t ms) { now_ += ms; }

 private:
  int64_t now_ = 0;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// RTE-08

TEST(RoutingLoadCounters, InFlightCompletedAndAverage) {
  ManualClock clock;
  clock.set(100'000);
  RoutingLoad load(clock);
  LoadSnapshot s = load.snapshot(3);
  EXPECT_EQ(s.observedAt, 100'000);
  EXPECT_EQ(s.windowMs, kRoutingWindowMs);
  EXPECT_EQ(s.inbound, (ProcessingLoad{0, 0, std::nullopt}));
  EXPECT_EQ(s.outbound.pendingDeliveries, 3);
  EXPECT_FALSE(s.outbound.averageProcessingMs.has_value());

  auto a = load.begin(Direction::inbound);
  auto b = load.begin(Direction::inbound);
  auto c = load.begin(Direction::outbound);
  EXPECT_EQ(load.snapshot(0).inbound.inFlight, 2);
  EXPECT_EQ(load.snapshot(0).outbound.inFlight, 1);
  clock.advance(40);
  a();
  a();  // idempotent
  a();
  clock.advance(20);
  b();
  s = load.snapshot(0);
  EXPECT_EQ(s.inbound.inFlight, 0);
  EXPECT_EQ(s.inbound.completed, 2);
  EXPECT_EQ(s.inbound.averageProcessingMs, 50.0);  // (40 + 60) / 2
  EXPECT_EQ(s.outbound.inFlight, 1);
  EXPECT_EQ(s.outbound.completed, 0);
  EXPECT_FALSE(s.outbound.averageProcessingMs.has_value());

  // A request still running after more than a window is counted in flight; once finished, its
  // sample counts until its second leaves (nowSec - 60, nowSec].
  clock.set(100'000 + 2 * kRoutingWindowMs);
  s = load.snapshot(0);
  EXPECT_EQ(s.outbound.inFlight, 1);
  EXPECT_EQ(s.inbound.completed, 0);
  EXPECT_FALSE(s.inbound.averageProcessingMs.has_value());
  c();
  c();
  s = load.snapshot(0);
  EXPECT_EQ(s.outbound.inFlight, 0);
  EXPECT_EQ(s.outbound.completed, 1);
  EXPECT_EQ(s.outbound.averageProcessingMs, static_cast<double>(2 * kRoutingWindowMs));
  const int64_t finishedAt = clock.now();
  clock.set(finishedAt + 59'999);  // second nowSec-59: still inside
  EXPECT_EQ(load.snapshot(0).outbound.completed, 1);
  clock.set(finishedAt + 60'000);  // second nowSec-60: outside
  EXPECT_EQ(load.snapshot(0).outbound.completed, 0);
  EXPECT_EQ(load.snapshot(0).outbound.inFlight, 0);

  // A bucket reused 60 s later is reset first.
  auto d = load.begin(Direction::inbound);
  clock.advance(7);
  d();
  s = load.snapshot(0);
  EXPECT_EQ(s.inbound.completed, 1);
  EXPECT_EQ(s.inbound.averageProcessingMs, 7.0);

  // A finish outliving its RoutingLoad stays harmless.
  std::function<void()> orphan;
  {
    RoutingLoad scoped(clock);
    orphan = scoped.begin(Direction::outbound);
  }
  orphan();
  using Alias = DurabilityRouting;
  static_assert(std::is_same_v<Alias, RoutingLoad>);
}

// ---------------------------------------------------------------------------------------------
// RTE-09

TEST(RoutingEnvelope, ExactlyOneOfValueOrErrorAndLoadAlwaysPresent) {
  ManualClock clock;
  clock.set(42);
  RoutingLoad observer(clock);
  const auto accepted = EnqueueResult<int64_t>::ok(7, observer.snapshot(12));
  EXPECT_TRUE(accepted.success);
  EXPECT_EQ(accepted.value, 7);
  EXPECT_FALSE(accepted.error.has_value());
  EXPECT_EQ(accepted.load.observedAt, 42);
  EXPECT_EQ(accepted.load.outbound.pendingDeliveries, 12);

  const auto refused = EnqueueResult<int64_t>::rejected(ErrorInfo{"LogAppendError", "Append requires at least one record"},
                                                        observer.snapshot(0));
  EXPECT_FALSE(refused.success);
  EXPECT_FALSE(refused.value.has_value());
  ASSERT_TRUE(refused.error.has_value());
  EXPECT_EQ(refused.error->name, "LogAppendError");
  EXPECT_EQ(refused.error->message, "Append requires at least one record");
  EXPECT_EQ(refused.load.windowMs, kRoutingWindowMs);
}

}  // namespace durasim
