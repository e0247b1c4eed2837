#!/usr/bin/python3
"""FAISS goldens of VQ_DECODE (tests/data/ops_golden/vq/) and the seed corpus of the codebook
parser's fuzz target (tests/fuzz/corpus/vq_codebook/).

    /usr/bin/python3 tools/reference/ops_golden_vq.py tests/data/ops_golden/vq \\
        --corpus tests/fuzz/corpus/vq_codebook

Two small codecs are genuinely trained by FAISS (Debian python3-faiss 1.7.3), so that the C++
decoder is checked against what FAISS itself decodes rather than against our reading of it:
  opq16   "OPQ4_16,Residual2x6,PQ4x5"  d = 16: an OPQ rotation, 2 coarse halves of 6 bits, 5-bit
          PQ fields (none byte-aligned), 5-byte codes
  flat24  "Residual1x7,PQ3x10"         d = 24: no rotation, one 7-bit coarse quantizer, 10-bit
          PQ fields, 5-byte codes
The paper's shape (OPQ20_80,Residual2x14,PQ8x10) needs 5.6 MB of codebooks, too much for the
repository; these keep the files near 200 KB while exercising the same code paths.

Per codec <name>:
  <name>.mvqc          the canonical codebook (vq_codec.to_bytes)
  <name>.sha256        its SHA-256, 64 hex digits
  <name>_codes.npy     uint8 [200, code_size]: FAISS sa_encode of held-out vectors
  <name>_decoded.npy   float32 [200, d_in]: FAISS sa_decode of those codes
  <name>_rotated.npy   float32 [200, d_out]: the inner Index2Layer's sa_decode (rotated space),
                       only for codecs with a rotation
and, for the generic golden test (tests/test_ops_reference.cpp reads meta.txt), opq16 as plain
op inputs: opq16_codes_i32.npy (the codes as VQ_DECODE's i32 words), opq16_coarse.npy,
opq16_pq.npy, opq16_A.npy.

Before writing, the script checks that vq_codec.decode reproduces FAISS's decode bit for bit
(which holds over Debian's reference BLAS, see vq_codec's docstring) and that the codebook bytes
parse back to the same arrays.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys
import warnings

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vq_codec as vq  # noqa: E402

N_TRAIN = 4096
N_CODES = 200

CODECS = [
    # name, d, factory, FAISS iteration overrides (shortened: the goldens need a codec, not a good one)
    ("opq16", 16, "OPQ4_16,Residual2x6,PQ4x5", dict(opq_niter=20)),
    ("flat24", 24, "Residual1x7,PQ3x10", {}),
]


def vectors(rng, n: int, d: int) -> np.ndarray:
    # Anisotropic Gaussian data: dimensions of different scales give OPQ something to rotate.
    return (rng.standard_normal((n, d)) * np.linspace(2.0, 0.5, d)).astype(np.float32)


def code_words(codes: np.ndarray) -> np.ndarray:
    """uint8 [n, code_size] -> int32 [n, ceil(code_size/4)]: byte i is bits 8*(i%4) of word i/4."""
    n, size = codes.shape
    padded = np.zeros((n, (size + 3) // 4 * 4), np.uint8)
    padded[:, :size] = codes
    return padded.view("<u4").astype(np.uint32).view(np.int32)


def same_bits(a: np.ndarray, b: np.ndarray) -> bool:
    return a.shape == b.shape and bool((np.ascontiguousarray(a, np.float32).view(np.uint32)
                                        == np.ascontiguousarray(b, np.float32).view(np.uint32)).all())


def write_codec(out_dir: str, name: str, d: int, factory: str, overrides: dict, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "fewer points than FAISS recommends": fine for goldens
        index = vq.train(vectors(rng, N_TRAIN, d), factory, quiet=True, **overrides)
    cb = vq.export(index)
    codes = vq.encode(index, vectors(rng, N_CODES, d))
    decoded = index.sa_decode(codes)
    if not same_bits(vq.decode(cb, codes), decoded):
        raise SystemExit(f"{name}: vq_codec.decode differs from FAISS sa_decode (not reference BLAS?)")
    data = vq.to_bytes(cb)
    back = vq.from_bytes(data, cb["sha256"])
    for key in ("A", "coarse", "pq"):
        if (cb[key] is None) != (back[key] is None) or (cb[key] is not None and not same_bits(cb[key], back[key])):
            raise SystemExit(f"{name}: {key} does not survive to_bytes/from_bytes")

    with open(os.path.join(out_dir, f"{name}.mvqc"), "wb") as f:
        f.write(data)
    with open(os.path.join(out_dir, f"{name}.sha256"), "w") as f:
        f.write(cb["sha256"] + "\n")
    np.save(os.path.join(out_dir, f"{name}_codes.npy"), codes)
    np.save(os.path.join(out_dir, f"{name}_decoded.npy"), decoded.astype(np.float32))
    if cb["A"] is not None:
        _, layer2, _ = vq._parts(index)
        rotated = layer2.sa_decode(codes)
        if not same_bits(rotated, vq.decode_rotated(cb, codes)):
            raise SystemExit(f"{name}: vq_codec.decode_rotated differs from Index2Layer sa_decode")
        np.save(os.path.join(out_dir, f"{name}_rotated.npy"), rotated.astype(np.float32))
    m = cb["meta"]
    print(f"{name}: {m['factory']}  code {m['code_size']} B  codebook {len(data)} B  sha256 {cb['sha256']}")
    return dict(cb=cb, codes=codes, decoded=decoded)


def write_meta_case(out_dir: str, name: str, made: dict) -> None:
    """The codec as plain VQ_DECODE inputs plus meta.txt (tests/test_ops_reference.cpp's format)."""
    cb = made["cb"]
    np.save(os.path.join(out_dir, f"{name}_codes_i32.npy"), code_words(made["codes"]))
    np.save(os.path.join(out_dir, f"{name}_coarse.npy"), cb["coarse"])
    np.save(os.path.join(out_dir, f"{name}_pq.npy"), cb["pq"])
    inputs = [f"{name}_codes_i32.npy i32", f"{name}_coarse.npy f32", f"{name}_pq.npy f32"]
    if cb["A"] is not None:
        np.save(os.path.join(out_dir, f"{name}_A.npy"), cb["A"])
        inputs.append(f"{name}_A.npy f32")
    m = cb["meta"]
    with open(os.path.join(out_dir, "meta.txt"), "w") as f:
        f.write("op vq_decode\n")
        for line in inputs:
            f.write(f"input {line}\n")
        f.write(f"iparams {m['coarse_nbits']} {m['pq_nbits']}\n")
        f.write(f"expected {name}_decoded.npy\n")


def write_corpus(corpus_dir: str, golden_dir: str) -> None:
    """Seeds for tests/fuzz/fuzz_vq_codebook.cpp: tiny valid codebooks (with and without a
    rotation), the opq16 golden, and one instance of each rejection the parser names."""
    os.makedirs(corpus_dir, exist_ok=True)
    rng = np.random.default_rng(7)

    def tiny(rotation: bool) -> bytes:
        A = np.linalg.qr(rng.standard_normal((4, 4)))[0].astype(np.float32) if rotation else None
        coarse = rng.standard_normal((2, 4, 2)).astype(np.float32)  # Residual2x2
        pq = rng.standard_normal((2, 8, 2)).astype(np.float32)      # PQ2x3
        return vq.to_bytes({"A": A, "coarse": coarse, "pq": pq})

    good = tiny(True)
    seeds = {
        "valid_rotation.mvqc": good,
        "valid_plain.mvqc": tiny(False),
        "bad_magic.mvqc": b"MNEMOVQX" + good[8:],
        "bad_version.mvqc": good[:8] + struct.pack("<I", 2) + good[12:],
        "bad_flags.mvqc": good[:12] + struct.pack("<I", 3) + good[16:],
        "bad_dims.mvqc": good[:24] + struct.pack("<I", 3) + good[28:],  # coarse_M 3 does not divide d_out 4
        "bad_truncated.mvqc": good[:-4],
        "bad_trailing.mvqc": good + b"\0\0\0\0",
        "bad_nan.mvqc": good[:40] + struct.pack("<f", float("nan")) + good[44:],
    }
    with open(os.path.join(golden_dir, "opq16.mvqc"), "rb") as f:
        seeds["valid_opq16.mvqc"] = f.read()
    for name, data in seeds.items():
        with open(os.path.join(corpus_dir, name), "wb") as f:
            f.write(data)
    print(f"{len(seeds)} seeds in {corpus_dir}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out_dir", help="tests/data/ops_golden/vq")
    ap.add_argument("--corpus", help="also write the fuzz seeds here (tests/fuzz/corpus/vq_codebook)")
    args = ap.parse_args()
    os.makedirs(args.out_dir, exist_ok=True)
    made = {}
    for i, (name, d, factory, overrides) in enumerate(CODECS):
        made[name] = write_codec(args.out_dir, name, d, factory, overrides, seed=100 + i)
    write_meta_case(args.out_dir, "opq16", made["opq16"])
    if args.corpus:
        write_corpus(args.corpus, args.out_dir)


if __name__ == "__main__":
    main()
