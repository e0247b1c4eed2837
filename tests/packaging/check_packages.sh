#!/usr/bin/env bash
# Builds Mnemo's packages from a build folder and runs them from where they were unpacked
# (packaging/README.md; ctest: packaging.packages):
#   1. cpack -G DEB and -G TGZ into a scratch folder (the build folder is left alone);
#   2. every .deb: control fields (Depends, relations between the packages) and lintian-free
#      maintainer scripts (sh -n), then all of them unpacked into one root with dpkg-deb -x;
#   3. from that root, with an empty environment: mnemo devices / plugins (every module from the
#      root's /usr/lib/mnemo), mnemo run on the bundled default model (the same text the build
#      tree's mnemo writes), mnemo-kb --help, mnemo-kb serve on the packaged world bank answered
#      by mnemo ask --kb, every program's and module's libraries resolved (ldd), and the unit
#      checked with systemd-analyze verify;
#   4. the TGZ unpacked elsewhere, moved, and run from there (relocatable);
#   5. cmake --install with --prefix and with DESTDIR, each run from where it landed.
# Prints sizes and times. Exit 77 (ctest: skipped) with the reason when a tool is missing.
#
# usage: check_packages.sh BUILD_DIR [CPACK] [CMAKE]
#   MNEMO_CHECK_PACKAGES_FROM=DIR: check the packages in DIR instead of running cpack (debugging).
set -euo pipefail

build=$(cd "$1" && pwd)
cpack=${2:-cpack}
cmake=${3:-cmake}

skip() { echo "SKIPPED: $*"; exit 77; }
fail() { printf 'FAIL: %b\n' "$*"; exit 1; }
for tool in "$cpack" "$cmake" dpkg-deb dpkg-shlibdeps dpkg-query ldd; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (dpkg-dev for dpkg-shlibdeps; cmake for cpack)"
done
[ -x "$build/bin/mnemo" ] || fail "$build/bin/mnemo is not built"

work=$(mktemp -d "${TMPDIR:-/tmp}/mnemo-packages.XXXXXX")
kb_pid=""
# SIGTERM, then the server's own shutdown grace (5 s) and a little more before SIGKILL.
stop_kb() {
  [ -n "$kb_pid" ] || return 0
  kill "$kb_pid" 2>/dev/null || true
  for _ in $(seq 1 80); do kill -0 "$kb_pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$kb_pid" 2>/dev/null || true
  wait "$kb_pid" 2>/dev/null || true
  kb_pid=""
}
cleanup() {
  stop_kb
  rm -rf "$work"
}
trap cleanup EXIT

# Programs run with an empty environment: what they find, they find without MNEMO_* variables.
run_clean() { env -i PATH=/usr/bin:/bin HOME="$work/home" LANG=C.UTF-8 "$@"; }
mkdir -p "$work/home"

# ---------------------------------------------------------------- 1. build the packages
out="$work/packages"
if [ -n "${MNEMO_CHECK_PACKAGES_FROM:-}" ]; then
  # Debugging the checks: packages cpack made before (a folder with the .deb files and the TGZ).
  mkdir -p "$out"; cp "$MNEMO_CHECK_PACKAGES_FROM"/*.deb "$MNEMO_CHECK_PACKAGES_FROM"/*.tar.gz "$out"/
else
# Times: wall and CPU (on a loaded machine the CPU time is the figure to compare).
TIMEFORMAT='%R s wall, %U s user, %S s system'
{ time "$cpack" --config "$build/CPackConfig.cmake" -G DEB -B "$out" > "$work/cpack-deb.log" 2>&1 ||
  { cat "$work/cpack-deb.log"; fail "cpack -G DEB failed"; }; } 2> "$work/time-deb"
{ time "$cpack" --config "$build/CPackConfig.cmake" -G TGZ -B "$out" > "$work/cpack-tgz.log" 2>&1 ||
  { cat "$work/cpack-tgz.log"; fail "cpack -G TGZ failed"; }; } 2> "$work/time-tgz"
echo "cpack -G DEB: $(cat "$work/time-deb"); cpack -G TGZ: $(cat "$work/time-tgz")"
fi

mapfile -t debs < <(ls "$out"/*.deb)
tgz=$(ls "$out"/*.tar.gz)
[ "${#debs[@]}" -ge 1 ] || fail "cpack made no .deb"
printf '%-40s %12s %16s\n' package bytes installed-KiB
for f in "${debs[@]}" "$tgz"; do
  size=$(stat -c %s "$f")
  inst=-
  case "$f" in *.deb) inst=$(dpkg-deb -f "$f" Installed-Size) ;; esac
  printf '%-40s %12s %16s\n' "$(basename "$f")" "$size" "$inst"
done

# ---------------------------------------------------------------- 2. control fields, unpack
version=$(dpkg-deb -f "$(ls "$out"/mnemo_*.deb)" Version)
declare -A have
for f in "${debs[@]}"; do have[$(dpkg-deb -f "$f" Package)]=$f; done
[ -n "${have[mnemo]:-}" ] || fail "no mnemo package among: ${!have[*]}"

for pkg in "${!have[@]}"; do
  f=${have[$pkg]}
  depends=$(dpkg-deb -f "$f" Depends)
  [ -n "$depends" ] || fail "$pkg has no Depends"
  echo "$pkg: Depends: $depends"
  # Every other package needs exactly this build's mnemo.
  if [ "$pkg" != mnemo ]; then
    grep -qF "mnemo (= $version)" <<<"$depends" || fail "$pkg does not depend on mnemo (= $version): $depends"
  fi
  # Every dependency names a real Debian package: one alternative at least is installed here,
  # where Mnemo was built and runs (the private libmnemo is no dependency: it is in mnemo).
  IFS=',' read -ra clauses <<<"$depends"
  for clause in "${clauses[@]}"; do
    ok=0
    IFS='|' read -ra alts <<<"$clause"
    for alt in "${alts[@]}"; do
      name=$(awk '{print $1}' <<<"$alt")
      [ "$name" = mnemo ] && { ok=1; break; }
      dpkg-query -W -f='${Status}\n' "$name" 2>/dev/null | grep -q "install ok installed" && { ok=1; break; }
    done
    [ "$ok" = 1 ] || fail "$pkg depends on '$clause', which no installed package provides"
  done
  # Maintainer scripts parse.
  mkdir -p "$work/control/$pkg"
  dpkg-deb -e "$f" "$work/control/$pkg"
  for script in preinst postinst prerm postrm; do
    [ -f "$work/control/$pkg/$script" ] && { sh -n "$work/control/$pkg/$script" || fail "$pkg $script: syntax error"; }
  done
  dpkg-deb -x "$f" "$work/root"
done
if [ -n "${have[mnemo-kb]:-}" ]; then
  grep -qx /etc/mnemo-kb/mnemo-kb.conf "$work/control/mnemo-kb/conffiles" || fail "mnemo-kb.conf is not a conffile"
  grep -q "adduser --system" "$work/control/mnemo-kb/postinst" || fail "mnemo-kb's postinst does not create its system user"
fi
root="$work/root"

# ---------------------------------------------------------------- 3. run from the unpacked .debs
# Every module a program lists must come from inside the tree it runs from.
check_modules_inside() {  # tree, output of `mnemo devices` or `mnemo plugins`
  local tree=$1 listing=$2 paths
  paths=$(grep -oE '\(/[^)]*\.so\)' <<<"$listing" | tr -d '()')
  [ -n "$paths" ] || fail "no module listed:\n$listing"
  while read -r p; do
    case "$p" in "$tree"/*) ;; *) fail "module $p was loaded from outside $tree" ;; esac
  done <<<"$paths"
}
devices=$(run_clean "$root/usr/bin/mnemo" devices) || fail "mnemo devices failed (from the .deb): $devices"
grep -q "^cpu " <<<"$devices" || fail "mnemo devices lists no cpu backend:\n$devices"
check_modules_inside "$root/usr/lib/mnemo" "$devices"
plugins=$(run_clean "$root/usr/bin/mnemo" plugins) || fail "mnemo plugins failed (from the .deb)"
check_modules_inside "$root/usr/lib/mnemo" "$plugins"
echo "from the .deb: $(grep -c '^[a-z]' <<<"$devices") backends, $(grep -c '^[a-z]' <<<"$plugins") plugins, all from $root/usr/lib/mnemo"

# The default model, found in <root>/usr/share/mnemo (the build tree's copy is only for programs
# in the build's bin folder): the packaged mnemo writes what the build tree's mnemo writes.
prompt=(run -p "Where was Tour Hujert born?" -n 6 --greedy)
expected=$(run_clean "$build/bin/mnemo" "${prompt[@]}" 2>/dev/null) || fail "build tree's mnemo run failed"
got=$(run_clean "$root/usr/bin/mnemo" "${prompt[@]}" 2>"$work/run.err") || { cat "$work/run.err"; fail "mnemo run failed (from the .deb)"; }
[ -n "$got" ] || fail "mnemo run (from the .deb) wrote nothing"
[ "$got" = "$expected" ] || fail "mnemo run from the .deb wrote '$got', the build tree's '$expected'"
echo "mnemo run (from the .deb, default model): $got"

if [ -n "${have[mnemo-kb]:-}" ]; then
  help=$(run_clean "$root/usr/bin/mnemo-kb" --help) || fail "mnemo-kb --help failed (from the .deb)"
  grep -q serve <<<"$help" || fail "mnemo-kb --help does not mention serve:\n$help"
  echo "mnemo-kb --help (from the .deb): ok"
  # The packaged server on the packaged bank, asked by the packaged client (loopback, port 0).
  if grep -q "serve" <<<"$help" && [ -f "$root/usr/share/mnemo/world/bank/CURRENT" ]; then
    # env execs the server, so $! is the server itself (a shell function here would leave it
    # running after `kill`); its output goes to a file, not to ctest's pipe.
    env -i PATH=/usr/bin:/bin HOME="$work/home" "$root/usr/bin/mnemo-kb" serve "$root/usr/share/mnemo/world/bank" \
      --listen 127.0.0.1:0 --insecure --no-auth --log-quiet --port-file "$work/kb.port" >"$work/kb.out" 2>"$work/kb.err" &
    kb_pid=$!
    for _ in $(seq 1 300); do [ -s "$work/kb.port" ] && break; kill -0 "$kb_pid" 2>/dev/null || break; sleep 0.1; done
    [ -s "$work/kb.port" ] || { cat "$work/kb.err"; fail "mnemo-kb serve (from the .deb) did not start"; }
    port=$(cat "$work/kb.port")
    answer=$(run_clean "$root/usr/bin/mnemo" ask -q "Where was Tour Hujert born?" --kb "grpc://127.0.0.1:$port" \
      --retrieval bm25 2>&1) || { echo "$answer"; fail "mnemo ask --kb against the packaged server failed"; }
    grep -q "^A: " <<<"$answer" || fail "mnemo ask --kb gave no answer:\n$answer"
    grep -qi "no explicit memories" <<<"$answer" && fail "mnemo ask --kb read no memories from the packaged server:\n$answer"
    echo "mnemo ask --kb (packaged server, port $port): $(grep '^A: ' <<<"$answer")"
    stop_kb
  fi
fi

# Every ELF file of the packages finds all its libraries (Qt's included, for mnemo-chat).
while IFS= read -r -d '' elf; do
  missing=$(ldd "$elf" 2>&1 | grep "not found" || true)
  [ -z "$missing" ] || fail "$elf: $missing"
done < <(find "$root/usr/bin" "$root/usr/lib/mnemo" -type f -print0)
echo "ldd: every program and module of the packages resolves its libraries"

if [ -n "${have[mnemo-kb]:-}" ]; then
  unit=lib/systemd/system/mnemo-kb.service
  [ -f "$root/$unit" ] || fail "mnemo-kb has no $unit"
  if ! command -v systemd-analyze >/dev/null; then
    echo "systemd-analyze verify: SKIPPED (systemd-analyze is not installed: apt-get install systemd)"
  else
    # Verified inside the unpacked root (so ExecStart's /usr/bin/mnemo-kb is the packaged one),
    # with this system's own units next to it for the targets it names.
    cp -rn /lib/systemd/system/. "$root/lib/systemd/system/" 2>/dev/null || true
    if verify=$(systemd-analyze verify --man=no --root="$root" "/$unit" 2>&1) && [ -z "$verify" ]; then
      echo "systemd-analyze verify $unit: ok"
    elif grep -qiE "Failed to (initialize|connect|create bus)|No such file or directory.*systemd" <<<"$verify"; then
      echo "systemd-analyze verify: SKIPPED (it cannot run in this container: $verify)"
    else
      fail "systemd-analyze verify $unit:\n$verify"
    fi
  fi
fi

# ---------------------------------------------------------------- 4. the relocatable TGZ
mkdir -p "$work/somewhere/else"
tar -xzf "$tgz" -C "$work/somewhere/else"
mapfile -t top < <(ls "$work/somewhere/else")
[ "${#top[@]}" = 1 ] || fail "the TGZ has no single top-level folder: ${top[*]}"
mv "$work/somewhere/else/${top[0]}" "$work/somewhere/moved"
tree="$work/somewhere/moved"
devices=$(run_clean "$tree/bin/mnemo" devices) || fail "mnemo devices failed (from the TGZ)"
check_modules_inside "$tree/lib" "$devices"
got=$(run_clean "$tree/bin/mnemo" "${prompt[@]}" 2>"$work/run.err") || { cat "$work/run.err"; fail "mnemo run failed (from the TGZ)"; }
[ "$got" = "$expected" ] || fail "mnemo run from the TGZ wrote '$got', the build tree's '$expected'"
[ ! -e "$tree/etc" ] || fail "the TGZ holds etc/ (Debian-only files)"
echo "TGZ unpacked and moved to $tree: mnemo devices and mnemo run work"

# ---------------------------------------------------------------- 5. cmake --install
"$cmake" --install "$build" --prefix "$work/prefix" > /dev/null || fail "cmake --install --prefix failed"
devices=$(run_clean "$work/prefix/bin/mnemo" devices) || fail "mnemo devices failed (cmake --install --prefix)"
check_modules_inside "$work/prefix/lib" "$devices"
got=$(run_clean "$work/prefix/bin/mnemo" "${prompt[@]}" 2>/dev/null) || fail "mnemo run failed (cmake --install --prefix)"
[ "$got" = "$expected" ] || fail "mnemo run after cmake --install --prefix wrote '$got'"
[ ! -e "$work/prefix/etc" ] && [ ! -e "$work/prefix/lib/systemd" ] || fail "cmake --install wrote Debian-only files"
prefix=$(grep -E '^CMAKE_INSTALL_PREFIX:' "$build/CMakeCache.txt" | cut -d= -f2)
DESTDIR="$work/dest" "$cmake" --install "$build" > /dev/null || fail "DESTDIR=... cmake --install failed"
devices=$(run_clean "$work/dest$prefix/bin/mnemo" devices) || fail "mnemo devices failed (DESTDIR install)"
check_modules_inside "$work/dest$prefix/lib" "$devices"
echo "cmake --install --prefix and DESTDIR=... cmake --install: installed trees run"
echo "PASS"
