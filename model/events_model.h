// Executable spec of the event bus's durable state (events.md 4-9) for one poller per consumer:
// the topic logs, and per consumer (topic, name) its ack markers, attempt records, dead records,
// frontier, pending index and dead-letter index, with the store-wide sequence numbers the port
// hands out (events.md 3.2). Records are the exact stored JSON (events.md 4.4). Time, handler
// outcomes and delays are arguments; no SQLite, no coroutines, the engine is never called.
// Keeps EVT-01/03 (emit), EVT-12/14/15/41 (passes and the pending index), EVT-18/19/21/23 (attempts
// and quarantine), EVT-26..30/32 (release), EVT-42 (listing).
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace durasim::model {

inline constexpr int64_t kEventsRetryBaseMs = 60'000;     // events.md 8.2
inline constexpr int64_t kEventsRetryCapMs = 3'600'000;
inline constexpr int64_t kEventsMaxSafeInteger = 9007199254740991;

// min(60,000 * 2^(n-1), 3,600,000)
int64_t eventsDefaultDelay(int64_t n);
// "0@-" when absent, else "<releases or 0>@<releasedAt or ->" (events.md 4.4).
std::string eventsStamp(const std::optional<nlohmann::json>& dead);

struct EvtConsumer {
  std::set<std::string> acked;
  std::map<std::string, nlohmann::json> attempts;  // id -> StoredAttempts
  std::map<std::string, nlohmann::json> dead;      // id -> StoredDead
  int64_t frontier = 0;
  std::map<std::string, int64_t> pending;          // id -> seq of the index entry
  std::map<std::string, int64_t> deadIndex;        // id -> seq of the index entry
  friend bool operator==(const EvtConsumer&, const EvtConsumer&) = default;
};

struct EvtRecord {
  int64_t seq = 0;
  std::string id, payload;  // payload as the test spells it
  friend bool operator==(const EvtRecord&, const EvtRecord&) = default;
};

struct EvtConsumerConfig {
  std::string topic, name;
  double maxAttempts = 8;
  std::function<int64_t(int64_t n)> delay;  // empty: the default schedule
};

class EventsModel {
 public:
  struct EmitResult {
    bool inserted = false, refused = false;
    int64_t depth = 0;
  };
  // events.md 5: idempotent by id; a new id is refused at maxDepth.
  EmitResult emit(const std::string& topic, const std::string& id, const std::string& payload, std::optional<int64_t> maxDepth);

  struct PollResult {
    int64_t delivered = 0;
    std::vector<std::string> calls;  // ids handed to the handler, in order
  };
  // events.md 6.4 with one poller: `fails(id)` says whether the handler throws ("boom <id>").
  PollResult poll(const EvtConsumerConfig& consumer, int64_t now, const std::function<bool(const std::string&)>& fails);

  enum class Release { released, notQuarantined, alreadyDelivered };
  Release release(const std::string& topic, const std::string& consumer, const std::string& id, int64_t now);

  struct Dead {
    std::string id, status;
    int64_t attempts = 0, releases = 0;
    friend bool operator==(const Dead&, const Dead&) = default;
  };
  std::vector<Dead> listDead(const std::string& topic, const std::string& consumer) const;

  const std::map<std::string, std::vector<EvtRecord>>& topics() const { return topics_; }
  const std::map<std::pair<std::string, std::string>, EvtConsumer>& consumers() const { return consumers_; }

 private:
  EvtConsumer& state(const std::string& topic, const std::string& consumer) { return consumers_[{topic, consumer}]; }
  int64_t appendIndex(std::map<std::string, int64_t>& index, const std::string& id);
  void invoke(const EvtConsumerConfig& c, EvtConsumer& s, const EvtRecord& r, bool fromIndex, int64_t now,
              const std::function<bool(const std::string&)>& fails, PollResult& out);

  std::map<std::string, std::vector<EvtRecord>> topics_;
  std::map<std::pair<std::string, std::string>, EvtConsumer> consumers_;
  int64_t lastSeq_ = 0;  // store-wide, never reused
};

}  // namespace durasim::model
