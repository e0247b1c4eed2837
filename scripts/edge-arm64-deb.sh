#!/usr/bin/env bash
# The arm64 .deb of the edge build, made and run under emulation (called by scripts/edge-arm64.sh
# after its tests; docs/edge.md has the figures):
#   1. cpack -G DEB from the cross build folder into a scratch folder;
#   2. the control fields: Architecture must be arm64, and every dependency that dpkg-shlibdeps
#      found must be an arm64 package installed here (the libraries the build linked against);
#   3. every program and module in the package is an AArch64 ELF file;
#   4. dpkg-deb -x into a temporary root, then from there, under qemu-aarch64-static with an empty
#      environment: `mnemo devices` (every module loaded from the root) and `mnemo run` on the
#      packaged default model, which must write what the build tree's mnemo writes;
#   5. sizes: the .deb, its installed size, and each file (stripped, as packaged).
# Exits non-zero with the reason on any failure.
#
# usage: scripts/edge-arm64-deb.sh [BUILD_DIR]   (default build-edge-arm64)
#   MNEMO_ARM64_DEB_KEEP=DIR   leave the .deb in DIR as well
set -euo pipefail
cd "$(dirname "$0")/.."

build=$(cd "${1:-build-edge-arm64}" && pwd)
# fd 3: the real stderr, also inside the `{ time ...; } 2>file` blocks below.
exec 3>&2
fail() { printf 'edge-arm64-deb: FAIL: %b\n' "$*" >&3; exit 1; }
for tool in cpack dpkg-deb dpkg-shlibdeps dpkg-query qemu-aarch64-static file aarch64-linux-gnu-objdump; do
  command -v "$tool" >/dev/null || fail "$tool is not installed (scripts/edge-arm64.sh installs what it needs)"
done
[ -f "$build/CPackConfig.cmake" ] || fail "$build is not a configured build folder (no CPackConfig.cmake)"
[ -x "$build/bin/mnemo" ] || fail "$build/bin/mnemo is not built"

work=$(mktemp -d "${TMPDIR:-/tmp}/mnemo-arm64-deb.XXXXXX")
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home"
# Emulated with the host's arm64 multiarch root (-L /): its ld.so and libc are one glibc build,
# as cmake/toolchain-debian-arm64.cmake explains. An empty environment, so that the packaged mnemo
# finds its modules and model without MNEMO_* variables.
run_arm64() { env -i PATH=/usr/bin:/bin HOME="$work/home" LANG=C.UTF-8 qemu-aarch64-static -L / "$@"; }

# ---------------------------------------------------------------- 1. cpack
TIMEFORMAT='%R s wall'
{ time cpack --config "$build/CPackConfig.cmake" -G DEB -B "$work/out" > "$work/cpack.log" 2>&1 ||
  { cat "$work/cpack.log" >&3; fail "cpack -G DEB failed"; }; } 2> "$work/time"
echo "edge-arm64-deb: cpack -G DEB took $(cat "$work/time")"
mapfile -t debs < <(ls "$work/out"/*.deb 2>/dev/null)
[ "${#debs[@]}" -ge 1 ] || fail "cpack made no .deb:\n$(cat "$work/cpack.log")"

# ---------------------------------------------------------------- 2. control fields
# Packages that cannot be installed beside their amd64 build (libsentencepiece0) are unpacked into
# the toolchain's extra prefix, with the runtime package's control files in DEBIAN/.
extra_prefix=$(sed -n 's/^MNEMO_ARM64_EXTRA_PREFIX:PATH=//p' "$build/CMakeCache.txt")
extra_package=""
if [ -n "$extra_prefix" ] && [ -f "$extra_prefix/DEBIAN/control" ]; then
  extra_package=$(sed -n 's/^Package: //p' "$extra_prefix/DEBIAN/control")
fi
deb=""
for f in "${debs[@]}"; do
  arch=$(dpkg-deb -f "$f" Architecture)
  [ "$arch" = arm64 ] || fail "$(basename "$f"): Architecture is '$arch', expected arm64"
  [ "$(dpkg-deb -f "$f" Package)" = mnemo ] && deb=$f
done
[ -n "$deb" ] || fail "no mnemo package among ${debs[*]}"
depends=$(dpkg-deb -f "$deb" Depends)
[ -n "$depends" ] || fail "$(basename "$deb") has no Depends (dpkg-shlibdeps found nothing?)"
echo "edge-arm64-deb: $(basename "$deb"): Architecture: arm64"
echo "edge-arm64-deb: Depends: $depends"
echo "edge-arm64-deb: Recommends: $(dpkg-deb -f "$deb" Recommends)"
IFS=',' read -ra clauses <<<"$depends"
for clause in "${clauses[@]}"; do
  ok=0
  IFS='|' read -ra alts <<<"$clause"
  for alt in "${alts[@]}"; do
    name=$(awk '{print $1}' <<<"$alt")
    # The arm64 build of the library the cross build linked against (multiarch, installed here).
    dpkg-query -W -f='${Status}\n' "$name:arm64" 2>/dev/null | grep -q "install ok installed" && { ok=1; break; }
    [ "$name" = "$extra_package" ] && { ok=1; break; }
  done
  [ "$ok" = 1 ] || fail "Depends '$clause': no arm64 package of that name is installed (or unpacked in $extra_prefix) here"
done

# ---------------------------------------------------------------- 3. unpack, ELF machine
root="$work/root"
dpkg-deb -x "$deb" "$root"
[ -x "$root/usr/bin/mnemo" ] || fail "the package has no /usr/bin/mnemo"
[ -f "$root/usr/share/mnemo/default-model/config.json" ] || fail "the package has no default model in /usr/share/mnemo/default-model"
n_elf=0
while IFS= read -r -d '' f; do
  desc=$(file -b "$f")
  case "$desc" in
    ELF*) grep -q "ARM aarch64" <<<"$desc" || fail "$f is not an AArch64 ELF file: $desc"; n_elf=$((n_elf + 1)) ;;
  esac
done < <(find "$root/usr/bin" "$root/usr/lib/mnemo" -type f -print0)
echo "edge-arm64-deb: $n_elf ELF files, all AArch64"

# Every library the package's programs and modules need, outside the package itself, belongs to
# a package named in Depends: the arm64 multiarch package that owns it here, or a package unpacked
# into the toolchain's extra prefix (its DEBIAN/control, scripts/edge-arm64.sh).
mapfile -t needed < <(find "$root/usr/bin" "$root/usr/lib/mnemo" -type f -exec aarch64-linux-gnu-objdump -p {} \; 2>/dev/null |
  awk '$1 == "NEEDED" {print $2}' | sort -u)
dep_names=" $(sed -E 's/\([^)]*\)//g; s/[,|]/ /g' <<<"$depends" | xargs) "
for soname in "${needed[@]}"; do
  [ -e "$root/usr/lib/mnemo/$soname" ] && continue   # libmnemo, libmnemo-kb-proto: in the package
  owner=""
  for dir in /usr/lib/aarch64-linux-gnu /lib/aarch64-linux-gnu; do
    [ -e "$dir/$soname" ] || continue
    owner=$(dpkg-query -S "$dir/$soname" 2>/dev/null | head -1 | cut -d: -f1) && [ -n "$owner" ] && break
  done
  if [ -z "$owner" ] && [ -n "$extra_package" ] && [ -e "$extra_prefix/usr/lib/aarch64-linux-gnu/$soname" ]; then
    owner=$extra_package
  fi
  [ -n "$owner" ] || fail "no arm64 package here provides $soname (needed by the package)"
  [[ "$dep_names" == *" $owner "* ]] || fail "$soname comes from $owner, which Depends does not name: $depends"
done
echo "edge-arm64-deb: the ${#needed[@]} libraries the package needs are its own or in Depends"

# ---------------------------------------------------------------- 4. run from the unpacked root
{ time devices=$(run_arm64 "$root/usr/bin/mnemo" devices 2>&1) || fail "mnemo devices (from the .deb) failed:\n$devices"; } 2> "$work/time"
echo "edge-arm64-deb: mnemo devices (from the .deb, emulated, $(cat "$work/time")):"
sed 's/^/    /' <<<"$devices"
grep -q "^cpu " <<<"$devices" || fail "mnemo devices lists no cpu backend:\n$devices"
paths=$(grep -oE '\(/[^)]*\.so\)' <<<"$devices" | tr -d '()')
[ -n "$paths" ] || fail "mnemo devices names no module file:\n$devices"
while read -r p; do
  case "$p" in "$root/usr/lib/mnemo"/*) ;; *) fail "module $p was loaded from outside the unpacked package" ;; esac
done <<<"$paths"

prompt=(run -p "Where was Tour Hujert born?" -n 6 --greedy --backend cpu)
expected=$(run_arm64 "$build/bin/mnemo" "${prompt[@]}" 2>"$work/run-build.err") ||
  { cat "$work/run-build.err" >&3; fail "the build tree's mnemo run failed"; }
{ time got=$(run_arm64 "$root/usr/bin/mnemo" "${prompt[@]}" 2>"$work/run.err") ||
  { cat "$work/run.err" >&3; fail "mnemo run (from the .deb) failed"; }; } 2> "$work/time"
[ -n "$got" ] || fail "mnemo run (from the .deb) wrote nothing"
[ "$got" = "$expected" ] || fail "mnemo run from the .deb wrote '$got', the build tree's '$expected'"
echo "edge-arm64-deb: mnemo ${prompt[*]} (from the .deb, emulated, $(cat "$work/time")): $got"

# ---------------------------------------------------------------- 5. sizes
printf 'edge-arm64-deb: %s: %s bytes, Installed-Size %s KiB\n' "$(basename "$deb")" \
  "$(stat -c %s "$deb")" "$(dpkg-deb -f "$deb" Installed-Size)"
echo "edge-arm64-deb: packaged files (KiB, stripped by cpack):"
(cd "$root/usr" && find bin lib -type f -printf '%s\t%p\n' | sort -k2 | awk -F'\t' '{printf "    %6.0f  %s\n", $1 / 1024, $2}')
for d in default-model world; do
  du -sb "$root/usr/share/mnemo/$d" | awk -v name="share/mnemo/$d" '{printf "    %6.0f  %s\n", $1 / 1024, name}'
done
if [ -n "${MNEMO_ARM64_DEB_KEEP:-}" ]; then
  mkdir -p "$MNEMO_ARM64_DEB_KEEP" && cp "$deb" "$MNEMO_ARM64_DEB_KEEP"/
  echo "edge-arm64-deb: kept $MNEMO_ARM64_DEB_KEEP/$(basename "$deb")"
fi
echo "edge-arm64-deb: OK"
