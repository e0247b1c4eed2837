#!/usr/bin/env bash
# kb.rados_faults: a bank on Ceph RADOS rides through the failures of its cluster, its serve nodes
# and its writers. On a one-machine cluster (micro_ceph.sh), a bank built into rados://mnemo/faults
# and the same bank in a folder (the reference: what must be generated); then, each checked by
# greedy generations (`mnemo eval`) equal to the reference's:
#   (a) an OSD stopped (SIGTERM, then another with SIGKILL) in the middle of a generation through
#       two RADOS nodes: the generation goes on and is unchanged (pool size 2, min_size 1); with the
#       OSD down a new node opens the bank and `mnemo-kb verify` finds it clean;
#   (b) a serve node killed with SIGKILL in the middle of a generation given both nodes (--kb twice):
#       the client fails over, the generation is unchanged;
#   (c) `mnemo-kb add` killed with SIGKILL at six points of its publish (memorizing; each blob
#       written; the manifest written, CURRENT not yet swapped): the previous version is still
#       served, a new node opens it, verify is clean; once the dead writer's lock lease ends, the
#       add runs again, resumes, and publishes a version equal to the folder's;
#   (d) the whole cluster restarted: the nodes that kept running serve again, a new node opens the
#       bank intact, and verify of every stored version is clean.
#   rados_faults.sh BUILD_BIN_DIR WORK_DIR
# Exit 77 (ctest: skipped, with the reason) without the Ceph programs or a mnemo-kb without RADOS.
set -euo pipefail
bin=$(cd "${1:?usage: rados_faults.sh BUILD_BIN_DIR WORK_DIR}" && pwd)
work=${2:?usage: rados_faults.sh BUILD_BIN_DIR WORK_DIR}
source "$(dirname "$0")/rados_test_lib.sh"

rados_test_begin kb.rados_faults
write_corpus "$work/corpus" 20 11 doc
write_corpus "$work/more" 30 23 new
write_questions "$work/long.jsonl" 1500 7   # a generation of ~7,000 requests: 5-10 s
write_questions "$work/short.jsonl" 30 5

build=(build "$work/corpus" -m "$model" "${build_codec[@]}" --threads 1 --batch 32)
# shellcheck disable=SC2046
kb build-rados.log "${build[@]}" $(rados_args faults) || fail "mnemo-kb build into rados://mnemo/faults"
kb build-folder.log "${build[@]}" -o "$work/bank" || fail "mnemo-kb build into a folder"
rados_node rados-a faults
rados_node rados-b faults
start_node folder "$work/bank"
generate ref-long.jsonl "$work/long.jsonl" hybrid --kb "$(node_url folder)"
generate ref-short.jsonl "$work/short.jsonl" hybrid --kb "$(node_url folder)"
ok "version 1 in RADOS and in a folder; two RADOS nodes, the folder's node; the reference generations"

# A generation in the background: `mnemo eval` of the long questions through the nodes given.
start_generation() {  # start_generation OUT KB-ARGS...
  local out=$work/$1
  shift
  timeout 300 "$bin/mnemo" eval -m "$model" --questions "$work/long.jsonl" --retrieval hybrid --max-tokens 24 \
    --items "$out" --quiet "$@" >"$out.stdout" 2>"$out.stderr" &
  generation=$!
}
finish_generation() {  # finish_generation OUT WHAT
  wait "$generation" || { cat "$work/$1.stderr"; fail "$2: the generation failed"; }
  same_generation "$1" ref-long.jsonl "$2"
}
# waits (bounded) until the nodes named have answered N more requests, the generation still running
wait_requests() {  # wait_requests N NODE...
  local want=$1 start=0 now n deadline=$((SECONDS + 60))
  shift
  for n in "$@"; do start=$((start + $(node_requests "$n"))); done
  while :; do
    now=0
    for n in "$@"; do now=$((now + $(node_requests "$n"))); done
    ((now - start >= want)) && break
    kill -0 "$generation" 2>/dev/null || fail "the generation ended before its nodes answered $want requests: too short to test anything"
    ((SECONDS < deadline)) || fail "the nodes did not answer $want requests in 60 s"
    sleep 0.01
  done
  kill -0 "$generation" 2>/dev/null || fail "the generation ended before the fault: too short to test anything"
}
log_lines() { wc -l <"$work/$1.log"; }
longest_call_ms() {  # longest_call_ms NAME FROM_LINE: the slowest request node NAME logged after that line
  tail -n +"$(($2 + 1))" "$work/$1.log" | grep -o " ms=[0-9.]*" | cut -d= -f2 | sort -g | tail -n 1
}
fresh_node_serves() {  # fresh_node_serves NAME REFERENCE WHAT: a new node opens the bank and answers as the reference
  rados_node "$1" faults
  generate "$1.jsonl" "$work/short.jsonl" hybrid --kb "$(node_url "$1")" --kb-timeout-ms 20000
  same_generation "$1.jsonl" "$2" "$3: a new node"
  end_process "$1"
}
verify_clean() {  # verify_clean WHAT [--all-versions]
  # shellcheck disable=SC2046
  kb verify.log verify $(rados_args faults mnemo-ro) "${@:2}" || fail "$1: mnemo-kb verify found damage"
}

# --- (a) an OSD stops in the middle of a generation -------------------------------------------
for variant in "0 TERM" "1 KILL"; do
  read -r osd signal <<<"$variant"
  stop_args=()
  [ "$signal" = KILL ] && stop_args=(--kill)
  # A generous call deadline: while the OSD's PGs move to their other replica (a second or two),
  # reads wait; they must not fail.
  start_generation "osd$osd.jsonl" --kb "$(node_url rados-a)" --kb "$(node_url rados-b)" --kb-timeout-ms 20000
  wait_requests 100 rados-a rados-b
  from_a=$(log_lines rados-a) from_b=$(log_lines rados-b)
  "$micro_ceph" osd-stop "$work/cluster" "$osd" "${stop_args[@]}" >/dev/null || fail "osd-stop $osd"
  at_stop=$(($(node_requests rados-a) + $(node_requests rados-b)))
  kill -0 "$generation" 2>/dev/null || fail "the generation ended before osd.$osd was down: too short to test anything"
  finish_generation "osd$osd.jsonl" "osd.$osd stopped (SIG$signal) mid-generation"
  after=$(($(node_requests rados-a) + $(node_requests rados-b) - at_stop))
  ((after > 0)) || fail "no request was answered after osd.$osd went down"
  fresh_node_serves "fresh-osd$osd" ref-short.jsonl "osd.$osd down"
  verify_clean "osd.$osd down"
  ok "(a) osd.$osd stopped with SIG$signal mid-generation: unchanged; $after requests answered with it down" \
    "(slowest call from the stop on: $(longest_call_ms rados-a "$from_a") / $(longest_call_ms rados-b "$from_b") ms);" \
    "a new node opens the bank; verify clean"
  "$micro_ceph" osd-start "$work/cluster" "$osd" >/dev/null || fail "osd-start $osd"
done

# --- (b) a serve node is killed in the middle of a generation -----------------------------------
a=$(node_url rados-a)
start_generation failover.jsonl --kb "$a" --kb "$(node_url rados-b)"
wait_requests 100 rados-a
b_at_kill=$(node_requests rados-b)
end_process rados-a KILL
finish_generation failover.jsonl "node A killed mid-generation"
((($(node_requests rados-b) - b_at_kill) > 0)) || fail "node B answered nothing after A was killed"
# One warning, naming the server that went.
warning=$(grep -F "$a" "$work/failover.jsonl.stderr" | head -n 1)
[ -n "$warning" ] || fail "the client gave no warning naming $a: $(cat "$work/failover.jsonl.stderr")"
ok "(b) node A killed with SIGKILL mid-generation (--kb A --kb B): unchanged; B answered" \
  "$(($(node_requests rados-b) - b_at_kill)) requests after; the client said: $warning"
rados_node rados-a faults  # back, for what follows

# --- (c) a writer is killed in the middle of its publish -----------------------------------------
add=("$bin/mnemo-kb" add "$work/more" -m "$model" --threads 1 --batch 16 --store rados://mnemo/faults --ceph-conf "$conf" --ceph-user mnemo)
# The killed writers run with Ceph's own fault injection: every reply of an OSD reaches them up to
# 0.1 s late (ms_inject_delay_*, this client only, each delay drawn evenly from 0-0.1 s), so
# between one object appearing and the writer's next step there is time to see it and kill the
# writer (3-4 ms), and each point is hit where it is named. At the last one (manifest written,
# CURRENT not yet swapped) a delay under those few ms (about 1 run in 30) lets the writer swap
# CURRENT first: it has then published version 2, whole, which is checked instead.
{ cat "$conf"; printf '\n[client.mnemo]\nms inject delay type = osd\nms inject delay max = 0.1\nms inject delay probability = 1\n'; } \
  >"$work/writer-delayed.conf"
delayed_add=("$bin/mnemo-kb" add "$work/more" -m "$model" --threads 1 --batch 16 --store rados://mnemo/faults
  --ceph-conf "$work/writer-delayed.conf" --ceph-user mnemo)
# The lock a killed writer leaves blocks the next until its lease (30 s) ends: between two kill
# points it is broken, as an operator who knows the writer is dead would (`rados lock break`); the
# last one is waited out, as the docs promise.
break_writer_lock() {
  local lockers
  lockers=$(timeout 60 rados -c "$conf" --id mnemo -p mnemo -N faults lock info .lock mnemo-writer --format json 2>/dev/null |
    /usr/bin/python3 -c 'import json, sys; [print(l["name"], l["cookie"]) for l in json.load(sys.stdin).get("lockers", [])]')
  while read -r name cookie; do
    [ -n "$name" ] || continue
    timeout 60 rados -c "$conf" --id mnemo -p mnemo -N faults lock break .lock mnemo-writer "$name" --lock-cookie "$cookie" ||
      fail "could not break the dead writer's lock ($name $cookie)"
  done <<<"$lockers"
}
points=('staging-.*-batch-000004$' '^seg-000002-' '^texts-000002-' '^vectors-000002-' '^bm25-000002' '^manifest-000002')
for i in "${!points[@]}"; do
  ((i == 0)) || break_writer_lock
  outcome=$(/usr/bin/python3 "$here/kill_when_object.py" --conf "$conf" --user mnemo --pool mnemo --namespace faults \
    --pattern "${points[$i]}" --timeout 120 --log "$work/add-killed.log" -- "${delayed_add[@]}") || {
    cat "$work/add-killed.log"
    fail "kill point ${points[$i]}: $outcome"
  }
  version=$(published_version faults)
  if [ "$version" = 2 ] && ((i == ${#points[@]} - 1)); then
    echo "   note: the writer swapped CURRENT before the kill reached it (its injected delay was shorter than the kill's)"
    break
  fi
  [ "$version" = 1 ] || fail "add $outcome: the published version is now '$version', not 1"
  generate "killed$i-a.jsonl" "$work/short.jsonl" hybrid --kb "$(node_url rados-a)"
  same_generation "killed$i-a.jsonl" ref-short.jsonl "add $outcome: node A"
  generate "killed$i-b.jsonl" "$work/short.jsonl" hybrid --kb "$(node_url rados-b)"
  same_generation "killed$i-b.jsonl" ref-short.jsonl "add $outcome: node B"
  fresh_node_serves "fresh-add$i" ref-short.jsonl "add $outcome"
  verify_clean "add $outcome"
  ok "(c) add $outcome: version 1 still published and served, a new node opens it, verify clean"
done

# The last killed writer's lock: the same add must wait its lease out (bounded), then finish.
lock_wait_started=$SECONDS
if [ "$(published_version faults)" = 1 ]; then
  until "${add[@]}" >"$work/add.log" 2>&1; do
    grep -q "another writer" "$work/add.log" || { cat "$work/add.log"; fail "the add after the kills failed"; }
    ((SECONDS - lock_wait_started < 45)) || fail "the dead writer's lock still holds after 45 s (its lease is 30 s)"
    sleep 2
  done
fi
lock_wait=$((SECONDS - lock_wait_started))
[ "$(published_version faults)" = 2 ] || fail "the add after the kills did not publish version 2: $(cat "$work/add.log")"
kb add-folder.log add "$work/bank" "$work/more" -m "$model" --threads 1 --batch 16 || fail "the same add into the folder"
# shellcheck disable=SC2046
kb export-rados.log export $(rados_args faults mnemo-ro) -o "$work/export-rados" || fail "export of the RADOS bank"
kb export-folder.log export "$work/bank" -o "$work/export-folder" || fail "export of the folder bank"
diff -r "$work/export-rados" "$work/export-folder" >/dev/null || fail "after the kills, the RADOS bank's version 2 differs from the folder's"
for n in rados-a rados-b folder; do wait_node_version "$n" 2 15; done
generate ref2-short.jsonl "$work/short.jsonl" hybrid --kb "$(node_url folder)"
different_generation ref-short.jsonl ref2-short.jsonl "version 2"
generate v2-a.jsonl "$work/short.jsonl" hybrid --kb "$(node_url rados-a)"
same_generation v2-a.jsonl ref2-short.jsonl "version 2 through node A"
verify_clean "version 2"
ok "(c) the add, run again after the lock's lease (${lock_wait} s), resumes and publishes version 2 equal to the folder's;" \
  "the nodes picked it up"

# --- (d) the whole cluster restarts -------------------------------------------------------------
"$micro_ceph" restart "$work/cluster" >"$work/restart.log" || { cat "$work/restart.log"; fail "micro_ceph.sh restart"; }
for n in rados-a rados-b; do
  kill -0 "$(cat "$work/pids/$n.pid")" 2>/dev/null || { tail -n 5 "$work/$n.log"; fail "node $n died while the cluster restarted"; }
  generate "restart-$n.jsonl" "$work/short.jsonl" hybrid --kb "$(node_url "$n")" --kb-timeout-ms 20000
  same_generation "restart-$n.jsonl" ref2-short.jsonl "after the cluster's restart, node $n"
done
fresh_node_serves fresh-restart ref2-short.jsonl "after the cluster's restart"
verify_clean "after the cluster's restart" --all-versions
ok "(d) the whole cluster restarted ($(grep -o "in [0-9.]* s" "$work/restart.log")): both nodes serve on, a new node opens" \
  "version 2, verify --all-versions clean"
