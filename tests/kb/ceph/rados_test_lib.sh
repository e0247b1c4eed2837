# What the RADOS bank tests share (sourced by rados_end_to_end.sh and rados_faults.sh): the
# skip checks, a cluster and serve nodes that cannot outlive the test, the corpora and questions,
# bounded runs of mnemo-kb and mnemo, and the comparison of generations.
#
# The caller sets `bin` (the build's bin folder) and `work` (a scratch folder, emptied here) and
# calls rados_test_begin NAME; everything then lives in $work and goes at exit.
# shellcheck shell=bash

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
src=$(cd "$here/../../.." && pwd)
micro_ceph=$here/micro_ceph.sh
model=$src/tests/data/models/memory3-tiny-bpe
# Quick to train on a corpus this small (as tests/test_kb_grpc_end_to_end.cpp).
build_codec=(--factory OPQ4_16,Residual2x6,PQ4x5 --opq-iterations 3 --kmeans-iterations 8)
test_started=$SECONDS
phase_started=$SECONDS

fail() {
  echo "FAIL: $*"
  echo "(cluster logs: $work/cluster/log; node logs: $work/*.log)"
  exit 1
}
skip() { echo "SKIP: $*"; exit 77; }
ok() { echo "ok - $* ($((SECONDS - phase_started)) s)"; phase_started=$SECONDS; }

# --- the whole test's life --------------------------------------------------------------------
rados_test_begin() {  # rados_test_begin NAME
  test_name=$1
  [ -x "$bin/mnemo-kb" ] && [ -x "$bin/mnemo" ] || fail "no mnemo-kb or mnemo in $bin (build them first)"
  for tool in ceph-mon ceph-mgr ceph-osd ceph rados; do
    command -v "$tool" >/dev/null || skip "$tool is not installed (Ceph 16: scripts/install-deps.sh --tests)"
  done
  # A mnemo-kb without librados refuses every rados:// location, naming the CMake option.
  if "$bin/mnemo-kb" documents --store rados://mnemo --ceph-conf /nonexistent 2>&1 | grep -q MNEMO_KB_RADOS; then
    skip "this mnemo-kb was built without Ceph RADOS support (librados-dev, CMake option MNEMO_KB_RADOS)"
  fi
  rm -rf "$work"
  mkdir -p "$work/pids"
  trap rados_test_end EXIT
  # If this script is killed (ctest's timeout: SIGKILL, no trap), the reaper ends its serve nodes
  # and micro_ceph's watchdog (--owner) its cluster, both within seconds.
  setsid bash -c '
    while kill -0 "$1" 2>/dev/null; do sleep 1; done
    for f in "$2"/*.pid; do
      [ -f "$f" ] || continue
      p=$(cat "$f")
      tr "\0" " " 2>/dev/null <"/proc/$p/cmdline" | grep -q "mnemo" && kill -KILL "$p"
    done' reaper $$ "$work/pids" </dev/null >/dev/null 2>&1 &
  reaper=$!
  "$micro_ceph" start "$work/cluster" --osds 2 --owner $$ --lifetime 1200 || {
    status=$?
    [ "$status" = 77 ] && exit 77
    fail "micro_ceph.sh start failed ($status)"
  }
  conf=$work/cluster/ceph.conf
  ok "a cluster of 2 OSDs"
}

rados_test_end() {
  local status=$? f
  for f in "$work"/pids/*.pid; do
    [ -f "$f" ] && end_process "$(basename "$f" .pid)"
  done
  "$micro_ceph" stop "$work/cluster" >/dev/null 2>&1 || true
  kill -- "-$reaper" 2>/dev/null || kill "$reaper" 2>/dev/null || true
  if [ "$status" = 0 ]; then
    rm -rf "$work"
    echo "$test_name: passed in $((SECONDS - test_started)) s"
  else
    echo "$test_name: FAILED (exit $status) after $((SECONDS - test_started)) s; its files: $work"
  fi
  exit "$status"
}

# A background process of the test, by name: its pid in $work/pids, its output in $work/NAME.log.
end_process() {  # end_process NAME [SIGNAL]: signal it (TERM), wait for it (at most 10 s, then KILL)
  local name=$1 signal=${2:-TERM} pidfile=$work/pids/$1.pid pid i
  [ -f "$pidfile" ] || return 0
  pid=$(cat "$pidfile")
  kill "-$signal" "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  rm -f "$pidfile"
}

# --- serve nodes -----------------------------------------------------------------------------------
# start_node NAME LOCATION-ARGS...: `mnemo-kb serve` on 127.0.0.1, a port of the system's choice,
# plaintext without tokens (loopback only), polling the bank every second; waits (30 s at most)
# until it serves.
start_node() {
  local name=$1 i
  shift
  rm -f "$work/$name.port"
  "$bin/mnemo-kb" serve "$@" --listen 127.0.0.1:0 --insecure --no-auth --watch-seconds 1 \
    --port-file "$work/$name.port" </dev/null >>"$work/$name.log" 2>&1 &
  echo $! >"$work/pids/$name.pid"
  for ((i = 0; i < 300; i++)); do
    [ -s "$work/$name.port" ] && return 0
    kill -0 "$(cat "$work/pids/$name.pid")" 2>/dev/null || { cat "$work/$name.log"; fail "serve node $name exited"; }
    sleep 0.1
  done
  cat "$work/$name.log"
  fail "serve node $name did not serve within 30 s"
}
node_url() { echo "grpc://127.0.0.1:$(cat "$work/$1.port")"; }
rados_node() { start_node "$1" --store "rados://mnemo/$2" --ceph-conf "$conf" --ceph-user mnemo-ro; }  # rados_node NAME NAMESPACE
node_requests() { grep -c " method=" "$work/$1.log" || true; }

# waits (bounded) until node NAME's log says it serves VERSION (a reload picked up a new one)
wait_node_version() {  # wait_node_version NAME VERSION SECONDS
  local deadline=$((SECONDS + $3))
  until grep -q -E "(now serving version $2 |version $2 \()" "$work/$1.log"; do
    ((SECONDS < deadline)) || { tail -n 5 "$work/$1.log"; fail "node $1 does not serve version $2 after $3 s"; }
    sleep 0.2
  done
}

# --- data ------------------------------------------------------------------------------------------
words="alpha beta gamma delta river mountain city ocean forest paper engine memory bank light stone cloud music garden winter summer"

write_corpus() {  # write_corpus DIR DOCS SEED PREFIX: DOCS files of five paragraphs of random words
  mkdir -p "$1"
  awk -v dir="$1" -v docs="$2" -v seed="$3" -v prefix="$4" -v words="$words" 'BEGIN {
    srand(seed); n_words = split(words, w, " ")
    for (d = 0; d < docs; d++) {
      f = dir "/" prefix d ".txt"
      printf "%s %d\n\n", prefix, d > f
      for (p = 0; p < 5; p++) {
        line = ""
        for (i = 5 + int(rand() * 10); i > 0; i--) line = line w[1 + int(rand() * n_words)] (i > 1 ? " " : ".\n")
        print line > f
      }
      close(f)
    } }'
}

write_questions() {  # write_questions FILE N SEED: N prompts of 12 random words, for `mnemo eval`
  awk -v n="$2" -v seed="$3" -v words="$words" 'BEGIN {
    srand(seed); n_words = split(words, w, " ")
    for (q = 0; q < n; q++) {
      p = ""
      for (i = 0; i < 12; i++) p = p (i ? " " : "") w[1 + int(rand() * n_words)]
      printf "{\"id\": \"q%d\", \"prompt\": \"%s\", \"completion\": \"%s\"}\n", q, p, w[1 + int(rand() * n_words)]
    } }' >"$1"
}

# --- mnemo-kb and mnemo, bounded ---------------------------------------------------------------
kb() {  # kb LOG ARGS...: mnemo-kb ARGS, its output in $work/LOG (shown on failure), 300 s at most
  local log=$work/$1
  shift
  timeout 300 "$bin/mnemo-kb" "$@" >"$log" 2>&1 || { cat "$log"; return 1; }
}
rados_args() { echo "--store rados://mnemo/$1 --ceph-conf $conf --ceph-user ${2:-mnemo}"; }  # rados_args NAMESPACE [USER]

# generate OUT QUESTIONS MODE SOURCE-ARGS...: every question answered greedily (`mnemo eval`), one
# JSON line per item in $work/OUT (the output and the bank records its generation read).
generate() {
  local out=$work/$1 questions=$2 mode=$3
  shift 3
  timeout 300 "$bin/mnemo" eval -m "$model" --questions "$questions" --retrieval "$mode" --max-tokens 24 \
    --items "$out" --quiet "$@" >"$out.stdout" 2>"$out.stderr" ||
    { cat "$out.stderr"; fail "mnemo eval $* failed"; }
}

# same_generation A B WHAT: the items of A and B have the same outputs and read the same records (by
# id); the first difference is shown.
same_generation() {
  /usr/bin/python3 - "$work/$1" "$work/$2" <<'EOF' || fail "$3: the generations differ"
import json, sys
def items(path):
    with open(path) as f:
        return [json.loads(line) for line in f if line.strip()]
a, b = items(sys.argv[1]), items(sys.argv[2])
if len(a) != len(b) or not a:
    sys.exit("%s has %d items, %s %d" % (sys.argv[1], len(a), sys.argv[2], len(b)))
for x, y in zip(a, b):
    rx, ry = [r["id"] for r in x.get("references", [])], [r["id"] for r in y.get("references", [])]
    if x["output"] != y["output"] or rx != ry:
        sys.exit("item %s: %r reading %s, against %r reading %s" % (x["id"], x["output"], rx, y["output"], ry))
if not any(x.get("references") for x in a):
    sys.exit("no item read any record: the comparison proves nothing")
EOF
}

# different_generation A B WHAT: the memories do change what is generated (else a test proves nothing)
different_generation() {
  cmp -s <(/usr/bin/python3 -c 'import json,sys; [print(json.loads(l)["output"]) for l in open(sys.argv[1])]' "$work/$1") \
    <(/usr/bin/python3 -c 'import json,sys; [print(json.loads(l)["output"]) for l in open(sys.argv[1])]' "$work/$2") &&
    fail "$3: the outputs are the same with and without memories"
  return 0
}

# published_version NAMESPACE: the version CURRENT names, read with rados itself
published_version() {
  timeout 60 rados -c "$conf" --id mnemo -p mnemo -N "$1" get CURRENT - 2>/dev/null | sed -n 's/^manifest-0*\([0-9][0-9]*\)\.json$/\1/p'
}
