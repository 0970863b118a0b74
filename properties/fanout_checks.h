// FAN invariants (invariants-engine.md) over a run of objects that use DurabilityFanout. It observes
// the trace as it is recorded: the engine's "fan.*" probes (each "*.write" inside the transaction it
// describes, counted once that transaction commits), the runtime's commit, confirmation and
// incarnation events, and what the application reports of the effects outside the object
// ("app.fan.consume" from the consumer that received a delivery, "app.fan.stored" from the cold
// bucket writes of storage targets and the DLQ). State checks read the object's live store at the
// instant of the event.
//   [S] at commits: FAN-02 and FAN-04 (manifests against their rows: remaining, generation, target
//       set), FAN-10 (a dead-letter reason only on a dead_letter row)
//   [H] FAN-05 (seq above every committed seq, across resets that discard unconfirmed commits),
//       FAN-06 (a consumer or storage target receives a delivery's attempt k only after a committed
//       claim of attempt k), FAN-07 (at most maxAttempts attempts of a delivery reach its targets),
//       FAN-08 (a removed delivery is never claimed again), FAN-10 (a dead_letter row is never
//       claimed), FAN-11 (a DLQ removal only after the DLQ holds the entry), FAN-12 (no DLQ: no
//       intent, no DLQ write), FAN-19 (delivery identity json([generation, target]) and cold keys),
//       FAN-22 (an exhausted dead letter carries attempts == maxAttempts), FAN-25 (no acknowledgement
//       removes a dead_letter row)
//       FAN-09 (a second settlement call fails; one settlement per delivery attempt takes effect),
//       FAN-14 (a pass reads the due rows the spec's order gives, computed from the store), FAN-15
//       (one pass per target at a time), FAN-17 (first due times on the batch window), FAN-23 (at
//       most one claim transaction per pass), FAN-20 (ackOnReturn removals only on a target with it,
//       and only for a batch whose deliver returned normally before its deadline)
//   [L] at the end of the run: FAN-26 (no delivery row left)
// The options it needs (maxAttempts, whether there is a DLQ) come from the application's
// "workload.config" event, never from the engine.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "properties/durable_state.h"
#include "properties/object_checker.h"
#include "properties/store_reader.h"

namespace durasim::properties {

class FanoutChecks final : public ObjectChecker {
 public:
  FanoutChecks(StoreReader reader, std::string className);
  // End-of-run checks (quiescent, after heal) over every object of the class.
  void finish();

 private:
  using RowKey = std::pair<std::string, std::string>;  // (row id, generation)
  struct Claim {
    RowKey row;
    std::string delivery;
    int64_t attempt = 0;
  };
  // What a transaction did, counted once it commits.
  struct CommitNotes {
    std::vector<int64_t> seqs;
    std::vector<Claim> claims;
    std::vector<RowKey> intents, removals;
    void merge(CommitNotes&& other);
  };
  // A batch handed to a target, until it closes (FAN-20).
  struct Batch {
    std::set<std::pair<std::string, int64_t>> rows;  // (row id, attempt)
    bool autoAcked = false;                          // an ackOnReturn removal happened for it
  };
  struct IncarnationState {
    DurableState<NoState, NoEdit, CommitNotes> commits;
    std::map<std::string, int64_t> passClaims;  // target -> claim writes of its running pass
    std::map<std::string, Batch> batches;       // target -> its open batch
  };
  // Stored facts, at two depths: `local` (every local commit of the live incarnation) and `durable`
  // (what the next incarnation opens after a reset).
  struct Facts {
    int64_t maxSeq = -1;
    std::set<RowKey> deadLettered, removed;  // committed intents and removals
    void apply(const CommitNotes& notes);
  };
  struct ObjectState {
    Facts local, durable;
    std::map<std::string, std::set<int64_t>> claimed;    // delivery -> attempts claimed (committed)
    std::map<std::string, std::set<int64_t>> delivered;  // delivery -> attempts a target received
    std::set<std::string> inDlq;                         // deliveries the DLQ holds
    std::map<std::pair<std::string, int64_t>, int64_t> settled;  // (delivery, attempt) -> settlements that took effect
  };

  void observe(std::string_view ev, const nlohmann::json& e) override;
  std::string invariant_for(std::string_view ev) const override;

  void onConfig(const nlohmann::json& e);
  void onCommit(const nlohmann::json& e);
  void onDurability(const nlohmann::json& e);
  void onEnqueueWrite(const nlohmann::json& e, IncarnationState& inc);
  void onClaimWrite(const nlohmann::json& e, IncarnationState& inc);
  void onAckWrite(const nlohmann::json& e, IncarnationState& inc);
  void onRemoveWrite(const nlohmann::json& e, IncarnationState& inc);
  void onReceived(const std::string& mailbox, const std::string& delivery, int64_t attempt, const char* what);
  void onStored(const nlohmann::json& e);
  void onSettled(const nlohmann::json& e);
  void onDue(const nlohmann::json& e);
  void onDelivered(const nlohmann::json& e, IncarnationState& inc);
  void checkFirstDue(const nlohmann::json& e);
  CommitNotes validated(const std::string& object, IncarnationState& inc);
  void committed(const std::string& object, const CommitNotes& notes);
  void checkRows(const std::string& object);
  IncarnationState& incarnation(const nlohmann::json& e);
  bool hasTables(const std::string& object) const;

  StoreReader reader_;
  std::optional<int64_t> maxAttempts_;
  std::optional<bool> dlq_, ackOnReturn_;
  std::optional<int64_t> maxBatchSize_, batchDelayMs_;
  std::map<std::pair<std::string, int64_t>, IncarnationState> incarnations_;
  std::map<std::string, ObjectState> objects_;
};

}  // namespace durasim::properties
