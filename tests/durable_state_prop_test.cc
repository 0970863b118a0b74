// The durable-state tracker (properties/durable_state.h) against the simplest model of the
// runtime's durability protocol: a full snapshot of the state after every local commit. For any
// sequence of edits, commits, no-op commits, rollbacks, confirmations and durability decisions, the
// tracker's three views equal the model's, and every commit is handed back exactly once, as durable
// or as vanished, in commit order.
#include <gtest/gtest.h>
#include <rapidcheck.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <deque>
#include <vector>

#include "properties/durable_state.h"

namespace durasim::properties {
namespace {

// A state whose value depends on the order of its edits.
struct Digits {
  std::vector<int> digits;
  void apply(const int& edit) {
    if (edit < 0 && !digits.empty()) digits.pop_back();
    else if (edit >= 0) digits.push_back(edit);
  }
  friend bool operator==(const Digits&, const Digits&) = default;
};

struct Notes {
  std::vector<int> ids;
  void merge(Notes&& other) { ids.insert(ids.end(), other.ids.begin(), other.ids.end()); }
};

// The model: snapshots, not edits.
struct Model {
  Digits staged, durable;
  std::vector<int> openIds;
  std::deque<std::pair<Digits, std::vector<int>>> unconfirmed;  // state after each commit, its note ids
  Digits local() const { return unconfirmed.empty() ? durable : unconfirmed.back().first; }
};

TEST(DurableState, AConfirmedCommitIsDurableAndAVanishedOneIsGone) {
  DurableState<Digits, int> state;
  state.stage(1);
  state.commit(1);
  state.stage(2);
  state.commit(2);
  state.stage(3);
  EXPECT_EQ(state.staged().digits, (std::vector<int>{1, 2, 3}));
  EXPECT_EQ(state.local().digits, (std::vector<int>{1, 2}));
  state.confirm(1);
  EXPECT_EQ(state.durable().digits, (std::vector<int>{1}));
  std::vector<uint64_t> vanished;
  state.decide(0, [](const auto&) {}, [&](const auto& txn) { vanished.push_back(txn.commit); });
  EXPECT_EQ(vanished, (std::vector<uint64_t>{2}));
  EXPECT_EQ(state.staged().digits, (std::vector<int>{1}));
  EXPECT_EQ(state.local().digits, (std::vector<int>{1}));
}

RC_GTEST_PROP(DurableState, MatchesSnapshotsOfEveryCommit, ()) {
  DurableState<Digits, int, Notes> state;
  Model model;
  std::vector<int> durableIds, vanishedIds;   // what the tracker handed back
  std::vector<int> modelDurable, modelVanished;
  uint64_t nextCommit = 1, confirmedUpTo = 0;
  int nextId = 0;
  const int steps = *rc::gen::inRange(1, 80);
  for (int step = 0; step < steps; ++step) {
    switch (*rc::gen::inRange(0, 7)) {
      case 0:
      case 1: {  // an edit, with a note
        const int edit = *rc::gen::inRange(-1, 10);
        state.stage(edit);
        state.notes().ids.push_back(nextId);
        model.staged.apply(edit);
        model.openIds.push_back(nextId++);
        break;
      }
      case 2:  // commit
        state.commit(nextCommit++);
        model.unconfirmed.emplace_back(model.staged, model.openIds);
        model.openIds.clear();
        break;
      case 3:  // commit.noop: joins the last unconfirmed commit, or is durable at once
        state.commit_unchanged([&](const auto& txn) { durableIds.insert(durableIds.end(), txn.notes.ids.begin(), txn.notes.ids.end()); });
        if (model.unconfirmed.empty()) {
          model.durable = model.staged;
          modelDurable.insert(modelDurable.end(), model.openIds.begin(), model.openIds.end());
        } else {
          model.unconfirmed.back().first = model.staged;
          auto& ids = model.unconfirmed.back().second;
          ids.insert(ids.end(), model.openIds.begin(), model.openIds.end());
        }
        model.openIds.clear();
        break;
      case 4:  // commit.failed
        state.roll_back();
        model.staged = model.local();
        model.openIds.clear();
        break;
      case 5: {  // confirm the oldest few
        if (model.unconfirmed.empty()) break;
        const auto count = *rc::gen::inRange<std::size_t>(1, model.unconfirmed.size() + 1);
        confirmedUpTo = nextCommit - model.unconfirmed.size() + count - 1;
        state.confirm(confirmedUpTo, [&](const auto& txn) { durableIds.insert(durableIds.end(), txn.notes.ids.begin(), txn.notes.ids.end()); });
        for (std::size_t i = 0; i < count; ++i) {
          model.durable = model.unconfirmed.front().first;
          modelDurable.insert(modelDurable.end(), model.unconfirmed.front().second.begin(), model.unconfirmed.front().second.end());
          model.unconfirmed.pop_front();
        }
        break;
      }
      case 6: {  // a durability decision at an incarnation's end
        const auto kept = *rc::gen::inRange<std::size_t>(0, model.unconfirmed.size() + 1);
        state.decide(
            kept, [&](const auto& txn) { durableIds.insert(durableIds.end(), txn.notes.ids.begin(), txn.notes.ids.end()); },
            [&](const auto& txn) { vanishedIds.insert(vanishedIds.end(), txn.notes.ids.begin(), txn.notes.ids.end()); });
        for (std::size_t i = 0; i < model.unconfirmed.size(); ++i) {
          auto& [snapshot, ids] = model.unconfirmed[i];
          if (i < kept) model.durable = snapshot;
          (i < kept ? modelDurable : modelVanished).insert((i < kept ? modelDurable : modelVanished).end(), ids.begin(), ids.end());
        }
        model.unconfirmed.clear();
        model.staged = model.durable;
        model.openIds.clear();
        break;
      }
    }
    RC_ASSERT(state.staged() == model.staged);
    RC_ASSERT(state.local() == model.local());
    RC_ASSERT(state.durable() == model.durable);
    RC_ASSERT(state.unconfirmed().size() == model.unconfirmed.size());
  }
  RC_ASSERT(durableIds == modelDurable);
  RC_ASSERT(vanishedIds == modelVanished);
}

}  // namespace
}  // namespace durasim::properties
