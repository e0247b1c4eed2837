#!/bin/sh
# Regenerate the tiny UltraMem / UltraMemV2 checkpoints under tests/data/models/ and their goldens
# (tools/reference/ultramem_ref.py, float64). Deterministic: running it twice gives byte-identical
# files. Each folder stays under 300 KB (hidden 32, vocab 256, 4 blocks).
set -eu
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
OUT=tests/data/models
GEN="$PY tools/test_models/make_ultramem_checkpoint.py --goldens"
BACKBONE="--hidden 32 --layers 4 --heads 4 --kv-heads 2 --ffn 48 --vocab 256"

# UltraMem V1: two skip-layer memories (block 0 -> after block 2, block 3 -> after block 3),
# H = 2 heads sharing one query, Tucker rank 2, 2 cores, E = 4 virtual blocks (Nk = 2 knum),
# tied embeddings.
$GEN --type ultramem $BACKBONE --tied --insert 0:2/3:3 --knum 4 --kdim 8 --vdim 8 --knn 4 \
     --mem-heads 2 --rank 2 --cores 2 --value-expand 4 --seed 11 --out $OUT/ultramem-tiny-f32

# UltraMemV2: a memory after every block, one shared table of knum^2 * 4 = 64 rows, share ratio
# 0.75 -> knum_r = int(sqrt(48)) = 6 (windows of 36 rows that wrap past the end), key expansion 2
# (Nk = 12, 4 virtual blocks summed: value_expand_time 1), linear pre-value gate.
$GEN --type ultramem_v2 $BACKBONE --insert full --knum 4 --kdim 8 --vdim 8 --knn 4 --mem-heads 2 \
     --pre-vdim 8 --share-ratio 0.75 --key-expand 2 --value-expand 1 --seed 21 \
     --out $OUT/ultramem_v2-tiny-f32

# UltraMemV2 variant: GELU pre-value gate (mem_use_glu_act), 4 heads (heads 2-3 read the second
# query block), value_expand_time = Ek^2 = 4 (groups kept apart, values_proj [D, 4 vdim]),
# skip-layer insertion, untied head.
$GEN --type ultramem_v2 $BACKBONE --insert 0:1/2:3 --knum 4 --kdim 8 --vdim 8 --knn 3 --mem-heads 4 \
     --pre-vdim 4 --share-ratio 0.5 --key-expand 2 --value-expand 4 --glu-act --seed 31 \
     --out $OUT/ultramem_v2-glu-tiny-f32
