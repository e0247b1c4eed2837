#!/usr/bin/env bash
# A one-machine Ceph cluster for tests: one monitor on 127.0.0.1, one manager, N BlueStore OSDs on
# sparse files, cephx on, everything (data, logs, sockets, pid files, keyrings, ceph.conf) inside
# one folder, run as the current user, no systemd and nothing under /etc, /var/lib or /var/run.
#
#   micro_ceph.sh start DIR [--osds N] [--lifetime SECONDS] [--owner PID] [--timeout SECONDS]
#   micro_ceph.sh stop DIR
#   micro_ceph.sh restart DIR [--timeout SECONDS]   every daemon again, on the same data
#   micro_ceph.sh osd-stop DIR ID [--kill]           SIGTERM (or SIGKILL) one OSD, wait until it is down
#   micro_ceph.sh osd-start DIR ID                   start it again, wait until every PG is active+clean
#   micro_ceph.sh wait DIR clean|active [SECONDS]    wait until every PG is active+clean / active
#   micro_ceph.sh status DIR                         `ceph -s` as client.admin
#
# `start` makes pool `mnemo` (replicated, size 2 (1 with --osds 1), min_size 1: with one OSD stopped, reads and writes
# go on), the key client.mnemo (DIR/client.mnemo.keyring: mon 'allow r', osd 'allow rwx pool=mnemo')
# and the read-only client.mnemo-ro (DIR/client.mnemo-ro.keyring: osd 'allow r pool=mnemo'); the
# admin key is DIR/client.admin.keyring. ceph.conf names DIR/$name.keyring for every client, so
#   rados -c DIR/ceph.conf --id mnemo -p mnemo ls
# needs no --keyring.
#
# Nothing may outlive a test: `start` leaves a watchdog that runs `stop` once the cluster has lived
# --lifetime seconds (default 1800) or, with --owner PID, as soon as that process is gone (a test
# script passes its own $$, so a test killed by ctest's timeout takes its cluster with it). Test
# scripts still `trap "micro_ceph.sh stop DIR" EXIT`.
#
# Exit status: 0 done, 1 failed (with the reason and the last `ceph -s` or daemon log lines),
# 2 bad usage, 77 the Ceph programs are not installed (ctest: skipped).
set -euo pipefail
unset CEPH_ARGS CEPH_CONF  # the caller's Ceph settings must not reach this cluster

self=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
readonly self
say() { echo "micro_ceph: $*"; }
die() { echo "micro_ceph: error: $*" >&2; exit 1; }
usage() { sed -n '5,12p' "$self" | sed 's/^# \{0,1\}//' >&2; exit 2; }
now() { date +%s.%N; }
seconds_since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

require_ceph() {
  local tool
  for tool in ceph-mon ceph-mgr ceph-osd ceph ceph-authtool monmaptool; do
    command -v "$tool" >/dev/null || { echo "SKIP: $tool is not installed (Ceph 16 ceph-mon, ceph-mgr, ceph-osd, ceph-common)"; exit 77; }
  done
}

# --- the folder's layout ---------------------------------------------------------------------
set_paths() {
  dir=$(cd "$1" 2>/dev/null && pwd) || die "no cluster folder $1"
  conf=$dir/ceph.conf
  pids=$dir/pid
  logs=$dir/log
}
require_cluster() {
  set_paths "$1"
  [ -f "$conf" ] || die "$dir has no ceph.conf (was it made by \`micro_ceph.sh start\`?)"
}
osd_ids() { local d; for d in "$dir"/osd/*/; do [ -f "$d/whoami" ] && basename "$d"; done; return 0; }

# The admin's `ceph`, never waiting for ever (a monitor that is down makes it retry without end).
ceph_admin() { timeout "${ceph_timeout:-60}" ceph -c "$conf" --connect-timeout 15 "$@"; }

# A wait gives up at once when the monitor is gone: nothing it waits for can come then.
require_monitor_running() {
  kill -0 "$(cat "$pids/mon.a.pid" 2>/dev/null)" 2>/dev/null && return 0
  tail -n 20 "$logs/mon.a.log" "$logs/mon.a.out" >&2 2>/dev/null || true
  die "ceph-mon is not running (its log's end above)"
}

json_field() {  # json_field EXPRESSION: evaluates EXPRESSION on the JSON document `d` read from stdin
  /usr/bin/python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"
}

# --- the daemons ---------------------------------------------------------------------------------
# Each daemon runs in the foreground (-f) in a session of its own, its output into DIR/log, and its
# pid in DIR/pid/NAME.pid; a daemon never holds the caller's stdout (ctest waits for it to close).
spawn() {  # spawn NAME PROGRAM ARGS...
  local name=$1; shift
  local pidfile=$pids/$name.pid
  if [ -f "$pidfile" ] && kill -0 "$(cat "$pidfile")" 2>/dev/null; then
    die "$name is already running (pid $(cat "$pidfile"))"
  fi
  setsid "$@" -c "$conf" -f </dev/null >>"$logs/$name.out" 2>&1 &
  echo $! >"$pidfile"
}

# Ends one daemon: SIGTERM, then SIGKILL after `grace` seconds; waits until it is gone.
end_daemon() {  # end_daemon NAME [GRACE] [SIGNAL]
  local name=$1 grace=${2:-20} signal=${3:-TERM}
  local pidfile=$pids/$name.pid pid i
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  # Only a process that is still this daemon: a reused pid may belong to anything else by now.
  if kill -0 "$pid" 2>/dev/null && tr '\0\n' '  ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q -- "-c $conf"; then
    kill "-$signal" "$pid" 2>/dev/null || true
    for ((i = 0; i < grace * 10; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      say "$name (pid $pid) did not stop within ${grace} s of SIG$signal: SIGKILL"
      kill -KILL "$pid" 2>/dev/null || true
      for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    fi
  fi
  rm -f "$pidfile"
}

# The OSDs and the manager side by side, the monitor last: an OSD told to stop tells the monitor
# it goes, so the map it finds when it starts again already has it down.
end_all_daemons() {
  local id jobs=()
  for id in $(osd_ids); do end_daemon "osd.$id" 20 & jobs+=($!); done
  end_daemon mgr.x 20 &
  jobs+=($!)
  # Only these: in `start` (a failure there stops what it started) the daemons are this shell's
  # children too, and a bare `wait` would wait for the monitor, stopped only after.
  for id in "${jobs[@]}"; do wait "$id" || true; done
  end_daemon mon.a 20
}

start_mon() { spawn mon.a ceph-mon -i a; }
start_mgr() { spawn mgr.x ceph-mgr -i x; }
start_osd() { spawn "osd.$1" ceph-osd -i "$1"; }

wait_for_monitor() {  # bounded: the monitor answers the admin
  local deadline=$((SECONDS + 60))
  until ceph_timeout=10 ceph_admin mon stat >/dev/null 2>&1; do
    require_monitor_running
    ((SECONDS < deadline)) || { tail -n 20 "$logs/mon.a.log" >&2 || true; die "the monitor did not answer within 60 s"; }
    sleep 0.5
  done
}

# Every PG of every pool active+clean and every OSD up (or only every PG active); bounded. On
# timeout: the last `ceph -s` and the reason. The PG states are the manager's own (`pg stat`): the
# monitor's summary (`ceph -s`) is a digest that outlives a restart and may still say "clean" from
# before it.
wait_pgs() {  # wait_pgs clean|active SECONDS
  local want=$1 limit=$2 deadline=$((SECONDS + $2)) verdict ceph_timeout=15
  while :; do
    require_monitor_running
    verdict=$(MC_PGS=$(ceph_admin pg stat -f json 2>/dev/null) MC_OSDMAP=$(ceph_admin osd dump -f json 2>/dev/null) \
      /usr/bin/python3 -c '
import json, os, sys
pgs = json.loads(os.environ["MC_PGS"] or "{}").get("pg_summary", {})
osdmap = json.loads(os.environ["MC_OSDMAP"] or "{}")
want = sys.argv[1]
expected = sum(p["pg_num"] for p in osdmap.get("pools", []))
states = {s["name"]: s["num"] for s in pgs.get("num_pg_by_state", [])}
good = sum(n for s, n in states.items() if s == "active+clean" or (want == "active" and s.split("+")[0] == "active"))
osds = osdmap.get("osds", [])
up = sum(o["up"] for o in osds)
if expected and pgs.get("num_pgs") == expected and good == expected and (want == "active" or up == len(osds)): print("ok")
else: print("%d of %d PGs %s (%s), %d of %d OSDs up" % (good, expected, want,
          ", ".join("%d %s" % (n, s) for s, n in states.items()) or "no PG report yet", up, len(osds)))
' "$want" 2>/dev/null || echo "no answer from the cluster")
    [ "$verdict" = ok ] && return 0
    if ((SECONDS >= deadline)); then
      echo "micro_ceph: error: not every PG is $want after $limit s: $verdict; the last \`ceph -s\`:" >&2
      ceph_admin -s >&2 2>&1 || echo "(ceph -s did not answer)" >&2
      return 1
    fi
    sleep 0.5
  done
}

wait_osd_down() {  # wait_osd_down ID SECONDS: the monitor's map says the OSD is down
  local id=$1 deadline=$((SECONDS + $2)) ceph_timeout=15
  until [ "$(ceph_admin osd dump -f json 2>/dev/null | json_field "[o['up'] for o in d['osds'] if o['osd'] == $id][0]" 2>/dev/null)" = 0 ]; do
    require_monitor_running
    ((SECONDS < deadline)) || die "the monitor still has osd.$id up after $2 s"
    sleep 1
  done
}

# --- the watchdog --------------------------------------------------------------------------------
start_watchdog() {  # start_watchdog LIFETIME OWNER_PID_OR_EMPTY
  local lifetime=$1 owner=$2
  MICRO_CEPH_WATCHDOG=1 setsid bash -c '
    self=$1 dir=$2 deadline=$(( $(date +%s) + $3 )) owner=$4
    while [ -f "$dir/ceph.conf" ]; do
      if (( $(date +%s) >= deadline )); then echo "$(date): lifetime of $3 s is over: stop"; break; fi
      if [ -n "$owner" ] && ! kill -0 "$owner" 2>/dev/null; then echo "$(date): owner $owner is gone: stop"; break; fi
      sleep 2
    done
    [ -f "$dir/ceph.conf" ] && exec "$self" stop "$dir"
  ' watchdog "$self" "$dir" "$lifetime" "$owner" </dev/null >>"$logs/watchdog.log" 2>&1 &
  echo $! >"$pids/watchdog.pid"
}

stop_watchdog() {
  local pid
  [ -f "$pids/watchdog.pid" ] || return 0
  pid=$(cat "$pids/watchdog.pid")
  rm -f "$pids/watchdog.pid"
  [ -n "${MICRO_CEPH_WATCHDOG:-}" ] && return 0  # the watchdog itself is stopping the cluster
  # setsid made it a process group of its own: its `sleep` goes with it.
  if tr '\0\n' '  ' 2>/dev/null <"/proc/$pid/cmdline" | grep -q "^bash -c .* watchdog "; then
    kill -TERM -- "-$pid" 2>/dev/null || true
  fi
}

# --- start ---------------------------------------------------------------------------------------
free_port() {  # a TCP port on 127.0.0.1 that nobody listens on now
  /usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

write_conf() {  # write_conf PORT FSID REPLICAS
  # A Unix socket's path has at most 107 bytes: a deep DIR gets no admin sockets (nothing here uses them).
  local admin_socket=$dir/run/\$name.asok
  ((${#dir} < 80)) || admin_socket=""
  cat >"$conf" <<EOF
# A test cluster made by tests/kb/ceph/micro_ceph.sh: everything in $dir.
[global]
fsid = $2
mon host = [v2:127.0.0.1:$1]
public addr = 127.0.0.1
cluster addr = 127.0.0.1
# msgr2 only: one port per daemon, and every client of Ceph 14 and later speaks it.
ms bind msgr1 = false
auth cluster required = cephx
auth service required = cephx
auth client required = cephx
run dir = $dir/run
pid file = $dir/run/\$name.pid
log file = $dir/log/\$name.log
crash dir = $dir/crash
mon cluster log file = $dir/log/cluster.log
log to stderr = false
err to stderr = true
# Replicas on OSDs of one host; two of them (one with one OSD), one enough to go on; few PGs, never resized.
osd crush chooseleaf type = 0
osd pool default size = $3
mon allow pool size one = true
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd pool default pg autoscale mode = off
mon warn on pool no redundancy = false
# Map changes and PG reports every second or less, not every 1-5 s: a test waits on them.
paxos propose interval = 0.2
mgr stats period = 1
mon mgr digest period = 1
# Every client here is Ceph 16: no reclaiming of global ids the insecure (pre-CVE-2021-20288) way.
auth allow insecure global id reclaim = false

[client]
keyring = $dir/\$name.keyring
# Clients need no admin socket: several processes of one user (serve nodes) would fight over it.
admin socket =

[mon]
mon data = $dir/mon/\$id
admin socket = $admin_socket
# Test disks may be fuller than a production monitor tolerates.
mon data avail warn = 2
mon data avail crit = 1
mon allow pool delete = true
# A killed OSD is reported by its one peer, soon.
mon osd min down reporters = 1
# No restful/dashboard: a manager that starts in seconds.
mgr initial modules = iostat

[mgr]
mgr data = $dir/mgr/\$id
admin socket = $admin_socket
mgr/devicehealth/enable_monitoring = false

[osd]
osd data = $dir/osd/\$id
admin socket = $admin_socket
osd objectstore = bluestore
# BlueStore on a sparse file of its own (made by --mkfs), no device to discover.
bluestore block create = true
bluestore block size = 3221225472
bluestore block db create = false
bluestore block wal create = false
# Small: a test box runs several OSDs next to the build.
osd memory target = 536870912
bluestore cache autotune = false
bluestore cache size = 67108864
osd op num shards = 2
osd op num threads per shard = 1
osd heartbeat interval = 2
osd heartbeat grace = 10
osd max object name len = 256
osd max object namespace len = 64
EOF
}

make_keys() {  # the monitor's keyring holds every daemon's and the admin's key before it starts
  local mon_keyring=$dir/mon-initial.keyring
  ceph-authtool --create-keyring "$mon_keyring" --gen-key -n mon. --cap mon 'allow *' >/dev/null
  ceph-authtool --create-keyring "$dir/client.admin.keyring" --gen-key -n client.admin \
    --cap mon 'allow *' --cap osd 'allow *' --cap mgr 'allow *' --cap mds 'allow *' >/dev/null
  mkdir -p "$dir/mgr/x"
  ceph-authtool --create-keyring "$dir/mgr/x/keyring" --gen-key -n mgr.x \
    --cap mon 'allow profile mgr' --cap osd 'allow *' --cap mds 'allow *' >/dev/null
  ceph-authtool "$mon_keyring" --import-keyring "$dir/client.admin.keyring" >/dev/null
  ceph-authtool "$mon_keyring" --import-keyring "$dir/mgr/x/keyring" >/dev/null
}

register_osd() {  # register_osd ID: the monitor's OSD ID, with its key; the OSD's folder and keyring
  local id=$1 uuid key osd_dir=$dir/osd/$1
  uuid=$(uuidgen)
  key=$(ceph-authtool --gen-print-key)
  mkdir -p "$osd_dir"
  ceph-authtool --create-keyring "$osd_dir/keyring" -n "osd.$id" --add-key "$key" >/dev/null
  local given
  given=$(echo "{\"cephx_secret\": \"$key\"}" | ceph_admin osd new "$uuid" "$id" -i -) || die "ceph osd new for osd.$id failed"
  [ "$given" = "$id" ] || die "the monitor gave osd id $given where $id was asked"
  echo "$uuid" >"$osd_dir/uuid-given"
}

mkfs_osd() {  # mkfs_osd ID: BlueStore on its sparse file (a few seconds: run side by side)
  local id=$1
  timeout 120 ceph-osd -c "$conf" -i "$id" --mkfs --osd-uuid "$(cat "$dir/osd/$id/uuid-given")" >"$logs/osd.$id.mkfs.out" 2>&1 && return 0
  tail -n 20 "$logs/osd.$id.mkfs.out" "$logs/osd.$id.log" >&2 || true
  echo "micro_ceph: error: ceph-osd --mkfs of osd.$id failed" >&2
  return 1
}

cmd_start() {
  local osds=2 lifetime=1800 owner="" limit=300
  [ $# -ge 1 ] || usage
  local target=$1; shift
  while [ $# -gt 0 ]; do
    case $1 in
      --osds) osds=${2:?}; shift 2 ;;
      --lifetime) lifetime=${2:?}; shift 2 ;;
      --owner) owner=${2:?}; shift 2 ;;
      --timeout) limit=${2:?}; shift 2 ;;
      *) usage ;;
    esac
  done
  [[ $osds =~ ^[1-9][0-9]?$ ]] || die "--osds wants a number of OSDs from 1 to 99, not '$osds'"
  [[ $lifetime =~ ^[1-9][0-9]*$ ]] || die "--lifetime wants seconds, not '$lifetime'"
  [ -z "$owner" ] || kill -0 "$owner" 2>/dev/null || die "--owner $owner is not a running process"
  require_ceph
  local started
  started=$(now)
  mkdir -p "$target"
  set_paths "$target"
  [ -z "$(ls -A "$dir")" ] || die "$dir is not empty: start makes a new cluster in an empty folder (restart runs an existing one)"
  mkdir -p "$pids" "$logs" "$dir/run" "$dir/crash" "$dir/mon" "$dir/osd"
  # From here on, a failure leaves nothing running.
  trap 'status=$?; if [ $status -ne 0 ]; then say "start failed: stopping what did start"; cmd_stop "$dir" >/dev/null 2>&1 || true; fi' EXIT

  local port fsid
  port=$(free_port)
  fsid=$(uuidgen)
  local replicas=2
  ((osds >= 2)) || replicas=1  # one OSD holds one copy; a pool wanting two would never be clean
  write_conf "$port" "$fsid" "$replicas"
  start_watchdog "$lifetime" "$owner"  # it watches while ceph.conf is there
  make_keys
  monmaptool --create --fsid "$fsid" --addv a "[v2:127.0.0.1:$port]" "$dir/monmap" >/dev/null
  ceph-mon -c "$conf" --mkfs -i a --monmap "$dir/monmap" --keyring "$dir/mon-initial.keyring" >"$logs/mon.a.mkfs.out" 2>&1 ||
    { cat "$logs/mon.a.mkfs.out" >&2; die "ceph-mon --mkfs failed"; }
  rm -f "$dir/monmap" "$dir/mon-initial.keyring"
  start_mon
  wait_for_monitor
  start_mgr
  local id
  for ((id = 0; id < osds; id++)); do register_osd "$id"; done
  local mkfs_jobs=()
  for ((id = 0; id < osds; id++)); do mkfs_osd "$id" & mkfs_jobs+=($!); done
  for id in "${mkfs_jobs[@]}"; do wait "$id" || exit 1; done
  for ((id = 0; id < osds; id++)); do start_osd "$id"; done

  # Size and min_size are the defaults ceph.conf gives (checked below, once the PGs are there).
  ceph_admin osd pool create mnemo 8 8 replicated >/dev/null 2>&1 || die "could not create pool mnemo"
  ceph_admin osd pool application enable mnemo mnemo >/dev/null 2>&1 || die "could not tag pool mnemo"
  ceph_admin auth get-or-create client.mnemo mon 'allow r' osd 'allow rwx pool=mnemo' -o "$dir/client.mnemo.keyring" 2>/dev/null ||
    die "could not make key client.mnemo"
  ceph_admin auth get-or-create client.mnemo-ro mon 'allow r' osd 'allow r pool=mnemo' -o "$dir/client.mnemo-ro.keyring" 2>/dev/null ||
    die "could not make key client.mnemo-ro"
  wait_pgs clean "$limit" || exit 1
  local replication
  replication=$(ceph_admin osd pool ls detail -f json | json_field "[(p['size'], p['min_size']) for p in d if p['pool_name'] == 'mnemo']")
  [ "$replication" = "[($replicas, 1)]" ] || die "pool mnemo has (size, min_size) $replication, not ($replicas, 1)"
  trap - EXIT
  say "cluster up in $(seconds_since "$started") s: monitor v2:127.0.0.1:$port, $osds OSDs, pool mnemo, in $dir"
  say "  rados -c $conf --id mnemo -p mnemo ls"
}

# --- the other commands --------------------------------------------------------------------------
cmd_stop() {
  [ $# -eq 1 ] || usage
  set_paths "$1"
  stop_watchdog
  end_all_daemons
  say "stopped the cluster in $dir"
}

cmd_restart() {
  [ $# -ge 1 ] || usage
  local limit=300
  require_cluster "$1"; shift
  [ "${1:-}" = --timeout ] && limit=${2:?}
  require_ceph
  local started id
  started=$(now)
  end_all_daemons
  start_mon
  wait_for_monitor
  start_mgr
  for id in $(osd_ids); do start_osd "$id"; done
  wait_pgs clean "$limit" || exit 1
  say "restarted every daemon in $(seconds_since "$started") s"
}

cmd_osd_stop() {
  [ $# -ge 2 ] || usage
  require_cluster "$1"
  local id=$2 signal=TERM
  [ "${3:-}" = --kill ] && signal=KILL
  [ -f "$dir/osd/$id/whoami" ] || die "no osd.$id in $dir"
  end_daemon "osd.$id" 20 "$signal"
  # SIGTERM: the OSD tells the monitor itself; SIGKILL: its peer reports it after the heartbeat grace.
  wait_osd_down "$id" 60
  say "osd.$id is down"
}

cmd_osd_start() {
  [ $# -eq 2 ] || usage
  require_cluster "$1"
  local id=$2
  [ -f "$dir/osd/$id/whoami" ] || die "no osd.$id in $dir"
  start_osd "$id"
  wait_pgs clean 300 || exit 1
  say "osd.$id is up, every PG active+clean"
}

cmd_wait() {
  [ $# -ge 2 ] || usage
  require_cluster "$1"
  case $2 in clean | active) ;; *) usage ;; esac
  wait_pgs "$2" "${3:-300}" || exit 1
}

[ $# -ge 1 ] || usage
command=$1; shift
case $command in
  start) cmd_start "$@" ;;
  stop) cmd_stop "$@" ;;
  restart) cmd_restart "$@" ;;
  osd-stop) cmd_osd_stop "$@" ;;
  osd-start) cmd_osd_start "$@" ;;
  wait) cmd_wait "$@" ;;
  status) require_cluster "${1:?}"; ceph_admin -s ;;
  *) usage ;;
esac
