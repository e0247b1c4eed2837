#!/usr/bin/env bash
# The edge build for arm64: installs the Debian cross toolchain, qemu-user-static and the arm64
# libraries, cross-compiles the `edge-arm64` preset (CMakePresets.json) and runs, under
# qemu-aarch64-static -L / (the host's arm64 multiarch root: its ld.so and libc must be one glibc
# build, or every emulated pthread_create hangs; emulator.thread_probe checks that first):
#   - the CPU conformance suite on the NEON kernels and again on the portable ones
#     (MNEMO_CPU_ISA=scalar), the CPU backend's self-test on both (1-3 threads), the reference ops;
#   - the whole-model tests on the CPU backend (tiny models, default model, Memory3 sessions);
#   - the arm64 .deb: cpack, control fields, unpacked into a temporary root, `mnemo devices` and
#     `mnemo run` from there (scripts/edge-arm64-deb.sh).
# Measured 2026-11-25 (docs/edge.md): 283 of 283 tests in 316 s and the .deb step in 24 s at -j2
# on 2 shared cores, after a cross build of about 15 minutes. Not part of CI (.ci/run already takes
# ~34 minutes on 2 cores; this adds a second full build): docs/edge.md says why.
#
#   scripts/edge-arm64.sh              install (when missing), build, test, package
#   scripts/edge-arm64.sh --no-install build, test and package only
#   MNEMO_ARM64_TESTS=<ctest regex>    run these tests instead of the default selection
#   MNEMO_ARM64_VULKAN=1               also the Vulkan conformance cases and model tests on arm64
#                                      lavapipe (they pass, with f16 widened by integer ops
#                                      around a lavapipe/LLVM 15 bug; about 11 more minutes; edge.md)
set -euo pipefail
cd "$(dirname "$0")/.."

install=1
for arg in "$@"; do
  case "$arg" in
    --no-install) install=0 ;;
    -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
    *) echo "edge-arm64.sh: unknown option '$arg' (expected --no-install)" >&2; exit 2 ;;
  esac
done

# Where libsentencepiece-dev:arm64 is unpacked: it is not Multi-Arch: same, so installing it would
# remove the amd64 one the native build needs (cmake/toolchain-debian-arm64.cmake reads it here).
extra_prefix=/opt/mnemo-arm64

sudo_cmd=()
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "edge-arm64.sh: run as root or install sudo" >&2; exit 1; }
  sudo_cmd=(sudo)
fi

install_deps() {
  bash scripts/install-deps.sh   # the host's tools: cmake, ninja, glslc, protoc, grpc_cpp_plugin
  local packages=(
    crossbuild-essential-arm64 qemu-user-static
    libvulkan-dev:arm64 mesa-vulkan-drivers:arm64   # loader + lavapipe, for the Vulkan backend and its tests
    libgtest-dev:arm64
    libgrpc++-dev:arm64 libprotobuf-dev:arm64        # the knowledge client (mnemo --kb)
    libcpp-httplib-dev:arm64 libssl-dev:arm64        # mnemo serve (the OpenAI-compatible API)
  )
  local missing=()
  if ! dpkg --print-foreign-architectures | grep -qx arm64; then
    "${sudo_cmd[@]}" dpkg --add-architecture arm64
    missing=("${packages[@]}")
  else
    for p in "${packages[@]}"; do
      dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
    done
  fi
  if [ "${#missing[@]}" -gt 0 ] || [ ! -f "$extra_prefix/usr/lib/aarch64-linux-gnu/pkgconfig/sentencepiece.pc" ] ||
     [ ! -f "$extra_prefix/DEBIAN/shlibs" ]; then
    export DEBIAN_FRONTEND=noninteractive
    "${sudo_cmd[@]}" apt-get update -qq
  fi
  if [ "${#missing[@]}" -gt 0 ]; then
    echo "edge-arm64: installing ${missing[*]}"
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
  if [ ! -f "$extra_prefix/usr/lib/aarch64-linux-gnu/pkgconfig/sentencepiece.pc" ] ||
     [ ! -f "$extra_prefix/DEBIAN/shlibs" ]; then
    local tmp
    tmp=$(mktemp -d)
    (cd "$tmp" && chmod 777 . && apt-get download libsentencepiece0:arm64 libsentencepiece-dev:arm64)
    "${sudo_cmd[@]}" mkdir -p "$extra_prefix"
    for deb in "$tmp"/*.deb; do "${sudo_cmd[@]}" dpkg-deb -x "$deb" "$extra_prefix"; done
    # The runtime package's control files (shlibs): cpack's dpkg-shlibdeps reads them to name
    # libsentencepiece0 as a dependency of the arm64 .deb (packaging/cpack_settings.cmake).
    "${sudo_cmd[@]}" rm -rf "$extra_prefix/DEBIAN"
    "${sudo_cmd[@]}" dpkg-deb -e "$tmp"/libsentencepiece0_*.deb "$extra_prefix/DEBIAN"
    # The .pc file says prefix=/usr; the headers are the amd64 package's (same version, arch-independent).
    "${sudo_cmd[@]}" sed -i "s|^prefix=/usr\$|prefix=$extra_prefix/usr|" \
      "$extra_prefix/usr/lib/aarch64-linux-gnu/pkgconfig/sentencepiece.pc"
    rm -rf "$tmp"
  fi
}

[ "$install" = 1 ] && install_deps

source scripts/build_env.sh
start=$(date +%s)
cmake --preset edge-arm64 "${launcher[@]}"
cmake --build --preset edge-arm64 -j "$jobs"
built=$(date +%s)
echo "edge-arm64: cross build took $(( built - start )) s"

# What runs under emulation (binfmt_misc is usually not registered in containers, so tests that
# start bin/mnemo as a child process cannot run; CMAKE_CROSSCOMPILING_EMULATOR covers the
# programs ctest starts itself). Parameterised tests are named "Prefix/Suite.Test/param  #
# GetParam() = ...", hence "( |$)" after a parameter.
#  - cpu.conformance: every op's conformance cases (Conformance/BackendOps.Run/cpu*) on the NEON
#    kernels, in one process (an emulated start costs 1-3 s; tests/CMakeLists.txt), each with 1, 2
#    and 3 threads, and cpu_scalar.conformance the same cases on the portable kernels
#    (MNEMO_CPU_ISA=scalar);
#  - CpuBackend.*: the CPU module's buffer contract and index errors, with 1, 2 and 3 threads;
#  - Golden/OpsGolden: the reference ops (what conformance compares against) against NumPy;
#  - the whole-model tests: every tiny model on the CPU backend against the reference and the
#    PyTorch goldens (Models/BackendModels, Models/MemoryModelGoldens, Models/GoldenLogits,
#    TinyModels/CompareCpuCpu), the default model and the Memory3 / Memory3+UltraMem sessions on
#    the CPU (Backends/...), the default model's tokenizer, the model plugins and sessions.
default_tests='^cpu\.conformance$|^cpu_scalar\.conformance$|^CpuBackend\.|^Golden/OpsGolden\.'
default_tests+='|^Models/BackendModels\.MatchCpu/.*__cpu|^BackendModels\.Every|^Models/MemoryModelGoldens\.|^Models/GoldenLogits'
default_tests+='|^TinyModels/CompareCpuCpu\.|^DefaultModelTokenizer\.'
default_tests+='|^Backends/(DefaultModel|Memory3Session|Memory3UltraMemSession)\.[^ ]*/cpu( |$)'
default_tests+='|Plugin[./]|^Memory3UltraMem\.|^Memory3(Layout|Errors|Blocks)\.|^Session\.'
tests="${MNEMO_ARM64_TESTS:-$default_tests}"
if [ "${MNEMO_ARM64_VULKAN:-0}" = 1 ]; then
  tests="$tests|^vulkan\.conformance$|^VulkanHalfWidening\.|^Models/BackendModels\.MatchCpu/.*__vulkan|^Backends/DefaultModel\.[^ ]*/vulkan( |$)"
fi
# First: can an emulated program start a thread? (Seconds, instead of every multi-threaded test
# hanging until its timeout when the emulator's ld.so and libc do not match; docs/edge.md.)
ctest --preset edge-arm64 -R '^emulator\.thread_probe$' ||
  { echo "edge-arm64: an emulated program cannot start a thread: see 'Threads under emulation' in docs/edge.md" >&2; exit 1; }
ctest --preset edge-arm64 -j "$jobs" -R "$tests"
tested=$(date +%s)
echo "edge-arm64: emulated tests took $(( tested - built )) s"

# The arm64 .deb: cpack from the cross build, unpacked and run under emulation.
scripts/edge-arm64-deb.sh build-edge-arm64
echo "edge-arm64: the .deb step took $(( $(date +%s) - tested )) s"
