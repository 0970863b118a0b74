// Cancellation tokens (scheduler.md 1): the library aborts a signal on timeout or purge; handlers may
// observe it, and nothing is ever forcibly stopped. The first abort wins; later ones change nothing.
#pragma once

#include <exception>
#include <memory>

namespace durasim {

class AbortSignal {
 public:
  AbortSignal() : state_(std::make_shared<State>()) {}
  bool aborted() const { return state_->aborted; }
  std::exception_ptr reason() const { return state_->reason; }

 private:
  friend class AbortSource;
  struct State {
    bool aborted = false;
    std::exception_ptr reason;
  };
  std::shared_ptr<State> state_;
};

class AbortSource {
 public:
  AbortSignal signal() const { return signal_; }
  void abort(std::exception_ptr reason) {
    if (signal_.state_->aborted) return;
    signal_.state_->aborted = true;
    signal_.state_->reason = std::move(reason);
  }

 private:
  AbortSignal signal_;
};

}  // namespace durasim
