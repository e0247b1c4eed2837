#!/bin/sh
# Regenerate assets/default-model/: the small model embedded in `mnemo` so that `mnemo run` works
# with no download. The tokenizer is real (byte-level BPE trained on assets/corpus/); the weights
# are RANDOM and UNTRAINED (seed 2024), so the model produces nonsense. See assets/README.md.
# Deterministic: running it twice gives byte-identical files. Needs python3-regex.
set -eu
cd "$(dirname "$0")/.."
PY=/usr/bin/python3
OUT=assets/default-model

$PY tools/train_bpe_tokenizer.py --corpus assets/corpus --vocab-size 2000 --out $OUT --check

# The model's vocabulary is exactly the tokenizer's (merges stop early when no pair repeats).
VOCAB=$($PY -c 'import json,sys; print(len(json.load(open(sys.argv[1]))["model"]["vocab"]))' $OUT/tokenizer.json)
EOT=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["model"]["vocab"]["<|endoftext|>"])' $OUT/tokenizer.json)
IM_END=$($PY -c 'import json,sys; print(json.load(open(sys.argv[1]))["model"]["vocab"]["<|im_end|>"])' $OUT/tokenizer.json)

# hidden 256, 4 layers, 4 heads of 64 with 2 KV heads, SwiGLU 512, tied embeddings, f16:
# about 2.8 M parameters, 5.7 MB.
$PY tools/make_checkpoint.py --arch llama --hidden 256 --layers 4 --heads 4 --kv-heads 2 --ffn 512 \
    --vocab "$VOCAB" --tied --dtype f16 --rope-theta 10000 --max-pos 2048 \
    --bos "$EOT" --eos "$EOT" --seed 2024 --out $OUT

printf '{\n  "bos_token_id": %s,\n  "eos_token_id": [%s, %s],\n  "do_sample": true,\n  "temperature": 0.8,\n  "top_p": 0.95\n}\n' \
    "$EOT" "$EOT" "$IM_END" > $OUT/generation_config.json

# Golden logits let the engine check the embedded model the same way as the test models. They
# live under tests/ so they are not embedded in the binary with the model.
rm -f $OUT/golden_ids.txt $OUT/golden_logits.npy
$PY tools/reference/make_goldens.py --count 12 --seed 1234 --out-dir tests/data/models/default-model-golden $OUT
du -b $OUT/* | sort -k2
