#!/usr/bin/env bash
# kb.rados_end_to_end: a bank on Ceph RADOS gives what the same bank in a folder gives. On a
# one-machine cluster (micro_ceph.sh): `mnemo-kb build` of the tests' corpus with the tiny memory3
# model into rados://mnemo/e2e and into a folder; both exported as memory folders must be byte for
# byte the same. The RADOS bank is served by two `mnemo-kb serve` nodes (with the read-only key),
# the folder by a third; `mnemo eval` (greedy) through each node, through both RADOS nodes at once
# (--kb twice) and in process from the export must generate the same text and read the same records,
# by vector, BM25 and hybrid retrieval. Then the errors a user meets: the read-only key refused a
# write, a missing pool, a wrong key, a user without a keyring; and `mnemo-kb verify` finds the bank clean.
#   rados_end_to_end.sh BUILD_BIN_DIR WORK_DIR
# Exit 77 (ctest: skipped, with the reason) without the Ceph programs or a mnemo-kb without RADOS.
# (Logits are compared in process by tests/test_kb_grpc_end_to_end.cpp, server against folder; no
# command prints them for a --kb run, so here the generated text and the records read stand in.)
set -euo pipefail
bin=$(cd "${1:?usage: rados_end_to_end.sh BUILD_BIN_DIR WORK_DIR}" && pwd)
work=${2:?usage: rados_end_to_end.sh BUILD_BIN_DIR WORK_DIR}
source "$(dirname "$0")/rados_test_lib.sh"

rados_test_begin kb.rados_end_to_end
write_corpus "$work/corpus" 20 11 doc
write_questions "$work/questions.jsonl" 40 5

# --- the same build, in RADOS and in a folder -------------------------------------------------
build=(build "$work/corpus" -m "$model" "${build_codec[@]}" --threads 1 --batch 32)
# shellcheck disable=SC2046
kb build-rados.log "${build[@]}" $(rados_args e2e) || fail "mnemo-kb build into rados://mnemo/e2e"
grep -q "version 1" "$work/build-rados.log" || fail "the RADOS build did not publish version 1: $(cat "$work/build-rados.log")"
kb build-folder.log "${build[@]}" -o "$work/bank" || fail "mnemo-kb build into a folder"
ok "mnemo-kb build into rados://mnemo/e2e and into a folder"

# shellcheck disable=SC2046
kb export-rados.log export $(rados_args e2e mnemo-ro) -o "$work/export-rados" || fail "mnemo-kb export of the RADOS bank"
kb export-folder.log export "$work/bank" -o "$work/export-folder" || fail "mnemo-kb export of the folder bank"
diff -r "$work/export-rados" "$work/export-folder" >"$work/export.diff" || { head "$work/export.diff"; fail "the two banks' exports differ"; }
# The manifests differ only in when they were made.
timeout 60 rados -c "$conf" --id mnemo -p mnemo -N e2e get manifest-000001.json "$work/manifest-rados.json" || fail "rados get manifest"
cmp -s <(sed 's/"created":"[^"]*"//' "$work/manifest-rados.json") <(sed 's/"created":"[^"]*"//' "$work/bank/manifest-000001.json") ||
  fail "the manifests differ beyond their \"created\" time"
ok "both banks hold the same memories (exports identical) and the same manifest"

# --- serving and generating -------------------------------------------------------------------
rados_node rados-a e2e
rados_node rados-b e2e
start_node folder "$work/bank"
a=$(node_url rados-a) b=$(node_url rados-b) f=$(node_url folder)
ok "two serve nodes on rados://mnemo/e2e (read-only key), one on the folder"

generate none.jsonl "$work/questions.jsonl" bm25
for mode in vector bm25 hybrid; do
  generate "folder-$mode.jsonl" "$work/questions.jsonl" "$mode" --kb "$f"
  different_generation none.jsonl "folder-$mode.jsonl" "$mode"
  generate "rados-a-$mode.jsonl" "$work/questions.jsonl" "$mode" --kb "$a"
  generate "rados-b-$mode.jsonl" "$work/questions.jsonl" "$mode" --kb "$b"
  generate "rados-ab-$mode.jsonl" "$work/questions.jsonl" "$mode" --kb "$a" --kb "$b"
  same_generation "rados-a-$mode.jsonl" "folder-$mode.jsonl" "$mode: node A (RADOS) against the folder's node"
  same_generation "rados-b-$mode.jsonl" "folder-$mode.jsonl" "$mode: node B (RADOS) against the folder's node"
  same_generation "rados-ab-$mode.jsonl" "folder-$mode.jsonl" "$mode: nodes A and B together against the folder's node"
  if [ "$mode" != hybrid ]; then  # hybrid retrieval is the server's
    generate "local-$mode.jsonl" "$work/questions.jsonl" "$mode" --memories "$work/export-rados"
    same_generation "local-$mode.jsonl" "folder-$mode.jsonl" "$mode: the export in process against the folder's node"
  fi
done
[ "$(node_requests rados-a)" -gt 0 ] && [ "$(node_requests rados-b)" -gt 0 ] || fail "a RADOS node answered no request"
ok "vector, BM25, hybrid: the same 40 generations and records through A, B, A+B, the folder's node and in process" \
  "(A answered $(node_requests rados-a) requests, B $(node_requests rados-b))"
# `mnemo run` too, the command a user types.
for n in rados-a folder; do
  timeout 120 "$bin/mnemo" run -m "$model" -p "memory river bank stone garden" -n 40 --temp 0 --kb "$(node_url $n)" \
    >"$work/run-$n.txt" 2>"$work/run-$n.err" || { cat "$work/run-$n.err"; fail "mnemo run --kb $n"; }
done
cmp -s "$work/run-rados-a.txt" "$work/run-folder.txt" || fail "mnemo run: node A's text differs from the folder node's"
grep -q "bank version 1" "$work/run-rados-a.err" || fail "mnemo run did not report bank version 1: $(cat "$work/run-rados-a.err")"
ok "mnemo run --kb: the same text from node A as from the folder's node"

# --- the errors a user meets ------------------------------------------------------------------
write_corpus "$work/more" 2 3 more
# shellcheck disable=SC2046
if kb add-ro.log add "$work/more" -m "$model" --threads 1 $(rados_args e2e mnemo-ro) >/dev/null; then fail "add with the read-only key succeeded"; fi
grep -q -i "permission denied\|not permitted\|lacks the capability" "$work/add-ro.log" || fail "add with the read-only key: unclear error: $(cat "$work/add-ro.log")"
[ "$(published_version e2e)" = 1 ] || fail "a refused add changed the published version"
# shellcheck disable=SC2046
if kb no-pool.log documents --store rados://no-such-pool/e2e --ceph-conf "$conf" --ceph-user mnemo; then fail "documents on a missing pool succeeded"; fi
grep -q "no-such-pool" "$work/no-pool.log" || fail "a missing pool: the error does not name it: $(cat "$work/no-pool.log")"
# A key the monitors do not know, and a user with no keyring at all: said so, not "timed out".
sed 's/key = .*/key = AQBpOQpr8Y0tIBAAhnGGrCt4rYIyoEF1IqEvZA==/' "$work/cluster/client.mnemo.keyring" >"$work/wrong.keyring"
if kb wrong-key.log documents --store rados://mnemo/e2e --ceph-conf "$conf" --ceph-user mnemo --ceph-keyring "$work/wrong.keyring"; then
  fail "documents with a wrong key succeeded"
fi
grep -q "refused the key of client.mnemo" "$work/wrong-key.log" || fail "a wrong key: unclear error: $(cat "$work/wrong-key.log")"
if kb no-user.log documents --store rados://mnemo/e2e --ceph-conf "$conf" --ceph-user nobody; then fail "documents as an unknown user succeeded"; fi
grep -q "client.nobody" "$work/no-user.log" && ! grep -q "did not answer" "$work/no-user.log" ||
  fail "a user without a keyring: the error should name client.nobody and its missing keyring: $(cat "$work/no-user.log")"
echo "   read-only key: $(grep -i -m1 "denied\|permitted\|capab" "$work/add-ro.log")"
echo "   missing pool:  $(grep -m1 "no-such-pool" "$work/no-pool.log")"
echo "   wrong key:     $(tail -n 1 "$work/wrong-key.log")"
echo "   no keyring:    $(tail -n 1 "$work/no-user.log")"
ok "the read-only key is refused a write; a missing pool, a wrong key, a user without keyring fail with their reason"

# shellcheck disable=SC2046
kb verify.log verify $(rados_args e2e mnemo-ro) || fail "mnemo-kb verify of the RADOS bank found damage"
ok "mnemo-kb verify --store rados://mnemo/e2e: clean"
