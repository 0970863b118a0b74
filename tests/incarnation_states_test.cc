// IncarnationStates (properties/object_checker.h), the per-incarnation state of the FAN, OBX, SCH,
// ALM and RT checks: each (label, incarnation) has its own entry whatever order events ask in, the
// entry found last is found again, find() makes no entry, and a copy keeps to its own entries.
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

}  // namespace
}  // namespace durasim::properties
