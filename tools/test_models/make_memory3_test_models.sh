#!/bin/sh
# Regenerate tests/data/models/memory3-tiny-f32 (Memory3 explicit memories on a Llama backbone) and
# its goldens. Deterministic: running it twice gives identical files.
# Shape: D 64, 4 layers, 4 heads x 16, 2 KV heads, ffn 96, vocab 320 (as the other tiny models;
# none has a tokenizer, so the reference BOS is given as ids), tied embeddings, f32. Memory3:
# memory layers 0 and 1, 4 tokens per kv head, references of <= 24 tokens, chunks of 16, at most
# 5 memories per chunk, softmax selection, retrieval vectors after layer 1.
# The folder holds the checkpoint, golden_ids.txt / golden_logits.npy (a plain prompt with no
# memories, as every tiny model) and golden/ (tools/reference/memory3.py: memories, retrieval
# vectors, logits with 0 / 1 / 5 memories per chunk; golden/meta.json describes the layout).
set -eu
cd "$(dirname "$0")/../.."
PY=/usr/bin/python3
DIR=tests/data/models/memory3-tiny-f32

rm -rf "$DIR"
$PY tools/test_models/make_memory3_checkpoint.py --out $DIR --arch llama --hidden 64 --layers 4 --heads 4 \
    --kv-heads 2 --head-dim 16 --ffn 96 --vocab 320 --max-pos 2048 --tied --dtype f32 --seed 6 \
    --memory3 '{"memory_layers": [0, 1], "tokens_per_head": 4, "reference_length": 24, "chunk_length": 16, "references_per_chunk": 5, "reference_bos_ids": [1, 5, 9], "selection": "softmax", "retrieval_layer": 1}'
# Refuses (exit 1) when a token selection is within 1e-4 of a tie: then change --seed.
$PY tools/reference/memory3.py $DIR $DIR/golden --seed 0

# A memory3 model with UltraMemV2 memory layers (tools/reference/memory3.py, "Memory layers"):
# D 32, 4 layers, 2 heads x 16 on 1 KV head, ffn 48, vocab 256, tied, f32; memory3 as above
# but retrieval vectors after layer 3; memory layers "0:1/3:3" (memory 0 reads block 0 and adds
# after block 1, memory 1 reads and adds at block 3), knum 4 -> a shared table of 32 rows, share
# ratio 0.75 -> windows of 16 rows, Ek 2 (Nk 8), one head, linear pre-value gate of 8.
# The goldens refuse (exit 1) a memory-layer top-k selection within 1e-5 of a tie: then change
# --seed.
DIR=tests/data/models/memory3-ultramem-tiny-f32
rm -rf "$DIR"
$PY tools/test_models/make_memory3_checkpoint.py --out $DIR --arch llama --hidden 32 --layers 4 --heads 2 \
    --kv-heads 1 --head-dim 16 --ffn 48 --vocab 256 --max-pos 2048 --tied --dtype f32 --seed 13 \
    --memory3 '{"memory_layers": [0, 1], "tokens_per_head": 4, "reference_length": 24, "chunk_length": 16, "references_per_chunk": 5, "reference_bos_ids": [1, 5, 9], "selection": "softmax", "retrieval_layer": 3}' \
    --memory-layers '{"mem_insert_way": "0:1/3:3", "mem_knum": 4, "mem_kdim": 8, "mem_vdim": 8, "mem_knn": 4, "mem_head": 1, "mem_tucker_rank": 2, "mem_tucker_multihead": 2, "mem_value_expand_time": 1, "mem_pre_vdim": 8, "mem_share_ratio": 0.75, "mem_key_expand_time": 2, "mem_q_for_each_tucker_rank": true, "mem_use_glu_act": false}'
$PY tools/reference/memory3.py $DIR $DIR/golden --seed 0

# A second, smaller model with a real tokenizer (tests/data/tokenizers/gpt2_bpe) for the CLI
# tests (`mnemo memorize`, `mnemo run --memories`). Its reference BOS is given as text, so the
# plugin tokenizes it through the host; the ids below are what that tokenizer gives for
# "<|endoftext|>Reference:" (the reference generator has no tokenizer, so it gets them here and
# they are dropped from config.json afterwards).
DIR=tests/data/models/memory3-tiny-bpe
rm -rf "$DIR"
$PY tools/test_models/make_memory3_checkpoint.py --out $DIR --arch llama --hidden 32 --layers 2 --heads 2 \
    --kv-heads 1 --head-dim 16 --ffn 48 --vocab 379 --max-pos 2048 --tied --dtype f16 --seed 7 \
    --memory3 '{"memory_layers": [0], "tokens_per_head": 4, "reference_length": 32, "chunk_length": 16, "references_per_chunk": 3, "reference_bos": "<|endoftext|>Reference:", "reference_bos_ids": [378, 82, 101, 102, 270, 260, 99, 101, 58], "selection": "softmax", "retrieval_layer": 1}'
cp tests/data/tokenizers/gpt2_bpe/tokenizer.json $DIR/
$PY - "$DIR/config.json" <<'PYEOF'
import json, sys
path = sys.argv[1]
with open(path, encoding="utf-8") as f:
    cfg = json.load(f)
del cfg["memory3"]["reference_bos_ids"]
with open(path, "w", encoding="utf-8") as f:
    json.dump(cfg, f, indent=2)
    f.write("\n")
PYEOF
