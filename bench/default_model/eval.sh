#!/usr/bin/env bash
# The default model's evaluation table (assets/default-model/README.md): `mnemo eval` on the
# held-out and the training entities' questions, without and with the knowledge server (mnemo-kb
# serving assets/world/bank on loopback, BM25 retrieval), on one backend. JSON reports and
# per-item JSONL go to OUT; the table to stdout.
#   bench/default_model/eval.sh [BUILD_DIR] [BACKEND] [OUT] [extra mnemo eval flags, e.g. -m DIR]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build}/bin
BACKEND=${2:-cpu}
OUT=${3:-build/default-model-eval/$BACKEND}
shift $(( $# < 3 ? $# : 3 ))
mkdir -p "$OUT"
tmp=$(mktemp -d)
trap 'kill "${server:-0}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
"$BIN/mnemo-kb" serve assets/world/bank --listen 127.0.0.1:0 --port-file "$tmp/port" --insecure --no-auth \
    2>"$tmp/server.log" &
server=$!
for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
[ -s "$tmp/port" ] || { cat "$tmp/server.log" >&2; exit 1; }
KB="grpc://127.0.0.1:$(cat "$tmp/port")"
printf '%-10s %-8s %8s %9s %11s\n' set server items "exact %" "contains %"
for set in held_out train; do
  for mode in none kb; do
    flags=()
    [ "$mode" = kb ] && flags=(--kb "$KB" --retrieval bm25)
    "$BIN/mnemo" eval --backend "$BACKEND" --questions "assets/world/questions-$set.jsonl" --quiet \
        --report "$OUT/$set-$mode.json" --items "$OUT/$set-$mode.items.jsonl" "${flags[@]}" "$@" >/dev/null
    /usr/bin/python3 - "$OUT/$set-$mode.json" "$set" "$mode" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(f"{sys.argv[2]:<10} {sys.argv[3]:<8} {r['items']:>8} {100 * r['exact_match']:>9.1f} {100 * r['contains_match']:>11.1f}")
PY
  done
done
