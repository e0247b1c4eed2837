#!/usr/bin/env bash
# `mnemo serve` under load (docs/benchmarks.md, "mnemo serve under load"): 1, 4 and 16 concurrent
# streaming clients (bench/serve_load.cpp) on the default model and on a small Llama (a q8_0
# GGUF of bench-models/small-random), then the same requests against llama-server with the same
# GGUF file in the same run when LLAMA_SERVER names its binary. Every server runs alone, on the
# same threads; each row is one run of mnemo-serve-load.
#   bench/serve_load.sh BUILD_DIR [OUT_DIR]        env: LLAMA_SERVER, THREADS (2), MAX_TOKENS (32), REQUESTS (64)
set -euo pipefail
build=$(cd "$1" && pwd)
out=${2:-serve-load}
mkdir -p "$out"
src=$(cd "$(dirname "$0")/.." && pwd)
threads=${THREADS:-2}
max_tokens=${MAX_TOKENS:-32}
total_requests=${REQUESTS:-64}   # per row, spread over its clients (at least 2 each)
bin=$build/bin
gguf=$out/small-random-q8_0.gguf
if [ ! -f "$gguf" ]; then
  # The random checkpoint has no tokenizer; both servers need one in the GGUF: the SentencePiece
  # test tokenizer (its vocabulary padded to the model's 32,000 by mnemo quantize).
  [ -f "$src/bench-models/small-random/model.safetensors" ] || {
    echo "bench-models/small-random is missing: tools/test_models/make_checkpoint.py --preset small --out bench-models/small-random" >&2; exit 1; }
  folder=$out/small-random; mkdir -p "$folder"
  ln -sf "$src/bench-models/small-random/config.json" "$src/bench-models/small-random/model.safetensors" "$folder/"
  ln -sf "$src/tests/data/tokenizers/sp_gguf/tokenizer.model" "$folder/"
  "$bin/mnemo" quantize "$folder" "$gguf" --type q8_0 >/dev/null
fi

port=18190
server=""
stop() { if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi; server=""; }
trap stop EXIT
wait_ready() {
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$port/health" >/dev/null 2>&1 && return 0
    kill -0 "$server" 2>/dev/null || { echo "the server exited: $1" >&2; exit 1; }
    sleep 0.1
  done
  echo "the server did not come up: $1" >&2; exit 1
}
load() {  # label clients [extra args]
  local label=$1 clients=$2; shift 2
  local requests=$(( total_requests / clients )); [ "$requests" -lt 2 ] && requests=2
  "$bin/mnemo-serve-load" --port "$port" --clients "$clients" --requests "$requests" --max-tokens "$max_tokens" \
    --label "$label" --json-out "$out/results.jsonl" "$@" | tee -a "$out/table.md"
}
: > "$out/results.jsonl"
{
  echo "| server / model | clients | requests | total tok/s | per-client tok/s | TTFT p50 ms | TTFT p99 ms | failed |"
  echo "|---|---|---|---|---|---|---|---|"
} | tee "$out/table.md"

run_set() {  # label: the server on $port is up
  for c in 1 4 16; do load "$1" "$c"; done
  load "$1 +long" 16 --long-every 2 --long-words 120   # every other request with a ~1,000-token prompt
  load "$1 x128" 16 --max-tokens 128                   # longer answers: the batch stays full longer
}

"$bin/mnemo" serve --port $port --parallel 16 -c 2048 -t "$threads" > "$out/mnemo-default.log" 2>&1 & server=$!
wait_ready "$out/mnemo-default.log"; run_set "mnemo default"; stop
"$bin/mnemo" serve -m "$gguf" --port $port --parallel 16 -c 2048 -t "$threads" > "$out/mnemo-small.log" 2>&1 & server=$!
wait_ready "$out/mnemo-small.log"; run_set "mnemo small q8_0"; stop
if [ -n "${LLAMA_SERVER:-}" ]; then
  "$LLAMA_SERVER" -m "$gguf" --port $port -np 16 -c $((16 * 2048)) -t "$threads" > "$out/llama-server.log" 2>&1 & server=$!
  wait_ready "$out/llama-server.log"; run_set "llama-server small q8_0"; stop
fi
echo "results: $out/table.md, $out/results.jsonl"
