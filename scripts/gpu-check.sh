#!/usr/bin/env bash
# Everything that needs a GPU, in one run (for a machine with an NVIDIA GPU and the CUDA
# Toolkit): builds for this GPU's architecture only, runs the CUDA and Vulkan tests, the CUDA op
# tests under compute-sanitizer memcheck, the device copy bandwidth, per-op times and decode
# benchmarks, printing each result as it comes. Logs, gtest XML and JSON go to GPU_CHECK_OUT
# (default gpu-check/).
#   scripts/gpu-check.sh [--quick] [--no-build]
#     --quick     tests only: no sanitizer and no benchmarks
#     --no-build  use the build already in BUILD (default build-gpu), e.g. one made elsewhere by
#                 scripts/gpu-bundle.sh (which runs this script that way through .gpu/run.sh)
# STEP_TIMEOUT (seconds, default 240) bounds each step, so that a hang costs one step, not the run.
set -uo pipefail
cd "$(dirname "$0")/.."
out=${GPU_CHECK_OUT:-gpu-check}
build=${BUILD:-build-gpu}
step_timeout=${STEP_TIMEOUT:-240}
quick=0 no_build=0
for a in "$@"; do
  case "$a" in
    --quick) quick=1 ;;
    --no-build) no_build=1 ;;
    *) echo "gpu-check: unknown option '$a' (expected --quick or --no-build)" >&2; exit 2 ;;
  esac
done
mkdir -p "$out"
out_abs=$(cd "$out" && pwd)
jobs=$(nproc)
t0=$SECONDS
stamp() { echo "[gpu-check +$((SECONDS - t0))s] $*"; }

nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv,noheader | tee "$out/gpu.txt"
if [ "$no_build" = 0 ]; then
  # Only this GPU's architecture (e.g. 9.0 -> 90-real) and only the targets this script runs.
  arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -1 | tr -d ' .')
  stamp "configure (CUDA arch ${arch:-default})"
  cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMNEMO_TESTS=ON -DMNEMO_GUI=OFF \
      -DMNEMO_FUZZ=OFF ${arch:+-DMNEMO_CUDA_ARCHS=${arch}-real} >"$out/configure.log" 2>&1 \
    || { tail -20 "$out/configure.log"; exit 1; }
  stamp "build"
  cmake --build "$build" -j "$jobs" --target mnemo_tests mnemo-test-ops mnemo-cuda-bandwidth mnemo_cli \
      >"$out/build.log" 2>&1 || { tail -30 "$out/build.log"; exit 1; }
fi
bin=$build/bin
"$bin/mnemo" devices | tee "$out/devices.txt"

# Op conformance, whole-model and error checks on each GPU backend, one process per backend
# running side by side. The gtest binary is run directly, not through ctest: ctest's groups name
# the devices of the machine that built them, which need not be this one.
export MNEMO_VK_CACHE_DIR=$PWD/$build/vk-pipeline-cache
stamp "tests (cuda and vulkan in parallel)"
declare -A filter=([cuda]='*cuda*:*Cuda*:*CUDA*' [vulkan]='*vulkan*:*Vulkan*')
mkdir -p "$build/tests"  # the folder ctest runs the tests in
for b in cuda vulkan; do
  (cd "$build/tests" && timeout "$step_timeout" ../bin/mnemo_tests --gtest_filter="${filter[$b]}" \
      --gtest_output="xml:$out_abs/tests-$b.xml" >"$out_abs/tests-$b.log" 2>&1; echo $? >"$out_abs/tests-$b.rc") &
done
wait
for b in cuda vulkan; do
  rc=$(cat "$out/tests-$b.rc")
  summary=$(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/tests-$b.log" | tr '\n' ' ')
  stamp "tests $b: exit $rc; $summary"
  grep -E '^\[  FAILED  \]' "$out/tests-$b.log" | head -40
done
"$bin/mnemo-test-ops" support --markdown "$out/ops.md" >/dev/null && sed -n '7,40p' "$out/ops.md"
[ "$quick" = 1 ] && exit 0

# Out-of-bounds accesses inside the CUDA kernels (graphs off: each kernel launched by itself).
cs=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
if [ -x "$cs" ]; then
  stamp "compute-sanitizer memcheck"
  MNEMO_CUDA_GRAPHS=0 timeout "$step_timeout" "$cs" --tool memcheck --error-exitcode 3 \
      "$bin/mnemo-test-ops" test -b cuda >"$out/memcheck.log" 2>&1
  stamp "memcheck exit $? ($(grep -c 'ERROR SUMMARY: 0 errors' "$out/memcheck.log") clean summaries); $(grep -m1 'ERROR SUMMARY' "$out/memcheck.log")"
  grep -m 10 -E 'Invalid|ERROR:' "$out/memcheck.log"
fi

stamp "bandwidth and per-op times"
timeout 60 "$bin/mnemo-cuda-bandwidth" --json | tee "$out/cuda-bandwidth.json"
for b in cuda vulkan; do
  timeout 120 "$bin/mnemo-test-ops" perf -b "$b" --json >"$out/ops-perf-$b.json" 2>"$out/ops-perf-$b.err"
  stamp "ops perf $b: exit $?"
done

# Decode roofline of a Llama-3.2-1B-shaped f16 checkpoint (random weights), when python3 has numpy.
model=${MODEL:-bench-models/llama-3.2-1b-random}
if [ ! -d "$model" ] && python3 -c 'import numpy' 2>/dev/null; then
  stamp "making $model"
  python3 tools/test_models/make_checkpoint.py --preset llama-3.2-1b --out "$model" >/dev/null
fi
if [ -d "$model" ]; then
  for b in cuda vulkan; do
    timeout 180 "$bin/mnemo" bench -m "$model" -p 512 -n 128 -r 3 --backend "$b" --json >"$out/bench-1b-$b.json" 2>"$out/bench-1b-$b.err"
    stamp "bench $b: exit $?: $(head -c 600 "$out/bench-1b-$b.json" | tr '\n' ' ')"
  done
fi
stamp "results in $out/"
