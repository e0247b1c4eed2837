#!/usr/bin/env bash
# kb.ceph_cluster: the one-machine test cluster itself (micro_ceph.sh) works as the RADOS bank
# tests need it: client.mnemo writes, reads and lists pool mnemo; client.mnemo-ro reads and is
# refused a write (EPERM); with one OSD stopped the objects are still read; `stop` leaves no daemon.
#   cluster_smoke.sh WORK_DIR
# Exit 77 (ctest: skipped, with the reason) without the Ceph programs.
set -euo pipefail
work=${1:?usage: cluster_smoke.sh WORK_DIR}
here=$(cd "$(dirname "$0")" && pwd)
micro_ceph=$here/micro_ceph.sh
cluster=$work/cluster
started=$SECONDS

fail() { echo "FAIL: $*"; echo "the cluster's logs: $cluster/log"; exit 1; }
command -v rados >/dev/null || { echo "SKIP: rados is not installed (ceph-common)"; exit 77; }

rm -rf "$work"
mkdir -p "$work"
trap '"$micro_ceph" stop "$cluster" >/dev/null 2>&1 || true' EXIT
# --owner $$: if ctest kills this script, the watchdog takes the cluster down within seconds.
status=0
"$micro_ceph" start "$cluster" --osds 2 --owner $$ --lifetime 600 || status=$?
[ "$status" = 0 ] || { [ "$status" = 77 ] && exit 77; fail "micro_ceph.sh start failed ($status)"; }

rw() { timeout 60 rados -c "$cluster/ceph.conf" --id mnemo -p mnemo "$@"; }
ro() { timeout 60 rados -c "$cluster/ceph.conf" --id mnemo-ro -p mnemo "$@"; }

# Objects of a few sizes, one past BlueStore's 64 KiB minimum allocation and rados' 4 MiB op size.
head -c 100 /dev/urandom >"$work/small"
head -c 200000 /dev/urandom >"$work/medium"
head -c 5000000 /dev/urandom >"$work/large"
for name in small medium large; do
  rw put "$name" "$work/$name" || fail "client.mnemo could not write $name"
done
for name in small medium large; do
  rw get "$name" "$work/$name.back" || fail "client.mnemo could not read $name"
  cmp -s "$work/$name" "$work/$name.back" || fail "$name read back differs from what was written"
done
[ "$(rw ls | sort | tr '\n' ' ')" = "large medium small " ] || fail "rados ls lists $(rw ls | tr '\n' ' ')"
echo "ok - client.mnemo writes, reads back byte for byte and lists 3 objects"

ro get medium "$work/medium.ro" && cmp -s "$work/medium" "$work/medium.ro" || fail "client.mnemo-ro could not read medium"
if ro put refused "$work/small" 2>"$work/ro_put.err"; then fail "client.mnemo-ro was allowed to write"; fi
grep -q "Operation not permitted" "$work/ro_put.err" || fail "client.mnemo-ro's write failed otherwise than EPERM: $(cat "$work/ro_put.err")"
echo "ok - client.mnemo-ro reads, and its write is refused: $(cat "$work/ro_put.err")"

"$micro_ceph" osd-stop "$cluster" 0 || fail "osd-stop 0 failed"
for name in small medium large; do
  rw get "$name" "$work/$name.degraded" && cmp -s "$work/$name" "$work/$name.degraded" || fail "$name is not read with osd.0 stopped"
done
echo "ok - with osd.0 stopped every object is still read (pool size 2, min_size 1)"

"$micro_ceph" stop "$cluster"
trap - EXIT
for pidfile in "$cluster"/pid/*.pid; do
  [ -e "$pidfile" ] && fail "stop left $pidfile"
done
if pgrep -f -- "-c $cluster/ceph.conf" >/dev/null; then fail "a daemon of $cluster is still running: $(pgrep -a -f -- "-c $cluster/ceph.conf")"; fi
if pgrep -f -- "watchdog $micro_ceph $cluster" >/dev/null; then fail "stop left the watchdog running"; fi
echo "ok - stop left no daemon and no watchdog"
rm -rf "$work"
echo "kb.ceph_cluster: passed in $((SECONDS - started)) s"
