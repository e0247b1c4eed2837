#!/bin/sh
# Regenerate the tiny Memory+ checkpoints under tests/data/models/ and their goldens
# (tools/reference/memory_plus_ref.py). Deterministic; each folder stays under 300 KB.
# All: D 32, 3 layers (4 heads x 8, 2 KV heads), dense FFN 96 in layer 1, vocab 256,
# memory at layers 0 and 2 with 16x16 = 256 value rows, 4 memory heads, knn 4, k_dim 16.
set -eu
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
OUT=tests/data/models
GEN="$PY tools/test_models/make_memory_plus_checkpoint.py"

# The official default: swilu projection, mem_v_dim -1, one value table shared by both layers
# (stored under every memory layer as lingua's state dict has it; the converter keeps one).
$GEN --seed 11 --share-copies --out $OUT/memory_plus-tiny-f32
# Same weights with the value table in bf16, as lingua stores it.
$GEN --seed 11 --share-copies --values-bf16 --out $OUT/memory_plus-tiny-bf16values
# mem_v_dim 24 without swilu (value_proj alone), the sigmoid gate, one table per layer.
$GEN --seed 15 --v-dim 24 --no-swilu --gated --per-layer-values --out $OUT/memory_plus_gated-tiny-f32
# PEER variant: gelu(x . U[row]) * score weights V'[row]; lingua's unused value_proj /
# swilu_projection are dropped by the converter.
$GEN --seed 26 --peer --out $OUT/memory_plus_peer-tiny-f32

$PY tools/reference/memory_plus_ref.py --goldens $OUT/memory_plus-tiny-f32 $OUT/memory_plus-tiny-bf16values \
    $OUT/memory_plus_gated-tiny-f32 $OUT/memory_plus_peer-tiny-f32
