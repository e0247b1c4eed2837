#!/usr/bin/env bash
# The README's first command ends here: the embedded default model answers a question about an
# entity it never saw in training, first from its weights alone (it cannot know), then with
# explicit memories fetched from a knowledge server on loopback (mnemo-kb serving the prebuilt
# bank assets/world/bank), and says which references it read. Without mnemo-kb (built without
# gRPC) the memories come from an in-process memory folder instead.
#   scripts/demo.sh [BUILD_DIR] ["a question"]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build}/bin
QUESTION=${2:-}
WORLD=assets/world
if [ -z "$QUESTION" ]; then
  # The first held-out question of the evaluation set, and its answer.
  line=$(head -n 1 "$WORLD/questions-held_out.jsonl")
  QUESTION=$(printf '%s' "$line" | sed -e 's/.*"question": "\([^"]*\)".*/\1/')
  EXPECTED=$(printf '%s' "$line" | sed -e 's/.*"answer": "\([^"]*\)".*/\1/')
  echo "A question about a held-out entity (never in the training text; only in $WORLD/knowledge.jsonl)."
  echo "The world's answer: $EXPECTED"
fi
echo
echo "== without the knowledge server =="
"$BIN/mnemo" ask -q "$QUESTION" 2>/dev/null
echo
tmp=$(mktemp -d)
trap 'kill "${server:-0}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
if [ -x "$BIN/mnemo-kb" ] && "$BIN/mnemo-kb" serve --help >/dev/null 2>&1; then
  echo "== with explicit memories from mnemo-kb on loopback ($WORLD/bank) =="
  "$BIN/mnemo-kb" serve "$WORLD/bank" --listen 127.0.0.1:0 --port-file "$tmp/port" --insecure --no-auth \
      2>"$tmp/server.log" &
  server=$!
  for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
  [ -s "$tmp/port" ] || { echo "demo: mnemo-kb did not start:" >&2; cat "$tmp/server.log" >&2; exit 1; }
  "$BIN/mnemo" ask --kb "grpc://127.0.0.1:$(cat "$tmp/port")" --retrieval bm25 -q "$QUESTION"
else
  echo "== with explicit memories from an in-process memory folder (mnemo-kb not built) =="
  "$BIN/mnemo" memorize --corpus "$WORLD/knowledge.txt" -o "$tmp/memories" >/dev/null 2>&1
  "$BIN/mnemo" ask --memories "$tmp/memories" --retrieval bm25 -q "$QUESTION" 2>/dev/null
fi
