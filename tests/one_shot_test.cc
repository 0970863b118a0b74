// One-shot results (sim/one_shot.h): the waiting frame resumes as a later executor event with the
// value, or with the error thrown by `co_await shot` and handed back as a value by
// `co_await shot.outcome()`; a second settlement is ignored.
#include <gtest/gtest.h>

#include <cstdint>
#include <exception>
#include <optional>
#include <stdexcept>
#include <string>

#include "engine/task.h"
#include "sim/one_shot.h"
#include "sim/task_group.h"
#include "sim/world.h"

namespace durasim::sim {
namespace {

class NullSink final : public TraceSink {
 public:
  void record(const TraceEvent&) override {}
};

struct Harness {
  NullSink sink;
  World world{1'000, RandomSource::recording(3), sink};
  void run() { world.run_until(INT64_MAX, [] { return true; }); }
};

struct Planned : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// What a waiter saw: the value, the error it caught, the error handed to it as a value.
struct Seen {
  std::optional<int> value;
  std::string thrown, handed;
  bool resumed = false;
};

Task<void> await_throwing(const OneShot<int>& shot, Seen* seen) {
  try {
    seen->value = co_await shot;
  } catch (const Planned& e) {
    seen->thrown = e.what();
  }
  seen->resumed = true;
}

Task<void> await_outcome(const OneShot<int>& shot, Seen* seen) {
  OneShot<int>::Outcome outcome = co_await shot.outcome();
  seen->value = outcome.value;
  if (outcome.error) {
    try {
      std::rethrow_exception(outcome.error);
    } catch (const Planned& e) {
      seen->handed = e.what();
    }
  }
  seen->resumed = true;
}

// Two parked waiters: one awaiting `a` (errors thrown), one awaiting `b.outcome()`.
class OneShotWaiters : public ::testing::Test {
 protected:
  void SetUp() override {
    h.world.tasks().spawn("throwing", await_throwing(a, &throwing));
    h.world.tasks().spawn("outcome", await_outcome(b, &outcome));
    h.run();
  }
  Harness h;
  OneShot<int> a{h.world.executor()}, b{h.world.executor()};
  Seen throwing, outcome;
};

TEST_F(OneShotWaiters, AValueReachesBothKindsOfWaiter) {
  EXPECT_FALSE(throwing.resumed);
  a.set_value(4);
  b.set_value(5);
  b.set_value(6);  // ignored: the first settlement wins
  EXPECT_FALSE(throwing.resumed) << "the waiter resumes as a later event, not inline";
  h.run();
  EXPECT_EQ(throwing.value, 4);
  EXPECT_EQ(outcome.value, 5);
  EXPECT_TRUE(outcome.handed.empty());
}

TEST_F(OneShotWaiters, AnErrorIsThrownOrHandedBackAsAValue) {
  a.set_error(std::make_exception_ptr(Planned("lost")));
  b.set_error(std::make_exception_ptr(Planned("reset")));
  b.set_value(1);  // ignored
  h.run();
  EXPECT_EQ(throwing.thrown, "lost");
  EXPECT_FALSE(throwing.value);
  ASSERT_TRUE(outcome.resumed);
  EXPECT_EQ(outcome.handed, "reset");
  EXPECT_FALSE(outcome.value);
}

TEST(OneShot, ASettledResultIsTakenWithoutSuspending) {
  Harness h;
  OneShot<int> shot(h.world.executor());
  shot.set_error(std::make_exception_ptr(Planned("early")));
  Seen outcome;
  h.world.tasks().spawn("outcome", await_outcome(shot, &outcome));
  h.run();
  EXPECT_EQ(outcome.handed, "early");
}

}  // namespace
}  // namespace durasim::sim
