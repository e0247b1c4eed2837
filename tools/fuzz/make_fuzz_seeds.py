#!/usr/bin/python3
"""Writes the seed corpora for tests/fuzz/fuzz_safetensors.cpp, tests/fuzz/fuzz_json.cpp and
tests/fuzz/fuzz_memory_folder.cpp.

Seeds are small (< 4 KB) valid files plus a few broken ones, so the fuzzer starts from inputs
that reach deep into the parsers instead of spending its time discovering the file layout.
Run from anywhere: /usr/bin/python3 tools/fuzz/make_fuzz_seeds.py
"""
import json
import os
import struct
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
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


MF_DIR = os.path.join(ROOT, "tests", "fuzz", "corpus", "memory_folder")


def memory_folder(n, n_valid=None, corrupt_crc=False, count=None, encoding="f32", titled=False):
    """A small memory folder (1 memory layer, 1 kv head, 2 slots, head dim 4, retrieval dim 3);
    titled: each reference with a title and its tokens (which BM25 counts with the text's)."""
    layers, heads, keep, dim, rdim = [0], 1, 2, 4, 3
    slots = len(layers) * heads * keep
    manifest = json.dumps({
        "format": "mnemo-memories", "version": 1,
        "model": {"model_type": "memory3", "fingerprint": "0" * 64, "memory_layers": layers,
                  "kv_heads": heads, "head_dim": dim, "value_dim": dim, "tokens_per_head": keep,
                  "prefix_ids": [1, 2], "retrieval_layer": 1, "retrieval_dim": rdim},
        "count": n if count is None else count, "encoding": encoding,
        "record_bytes": 16 + slots * 4 + 2 * slots * dim * 4}).encode()
    record_bytes = 16 + slots * 4 + 2 * slots * dim * 4
    records = b"MNEMOMEM" + struct.pack("<II", 1, record_bytes)
    refs, vectors = b"", b""
    for i in range(n):
        nv = (n_valid or (keep,) * n)[i]
        body = struct.pack(f"<{slots}i", *[j if j < nv else -1 for j in range(slots)])
        body += struct.pack(f"<{2 * slots * dim}f", *[0.25 * (i + j) for j in range(2 * slots * dim)])
        crc = zlib.crc32(body) ^ (1 if corrupt_crc else 0)
        records += struct.pack("<IIII", 0x4352334D, i, nv, crc) + body
        ref = {"id": i, "tokens": [5, 6 + i, 7], "text": f"reference {i}"}
        if titled:
            ref.update({"title": f"document {i % 2}", "title_tokens": [8, 9 + i % 2]})
        refs += json.dumps(ref).encode() + b"\n"
        vectors += struct.pack("<3f", 0.6, 0.8 if i == 0 else 0.0, 0.0 if i == 0 else 0.8)
    return struct.pack("<HHH", len(manifest), len(refs), len(vectors)) + manifest + refs + vectors + records


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

    # Memory folders (engine/include/mnemo/memory/memory_folder.hpp), packed as fuzz_memory_folder.cpp
    # reads them: u16 lengths of manifest, references and vectors, then the four files.
    mf = {
        "valid_two": memory_folder(2, n_valid=(4, 2)),
        "valid_empty": memory_folder(0),
        "valid_titled": memory_folder(3, n_valid=(2, 1, 2), titled=True),
        "bad_crc": memory_folder(2, corrupt_crc=True),
        "bad_count": memory_folder(2, count=3),
        "bad_encoding": memory_folder(1, encoding="vq"),
    }
    for name, blob in mf.items():
        write(MF_DIR, name + ".bin", blob)


if __name__ == "__main__":
    main()
