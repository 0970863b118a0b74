// model/events_model against events.md: emit idempotence and depth, one pass per rule (pending
// index, frontier, attempts, quarantine), releases and their outcomes, the dead-letter listing.
#include <gtest/gtest.h>

#include <limits>

#include "model/events_model.h"

namespace durasim::model {
namespace {

using nlohmann::json;

EvtConsumerConfig consumer(double maxAttempts, int64_t delay) {
  return EvtConsumerConfig{"t", "c", maxAttempts, [delay](int64_t) { return delay; }};
}

TEST(EventsModel, EmitIsIdempotentAndBoundedByDepth) {
  EventsModel m;
  EXPECT_TRUE(m.emit("t", "a", "1", std::nullopt).inserted);
  EXPECT_FALSE(m.emit("t", "a", "2", 1).inserted);  // a re-emit is never refused
  EXPECT_FALSE(m.emit("t", "a", "2", 1).refused);
  const EventsModel::EmitResult full = m.emit("t", "b", "3", 1);
  EXPECT_TRUE(full.refused);
  EXPECT_EQ(full.depth, 1);
  EXPECT_EQ(m.topics().at("t").size(), 1u);
  EXPECT_EQ(m.topics().at("t")[0].payload, "1");
}

TEST(EventsModel, AFailingEventWaitsInThePendingIndexAndTheFrontierMovesOn) {
  EventsModel m;
  for (const char* id : {"a", "b", "c"}) m.emit("t", id, "", std::nullopt);
  const EvtConsumerConfig c = consumer(3, 1'000);
  EventsModel::PollResult p = m.poll(c, 0, [](const std::string& id) { return id == "b"; });
  EXPECT_EQ(p.delivered, 2);
  EXPECT_EQ(p.calls, (std::vector<std::string>{"a", "b", "c"}));
  const EvtConsumer& s = m.consumers().at({"t", "c"});
  EXPECT_EQ(s.frontier, 3);
  EXPECT_EQ(s.pending.count("b"), 1u);
  EXPECT_EQ(s.attempts.at("b"), (json{{"n", 1}, {"firstAt", 0}, {"nextAt", 1000}}));
  EXPECT_TRUE(m.poll(c, 999, [](const std::string&) { return false; }).calls.empty());  // never early
  p = m.poll(c, 1'000, [](const std::string&) { return false; });
  EXPECT_EQ(p.delivered, 1);
  EXPECT_TRUE(m.consumers().at({"t", "c"}).pending.empty());
}

TEST(EventsModel, QuarantineAfterMaxAttemptsThenReleaseAndDelivery) {
  EventsModel m;
  m.emit("t", "a", "", std::nullopt);
  const EvtConsumerConfig c = consumer(2, 0);
  auto always = [](const std::string&) { return true; };
  m.poll(c, 0, always);
  m.poll(c, 0, always);
  EXPECT_EQ(m.listDead("t", "c"), (std::vector<EventsModel::Dead>{{"a", "quarantined", 2, 0}}));
  EXPECT_TRUE(m.consumers().at({"t", "c"}).pending.empty());
  EXPECT_TRUE(m.poll(c, 100, always).calls.empty());  // quarantined means silent
  EXPECT_EQ(m.release("t", "c", "a", 0), EventsModel::Release::released);  // time 0 is a time
  EXPECT_EQ(m.consumers().at({"t", "c"}).attempts.at("a"), (json{{"n", 0}, {"nextAt", 0}, {"gen", "1@0"}}));
  EXPECT_EQ(m.listDead("t", "c")[0].status, "released");
  EXPECT_EQ(m.release("t", "c", "a", 5), EventsModel::Release::released);  // re-release: releases 2
  EXPECT_EQ(m.poll(c, 5, [](const std::string&) { return false; }).delivered, 1);
  EXPECT_EQ(m.listDead("t", "c"), (std::vector<EventsModel::Dead>{{"a", "delivered", 2, 2}}));
  EXPECT_EQ(m.release("t", "c", "a", 6), EventsModel::Release::alreadyDelivered);
  EXPECT_EQ(m.release("t", "c", "zzz", 6), EventsModel::Release::notQuarantined);
}

TEST(EventsModel, ReleaseIntoABrokenHandlerCountsFromTheRelease) {
  EventsModel m;
  m.emit("t", "a", "", std::nullopt);
  const EvtConsumerConfig c = consumer(2, 0);
  auto always = [](const std::string&) { return true; };
  m.poll(c, 0, always);
  m.poll(c, 0, always);
  m.release("t", "c", "a", 10);
  m.poll(c, 10, always);
  EXPECT_EQ(m.consumers().at({"t", "c"}).attempts.at("a"), (json{{"n", 1}, {"firstAt", 10}, {"nextAt", 10}, {"gen", "1@10"}}));
  m.poll(c, 10, always);
  const json dead = m.consumers().at({"t", "c"}).dead.at("a");
  EXPECT_EQ(dead.at("attempts"), 2);
  EXPECT_EQ(dead.at("releases"), 1);
  EXPECT_FALSE(dead.contains("releasedAt"));
}

TEST(EventsModel, DefaultDelaysAndStamps) {
  EXPECT_EQ(eventsDefaultDelay(1), 60'000);
  EXPECT_EQ(eventsDefaultDelay(6), 1'920'000);
  EXPECT_EQ(eventsDefaultDelay(7), 3'600'000);
  EXPECT_EQ(eventsStamp(std::nullopt), "0@-");
  EXPECT_EQ(eventsStamp(json{{"releases", 3}, {"releasedAt", 0}}), "3@0");
  EventsModel m;
  m.emit("t", "a", "", std::nullopt);
  const EvtConsumerConfig forever{"t", "c", std::numeric_limits<double>::infinity(), {}};
  for (int i = 0; i < 20; ++i) m.poll(forever, int64_t{i} * 3'600'000, [](const std::string&) { return true; });
  EXPECT_TRUE(m.consumers().at({"t", "c"}).dead.empty());
}

}  // namespace
}  // namespace durasim::model
