// Local parallelism for `durasim run --jobs N`: tasks run in forked worker processes, so whatever
// process-wide state the simulator, SQLite or the allocator keep is never shared between two runs
// at once. Each worker claims the next task from a counter in shared memory, runs it and writes its
// result, one line of text, to its own pipe; the parent hands the results on in task order. With one
// job nothing is forked: the tasks run in this process, through the same result lines.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

namespace durasim::cli {

inline constexpr unsigned kMaxJobs = 256;

// A worker that ended without reporting the task it had claimed.
struct LostTask {
  uint64_t task = 0;
  std::string why;  // "killed by signal 11", "exited with status 3"
};

// Runs tasks 0 .. count-1 with `run` (in the workers; its result must hold no newline) on `jobs`
// (1 ..kMaxJobs) processes, and calls `deliver` in this process with each task and its result, in
// task order. `deliver` returning false stops the campaign: the workers are terminated. Returns the
// first task whose worker died, after delivering every task before it. REQUIRES: no other thread
// runs in this process (fork copies only the caller's).
std::optional<LostTask> run_tasks(uint64_t count, unsigned jobs, const std::function<std::string(uint64_t)>& run,
                                  const std::function<bool(uint64_t, const std::string&)>& deliver);

}  // namespace durasim::cli
