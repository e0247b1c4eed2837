#!/usr/bin/env bash
# Prepares a GPU check on a machine that has a GPU but not the build dependencies (no Vulkan
# headers, glslc, GoogleTest, gRPC ...), such as the lent H100/H200 machines: builds here, for one
# CUDA architecture and without the GUI, then packs into DIR (default .gpu/, git-ignored) the binaries, the test modules and the shared libraries they need that are
# not glibc's or libstdc++'s (the Vulkan loader and GL dispatch libraries included), xz-compressed,
# with DIR/run.sh, which on the GPU machine unpacks them at the same absolute path and runs
# `scripts/gpu-check.sh --no-build` (its arguments pass through).
#   scripts/gpu-bundle.sh [ARCH]     ARCH: CUDA architecture, default 90 (H100, H200)
# Then, on the GPU machine, from the repository root: bash .gpu/run.sh [--quick]
set -euo pipefail
cd "$(dirname "$0")/.."
arch=${1:-90}
dir=${DIR:-.gpu}
build=build-gpu
root=$PWD
# Without `mnemo serve` (no GPU test of its own): the CLI then needs neither cpp-httplib nor
# brotli, which keeps the bundle smaller.
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DMNEMO_TESTS=ON -DMNEMO_GUI=OFF -DMNEMO_FUZZ=OFF -DMNEMO_SERVE=OFF \
    -DMNEMO_CUDA_ARCHS="${arch}-real" >/dev/null
cmake --build "$build" -j "$(nproc)" --target mnemo_tests mnemo-test-ops mnemo-cuda-bandwidth mnemo_cli

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/$build" "$stage/deps"
# Only what gpu-check.sh runs, and the modules they load: the working tree and the bundle travel
# together under the device tool's 64 MiB.
mkdir -p "$stage/$build/bin"
cp -a "$build"/bin/*.so* "$build"/bin/mnemo "$build"/bin/mnemo_tests "$build"/bin/mnemo-test-ops \
    "$build"/bin/mnemo-cuda-bandwidth "$stage/$build/bin/"
cp -a "$build/test-modules" "$stage/$build/"
find "$stage/$build" -type f \( -perm -u+x -o -name '*.so*' \) -exec strip --strip-unneeded {} + 2>/dev/null || true
# Shared libraries outside the build, but not the C and C++ runtimes: the GPU machine's own are
# newer, and a binary built against older ones runs on them.
for f in "$stage/$build"/bin/*; do [ -f "$f" ] && ldd "$f" 2>/dev/null; done | awk '/=>/ {print $3}' | sort -u |
  grep -v -e "^$root" -e "^$stage" | grep -Ev '/(libc|libm|libstdc\+\+|libgcc_s|libpthread|libdl|librt)\.so' |
  while read -r lib; do cp -L "$lib" "$stage/deps/"; done
# Loaded at run time (dlopen), so ldd does not list them: the Vulkan loader and the GL dispatch
# libraries NVIDIA's Vulkan driver needs.
for lib in libvulkan.so.1 libGLdispatch.so.0 libGLX.so.0 libEGL.so.1 libOpenGL.so.0 libGL.so.1; do
  p=$(ldconfig -p | awk -v l="$lib" '$1 == l && /x86-64/ && !n++ {print $NF}')
  [ -n "$p" ] && cp -L "$p" "$stage/deps/"
done
mkdir -p "$dir"
(cd "$stage" && tar cf - .) | xz -9e -T0 >"$dir/bundle.tar.xz"

cat >"$dir/run.sh" <<EOF
#!/usr/bin/env bash
# Made by scripts/gpu-bundle.sh: run from the repository root on the GPU machine.
set -u
# The binaries name their build and source folders by absolute path ($root).
if [ "\$PWD" != "$root" ]; then
  [ -L "$root" ] && rm -f "$root"
  [ -e "$root" ] && { echo "gpu-bundle: $root exists and is not this checkout" >&2; exit 1; }
  mkdir -p "$(dirname "$root")" && ln -s "\$PWD" "$root"
fi
cd "$root"
tar xJf $dir/bundle.tar.xz -C /tmp/ && rm -rf $build && mv /tmp/$build $build
export LD_LIBRARY_PATH=/tmp/deps\${LD_LIBRARY_PATH:+:\$LD_LIBRARY_PATH}
for j in /usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json /usr/share/vulkan/icd.d/nvidia_icd.json; do
  [ -f "\$j" ] && { export VK_DRIVER_FILES=\$j VK_ICD_FILENAMES=\$j; break; }
done
bash scripts/gpu-check.sh --no-build "\$@"
rc=\$?
# Under the device tool, \$OUT is what comes back: the results in one file.
[ -n "\${OUT:-}" ] && tar cJf "\$OUT/gpu-check.tar.xz" gpu-check
exit \$rc
EOF
chmod +x "$dir/run.sh"
echo "gpu-bundle: $(du -h "$dir/bundle.tar.xz" | cut -f1) in $dir/bundle.tar.xz; on the GPU machine: bash $dir/run.sh [--quick]"
# The device tool carries the tracked files and the bundle together, at most 64 MiB: say when they
# are over, and what the GPU check can do without (the default bank's record segment, which it
# never reads; move it back after the call).
tracked=$(git ls-files -z | xargs -0 stat -c %s | awk '{s += $1} END {print s}')
bundle=$(stat -c %s "$dir/bundle.tar.xz")
if [ $((tracked + bundle)) -gt $((64 * 1024 * 1024 - 1024 * 1024)) ]; then
  echo "gpu-bundle: tracked files $((tracked / 1048576)) MiB + bundle $((bundle / 1048576)) MiB leave under 1 MiB of the device tool's 64 MiB;" \
       "for the call, move assets/world/bank/seg-000001-0000.rec aside (the GPU check does not read it) and back after" >&2
fi
