#!/usr/bin/env bash
# Clang build with AddressSanitizer + UndefinedBehaviorSanitizer for everything, and the
# libFuzzer targets (tests/fuzz/) run for MNEMO_FUZZ_SECONDS each under ctest. The CUDA backend is
# left out: ASan cannot see into GPU kernels (compute-sanitizer does, on a GPU machine; see
# docs/cuda.md), and its host code is built and tested by the release build.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build_env.sh
start=$(date +%s)
CC=clang CXX=clang++ cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMNEMO_SANITIZE=ON -DMNEMO_FUZZ=ON -DMNEMO_CUDA=OFF -DMNEMO_FUZZ_SECONDS="${MNEMO_FUZZ_SECONDS:-20}" "${launcher[@]}"
cmake --build build-sanitize -j "$jobs"
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Without the packaging test: it re-runs cpack (a minute of CI's 2 cores) on programs every other
# test already runs under the sanitizers; the release build checks the packages.
(cd build-sanitize && ctest --output-on-failure -j "$jobs" --timeout 900 -LE packaging)
echo "sanitize.sh: sanitizer build, tests and fuzzing took $(( $(date +%s) - start )) s"
