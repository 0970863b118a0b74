// What a checker knows of one object's storage, at the three depths of the runtime's durability
// protocol (runtime.md 4): `staged` (the open implicit transaction), `local` (every local commit of
// the live incarnation) and `durable` (the confirmed commits, plus the prefix of unconfirmed ones a
// durability decision kept). Every checker that follows stored state through commit, confirmation,
// rollback and reset uses this one tracker.
//
// A checker describes what a transaction changes as a list of `Edit`s, each applied by
// `State::apply(const Edit&)`, and may attach `Notes` to the open transaction: facts that count only
// once the transaction is durable (the occurrences a cancel removed, the records an append added),
// handed back when it becomes durable or vanishes. The tracker keeps only the unconfirmed suffix of
// edits: a commit costs the size of its change; a rollback or a durability decision costs one copy
// of a state.
//
// Keeps: `durable` holds exactly the edits of the confirmed or kept transactions, in commit order;
// `local` those plus every unconfirmed one; `staged` those plus the open transaction's.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

namespace durasim::properties {

struct NoNotes {};
// For a checker that follows no stored state, only what each transaction's notes say.
struct NoEdit {};
struct NoState {
  void apply(const NoEdit&) {}
};

template <class State, class Edit, class Notes = NoNotes>
class DurableState {
 public:
  struct Transaction {
    uint64_t commit = 0;
    std::vector<Edit> edits;
    Notes notes;
  };

  const State& staged() const { return staged_; }
  const State& local() const { return local_; }
  const State& durable() const { return durable_; }
  // The open transaction: its edits so far, and its notes (which the checker may fill in).
  const std::vector<Edit>& open_edits() const { return open_.edits; }
  Notes& notes() { return open_.notes; }
  // Local commits awaiting confirmation, oldest first.
  const std::deque<Transaction>& unconfirmed() const { return unconfirmed_; }
  // A statement of the open transaction failed: its savepoint may have undone some edits staged so
  // far, so `staged` is not to be trusted until the transaction ends.
  bool uncertain() const { return uncertain_; }

  // An edit made by the open transaction.
  void stage(Edit edit) {
    staged_.apply(edit);
    open_.edits.push_back(std::move(edit));
  }
  void statement_failed() { uncertain_ = true; }

  // `commit`: the open transaction becomes local commit `number`, awaiting confirmation.
  void commit(uint64_t number) {
    for (const Edit& edit : open_.edits) local_.apply(edit);
    open_.commit = number;
    unconfirmed_.push_back(std::move(open_));
    clear_open();
  }
  // `commit.noop`: the open transaction changed no stored page, so it is exactly as durable as the
  // state it read; its edits join the last unconfirmed commit (or the durable state).
  template <class OnDurable>
  void commit_unchanged(OnDurable&& on_durable) {
    for (const Edit& edit : open_.edits) local_.apply(edit);
    if (unconfirmed_.empty()) {
      for (const Edit& edit : open_.edits) durable_.apply(edit);
      on_durable(open_);
    } else {
      Transaction& last = unconfirmed_.back();
      for (Edit& edit : open_.edits) last.edits.push_back(std::move(edit));
      merge_notes(last.notes, std::move(open_.notes));
    }
    clear_open();
  }
  void commit_unchanged() {
    commit_unchanged([](const Transaction&) {});
  }
  // `commit.failed`, or the end of the incarnation: the open transaction is gone.
  void roll_back() {
    if (!open_.edits.empty()) staged_ = local_;
    clear_open();
  }
  // `confirm`: every local commit up to `number` is durable.
  template <class OnDurable>
  void confirm(uint64_t number, OnDurable&& on_durable) {
    while (!unconfirmed_.empty() && unconfirmed_.front().commit <= number) {
      for (const Edit& edit : unconfirmed_.front().edits) durable_.apply(edit);
      on_durable(unconfirmed_.front());
      unconfirmed_.pop_front();
    }
  }
  void confirm(uint64_t number) {
    confirm(number, [](const Transaction&) {});
  }
  // `durability`: the incarnation ended; its first `kept` unconfirmed commits are durable, the
  // others vanished; the next incarnation opens the durable state.
  template <class OnDurable, class OnVanished>
  void decide(std::size_t kept, OnDurable&& on_durable, OnVanished&& on_vanished) {
    for (std::size_t i = 0; i < unconfirmed_.size(); ++i) {
      if (i < kept) {
        for (const Edit& edit : unconfirmed_[i].edits) durable_.apply(edit);
        on_durable(unconfirmed_[i]);
      } else {
        on_vanished(unconfirmed_[i]);
      }
    }
    const bool changed = kept < unconfirmed_.size() || !open_.edits.empty();
    unconfirmed_.clear();
    clear_open();
    if (changed) local_ = staged_ = durable_;
  }
  void decide(std::size_t kept) {
    decide(kept, [](const Transaction&) {}, [](const Transaction&) {});
  }

 private:
  // Notes of a no-op transaction joining a commit: a Notes type with a `merge` member gets it called.
  static void merge_notes(Notes& into, Notes&& from) {
    if constexpr (requires { into.merge(std::move(from)); }) into.merge(std::move(from));
  }
  void clear_open() {
    open_ = Transaction{};
    uncertain_ = false;
  }

  State staged_, local_, durable_;
  Transaction open_;
  std::deque<Transaction> unconfirmed_;
  bool uncertain_ = false;
};

}  // namespace durasim::properties
