#!/usr/bin/env bash
# Records the regression corpus (traces/corpus/README.md): for each entry of traces/corpus/corpus.json
# (default: all; or the trace names given), runs its seed with --save-trace, checks that it fails
# with the entry's invariant, shrinks it, keeping that invariant violated, with a fixed number of candidate runs (so the result is the
# same on every machine) and writes traces/corpus/<trace>. Needs build/durasim.
#   RUNS=N (default 600): shrink's --max-runs
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
durasim="$root/build/durasim"
corpus="$root/traces/corpus"
runs=${RUNS:-600}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

entries=$(python3 - "$corpus/corpus.json" "$@" <<'PY'
import json, sys
wanted = set(sys.argv[2:])
for e in json.load(open(sys.argv[1])):
    if not wanted or e["trace"] in wanted:
        print(e["trace"], e["invariant"], e["run"], sep="\t")
PY
)
[ -n "$entries" ] || { echo "record-corpus: no entry named $*" >&2; exit 2; }

while IFS=$'\t' read -r trace invariant run; do
  read -r -a run_args <<<"$run"
  "$durasim" run "${run_args[@]}" --save-trace "$work/full.trace" >"$work/run.txt" 2>&1 || true
  grep -q "FAILED seed [0-9]*: $invariant" "$work/run.txt" || grep -q "FAILED.*$invariant" "$work/run.txt" || {
    echo "record-corpus: $trace: '$run' no longer fails with $invariant" >&2
    cat "$work/run.txt" >&2
    exit 1
  }
  "$durasim" shrink "$work/full.trace" -o "$corpus/$trace" --invariant "$invariant" --max-runs "$runs" --budget 3600
  echo "record-corpus: $trace recorded ($invariant)"
done <<<"$entries"
