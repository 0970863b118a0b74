// OBX invariants (invariants-engine.md) over a run of objects that use DurabilityOutbox, and of the
// sink they publish to. It observes the trace as it is recorded: the engine's "obx.*" probes (each
// "*.write" inside the transaction it describes, counted once that transaction commits), the
// scheduler's reconcile probes, the runtime's commit, confirmation and incarnation events, and what
// the application reports ("app.obx.*": its channels, the stages its aborted transactions rolled
// back, its schema removal, and each write of the sink object). State checks read the live stores
// at the instant of the event: the object's outbox tables, and the sink's table.
//   [S] at every commit of an object: OBX-02 (the counter above every row and every committed
//       version, row versions unique), OBX-03 (each row holds its key's last committed stage), OBX-05
//       (no row of another generation deleted by an acknowledgement), OBX-09 (no row gone without
//       its acknowledgement), OBX-04 (no row holding an aborted stage), OBX-20 (the alarm the commit
//       left in the SCH-02 window of the pending rows); at the writes: OBX-08 (a claimed row due at
//       its publish deadline), OBX-10 (a rescheduled row), OBX-11 (first due time), OBX-13
//       (postponement); at "app.obx.aborted": OBX-04 (rows and counter as before the stage); at
//       "app.obx.migrated_none": OBX-19
//   [H] OBX-01 (versions increase in commit order, across deletes and resets), OBX-04 (no stage of
//       an aborted version after the abort), OBX-06 (a publish call carries exactly the committed
//       claim of its pass), OBX-07 (batch shape), OBX-08 (a row claimed only once due), OBX-10 (retry
//       delays: explicit, fixed or default bounds; a failed or marked entry is never acknowledged),
//       OBX-12 (one pass per channel; a claim takes rows of its own channel only, a publish comes
//       only within its channel's pass), OBX-13 (no claim, publish or acknowledgement on a channel
//       the incarnation does not attach), OBX-14 (at every commit of the sink: per (source, channel,
//       key) its stored version never decreases and it stores only durable committed stages; and, on
//       the happens-before graph, every sink write of a version reads from a stage of it that happens
//       before the write),
//       OBX-15 (counted where the sink skipped versions), OBX-17 (a publish only after its claim is
//       durable, with no outbox write open), OBX-18 (a mark accepted only while its batch is open)
//   [L] at the end of the run: OBX-16 (every key of a live account converged in the sink, no row
//       left, the last sink write within the bound after heal)
// The options it needs (channels, batch options, retry policy) come from the application's
// "workload.config" event (one naming the class, or naming none: config_of_class) and the outbox's
// "obx.options", never from the engine's own decisions.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "properties/durable_state.h"
#include "properties/happens_before.h"
#include "properties/object_checker.h"
#include "properties/store_reader.h"

namespace durasim::properties {

class OutboxChecks final : public ObjectChecker {
 public:
  OutboxChecks(StoreReader reader, std::string className);
  // The faults healed at trace time `t`.
  void healed(int64_t t);
  // End-of-run checks (quiescent, after heal) over every object of the class and the sink.
  void finish();

 private:
  using Key = std::pair<std::string, std::string>;                   // (channel, key)
  using SinkKey = std::tuple<std::string, std::string, std::string>;  // (source, channel, key)

  // One outbox write, as its probe reported it; it counts once its transaction commits.
  struct Write {
    enum class Kind { stage, abortedStage, claim, ack, retry, postpone, dropSchema, resync };
    Kind kind = Kind::stage;
    Key row;
    std::string generation, value;
    int64_t version = 0, attempt = 0;
    int64_t due = 0;    // stage: first due time; claim: deadline; retry: next; postpone: until
    int64_t now = 0;    // postpone: the pass's clock
    int64_t at = 0;     // trace time of the commit that holds it
    struct Stored {
      std::string generation, value;
      int64_t version = 0, attempt = 0, due = 0;
      bool operator==(const Stored&) const = default;
    };
    std::map<Key, Stored> rows;  // resync: the rows a commit left, read from the store
  };
  // What the committed writes leave: the rows, the last stage of each key, the highest version.
  struct Facts {
    struct Stage {
      int64_t version = 0;
      std::string value;
      int64_t at = 0;  // trace time of its commit
    };
    int64_t maxVersion = 0;
    std::map<Key, Write::Stored> rows;
    std::map<Key, Stage> last;
    void apply(const Write& w);
  };
  // A claim of a pass, once committed (the batch its publish must carry), and the batch it became.
  struct Claimed {
    std::string generation;
    int64_t version = 0, attempt = 0;
  };
  struct Batch {
    std::map<std::string, Claimed> entries;  // by key
    uint64_t commit = 0;                     // the claim's commit
    bool published = false, closed = false, failed = false;
    std::map<std::string, std::optional<int64_t>> marks;  // key -> the explicit delay, if any
  };
  struct Options {
    int64_t maxBatchSize = 0, batchDelayMs = 0, attemptTimeoutMs = 0;
  };
  struct Reconcile {
    int64_t now = 0, minDelay = 0;
    std::optional<int64_t> before, written;  // the alarm it found, and the one it wrote
  };
  struct IncarnationState {
    std::vector<Write> open;  // the open transaction's writes, in order
    bool uncertain = false;   // a statement of it failed: its savepoints may have undone some
    bool engineWrites = false;  // it holds a claim, settlement or postponement
    std::optional<Reconcile> reconcile;  // the open transaction's last
    std::optional<std::set<std::string>> channels;  // what the application attached
    std::map<std::string, Options> options;         // by channel
    std::set<std::string> passes;                   // channels with a pass open
    std::map<std::string, Batch> batches;           // channel -> its last claim and batch
  };
  struct ObjectState {
    DurableState<Facts, Write> commits;
    std::map<Key, std::map<int64_t, std::string>> history;  // durable stages: version -> value
    // Stages an aborted application transaction reported but did not hold: their writes are due
    // elsewhere, and each is a violation when it comes.
    std::map<Key, int64_t> lateAborts;
    bool retired = false;
    int64_t backlogBatches = 1;  // at heal
  };
  struct SinkFacts {
    struct Held {
      int64_t version = 0;
      std::string value;
      int64_t at = 0;  // trace time of the commit that stored it
    };
    std::map<SinkKey, Held> held;
    void apply(const std::pair<SinkKey, Held>& w) { held[w.first] = w.second; }
  };
  struct SinkState {
    DurableState<SinkFacts, std::pair<SinkKey, SinkFacts::Held>> commits;
    std::map<int64_t, std::set<SinkKey>> open;  // incarnation -> keys written by its open transaction
  };

  void observe(EventType ev, const EventFields& e) override;
  std::string invariant_for(EventType ev) const override;

  void onConfig(const EventFields& e);
  void onSink(EventType ev, const EventFields& e);
  void onCommit(const EventFields& e, bool unchanged);
  void onDurable(ObjectState& obj, const std::vector<Write>& writes);
  std::vector<Write> validated(const std::string& object, IncarnationState& inc, int64_t at);
  std::map<Key, Write::Stored> readRows(const std::string& object);
  std::optional<Write> checkRows(const std::string& object, const std::vector<Write>& writes);
  void checkAlarm(const std::string& object, const Reconcile& r, std::optional<int64_t> alarm);
  void onStage(const EventFields& e, IncarnationState& inc);
  void onAborted(const EventFields& e, IncarnationState& inc);
  void onMigratedNone(const EventFields& e, IncarnationState& inc);
  void onClaim(const EventFields& e, IncarnationState& inc);
  void onPublish(const EventFields& e, IncarnationState& inc);
  void onMark(const EventFields& e, IncarnationState& inc);
  void onSettle(const EventFields& e, IncarnationState& inc);
  void onPostpone(const EventFields& e, IncarnationState& inc);
  void onSinkCommit(const EventFields& e, bool unchanged);
  void checkRetryDelay(const std::string& object, const nlohmann::json& retried, const Batch& batch, int64_t at);
  std::optional<Write::Stored> storedRow(const std::string& object, const Key& row);
  bool attached(const IncarnationState& inc, const std::string& channel) const;
  Options optionsOf(const IncarnationState& inc, const std::string& channel) const;
  IncarnationState& incarnation(const EventFields& e);
  bool hasTables(const std::string& object) const;

  StoreReader reader_;
  // From "workload.config".
  std::vector<std::string> channels_;
  Options config_;
  std::string retryKind_ = "default";
  int64_t retryDelayMs_ = 0, alarmMinDelayMs_ = 0;
  std::optional<int64_t> healedAt_;
  IncarnationStates<IncarnationState> incarnations_;
  std::map<std::string, ObjectState> objects_;
  std::map<std::string, SinkState> sinks_;
  // OBX-14 on the happens-before graph of the accounts and the sink: every version a sink writes
  // reads from a stage of that version that happens before the write (properties/happens_before.h).
  HistoryGraph history_;
};

}  // namespace durasim::properties
