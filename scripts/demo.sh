#!/usr/bin/env bash
# The README's first command ends here. The embedded default model (assets/default-model, a
# Memory3 + UltraMemV2 model trained on a synthetic world) answers:
#   1. a question about a training entity, from its weights (its memory layers hold the facts);
#   2. a question about a held-out entity it never saw in training, first from its weights alone,
#      then with explicit memories fetched from a knowledge server on loopback (mnemo-kb serving
#      the prebuilt bank assets/world/bank; an in-process memory folder when mnemo-kb was built
#      without gRPC), listing the references it read;
#   3. (with mnemo-kb) a person nobody trained on, born in a town whose name the model never
#      produced, added to a copy of the bank by `mnemo-kb add`: asked without and with the server;
#      then a correction replaces the document (same id) and the answer follows it. The server
#      picks each new bank version up by itself (--watch-seconds);
#   4. (with mnemo-kb) a conversation: `mnemo chat` asked three questions in a row, each follow-up
#      about someone else, answered from what that turn retrieved.
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
held2=$(sed -n 101p "$WORLD/questions-held_out.jsonl")
# Zorblat Quen's towns: names no training text holds (the model never produced them as answers),
# made of syllables like the world's; a name of another make ("Vellinthorpe") is not copied yet
# (assets/default-model/README.md, "Limits").
NEW_TOWN=Quossabrin
FIXED_TOWN=Maibrostel
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
  echo "== the same, with explicit memories from mnemo-kb on loopback (a copy of $WORLD/bank) =="
  cp -r "$WORLD/bank" "$tmp/bank"
  "$BIN/mnemo-kb" serve "$tmp/bank" --listen 127.0.0.1:0 --port-file "$tmp/port" --insecure --no-auth \
      --watch-seconds 1 2>"$tmp/server.log" &
  server=$!
  for _ in $(seq 100); do [ -s "$tmp/port" ] && break; sleep 0.1; done
  [ -s "$tmp/port" ] || { echo "demo: mnemo-kb did not start:" >&2; cat "$tmp/server.log" >&2; exit 1; }
  kb="grpc://127.0.0.1:$(cat "$tmp/port")"
  ask "$A" --kb "$kb" --retrieval bm25 -q "$Q"
  echo
  # publish(PLACE): the document "demo-zorblat" saying Zorblat Quen was born in PLACE, added to the
  # served bank (a new version; the same id replaces the earlier text), then wait for the server.
  publish() {
    printf '{"id": "demo-zorblat", "title": "Zorblat Quen", "text": "Zorblat Quen was born in %s.\\n\\nZorblat Quen works as a tailor.\\n\\nThe birth year of Zorblat Quen is 1791."}\n' "$1" \
        >"$tmp/zorblat.jsonl"
    "$BIN/mnemo-kb" add "$tmp/bank" "$tmp/zorblat.jsonl" -m assets/default-model --json >"$tmp/add.json" 2>"$tmp/add.log" ||
      { echo "demo: mnemo-kb add failed:" >&2; cat "$tmp/add.log" >&2; exit 1; }
    local version
    version=$(sed -n 's/.*"version": *\([0-9]*\).*/\1/p' "$tmp/add.json")
    echo "(mnemo-kb add: \"Zorblat Quen was born in $1\" published as bank version $version)"
    for _ in $(seq 50); do grep -q "serving version $version" "$tmp/server.log" && break; sleep 0.2; done
  }
  echo "== something new: a person nobody trained on, born in a town no training text names =="
  publish "$NEW_TOWN"
  echo "-- weights alone (the model never heard of Zorblat Quen):"
  ask "$NEW_TOWN" -q "Where was Zorblat Quen born?"
  echo "-- with the server:"
  ask "$NEW_TOWN" --kb "$kb" --retrieval bm25 -q "Where was Zorblat Quen born?"
  echo
  echo "== a correction: the same document id, another birthplace; the old text is retired =="
  publish "$FIXED_TOWN"
  ask "$FIXED_TOWN" --kb "$kb" --retrieval bm25 -q "Where was Zorblat Quen born?"
  echo
  echo "== a conversation (mnemo chat): each follow-up reads what its own turn retrieved =="
  chat_lines=("$Q" "Where was Zorblat Quen born?" "$(printf '%s' "$held2" | field question)")
  chat_answers=("$A" "$FIXED_TOWN" "$(printf '%s' "$held2" | field answer)")
  mapfile -t got < <(printf '%s\n' "${chat_lines[@]}" | "$BIN/mnemo" chat --temp 0 -n 16 --kb "$kb" --retrieval bm25 2>/dev/null)
  for i in 0 1 2; do
    printf 'Q: %s\nA: %s\n' "${chat_lines[$i]}" "${got[$i]:-}"
    if [ "${got[$i]:-}" = "${chat_answers[$i]}" ]; then echo "   -> correct (the world says: ${chat_answers[$i]})"
    else echo "   -> wrong (the world says: ${chat_answers[$i]})"; fi
  done
else
  echo "== the same, with explicit memories from an in-process memory folder (mnemo-kb not built) =="
  "$BIN/mnemo" memorize --corpus "$WORLD/knowledge.txt" -o "$tmp/memories" >/dev/null 2>&1
  ask "$A" --memories "$tmp/memories" --retrieval bm25 -q "$Q"
fi
echo
echo "The model holds what it was trained on in its weights and reads what it never saw from explicit"
echo "memories: 96.8% of held-out questions right with the server, 2.3% without; 92.9% of those whose answer is a"
echo "name it never saw; 96.6% of follow-up questions in a conversation; 91.8% in wordings it was never"
echo "trained on; 96.1% of corrected facts; with --grounded (the answer may only quote what it read) 99.5%,"
echo "99.4%, 99.8%, 95.0% and 99.6% (assets/default-model/README.md, which also says what it still gets wrong)."
echo "A bank is corrected by replacing a document (mnemo-kb add with its id), delete and compact (server/README.md)."
