// SqliteStore against a reference model of runtime.md 4.2/4.5: random writes, local commits,
// in-order confirmations and durability decisions; the live state always equals the model's, and
// decide(j) leaves exactly the confirmed commits plus the first j unconfirmed ones (RT-05/06/07).
#include <gtest/gtest.h>
#include <rapidcheck/gtest.h>

#include <cstdint>
#include <deque>
#include <map>
#include <optional>
#include <tuple>
#include <vector>

#include "sim/sqlite_store.h"

namespace durasim::sim {
namespace {

constexpr int kMaxSteps = 30;  // bounded: RapidCheck has no shrink time limit (TOOLCHAIN.md)
constexpr int kKeys = 5;
constexpr int kValues = 100;

enum Kind { kWrite, kWrite2, kWrite3, kErase, kCommit, kCommit2, kConfirm, kDecide, kKindCount };
using Step = std::tuple<int, int, int>;  // (kind, key, value or decision draw)
using State = std::map<int64_t, int64_t>;

// What runtime.md 4.2/4.5 promise, with no SQLite: snapshots per unconfirmed commit.
struct Model {
  State durable;
  std::deque<State> unconfirmed;  // the state after each unconfirmed commit, in commit order
  std::optional<State> open;      // the live state while an implicit transaction is open
  uint64_t last_number = 0;

  State committed() const { return unconfirmed.empty() ? durable : unconfirmed.back(); }
  State live() const { return open ? *open : committed(); }
  // The open transaction changed what the store holds, so its commit must be a local commit. One
  // that changed nothing may commit or not: SQLite writes a page back unchanged in some cases (a
  // row overwritten with its own bytes) and leaves it alone in others.
  bool open_changed() const { return open && *open != committed(); }
  State& begin() {
    if (!open) open = live();
    return *open;
  }
};

State read_state(SqliteStore& store) {
  State state;
  for (const SqlRow& row : store.exec("SELECT k, v FROM kv").toVector()) state[row.int64("k")] = row.int64("v");
  return state;
}

void apply(SqliteStore& store, Model& model, const Step& step) {
  const auto [kind, key, value] = step;
  switch (kind) {
    case kWrite:
    case kWrite2:
    case kWrite3:
      store.exec("INSERT OR REPLACE INTO kv(k, v) VALUES(?, ?)", {int64_t{key}, int64_t{value}});
      model.begin()[key] = value;
      return;
    case kErase: {
      store.exec("DELETE FROM kv WHERE k = ?", {int64_t{key}});
      model.begin().erase(key);
      return;
    }
    case kCommit:
    case kCommit2: {
      const std::optional<LocalCommit> commit = store.commit_local();
      RC_ASSERT(commit.has_value() || !model.open_changed());
      if (commit) {
        RC_ASSERT(model.open.has_value());
        RC_ASSERT(commit->number == ++model.last_number);
        model.unconfirmed.push_back(*model.open);
      }
      model.open.reset();
      return;
    }
    case kConfirm:
      if (model.unconfirmed.empty()) return;
      store.confirm(store.unconfirmed().front());
      model.durable = model.unconfirmed.front();
      model.unconfirmed.pop_front();
      return;
    default: {  // kDecide: keep a prefix chosen by `value`
      const std::size_t keep = static_cast<std::size_t>(value) % (model.unconfirmed.size() + 1);
      store.decide(keep);
      if (keep > 0) model.durable = model.unconfirmed[keep - 1];
      model.unconfirmed.clear();
      model.open.reset();
      RC_ASSERT(read_state(store) == model.durable);
      RC_ASSERT(store.live_digest() == store.durable_digest());
      return;
    }
  }
}

RC_GTEST_PROP(SqliteStoreProp, LiveStateFollowsTheModelAndDecideKeepsAPrefix, ()) {
  const auto step = rc::gen::tuple(rc::gen::inRange(0, static_cast<int>(kKindCount)), rc::gen::inRange(0, kKeys),
                                   rc::gen::inRange(0, kValues));
  const int length = *rc::gen::inRange(0, kMaxSteps + 1);
  const std::vector<Step> steps = *rc::gen::container<std::vector<Step>>(static_cast<std::size_t>(length), step);

  uint64_t bits = 1;
  SqliteStore store(SqlEnvironment{[&bits] { return bits++; }, [] { return int64_t{0}; }});
  store.exec("CREATE TABLE kv(k INTEGER PRIMARY KEY, v INTEGER NOT NULL)");
  store.confirm(store.commit_local()->number);
  Model model;
  model.last_number = 1;
  for (const Step& s : steps) {
    apply(store, model, s);
    RC_ASSERT(read_state(store) == model.live());
    RC_ASSERT(store.in_transaction() == model.open.has_value());
  }
}

}  // namespace
}  // namespace durasim::sim
