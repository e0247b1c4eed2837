#!/usr/bin/python3
"""Write a vocab-only GGUF (no tensors) from a SentencePiece tokenizer.model.

    /usr/bin/python3 tools/convert/gguf_vocab_from_sentencepiece.py tokenizer.model out.gguf \
        [--chat-template FILE] [--name NAME]

The GGUF holds what llama.cpp's converter writes for a SentencePiece ("llama") vocabulary:
tokenizer.ggml.model = "llama", tokens, scores, token_type (1 normal, 2 unknown, 3 control,
4 user-defined, 5 unused, 6 byte: the same numbers as SentencePiece's piece types),
bos/eos/unknown ids, add_bos_token (true), add_eos_token (false) and add_space_prefix (the model's
add_dummy_prefix). `mnemo tokenize -m out.gguf` then tokenizes as libsentencepiece does.

The model file is read with a small protobuf reader of our own (Debian's python3-sentencepiece
has no protobuf module), and only BPE models whose normalizer does nothing are accepted: a GGUF
"llama" vocabulary carries no normalizer, so a model that normalizes (nmt_nfkc, collapsing
whitespace) or a unigram model (Viterbi, not score-ordered merges) would tokenize differently
from SentencePiece. --force writes such a file anyway.

The module also holds the GGUF writer the tests' reference scripts use (write_gguf).
"""
import argparse
import os
import struct
import sys

# GGUF value types.
U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)

# SentencePiece piece types (sentencepiece_model.proto), equal to GGUF's token types.
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def _gguf_string(s):
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def _gguf_value(kind, value):
    """kind: one of the scalar types, or ("array", element_type)."""
    if isinstance(kind, tuple):
        elem = kind[1]
        out = struct.pack("<IQ", elem, len(value))
        return out + b"".join(_gguf_value(elem, v) for v in value)
    if kind == STRING:
        return _gguf_string(value)
    fmt = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f", BOOL: "<?",
           U64: "<Q", I64: "<q", F64: "<d"}[kind]
    return struct.pack(fmt, value)


def gguf_bytes(metadata, alignment=32):
    """GGUF version 3 image without tensors. metadata: list of (key, kind, value)."""
    out = bytearray(b"GGUF")
    out += struct.pack("<IQQ", 3, 0, len(metadata))
    for key, kind, value in metadata:
        out += _gguf_string(key)
        out += struct.pack("<I", ARRAY if isinstance(kind, tuple) else kind)
        out += _gguf_value(kind, value)
    out += b"\0" * ((-len(out)) % alignment)
    return bytes(out)


def write_gguf(path, metadata):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(gguf_bytes(metadata))
    os.replace(tmp, path)


# ---- A protobuf reader for the few fields of sentencepiece_model.proto used here.

def _varint(buf, pos):
    value = shift = 0
    while True:
        b = buf[pos]
        pos += 1
        value |= (b & 0x7F) << shift
        if b < 0x80:
            return value, pos
        shift += 7


def _fields(buf):
    """(field number, wire type, value) of a message: ints for varints, bytes for the rest."""
    pos = 0
    while pos < len(buf):
        key, pos = _varint(buf, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value, pos = buf[pos:pos + 8], pos + 8
        elif wire == 2:
            n, pos = _varint(buf, pos)
            value, pos = buf[pos:pos + n], pos + n
        elif wire == 5:
            value, pos = buf[pos:pos + 4], pos + 4
        else:
            raise ValueError("unsupported protobuf wire type %d" % wire)
        yield number, wire, value


class SentencePieceModel:
    """pieces [(text, score, type)], model_type (1 unigram, 2 bpe, ...), the normalizer's flags
    and the special ids of the trainer spec."""

    def __init__(self, data):
        self.pieces = []
        self.model_type = 1
        self.normalizer = ""
        self.add_dummy_prefix = True
        self.remove_extra_whitespaces = True
        self.ids = {"unk": 0, "bos": 1, "eos": 2, "pad": -1}
        for number, _, value in _fields(data):
            if number == 1:  # repeated SentencePiece pieces
                text, score, kind = "", 0.0, NORMAL
                for n, _, v in _fields(value):
                    if n == 1:
                        text = bytes(v).decode("utf-8")
                    elif n == 2:
                        score = struct.unpack("<f", v)[0]
                    elif n == 3:
                        kind = v
                self.pieces.append((text, score, kind))
            elif number == 2:  # TrainerSpec
                for n, _, v in _fields(value):
                    if n == 3:
                        self.model_type = v
                    elif n in (40, 41, 42, 43):  # unk_id, bos_id, eos_id, pad_id (int32)
                        self.ids[{40: "unk", 41: "bos", 42: "eos", 43: "pad"}[n]] = v - (1 << 64) if v >= 1 << 63 else v
            elif number == 3:  # NormalizerSpec
                for n, _, v in _fields(value):
                    if n == 1:
                        self.normalizer = bytes(v).decode("utf-8")
                    elif n == 3:
                        self.add_dummy_prefix = bool(v)
                    elif n == 4:
                        self.remove_extra_whitespaces = bool(v)

    def problems(self):
        """Why a GGUF "llama" vocabulary would tokenize differently from this model."""
        out = []
        if self.model_type != 2:
            out.append("it is a %s model, not BPE (a GGUF 'llama' vocabulary merges by score, SentencePiece's "
                       "unigram model runs Viterbi)" % {1: "unigram", 3: "word", 4: "char"}.get(self.model_type, "?"))
        if self.normalizer not in ("identity", ""):
            out.append("its normalizer is '%s' (GGUF carries none: only 'identity' tokenizes the same)" % self.normalizer)
        if self.remove_extra_whitespaces:
            out.append("it collapses runs of whitespace (remove_extra_whitespaces), which GGUF readers do not")
        return out


def gguf_metadata(model, name="sentencepiece", chat_template=None):
    """The metadata of a vocab-only GGUF for a parsed SentencePieceModel."""
    tokens = [p[0] for p in model.pieces]
    n = len(tokens)
    meta = [("general.architecture", STRING, "llama"),
            ("general.name", STRING, name),
            ("tokenizer.ggml.model", STRING, "llama"),
            ("tokenizer.ggml.tokens", ("array", STRING), tokens),
            ("tokenizer.ggml.scores", ("array", F32), [p[1] for p in model.pieces]),
            ("tokenizer.ggml.token_type", ("array", I32), [p[2] for p in model.pieces])]
    for key, which in (("bos", "bos"), ("eos", "eos"), ("unknown", "unk")):
        if 0 <= model.ids[which] < n:
            meta.append(("tokenizer.ggml.%s_token_id" % key, U32, model.ids[which]))
    meta += [("tokenizer.ggml.add_bos_token", BOOL, True),
             ("tokenizer.ggml.add_eos_token", BOOL, False),
             ("tokenizer.ggml.add_space_prefix", BOOL, model.add_dummy_prefix)]
    if chat_template is not None:
        meta.append(("tokenizer.chat_template", STRING, chat_template))
    return meta


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", help="SentencePiece tokenizer.model")
    ap.add_argument("out", help="GGUF file to write")
    ap.add_argument("--name", default="sentencepiece", help="general.name")
    ap.add_argument("--chat-template", help="a file whose text becomes tokenizer.chat_template")
    ap.add_argument("--force", action="store_true", help="write even when the model would tokenize differently")
    args = ap.parse_args()
    with open(args.model, "rb") as f:
        model = SentencePieceModel(f.read())
    problems = model.problems()
    if problems and not args.force:
        sys.exit("%s: %s; --force writes it anyway" % (args.model, "; ".join(problems)))
    template = None
    if args.chat_template:
        with open(args.chat_template, encoding="utf-8") as f:
            template = f.read()
    write_gguf(args.out, gguf_metadata(model, args.name, template))
    print("%s: %d tokens" % (args.out, len(model.pieces)))


if __name__ == "__main__":
    main()
