"""Checks of tools/reference/vq_codec.py against FAISS 1.7.3 (Debian python3-faiss), so the numpy
decoder, the code layout and the codebook serialisation it documents can serve as the C++
engine's reference.

    /usr/bin/python3 -m unittest -v tools/reference/test_vq_codec.py

Two codecs keep this fast on two shared cores:
  * d = 80, the paper's factory "OPQ20_80,Residual2x14,PQ8x10" built by FAISS, with random
    codebooks written into FAISS's own objects: real training at d = 80 spends ~30 s in the
    exhaustive 2 x 16384 coarse assignment, and the decode path does not care how the
    codebooks were obtained.
  * d = 16, default_factory(16) = "OPQ4_16,Residual2x14,PQ2x10" genuinely trained by FAISS on
    the smallest set it accepts (16384 = 2^14 vectors) with shortened iterations: ~9 s.
"""

import hashlib
import os
import struct
import sys
import time
import unittest
import warnings

import faiss
import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import vq_codec as vq  # noqa: E402


def bits(a: np.ndarray) -> np.ndarray:
    # Compare float32 bit patterns, so -0.0 vs +0.0 or a NaN payload would count as a mismatch.
    return np.ascontiguousarray(a, dtype=np.float32).view(np.uint32)


def random_codec(d: int, seed: int):
    """A FAISS index of default_factory(d) whose codebooks are set to random values (A a random
    orthonormal matrix), plus the same codebooks as plain arrays."""
    rng = np.random.default_rng(seed)
    index = faiss.index_factory(d, vq.default_factory(d))
    rot, l2, mi = vq._parts(index)
    A = np.linalg.qr(rng.standard_normal((d, d)))[0].astype(np.float32)
    coarse = rng.standard_normal((mi.pq.M, mi.pq.ksub, mi.pq.dsub)).astype(np.float32)
    pq = (0.3 * rng.standard_normal((l2.pq.M, l2.pq.ksub, l2.pq.dsub))).astype(np.float32)
    faiss.copy_array_to_vector(A.ravel(), rot.A)
    faiss.copy_array_to_vector(coarse.ravel(), mi.pq.centroids)
    faiss.copy_array_to_vector(pq.ravel(), l2.pq.centroids)
    # The flags MultiIndexQuantizer::train / OPQMatrix::train / Index2Layer::train would set.
    rot.is_orthonormal = True
    rot.is_trained = mi.is_trained = l2.is_trained = index.is_trained = True
    mi.ntotal = 1 << (mi.pq.M * mi.pq.nbits)
    return index, A, coarse, pq


def random_codes(cb: dict, n: int, rng) -> np.ndarray:
    """Valid random codes: uniform bytes, with the coarse list number's bits above
    coarse_M*coarse_nbits cleared (those would be corrupt codes)."""
    m = cb["meta"]
    codes = rng.integers(0, 256, (n, m["code_size"]), dtype=np.uint8)
    list_no = rng.integers(0, 1 << (m["coarse_M"] * m["coarse_nbits"]), n, dtype=np.uint64)
    for i in range(m["coarse_code_size"]):
        codes[:, i] = (list_no >> np.uint64(8 * i)).astype(np.uint8)
    return codes


class VQCodecTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.idx80, cls.A80, cls.coarse80, cls.pq80 = random_codec(80, seed=1)
        cls.cb80 = vq.export(cls.idx80)
        rng = np.random.default_rng(2)
        cls.x16 = rng.standard_normal((16384, 16)).astype(np.float32)
        t0 = time.time()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            cls.idx16 = vq.train(cls.x16, opq_niter=2, opq_niter_pq=2, opq_niter_pq_0=2,
                                 pq_niter=4, quiet=True)
        cls.train_warnings = [str(w.message) for w in caught]
        cls.train_seconds = time.time() - t0
        cls.cb16 = vq.export(cls.idx16)
        cls.test16 = rng.standard_normal((512, 16)).astype(np.float32)
        cls.codes16 = vq.encode(cls.idx16, cls.test16)
        print(f"\n[vq_codec] training d=16 on 16384 vectors: {cls.train_seconds:.1f} s",
              file=sys.stderr)

    # --- factory rule and sizes ----------------------------------------------------------------

    def test_default_factory_rule(self):
        expected = {80: ("OPQ20_80,Residual2x14,PQ8x10", 14),
                    64: ("OPQ16_64,Residual2x14,PQ8x10", 14),
                    128: ("OPQ32_128,Residual2x14,PQ16x10", 24),
                    96: ("OPQ24_96,Residual2x14,PQ8x10", 14),
                    16: ("OPQ4_16,Residual2x14,PQ2x10", 7),
                    18: ("OPQ3_18,Residual2x14,PQ2x10", 7)}
        for d, (factory, size) in expected.items():
            self.assertEqual(vq.default_factory(d), factory)
            # FAISS parses every string the rule produces and agrees on the code size.
            self.assertEqual(faiss.index_factory(d, factory).sa_code_size(), size)
        with self.assertRaises(ValueError):
            vq.default_factory(81)

    def test_code_size_and_compression_ratio(self):
        m = self.cb80["meta"]
        self.assertEqual(self.idx80.sa_code_size(), 14)
        self.assertEqual((m["coarse_code_size"], m["pq_code_size"], m["code_size"]), (4, 10, 14))
        self.assertEqual(m["factory"], "OPQ20_80,Residual2x14,PQ8x10")
        self.assertEqual(m["f16_bytes"], 160)
        self.assertAlmostEqual(m["ratio_vs_f16"], 160 / 14)
        self.assertEqual(round(m["ratio_vs_f16"], 1), 11.4)  # the paper's figure
        self.assertEqual(m["serialized_bytes"], 5_596_200)
        self.assertEqual(len(vq.to_bytes(self.cb80)), 5_596_200)

    # --- code layout, each claim checked against FAISS's own routines --------------------------

    def test_coarse_list_number_layout(self):
        _, _, mi = vq._parts(self.idx80)
        rng = np.random.default_rng(3)
        list_nos = [0, 1, 0x3FFF, 1 << 14, (1 << 28) - 1, 5 | (9000 << 14)]
        list_nos += [int(v) for v in rng.integers(0, 1 << 28, 20)]
        for ln in list_nos:
            want = np.concatenate([self.coarse80[0][ln & 0x3FFF], self.coarse80[1][ln >> 14]])
            self.assertTrue(np.array_equal(bits(mi.reconstruct(ln)), bits(want)), ln)
            code = np.zeros((1, 14), np.uint8)
            code[0, :4] = np.frombuffer(struct.pack("<I", ln), np.uint8)
            coarse_idx, _ = vq.unpack(self.cb80, code)
            self.assertEqual(coarse_idx.tolist(), [[ln & 0x3FFF, ln >> 14]])

    def test_pq_10bit_lsb_first_packing(self):
        _, l2, _ = vq._parts(self.idx80)
        rng = np.random.default_rng(4)
        idx = rng.integers(0, 1024, (64, 8))
        idx[0], idx[1] = 0, 1023  # all-zero and all-ones bit streams
        # An independent packer: index k is bits [10k, 10k+10) of one little-endian integer.
        packed = np.array([list(sum(int(v) << (10 * k) for k, v in enumerate(row))
                                .to_bytes(10, "little")) for row in idx], np.uint8)
        want = np.concatenate([self.pq80[k][idx[:, k]] for k in range(8)], axis=1)
        self.assertTrue(np.array_equal(bits(l2.pq.decode(packed)), bits(want)))
        codes = np.concatenate([random_codes(self.cb80, 64, rng)[:, :4], packed], axis=1)
        self.assertEqual(vq.unpack(self.cb80, codes)[1].tolist(), idx.tolist())
        # The trained d=16 codec has 2 indices in 20 bits of 3 bytes: the top 4 bits stay 0.
        self.assertEqual(self.cb16["meta"]["pq_code_size"], 3)
        self.assertFalse((self.codes16[:, -1] >> 4).any())

    # --- bit-exact decode ----------------------------------------------------------------------

    def test_decode_matches_faiss_bit_for_bit_d80(self):
        rng = np.random.default_rng(5)
        codes = random_codes(self.cb80, 4096, rng)
        codes[0] = 0
        codes[1] = 0xFF
        codes[1, 3] = 0x0F  # list number 2^28 - 1, every PQ index 1023
        _, l2, _ = vq._parts(self.idx80)
        self.assertTrue(np.array_equal(bits(vq.decode_rotated(self.cb80, codes)),
                                       bits(l2.sa_decode(codes))))
        self.assertTrue(np.array_equal(bits(vq.decode(self.cb80, codes)),
                                       bits(self.idx80.sa_decode(codes))))

    def test_decode_matches_faiss_bit_for_bit_trained(self):
        for codes in (self.codes16, random_codes(self.cb16, 2048, np.random.default_rng(6))):
            self.assertTrue(np.array_equal(bits(vq.decode(self.cb16, codes)),
                                           bits(self.idx16.sa_decode(codes))))
        # Sanity that the trained codec reconstructs at all (16384 training points is no codec).
        x_hat = vq.decode(self.cb16, self.codes16)
        rel = ((x_hat - self.test16) ** 2).sum() / (self.test16 ** 2).sum()
        self.assertLess(rel, 0.5)
        # Encoding and decoding agree with FAISS after an export/serialise/parse round trip.
        cb = vq.from_bytes(vq.to_bytes(self.cb16), self.cb16["sha256"])
        self.assertTrue(np.array_equal(bits(vq.decode(cb, self.codes16)), bits(x_hat)))

    def test_summation_order_matters(self):
        """Bit-exactness is not automatic: other orders of the same sum (what OpenBLAS/MKL or a
        float64 accumulator would do) differ in most elements by a few ulps; this records how
        much, and confirms the test above would notice."""
        rng = np.random.default_rng(7)
        codes = random_codes(self.cb80, 2048, rng)
        y = vq.decode_rotated(self.cb80, codes)
        ref = self.idx80.sa_decode(codes)
        reverse = np.zeros_like(ref)
        for l in reversed(range(80)):
            reverse += y[:, l:l + 1] * self.A80[l]
        wide = (y.astype(np.float64) @ self.A80.astype(np.float64)).astype(np.float32)
        scale = np.abs(ref).max()
        for name, other in (("reversed order", reverse), ("float64 accumulation", wide)):
            diff = np.abs(other - ref).max()
            frac = np.mean(bits(other) != bits(ref))
            print(f"[vq_codec] {name}: max |diff| {diff:.3g} (max |x| {scale:.3g}), "
                  f"{frac:.0%} of elements differ", file=sys.stderr)
            self.assertGreater(frac, 0.1)
            self.assertLess(diff, 1e-5 * scale)
        matmul = y @ self.A80  # numpy's BLAS; equal only when it is the same reference sgemm
        print(f"[vq_codec] numpy y @ A: max |diff| {np.abs(matmul - ref).max():.3g}",
              file=sys.stderr)

    # --- serialisation and hash ----------------------------------------------------------------

    def test_serialisation_layout(self):
        data = vq.to_bytes(self.cb16)
        self.assertEqual(data[:40], b"MNEMOVQC" + struct.pack("<8I", 1, 1, 16, 16, 2, 14, 2, 10))
        A, coarse, pq = self.cb16["A"], self.cb16["coarse"], self.cb16["pq"]
        self.assertEqual(A.shape, (16, 16))
        self.assertEqual(coarse.shape, (2, 16384, 8))
        self.assertEqual(pq.shape, (2, 1024, 8))
        body = b"".join(a.astype("<f4").tobytes() for a in (A, coarse, pq))
        self.assertEqual(data[40:], body)
        self.assertEqual(self.cb16["sha256"], hashlib.sha256(data).hexdigest())
        back = vq.from_bytes(data, self.cb16["sha256"])
        for name in ("A", "coarse", "pq"):
            self.assertTrue(np.array_equal(bits(back[name]), bits(self.cb16[name])))
        self.assertEqual(back["sha256"], self.cb16["sha256"])
        # The exported arrays are FAISS's: A is OPQMatrix::A as d_out x d_in, row-major.
        rot, _, _ = vq._parts(self.idx16)
        self.assertTrue(np.array_equal(bits(faiss.vector_to_array(rot.A)), bits(A.ravel())))

    def test_sha256_changes_with_any_codebook_byte(self):
        data = vq.to_bytes(self.cb16)
        sha = self.cb16["sha256"]
        n_a, n_c = 16 * 16 * 4, 2 * 16384 * 8 * 4
        rng = np.random.default_rng(8)
        positions = list(range(40))  # every header byte
        n_p = len(data) - 40 - n_a - n_c
        for start, size in ((40, n_a), (40 + n_a, n_c), (40 + n_a + n_c, n_p)):  # A, coarse, pq
            positions += [start, start + size - 1]
            positions += [int(p) for p in rng.integers(start, start + size, 16)]
        for pos in positions:
            bad = bytearray(data)
            bad[pos] ^= 0x01
            bad = bytes(bad)
            self.assertNotEqual(hashlib.sha256(bad).hexdigest(), sha, pos)
            with self.assertRaises(ValueError, msg=pos):
                vq.from_bytes(bad, expected_sha256=sha)
            if pos >= 40:  # a body change still parses and rehashes to something else
                self.assertNotEqual(vq.from_bytes(bad)["sha256"], sha, pos)
        # The hash is over bytes, not values: -0.0 and +0.0 differ.
        cb = dict(self.cb16, pq=self.cb16["pq"].copy())
        cb["pq"][0, 0, 0] = 0.0
        zero = vq.sha256(cb)
        cb["pq"][0, 0, 0] = -0.0
        self.assertNotEqual(vq.sha256(cb), zero)
        with self.assertRaises(ValueError):
            vq.from_bytes(data[:-1])
        with self.assertRaises(ValueError):
            vq.from_bytes(data[:39])

    # --- bad input -----------------------------------------------------------------------------

    def test_corrupt_and_malformed_codes_rejected(self):
        codes = random_codes(self.cb80, 8, np.random.default_rng(9))
        codes[5, 3] |= 0x10  # list number >= 2^28: FAISS would throw, we must not decode it
        with self.assertRaisesRegex(ValueError, "first row 5"):
            vq.decode(self.cb80, codes)
        with self.assertRaises(ValueError):
            vq.decode(self.cb80, codes[:, :13])
        with self.assertRaises(ValueError):
            vq.decode(self.cb80, codes.astype(np.int16))
        bad = dict(self.cb80, coarse=self.cb80["coarse"].copy())
        bad["coarse"][0, 0, 0] = np.nan
        with self.assertRaises(ValueError):
            vq._codebooks(bad["A"], bad["coarse"], bad["pq"])

    def test_smallest_training_set(self):
        self.assertTrue(any("recommends 638976" in w for w in self.train_warnings),
                        self.train_warnings)
        with self.assertRaisesRegex(ValueError, "at least 16384"):
            vq.train(self.x16[:16383], quiet=True)

    # --- rotated-space decoding ----------------------------------------------------------------

    def test_rotated_space_equivalence(self):
        rng = np.random.default_rng(10)
        # Values through a second codec: each memory codec brings its own rotation.
        _, A_v, coarse_v, pq_v = random_codec(80, seed=11)
        cb_v = vq._codebooks(A_v, coarse_v, pq_v)
        cases = [(self.cb80, cb_v, 80), (self.cb16, self.cb16, 16)]
        for cb_k, cb_v, d in cases:
            codes_k = random_codes(cb_k, 40, rng)
            codes_v = random_codes(cb_v, 40, rng)
            q = rng.standard_normal((6, d)).astype(np.float32)
            k_r, k = vq.decode_rotated(cb_k, codes_k), vq.decode(cb_k, codes_k)
            # (A^T k_r) . q == k_r . (A q), per memory key and query, on the scaled scores the
            # softmax sees (the raw dot products reach ~30 at d=80, where 1e-5 is 5 ulps).
            s = d ** -0.5
            np.testing.assert_allclose(s * (k @ q.T), s * (k_r @ vq.rotate(cb_k, q).T),
                                       rtol=0, atol=1e-5)
            k_ctx = rng.standard_normal((10, d)).astype(np.float32)
            v_ctx = rng.standard_normal((10, d)).astype(np.float32)
            for ctx in ((None, None), (k_ctx, v_ctx)):
                full = vq.attention_decoded(q, k, vq.decode(cb_v, codes_v), *ctx)
                rot = vq.attention_rotated(q, cb_k, codes_k, cb_v, codes_v, *ctx)
                np.testing.assert_allclose(rot, full, rtol=0, atol=1e-5)
                # Not vacuous: the attention output depends on the memories' values.
                self.assertGreater(np.abs(full).max(), 0.05)


if __name__ == "__main__":
    unittest.main()
