// Simulator mutants (runtime.md 12): switches that break one runtime promise on purpose, so that the
// RT checkers can be shown to catch what they exist for. The World reads them once from its variants
// (World::mutants()); the part of sim/ that keeps each promise tests its switch there. None is on by
// default, and cli/variants.h registers each with the invariant expected to catch it.
#pragma once

#include <set>
#include <string>
#include <string_view>

namespace durasim::sim {

namespace mutants {

inline constexpr std::string_view kWallClockLeak = "sim.mutant.wall_clock_leak";                  // RT-01
inline constexpr std::string_view kUnrecordedChoice = "sim.mutant.unrecorded_choice";              // RT-23
inline constexpr std::string_view kClockStepBack = "sim.mutant.clock_step_back";                   // RT-02
inline constexpr std::string_view kAlarmFiresEarly = "sim.mutant.alarm_fires_early";               // RT-03
inline constexpr std::string_view kKeepOpenTxnOnReset = "sim.mutant.keep_open_txn_on_reset";       // RT-06
inline constexpr std::string_view kConfirmOutOfOrder = "sim.mutant.confirm_out_of_order";          // RT-07
inline constexpr std::string_view kZombieStorageWrite = "sim.mutant.zombie_storage_write";         // RT-08
inline constexpr std::string_view kUncountedFault = "sim.mutant.uncounted_fault";                  // RT-09
inline constexpr std::string_view kOutputGateBypass = "sim.mutant.output_gate_bypass";             // RT-10
inline constexpr std::string_view kInputGateLeak = "sim.mutant.input_gate_leak";                   // RT-11
inline constexpr std::string_view kAlarmRetryOffByOne = "sim.mutant.alarm_retry_off_by_one";       // RT-12
inline constexpr std::string_view kMemorySurvivesReset = "sim.mutant.memory_survives_reset";       // RT-19
inline constexpr std::string_view kStatementErrorResets = "sim.mutant.statement_error_resets";     // RT-26

}  // namespace mutants

// Which mutants a run switches on, as flags the hot paths can test for nothing. Where each one acts:
//   wall_clock_leak          a commit's confirmation latency adds the host clock's nanoseconds mod 3 (incarnation.cc)
//   unrecorded_choice        the executor's same-time tie-break draws without recording the choice (executor.cc)
//   clock_step_back          every kStepBackEveryIdleJumps-th idle jump, the clock moves back 1 ms once its
//                            first event has run (executor.cc)
//   alarm_fires_early        the alarm manager fires a first run, and runs the handler, kEarlyFireMs
//                            before the stored time (object_runtime.cc)
//   keep_open_txn_on_reset   a doomed segment's open implicit transaction is committed, not discarded (incarnation.cc)
//   confirm_out_of_order     a commit confirms when its own latency is over, ahead of earlier ones (incarnation.cc)
//   zombie_storage_write     an object.zombie incarnation's storage calls succeed and its writes commit (incarnation*.cc)
//   uncounted_fault          cold.lifecycle_lag is counted but records no fault event (faults/fault_plan.cc)
//   output_gate_bypass       an RPC reply leaves at once, not through the output gate (incarnation.cc)
//   input_gate_leak          an open blockConcurrencyWhile section does not hold the input gate (incarnation.cc)
//   alarm_retry_off_by_one   an occurrence is abandoned after one counted failure more (object_runtime.cc)
//   memory_survives_reset    the next incarnation adopts the reset one's instance, constructor skipped (incarnation.cc)
//   statement_error_resets   a statement error dooms the incarnation like a critical one (incarnation_storage.cc)
struct ActiveMutants {
  bool wall_clock_leak = false;
  bool unrecorded_choice = false;
  bool clock_step_back = false;
  bool alarm_fires_early = false;
  bool keep_open_txn_on_reset = false;
  bool confirm_out_of_order = false;
  bool zombie_storage_write = false;
  bool uncounted_fault = false;
  bool output_gate_bypass = false;
  bool input_gate_leak = false;
  bool alarm_retry_off_by_one = false;
  bool memory_survives_reset = false;
  bool statement_error_resets = false;

  // The mutants named in `variants` (other names are ignored: engine flags are not the sim's).
  static ActiveMutants of(const std::set<std::string>& variants);
};

}  // namespace durasim::sim
