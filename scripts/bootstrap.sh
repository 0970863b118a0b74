#!/usr/bin/env bash
# Installs the Debian packages durasim builds against, and nothing else; packages named as arguments
# are wanted too (scripts/fuzz.sh adds clang's). Idempotent: when every package is present it prints
# nothing and touches nothing; otherwise it runs one `apt-get update` and one `apt-get install` for
# the missing ones (as root, or through sudo when available).
set -euo pipefail

packages=(
  g++ cmake make
  libsqlite3-dev nlohmann-json3-dev libboost-graph-dev librapidcheck-dev
  libgtest-dev libgmock-dev libbenchmark-dev libcli11-dev libxxhash-dev libmimalloc-dev
  graphviz chromium  # the tests render `explain --dot` with dot and load `explain --html` headless
  python3-jsonschema # the tests validate traces against traces/trace-format.schema.json
  "$@"
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "bootstrap: installing ${missing[*]}" >&2
sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "bootstrap: need root or sudo to install ${missing[*]}" >&2; exit 1; }
  sudo_cmd=(sudo)
fi
export DEBIAN_FRONTEND=noninteractive
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
