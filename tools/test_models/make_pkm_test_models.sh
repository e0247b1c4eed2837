#!/bin/sh
# Regenerate the tiny "pkm" test checkpoint under tests/data/models/ and its goldens (ids and
# logits of tools/reference/pkm_ref.py). Deterministic: running it twice gives identical files.
# tests/test_memory_models.cpp tests every such folder (prompt at once and token by token).
set -eu
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
OUT=tests/data/models

# D 32, 3 layers: layer 0 keeps its FFN and has a memory after the block, layer 1's FFN is
# replaced by a memory, layer 2 is plain. Memories: 2 heads, k 16, 8x8 = 64 values, knn 4,
# query batch norm folded at load time, tied prediction layer. About 170 KB.
$PY tools/test_models/make_pkm_checkpoint.py --out $OUT/pkm-tiny-f32 --seed 1 --dim 32 --layers 3 --heads 4 \
    --vocab 96 --max-pos 64 --mem 0:after,1:in --k-dim 16 --mem-heads 2 --n-keys 8 --knn 4 \
    --dtype f32 --goldens 12
