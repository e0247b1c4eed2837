#!/usr/bin/python3
"""Fixtures and goldens for the GGUF tokenizers (engine/src/tokenizer/gguf_vocab.cpp).

1. sp_gguf/: a small SentencePiece BPE model trained here with Llama-2's settings (identity
   normalizer, whitespace kept, byte fallback, digits split, whitespace-only pieces) on
   assets/corpus/*.txt, tests/data/tokenizers/sp_train.txt and generated indented lines, with the control tokens
   <|im_start|> / <|im_end|> and the user-defined token <tool>; its vocab-only GGUF
   (tools/convert/gguf_vocab_from_sentencepiece.py, with a ChatML chat template) as
   sp_gguf.gguf; and sp_gguf_golden.json: for texts of our own (spaces, newlines, tabs, digits,
   accents, CJK, emoji, characters the vocabulary lacks so that they fall back to bytes) the ids,
   pieces and decoded text libsentencepiece gives. The C++ test also compares the two live.
2. pretokenize_golden.json: the pieces of the split sequences llama.cpp names "default",
   "starcoder", "falcon" and "deepseek-coder" (tokenizer.ggml.pre), computed with Python's regex
   module: each step cuts every piece into its matches and the text between them.

Regenerate (from the repository root; Debian's python3 with python3-sentencepiece, python3-regex):
    /usr/bin/python3 tools/reference/gguf_tokenizer_reference.py tests/data/tokenizers
"""
import glob
import io
import json
import os
import sys
import tempfile

import regex
import sentencepiece as spm

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "convert"))
import gguf_vocab_from_sentencepiece as g2s  # noqa: E402

CHATML = ("{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + "
          "'<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}")

SPM_TEXTS = [
    "Hello world",
    "The library opened in 1887 and holds 250000 books.",
    " one leading space",
    "   three leading spaces",
    "trailing spaces   ",
    "two  inner   runs    of     spaces",
    "line one\nline two\n\nafter a blank line",
    "tabs\tand\ttabs\t\tdouble",
    "carriage\r\nreturn",
    "Numbers: 0 7 42 314159 2.71828 1,000,000",
    "Café naïve résumé façade jalapeño",
    "Übermäßig schöne Grüße aus München!",
    "東京は日本の首都です。",
    "Ελληνικά και Кириллица",
    "Emoji 😀👍🏽 and rare ŋ ǂ ʬ",
    "Bytes for what the vocabulary lacks: ☃ ⚙ 𝄞",
    "punctuation!!! ... ??? (parens) [brackets] {braces} <angles>",
    "quotes \"double\" and 'single' and `back`",
    "under_score and kebab-case and CamelCase",
    "a",
    " ",
    "  ",
    "\n",
    "",
    "<s> and </s> written as text",
    "the rivers of the world flow to the sea",
    "Memory is the faculty by which information is encoded, stored and retrieved.",
    "def count_3(x):\n    if x > 4:\n        return count + x  # name\n",
    "    eight\n        sixteen                spaces",
]

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
SEQUENCES = {
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"],
    "starcoder": [r"\p{N}", GPT2],
    "falcon": [r"[\p{P}\$\+<=>\^~\|`]+", GPT2, r"[0-9][0-9][0-9]"],
    "deepseek-coder": [r"[\r\n]", r"\s?\p{L}+", r"\s?\p{P}+", "[\u4e00-\u9fa5\u0800-\u4e00\uac00-\ud7ff]+", r"\p{N}"],
}

SPLIT_TEXTS = [
    "Hello, world! It's 2024.",
    "price: $1,234.56 + 7% <=> ^~| `code` and more",
    "x = a+b; y=c*d // comment",
    "1234567 89 0 12345678901",
    "Ⅻ² ٣٤٥٦ 五六 ½",
    "東京は日本の首都です。한국어 텍스트입니다",
    "line one\nline two\r\n\n  indented\ttab",
    "  leading and trailing  ",
    "emoji 😀👍🏽 and ŋ",
    "don't we'll I'M they've you'd",
    "a...b!!!c???d",
    "“quoted” ‘single’ «guillemets» — dash – en",
    "snake_case and kebab-case and path/to/file.txt",
    "",
    " ",
    "\n\n",
    "foo  bar   baz",
    "¡Hola! ¿Qué tal?",
    "Ünïcödé Ελληνικά Кириллица",
    "3.14159 2,718 1e10 0x1F",
    "ＡＢＣ１２３！？",
    "def f(x):\n    return x**2  # square",
    "ࠀࠁ and 一 and 龥龦",
    " 123 4567  89",
    "a\u00a0b\u2003c",
    "tab\t\tthen text",
    "@user #tag &amp; 100%",
]


def split_sequence(text, steps):
    pieces = [text]
    for rx in steps:
        out = []
        for p in pieces:
            pos = 0
            for m in regex.finditer(rx, p):
                if m.start() > pos:
                    out.append(p[pos:m.start()])
                out.append(m.group())
                pos = m.end()
            if pos < len(p):
                out.append(p[pos:])
        pieces = out
    assert "".join(pieces) == text
    return pieces


def indented_lines():
    """Code-like lines indented by 2, 4 and 8 spaces, so that whitespace-only pieces are learned."""
    words = ["value", "index", "result", "count", "name", "river", "memory", "library"]
    lines = []
    for i in range(240):
        w = words[i % len(words)]
        lines.append("def %s_%d(x):" % (w, i % 7))
        lines.append("    if x > %d:" % (i % 10))
        lines.append("        return %s + x  # %s" % (w, words[(i * 3) % len(words)]))
        lines.append("  %s = [%d, %d]" % (w, i % 5, i % 3))
    return "\n".join(lines) + "\n"


def train(out_dir):
    extra = os.path.join(tempfile.mkdtemp(), "indented.txt")
    with open(extra, "w", encoding="utf-8") as f:
        f.write(indented_lines())
    inputs = sorted(glob.glob("assets/corpus/*.txt")) + [os.path.join(out_dir, "sp_train.txt"), extra]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        input=",".join(inputs), model_writer=model, model_type="bpe", vocab_size=800, hard_vocab_limit=False,
        byte_fallback=True, split_digits=True, allow_whitespace_only_pieces=True, remove_extra_whitespaces=False,
        normalization_rule_name="identity", add_dummy_prefix=True, character_coverage=0.995, num_threads=1,
        unk_id=0, bos_id=1, eos_id=2, pad_id=-1, control_symbols=["<|im_start|>", "<|im_end|>"],
        user_defined_symbols=["<tool>"], minloglevel=2)
    return model.getvalue()


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/tokenizers"
    data = train(out_dir)
    folder = os.path.join(out_dir, "sp_gguf")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "tokenizer.model"), "wb") as f:
        f.write(data)
    model = g2s.SentencePieceModel(data)
    assert not model.problems(), model.problems()
    g2s.write_gguf(os.path.join(out_dir, "sp_gguf.gguf"), g2s.gguf_metadata(model, "sp_gguf", CHATML))

    sp = spm.SentencePieceProcessor(model_proto=data)
    assert (sp.unk_id(), sp.bos_id(), sp.eos_id()) == (model.ids["unk"], model.ids["bos"], model.ids["eos"])
    cases = []
    for text in SPM_TEXTS:
        ids = sp.encode(text)
        cases.append({"text": text, "ids": ids, "pieces": [sp.id_to_piece(i) for i in ids], "decoded": sp.decode(ids)})
    byte_fallbacks = sum(1 for c in cases for p in c["pieces"] if p.startswith("<0x"))
    assert byte_fallbacks > 0
    with open(os.path.join(out_dir, "sp_gguf_golden.json"), "w", encoding="utf-8") as f:
        json.dump({"vocab_size": sp.get_piece_size(), "bos_id": sp.bos_id(), "eos_id": sp.eos_id(),
                   "unk_id": sp.unk_id(), "cases": cases}, f, ensure_ascii=False, indent=0)
        f.write("\n")

    split_cases = []
    for name, steps in SEQUENCES.items():
        for text in SPLIT_TEXTS:
            split_cases.append({"pre": name, "text": text, "pieces": split_sequence(text, steps)})
    with open(os.path.join(out_dir, "pretokenize_golden.json"), "w", encoding="utf-8") as f:
        json.dump({"sequences": SEQUENCES, "cases": split_cases}, f, ensure_ascii=False, indent=0)
        f.write("\n")
    print("sp_gguf: %d pieces, %d texts (%d byte-fallback tokens); %d split cases"
          % (sp.get_piece_size(), len(cases), byte_fallbacks, len(split_cases)))


if __name__ == "__main__":
    main()
