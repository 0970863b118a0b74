// The variant registry; see variants.h. Names are spelled through the constants of the layer that
// reads them, so a renamed flag cannot drift from its entry.
#include "cli/variants.h"

#include <algorithm>
#include <stdexcept>
#include <utility>

#include "engine/variants.h"
#include "sim/mutants.h"
#include "workloads/account.h"

namespace durasim::cli {

namespace {

namespace m = sim::mutants;
namespace v = variants;

VariantInfo engine_flag(std::string_view name, std::string_view origin, std::string_view breaks,
                        std::vector<std::string_view> expected, std::string_view workload) {
  VariantInfo info;
  info.name = name;
  info.origin = origin;
  info.breaks = breaks;
  info.expected = std::move(expected);
  info.workload = workload;
  return info;
}

VariantInfo mutant(std::string_view name, std::string_view breaks, std::string_view caught_by, std::string_view workload,
                   bool check_determinism = false) {
  VariantInfo info = engine_flag(name, "runtime.md 12", breaks, {caught_by}, workload);
  info.check_determinism = check_determinism;
  return info;
}

// A variant its workload reaches only under `faults`, or with the workload `options` that exercise it.
VariantInfo exercised_with(VariantInfo info, std::string_view faults, nlohmann::json options) {
  info.faults = faults;
  info.options = std::move(options);
  return info;
}

std::vector<VariantInfo> make_registry() {
  return {
      // ---- Engine flags (hazards.md)
      // Reached in the fanout seeds whose mailboxes attach named alarms beside the fanout.
      engine_flag(v::kReconcileOwnKindOnly, "H-A", "reconcile sets the alarm from the requesting participant's rows only",
                  {"SCH-01", "SCH-02", "SCH-14"}, "fanout"),
      engine_flag(v::kFanoutPerRowClaim, "H-F1", "a pass claims its whole due batch in one transaction", {"FAN-23", "FAN-26"}, "fanout"),
      engine_flag(v::kOutboxAckIgnoresGeneration, "outbox calibration", "an acknowledgement deletes a row only while it holds the published generation",
                  {"OBX-05", "OBX-16"}, "outbox"),
      engine_flag(v::kOutboxStageOwnTransaction, "outbox calibration", "stage(txn) commits or rolls back with the application's transaction",
                  {"OBX-04"}, "outbox"),
      engine_flag(v::kOutboxVersionFromRows, "outbox calibration", "versions come from a counter that survives the deletion of rows",
                  {"OBX-01", "OBX-02", "OBX-14"}, "outbox"),
      engine_flag(v::kOutboxGiveUpAfterMaxAttempts, "outbox calibration", "the outbox never gives up on a row", {"OBX-09", "OBX-16"},
                  "outbox"),
      engine_flag(workloads::kSinkLastWriterWins, "outbox.md 6 (harness)", "the sink keeps the highest version per key",
                  {"OBX-14", "OBX-16"}, "outbox"),
      // The event bus's reference hazards (events.md 12-13), reached by the events workload.
      engine_flag(v::kEventsOrderByTimestamp, "D1", "a topic's records are read in insertion order, by sequence number",
                  {"EVT-14", "EVT-40", "EVT-10"}, "events"),
      engine_flag(v::kEventsTimestampTruthiness, "D2", "time 0 is a valid time (timestamps tested for presence)", {"EVT-34", "EVT-23", "EVT-26"},
                  "events"),
      engine_flag(v::kEventsReleaseTwoStep, "D3", "a release resets the attempts and flips the dead record in one unit", {"EVT-27", "EVT-28"},
                  "events"),
      engine_flag(v::kEventsUnvalidatedMaxAttempts, "D4", "maxAttempts must be a positive integer or infinity", {"EVT-25", "EVT-18"}, "events"),
      engine_flag(v::kEventsDepthCheckNonatomic, "D5", "the depth bound is checked in the append's unit", {"EVT-03"}, "events"),
      engine_flag(v::kEventsFullRescanWhenFrozen, "D6", "a frozen consumer's poll reads its waiting events, not the whole log",
                  {"EVT-17", "EVT-26", "EVT-15"}, "events"),
      engine_flag(v::kEventsFailureTwoStep, "D7", "a failure's attempt and dead records are written in one unit", {"EVT-18"}, "events"),
      engine_flag(v::kEventsPlainPutOnAbsent, "D8", "first writes are put-if-absent", {"EVT-19"}, "events"),
      engine_flag(v::kEventsListDeadFullScan, "D9", "listDeadEvents reads the dead-letter index, not the whole log", {"EVT-42"}, "events"),
      engine_flag(v::kEventsPollLoopDoubleChain, "D10", "stop then start during a tick leaves one timer chain", {"EVT-38"}, "events"),
      engine_flag(v::kEventsUnvalidatedOptions, "D11", "invalid arguments are refused before anything is written", {"EVT-25"}, "events"),
      engine_flag(v::kEventsUnescapedKeys, "events.md 13", "every key component is escaped", {"EVT-04", "EVT-05", "EVT-06"}, "events"),
      engine_flag(v::kLeaseTwoWriteAllocation, "H4", "a fresh lease and its allocation commit as one transaction", {"LSE-01", "LSE-02"}, "log"),
      engine_flag(v::kLeaseAdvanceFromZero, "H5", "a consumer with no cursor commits through leases above a trimmed start",
                  {"LSE-12", "LSE-15"}, "log"),
      engine_flag(v::kLeaseAdvanceBatchLimited, "H6", "advance walks every settled row, not maxBatchSize of them", {"LSE-05", "LSE-15"}, "log"),
      engine_flag(v::kLeaseSkipWithoutAdvance, "H6", "a skip (poison, truncation, gap) advances the cursor in its transaction", {"LSE-14"},
                  "log"),
      engine_flag(v::kLeaseAckThreeUnits, "H6", "ack settles, commits the cursor and deletes rows in one transaction", {"LSE-05", "LSE-15"},
                  "log"),
      engine_flag(v::kLeaseTruncationBlocks, "H7, H23", "a trimmed leased range throws LogTruncatedError once, then carries on",
                  {"LSE-13", "LSE-15"}, "log"),
      engine_flag(v::kLeaseSettleIgnoresConsumer, "H8", "only the consumer holding a lease can settle it", {"LSE-09", "LSE-11"}, "log"),
      engine_flag(v::kMigrateNullKeepsLeaseTables, "H19", "migrate(none) removes every table the log created, lease tables too", {"SCH-11"},
                  "log"),
      engine_flag(v::kSegmentFlushTwoUnits, "H20", "a flush fixes its range first; index row, deletion and intent commit together",
                  {"LOG-11", "LOG-15", "LOG-16"}, "log"),
      // ---- Simulator mutants (runtime.md 12)
      mutant(m::kWallClockLeak, "nothing but the seed decides a run (no host time)", "RT-01", "runtime", true),
      mutant(m::kUnrecordedChoice, "every random choice is recorded in the choice log", "RT-23", "runtime", true),
      mutant(m::kClockStepBack, "simulated time never moves backwards", "RT-02", "runtime"),
      mutant(m::kAlarmFiresEarly, "an alarm handler never runs before its stored time", "RT-03", "runtime"),
      // Only an incarnation that aborts with writes in its segment has an open transaction at its reset.
      exercised_with(mutant(m::kKeepOpenTxnOnReset, "a reset discards the open implicit transaction", "RT-06", "runtime"),
                     "recoverable", {{"aborts", true}}),
      mutant(m::kConfirmOutOfOrder, "commits confirm in order; a decision keeps a prefix", "RT-07", "runtime"),
      // Replaced incarnations that run on (object.zombie) exist only under the arbitrary profile;
      // late writes give their frames something to write after the reset.
      exercised_with(mutant(m::kZombieStorageWrite, "a replaced incarnation's writes never reach storage", "RT-08", "runtime"),
                     "arbitrary", {{"late_writes", true}}),
      mutant(m::kUncountedFault, "every injected fault is recorded and counted", "RT-09", "runtime"),
      mutant(m::kOutputGateBypass, "no reply leaves before the writes before it are confirmed", "RT-10", "runtime"),
      exercised_with(mutant(m::kInputGateLeak, "no event starts inside a blockConcurrencyWhile section", "RT-11", "runtime"),
                     "recoverable", {{"sections", true}}),
      // Seven counted failures of one occurrence take an alarm whose handler always throws.
      exercised_with(mutant(m::kAlarmRetryOffByOne, "a failing alarm is retried exactly the documented number of times", "RT-12",
                            "runtime"),
                     "recoverable", {{"failing_alarms", true}}),
      exercised_with(mutant(m::kMemorySurvivesReset, "a new incarnation starts with fresh memory", "RT-19", "runtime"),
                     "recoverable", {{"canary", true}}),
      mutant(m::kStatementErrorResets, "an ordinary statement error does not reset the object", "RT-26", "runtime"),
  };
}

}  // namespace

const std::vector<VariantInfo>& variant_registry() {
  static const std::vector<VariantInfo> registry = make_registry();
  return registry;
}

const VariantInfo* find_variant(std::string_view name) {
  const auto& all = variant_registry();
  const auto it = std::find_if(all.begin(), all.end(), [&](const VariantInfo& info) { return info.name == name; });
  return it == all.end() ? nullptr : &*it;
}

void require_known_variant(std::string_view name) {
  if (find_variant(name)) return;
  throw std::invalid_argument("unknown variant '" + std::string(name) + "' (durasim mutants --list names them all)");
}

}  // namespace durasim::cli
