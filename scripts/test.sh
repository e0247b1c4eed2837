#!/usr/bin/env bash
# Builds Mnemo with its tests and runs every test (ctest), then the ASan/UBSan + libFuzzer build
# (scripts/sanitize.sh) unless MNEMO_SKIP_SANITIZE=1. Build folders: build-test/, build-sanitize/.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)
launcher=()
# Paths below the checkout are hashed relative to it, so a cache filled in one clone serves another.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)

start=$(date +%s)
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release -DMNEMO_TESTS=ON "${launcher[@]}"
cmake --build build-test -j "$jobs"
(cd build-test && ctest --output-on-failure -j "$jobs" --timeout 900)
echo "test.sh: release build and tests took $(( $(date +%s) - start )) s"

if [ "${MNEMO_SKIP_SANITIZE:-0}" != 1 ]; then
  bash scripts/sanitize.sh
fi
