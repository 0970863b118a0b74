#!/usr/bin/env bash
# Builds the libFuzzer targets (fuzz/) of the sanitizer build (clang with ASan and UBSan, in
# $BUILD_DIR, default build-san/, the build .ci/run tests too) and runs each for SECONDS (default
# 60), both at once, each from $BUILD_DIR/corpus/<target>/: a copy of its checked-in
# seed corpus fuzz/corpus/<target>/ (never written; traces/corpus/ seeds the trace target too) plus
# what earlier runs found, with the dictionary fuzz/<target>.dict when there is one. Prints per
# target the executions and libFuzzer's cov: and ft: figures.
# Exit 1 when a target found a crash, leak, timeout or out-of-memory input: the input is kept in
# $BUILD_DIR/artifacts/, and the command that reproduces it, the input itself (base64, when at most
# 4 KiB) and what the target printed before the crash are printed. Extra arguments go to
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
  # fuzz/<target>.dict, when there is one: the tokens of its input language.
  dict=()
  if [ -f "$root/fuzz/$t.dict" ]; then dict=(-dict="$root/fuzz/$t.dict"); fi
  "$build/fuzz/${t}_fuzz" "$build/corpus/$t" -max_total_time="$seconds" -timeout=10 -print_final_stats=1 \
    -artifact_prefix="$build/artifacts/$t-" "${dict[@]}" "$@" >"$build/$t.log" 2>&1 &
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
    echo "$t FAILED (exit $code): $(grep -m1 -E 'ERROR: |runtime error|deadly signal|uncaught|not one line|terminate called|Assertion' "$build/$t.log" || tail -n 1 "$build/$t.log")"
    # What the target printed before libFuzzer's own report (an exception's what(), an assertion),
    # and each input that failed: the clean machine that found it may be gone when it is read.
    sed -n '/^==[0-9]*== ERROR: libFuzzer/q; p' "$build/$t.log" | grep -vE '^(INFO|MERGE|#[0-9])' | tail -n 8 | sed 's/^/  | /'
    for artifact in $(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$build/$t.log"); do
      echo "  reproduce: $build/fuzz/${t}_fuzz $artifact"
      if [ "$(stat -c %s "$artifact")" -le 4096 ]; then
        echo "  input (base64): $(base64 -w0 "$artifact")"
      fi
    done
    echo "  log: $build/$t.log"
  fi
done
exit "$failed"
