#!/usr/bin/python3
"""Train the tiny SentencePiece fixture and write golden encodings with python3-sentencepiece.

Regenerate (from the repository root, Debian's python3 with python3-sentencepiece):
    /usr/bin/python3 tools/reference/sp_reference.py tests/data/tokenizers
"""
import io
import json
import os
import sys

import sentencepiece as spm

TEST_STRINGS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "  leading and trailing  ",
    "Café naïve résumé",
    "東京は日本の首都です。",
    "Emoji 😀👍🏽 and rare ŋ ǂ",
    "Numbers 12345 and 3.14",
    "line one\nline two",
    "",
]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/tokenizers"
    folder = os.path.join(out_dir, "sp_tiny")
    os.makedirs(folder, exist_ok=True)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        input=os.path.join(out_dir, "sp_train.txt"), model_writer=model, vocab_size=500, hard_vocab_limit=False,
        model_type="bpe", byte_fallback=True, character_coverage=0.98, num_threads=1,
        bos_id=1, eos_id=2, unk_id=0, pad_id=-1, minloglevel=2, normalization_rule_name="identity")
    with open(os.path.join(folder, "tokenizer.model"), "wb") as f:
        f.write(model.getvalue())
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    cases = []
    for s in TEST_STRINGS:
        ids = sp.encode(s)
        cases.append({"text": s, "ids": ids, "pieces": [sp.id_to_piece(i) for i in ids],
                      "decoded": sp.decode(ids)})
    with open(os.path.join(out_dir, "sp_tiny_golden.json"), "w", encoding="utf-8") as f:
        json.dump({"vocab_size": sp.get_piece_size(), "bos_id": sp.bos_id(),
                   "eos_id": sp.eos_id(), "cases": cases}, f, ensure_ascii=False, indent=0)


if __name__ == "__main__":
    main()
