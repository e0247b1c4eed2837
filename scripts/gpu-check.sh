#!/usr/bin/env bash
# Everything that needs a GPU, in one run (for a machine with an NVIDIA GPU and the CUDA
# Toolkit): builds with tests, runs the CUDA and Vulkan tests, the CUDA op tests under
# compute-sanitizer memcheck, the device copy bandwidth, and decode benchmarks. Results go to
# OUT (default gpu-check/): ctest logs, sanitizer log, bandwidth and bench JSON.
#   scripts/gpu-check.sh [--quick]    --quick: tests only, no sanitizer and no benchmarks
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-check}
quick=0
[ "${1:-}" = "--quick" ] && quick=1
mkdir -p "$out"
jobs=$(nproc)
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DMNEMO_TESTS=ON >"$out/configure.log" 2>&1 || { tail -20 "$out/configure.log"; exit 1; }
cmake --build build-gpu -j "$jobs" >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
build-gpu/bin/mnemo devices | tee "$out/devices.txt"

# Op conformance and whole-model checks on every GPU device (ctest names carry the backend).
(cd build-gpu && ctest -j "$jobs" --timeout 900 -R 'cuda|vulkan|Gpu|Compare' --output-on-failure) >"$out/ctest-gpu.log" 2>&1
tail -5 "$out/ctest-gpu.log"
build-gpu/bin/mnemo-test-ops support --markdown "$out/ops.md" >/dev/null && cat "$out/ops.md" | sed -n '7,40p'
[ "$quick" = 1 ] && exit 0

# Out-of-bounds accesses and races inside the CUDA kernels.
if command -v compute-sanitizer >/dev/null || [ -x /usr/local/cuda/bin/compute-sanitizer ]; then
  cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
  MNEMO_CUDA_GRAPHS=0 "$cs" --tool memcheck --error-exitcode 3 build-gpu/bin/mnemo-test-ops test -b cuda >"$out/memcheck.log" 2>&1
  echo "memcheck exit $? ($(grep -c 'ERROR SUMMARY: 0 errors' "$out/memcheck.log") clean summaries)"
fi

build-gpu/bin/mnemo-cuda-bandwidth --json | tee "$out/cuda-bandwidth.json"
build-gpu/bin/mnemo-test-ops perf -b cuda --json >"$out/ops-perf-cuda.json" 2>/dev/null
build-gpu/bin/mnemo-test-ops perf -b vulkan --json >"$out/ops-perf-vulkan.json" 2>/dev/null

# Decode roofline of a Llama-3.2-1B-shaped f16 checkpoint (random weights), when python3 has numpy.
model=${MODEL:-bench-models/llama-3.2-1b-random}
if [ ! -d "$model" ] && python3 -c 'import numpy' 2>/dev/null; then
  python3 tools/test_models/make_checkpoint.py --preset llama-3.2-1b --out "$model" >/dev/null
fi
if [ -d "$model" ]; then
  for b in cuda vulkan; do
    build-gpu/bin/mnemo bench -m "$model" -p 512 -n 128 -r 3 --backend "$b" --json >"$out/bench-1b-$b.json" 2>"$out/bench-1b-$b.err" \
      && echo "bench $b: $out/bench-1b-$b.json"
  done
fi
echo "gpu-check: results in $out/"
