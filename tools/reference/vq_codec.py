#!/usr/bin/python3
"""Reference vector-quantization codec for Memory3 explicit memories (issue 6, "Codec, decoded on
the device"). FAISS (Debian python3-faiss 1.7.3) trains and encodes; decoding is pure numpy so the
engine's `vq_decode` op has something FAISS-free to be checked against, and so the exact
arithmetic FAISS performs is written down in one place.

Codec (paper: "OPQ20x80-Residual2x14-PQ8x10"; FAISS spelling "OPQ20_80,Residual2x14,PQ8x10"):
    IndexPreTransform( OPQMatrix A: d_in -> d_out ,
                       Index2Layer(q1 = MultiIndexQuantizer(d_out, 2, 14), pq = PQ(d_out, m, 10)))
    encode  y = A x;  (i0, i1) = nearest pair of half-space centroids;  r = y - [C0[i0] | C1[i1]];
            p_k = nearest PQ centroid of r's k-th sub-vector
    decode  y = P(p) + [C0[i0] | C1[i1]]  ("rotated space"), then x = A^T y

Adapting the paper's codec to a head dimension d (`default_factory`):
    OPQ{M}_{d}    M = d/4: the paper's 20 sub-spaces of 4 dimensions at d = 80. When 4 does not
                  divide d, the largest divisor of d not above d/4.
    Residual2x14  unchanged: 2 halves x 2^14 centroids, always a 4-byte coarse code (d even).
    PQ{m}x10      10-bit codes unchanged; m = the divisor of d nearest to d/10 (ties: the larger).
                  That keeps the paper's budget of about 1 residual bit per dimension and
                  10-dimensional sub-vectors as closely as ProductQuantizer's "m divides d" allows.
    d = 80 -> OPQ20_80,Residual2x14,PQ8x10   14 B, 11.43x vs f16 (the paper's figures)
    d = 64 -> OPQ16_64,Residual2x14,PQ8x10   14 B,  9.14x
    d = 128 -> OPQ32_128,Residual2x14,PQ16x10 24 B, 10.67x

Code bytes (one row of `encode`; checked against FAISS in test_vq_codec.py):
    bytes [0, cb)      list_no, little-endian, cb = ceil(2*14/8) = 4 (Level1Quantizer's
                       encode_listno)
                       i0 = list_no & 0x3FFF, i1 = list_no >> 14 (MultiIndexQuantizer::reconstruct);
                       list_no >= 2^28 is corrupt (FAISS throws; `decode` raises ValueError)
    bytes [cb, size)   m indices of 10 bits as one LSB-first bit stream starting at bit 0 of
                       byte cb: index k = bits [10k, 10k+10); ceil(10m/8) bytes, high pad bits 0

Decode arithmetic FAISS 1.7.3 performs, reproduced bit for bit in float32 by `decode`:
  1. Index2Layer::sa_decode: x = PQ centroids copied per sub-vector, then x[j] += coarse[j]: one
     float32 addition per element, so the order of its operands cannot matter.
  2. IndexPreTransform::reverse_chain -> LinearTransform::transform_transpose, which is one BLAS
     call: sgemm_("N", "N", d_in, n, d_out, 1, A, d_in, y, d_out, 0, x, d_in). Debian links
     FAISS to libblas.so.3; its default alternative is netlib's reference BLAS, whose sgemm
     loop is, for each vector: x = 0; for l = 0..d_out-1: x[:] = x[:] + (1 * y[l]) * A[l, :]:
     every product rounded to float32, then added, in ascending l (no FMA: the library has no
     FMA instruction; no reassociation: the l loop is the outer one). `unrotate` does exactly
     that, so the result is identical. Under another BLAS (OpenBLAS, MKL: blocked kernels that
     may use FMA) FAISS itself no longer produces these bits; the differences are a few ulps
     (test_vq_codec.py measures the size with other summation orders). The C++ engine must
     keep this loop order and compile it with -ffp-contract=off (no fused multiply-add).

Canonical codebook serialisation, format 1 (`to_bytes`; the engine hashes exactly these bytes;
all integers unsigned 32-bit little-endian, all floats IEEE-754 binary32 little-endian, no
padding, nothing after the last array):
    offset 0   8 bytes  magic b"MNEMOVQC"
    offset 8   u32      format version = 1
    offset 12  u32      flags: bit 0 = rotation present (array A follows); other bits 0
    offset 16  u32      d_in    dimension of a decoded vector
    offset 20  u32      d_out   dimension of the rotated space (= d_in when there is no rotation)
    offset 24  u32      coarse_M      number of coarse sub-quantizers (2)
    offset 28  u32      coarse_nbits  bits per coarse index (14)
    offset 32  u32      pq_M          number of PQ sub-quantizers (m)
    offset 36  u32      pq_nbits      bits per PQ index (10)
    offset 40  f32      A[d_out][d_in], row-major                          (only if flag bit 0)
               f32      coarse[coarse_M][2^coarse_nbits][d_out/coarse_M]
               f32      pq[pq_M][2^pq_nbits][d_out/pq_M]
    size = 40 + 4*(d_out*d_in*[rotation] + 2^coarse_nbits*d_out + 2^pq_nbits*d_out)
    sha256 = SHA-256 of those bytes, as 64 lowercase hex digits. The floats are hashed as stored
    (+0.0 and -0.0 differ); non-finite values are refused at export.
    The code sizes follow from the header: ceil(coarse_M*coarse_nbits/8) + ceil(pq_M*pq_nbits/8).
    d = 80: 40 + 4*(6400 + 1310720 + 81920) = 5,596,200 bytes.

Rotated-space attention (`attention_rotated`): k = A^T k_r, so q.k = (A q).k_r for any A (a
transpose, not an inverse), and sum_j a_j v_j = A^T (sum_j a_j v_r_j) by linearity. The device
can decode memory keys and values in rotated space only, rotate each query once per memory codec
and the memory part of the attention output once, instead of rotating every memory vector.
Orthonormality of A is what makes A^T the decoder in the first place; the rewrite needs only that
every vector combined in one sum shares the same A.

Usage:
    index = train(vectors)                  # float32 [n, d], n >= 2^14
    cb = export(index)                      # {"A", "coarse", "pq", "meta", "sha256"}
    codes = encode(index, x)                # uint8 [n, code_size]
    x_hat = decode(cb, codes)               # == index.sa_decode(codes), bit for bit
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import struct
import sys
import warnings
from typing import Optional

import numpy as np

MAGIC = b"MNEMOVQC"
FORMAT_VERSION = 1
HEADER = struct.Struct("<8s8I")  # magic + 8 u32 fields = 40 bytes, so the arrays are 4-aligned
FLAG_ROTATION = 1
FAISS_POINTS_PER_CENTROID = 39  # below this FAISS's k-means prints its "please provide" warning


def _faiss():
    # Imported lazily: decode() and the serialisation must run where FAISS is not installed,
    # which is precisely the device's situation.
    import faiss
    return faiss


# ----------------------------------------------------------------------------------------------
# Factory string
# ----------------------------------------------------------------------------------------------

def _divisors(d: int) -> list:
    return [k for k in range(1, d + 1) if d % k == 0]


def default_factory(d: int) -> str:
    """The paper's codec adapted to head dimension d (rule in the module docstring)."""
    if d < 4 or d % 2:
        raise ValueError(f"head dimension {d}: Residual2x14 splits the vector in two halves, "
                         "so d must be even (and at least 4)")
    opq_m = max(k for k in _divisors(d) if 4 * k <= d)
    # min over (distance to d/10, -k): the nearest divisor, the larger one on a tie
    pq_m = min(_divisors(d), key=lambda k: (abs(10 * k - d), -k))
    return f"OPQ{opq_m}_{d},Residual2x14,PQ{pq_m}x10"


# ----------------------------------------------------------------------------------------------
# Training and encoding (FAISS)
# ----------------------------------------------------------------------------------------------

@contextlib.contextmanager
def _quiet_stderr(enabled: bool):
    """FAISS's C++ k-means prints its warnings with fprintf(stderr): only silencing file
    descriptor 2 itself hides them (Python's sys.stderr never sees them)."""
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "wb") as null:
            os.dup2(null.fileno(), 2)
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _parts(index):
    """(rotation or None, Index2Layer, MultiIndexQuantizer) of a codec built by the factory;
    anything else is refused rather than half-exported."""
    faiss = _faiss()
    index = faiss.downcast_index(index)
    rot = None
    if isinstance(index, faiss.IndexPreTransform):
        if index.chain.size() != 1:
            raise ValueError(f"expected at most one pre-transform, got {index.chain.size()}")
        rot = faiss.downcast_VectorTransform(index.chain.at(0))
        if not isinstance(rot, faiss.LinearTransform):
            raise ValueError(f"pre-transform {type(rot).__name__} is not a linear map")
        index = faiss.downcast_index(index.index)
    if not isinstance(index, faiss.Index2Layer):
        raise ValueError(f"expected an Index2Layer (factory 'Residual{{M}}x{{b}},PQ...'), "
                         f"got {type(index).__name__}")
    mi = faiss.downcast_index(index.q1.quantizer)
    if not isinstance(mi, faiss.MultiIndexQuantizer):
        raise ValueError(f"coarse quantizer {type(mi).__name__} is not a MultiIndexQuantizer")
    return rot, index, mi


def train(vectors: np.ndarray, factory: Optional[str] = None, *, opq_niter: Optional[int] = None,
          opq_niter_pq: Optional[int] = None, opq_niter_pq_0: Optional[int] = None,
          coarse_niter: Optional[int] = None, pq_niter: Optional[int] = None,
          quiet: bool = False):
    """Train a codec on float32 [n, d] vectors; `factory` defaults to default_factory(d).

    The *_niter overrides only shorten FAISS's iterations (tests); None keeps FAISS's defaults
    (OPQ 50 outer / 4 inner / 40 first, k-means 25). The smallest set FAISS accepts is
    n = 2^coarse_nbits (16384): its k-means throws below k points and, at exactly k points,
    skips the iterations and takes the training points as centroids, which is fast and fine
    for tests but no codec. FAISS asks for 39 points per centroid (638,976); fewer gives a
    Python warning here. quiet=True silences FAISS's own stderr lines during training."""
    faiss = _faiss()
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"vectors must be [n, d], got shape {x.shape}")
    n, d = x.shape
    if not np.isfinite(x).all():
        raise ValueError("training vectors contain NaN or Inf")
    index = faiss.index_factory(d, factory or default_factory(d))
    rot, l2, mi = _parts(index)
    need = max(1 << mi.pq.nbits, 1 << l2.pq.nbits)
    if n < need:
        raise ValueError(f"{n} training vectors: FAISS's k-means needs at least {need} "
                         f"(one per centroid)")
    if n < FAISS_POINTS_PER_CENTROID * (1 << mi.pq.nbits):
        warnings.warn(f"{n} training vectors for 2^{mi.pq.nbits} coarse centroids: FAISS "
                      f"recommends {FAISS_POINTS_PER_CENTROID * (1 << mi.pq.nbits)}; "
                      "the codec will be poor (fine for tests)", stacklevel=2)
    if rot is not None and isinstance(rot, faiss.OPQMatrix):
        for name, value in (("niter", opq_niter), ("niter_pq", opq_niter_pq),
                            ("niter_pq_0", opq_niter_pq_0)):
            if value is not None:
                setattr(rot, name, value)
    if coarse_niter is not None:
        mi.pq.cp.niter = coarse_niter
    if pq_niter is not None:
        l2.pq.cp.niter = pq_niter
    with _quiet_stderr(quiet):
        index.train(x)
    return index


def encode(index, x: np.ndarray) -> np.ndarray:
    """uint8 [n, code_size] codes of float32 [n, d] vectors (FAISS sa_encode)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    if x.ndim != 2 or x.shape[1] != index.d:
        raise ValueError(f"expected [n, {index.d}] vectors, got shape {x.shape}")
    return index.sa_encode(x)


# ----------------------------------------------------------------------------------------------
# Export and canonical serialisation
# ----------------------------------------------------------------------------------------------

def _nbits(k: int, what: str) -> int:
    b = k.bit_length() - 1
    if k < 2 or k != 1 << b:
        raise ValueError(f"{what}: {k} centroids is not a power of two")
    return b


def describe(A: Optional[np.ndarray], coarse: np.ndarray, pq: np.ndarray) -> dict:
    """Metadata derived from the arrays' shapes alone (so it can never disagree with them)."""
    if coarse.ndim != 3 or pq.ndim != 3:
        raise ValueError("coarse and pq must be [M, 2^nbits, dsub]")
    d_out = coarse.shape[0] * coarse.shape[2]
    if pq.shape[0] * pq.shape[2] != d_out:
        raise ValueError(f"coarse covers {d_out} dimensions, pq {pq.shape[0] * pq.shape[2]}")
    if A is not None and (A.ndim != 2 or A.shape[0] != d_out):
        raise ValueError(f"A must be [{d_out}, d_in], got {getattr(A, 'shape', None)}")
    d_in = A.shape[1] if A is not None else d_out
    cm, cn = coarse.shape[0], _nbits(coarse.shape[1], "coarse")
    pm, pn = pq.shape[0], _nbits(pq.shape[1], "pq")
    if pn > 24 or cm * cn > 62:
        # unpack() reads a PQ index from 4 bytes and the list number into a uint64
        raise ValueError(f"unsupported widths: pq {pn} bits, coarse {cm}x{cn} bits")
    ccs, pcs = (cm * cn + 7) // 8, (pm * pn + 7) // 8
    return {"format_version": FORMAT_VERSION, "rotation": A is not None, "d_in": d_in,
            "d_out": d_out, "coarse_M": cm, "coarse_nbits": cn, "pq_M": pm, "pq_nbits": pn,
            "coarse_code_size": ccs, "pq_code_size": pcs, "code_size": ccs + pcs,
            "f16_bytes": 2 * d_in, "ratio_vs_f16": 2 * d_in / (ccs + pcs),
            "serialized_bytes": HEADER.size + 4 * ((A.size if A is not None else 0)
                                                   + coarse.size + pq.size)}


def _codebooks(A, coarse, pq, extra_meta: Optional[dict] = None) -> dict:
    arrays = {"A": None if A is None else np.ascontiguousarray(A, dtype=np.float32),
              "coarse": np.ascontiguousarray(coarse, dtype=np.float32),
              "pq": np.ascontiguousarray(pq, dtype=np.float32)}
    for name, arr in arrays.items():
        if arr is not None and not np.isfinite(arr).all():
            raise ValueError(f"codebook {name} contains NaN or Inf")
    meta = describe(arrays["A"], arrays["coarse"], arrays["pq"])
    meta.update(extra_meta or {})
    cb = dict(arrays, meta=meta)
    cb["sha256"] = sha256(cb)
    return cb


def export(index) -> dict:
    """Plain arrays of a trained codec: {"A": float32 [d_out, d_in] or None, "coarse": float32
    [coarse_M, 2^coarse_nbits, d_out/coarse_M], "pq": float32 [pq_M, 2^pq_nbits, d_out/pq_M],
    "meta": dict, "sha256": hex of to_bytes()}."""
    faiss = _faiss()
    rot, l2, mi = _parts(index)
    if not faiss.downcast_index(index).is_trained:
        raise ValueError("index is not trained")
    A = None
    if rot is not None:
        if rot.have_bias or not rot.is_orthonormal:
            # FAISS decodes only through transform_transpose (no bias, orthonormal A): anything
            # else would make sa_decode throw, so there is nothing to reproduce.
            raise ValueError("the rotation must be orthonormal and without bias")
        A = faiss.vector_to_array(rot.A).reshape(rot.d_out, rot.d_in)
    coarse = faiss.vector_to_array(mi.pq.centroids).reshape(mi.pq.M, mi.pq.ksub, mi.pq.dsub)
    pq = faiss.vector_to_array(l2.pq.centroids).reshape(l2.pq.M, l2.pq.ksub, l2.pq.dsub)
    prefix = ""
    if rot is not None:
        prefix = (f"OPQ{rot.M}_{rot.d_out}," if isinstance(rot, faiss.OPQMatrix)
                  else f"{type(rot).__name__}_{rot.d_out},")
    factory = f"{prefix}Residual{mi.pq.M}x{mi.pq.nbits},PQ{l2.pq.M}x{l2.pq.nbits}"
    cb = _codebooks(A, coarse, pq, {"factory": factory, "faiss_version": faiss.__version__})
    if cb["meta"]["code_size"] != index.sa_code_size():
        raise AssertionError(f"code size {cb['meta']['code_size']} != FAISS "
                             f"{index.sa_code_size()}")
    return cb


def to_bytes(cb: dict) -> bytes:
    """The canonical serialisation (format in the module docstring)."""
    m = describe(cb["A"], cb["coarse"], cb["pq"])
    head = HEADER.pack(MAGIC, FORMAT_VERSION, FLAG_ROTATION if m["rotation"] else 0, m["d_in"],
                       m["d_out"], m["coarse_M"], m["coarse_nbits"], m["pq_M"], m["pq_nbits"])
    parts = [head]
    for name in ("A", "coarse", "pq"):
        if cb[name] is not None:
            parts.append(np.ascontiguousarray(cb[name], dtype="<f4").tobytes(order="C"))
    return b"".join(parts)


def sha256(cb: dict) -> str:
    return hashlib.sha256(to_bytes(cb)).hexdigest()


def from_bytes(data: bytes, expected_sha256: Optional[str] = None) -> dict:
    """Parse the canonical serialisation, refusing anything malformed or whose hash differs."""
    if expected_sha256 is not None:
        got = hashlib.sha256(data).hexdigest()
        if got != expected_sha256.lower():
            raise ValueError(f"codebook hash {got} differs from the expected {expected_sha256}")
    if len(data) < HEADER.size:
        raise ValueError(f"codebook truncated: {len(data)} bytes, header needs {HEADER.size}")
    magic, ver, flags, d_in, d_out, cm, cn, pm, pn = HEADER.unpack_from(data)
    if magic != MAGIC or ver != FORMAT_VERSION or flags & ~FLAG_ROTATION:
        raise ValueError(f"not a format-{FORMAT_VERSION} codebook (magic {magic!r}, version "
                         f"{ver}, flags {flags:#x})")
    if not (cm and pm and d_out % cm == 0 and d_out % pm == 0 and 1 <= cn <= 31
            and 1 <= pn <= 24 and (flags & FLAG_ROTATION or d_in == d_out)):
        raise ValueError("inconsistent codebook header")
    shapes = ([("A", (d_out, d_in))] if flags & FLAG_ROTATION else []) + [
        ("coarse", (cm, 1 << cn, d_out // cm)), ("pq", (pm, 1 << pn, d_out // pm))]
    need = HEADER.size + 4 * sum(int(np.prod(s)) for _, s in shapes)
    if len(data) != need:
        raise ValueError(f"codebook has {len(data)} bytes, header implies {need}")
    arrays, off = {"A": None}, HEADER.size
    for name, shape in shapes:
        count = int(np.prod(shape))
        arrays[name] = np.frombuffer(data, dtype="<f4", count=count, offset=off).reshape(shape)
        off += 4 * count
    return _codebooks(arrays["A"], arrays["coarse"], arrays["pq"])


# ----------------------------------------------------------------------------------------------
# Decoding (pure numpy: what the device does)
# ----------------------------------------------------------------------------------------------

def unpack(cb: dict, codes: np.ndarray):
    """(coarse indices int64 [n, coarse_M], pq indices int64 [n, pq_M]) of uint8 codes.
    Raises ValueError on a wrong width or a coarse list number out of range (corrupt code)."""
    m = cb["meta"]
    codes = np.asarray(codes)
    if codes.dtype != np.uint8 or codes.ndim != 2 or codes.shape[1] != m["code_size"]:
        raise ValueError(f"codes must be uint8 [n, {m['code_size']}], got {codes.dtype} "
                         f"{codes.shape}")
    ccs, cn, pn = m["coarse_code_size"], m["coarse_nbits"], m["pq_nbits"]
    list_no = np.zeros(codes.shape[0], dtype=np.uint64)
    for i in range(ccs):
        list_no |= codes[:, i].astype(np.uint64) << np.uint64(8 * i)
    nlist = 1 << (m["coarse_M"] * cn)
    bad = np.flatnonzero(list_no >= np.uint64(nlist))
    if bad.size:
        raise ValueError(f"corrupt code: coarse list number >= {nlist} in {bad.size} row(s), "
                         f"first row {bad[0]} (list number {int(list_no[bad[0]])})")
    cmask = np.uint64((1 << cn) - 1)
    coarse_idx = np.stack([(list_no >> np.uint64(j * cn)) & cmask
                           for j in range(m["coarse_M"])], axis=1).astype(np.int64)
    # Index k occupies bits [k*pn, k*pn + pn) of the little-endian stream after the coarse
    # bytes. Reading 4 bytes from its first byte covers shift (<= 7) + pn (<= 24) bits; the
    # 3 zero bytes appended keep those reads inside the array for the last indices.
    stream = np.concatenate([codes[:, ccs:], np.zeros((codes.shape[0], 3), np.uint8)], axis=1)
    stream = stream.astype(np.uint64)
    pmask = np.uint64((1 << pn) - 1)
    cols = []
    for k in range(m["pq_M"]):
        byte, shift = (k * pn) >> 3, (k * pn) & 7
        word = (stream[:, byte] | stream[:, byte + 1] << np.uint64(8)
                | stream[:, byte + 2] << np.uint64(16) | stream[:, byte + 3] << np.uint64(24))
        cols.append((word >> np.uint64(shift)) & pmask)
    return coarse_idx, np.stack(cols, axis=1).astype(np.int64)


def _gather(books: np.ndarray, idx: np.ndarray) -> np.ndarray:
    # books [M, K, dsub], idx [n, M] -> [n, M*dsub]: sub-vector j from book j
    return np.concatenate([books[j][idx[:, j]] for j in range(books.shape[0])], axis=1)


def decode_rotated(cb: dict, codes: np.ndarray) -> np.ndarray:
    """float32 [n, d_out]: the vectors in rotated space (FAISS Index2Layer::sa_decode)."""
    coarse_idx, pq_idx = unpack(cb, codes)
    # FAISS writes the PQ sub-vectors, then adds the coarse centroid: a single float32
    # addition per element, commutative, so this is bit-identical whatever the operand order.
    return _gather(cb["pq"], pq_idx) + _gather(cb["coarse"], coarse_idx)


def unrotate(cb: dict, y: np.ndarray) -> np.ndarray:
    """x = A^T y per row, with reference BLAS sgemm's float32 operation order (module docstring):
    x = 0, then for l = 0..d_out-1: x += round(y[l] * A[l, :]). This loop, not y @ A, is what
    makes `decode` equal FAISS bit for bit independently of numpy's BLAS."""
    y = np.asarray(y, dtype=np.float32)
    A = cb["A"]
    if A is None:
        return y.copy()
    x = np.zeros((y.shape[0], A.shape[1]), dtype=np.float32)
    for l in range(A.shape[0]):
        x += y[:, l:l + 1] * A[l]  # product rounded to float32 first (separate ufuncs: no FMA)
    return x


def decode(cb: dict, codes: np.ndarray) -> np.ndarray:
    """float32 [n, d_in], equal bit for bit to FAISS sa_decode on reference BLAS."""
    return unrotate(cb, decode_rotated(cb, codes))


def rotate(cb: dict, x: np.ndarray) -> np.ndarray:
    """A x per row (the forward OPQ map): how a query enters rotated space. Not bit-matched to
    FAISS's apply(); attention only needs it to float32 accuracy."""
    x = np.asarray(x, dtype=np.float32)
    return x.copy() if cb["A"] is None else x @ cb["A"].T


# ----------------------------------------------------------------------------------------------
# Attention over compressed memories, both ways (the equivalence the issue asks to test)
# ----------------------------------------------------------------------------------------------

def _softmax(s: np.ndarray) -> np.ndarray:
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def attention_decoded(q, k_mem, v_mem, k_ctx=None, v_ctx=None, scale=None):
    """One head, queries q [t, d]: memory keys/values (already decoded to [n, d]) placed before
    the context's (Memory3 eq. 4), softmax over all of them. float32 throughout."""
    q = np.asarray(q, np.float32)
    scale = np.float32(scale if scale is not None else q.shape[1] ** -0.5)
    keys = k_mem if k_ctx is None else np.concatenate([k_mem, k_ctx])
    vals = v_mem if v_ctx is None else np.concatenate([v_mem, v_ctx])
    return _softmax((q @ keys.T) * scale) @ vals


def attention_rotated(q, cb_k, codes_k, cb_v, codes_v, k_ctx=None, v_ctx=None, scale=None):
    """The same attention without un-rotating any memory vector: memory keys decoded in rotated
    space score against the query rotated once (A_k q); the memory values' weighted sum is taken
    in rotated space and rotated back once (A_v^T). Keys and values may use different codecs."""
    q = np.asarray(q, np.float32)
    scale = np.float32(scale if scale is not None else q.shape[1] ** -0.5)
    n_mem = codes_k.shape[0]
    s = decode_rotated(cb_k, codes_k) @ rotate(cb_k, q).T  # [n_mem, t]
    if k_ctx is not None:
        s = np.concatenate([s, k_ctx @ q.T])
    p = _softmax(s.T * scale)  # [t, n_mem + n_ctx]
    out = unrotate(cb_v, p[:, :n_mem] @ decode_rotated(cb_v, codes_v))
    if v_ctx is not None:
        out = out + p[:, n_mem:] @ v_ctx
    return out
