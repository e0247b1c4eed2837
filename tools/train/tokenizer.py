#!/usr/bin/python3
"""The default model's tokenizer: SentencePiece BPE trained on the world's training text, shipped
both as tokenizer.model and as the equivalent Hugging Face tokenizer.json the engine reads.

Held-out entities are left out of the tokenizer's training text: their names are cut into pieces
the model saw in training, as a truly unseen name would be.

Special tokens: <unk> 0, <s> 1, </s> 2, then <|im_start|> and <|im_end|> (ChatML), then 256
byte-fallback pieces and the learned pieces. `encode()` here is THE tokenization training uses:
text is split at special tokens, each piece of plain text goes through SentencePiece (which adds
its "▁" dummy prefix per piece, as the Llama-2-style tokenizer.json normalizer does per segment).
"""

from __future__ import annotations

import io
import json
import os
import re
from typing import Dict, List, Sequence, Tuple

import sentencepiece as spm

SPECIALS = ["<|im_start|>", "<|im_end|>"]
CHAT_TEMPLATE = ("{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}"
                 "<|im_end|>\n{% endfor %}{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}")
METASPACE = "\u2581"


def chat_prompt(question: str) -> str:
    """What CHAT_TEMPLATE renders for one user message with the generation prompt."""
    return f"<|im_start|>user\n{question}<|im_end|>\n<|im_start|>assistant\n"


def train(sentences: Sequence[str], out_dir: str, vocab_size: int) -> None:
    """SentencePiece BPE training is deterministic (no sampling: every sentence is used)."""
    os.makedirs(out_dir, exist_ok=True)
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(sentences), model_writer=model, model_type="bpe", vocab_size=vocab_size,
        character_coverage=1.0, byte_fallback=True, user_defined_symbols=SPECIALS,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, normalization_rule_name="identity",
        remove_extra_whitespaces=False, split_digits=True, num_threads=1,
        minloglevel=2)
    with open(os.path.join(out_dir, "tokenizer.model"), "wb") as f:
        f.write(model.getvalue())
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    write_tokenizer_json(sp, os.path.join(out_dir, "tokenizer.json"))
    write_tokenizer_config(os.path.join(out_dir, "tokenizer_config.json"))


def write_tokenizer_json(sp: spm.SentencePieceProcessor, path: str) -> None:
    """The Llama-2-style tokenizer.json of a SentencePiece BPE model: vocab = pieces by id, merges
    = every split of a piece into two pieces, ordered by the merged piece's score (SentencePiece
    BPE applies the highest-scoring merge first; its pieces' ids follow their scores)."""
    n = sp.get_piece_size()
    vocab: Dict[str, int] = {sp.id_to_piece(i): i for i in range(n)}
    merges = []
    for piece, pid in vocab.items():
        if sp.is_control(pid) or sp.is_unknown(pid) or sp.is_byte(pid) or sp.is_unused(pid) or piece in SPECIALS:
            continue
        for cut in range(1, len(piece)):
            left, right = piece[:cut], piece[cut:]
            if left in vocab and right in vocab:
                merges.append((pid, vocab[left], vocab[right], left, right))
    merges.sort()
    added = [{"id": vocab[t], "content": t, "single_word": False, "lstrip": False, "rstrip": False,
              "normalized": False, "special": True} for t in ["<unk>", "<s>", "</s>"] + SPECIALS]
    doc = {
        "version": "1.0", "truncation": None, "padding": None, "added_tokens": added,
        "normalizer": {"type": "Sequence", "normalizers": [
            {"type": "Prepend", "prepend": METASPACE},
            {"type": "Replace", "pattern": {"String": " "}, "content": METASPACE}]},
        "pre_tokenizer": None, "post_processor": None,
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": METASPACE}, "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}, {"type": "Strip", "content": " ", "start": 1, "stop": 0}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": "<unk>", "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True, "byte_fallback": True, "vocab": vocab,
                  "merges": [f"{m[3]} {m[4]}" for m in merges]},
    }
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, indent=1)


def write_tokenizer_config(path: str) -> None:
    cfg = {"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>", "add_bos_token": True,
           "add_eos_token": False, "chat_template": CHAT_TEMPLATE,
           "tokenizer_class": "LlamaTokenizer", "model_max_length": 2048}
    with open(path, "w") as f:
        json.dump(cfg, f, indent=2)


class Tokenizer:
    """Encoding for training, identical to the engine's reading of tokenizer.json (checked by
    tests/test_default_model.cpp, DefaultModelTokenizer.*, against the ids that
    tools/train/make_goldens.py writes to tokenizer_cases.json with this class)."""

    def __init__(self, model_dir: str):
        self.sp = spm.SentencePieceProcessor(model_file=os.path.join(model_dir, "tokenizer.model"))
        self.special = {t: self.sp.piece_to_id(t) for t in SPECIALS + ["<s>", "</s>"]}
        self.bos, self.eos = self.sp.bos_id(), self.sp.eos_id()
        self.im_start, self.im_end = self.special["<|im_start|>"], self.special["<|im_end|>"]
        self._split = re.compile("(" + "|".join(re.escape(t) for t in self.special) + ")")

    def __len__(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, text: str) -> List[int]:
        ids: List[int] = []
        for part in self._split.split(text):
            if not part:
                continue
            if part in self.special:
                ids.append(self.special[part])
            else:
                ids.extend(self.sp.encode(part))
        return ids

    def encode_marking(self, text: str, start: int, end: int) -> Tuple[List[int], List[bool]]:
        """Plain text (no special tokens) -> ids, and which of them overlap text[start:end]:
        each token's character range is where the decoded prefix grows by it."""
        ids = list(self.sp.encode(text))
        marks, before = [], 0
        for j in range(len(ids)):
            after = len(self.sp.decode(ids[:j + 1]))
            marks.append(before < end and after > start and after > before)
            before = after
        return ids, marks

    def decode(self, ids: Sequence[int]) -> str:
        return self.sp.decode(list(ids))
