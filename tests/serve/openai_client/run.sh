#!/usr/bin/env bash
# The official OpenAI client (npm package openai, the version in package-lock.json) against
# `mnemo serve` on loopback, and curl -N checking the SSE framing byte for byte (sse_golden.txt).
#   run.sh BUILD_BIN_DIR WORK_DIR
# The client is installed under WORK_DIR (the build tree) with `npm ci`, never globally. Exit 77
# (ctest: skipped, with the reason) when node, npm or curl is missing or the npm registry cannot be
# reached; any failure of the server or a check is exit 1.
set -euo pipefail
bin=$1
work=$2
here=$(cd "$(dirname "$0")" && pwd)
src=$(cd "$here/../../.." && pwd)
skip() { echo "SKIPPED: $*"; exit 77; }
for tool in node npm curl; do command -v "$tool" >/dev/null || skip "$tool is not installed (scripts/install-deps.sh --tests)"; done

mkdir -p "$work"
cp "$here/package.json" "$here/package-lock.json" "$here/client_test.mjs" "$work/"
if ! cmp -s "$here/package-lock.json" "$work/node_modules/.installed-lock" 2>/dev/null; then
  (cd "$work" && npm ci --ignore-scripts --no-audit --no-fund --loglevel=error) > "$work/npm.log" 2>&1 \
    || { cat "$work/npm.log"; skip "npm ci failed (is the npm registry reachable?)"; }
  cp "$here/package-lock.json" "$work/node_modules/.installed-lock"
fi

# A memory folder of the world's first twenty entities (sixty one-fact paragraphs), two held-out
# ones among them: their answers can only come from it, and the look-alikes around them are what
# the model's relative cut is for. (A folder of those two people's six facts alone is
# CliAsk.AHandfulOfFactsIsNotCutAway: the cut's floor keeps it answerable.)
awk 'BEGIN { RS = ""; ORS = "\n\n" } NR <= 60' "$src/assets/world/knowledge.txt" > "$work/corpus.txt"
rm -rf "$work/memories"
"$bin/mnemo" memorize --corpus "$work/corpus.txt" -o "$work/memories" > "$work/memorize.log" 2>&1 \
  || { cat "$work/memorize.log"; exit 1; }

log=$work/serve.log
: > "$log"  # there before the loop below reads it: the server's redirection happens in its own process, maybe later
"$bin/mnemo" serve --port 0 --parallel 2 --memories "$work/memories" > "$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null; wait $server 2>/dev/null || true' EXIT
port=""
for _ in $(seq 1 300); do
  port=$(sed -n 's|.*listening on http://127.0.0.1:\([0-9]*\)/v1.*|\1|p' "$log")
  [ -n "$port" ] && break
  kill -0 $server 2>/dev/null || { cat "$log"; echo "mnemo serve exited"; exit 1; }
  sleep 0.1
done
[ -n "$port" ] || { cat "$log"; echo "mnemo serve did not start listening"; exit 1; }

node "$work/client_test.mjs" "http://127.0.0.1:$port/v1" "Where was Quear Mousaim born?" "Thaimubort"

# The stream's bytes: ids, times and timings vary (and a keep-alive comment where the machine is
# slow), and each reference's source is the corpus file's path in this build tree; everything else
# is fixed (greedy, one answer).
curl -sSN "http://127.0.0.1:$port/v1/chat/completions" -H 'Content-Type: application/json' \
  -d '{"messages":[{"role":"user","content":"Where was Quear Mousaim born?"}],"temperature":0,"stream":true,"stream_options":{"include_usage":true}}' \
  | perl -0pe 's/: keep-alive\n\n//g' | sed -E 's/"id":"chatcmpl-[0-9a-f]{24}"/"id":"chatcmpl-ID"/g; s/"created":[0-9]+/"created":0/g; s/"timings":\{[^}]*\}/"timings":{}/g; s|"source":"[^"]*/corpus.txt"|"source":"WORK/corpus.txt"|g' \
  > "$work/sse.txt"
if ! cmp -s "$work/sse.txt" "$here/sse_golden.txt"; then
  echo "the SSE stream differs from tests/serve/openai_client/sse_golden.txt:"
  diff <(cat -A "$here/sse_golden.txt") <(cat -A "$work/sse.txt") || true
  exit 1
fi
echo "ok - curl -N: the SSE stream matches sse_golden.txt byte for byte"
