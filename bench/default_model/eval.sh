#!/usr/bin/env bash
# The default model's evaluation table (assets/default-model/README.md): `mnemo eval` on the
# question sets of assets/world, without and with the knowledge server (mnemo-kb serving
# assets/world/bank on loopback, BM25 retrieval with the model's relative score cut), on one
# backend. JSON reports and per-item JSONL go to OUT; the table to stdout.
#   bench/default_model/eval.sh [BUILD_DIR] [BACKEND] [OUT] [extra mnemo eval flags, e.g. --limit 100]
#   SETS="held_out unseen_names" bench/default_model/eval.sh build vulkan   # some sets only
#   FEEDS="turns whole chunks" SETS=follow_up bench/default_model/eval.sh   # the retrieval rule of a
#       conversation measured: mnemo eval --history-feed (docs/models/memory3.md)
#   GROUNDED=1 bench/default_model/eval.sh build cpu OUT   # answers with the server quote what they
#       read (mnemo eval --grounded, docs/cli.md); the rows without it are unchanged
#
# Sets (tools/train/world.py): held_out, train (entities' first wordings), unseen_names (answers
# are names training never produced), held_out_wordings (wordings kept out of training; server
# only), follow_up (five-question conversations: turn 1 is a first question, turns 2-5 the
# follow-ups, also compared with the same questions asked alone in held_out), corrected (a copy of
# the bank with assets/world/corrections.jsonl added through `mnemo-kb add`, which replaces those
# documents: the answer must be the new value; the old value's share is shown too), new_names (a
# copy of the bank with assets/world/additions.jsonl added: 520 new documents whose names are of
# English make, which no training text has; each question asks for such a name).
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build}/bin
BACKEND=${2:-cpu}
OUT=${3:-build/default-model-eval/$BACKEND}
shift $(( $# < 3 ? $# : 3 ))
EXTRA=("$@")
EXTRA_FEED=()
SETS=${SETS:-"held_out train unseen_names held_out_wordings follow_up corrected new_names"}
MODEL=${MODEL:-assets/default-model}   # MODEL=DIR BANK=DIR: another model with its own bank
BANK=${BANK:-assets/world/bank}
mkdir -p "$OUT"
tmp=$(mktemp -d)
servers=()
trap 'for p in "${servers[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$tmp"' EXIT

serve() {  # serve BANK NAME: starts mnemo-kb on loopback, sets KB to its URL
  "$BIN/mnemo-kb" serve "$1" --listen 127.0.0.1:0 --port-file "$tmp/$2.port" --insecure --no-auth \
      2>"$tmp/$2.log" &
  servers+=($!)
  for _ in $(seq 100); do [ -s "$tmp/$2.port" ] && break; sleep 0.1; done
  [ -s "$tmp/$2.port" ] || { cat "$tmp/$2.log" >&2; exit 1; }
  KB="grpc://127.0.0.1:$(cat "$tmp/$2.port")"
}

row() {  # row REPORT SET MODE [ITEMS FILTER...]: one line of the table
  /usr/bin/python3 - "$@" <<'PY'
import json, os, sys
report, name, mode = sys.argv[1:4]
r = json.load(open(report))
items = [json.loads(l) for l in open(report.replace(".json", ".items.jsonl"))]
def line(label, its):
    n = len(its)
    ex = sum(1 for i in its if i["exact"]) / max(1, n)
    co = sum(1 for i in its if i["contains"]) / max(1, n)
    print(f"{label:<26} {mode:<6} {n:>6} {100 * ex:>8.1f} {100 * co:>10.1f}")
if name == "follow_up":
    line("follow_up, first turns", [i for i in items if ".t1." in i["id"]])
    later = [i for i in items if ".t1." not in i["id"]]
    line("follow_up, turns 2-5", later)
    try:   # the same questions asked alone (held_out, with the server)
        held = os.path.join(os.path.dirname(report), "held_out-kb.items.jsonl")
        alone = {i["id"]: i for i in map(json.loads, open(held))}
        line("  the same, asked alone", [alone[i["id"].split(".", 2)[2]] for i in later])
    except FileNotFoundError:
        pass
elif name == "corrected":
    line(name, items)
    old = {json.loads(l)["id"]: json.loads(l)["old"] for l in open("assets/world/questions-corrected.jsonl")}
    n = sum(1 for i in items if i["output"].strip().rstrip(".").lower() == old[i["id"]].lower())
    print(f"{'  (answered the old value)':<26} {mode:<6} {len(items):>6} {100 * n / max(1, len(items)):>8.1f}")
    # The bank's half of a correction, apart from the model's reading: did the question's own
    # document come back in its new version (and never the replaced one)?
    def versions(i):
        doc = i["id"].split(".", 1)[0]
        return {r.get("doc_version") for r in i["references"] if r.get("doc_id") == doc}
    new = sum(1 for i in items if any(v is not None and v >= 2 for v in versions(i)))
    stale = sum(1 for i in items if 1 in versions(i))
    print(f"{'  (read the new version)':<26} {mode:<6} {len(items):>6} {100 * new / max(1, len(items)):>8.1f}")
    print(f"{'  (read the old version)':<26} {mode:<6} {len(items):>6} {100 * stale / max(1, len(items)):>8.1f}")
else:
    line(name, items)
PY
}

evaluate() {  # evaluate SET MODE QUESTIONS
  local flags=()
  [ "$2" = kb ] && flags=(--kb "$KB" --retrieval bm25)
  [ "$2" = kb ] && [ "${GROUNDED:-0}" = 1 ] && flags+=(--grounded)
  "$BIN/mnemo" eval -m "$MODEL" --backend "$BACKEND" --questions "$3" --quiet \
      --report "$OUT/$1-$2.json" --items "$OUT/$1-$2.items.jsonl" "${flags[@]}" "${EXTRA_FEED[@]}" "${EXTRA[@]}" >/dev/null
}

added_bank() {  # added_bank NAME: serves a copy of the bank with assets/world/NAME.jsonl added
  # through `mnemo-kb add` (documents of existing ids replace them); KB points at it, main_kb at
  # the main bank
  cp -r "$BANK" "$tmp/bank-$1"
  "$BIN/mnemo-kb" add "$tmp/bank-$1" "assets/world/$1.jsonl" -m "$MODEL" >"$tmp/add.out" 2>"$tmp/add.log" ||
    { cat "$tmp/add.log" >&2; exit 1; }
  # Its notes (e.g. the codec fits these documents worse: server/README.md, "Codec fit") to stderr.
  sed -n "s/^note: /$1: mnemo-kb add: /p" "$tmp/add.out" >&2
  main_kb=$KB
  serve "$tmp/bank-$1" "$1"
}

serve "$BANK" main
printf '%-26s %-6s %6s %8s %10s\n' set server items "exact %" "contains %"
for set in $SETS; do
  case $set in
    corrected)
      added_bank corrections
      evaluate corrected kb assets/world/questions-corrected.jsonl
      row "$OUT/corrected-kb.json" corrected kb
      KB=$main_kb ;;
    new_names)
      added_bank additions
      for mode in none kb; do
        evaluate new_names "$mode" assets/world/questions-new_names.jsonl
        row "$OUT/new_names-$mode.json" new_names "$mode"
      done
      KB=$main_kb ;;
    held_out_wordings)
      evaluate "$set" kb "assets/world/questions-$set.jsonl"
      row "$OUT/$set-kb.json" "$set" kb ;;
    follow_up)
      for feed in ${FEEDS:-turns}; do
        name=follow_up; [ "$feed" = turns ] || name=follow_up_$feed
        EXTRA_FEED=(--history-feed "$feed")
        evaluate "$name" kb "assets/world/questions-$set.jsonl"
        EXTRA_FEED=()
        [ "$feed" = turns ] || echo "(history fed as: $feed)"
        row "$OUT/$name-kb.json" follow_up kb
      done ;;
    *)
      for mode in none kb; do
        evaluate "$set" "$mode" "assets/world/questions-$set.jsonl"
        row "$OUT/$set-$mode.json" "$set" "$mode"
      done ;;
  esac
done
