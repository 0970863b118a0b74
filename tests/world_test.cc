// The World's promise to its observers (sim/world.h): an observer that draws a choice or schedules
// an event while it handles an event stops the run with an error, in every build; one that only
// reads is free to.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>

#include "sim/world.h"

namespace durasim::sim {
namespace {

struct NullSink final : TraceSink {
  void record(const sim::TraceEvent&) override {}
};

// An observer that runs `act` on every event.
struct Acting final : TraceSink {
  std::function<void()> act;
  int seen = 0;
  void record(const sim::TraceEvent&) override {
    ++seen;
    if (act) act();
  }
};

struct WorldRig {
  NullSink sink;
  World world{kDefaultStartTime, RandomSource::recording(7), sink};
  Acting observer;
  WorldRig() { world.observe(observer); }
};

TEST(WorldObservers, AnObserverThatOnlyReadsIsFine) {
  WorldRig rig;
  rig.observer.act = [&] { (void)rig.world.now(); };
  rig.world.emit("x", {{"a", 1}});
  EXPECT_EQ(rig.observer.seen, 1);
}

TEST(WorldObservers, AnObserverThatDrawsStopsTheRun) {
  WorldRig rig;
  const StreamId stream = rig.world.random().stream("checker");
  rig.observer.act = [&] { rig.world.random().below(stream, 10); };
  try {
    rig.world.emit("commit", {{"a", 1}});
    FAIL() << "a drawing observer must be refused";
  } catch (const std::logic_error& e) {
    EXPECT_NE(std::string(e.what()).find("observer of a 'commit' event drew a choice or scheduled an event"), std::string::npos) << e.what();
  }
}

TEST(WorldObservers, AnObserverThatSchedulesStopsTheRun) {
  WorldRig rig;
  rig.observer.act = [&] { rig.world.executor().after(5, [] {}); };
  EXPECT_THROW(rig.world.emit("confirm", {{"a", 1}}), std::logic_error);
}

}  // namespace
}  // namespace durasim::sim
