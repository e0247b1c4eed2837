#!/usr/bin/env bash
# The README's first command ends here. The embedded default model (assets/default-model, a
# Memory3 + UltraMemV2 model trained on a synthetic world) answers:
#   1. a question about a training entity, from its weights (its memory layers hold the facts);
#   2. a question about a held-out entity it never saw in training, first from its weights alone,
#      then with explicit memories fetched from a knowledge server on loopback (mnemo-kb serving
#      the prebuilt bank assets/world/bank; an in-process memory folder when mnemo-kb was built
#      without gRPC), listing the references it read.
# Each answer is marked against the world's answer.
#   scripts/demo.sh [BUILD_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-build}/bin
WORLD=assets/world
field() { sed -e "s/.*\"$1\": \"\\([^\"]*\\)\".*/\\1/"; }
ask() {  # ask EXPECTED [mnemo ask flags...]: the answer, references, and a mark
  local expected=$1 out
  shift
  out=$("$BIN/mnemo" ask "$@" 2>/dev/null)
  printf '%s\n' "$out"
  if [ "$(printf '%s\n' "$out" | sed -n 's/^A: //p')" = "$expected" ]; then
    echo "   -> correct (the world says: $expected)"
  else
    echo "   -> wrong (the world says: $expected)"
  fi
}

train=$(head -n 1 "$WORLD/questions-train.jsonl")
held=$(head -n 1 "$WORLD/questions-held_out.jsonl")
echo "== a training entity, from the model's weights =="
ask "$(printf '%s' "$train" | field answer)" -q "$(printf '%s' "$train" | field question)"
echo
Q=$(printf '%s' "$held" | field question)
A=$(printf '%s' "$held" | field answer)
echo "== a held-out entity (never in the training text; only in $WORLD/knowledge.jsonl), weights alone =="
ask "$A" -q "$Q"
echo
tmp=$(mktemp -d)
trap 'kill "${server:-0}" 2>/dev/null || true; rm -rf "$tmp"' EXIT
if [ -x "$BIN/mnemo-kb" ] && "$BIN/mnemo-kb" serve --help >/dev/null 2>&1; then
  echo "== the same, with explicit memories from mnemo-kb on loopback ($WORLD/bank) =="
  "$BIN/mnemo-kb" serve "$WORLD/bank" --listen 127.0.0.1:0 --port-file "$tmp/port" --insecure --no-auth \
      2>"$tmp/server.log" &
  server=$!
  for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
  [ -s "$tmp/port" ] || { echo "demo: mnemo-kb did not start:" >&2; cat "$tmp/server.log" >&2; exit 1; }
  ask "$A" --kb "grpc://127.0.0.1:$(cat "$tmp/port")" --retrieval bm25 -q "$Q"
else
  echo "== the same, with explicit memories from an in-process memory folder (mnemo-kb not built) =="
  "$BIN/mnemo" memorize --corpus "$WORLD/knowledge.txt" -o "$tmp/memories" >/dev/null 2>&1
  ask "$A" --memories "$tmp/memories" --retrieval bm25 -q "$Q"
fi
echo
echo "The model holds what it was trained on in its weights and reads what it never saw from explicit"
echo "memories: 92.9% of held-out questions right with the server, 4.2% without (assets/default-model/README.md)."
