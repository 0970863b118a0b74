// IncarnationStates and ObjectStates (properties/object_checker.h), the per-incarnation and
// per-object state of the checks: each key has its own entry whatever order events ask in, the
// entry found last is found again (and answers for no other key), find() makes no entry, and a copy
// of IncarnationStates keeps to its own entries.
#include <gtest/gtest.h>

#include <string>

#include "properties/object_checker.h"

namespace durasim::properties {
namespace {

TEST(IncarnationStates, EachLabelAndIncarnationHasItsOwnEntry) {
  IncarnationStates<int> states;
  states.at("Mailbox/a", 1) = 10;
  states.at("Mailbox/a", 2) = 20;  // same label, next incarnation
  states.at("Mailbox/b", 2) = 30;  // same incarnation, other label
  states.at("Mailbox/b", 2) += 1;  // the entry found last, again
  EXPECT_EQ(states.at("Mailbox/a", 1), 10);
  EXPECT_EQ(states.at("Mailbox/a", 2), 20);
  EXPECT_EQ(states.at("Mailbox/b", 2), 31);
  EXPECT_EQ(states.at("Mailbox/b", 1), 0);
  EXPECT_EQ(&states.at("Mailbox/a", 2), &states.at("Mailbox/a", 2));
}

TEST(IncarnationStates, FindMakesNoEntry) {
  IncarnationStates<int> states;
  EXPECT_EQ(states.find("Mailbox/a", 1), nullptr);
  EXPECT_EQ(states.find("Mailbox/a", 1), nullptr) << "a miss made no entry";
  states.at("Mailbox/a", 1) = 10;
  states.at("Mailbox/b", 1) = 20;
  ASSERT_NE(states.find("Mailbox/a", 1), nullptr);
  EXPECT_EQ(*states.find("Mailbox/a", 1), 10);
  EXPECT_EQ(states.find("Mailbox/a", 2), nullptr) << "the entry found last does not answer for another incarnation";
  EXPECT_EQ(states.find("Mailbox/c", 1), nullptr) << "nor for another label";
  EXPECT_EQ(states.find("Mailbox/b", 1), &states.at("Mailbox/b", 1));
  EXPECT_EQ(states.at("Mailbox/a", 2), 0);
  EXPECT_EQ(*states.find("Mailbox/a", 2), 0);
}

TEST(IncarnationStates, ACopyKeepsToItsOwnEntries) {
  IncarnationStates<int> states;
  states.at("Account/x", 1) = 5;
  IncarnationStates<int> copy(states);
  copy.at("Account/x", 1) = 6;
  EXPECT_EQ(states.at("Account/x", 1), 5);
  IncarnationStates<int> assigned;
  assigned.at("Account/y", 3) = 1;
  assigned = states;
  assigned.at("Account/x", 1) = 7;
  EXPECT_EQ(states.at("Account/x", 1), 5);
  EXPECT_EQ(assigned.at("Account/y", 3), 0);
}

TEST(ObjectStates, EachLabelHasItsOwnEntry) {
  ObjectStates<int> states;
  states["Mailbox/a"] = 10;
  states["Mailbox/b"] = 20;
  states["Mailbox/b"] += 1;  // the entry found last, again
  states["Mailbox/ab"] = 30;  // a label the last one is a prefix of
  EXPECT_EQ(states["Mailbox/a"], 10);
  EXPECT_EQ(states["Mailbox/b"], 21);
  EXPECT_EQ(states["Mailbox/ab"], 30);
  EXPECT_EQ(states["Mailbox/c"], 0);
  EXPECT_EQ(&states["Mailbox/a"], &states["Mailbox/a"]);
  ASSERT_EQ(states.all().size(), 4u);
  EXPECT_EQ(states.all().begin()->first, "Mailbox/a") << "every entry, in label order";
}

TEST(ObjectStates, FindMakesNoEntryAndTheLastFoundAnswersOnlyForItsLabel) {
  ObjectStates<int> states;
  EXPECT_EQ(states.find("Mailbox/a"), nullptr);
  EXPECT_TRUE(states.all().empty()) << "a miss made no entry";
  states["Mailbox/a"] = 10;
  states["Mailbox/b"] = 20;
  ASSERT_NE(states.find("Mailbox/a"), nullptr);
  EXPECT_EQ(*states.find("Mailbox/a"), 10);
  EXPECT_EQ(states.find("Mailbox/c"), nullptr) << "the entry found last does not answer for another label";
  EXPECT_EQ(states.find("Mailbox/b"), &states["Mailbox/b"]);
  EXPECT_EQ(states["Mailbox/a"], 10) << "after a miss, the entry found last is still its own label's";
  EXPECT_EQ(states.all().size(), 2u);
}

}  // namespace
}  // namespace durasim::properties
