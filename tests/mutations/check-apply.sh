#!/usr/bin/env bash
# Checks that every mutation patch (tests/mutations/README.md) still applies to the source tree.
# Exit 0 when all apply (or when the tree is not a git checkout: nothing to check against).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
git rev-parse --git-dir >/dev/null 2>&1 || { echo "not a git checkout: skipped"; exit 0; }
status=0 count=0
for patch in tests/mutations/*.patch; do
  [ -e "$patch" ] || continue
  count=$((count + 1))
  for field in invariant run mutation; do
    grep -q "^# $field: " "$patch" || { echo "$patch: no '# $field:' header line"; status=1; }
  done
  git apply --check "$patch" 2>/dev/null || { echo "$patch: no longer applies"; status=1; }
done
echo "$count mutation patches checked"
[ "$count" -gt 0 ] || { echo "no patches found"; exit 1; }
exit $status
