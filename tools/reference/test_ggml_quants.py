"""Checks of tools/reference/ggml_quants.py's K-quant quantizers on their own (the C++ ones are
checked against its goldens by tests/test_ggml_quants.cpp):

    /usr/bin/python3 -m unittest -v tools/reference/test_ggml_quants.py

  * the committed goldens (tests/data/quant/{q4_k,q5_k,q6_k}_quantized.bin) are what the
    reference writes today for quant_k_input.npy: regenerating them would change nothing;
  * what it writes decodes (with its own dequantizer) to values close to the input: the
    normalised squared error of Gaussian blocks stays under the bounds the C++ test uses;
  * the search is never worse than its first candidate (the classic single choice of the
    super-block scale), block by block.
"""

import os
import sys
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ggml_quants as gq  # noqa: E402

DATA = os.path.join(HERE, "..", "..", "tests", "data", "quant")
TYPES = ("Q4_K", "Q5_K", "Q6_K")


def nmse(x, y):
    x = x.astype(np.float64)
    return float(((y.astype(np.float64) - x) ** 2).sum() / (x ** 2).sum())


class KQuants(unittest.TestCase):
    def test_goldens_are_what_the_reference_writes(self):
        x = np.load(os.path.join(DATA, "quant_k_input.npy"))
        for name in TYPES:
            with open(os.path.join(DATA, f"{name.lower()}_quantized.bin"), "rb") as f:
                self.assertEqual(gq.quantize(name, x), f.read(), name)

    def test_round_trip_error_is_bounded(self):
        x = np.random.default_rng(3).standard_normal(16 * 256).astype(np.float32)
        for name, bound in zip(TYPES, (0.0060, 0.0015, 0.00040)):
            y = gq.dequantize(name, gq.quantize(name, x), x.size)
            self.assertTrue(np.all(np.isfinite(y)))
            self.assertLess(nmse(x, y), bound, name)

    def test_search_is_never_worse_than_its_first_candidate(self):
        x = np.random.default_rng(4).standard_normal(8 * 256).astype(np.float32)
        saved = (gq.SCALE_FACTORS, gq.MIN_FACTORS, gq.Q6_FACTORS)
        try:
            full = {n: gq.dequantize(n, gq.quantize(n, x), x.size) for n in TYPES}
            gq.SCALE_FACTORS, gq.MIN_FACTORS, gq.Q6_FACTORS = saved[0][:1], saved[1][:1], saved[2][:1]
            first = {n: gq.dequantize(n, gq.quantize(n, x), x.size) for n in TYPES}
        finally:
            gq.SCALE_FACTORS, gq.MIN_FACTORS, gq.Q6_FACTORS = saved
        for n in TYPES:
            ef = ((full[n] - x) ** 2).reshape(-1, 256).sum(1)
            e1 = ((first[n] - x) ** 2).reshape(-1, 256).sum(1)
            self.assertTrue(np.all(ef <= e1 * (1 + 1e-6)), n)


if __name__ == "__main__":
    unittest.main()
