// The durasim VFS and its tracked in-memory images (see sqlite_vfs.h). Keeps RT-05/RT-07 by making
// every byte a commit wrote visible to its PageDelta, and RT-01 by giving SQL the simulated clock.
#include "sim/sqlite_vfs.h"

#include <sqlite3.h>

#include <algorithm>
#include <cstring>
#include <iterator>
#include <stdexcept>
#include <utility>

#include "sim/hash.h"

namespace durasim::sim {
namespace {

constexpr char kVfsName[] = "durasim";
// Image files are named with this prefix; such names never reach the disk.
constexpr char kImagePrefix[] = "/durasim-image:";
constexpr char kImageName[] = "/durasim-image:main";
// Milliseconds from the julian-day epoch to the Unix epoch: the offset of xCurrentTimeInt64
// (sqlite3.h, "xCurrentTimeInt64": 2440587.5 days).
constexpr int64_t kJulianEpochUnixMs = 210'866'760'000'000;
constexpr double kMsPerDay = 86'400'000.0;

thread_local const SqlEnvironment* t_clock = nullptr;  // the innermost ClockScope of this thread
thread_local TrackedImage* t_opening = nullptr;        // the image open_image is attaching

// ---------------------------------------------------------------------------------------------
// The image file: what SQLite allocates for a main database opened through the durasim VFS.

struct ImageFile {
  sqlite3_file base;
  TrackedImage* image;
};

TrackedImage& image_of(sqlite3_file* file) { return *reinterpret_cast<ImageFile*>(file)->image; }

int image_close(sqlite3_file*) { return SQLITE_OK; }

int image_read(sqlite3_file* file, void* out, int n, sqlite3_int64 offset) {
  return image_of(file).read(out, n, offset) ? SQLITE_OK : SQLITE_IOERR_SHORT_READ;
}

int image_write(sqlite3_file* file, const void* data, int n, sqlite3_int64 offset) {
  image_of(file).write(data, n, offset);
  return SQLITE_OK;
}

int image_truncate(sqlite3_file* file, sqlite3_int64 size) {
  image_of(file).truncate(size);
  return SQLITE_OK;
}

int image_sync(sqlite3_file*, int) { return SQLITE_OK; }

int image_file_size(sqlite3_file* file, sqlite3_int64* size) {
  *size = image_of(file).size();
  return SQLITE_OK;
}

// One connection owns each image: every lock is granted at once.
int image_lock(sqlite3_file*, int) { return SQLITE_OK; }

int image_check_reserved_lock(sqlite3_file*, int* reserved) {
  *reserved = 0;
  return SQLITE_OK;
}

int image_file_control(sqlite3_file*, int, void*) { return SQLITE_NOTFOUND; }
int image_sector_size(sqlite3_file*) { return 0; }  // 0: SQLite's default sector size
int image_device_characteristics(sqlite3_file*) { return 0; }

const sqlite3_io_methods kImageMethods = {
    .iVersion = 1,
    .xClose = image_close,
    .xRead = image_read,
    .xWrite = image_write,
    .xTruncate = image_truncate,
    .xSync = image_sync,
    .xFileSize = image_file_size,
    .xLock = image_lock,
    .xUnlock = image_lock,
    .xCheckReservedLock = image_check_reserved_lock,
    .xFileControl = image_file_control,
    .xSectorSize = image_sector_size,
    .xDeviceCharacteristics = image_device_characteristics,
    // Version 1: no shared memory (WAL) and no memory mapping.
    .xShmMap = nullptr,
    .xShmLock = nullptr,
    .xShmBarrier = nullptr,
    .xShmUnmap = nullptr,
    .xFetch = nullptr,
    .xUnfetch = nullptr,
};

// ---------------------------------------------------------------------------------------------
// The VFS: the default VFS with image files, and a clock read from the running store's environment.

sqlite3_vfs* g_base = nullptr;  // the wrapped default VFS

bool is_image_name(const char* name) {
  return name != nullptr && std::strncmp(name, kImagePrefix, sizeof kImagePrefix - 1) == 0;
}

int vfs_open(sqlite3_vfs*, const char* name, sqlite3_file* file, int flags, int* out_flags) {
  if (!is_image_name(name)) return g_base->xOpen(g_base, name, file, flags, out_flags);
  // Journals of an image stay in memory (open_image sets journal_mode=MEMORY): only the main
  // database is a file.
  if ((flags & SQLITE_OPEN_MAIN_DB) == 0 || t_opening == nullptr) {
    file->pMethods = nullptr;
    return SQLITE_CANTOPEN;
  }
  auto* image_file = reinterpret_cast<ImageFile*>(file);
  image_file->base.pMethods = &kImageMethods;
  image_file->image = std::exchange(t_opening, nullptr);
  if (out_flags != nullptr) *out_flags = flags;
  return SQLITE_OK;
}

int vfs_delete(sqlite3_vfs*, const char* name, int sync_dir) {
  return is_image_name(name) ? SQLITE_OK : g_base->xDelete(g_base, name, sync_dir);
}

int vfs_access(sqlite3_vfs*, const char* name, int flags, int* result) {
  if (!is_image_name(name)) return g_base->xAccess(g_base, name, flags, result);
  *result = 0;  // no journal or WAL file of an image ever exists
  return SQLITE_OK;
}

int vfs_full_pathname(sqlite3_vfs*, const char* name, int n, char* out) {
  if (!is_image_name(name)) return g_base->xFullPathname(g_base, name, n, out);
  sqlite3_snprintf(n, out, "%s", name);
  return SQLITE_OK;
}

int vfs_current_time_int64(sqlite3_vfs*, sqlite3_int64* now) {
  if (t_clock == nullptr) return g_base->xCurrentTimeInt64(g_base, now);
  *now = kJulianEpochUnixMs + t_clock->now_ms();
  return SQLITE_OK;
}

int vfs_current_time(sqlite3_vfs* vfs, double* now) {
  sqlite3_int64 ms = 0;
  const int rc = vfs_current_time_int64(vfs, &ms);
  *now = static_cast<double>(ms) / kMsPerDay;
  return rc;
}

// Registers the durasim VFS on first use (thread-safe), not as the default. Methods not replaced
// here (dynamic loading, sleep, randomness, last error) are the default VFS's, which ignore the VFS
// pointer they are given.
sqlite3_vfs* durasim_vfs() {
  static sqlite3_vfs* const vfs = [] {
    static sqlite3_vfs ours;
    // No memory statistics: each allocation would take a global mutex. Possible only before SQLite
    // initialises (sqlite3_vfs_find does); if something else initialised it first, nothing changes.
    sqlite3_config(SQLITE_CONFIG_MEMSTATUS, 0);
    g_base = sqlite3_vfs_find(nullptr);
    ours = *g_base;
    ours.pNext = nullptr;
    ours.zName = kVfsName;
    ours.szOsFile = std::max(g_base->szOsFile, static_cast<int>(sizeof(ImageFile)));
    ours.xOpen = vfs_open;
    ours.xDelete = vfs_delete;
    ours.xAccess = vfs_access;
    ours.xFullPathname = vfs_full_pathname;
    ours.xCurrentTime = vfs_current_time;
    ours.xCurrentTimeInt64 = vfs_current_time_int64;
    if (sqlite3_vfs_register(&ours, 0) != SQLITE_OK) throw std::runtime_error("cannot register the durasim SQLite VFS");
    return &ours;
  }();
  return vfs;
}

void put_int64(std::string& out, int64_t value) {
  const auto bits = static_cast<uint64_t>(value);
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((bits >> (8 * i)) & 0xff));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// PageDelta

int64_t PageDelta::payload_bytes() const {
  int64_t total = 0;
  for (const Chunk& chunk : chunks) total += static_cast<int64_t>(chunk.bytes.size());
  return total;
}

uint64_t PageDelta::hash() const {
  std::string header;
  put_int64(header, min_size);
  put_int64(header, size);
  uint64_t state = xxh3_64(header);
  for (const Chunk& chunk : chunks) {
    std::string position;
    put_int64(position, chunk.offset);
    put_int64(position, static_cast<int64_t>(chunk.bytes.size()));
    state = xxh3_64(chunk.bytes, xxh3_64(position, state));
  }
  return state;
}

void PageDelta::apply_to(std::string& image) const {
  image.resize(static_cast<std::size_t>(min_size));
  image.resize(static_cast<std::size_t>(size));
  for (const Chunk& chunk : chunks) image.replace(static_cast<std::size_t>(chunk.offset), chunk.bytes.size(), chunk.bytes);
}

namespace {

// The byte ranges of an image of `size` bytes whose final content is known.
class DecidedBytes {
 public:
  explicit DecidedBytes(int64_t size) : size_(size) {}

  // Calls `fill(begin, end)` for each undecided range within [begin, end), then marks it decided.
  template <class Fill>
  void decide(int64_t begin, int64_t end, Fill fill) {
    end = std::min(end, size_);
    if (begin >= end) return;
    int64_t at = begin;
    auto it = ranges_.upper_bound(begin);
    if (it != ranges_.begin() && std::prev(it)->second > begin) --it;
    for (; it != ranges_.end() && it->first < end; ++it) {
      if (it->first > at) fill(at, it->first);
      at = std::max(at, it->second);
    }
    if (at < end) fill(at, end);
    mark(begin, end);
  }

 private:
  void mark(int64_t begin, int64_t end) {
    auto it = ranges_.upper_bound(begin);
    if (it != ranges_.begin() && std::prev(it)->second >= begin) {
      --it;
      begin = it->first;
    }
    while (it != ranges_.end() && it->first <= end) {
      end = std::max(end, it->second);
      it = ranges_.erase(it);
    }
    ranges_.emplace(begin, end);
  }

  int64_t size_;
  std::map<int64_t, int64_t> ranges_;  // begin -> end, disjoint and not touching
};

}  // namespace

// Walking the deltas from the last, a byte is written by the last delta that decided it: by a
// chunk, or zeroed by a truncation below it (the delta's chunks come after its truncation). A byte
// no delta decided keeps the image's content.
void PageDelta::apply_in_order(std::span<const PageDelta> deltas, std::string& image) {
  if (deltas.empty()) return;
  const int64_t size = deltas.back().size;
  image.resize(static_cast<std::size_t>(size));
  DecidedBytes decided(size);
  for (auto delta = deltas.rbegin(); delta != deltas.rend(); ++delta) {
    for (const Chunk& chunk : delta->chunks)
      decided.decide(chunk.offset, chunk.offset + static_cast<int64_t>(chunk.bytes.size()), [&](int64_t begin, int64_t end) {
        std::memcpy(image.data() + begin, chunk.bytes.data() + (begin - chunk.offset), static_cast<std::size_t>(end - begin));
      });
    decided.decide(delta->min_size, size, [&](int64_t begin, int64_t end) {
      std::memset(image.data() + begin, 0, static_cast<std::size_t>(end - begin));
    });
  }
}

// ---------------------------------------------------------------------------------------------
// TrackedImage

TrackedImage::TrackedImage(std::string bytes) : bytes_(std::move(bytes)) { checkpoint(); }

void TrackedImage::replace(std::string bytes) {
  bytes_ = std::move(bytes);
  checkpoint();
}

void TrackedImage::checkpoint() {
  written_.clear();
  min_size_ = size();
  changed_ = false;
}

std::optional<PageDelta> TrackedImage::take_changes() {
  if (!changed_) return std::nullopt;
  PageDelta delta;
  delta.min_size = min_size_;
  delta.size = size();
  for (auto [offset, end] : written_) {
    end = std::min(end, size());
    if (offset >= end) continue;
    if (!delta.chunks.empty()) {
      PageDelta::Chunk& last = delta.chunks.back();
      const int64_t last_end = last.offset + static_cast<int64_t>(last.bytes.size());
      if (offset <= last_end) {
        if (end > last_end) last.bytes.append(bytes_, static_cast<std::size_t>(last_end), static_cast<std::size_t>(end - last_end));
        continue;
      }
    }
    delta.chunks.push_back({offset, bytes_.substr(static_cast<std::size_t>(offset), static_cast<std::size_t>(end - offset))});
  }
  checkpoint();
  return delta;
}

void TrackedImage::forget_changes() { checkpoint(); }

bool TrackedImage::read(void* out, int64_t n, int64_t offset) const {
  const int64_t available = std::clamp<int64_t>(size() - offset, 0, n);
  if (available > 0) std::memcpy(out, bytes_.data() + offset, static_cast<std::size_t>(available));
  std::memset(static_cast<char*>(out) + available, 0, static_cast<std::size_t>(n - available));
  return available == n;
}

void TrackedImage::write(const void* data, int64_t n, int64_t offset) {
  if (offset + n > size()) bytes_.resize(static_cast<std::size_t>(offset + n));
  std::memcpy(bytes_.data() + offset, data, static_cast<std::size_t>(n));
  int64_t& end = written_[offset];
  end = std::max(end, offset + n);
  changed_ = true;
}

void TrackedImage::truncate(int64_t new_size) {
  bytes_.resize(static_cast<std::size_t>(new_size));
  min_size_ = std::min(min_size_, new_size);
  changed_ = true;
}

// ---------------------------------------------------------------------------------------------
// Opening and the clock

sqlite3* open_image(TrackedImage& image) {
  sqlite3_vfs* vfs = durasim_vfs();
  t_opening = &image;
  sqlite3* db = nullptr;
  const int flags = SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX | SQLITE_OPEN_EXRESCODE;
  int rc = sqlite3_open_v2(kImageName, &db, flags, vfs->zName);
  const bool attached = t_opening == nullptr;  // SQLite opens the main database file eagerly
  t_opening = nullptr;
  // The image is the whole database: journals stay in memory and never reach the VFS.
  if (rc == SQLITE_OK && attached) rc = sqlite3_exec(db, "PRAGMA journal_mode = MEMORY", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK || !attached) {
    const std::string message = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    throw std::runtime_error("cannot open an SQLite image: " + message);
  }
  return db;
}

ClockScope::ClockScope(const SqlEnvironment& env) : previous_(std::exchange(t_clock, &env)) {}

ClockScope::~ClockScope() { t_clock = previous_; }

}  // namespace durasim::sim
