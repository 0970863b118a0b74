#!/usr/bin/env bash
# Runs the training campaign of profile-guided optimisation (docs/performance.md, "Seventeenth
# round"): an instrumented durasim runs every workload under both fault profiles, and writes the
# profile into PROFILE_DIR (emptied first) as it exits.
# Usage: scripts/train-profile.sh INSTRUMENTED_DURASIM PROFILE_DIR
# One process on purpose: --jobs workers leave with _exit(), which writes no profile. A failing seed
# does not stop the training (its profile is as good), a program that cannot run does.
set -euo pipefail
durasim=$1 profile=$2
rm -rf "$profile" && mkdir -p "$profile"
while read -r workload seeds; do
  for faults in recoverable arbitrary; do
    status=0
    "$durasim" run --workload "$workload" --seeds "$seeds" --faults "$faults" >/dev/null 2>&1 || status=$?
    if [ "$status" -gt 1 ]; then
      echo "train-profile: $durasim run --workload $workload --faults $faults exited with $status" >&2
      exit 1
    fi
  done
done <<'SEEDS'
core 0..199
runtime 0..99
alarms 0..39
log 0..7
fanout 0..11
events 0..11
mixed 0..11
outbox 0..15
SEEDS
