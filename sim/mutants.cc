// The simulator mutants a run's variants switch on; see mutants.h.
#include "sim/mutants.h"

namespace durasim::sim {

ActiveMutants ActiveMutants::of(const std::set<std::string>& variants) {
  const auto on = [&](std::string_view name) { return variants.count(std::string(name)) > 0; };
  ActiveMutants active;
  active.wall_clock_leak = on(mutants::kWallClockLeak);
  active.unrecorded_choice = on(mutants::kUnrecordedChoice);
  active.clock_step_back = on(mutants::kClockStepBack);
  active.alarm_fires_early = on(mutants::kAlarmFiresEarly);
  active.keep_open_txn_on_reset = on(mutants::kKeepOpenTxnOnReset);
  active.confirm_out_of_order = on(mutants::kConfirmOutOfOrder);
  active.zombie_storage_write = on(mutants::kZombieStorageWrite);
  active.uncounted_fault = on(mutants::kUncountedFault);
  active.output_gate_bypass = on(mutants::kOutputGateBypass);
  active.input_gate_leak = on(mutants::kInputGateLeak);
  active.alarm_retry_off_by_one = on(mutants::kAlarmRetryOffByOne);
  active.memory_survives_reset = on(mutants::kMemorySurvivesReset);
  active.statement_error_resets = on(mutants::kStatementErrorResets);
  return active;
}

}  // namespace durasim::sim
