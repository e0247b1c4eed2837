#!/usr/bin/env bash
# Builds Mnemo with its tests and runs every test (ctest), then the ASan/UBSan + libFuzzer build
# (scripts/sanitize.sh) unless MNEMO_SKIP_SANITIZE=1. Build folders: build-test/, build-sanitize/.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build_env.sh

start=$(date +%s)
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release -DMNEMO_TESTS=ON "${launcher[@]}"
cmake --build build-test -j "$jobs"
(cd build-test && ctest --output-on-failure -j "$jobs" --timeout 900)
echo "test.sh: release build and tests took $(( $(date +%s) - start )) s"

if [ "${MNEMO_SKIP_SANITIZE:-0}" != 1 ]; then
  bash scripts/sanitize.sh
fi
