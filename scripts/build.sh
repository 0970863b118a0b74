#!/usr/bin/env bash
# Installs missing packages, then configures and builds durasim in build/ (Release by default).
# Extra arguments go to cmake, e.g. `scripts/build.sh -DDURASIM_SANITIZE=ON` (use another BUILD_DIR).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
bash "$root/scripts/bootstrap.sh"
cmake -S "$root" -B "$build" "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
