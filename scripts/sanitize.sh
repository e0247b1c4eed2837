#!/usr/bin/env bash
# Clang build with AddressSanitizer + UndefinedBehaviorSanitizer for everything, and the
# libFuzzer targets (tests/fuzz/) run for MNEMO_FUZZ_SECONDS each under ctest. The CUDA backend is
# left out: ASan cannot see into GPU kernels (compute-sanitizer does, on a GPU machine; see
# docs/cuda.md), and its host code is built and tested by the release build.
#
# Which tests run here, by ctest label (tests/README.md): only those that run instrumented code
# the other tests of this pass do not already run.
#   run:       unit (the GoogleTest suites, their Vulkan groups included: the Vulkan backend's host
#              code), conformance cpu, cpu_scalar and vulkan (every kernel and op path of the CPU
#              module, and the Vulkan module's host side of every op), gui (the Qt app's code),
#              fuzz (the libFuzzer targets: this build only).
#   left out:  python       (-LE python): the Python tools' own tests; no instrumented code runs in
#                           them but bin/mnemo in the converter round trips, on models whose
#                           architectures the plugin and model tests load here;
#              vk_fallback  (-LE vk_fallback): the Vulkan conformance cases again on the fallback
#                           shaders; the shaders run in lavapipe, which is not instrumented, and
#                           the host code is the same as in vulkan.conformance (the staged buffer
#                           path: VulkanBackend tests);
#              packaging    (not registered in sanitizer builds: tests/packaging/CMakeLists.txt);
#              ceph_programs (-LE ceph_programs): the RADOS bank end to end and under faults through
#                           the programs against a real Ceph cluster (minutes, mostly the cluster's
#                           start and a lock lease); the RADOS store's own code runs instrumented in
#                           kb.rados_store.
# The release pass (scripts/test.sh) runs all of them.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/build_env.sh
start=$(date +%s)
CC=clang CXX=clang++ cmake -S . -B build-sanitize -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DMNEMO_SANITIZE=ON -DMNEMO_FUZZ=ON -DMNEMO_CUDA=OFF -DMNEMO_FUZZ_SECONDS="${MNEMO_FUZZ_SECONDS:-20}" "${launcher[@]}"
configured=$(date +%s)
cmake --build build-sanitize -j "$jobs"
built=$(date +%s)
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
(cd build-sanitize && ctest --output-on-failure -j "$jobs" --timeout 900 -LE '^(python|vk_fallback|packaging|ceph_programs)$')
end=$(date +%s)
echo "sanitize.sh: sanitizer build, tests and fuzzing took $(( end - start )) s (configure $(( configured - start )) s," \
     "build $(( built - configured )) s, ctest $(( end - built )) s)"
