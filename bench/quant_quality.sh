#!/bin/bash
# Quantization quality, Mnemo's quantizer against llama.cpp's on the same f16 GGUF, every file
# judged by llama-perplexity's KL divergence against the f16 file (docs/benchmarks.md,
# "Quantization quality on a trained Llama").
#
#   bench/quant_quality.sh BUILD_DIR LLAMA_CPP_BIN_DIR MODEL_DIR TEXT [TYPES...]
#
# MODEL_DIR: a Llama model folder (e.g. made by tools/train/small_llama.py), TEXT: held-out text.
# llama.cpp is built outside this repository (its bin/ folder holds llama-quantize and
# llama-perplexity). Files are written to a temporary folder, removed at the end.
set -euo pipefail
[ $# -ge 4 ] || { sed -n 2,10p "$0"; exit 2; }
M=$1/bin; L=$2; MODEL=$3; TEXT=$4; shift 4
TYPES=${*:-q8_0 q4_0 q4_k_m q5_k_m q6_k}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
"$M/mnemo" quantize "$MODEL" "$W/f16.gguf" --type f16 >/dev/null
"$L/llama-perplexity" -m "$W/f16.gguf" -f "$TEXT" -c 128 -t 2 --kl-divergence-base "$W/base.kld" 2>&1 | grep "Final estimate"
printf '| type | quantizer | bytes | mean KLD | same top p |\n|---|---|--:|--:|--:|\n'
for t in $TYPES; do
    "$L/llama-quantize" "$W/f16.gguf" "$W/lc-$t.gguf" "$(echo "$t" | tr a-z A-Z)" 2 >/dev/null 2>&1
    "$M/mnemo" quantize "$W/f16.gguf" "$W/mn-$t.gguf" --type "$t" >/dev/null 2>&1
    for who in lc mn; do
        out=$("$L/llama-perplexity" -m "$W/$who-$t.gguf" -f "$TEXT" -c 128 -t 2 --kl-divergence-base "$W/base.kld" --kl-divergence 2>&1)
        kld=$(echo "$out" | awk '/^Mean +KLD/ {print $3, $4, $5; exit}')
        top=$(echo "$out" | awk '/^Same top p/ {print $4, $5, $6, $7; exit}')
        name=$([ "$who" = lc ] && echo llama.cpp || echo Mnemo)
        echo "| $t | $name | $(stat -c %s "$W/$who-$t.gguf") | $kld | $top |"
    done
done
