#!/usr/bin/python3
"""Writes the seed corpora for tests/fuzz/fuzz_safetensors.cpp and tests/fuzz/fuzz_json.cpp.

Seeds are small (< 4 KB) valid files plus a few broken ones, so the fuzzer starts from inputs
that reach deep into the parsers instead of spending its time discovering the file layout.
Run from anywhere: /usr/bin/python3 tools/make_fuzz_seeds.py
"""
import json
import os
import struct

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ST_DIR = os.path.join(ROOT, "tests", "fuzz", "corpus", "safetensors")
JSON_DIR = os.path.join(ROOT, "tests", "fuzz", "corpus", "json")

DTYPE_SIZE = {"F32": 4, "F16": 2, "BF16": 2, "I32": 4, "I8": 1}


def safetensors_image(tensors, metadata=None, pad=True):
    """tensors: list of (name, dtype, shape). Returns file bytes with consecutive offsets."""
    header = {}
    if metadata:
        header["__metadata__"] = metadata
    offset = 0
    data = bytearray()
    for name, dtype, shape in tensors:
        n = DTYPE_SIZE[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + n]}
        data += bytes((offset + i) & 0xFF for i in range(n))
        offset += n
    text = json.dumps(header, separators=(",", ":")).encode()
    if pad:
        text += b" " * (-len(text) % 8)
    return struct.pack("<Q", len(text)) + text + bytes(data)


def raw_image(header_text, data_len):
    text = header_text.encode()
    return struct.pack("<Q", len(text)) + text + bytes(data_len)


def write(folder, name, blob):
    assert len(blob) < 4096, name
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(blob)


def main():
    st = {
        "valid_single_f32": safetensors_image([("w", "F32", [2, 3])]),
        "valid_all_dtypes": safetensors_image(
            [("a.weight", "F32", [2, 2]), ("b", "F16", [3]), ("c", "BF16", [1, 2, 2]),
             ("ids", "I32", [4]), ("scalar", "F32", []), ("empty", "F16", [0, 5])],
            metadata={"format": "pt"}),
        "valid_unpadded": safetensors_image([("x", "BF16", [4, 1, 1, 2])], pad=False),
        "valid_metadata_only": safetensors_image([], metadata={"k": "v"}),
        "bad_overlap": raw_image(
            '{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},'
            '"b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}}', 12),
        "bad_byte_count": raw_image('{"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,10]}}', 10),
        "bad_dtype": safetensors_image([("q", "I8", [3])]),
        "bad_header_len": struct.pack("<Q", 1 << 40) + b"{}",
        "bad_json": raw_image('{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4],}}', 4),
        "bad_range": raw_image('{"w":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}}', 4),
    }
    for name, blob in st.items():
        write(ST_DIR, name + ".safetensors", blob)

    js = {
        "config": json.dumps({
            "architectures": ["LlamaForCausalLM"], "hidden_size": 64, "rms_norm_eps": 1e-5,
            "rope_scaling": {"factor": 8.0, "type": "llama3"}, "tie_word_embeddings": False,
            "bos_token_id": 1, "eos_token_id": [2, 3], "torch_dtype": "bfloat16", "x": None},
            indent=2),
        "strings": '["plain", "esc \\" \\\\ \\/ \\b \\f \\n \\r \\t", "\\u00e9\\u20ac\\ud83d\\ude00", '
                   '"\u4f60\u597d", ""]',
        "numbers": "[0, -0, 1, -1, 9223372036854775807, -9223372036854775808, 9223372036854775808, "
                   "1.5, -2.5e-3, 1E+20, 0.1e1, 1e-400]",
        "nested": "[" * 40 + "{}" + "]" * 40,
        "index": json.dumps({"metadata": {"total_size": 26},
                             "weight_map": {"a": "model-00001-of-00002.safetensors",
                                            "b": "model-00002-of-00002.safetensors"}}),
        "bad_trailing_comma": '{"a": [1, 2,], }',
        "bad_leading_zero": "[01]",
        "bad_duplicate": '{"a": 1, "a": 2}',
        "bad_surrogate": '"\\ud83d\\u0041"',
        "bad_garbage": "{} x",
    }
    for name, text in js.items():
        write(JSON_DIR, name + ".json", text.encode("utf-8"))
    # Invalid UTF-8 cannot be written through a Python str.
    write(JSON_DIR, "bad_utf8.json", b'["\xc0\xaf", "\xed\xa0\x80"]')


if __name__ == "__main__":
    main()
