"""Round trip of the MIDUS up-scaling converter (run: /usr/bin/python3 -m unittest -v tools/convert/test_midus_from_llama.py).

The paper's initialisation (appendix D.2: zero value bank) makes every memory block the identity,
so the up-scaled model must give its base Llama's logits: in the float64 references, and through
the engine (`bin/mnemo logits`, when MNEMO_BUILD_BIN points at a build) against the base model's
goldens. Also: the placement policies of appendix G.4, byte-identical base tensors, attention
copied from the anchor block, bf16 kept as bf16, shards, and refused inputs.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
REPO = os.path.dirname(TOOLS)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOOLS, "common"))
sys.path.insert(0, os.path.join(TOOLS, "reference"))
import llama_ref  # noqa: E402
import midus_from_llama  # noqa: E402
import midus_ref  # noqa: E402
from engine_logits import engine_logits  # noqa: E402
import safetensors_io as st  # noqa: E402

MODELS = os.path.join(REPO, "tests", "data", "models")
CONVERTER = os.path.join(HERE, "midus_from_llama.py")


def run_converter(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, CONVERTER, *args], capture_output=True, text=True)


def golden_ids(model: str):
    with open(os.path.join(MODELS, model, "golden_ids.txt"), "r", encoding="utf-8") as f:
        return [int(t) for t in f.read().strip().split(",")]


class Placement(unittest.TestCase):
    """Appendix G.4 lists final-stack positions of the memory blocks; with the before-anchor rule
    of eq. 11, memory block j sits at position anchor_j + j."""

    def positions(self, placement, layers, blocks):
        return [a + j for j, a in enumerate(midus_from_llama.anchors_for(placement, layers, blocks))]

    def test_llama_3_2_1b(self):
        self.assertEqual(self.positions("distributed", 16, 8), [1, 4, 7, 10, 13, 16, 19, 22])
        self.assertEqual(self.positions("top-heavy", 16, 8), [8, 10, 12, 14, 16, 18, 20, 22])
        self.assertEqual(self.positions("bottom-heavy", 16, 8), [0, 2, 4, 6, 8, 10, 12, 14])

    def test_llama_3_1_8b(self):
        self.assertEqual(self.positions("distributed", 32, 16), list(range(1, 47, 3)))
        self.assertEqual(self.positions("top-heavy", 32, 16), list(range(16, 47, 2)))
        self.assertEqual(self.positions("bottom-heavy", 32, 16), list(range(0, 31, 2)))

    def test_distributed_needs_room(self):
        with self.assertRaises(ValueError):
            midus_from_llama.anchors_for("distributed", 16, 9)


class Convert(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="midus-convert-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def convert(self, base: str, *args: str) -> str:
        out = os.path.join(self.tmp, base + "-midus")
        r = run_converter(os.path.join(MODELS, base), out, *args)
        self.assertEqual(r.returncode, 0, r.stderr)
        return out

    def test_identity_at_initialisation_in_the_references(self):
        out = self.convert("llama-tiny-f32", "--anchors", "0,1", "--n-keys", "4", "--topk", "2", "--seed", "3")
        ids = golden_ids("llama-tiny-f32")
        want = llama_ref.forward(os.path.join(MODELS, "llama-tiny-f32"), ids)
        got = midus_ref.forward(out, ids)
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())

    def test_identity_at_initialisation_in_the_engine(self):
        out = self.convert("llama-tiny-f32", "--placement", "distributed", "--blocks", "1", "--n-keys", "4",
                           "--topk", "4")
        ids = golden_ids("llama-tiny-f32")
        golden = np.load(os.path.join(MODELS, "llama-tiny-f32", "golden_logits.npy"))
        got = engine_logits(self, out, ids, self.tmp)
        self.assertLess(np.abs(got - golden).max() / np.abs(golden).max(), 1e-4)
        base = engine_logits(self, os.path.join(MODELS, "llama-tiny-f32"), ids, self.tmp)
        np.testing.assert_array_equal(got, base)  # M(x) = x + 0 exactly

    def test_tensors(self):
        out = self.convert("llama-tiny-f32", "--anchors", "1", "--n-keys", "5", "--topk", "3", "--latent-dim", "7")
        with open(os.path.join(out, "config.json"), "r", encoding="utf-8") as f:
            cfg = json.load(f)
        self.assertEqual(cfg["model_type"], "midus_hml")
        self.assertEqual((cfg["memory_anchors"], cfg["memory_n_keys"], cfg["memory_topk"], cfg["memory_latent_dim"]),
                         ([1], 5, 3, 7))
        base = st.read_checkpoint(os.path.join(MODELS, "llama-tiny-f32"))
        got = st.read_checkpoint(out)
        for name, t in base.items():
            self.assertEqual(got[name].dtype, t.dtype)
            self.assertEqual(got[name].data.tobytes(), t.data.tobytes(), name)
        p = "model.memory_blocks.0."
        for name in ["input_layernorm.weight", "self_attn.q_proj.weight", "self_attn.k_proj.weight",
                     "self_attn.v_proj.weight"]:
            self.assertEqual(got[p + name].data.tobytes(), base["model.layers.1." + name].data.tobytes(), name)
        self.assertNotIn(p + "self_attn.o_proj.weight", got)  # eq. 3: no output projection
        self.assertEqual(got[p + "hml.keys"].shape, (4, 2, 5, 6))
        self.assertEqual(got[p + "hml.values"].shape, (25, 7))
        self.assertFalse(got[p + "hml.values"].to_float64().any())
        self.assertEqual(got[p + "hml.value_proj"].shape, (4, 7, 12))
        self.assertTrue(got[p + "hml.value_proj"].to_float64().any())
        self.assertEqual(len([n for n in got if n.startswith("model.memory_blocks.")]), 7)

    def test_bf16_stays_bf16_and_shards(self):
        out = self.convert("llama-tiny-bf16", "--anchors", "0", "--n-keys", "4", "--topk", "2",
                           "--shard-bytes", "40000")
        self.assertTrue(os.path.exists(os.path.join(out, "model.safetensors.index.json")))
        got = st.read_checkpoint(out)
        self.assertEqual(got["model.memory_blocks.0.hml.keys"].dtype, "BF16")
        ids = golden_ids("llama-tiny-bf16")
        golden = np.load(os.path.join(MODELS, "llama-tiny-bf16", "golden_logits.npy"))
        np.testing.assert_allclose(midus_ref.forward(out, ids), golden, rtol=0, atol=1e-5 * np.abs(golden).max())
        got = engine_logits(self, out, ids, self.tmp)
        self.assertLess(np.abs(got - golden).max() / np.abs(golden).max(), 1e-4)

    def test_refused_inputs(self):
        base = os.path.join(MODELS, "llama-tiny-f32")
        out = os.path.join(self.tmp, "x")
        cases = [
            ([os.path.join(MODELS, "qwen2-tiny-f32"), out, "--anchors", "0"], "base model_type is 'qwen2'"),
            ([base, out, "--anchors", "0,2"], "must be base block indices 0..1"),
            ([base, out, "--anchors", "1,0"], "strictly increasing"),
            ([base, out, "--anchors", "0", "--n-keys", "4", "--topk", "5"], "--topk 5 must be in 1..--n-keys 4"),
            ([base, base, "--anchors", "0"], "must differ from the base folder"),
        ]
        for args, message in cases:
            r = run_converter(*args)
            self.assertEqual(r.returncode, 1, args)
            self.assertIn(message, r.stderr, args)
        self.assertFalse(os.path.exists(os.path.join(out, "config.json")))


if __name__ == "__main__":
    unittest.main()
