// Forked workers for `durasim run --jobs N`; see workers.h.
#include "cli/workers.h"

#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iostream>
#include <map>
#include <stdexcept>
#include <thread>
#include <vector>

namespace durasim::cli {
namespace {

// How far past the first undelivered task the workers may run, per job: bounds the results the
// parent holds while one slow seed is still running.
constexpr uint64_t kLookaheadPerJob = 64;
constexpr uint64_t kNoTask = UINT64_MAX;
constexpr int kWorkerFailedStatus = 70;  // a worker's task threw; it said why on stderr

// The counters the workers and the parent share (an anonymous shared mapping; lock-free atomics
// work across processes).
struct Shared {
  std::atomic<uint64_t> next{0};       // the next task to claim
  std::atomic<uint64_t> delivered{0};  // tasks the parent has handed on
  std::atomic<uint64_t> current[kMaxJobs];  // the task each worker runs, kNoTask between tasks
};
static_assert(std::atomic<uint64_t>::is_always_lock_free);

class SharedMapping {
 public:
  SharedMapping() {
    void* memory = mmap(nullptr, sizeof(Shared), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (memory == MAP_FAILED) throw std::runtime_error(std::string("cannot map shared memory for the workers: ") + std::strerror(errno));
    shared_ = new (memory) Shared;
    for (auto& slot : shared_->current) slot.store(kNoTask);
  }
  ~SharedMapping() { munmap(shared_, sizeof(Shared)); }
  SharedMapping(const SharedMapping&) = delete;
  SharedMapping& operator=(const SharedMapping&) = delete;
  Shared& operator*() const { return *shared_; }

 private:
  Shared* shared_ = nullptr;
};

bool write_all(int fd, const std::string& text) {
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// A worker: claims tasks until none is left, writing "<task> <result>\n" for each. Never returns.
[[noreturn]] void work(Shared& shared, unsigned slot, int fd, uint64_t count, uint64_t lookahead,
                       const std::function<std::string(uint64_t)>& run) {
  try {
    for (uint64_t k = shared.next.fetch_add(1); k < count; k = shared.next.fetch_add(1)) {
      shared.current[slot].store(k);
      while (k >= shared.delivered.load() + lookahead) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      std::string line = std::to_string(k);
      line += ' ' + run(k) + '\n';
      if (!write_all(fd, line)) _exit(kWorkerFailedStatus);  // the parent is gone
      shared.current[slot].store(kNoTask);
    }
  } catch (const std::exception& e) {
    std::cerr << "durasim worker: " << e.what() << std::endl;
    _exit(kWorkerFailedStatus);
  }
  close(fd);
  _exit(0);  // not exit(): the parent's buffers and static objects are the parent's to flush
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) return "killed by signal " + std::to_string(WTERMSIG(status)) + " (" + strsignal(WTERMSIG(status)) + ")";
  return "exited with status " + std::to_string(WEXITSTATUS(status));
}

struct Worker {
  pid_t pid = 0;
  int fd = -1;
  unsigned slot = 0;
  std::string buffer;  // the start of a line not yet complete
};

// The workers of one campaign, from their start to their last result.
class Pool {
 public:
  explicit Pool(uint64_t count) : count_(count) {}
  ~Pool() {
    for (const Worker& w : workers_) kill(w.pid, SIGTERM);
    for (const Worker& w : workers_) reap(w);
  }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

  void start(unsigned jobs, const std::function<std::string(uint64_t)>& run) {
    const uint64_t lookahead = kLookaheadPerJob * jobs;
    for (unsigned slot = 0; slot < jobs; ++slot) {
      int fds[2];
      if (pipe(fds) != 0) throw std::runtime_error(std::string("cannot create a pipe for a worker: ") + std::strerror(errno));
      const pid_t pid = fork();
      if (pid < 0) {
        close(fds[0]);
        close(fds[1]);
        throw std::runtime_error(std::string("cannot start a worker process: ") + std::strerror(errno));
      }
      if (pid == 0) {
        close(fds[0]);
        for (const Worker& earlier : workers_) close(earlier.fd);
        work(*shared_, slot, fds[1], count_, lookahead, run);
      }
      close(fds[1]);
      workers_.push_back({pid, fds[0], slot, {}});
    }
  }

  std::optional<LostTask> drive(const std::function<bool(uint64_t, const std::string&)>& deliver) {
    while (!workers_.empty()) {
      std::vector<pollfd> fds;
      for (const Worker& w : workers_) fds.push_back({w.fd, POLLIN, 0});
      if (poll(fds.data(), fds.size(), -1) < 0) {
        if (errno == EINTR) continue;
        throw std::runtime_error(std::string("poll failed: ") + std::strerror(errno));
      }
      for (std::size_t i = fds.size(); i-- > 0;)
        if (fds[i].revents != 0) read_from(i);
      if (!deliver_ready(deliver)) return std::nullopt;
      if (lost_ && lost_->task == delivered_) return lost_;
    }
    if (delivered_ < count_) return LostTask{delivered_, death_.value_or("no worker reported it")};
    return std::nullopt;
  }

 private:
  // Reads what worker `i` wrote; at its end, reaps it and notes the task it died in, if any.
  void read_from(std::size_t i) {
    Worker& w = workers_[i];
    char chunk[1 << 16];
    const ssize_t n = read(w.fd, chunk, sizeof chunk);
    if (n < 0 && errno == EINTR) return;
    if (n > 0) {
      w.buffer.append(chunk, static_cast<std::size_t>(n));
      for (auto newline = w.buffer.find('\n'); newline != std::string::npos; newline = w.buffer.find('\n')) {
        take_line(w.buffer.substr(0, newline));
        w.buffer.erase(0, newline + 1);
      }
      return;
    }
    const int status = reap(w);
    if (!(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
      const std::string why = "a worker process " + describe_status(status);
      if (!death_) death_ = why;
      const uint64_t task = (*shared_).current[w.slot].load();
      if (task != kNoTask && (!lost_ || task < lost_->task)) lost_ = LostTask{task, why};
    }
    workers_.erase(workers_.begin() + static_cast<std::ptrdiff_t>(i));
  }

  void take_line(const std::string& line) {
    const auto space = line.find(' ');
    ready_[std::stoull(line.substr(0, space))] = line.substr(space + 1);
  }

  bool deliver_ready(const std::function<bool(uint64_t, const std::string&)>& deliver) {
    for (auto it = ready_.begin(); it != ready_.end() && it->first == delivered_; it = ready_.erase(it)) {
      if (!deliver(it->first, it->second)) return false;
      (*shared_).delivered.store(++delivered_);
    }
    return true;
  }

  static int reap(const Worker& w) {
    close(w.fd);
    int status = 0;
    while (waitpid(w.pid, &status, 0) < 0 && errno == EINTR) {
    }
    return status;
  }

  uint64_t count_;
  SharedMapping shared_;
  std::vector<Worker> workers_;
  std::map<uint64_t, std::string> ready_;  // results that arrived before an earlier one
  uint64_t delivered_ = 0;
  std::optional<LostTask> lost_;     // the earliest task a worker died in
  std::optional<std::string> death_;  // why the first worker that died did
};

}  // namespace

std::optional<LostTask> run_tasks(uint64_t count, unsigned jobs, const std::function<std::string(uint64_t)>& run,
                                  const std::function<bool(uint64_t, const std::string&)>& deliver) {
  if (jobs < 1 || jobs > kMaxJobs) throw std::invalid_argument("--jobs must be in [1, " + std::to_string(kMaxJobs) + "]");
  if (jobs == 1) {
    for (uint64_t k = 0; k < count; ++k)
      if (!deliver(k, run(k))) break;
    return std::nullopt;
  }
  Pool pool(count);
  pool.start(static_cast<unsigned>(std::min<uint64_t>(jobs, count)), run);
  return pool.drive(deliver);
}

}  // namespace durasim::cli
