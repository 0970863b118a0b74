// The simulator's SQLite VFS (runtime.md 2.4): a database lives in an in-memory file image whose
// writes are tracked, so each local commit is captured as a page delta that replays exactly on the
// durable image (RT-05, RT-07); date('now') in SQL reads the simulated clock, never the wall clock.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <vector>

struct sqlite3;

namespace durasim::sim {

// How SQLite's randomness and clock are made deterministic (runtime.md 2.4).
struct SqlEnvironment {
  std::function<uint64_t()> random_bits;  // feeds random() and randomblob() (one draw per call)
  std::function<int64_t()> now_ms;        // feeds the VFS clock: date('now'), julianday('now'), ...
};

// What one transaction did to a database file: replayed on the image the transaction started from,
// it yields the image the transaction committed.
struct PageDelta {
  struct Chunk {
    int64_t offset = 0;
    std::string bytes;
  };
  int64_t min_size = 0;  // smallest file size reached: content past it was truncated away
  int64_t size = 0;      // file size at the end
  std::vector<Chunk> chunks;  // final content of every byte range written, disjoint, by offset

  int64_t payload_bytes() const;
  uint64_t hash() const;  // XXH3-64 of a canonical little-endian encoding
  void apply_to(std::string& image) const;
  // The same as applying each of `deltas` in turn, but a byte that a later delta writes again (or
  // truncates) is written only once, by the last.
  static void apply_in_order(std::span<const PageDelta> deltas, std::string& image);
};

// An in-memory database file that remembers which byte ranges changed since the last checkpoint.
class TrackedImage {
 public:
  explicit TrackedImage(std::string bytes = {});

  const std::string& bytes() const { return bytes_; }
  // New content with nothing pending.
  void replace(std::string bytes);
  // What changed since the last checkpoint (nullopt: nothing was written or truncated); checkpoints.
  std::optional<PageDelta> take_changes();
  // The content is back where the last checkpoint left it (a rollback restored it): checkpoints.
  void forget_changes();

  // File operations, called by the VFS.
  int64_t size() const { return static_cast<int64_t>(bytes_.size()); }
  bool read(void* out, int64_t n, int64_t offset) const;  // false on a short read (the rest zeroed)
  void write(const void* data, int64_t n, int64_t offset);
  void truncate(int64_t size);

 private:
  void checkpoint();

  std::string bytes_;
  std::map<int64_t, int64_t> written_;  // offset -> end of each write since the checkpoint
  int64_t min_size_ = 0;
  bool changed_ = false;
};

// Opens a connection whose main database is `image`, through the "durasim" VFS (registered once
// per process, never as the default), with journal_mode=MEMORY. The image must outlive the
// connection. Throws std::runtime_error if SQLite cannot open it.
sqlite3* open_image(TrackedImage& image);

// While alive, SQL run on this thread through the durasim VFS reads `env.now_ms()` as the current
// time; outside any scope the VFS falls back to the wrapped VFS's clock. Scopes nest.
class ClockScope {
 public:
  explicit ClockScope(const SqlEnvironment& env);
  ~ClockScope();
  ClockScope(const ClockScope&) = delete;
  ClockScope& operator=(const ClockScope&) = delete;

 private:
  const SqlEnvironment* previous_;
};

}  // namespace durasim::sim
