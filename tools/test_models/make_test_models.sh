#!/bin/sh
# Regenerate the tiny seeded checkpoints under tests/data/models/ and their golden logits.
# Deterministic: running it twice gives byte-identical files. Each folder stays under 300 KB,
# which is why the hidden size is 48 (4 heads of 12) rather than 64.
set -eu
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
OUT=tests/data/models
GEN="$PY tools/test_models/make_checkpoint.py"
SHAPE="--hidden 48 --layers 2 --heads 4 --kv-heads 2 --ffn 64 --vocab 320 --max-pos 2048"

# Plain Llama 2 style: untied lm_head, theta 10000, GQA 4:2.
$GEN --arch llama $SHAPE --dtype f32 --seed 1 --out $OUT/llama-tiny-f32
# Llama 3 style: tied embeddings, llama3 rope scaling (all three frequency bands are hit with
# head_dim 16 and theta 500000), and an explicit head_dim != hidden/heads.
$GEN --arch llama --hidden 48 --layers 2 --heads 4 --kv-heads 2 --head-dim 16 --ffn 96 --vocab 320 \
     --max-pos 2048 --tied --rope-scaling llama3 --rope-factor 32 --rope-theta 500000 \
     --dtype f32 --seed 2 --out $OUT/llama3-tiny-f32
# Qwen2: q/k/v biases, tied embeddings, theta 1e6.
$GEN --arch qwen2 $SHAPE --tied --dtype f32 --seed 3 --out $OUT/qwen2-tiny-f32
# OLMo-2: norms after each sublayer, q_norm/k_norm over the full projections.
$GEN --arch olmo2 $SHAPE --dtype f32 --seed 4 --out $OUT/olmo2-tiny-f32
# Same weights as llama-tiny-f32 (seed 1) stored as f16 / bf16 / two shards.
$GEN --arch llama $SHAPE --dtype f16 --seed 1 --out $OUT/llama-tiny-f16
$GEN --arch llama $SHAPE --dtype bf16 --seed 1 --out $OUT/llama-tiny-bf16
$GEN --arch llama $SHAPE --dtype f32 --seed 1 --shards 2 --out $OUT/llama-tiny-sharded

$PY tools/reference/make_goldens.py --count 12 --seed 1234 \
    $OUT/llama-tiny-f32 $OUT/llama3-tiny-f32 $OUT/qwen2-tiny-f32 $OUT/olmo2-tiny-f32 \
    $OUT/llama-tiny-f16 $OUT/llama-tiny-bf16 $OUT/llama-tiny-sharded
