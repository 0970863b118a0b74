#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) of the sanitizer build (clang with ASan and UBSan, in
# $BUILD_DIR, default build-san/, the build .ci/run tests too) and runs each for SECONDS (default
# 60), both at once, each from $BUILD_DIR/corpus/<target>/: a copy of its checked-in
# seed corpus fuzz/corpus/<target>/ (never written; traces/corpus/ seeds the trace target too) plus
# what earlier runs found. Prints per target the executions and libFuzzer's cov: and ft: figures.
# Exit 1 when a target found a crash, leak, timeout or out-of-memory input: the input is kept in
# $BUILD_DIR/artifacts/ and the command that reproduces it is printed. Extra arguments go to
# libFuzzer (e.g. -max_len=200000). docs/ci.md, "Fuzzing".
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seconds=${1:-60}
shift $(($# > 0 ? 1 : 0))
build=${BUILD_DIR:-$root/build-san}
targets=(trace cli)

bash "$root/scripts/bootstrap.sh" clang-16 libclang-rt-16-dev
cmake -S "$root" -B "$build" -DCMAKE_CXX_COMPILER=clang++-16 -DDURASIM_SANITIZE=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target "${targets[@]/%/_fuzz}"

mkdir -p "$build/artifacts" "${targets[@]/#/$build/corpus/}"
for t in "${targets[@]}"; do cp -r "$root/fuzz/corpus/$t/." "$build/corpus/$t/"; done
cp "$root"/traces/corpus/*.trace "$build/corpus/trace/"  # the regression traces seed the trace target too
pids=()
for t in "${targets[@]}"; do
  # -timeout: an input that takes 10 s is a hang; leaks are reported (ASan's detect_leaks).
  "$build/fuzz/${t}_fuzz" "$build/corpus/$t" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$t-" "$@" >"$build/$t.log" 2>&1 &
  pids+=($!)
done

failed=0
for i in "${!targets[@]}"; do
  t=${targets[$i]}
  code=0
  wait "${pids[$i]}" || code=$?
  # libFuzzer's last status line: "#EXECUTIONS DONE cov: N ft: N corp: ..." (an earlier one after a crash).
  status=$(grep -E '^#[0-9]+' "$build/$t.log" | tail -n 1 || true)
  printf '%-13s %s executions, cov: %s, ft: %s\n' "$t" "$(sed -E 's/^#([0-9]+).*/\1/' <<<"$status")" \
    "$(grep -oE 'cov: [0-9]+' <<<"$status" | cut -d' ' -f2)" "$(grep -oE 'ft: [0-9]+' <<<"$status" | cut -d' ' -f2)"
  if [ "$code" -ne 0 ]; then
    failed=1
    echo "$t FAILED (exit $code): $(grep -m1 -E 'ERROR: |runtime error|deadly signal|uncaught|not one line' "$build/$t.log" || tail -n 1 "$build/$t.log")"
    for artifact in $(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$build/$t.log"); do
      echo "  reproduce: $build/fuzz/${t}_fuzz $artifact"
    done
    echo "  log: $build/$t.log"
  fi
done
exit "$failed"
