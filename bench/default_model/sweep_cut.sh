#!/usr/bin/env bash
# How the BM25 relative score cut (--min-relative-score, mnemo/memory/retrieval_settings.hpp) was
# chosen for the default model: `mnemo eval` with an in-process memory folder of the knowledge
# corpus (mnemo memorize, uncompressed) at each cut, on the TRAINING entities' questions (the
# cut is chosen there; the held-out column is printed to report, not to choose). The chosen value
# goes to tools/train/export.py --min-relative-score (generation_config.json "mnemo_retrieval").
# MIN_REFERENCES=N sets the cut's floor (--min-references; default: the model's own advice), so
# the floor is swept by running it once per value.
#   [MIN_REFERENCES=N] bench/default_model/sweep_cut.sh [BUILD_DIR] [MODEL_DIR] [CUTS...]
set -euo pipefail
cd "$(dirname "$0")/../.."
BIN=${1:-build}/bin
MODEL=${2:-assets/default-model}
shift $(( $# < 2 ? $# : 2 ))
CUTS=("$@")
[ ${#CUTS[@]} -gt 0 ] || CUTS=(0 0.4 0.5 0.6 0.65 0.7 0.75 0.8 0.9)
floor=()
[ -z "${MIN_REFERENCES:-}" ] || floor=(--min-references "$MIN_REFERENCES")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# The JSONL corpus, as the bank is built: its titles are counted by BM25 as the bank counts them
# (docs/models/memory3.md); knowledge.txt, one document of untitled paragraphs, would rank by text alone.
"$BIN/mnemo" memorize -m "$MODEL" --corpus assets/world/knowledge.jsonl -o "$tmp/memories" >/dev/null 2>&1
printf '%-6s %16s %16s\n' cut "train exact %" "held-out exact %"
for cut in "${CUTS[@]}"; do
  row=()
  for set in train held_out; do
    "$BIN/mnemo" eval -m "$MODEL" --questions "assets/world/questions-$set.jsonl" --memories "$tmp/memories" \
        --retrieval bm25 --min-relative-score "$cut" "${floor[@]}" --quiet --report "$tmp/$set.json" >/dev/null
    row+=("$(/usr/bin/python3 -c "import json,sys; print(f\"{100 * json.load(open(sys.argv[1]))['exact_match']:.1f}\")" "$tmp/$set.json")")
  done
  printf '%-6s %16s %16s\n' "$cut" "${row[0]}" "${row[1]}"
done
