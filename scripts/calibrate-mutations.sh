#!/usr/bin/env bash
# The checkers' calibration (tests/mutations/README.md): for each mutation patch (default: all),
# apply it to a scratch worktree, build incrementally, run its campaign over seeds 0..99 until a seed
# fails, and print: patch, expected invariant, invariants that caught it, seeds to detection.
# Exit 1 when any patch goes undetected or is caught only by other invariants. Slow; not run by CI.
#   SEEDS=N (default 100)   SCRATCH=DIR (default $TMPDIR/durasim-mutations)
#   IN_PLACE=1: mutate this tree itself (its build/ directory), reverting each patch with
#   `git apply -R`; for checking a checker fix before it is committed. Uncommitted changes stay, and
#   build/durasim is rebuilt unmutated at the end.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
seeds=${SEEDS:-100}
scratch=${SCRATCH:-${TMPDIR:-/tmp}/durasim-mutations}
patches=("$@")
[ ${#patches[@]} -gt 0 ] || patches=("$root"/tests/mutations/*.patch)

if [ -n "${IN_PLACE:-}" ]; then
  scratch=$root
  [ -f "$scratch/build/CMakeCache.txt" ] || cmake -S "$scratch" -B "$scratch/build" -DCMAKE_BUILD_TYPE=Release >/dev/null
else
  if [ ! -d "$scratch/.git" ] && [ ! -f "$scratch/.git" ]; then
    git -C "$root" worktree add --detach "$scratch" HEAD >/dev/null
  fi
  git -C "$scratch" checkout --detach -q "$(git -C "$root" rev-parse HEAD)"
  git -C "$scratch" reset -q --hard
  cmake -S "$scratch" -B "$scratch/build" -DCMAKE_BUILD_TYPE=Release -DDURASIM_TESTS=OFF -DDURASIM_BENCH=OFF >/dev/null
fi
revert() { if [ -n "${IN_PLACE:-}" ]; then git -C "$scratch" apply -R "$1"; else git -C "$scratch" reset -q --hard; fi; }

failures=0
printf '%-44s %-10s %-24s %s\n' patch expected caught-by seeds
for patch in "${patches[@]}"; do
  patch=$(cd "$(dirname "$patch")" && pwd)/$(basename "$patch")
  name=$(basename "$patch" .patch)
  expected=$(sed -n 's/^# invariant: //p' "$patch")
  read -r -a run_args <<<"$(sed -n 's/^# run: //p' "$patch")"
  git -C "$scratch" apply "$patch"
  caught="" detected="-"
  if cmake --build "$scratch/build" -j "$(nproc)" --target durasim >/dev/null 2>&1; then
    for ((seed = 0; seed < seeds; seed++)); do
      out=$("$scratch/build/durasim" run "${run_args[@]}" --seed "$seed" --failure-dir "$scratch/failures" 2>&1 || true)
      if grep -q "FAILED seed" <<<"$out"; then
        # every invariant with violations in the summary table ("    ID  checked / violated")
        caught=$(awk '$1 ~ /^[A-Z]+-[0-9]+$/ && $3 == "/" && $4 > 0 { print $1 }' <<<"$out" | paste -sd, -)
        [ -n "$caught" ] || caught=$(grep -m1 -oE 'FAILED seed [0-9]+: .{0,40}' <<<"$out" | sed 's/FAILED seed [0-9]*: //')
        detected=$((seed + 1))
        break
      fi
    done
  else
    caught="(does not build)"
  fi
  revert "$patch"
  verdict=ok
  if [ "$detected" = "-" ]; then verdict=UNDETECTED; elif ! grep -qw -- "$expected" <<<"${caught//,/ }"; then verdict="CAUGHT BY OTHERS"; fi
  [ "$verdict" = ok ] || failures=$((failures + 1))
  printf '%-44s %-10s %-24s %-6s %s\n' "$name" "$expected" "${caught:--}" "$detected" "$verdict"
done
# In place, the last build holds the last mutation: rebuild the tree as it now is.
[ -z "${IN_PLACE:-}" ] || cmake --build "$scratch/build" -j "$(nproc)" --target durasim >/dev/null
exit $((failures > 0))
