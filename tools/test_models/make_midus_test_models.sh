#!/bin/sh
# Regenerate tests/data/models/midus_hml-tiny-f32 (MIDUS-HML, arXiv 2512.13751) and its goldens.
# Deterministic. Shape: a 3-block Llama (D 32, 4 heads x 8, 2 KV heads, ffn 64, vocab 320) with
# memory blocks before blocks 0 and 2 (the first and the last position an anchor can take),
# n = 8 sub-keys per side, top-3, latent width r = 6 != d_h = 8 (so a transposed head projection
# cannot pass); about 220 KB.
set -eu
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
OUT=tests/data/models
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT

$PY tools/test_models/make_checkpoint.py --arch llama --hidden 32 --layers 3 --heads 4 --kv-heads 2 --ffn 64 \
    --vocab 320 --max-pos 2048 --dtype f32 --seed 21 --out "$TMP/llama"
$PY tools/test_models/make_midus_checkpoint.py --base "$TMP/llama" --out $OUT/midus_hml-tiny-f32 \
    --anchors 0,2 --n-keys 8 --topk 3 --latent-dim 6 --value-std 1.0 --seed 21
