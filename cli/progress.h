// A progress bar for long campaigns: seeds done of all, seeds per second and the time left, on one
// line of a terminal, redrawn at most ten times a second. Only when stderr is a terminal (the
// caller decides, with isatty); otherwise nothing is written, so logs and tests see no trace of it.
#pragma once

#include <chrono>
#include <cstdint>
#include <ostream>
#include <string>

namespace durasim::cli {

class Progress {
 public:
  // Draws to `out` only when `enabled`.
  Progress(std::ostream& out, uint64_t total, bool enabled);

  void advance();  // one more seed done
  void clear();    // erases the bar, before other output goes to the same terminal
  // "[#####.....]  120/700 seeds  8.6 seeds/s  ETA 1m07s"
  static std::string line(uint64_t done, uint64_t total, double elapsed_s);

 private:
  using Clock = std::chrono::steady_clock;
  std::ostream& out_;
  uint64_t total_;
  bool enabled_;
  uint64_t done_ = 0;
  Clock::time_point start_ = Clock::now(), drawn_at_{};
  std::size_t drawn_width_ = 0;  // what clear() must erase
};

}  // namespace durasim::cli
