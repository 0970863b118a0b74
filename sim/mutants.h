// Simulator mutants (runtime.md 12): switches that break one runtime promise on purpose, so that the
// RT checkers can be shown to catch what they exist for. They are read from World::variants() by the
// part of sim/ that keeps the promise; none is on by default, and cli/variants.h registers each with
// the invariant expected to catch it.
#pragma once

#include <string_view>

namespace durasim::sim::mutants {

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

}  // namespace durasim::sim::mutants
