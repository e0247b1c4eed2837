#!/usr/bin/python3
"""Train a small byte-level BPE tokenizer (GPT-2 style) and write it in Hugging Face format.

Algorithm (Sennrich et al. 2016 BPE over bytes, as GPT-2 uses it):
  1. Split the corpus into pre-tokens with the GPT-2 pattern (needs Debian's python3-regex for
     \\p{L} / \\p{N}); merges never cross a pre-token boundary.
  2. Write every pre-token as its UTF-8 bytes, each byte as one printable character of the GPT-2
     byte<->unicode table (bytes_to_unicode, shared with tools/reference/bpe_reference.py), so the vocabulary is JSON-safe text.
  3. Start from the 256 single bytes; repeatedly merge the most frequent adjacent pair (ties
     broken by the smaller pair in code-point order, so training is deterministic) until the
     vocabulary (including the special tokens) reaches --vocab-size or no pair occurs twice.
  4. Append the special tokens (<|endoftext|>, <|im_start|>, <|im_end|>) after the merges.

Outputs in --out: tokenizer.json (model.type BPE, merges as "a b" strings, ByteLevel
pre_tokenizer with use_regex and ByteLevel decoder, added_tokens for the specials) and
tokenizer_config.json (bos/eos, a ChatML chat_template). --check re-encodes the corpus with the
written merges (rank order, the way an inference engine applies them) and verifies the round trip.

Usage: train_bpe_tokenizer.py --corpus assets/corpus --vocab-size 2000 --out assets/default-model
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import sys
from typing import Dict, List, Sequence, Tuple

try:
    import regex
except ImportError:  # pragma: no cover - environment problem, explain it
    sys.exit("train_bpe_tokenizer.py needs the 'regex' module: apt-get install -y python3-regex")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
from safetensors_io import write_text_atomic  # noqa: E402

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "reference"))
from bpe_reference import bytes_to_unicode  # noqa: E402  (GPT-2's byte -> character table)

# GPT-2's pre-tokenizer: contractions, letters with an optional leading space, numbers, other
# symbols, and whitespace (trailing whitespace before a non-space is left for the next word).
GPT2_PATTERN = r"""'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+"""
SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)


BYTE_TO_CHAR = bytes_to_unicode()
CHAR_TO_BYTE = {c: b for b, c in BYTE_TO_CHAR.items()}


def pretokenize(text: str) -> List[str]:
    """Text -> pre-tokens as byte-level strings."""
    return ["".join(BYTE_TO_CHAR[b] for b in piece.encode("utf-8"))
            for piece in regex.findall(GPT2_PATTERN, text)]


def read_corpus(path: str) -> str:
    files = [path] if os.path.isfile(path) else sorted(
        os.path.join(path, f) for f in os.listdir(path) if f.endswith(".txt"))
    if not files:
        raise SystemExit(f"{path}: no .txt files to train on")
    parts = []
    for f in files:
        with open(f, "r", encoding="utf-8") as fh:
            parts.append(fh.read())
    return "\n".join(parts)


def train(text: str, vocab_size: int, min_frequency: int = 2) -> Tuple[List[str], List[Tuple[str, str]]]:
    """Returns (tokens in id order without specials, merges in rank order)."""
    target_merges = vocab_size - 256 - len(SPECIAL_TOKENS)
    if target_merges < 0:
        raise SystemExit(f"--vocab-size {vocab_size} is below the 256 bytes + {len(SPECIAL_TOKENS)} specials")
    counts = collections.Counter(pretokenize(text))
    words: List[List[str]] = [list(w) for w in counts]
    freqs: List[int] = [counts[w] for w in counts]

    pair_counts: Dict[Tuple[str, str], int] = collections.defaultdict(int)
    where: Dict[Tuple[str, str], set] = collections.defaultdict(set)

    def account(idx: int, sign: int) -> None:
        w = words[idx]
        for pair in zip(w, w[1:]):
            pair_counts[pair] += sign * freqs[idx]
            if sign > 0:
                where[pair].add(idx)
            elif pair_counts[pair] <= 0:
                del pair_counts[pair]
        if sign < 0:
            for pair in zip(w, w[1:]):
                where[pair].discard(idx)

    for i in range(len(words)):
        account(i, +1)

    tokens = [BYTE_TO_CHAR[b] for b in range(256)]
    merges: List[Tuple[str, str]] = []
    while len(merges) < target_merges and pair_counts:
        (a, b), n = min(pair_counts.items(), key=lambda kv: (-kv[1], kv[0]))
        if n < min_frequency:
            break
        merged = a + b
        for idx in sorted(where[(a, b)]):
            account(idx, -1)
            w, out, j = words[idx], [], 0
            while j < len(w):
                if j + 1 < len(w) and w[j] == a and w[j + 1] == b:
                    out.append(merged)
                    j += 2
                else:
                    out.append(w[j])
                    j += 1
            words[idx] = out
            account(idx, +1)
        where.pop((a, b), None)
        merges.append((a, b))
        tokens.append(merged)
    return tokens, merges


def bpe_encode_word(word: str, ranks: Dict[Tuple[str, str], int]) -> List[str]:
    """Apply merges by rank to one pre-token (lowest rank first), as tokenizer libraries do."""
    parts = list(word)
    while len(parts) > 1:
        best = min(((ranks.get(p, 1 << 30), i) for i, p in enumerate(zip(parts, parts[1:]))))
        if best[0] == 1 << 30:
            break
        i = best[1]
        parts[i:i + 2] = [parts[i] + parts[i + 1]]
    return parts


def tokenizer_json(tokens: Sequence[str], merges: Sequence[Tuple[str, str]]) -> dict:
    vocab = {t: i for i, t in enumerate(tokens)}
    added = [{"id": len(tokens) + k, "content": s, "single_word": False, "lstrip": False,
              "rstrip": False, "normalized": False, "special": True}
             for k, s in enumerate(SPECIAL_TOKENS)]
    for a in added:
        vocab[a["content"]] = a["id"]
    return {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": None,
        "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                          "use_regex": True},
        "post_processor": None,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "continuing_subword_prefix": None, "end_of_word_suffix": None,
                  "fuse_unk": False, "byte_fallback": False, "ignore_merges": False,
                  "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }


def tokenizer_config(n_tokens: int) -> dict:
    decoder = {str(n_tokens + k): {"content": s, "lstrip": False, "normalized": False,
                                   "rstrip": False, "single_word": False, "special": True}
               for k, s in enumerate(SPECIAL_TOKENS)}
    return {
        "add_bos_token": False,
        "add_eos_token": False,
        "added_tokens_decoder": decoder,
        "bos_token": "<|endoftext|>",
        "eos_token": "<|endoftext|>",
        "pad_token": "<|endoftext|>",
        "unk_token": None,
        "chat_template": CHATML_TEMPLATE,
        "clean_up_tokenization_spaces": False,
        "model_max_length": 2048,
        "tokenizer_class": "PreTrainedTokenizerFast",
    }


def check_round_trip(text: str, tok: dict) -> Tuple[int, int]:
    """Encode with the written merges and decode back; returns (tokens, bytes)."""
    model = tok["model"]
    ranks = {tuple(m.split(" ")): r for r, m in enumerate(model["merges"])}
    vocab = model["vocab"]
    ids: List[int] = []
    for word in pretokenize(text):
        for piece in bpe_encode_word(word, ranks):
            if piece not in vocab:
                raise SystemExit(f"check failed: piece {piece!r} is not in the vocabulary")
            ids.append(vocab[piece])
    inverse = {i: t for t, i in vocab.items()}
    decoded = bytes(CHAR_TO_BYTE[c] for i in ids for c in inverse[i]).decode("utf-8")
    if decoded != text:
        raise SystemExit("check failed: decode(encode(corpus)) differs from the corpus")
    return len(ids), len(text.encode("utf-8"))


def main(argv) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--corpus", required=True, help="a .txt file or a folder of .txt files")
    p.add_argument("--vocab-size", type=int, default=2000, dest="vocab_size",
                   help="total vocabulary including the special tokens")
    p.add_argument("--min-frequency", type=int, default=2, dest="min_frequency")
    p.add_argument("--out", required=True)
    p.add_argument("--check", action="store_true", help="verify the round trip on the corpus")
    a = p.parse_args(argv)

    text = read_corpus(a.corpus)
    tokens, merges = train(text, a.vocab_size, a.min_frequency)
    tok = tokenizer_json(tokens, merges)
    os.makedirs(a.out, exist_ok=True)
    write_text_atomic(os.path.join(a.out, "tokenizer.json"), json.dumps(tok, ensure_ascii=False, indent=1) + "\n")
    write_text_atomic(os.path.join(a.out, "tokenizer_config.json"),
                      json.dumps(tokenizer_config(len(tokens)), indent=2) + "\n")
    total = len(tokens) + len(SPECIAL_TOKENS)
    print(f"{a.out}: vocab {total} ({len(merges)} merges, {len(SPECIAL_TOKENS)} specials) "
          f"from {len(text.encode('utf-8'))} corpus bytes")
    if a.check:
        n_ids, n_bytes = check_round_trip(text, tok)
        print(f"check: corpus round-trips; {n_ids} tokens for {n_bytes} bytes "
              f"({n_bytes / n_ids:.2f} bytes/token)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
