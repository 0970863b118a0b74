// The terminal progress bar; see progress.h.
#include "cli/progress.h"

#include <algorithm>

#include "cli/format.h"

namespace durasim::cli {
namespace {

constexpr int kBarWidth = 24;
constexpr auto kRedrawEvery = std::chrono::milliseconds(100);

std::string duration_text(double seconds) {
  const auto s = static_cast<uint64_t>(seconds + 0.5);
  if (s >= 3600) return format("%lluh%02llum", static_cast<unsigned long long>(s / 3600), static_cast<unsigned long long>(s % 3600 / 60));
  if (s >= 60) return format("%llum%02llus", static_cast<unsigned long long>(s / 60), static_cast<unsigned long long>(s % 60));
  return format("%llus", static_cast<unsigned long long>(s));
}

}  // namespace

Progress::Progress(std::ostream& out, uint64_t total, bool enabled) : out_(out), total_(total), enabled_(enabled) {}

std::string Progress::line(uint64_t done, uint64_t total, double elapsed_s) {
  const double fraction = total == 0 ? 1.0 : static_cast<double>(done) / static_cast<double>(total);
  const int filled = static_cast<int>(fraction * kBarWidth);
  std::string text = "[";
  text += std::string(static_cast<std::size_t>(filled), '#');
  text += std::string(static_cast<std::size_t>(kBarWidth - filled), '.');
  text += "]  ";
  text += with_commas(done) + "/" + with_commas(total) + " seeds";
  if (done == 0 || elapsed_s <= 0) return text;
  const double rate = static_cast<double>(done) / elapsed_s;
  text += "  " + format("%.1f", rate) + " seeds/s  ETA " + duration_text(static_cast<double>(total - done) / rate);
  return text;
}

void Progress::advance() {
  ++done_;
  if (!enabled_) return;
  const Clock::time_point now = Clock::now();
  if (done_ < total_ && now - drawn_at_ < kRedrawEvery) return;
  drawn_at_ = now;
  const std::string text = line(done_, total_, std::chrono::duration<double>(now - start_).count());
  out_ << '\r' << text;
  if (text.size() < drawn_width_) out_ << std::string(drawn_width_ - text.size(), ' ');
  out_ << std::flush;
  drawn_width_ = std::max(drawn_width_, text.size());
}

void Progress::clear() {
  if (!enabled_ || drawn_width_ == 0) return;
  out_ << '\r' << std::string(drawn_width_, ' ') << '\r' << std::flush;
  drawn_width_ = 0;
}

}  // namespace durasim::cli
