#!/bin/sh
# Regenerate the tiny mixture-of-experts checkpoints under tests/data/models/ and their goldens
# (tools/reference/moe_ref.py, torch float64). Deterministic; each folder stays under 300 KB,
# hence hidden 32 and vocab 128. 8 experts, top 2, as the task asks; the generic one uses 6 / 3.
set -eu
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
OUT=tests/data/models
GEN="$PY tools/test_models/make_moe_checkpoint.py"
SHAPE="--hidden 32 --layers 2 --heads 4 --kv-heads 2 --vocab 128"

# OLMoE: QK-norm, softmax over all experts then top-k, weights not renormalised (HF default).
$GEN --arch olmoe $SHAPE --ffn 24 --experts 8 --top-k 2 --seed 21 --out $OUT/olmoe-tiny-f32
# Mixtral: top-k then softmax over the k, theta 1e6; ffn 20 (not a multiple of 8) for kernel tails.
$GEN --arch mixtral $SHAPE --ffn 20 --experts 8 --top-k 2 --seed 12 --out $OUT/mixtral-tiny-f32
# Generic moe: Llama attention with biases, tied embeddings, softmax_topk renormalised.
$GEN --arch moe $SHAPE --ffn 16 --experts 6 --top-k 3 --router softmax_topk --norm-topk-prob \
     --attention-bias --tied --seed 43 --out $OUT/moe-tiny-f32

$PY tools/reference/moe_ref.py --goldens --count 12 --seed 1234 \
    $OUT/olmoe-tiny-f32 $OUT/mixtral-tiny-f32 $OUT/moe-tiny-f32
