#!/usr/bin/python3
"""Independent reference for Mnemo's byte-level BPE tokenizer, and the fixture generator.

It trains small byte-level BPE vocabularies on tests/data/tokenizers/bpe_train.txt, writes them
as Hugging Face style tokenizer.json files, and writes golden encodings computed by the plain
Python implementation below (regex module for \\p{L}; a straightforward lowest-rank-first merge
loop) for the test strings. The C++ tests compare against these goldens.

Regenerate (from the repository root, Debian's python3 with python3-regex):
    /usr/bin/python3 tools/reference/bpe_reference.py tests/data/tokenizers
"""
import json
import os
import sys
import unicodedata

import regex

GPT2_PATTERN = (r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+")
LLAMA3_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|"
                  r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2_PATTERN = (r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|"
                 r" ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")


def bytes_to_unicode():
    keep = list(range(0x21, 0x7F)) + list(range(0xA1, 0xAD)) + list(range(0xAE, 0x100))
    table, extra = {}, 0
    for b in range(256):
        if b in keep:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + extra)
            extra += 1
    return table


BYTE_TO_CHAR = bytes_to_unicode()


def to_vocab_form(word):
    return "".join(BYTE_TO_CHAR[b] for b in word.encode("utf-8"))


def train(text, pattern, num_merges):
    """Classic BPE training: repeatedly merge the most frequent adjacent pair (ties broken by the
    pair itself so the result is deterministic)."""
    words = {}
    for w in regex.findall(pattern, text):
        key = tuple(to_vocab_form(w))
        words[key] = words.get(key, 0) + 1
    merges = []
    for _ in range(num_merges):
        counts = {}
        for w, c in words.items():
            for a, b in zip(w, w[1:]):
                counts[(a, b)] = counts.get((a, b), 0) + c
        if not counts:
            break
        best = min(counts, key=lambda p: (-counts[p], p))
        if counts[best] < 2:
            break
        merges.append(best)
        merged = {}
        for w, c in words.items():
            out, i = [], 0
            while i < len(w):
                if i + 1 < len(w) and (w[i], w[i + 1]) == best:
                    out.append(w[i] + w[i + 1])
                    i += 2
                else:
                    out.append(w[i])
                    i += 1
            merged[tuple(out)] = merged.get(tuple(out), 0) + c
        words = merged
    vocab = {BYTE_TO_CHAR[b]: b for b in range(256)}
    for a, b in merges:
        vocab.setdefault(a + b, len(vocab))
    return vocab, merges


class Reference:
    def __init__(self, vocab, merges, pattern, specials, ignore_merges=False, nfc=False):
        self.vocab = vocab
        self.ranks = {m: i for i, m in enumerate(merges)}
        self.pattern = pattern
        self.specials = specials  # content -> id
        self.ignore_merges = ignore_merges
        self.nfc = nfc

    def bpe(self, word):
        form = to_vocab_form(word)
        if self.ignore_merges and form in self.vocab:
            return [self.vocab[form]]
        syms = list(form)
        while len(syms) > 1:
            ranked = [(self.ranks.get((syms[i], syms[i + 1]), None), i) for i in range(len(syms) - 1)]
            ranked = [r for r in ranked if r[0] is not None]
            if not ranked:
                break
            _, i = min(ranked)
            syms[i:i + 2] = [syms[i] + syms[i + 1]]
        return [self.vocab[s] for s in syms]

    def encode_plain(self, text):
        if self.nfc:
            text = unicodedata.normalize("NFC", text)
        ids = []
        for w in regex.findall(self.pattern, text):
            ids += self.bpe(w)
        return ids

    def encode(self, text, parse_special):
        if not parse_special or not self.specials:
            return self.encode_plain(text)
        alternation = "|".join(regex.escape(s) for s in sorted(self.specials, key=len, reverse=True))
        ids, pos = [], 0
        for m in regex.finditer(alternation, text):
            ids += self.encode_plain(text[pos:m.start()])
            ids.append(self.specials[m.group(0)])
            pos = m.end()
        return ids + self.encode_plain(text[pos:])


TEST_STRINGS = [
    "Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "don't you're we've I'M SHE'LL It'S they'D",
    "Numbers: 1 12 123 1234 12345 1234567 3.14159 2024-01-01",
    "   leading spaces, trailing spaces   ",
    "Multiple   spaces\tand\ttabs\n\nand\r\nnew lines\n\n\n",
    "Café naïve résumé jalapeño Übermäßig",
    "東京は日本の首都です。中文分词",
    "مرحبا بالعالم",
    "Привет, мир!",
    "Emoji 😀👍🏽 family 👨‍👩‍👧‍👦 flag 🇩🇪 heart ❤️",
    "<|begin_of_text|>Hello<|eot_id|> after special",
    "text with <|endoftext|> inside and <|eot_id|><|eot_id|> twice",
    "rare bytes: \u0007\u001f ŋ ʃ ɐ ǂ \U0001F9EC",
    "decomposed e\u0301 and composed \u00e9 and \u212b",
    "x" * 300,
    "",
    " ",
    "\n",
    "'s 'S 'll' 'x",
    "abc123def 4567 !!!??? ...---",
]


def write_fixture(out_dir, name, pattern, pre_tokenizer, specials, merges_as_pairs,
                  ignore_merges=False, nfc=False, post_processor=None, num_merges=300):
    text = open(os.path.join(out_dir, "bpe_train.txt"), encoding="utf-8").read()
    vocab, merges = train(unicodedata.normalize("NFC", text) if nfc else text, pattern, num_merges)
    special_ids = {}
    added = []
    for s in specials:
        special_ids[s] = len(vocab) + len(special_ids)
        added.append({"id": special_ids[s], "content": s, "single_word": False, "lstrip": False,
                      "rstrip": False, "normalized": False, "special": True})
    doc = {
        "version": "1.0",
        "truncation": None,
        "padding": None,
        "added_tokens": added,
        "normalizer": {"type": "NFC"} if nfc else None,
        "pre_tokenizer": pre_tokenizer,
        "post_processor": post_processor,
        "decoder": {"type": "ByteLevel", "add_prefix_space": True, "trim_offsets": True,
                    "use_regex": True},
        "model": {
            "type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
            "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
            "ignore_merges": ignore_merges, "vocab": vocab,
            "merges": [[a, b] if merges_as_pairs else f"{a} {b}" for a, b in merges],
        },
    }
    folder = os.path.join(out_dir, name)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(doc, f, ensure_ascii=False, separators=(",", ":"))
    ref = Reference(vocab, merges, pattern, special_ids, ignore_merges, nfc)
    cases = []
    for s in TEST_STRINGS:
        for parse_special in (True, False):
            # Byte-level decoding gives back the (normalized) input exactly.
            cases.append({"text": s, "parse_special": parse_special,
                          "ids": ref.encode(s, parse_special),
                          "decoded": unicodedata.normalize("NFC", s) if nfc else s})
    with open(os.path.join(out_dir, name + "_golden.json"), "w", encoding="utf-8") as f:
        json.dump({"tokenizer": name, "cases": cases}, f, ensure_ascii=False, indent=0)


def split_then_bytelevel(pattern):
    return {"type": "Sequence", "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": pattern}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False}]}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/tokenizers"
    llama_specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>",
                      "<|end_header_id|>", "<|eot_id|>"]
    write_fixture(out_dir, "gpt2_bpe", GPT2_PATTERN,
                  {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True,
                   "use_regex": True},
                  ["<|endoftext|>"], merges_as_pairs=False)
    write_fixture(out_dir, "llama3_bpe", LLAMA3_PATTERN, split_then_bytelevel(LLAMA3_PATTERN),
                  llama_specials, merges_as_pairs=True, ignore_merges=True,
                  post_processor={"type": "TemplateProcessing",
                                  "single": [{"SpecialToken": {"id": "<|begin_of_text|>",
                                                               "type_id": 0}},
                                             {"Sequence": {"id": "A", "type_id": 0}}],
                                  "pair": [], "special_tokens": {}})
    write_fixture(out_dir, "qwen2_bpe", QWEN2_PATTERN, split_then_bytelevel(QWEN2_PATTERN),
                  ["<|endoftext|>", "<|im_start|>", "<|im_end|>"], merges_as_pairs=False, nfc=True)


if __name__ == "__main__":
    main()
