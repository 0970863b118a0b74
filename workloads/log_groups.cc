// The log workload's consumer groups: each reads every partition from its cursor, handles the page
// (an `app.consume` event, then the run's page handler if it has one: a page it could not handle is
// read again), then commits its nextOffset. After a LogTruncatedError
// (`app.consume.truncated`) a group resumes at bounds().oldestOffset when its offset was trimmed,
// else (a lost cold segment) at the next offset. A call whose outcome is uncertain leaves the
// group's position unknown: it asks its cursor again on the next round. Some commits are followed
// by a late commit of the page's start, which must not move the cursor back (LOG-06).
#include <optional>
#include <string>
#include <vector>

#include "engine/log_events.h"
#include "workloads/log_roles.h"

namespace durasim::workloads {
namespace {

constexpr uint32_t kLateCommitPpm = 50'000;  // after a commit, the page's start is committed again, late

struct GroupPosition {
  std::optional<int64_t> from;       // where the next read starts; unknown after an uncertain call
  std::optional<int64_t> committed;  // the durable cursor as last known
};

// The partition's bounds().oldestOffset, or nullopt when the call's outcome is uncertain.
Task<std::optional<int64_t>> oldestOffset(LogRun& run, const std::string& name) {
  Task<Reply> bounding = run.client->call(name, "bounds", nlohmann::json::object());
  const Reply bounds = co_await bounding;
  if (!bounds.ok()) co_return std::nullopt;
  co_return bounds.value.at("oldestOffset").get<int64_t>();
}

// The group's cursor, or the oldest readable offset for a group that never committed.
Task<std::optional<int64_t>> startOffset(LogRun& run, const std::string& name, const std::string& group,
                                         GroupPosition& position) {
  Task<Reply> asking = run.client->call(name, "cursor", JsonFields().add("consumer", group));
  const Reply cursor = co_await asking;
  if (!cursor.ok()) co_return std::nullopt;
  if (!cursor.value.is_null()) {
    position.committed = cursor.value.get<int64_t>();
    co_return position.committed;
  }
  Task<std::optional<int64_t>> locating = oldestOffset(run, name);
  co_return co_await locating;
}

// Where a group goes on after a read of `from` threw LogTruncatedError: to oldestOffset when `from`
// was trimmed, else (a cold segment holding `from` is lost) to the next offset, so readable
// segments between the lost one and the hot window are not skipped. nullopt: bounds unknown.
Task<std::optional<int64_t>> resumeAfterTruncation(LogRun& run, const std::string& name, int64_t from) {
  Task<std::optional<int64_t>> asking = oldestOffset(run, name);
  const std::optional<int64_t> oldest = co_await asking;
  if (!oldest) co_return std::nullopt;
  co_return from < *oldest ? *oldest : from + 1;
}

// One read-handle-commit step of `group` on partition `i`; returns whether it made progress.
Task<bool> consumeOnce(LogRun& run, ActorStream& ops, const std::string& group, int64_t i, GroupPosition& position) {
  const std::string name = partitionName(i);
  if (!position.from) {
    Task<std::optional<int64_t>> locating = startOffset(run, name, group, position);
    position.from = co_await locating;
    if (!position.from) co_return false;
  }
  const int64_t from = *position.from;
  Task<Reply> reading = run.client->call(name, "read", JsonFields().add("from", from).add("limit", ops.between(1, 2 * run.base.maxBatchSize)));
  const Reply page = co_await reading;
  if (page.failedWith("LogTruncatedError")) {
    ++run.counts.truncations;
    Task<std::optional<int64_t>> resuming = resumeAfterTruncation(run, name, from);
    const std::optional<int64_t> resume = co_await resuming;
    if (!resume) {
      position.from.reset();
      co_return false;
    }
    run.world->emit(log_events::kAppConsumeTruncated, {{"partition", partitionLabel(name)}, {"group", group},
                                              {"requested", page.value.at("requestedOffset")},
                                              {"oldest", page.value.at("oldestOffset")}, {"resume", *resume}});
    position.from = *resume;
    co_return true;
  }
  if (!page.ok()) {
    position.from.reset();
    co_return false;
  }
  const nlohmann::json& records = page.value.at("records");
  const int64_t next = page.value.at("nextOffset").get<int64_t>();
  if (!records.empty()) {
    nlohmann::json offsets = nlohmann::json::array();
    for (const nlohmann::json& r : records) offsets.push_back(r.at("offset"));
    run.counts.consumed += static_cast<int64_t>(records.size());
    run.world->emit(log_events::kAppConsume,
                    {{"partition", partitionLabel(name)}, {"group", group}, {"from", from}, {"offsets", std::move(offsets)}});
    if (run.handlePage) {
      Task<bool> handling = run.handlePage(name, records);
      if (!co_await handling) {
        position.from.reset();
        co_return false;
      }
    }
  }
  if (next <= position.committed.value_or(0)) co_return false;
  Task<Reply> committing = run.client->call(name, "commit", JsonFields().add("consumer", group).add("offset", next));
  const Reply committed = co_await committing;
  if (committed.ok()) {
    position.from = next;
    position.committed = next;
    if (ops.chance(kLateCommitPpm)) {  // the commit of the page's start, late: it must change nothing (LOG-06)
      Task<Reply> late = run.client->call(name, "commit", JsonFields().add("consumer", group).add("offset", from));
      (void)co_await late;
    }
  } else {
    position.from.reset();
  }
  co_return true;
}

}  // namespace

Task<void> consumerGroup(LogRun& run, int64_t g) {
  std::vector<GroupPosition> positions(static_cast<std::size_t>(run.partitions));
  ActorStream ops(run.world->random(), run.name, "group", g);
  const int64_t pollMs = LogRun::pollInterval(g, ops);
  int64_t idleMs = pollMs;
  for (;;) {
    bool worked = false;
    for (int64_t i = 0; i < run.partitions; ++i) {
      const std::string name = groupName(g);
      Task<bool> consuming = consumeOnce(run, ops, name, i, positions[static_cast<std::size_t>(i)]);
      worked = co_await consuming || worked;
    }
    idleMs = LogRun::nextPause(worked, pollMs, idleMs);
    co_await run.world->sleep_for(idleMs);
  }
}

}  // namespace durasim::workloads
