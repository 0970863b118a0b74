#!/usr/bin/env bash
# The main job: build, then run the default simulation campaign (extra arguments go to `durasim run`).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bash "$root/scripts/build.sh" >/dev/null
exec "${BUILD_DIR:-$root/build}/durasim" run "$@"
