#!/usr/bin/env bash
# Installs missing packages, then configures and builds durasim in build/ (Release by default).
# Extra arguments go to cmake, e.g. `scripts/build.sh -DDURASIM_SANITIZE=ON` (use another BUILD_DIR).
# A Release build with GCC is profile-guided (docs/performance.md, "Seventeenth round"): an
# instrumented durasim in build/pgo-train runs a training campaign first (again whenever it was
# rebuilt), and build/ is compiled with the profile it wrote. PGO=0 builds without it; so does any
# argument choosing the sanitizers, a compiler or another build type.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
build=${BUILD_DIR:-$root/build}
bash "$root/scripts/bootstrap.sh"
guided=${PGO:-1}
[ "${CXX:-g++}" = g++ ] || guided=0
for arg in "$@"; do
  case $arg in
    -DDURASIM_SANITIZE=ON | -DCMAKE_CXX_COMPILER=* | -DDURASIM_PGO_* ) guided=0 ;;
    -DCMAKE_BUILD_TYPE=Release) ;;
    -DCMAKE_BUILD_TYPE=*) guided=0 ;;
  esac
done
profile_use=
if [ "$guided" != 0 ]; then
  train=$build/pgo-train profile=$build/pgo-profile
  cmake -S "$root" -B "$train" -DCMAKE_BUILD_TYPE=Release -DDURASIM_TESTS=OFF -DDURASIM_BENCH=OFF \
    -DDURASIM_PGO_GENERATE="$profile" >/dev/null
  cmake --build "$train" -j "$(nproc)" --target durasim
  if [ ! -e "$profile/trained" ] || [ "$train/durasim" -nt "$profile/trained" ]; then
    echo "build: training the profile (scripts/train-profile.sh)"
    bash "$root/scripts/train-profile.sh" "$train/durasim" "$profile"
    touch "$profile/trained"
  fi
  profile_use=$profile
fi
# An explicit DURASIM_PGO_USE argument comes after this one and wins.
cmake -S "$root" -B "$build" -DDURASIM_PGO_USE="$profile_use" "$@" >/dev/null
cmake --build "$build" -j "$(nproc)"
