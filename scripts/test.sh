#!/usr/bin/env bash
# Builds Mnemo with its tests and runs every test (ctest), then the ASan/UBSan + libFuzzer build
# (scripts/sanitize.sh) unless MNEMO_SKIP_SANITIZE=1. Build folders: build-test/, build-sanitize/.
#
# This pass runs every test label (tests/README.md): unit, conformance (cpu, cpu_scalar, vulkan,
# vk_fallback, cuda), vulkan, cuda (skipped, with the reason, without an NVIDIA GPU), python, gui,
# fuzz (the corpus replays) and packaging.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build_env.sh

start=$(date +%s)
cmake -S . -B build-test -G Ninja -DCMAKE_BUILD_TYPE=Release -DMNEMO_TESTS=ON "${launcher[@]}"
configured=$(date +%s)
cmake --build build-test -j "$jobs"
built=$(date +%s)
(cd build-test && ctest --output-on-failure -j "$jobs" --timeout 900)
end=$(date +%s)
echo "test.sh: release build and tests took $(( end - start )) s (configure $(( configured - start )) s," \
     "build $(( built - configured )) s, ctest $(( end - built )) s)"

if [ "${MNEMO_SKIP_SANITIZE:-0}" != 1 ]; then
  bash scripts/sanitize.sh
fi
