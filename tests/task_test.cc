// Task<T> semantics (engine/task.h) under the simulated World: laziness, values and exceptions
// through nested co_await, when_all (input order, joins all, first exception in input order, empty),
// and destruction of suspended chains via TaskGroup::cancel / cancel_all: every frame freed, no resume.
#include <gtest/gtest.h>

#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "engine/task.h"
#include "sim/task_group.h"
#include "sim/world.h"

namespace durasim {
namespace {

using sim::SimTime;

constexpr SimTime kStart = 1'000'000;

class NullSink final : public sim::TraceSink {
 public:
  void record(const sim::TraceEvent&) override {}
};

// A World with nothing listening, driven to completion by the tests.
struct Harness {
  NullSink sink;
  sim::World world{kStart, sim::RandomSource::recording(11), sink};

  uint64_t run() { return world.run_until(INT64_MAX, [] { return true; }); }
  sim::Executor& executor() { return world.executor(); }
};

// Counts constructions and destructions of the objects living in coroutine frames.
struct Lifetimes {
  int made = 0;
  int destroyed = 0;
};

struct Counted {
  explicit Counted(Lifetimes* l) : lifetimes(l) { ++lifetimes->made; }
  Counted(const Counted&) = delete;
  Counted& operator=(const Counted&) = delete;
  ~Counted() { ++lifetimes->destroyed; }
  Lifetimes* lifetimes;
};

struct Planned : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Drives a task that never suspends on the World to completion, as a host would drive a root.
template <class T>
T run_sync(Task<T> task) {
  task.handle().resume();
  EXPECT_TRUE(task.done());
  return task.result();
}

// ---------------------------------------------------------------------------------------------
// Laziness

Task<int> mark_and_return(bool* ran, int value) {
  *ran = true;
  co_return value;
}

Task<int> await_passed_task(Task<int> child, bool* child_ran, bool* child_ran_before_await) {
  *child_ran_before_await = *child_ran;
  const int v = co_await child;
  co_return v * 10;
}

TEST(TaskLaziness, BodyDoesNotRunUntilAwaited) {
  bool ran = false, ran_before_await = true;
  Task<int> child = mark_and_return(&ran, 4);
  EXPECT_FALSE(ran);
  EXPECT_TRUE(child.valid());
  EXPECT_FALSE(child.done());

  Task<int> parent = await_passed_task(std::move(child), &ran, &ran_before_await);
  EXPECT_FALSE(ran) << "creating the parent must not start the child";
  EXPECT_EQ(run_sync(std::move(parent)), 40);
  EXPECT_FALSE(ran_before_await) << "the child ran before the parent's co_await reached it";
  EXPECT_TRUE(ran);
}

Task<void> counted_body(Lifetimes* lifetimes, bool* ran) {
  Counted c(lifetimes);
  *ran = true;
  co_return;
}

TEST(TaskLaziness, DestroyingAnUnstartedTaskNeverRunsItsBody) {
  Lifetimes lifetimes;
  bool ran = false;
  {
    Task<void> t = counted_body(&lifetimes, &ran);
    EXPECT_TRUE(t.valid());
  }
  EXPECT_FALSE(ran);
  EXPECT_EQ(lifetimes.made, 0);
}

TEST(TaskLaziness, SpawnedRootStartsAsALaterExecutorEvent) {
  Lifetimes lifetimes;
  bool ran = false;
  Harness h;
  h.world.tasks().spawn("lazy", counted_body(&lifetimes, &ran));
  EXPECT_FALSE(ran) << "spawn must not run the body inside the caller";
  EXPECT_EQ(h.world.tasks().live(), 1u);
  EXPECT_EQ(h.executor().pending(), 1u);
  ASSERT_TRUE(h.executor().run_one());
  EXPECT_TRUE(ran);
  EXPECT_EQ(lifetimes.made, 1);
  EXPECT_EQ(lifetimes.destroyed, 1);
  EXPECT_EQ(h.world.tasks().live(), 0u) << "a finished root is reaped";
  EXPECT_EQ(h.world.now(), kStart);
}

TEST(TaskLaziness, RootCancelledBeforeItsStartNeverRuns) {
  Lifetimes lifetimes;
  bool ran = false;
  Harness h;
  const uint64_t id = h.world.tasks().spawn("never", counted_body(&lifetimes, &ran));
  EXPECT_TRUE(h.world.tasks().cancel(id));
  EXPECT_EQ(h.executor().pending(), 0u) << "the start event must be withdrawn";
  EXPECT_EQ(h.run(), 0u);
  EXPECT_FALSE(ran);
  EXPECT_EQ(lifetimes.made, 0);
  EXPECT_FALSE(h.world.tasks().cancel(id));
}

// ---------------------------------------------------------------------------------------------
// Values and exceptions through co_await

Task<int> leaf_value(int v) { co_return v; }

Task<int> nested_value(int depth, int v) {
  if (depth == 0) co_return co_await leaf_value(v);
  const int below = co_await nested_value(depth - 1, v);
  co_return below + 1;
}

TEST(TaskPropagation, ValueThroughNestedAwaitsWithoutSuspending) {
  EXPECT_EQ(run_sync(nested_value(0, 7)), 7);
  EXPECT_EQ(run_sync(nested_value(5, 7)), 12);
}

Task<std::unique_ptr<std::string>> make_owned(std::string text) { co_return std::make_unique<std::string>(text); }

Task<std::unique_ptr<std::string>> pass_owned(int depth, std::string text) {
  if (depth == 0) co_return co_await make_owned(text);
  auto inner = co_await pass_owned(depth - 1, text);
  *inner += "+";
  co_return inner;
}

TEST(TaskPropagation, MoveOnlyValueThroughNestedAwaits) {
  auto result = run_sync(pass_owned(3, "v"));
  ASSERT_NE(result, nullptr);
  EXPECT_EQ(*result, "v+++");
}

Task<int> sleepy_leaf(sim::World& world, SimTime ms, int v) {
  co_await world.sleep_for(ms);
  co_return v;
}

Task<int> sleepy_chain(sim::World& world, int depth, SimTime ms, int v) {
  if (depth == 0) co_return co_await sleepy_leaf(world, ms, v);
  const int below = co_await sleepy_chain(world, depth - 1, ms, v);
  co_await world.sleep_for(ms);
  co_return below * 2;
}

Task<void> store_result(Task<int> task, int* out, SimTime* at, sim::World& world) {
  *out = co_await task;
  *at = world.now();
}

TEST(TaskPropagation, ValueThroughNestedAwaitsAcrossSleeps) {
  int out = 0;
  SimTime at = 0;
  Harness h;
  h.world.tasks().spawn("root", store_result(sleepy_chain(h.world, 4, 10, 3), &out, &at, h.world));
  h.run();
  EXPECT_EQ(out, 3 * 16);
  EXPECT_EQ(at, kStart + 5 * 10) << "one sleep in the leaf and one in each of the four levels above it";
  EXPECT_EQ(h.world.tasks().live(), 0u);
}

Task<int> throwing_leaf(sim::World* world, SimTime ms, std::string what) {
  if (world) co_await world->sleep_for(ms);
  throw Planned(what);
  co_return 0;
}

Task<int> rethrowing_chain(sim::World* world, int depth, int* continued, std::string what) {
  if (depth == 0) co_return co_await throwing_leaf(world, 5, what);
  const int v = co_await rethrowing_chain(world, depth - 1, continued, what);
  ++*continued;  // must never run: the await above throws
  co_return v;
}

Task<std::string> catch_at_top(Task<int> task) {
  try {
    co_await task;
  } catch (const Planned& e) {
    co_return std::string("caught: ") + e.what();
  }
  co_return "no exception";
}

TEST(TaskPropagation, ExceptionThroughNestedAwaitsWithoutSuspending) {
  int continued = 0;
  EXPECT_EQ(run_sync(catch_at_top(rethrowing_chain(nullptr, 4, &continued, "deep"))), "caught: deep");
  EXPECT_EQ(continued, 0);

  Task<int> bare = rethrowing_chain(nullptr, 2, &continued, "bare");
  bare.handle().resume();
  ASSERT_TRUE(bare.done());
  EXPECT_THROW(bare.result(), Planned) << "a host reading a failed root's result gets the exception";
}

Task<void> catch_into(Task<int> task, std::string* out) {
  try {
    co_await task;
    *out = "no exception";
  } catch (const Planned& e) {
    *out = e.what();
  }
}

TEST(TaskPropagation, ExceptionThroughNestedAwaitsAcrossSleeps) {
  int continued = 0;
  std::string out;
  Harness h;
  h.world.tasks().spawn("root", catch_into(rethrowing_chain(&h.world, 4, &continued, "late failure"), &out));
  h.run();
  EXPECT_EQ(out, "late failure");
  EXPECT_EQ(continued, 0);
  EXPECT_EQ(h.world.now(), kStart + 5);
}

// Finishes with `error` handed on as a value (co_return Rethrow), never thrown in this frame.
Task<int> hand_on(std::exception_ptr error, Lifetimes* lifetimes, int* continued) {
  Counted local(lifetimes);
  if (error) co_return Rethrow{error};
  ++*continued;
  co_return 7;
}

TEST(TaskPropagation, AnErrorHandedOnAsAValueIsThrownInTheParent) {
  Lifetimes lifetimes;
  int continued = 0;
  const std::exception_ptr planned = std::make_exception_ptr(Planned("handed on"));
  EXPECT_EQ(run_sync(catch_at_top(hand_on(planned, &lifetimes, &continued))), "caught: handed on");
  EXPECT_EQ(continued, 0);
  EXPECT_EQ(run_sync(catch_at_top(hand_on(nullptr, &lifetimes, &continued))), "no exception");
  EXPECT_EQ(continued, 1);
  EXPECT_EQ(lifetimes.made, 2);
  EXPECT_EQ(lifetimes.destroyed, 2);

  Task<int> bare = hand_on(planned, &lifetimes, &continued);
  bare.handle().resume();
  ASSERT_TRUE(bare.done());
  EXPECT_THROW(bare.result(), Planned) << "a host reading the root's result gets the error";
}

Task<void> fail_after(sim::World& world, SimTime ms) {
  co_await world.sleep_for(ms);
  throw Planned("root failure");
}

TEST(TaskPropagation, RootExceptionGoesToOnDone) {
  std::exception_ptr seen;
  bool called = false;
  Harness h;
  h.world.tasks().spawn("failing", fail_after(h.world, 3), [&](std::exception_ptr e) {
    called = true;
    seen = e;
  });
  h.run();
  ASSERT_TRUE(called);
  ASSERT_TRUE(seen);
  EXPECT_THROW(std::rethrow_exception(seen), Planned);
}

TEST(TaskPropagation, RootExceptionWithoutOnDoneFailsTheExecutorStep) {
  Harness h;
  h.world.tasks().spawn("failing-root", fail_after(h.world, 3));
  ASSERT_TRUE(h.executor().run_one());  // start: suspends on the sleep
  try {
    h.executor().run_one();
    FAIL() << "the failure of a root without on_done was swallowed";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("failing-root"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("root failure"), std::string::npos) << e.what();
  }
  EXPECT_EQ(h.world.tasks().live(), 0u);
}

// ---------------------------------------------------------------------------------------------
// when_all

Task<int> timed_value(sim::World& world, SimTime ms, int v, std::vector<int>* finish_order) {
  co_await world.sleep_for(ms);
  finish_order->push_back(v);
  co_return v;
}

Task<void> join_values(sim::World& world, std::vector<Task<int>> tasks, std::vector<int>* out, SimTime* at) {
  *out = co_await when_all(std::move(tasks));
  *at = world.now();
}

TEST(WhenAll, ResultsInInputOrderAfterAllFinish) {
  std::vector<int> finish_order, results;
  SimTime at = 0;
  Harness h;
  std::vector<Task<int>> tasks;
  tasks.push_back(timed_value(h.world, 30, 0, &finish_order));
  tasks.push_back(timed_value(h.world, 10, 1, &finish_order));
  tasks.push_back(timed_value(h.world, 20, 2, &finish_order));
  tasks.push_back(timed_value(h.world, 0, 3, &finish_order));
  h.world.tasks().spawn("join", join_values(h.world, std::move(tasks), &results, &at));
  h.run();
  EXPECT_EQ(results, (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(finish_order, (std::vector<int>{3, 1, 2, 0})) << "children run concurrently, finishing by time";
  EXPECT_EQ(at, kStart + 30) << "the join resumes when the slowest child is done, and only then";
}

TEST(WhenAll, ChildrenThatNeverSuspendJoinImmediately) {
  std::vector<Task<int>> tasks;
  for (int i = 0; i < 5; ++i) tasks.push_back(nested_value(i, 100 * i));
  EXPECT_EQ(run_sync(when_all(std::move(tasks))), (std::vector<int>{0, 101, 202, 303, 404}));
}

TEST(WhenAll, EmptyVector) {
  EXPECT_TRUE(run_sync(when_all(std::vector<Task<int>>{})).empty());
  run_sync(when_all(std::vector<Task<void>>{}));  // completes without suspending
}

Task<int> throw_after(sim::World& world, SimTime ms, std::string what, std::vector<std::string>* log) {
  co_await world.sleep_for(ms);
  log->push_back(what);
  throw Planned(what);
  co_return 0;
}

Task<void> join_and_catch(sim::World& world, std::vector<Task<int>> tasks, std::string* caught, SimTime* at) {
  try {
    co_await when_all(std::move(tasks));
    *caught = "no exception";
  } catch (const Planned& e) {
    *caught = e.what();
  }
  *at = world.now();
}

TEST(WhenAll, FirstExceptionInInputOrderAfterAllFinish) {
  std::vector<std::string> log;
  std::vector<int> finished;
  std::string caught;
  SimTime at = 0;
  Harness h;
  std::vector<Task<int>> tasks;
  tasks.push_back(timed_value(h.world, 5, 0, &finished));
  tasks.push_back(throw_after(h.world, 30, "second in time, first in input", &log));
  tasks.push_back(throw_after(h.world, 10, "first in time", &log));
  tasks.push_back(timed_value(h.world, 50, 3, &finished));
  h.world.tasks().spawn("join", join_and_catch(h.world, std::move(tasks), &caught, &at));
  h.run();
  EXPECT_EQ(caught, "second in time, first in input");
  EXPECT_EQ(log, (std::vector<std::string>{"first in time", "second in time, first in input"}));
  EXPECT_EQ(finished, (std::vector<int>{0, 3})) << "the exception must wait for every child";
  EXPECT_EQ(at, kStart + 50);
}

Task<void> void_child(sim::World& world, SimTime ms, bool fail, int* done) {
  co_await world.sleep_for(ms);
  ++*done;
  if (fail) throw Planned("void child " + std::to_string(ms));
}

Task<void> join_void(std::vector<Task<void>> tasks, std::string* caught) {
  try {
    co_await when_all(std::move(tasks));
    *caught = "none";
  } catch (const Planned& e) {
    *caught = e.what();
  }
}

TEST(WhenAll, VoidTasksJoinAndRethrowFirstInInputOrder) {
  int done = 0;
  std::string caught;
  Harness h;
  std::vector<Task<void>> ok;
  for (int i = 0; i < 4; ++i) ok.push_back(void_child(h.world, 10 * i, false, &done));
  h.world.tasks().spawn("ok", join_void(std::move(ok), &caught));
  h.run();
  EXPECT_EQ(caught, "none");
  EXPECT_EQ(done, 4);

  done = 0;
  std::vector<Task<void>> failing;
  failing.push_back(void_child(h.world, 40, true, &done));
  failing.push_back(void_child(h.world, 20, true, &done));
  failing.push_back(void_child(h.world, 60, false, &done));
  h.world.tasks().spawn("failing", join_void(std::move(failing), &caught));
  h.run();
  EXPECT_EQ(caught, "void child 40");
  EXPECT_EQ(done, 3);
}

// ---------------------------------------------------------------------------------------------
// Destruction of suspended frames

struct Probe {
  Lifetimes lifetimes;
  int resumed = 0;  // steps taken after a suspension: must stay 0 for cancelled chains
};

Task<void> chain_level3(sim::World& world, Probe* probe, SimTime ms) {
  Counted c(&probe->lifetimes);
  co_await world.sleep_for(ms);
  ++probe->resumed;
}

Task<void> chain_level2(sim::World& world, Probe* probe, SimTime ms) {
  Counted c(&probe->lifetimes);
  co_await chain_level3(world, probe, ms);
  ++probe->resumed;
}

Task<void> chain_level1(sim::World& world, Probe* probe, SimTime ms) {
  Counted c(&probe->lifetimes);
  co_await chain_level2(world, probe, ms);
  ++probe->resumed;
}

TEST(TaskDestruction, CancelFreesEveryFrameOfASuspendedChain) {
  Probe probe;
  Harness h;
  const uint64_t id = h.world.tasks().spawn("chain", chain_level1(h.world, &probe, 1000));
  ASSERT_TRUE(h.executor().run_one());  // start: runs down the chain to the sleep
  EXPECT_EQ(probe.lifetimes.made, 3);
  EXPECT_EQ(probe.lifetimes.destroyed, 0);
  EXPECT_EQ(h.executor().pending(), 1u) << "the sleep's timer";

  EXPECT_TRUE(h.world.tasks().cancel(id));
  EXPECT_EQ(probe.lifetimes.destroyed, 3) << "every frame of the chain must be destroyed";
  EXPECT_EQ(h.world.tasks().live(), 0u);
  EXPECT_EQ(h.executor().pending(), 0u) << "the sleep's timer must be withdrawn with its frame";

  EXPECT_EQ(h.run(), 0u);
  EXPECT_EQ(probe.resumed, 0);
  EXPECT_EQ(h.world.now(), kStart) << "nothing was left to advance the clock to";
  EXPECT_FALSE(h.world.tasks().cancel(id));
}

TEST(TaskDestruction, CancelAllFreesEveryChainAndLeavesOthersRunning) {
  Probe cancelled, survivor;
  Harness h;
  sim::TaskGroup group(h.executor());
  group.spawn("a", chain_level1(h.world, &cancelled, 1000));
  group.spawn("b", chain_level1(h.world, &cancelled, 2000));
  h.world.tasks().spawn("survivor", chain_level1(h.world, &survivor, 1500));
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(h.executor().run_one());
  EXPECT_EQ(cancelled.lifetimes.made, 6);
  EXPECT_EQ(h.executor().pending(), 3u);

  group.cancel_all();
  EXPECT_EQ(group.live(), 0u);
  EXPECT_EQ(cancelled.lifetimes.destroyed, 6);
  EXPECT_EQ(h.executor().pending(), 1u);

  EXPECT_EQ(h.run(), 1u) << "only the survivor's timer may run";
  EXPECT_EQ(cancelled.resumed, 0);
  EXPECT_EQ(survivor.resumed, 3);
  EXPECT_EQ(survivor.lifetimes.destroyed, 3);
  EXPECT_EQ(h.world.now(), kStart + 1500);
}

TEST(TaskDestruction, GroupDestructorFreesSuspendedChains) {
  Probe probe;
  Harness h;
  {
    sim::TaskGroup group(h.executor());
    group.spawn("a", chain_level1(h.world, &probe, 100));
    group.spawn("b", chain_level1(h.world, &probe, 100));
    ASSERT_TRUE(h.executor().run_one());
    ASSERT_TRUE(h.executor().run_one());
    EXPECT_EQ(probe.lifetimes.made, 6);
  }
  EXPECT_EQ(probe.lifetimes.destroyed, 6);
  EXPECT_EQ(h.run(), 0u);
  EXPECT_EQ(probe.resumed, 0);
}

// A canceller and a victim due at the same time: whichever order the executor picks, a victim
// whose timer is already in the ready set is never resumed once cancelled.
Task<void> cancel_later(sim::World& world, sim::TaskGroup* group, uint64_t victim, SimTime ms, int* result) {
  co_await world.sleep_for(ms);
  *result = group->cancel(victim) ? 1 : 0;
}

TEST(TaskDestruction, CancelWhileTheTimerIsDueNowNeverResumes) {
  bool saw_cancel_first = false, saw_victim_first = false;
  for (uint64_t seed = 0; seed < 32; ++seed) {
    NullSink sink;
    sim::World world(kStart, sim::RandomSource::recording(seed), sink);
    Probe probe;
    int result = -1;
    sim::TaskGroup group(world.executor());
    const uint64_t victim = group.spawn("victim", chain_level1(world, &probe, 10));
    world.tasks().spawn("canceller", cancel_later(world, &group, victim, 10, &result));
    world.run_until(INT64_MAX, [] { return true; });
    ASSERT_NE(result, -1);
    EXPECT_EQ(probe.lifetimes.made, 3);
    EXPECT_EQ(probe.lifetimes.destroyed, 3);
    if (result == 1) {
      saw_cancel_first = true;
      EXPECT_EQ(probe.resumed, 0) << "seed " << seed << ": a cancelled frame was resumed";
    } else {
      saw_victim_first = true;
      EXPECT_EQ(probe.resumed, 3) << "seed " << seed;
    }
    EXPECT_EQ(group.live(), 0u);
  }
  EXPECT_TRUE(saw_cancel_first && saw_victim_first) << "both same-time orders should occur over 32 seeds";
}

Task<void> fanout_child(sim::World& world, Probe* probe, SimTime ms) {
  Counted c(&probe->lifetimes);
  co_await world.sleep_for(ms);
  co_await world.sleep_for(ms);
  ++probe->resumed;
}

Task<void> fanout_root(sim::World& world, Probe* probe, std::vector<SimTime> delays) {
  Counted c(&probe->lifetimes);
  std::vector<Task<void>> children;
  for (SimTime ms : delays) children.push_back(fanout_child(world, probe, ms));
  co_await when_all(std::move(children));
  ++probe->resumed;
}

TEST(TaskDestruction, CancelSuspendedWhenAllFreesEveryChild) {
  Probe probe;
  Harness h;
  const uint64_t id = h.world.tasks().spawn("fanout", fanout_root(h.world, &probe, {100, 200, 300}));
  ASSERT_TRUE(h.executor().run_one());
  EXPECT_EQ(probe.lifetimes.made, 4);
  EXPECT_EQ(h.executor().pending(), 3u);

  EXPECT_TRUE(h.world.tasks().cancel(id));
  EXPECT_EQ(probe.lifetimes.destroyed, 4);
  EXPECT_EQ(h.executor().pending(), 0u);
  EXPECT_EQ(h.run(), 0u);
  EXPECT_EQ(probe.resumed, 0);
}

TEST(TaskDestruction, CancelWhenAllWithSomeChildrenFinished) {
  Probe probe;
  Harness h;
  const uint64_t id = h.world.tasks().spawn("fanout", fanout_root(h.world, &probe, {5, 10, 400, 500}));
  // Run until the two short children have finished (each sleeps twice), the long ones still asleep.
  h.world.run_until(kStart + 100, [] { return true; });
  EXPECT_EQ(probe.resumed, 2);
  EXPECT_EQ(probe.lifetimes.destroyed, 2) << "finished children's frames stay owned until the join ends, "
                                              "but their locals are gone";
  EXPECT_EQ(h.executor().pending(), 2u);

  EXPECT_TRUE(h.world.tasks().cancel(id));
  EXPECT_EQ(probe.lifetimes.destroyed, 5);
  EXPECT_EQ(h.executor().pending(), 0u);
  EXPECT_EQ(h.run(), 0u);
  EXPECT_EQ(probe.resumed, 2);
}

TEST(TaskDestruction, WorldDestructionFreesSuspendedRoots) {
  Probe probe;
  {
    Harness h;
    h.world.tasks().spawn("chain", chain_level1(h.world, &probe, 50));
    h.world.tasks().spawn("fanout", fanout_root(h.world, &probe, {10, 20}));
    ASSERT_TRUE(h.executor().run_one());
    ASSERT_TRUE(h.executor().run_one());
    EXPECT_EQ(probe.lifetimes.made, 6);
  }
  EXPECT_EQ(probe.lifetimes.destroyed, 6);
  EXPECT_EQ(probe.resumed, 0);
}

}  // namespace
}  // namespace durasim
