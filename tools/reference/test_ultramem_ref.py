"""Checks of tools/reference/ultramem_ref.py against slower or differently built formulations.

  /usr/bin/python3 -m unittest -v tools/reference/test_ultramem_ref.py
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tools", "common"))
import llama_ref  # noqa: E402
import safetensors_io  # noqa: E402
import ultramem_ref  # noqa: E402
from safetensors_io import Tensor  # noqa: E402

MODELS = os.path.join(REPO, "tests", "data", "models")
TINY = {"v1": "ultramem-tiny-f32", "v2": "ultramem_v2-tiny-f32", "v2glu": "ultramem_v2-glu-tiny-f32"}
IDS = [1, 250, 252, 97, 43, 236, 26, 66, 35]


class Scratch:
    """A copy of a test model whose config and tensors a test may change."""

    def __init__(self, name: str):
        self.dir = tempfile.mkdtemp(prefix="ultramem-ref-")
        src = os.path.join(MODELS, name)
        for f in ("config.json", "model.safetensors"):
            shutil.copy(os.path.join(src, f), self.dir)
        self.tensors, _ = safetensors_io.read_safetensors(os.path.join(self.dir, "model.safetensors"))
        self.tensors = {n: Tensor(t.dtype, np.array(t.data)) for n, t in self.tensors.items()}
        with open(os.path.join(self.dir, "config.json"), encoding="utf-8") as f:
            self.config = json.load(f)

    def save(self) -> str:
        safetensors_io.write_safetensors(os.path.join(self.dir, "model.safetensors"), self.tensors)
        with open(os.path.join(self.dir, "config.json"), "w", encoding="utf-8") as f:
            json.dump(self.config, f)
        return self.dir

    def close(self) -> None:
        shutil.rmtree(self.dir, ignore_errors=True)


def rel(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(a - b).max() / max(np.abs(b).max(), 1e-300))


class TopK(unittest.TestCase):
    def test_ties_go_to_the_lower_index(self):
        x = torch.tensor([[1.0, 3.0, 3.0, 2.0, 3.0]], dtype=torch.float64)
        vals, idx = ultramem_ref.topk_stable(x, 4)
        self.assertEqual(idx.tolist(), [[1, 2, 4, 3]])
        self.assertEqual(vals.tolist(), [[3.0, 3.0, 3.0, 2.0]])

    def test_boundary_gap(self):
        x = torch.tensor([[4.0, 1.0, 3.0, 2.0]], dtype=torch.float64)
        self.assertAlmostEqual(ultramem_ref.boundary_gap(x, 2), 0.25)
        self.assertEqual(ultramem_ref.boundary_gap(x, 4), float("inf"))


class Tdqkr(unittest.TestCase):
    """TDQKR's stage 2 against explicit loops over the m*m candidate pairs."""

    def check_model(self, name: str):
        m = ultramem_ref.UltraMemRef(os.path.join(MODELS, name))
        c = m.cfg
        x = torch.randn(5, c.hidden, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
        for l in range(len(c.insert)):
            virt, scores = m.tdqkr(l, x)
            s_row, s_col = m.subkey_scores(l, *m.query(l, x))
            u = m._mem(l, "tucker_core_u").view(c.mem_heads, c.rank).numpy()
            v = m._mem(l, "tucker_core_v").view(c.mem_heads, c.rank).numpy()
            cores = [m._mem(l, f"tucker_core.{i}").numpy() for i in range(c.cores)]
            S1, S2 = s_row.numpy(), s_col.numpy()
            for t in range(x.shape[0]):
                for h in range(c.mem_heads):
                    s1 = S1[t, h] @ u[h]
                    s2 = S2[t, h] @ v[h]
                    i1 = sorted(range(c.nk), key=lambda j: (-s1[j], j))[: c.knn]
                    i2 = sorted(range(c.nk), key=lambda j: (-s2[j], j))[: c.knn]
                    cand = []
                    for a, i in enumerate(i1):
                        for b, j in enumerate(i2):
                            per = [sum(S1[t, h, i, r] * core[h, r, s] * S2[t, h, j, s]
                                       for r in range(c.rank) for s in range(c.rank)) for core in cores]
                            cand.append((-sum(per), a * c.knn + b, i * c.nk + j, per))
                    cand.sort(key=lambda e: (e[0], e[1]))
                    want = cand[: c.knn]
                    self.assertEqual(virt[t, h].tolist(), [e[2] for e in want])
                    np.testing.assert_allclose(scores[t, h].numpy(), np.array([e[3] for e in want]), rtol=1e-12,
                                               atol=1e-12)

    def test_v1(self):
        self.check_model(TINY["v1"])

    def test_v2_four_heads(self):
        self.check_model(TINY["v2glu"])

    def test_subkey_scores_use_normalised_keys_and_queries(self):
        m = ultramem_ref.UltraMemRef(os.path.join(MODELS, TINY["v1"]))
        c = m.cfg
        x = torch.randn(2, c.hidden, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
        q_row, q_col = m.query(0, x)
        s_row, s_col = m.subkey_scores(0, q_row, q_col)
        proj = (x @ m._mem(0, "query_proj.weight").T).numpy()
        g = m._mem(0, "query_norm.weight").numpy()
        gk = m._mem(0, "keys_norm.weight").numpy()
        keys = m._mem(0, "keys").numpy().reshape(c.mem_heads, 2, c.nk, c.kdim, c.rank)

        def norm(z, gain):
            return z / np.sqrt(np.mean(z * z) + c.eps) * gain

        for t in range(2):
            row = norm(proj[t, : c.kdim], g)
            col = norm(proj[t, c.kdim: 2 * c.kdim], g)
            for h in range(c.mem_heads):  # both heads read the one V1 query
                for n in range(c.nk):
                    for r in range(c.rank):
                        self.assertAlmostEqual(float(s_row[t, h, n, r]), float(row @ norm(keys[h, 0, n, :, r], gk)),
                                               places=10)
                        self.assertAlmostEqual(float(s_col[t, h, n, r]), float(col @ norm(keys[h, 1, n, :, r], gk)),
                                               places=10)


class IndexPipeline(unittest.TestCase):
    def test_v1_permutation_round_trip(self):
        s = Scratch(TINY["v1"])
        try:
            c = ultramem_ref.Config.load(s.dir)
            perm = np.random.default_rng(7).permutation(c.virtual).astype(np.int32)
            for l in range(len(c.insert)):
                s.tensors[f"model.mem_blocks.{l}.shuffle_index"] = Tensor("I32", perm)
            m = ultramem_ref.UltraMemRef(s.save())
            virt = torch.arange(c.virtual).view(1, -1)
            group, row = m.physical(0, virt)
            # Every virtual value lands on its own (block, row): the map is a bijection onto
            # E blocks x knum^2 rows, and it is the permutation's own arithmetic.
            pairs = set(zip(group.flatten().tolist(), row.flatten().tolist()))
            self.assertEqual(len(pairs), c.virtual)
            self.assertEqual(pairs, {(g, r) for g in range(c.value_expand) for r in range(c.value_num)})
            np.testing.assert_array_equal(group.flatten().numpy() * c.value_num + row.flatten().numpy(), perm)
        finally:
            s.close()

    def test_v2_windows_wrap_around_the_shared_table(self):
        m = ultramem_ref.UltraMemRef(os.path.join(MODELS, TINY["v2"]))
        c = m.cfg
        self.assertEqual((c.table_rows, c.value_num, c.nk, c.groups), (64, 36, 12, 4))
        virt = torch.arange(c.virtual).view(1, -1)
        for l in range(len(c.insert)):
            group, row = m.physical(l, virt)
            start = l * c.knum * c.knum
            self.assertEqual(set(row.flatten().tolist()), {(start + j) % c.table_rows for j in range(c.value_num)})
            self.assertEqual(set(group.flatten().tolist()), set(range(c.groups)))


def memory_entry_by_entry(m, l: int, x: torch.Tensor, V: np.ndarray, gate=lambda t, row: 1.0) -> np.ndarray:
    """Eq. 15 with every selected entry accumulated one by one: memory layer l's output for x
    [T, D] is sum over (token t, head, entry, core) of gate(t, row) * score * W_g[:, slice] V[row, slice],
    with core c's 1/C slice of the value and W_g the projector of the entry's virtual block g
    (one projector for all blocks when value_expand_time is 1)."""
    c = m.cfg
    virt, scores = m.tdqkr(l, x)
    group, row = m.physical(l, virt)
    W = m._mem(l, "values_proj.weight").numpy()
    width = c.vdim // c.cores
    want = np.zeros((x.shape[0], c.hidden))
    for t in range(x.shape[0]):
        for h in range(c.mem_heads):
            for j in range(c.knn):
                g, r = int(group[t, h, j]), int(row[t, h, j])
                proj = W if c.value_expand == 1 else W[:, g * c.vdim:(g + 1) * c.vdim]
                for core in range(c.cores):
                    sl = slice(core * width, (core + 1) * width)
                    want[t] += gate(t, r) * float(scores[t, h, j, core]) * (proj[:, sl] @ V[r, sl])
    return want


class ImplicitValueExpansion(unittest.TestCase):
    def test_v1_equals_e_separate_projections(self):
        """Eq. 15: y = sum_p W_p^T (V^T s_p), every entry accumulated one by one."""
        m = ultramem_ref.UltraMemRef(os.path.join(MODELS, TINY["v1"]))
        c = m.cfg
        x = torch.randn(3, c.hidden, dtype=torch.float64, generator=torch.Generator().manual_seed(9))
        for l in range(len(c.insert)):
            want = memory_entry_by_entry(m, l, x, m._mem(l, "values_for_look_up").numpy())
            np.testing.assert_allclose(m.memory(l, x).numpy(), want, rtol=1e-10, atol=1e-12)

    def test_v2_gate_and_group_sum(self):
        """V2: entries scaled by act(pre_values[row] . P x); groups summed before one projector
        (value_expand_time 1) or kept apart (value_expand_time Ek^2)."""
        for name in (TINY["v2"], TINY["v2glu"]):
            m = ultramem_ref.UltraMemRef(os.path.join(MODELS, name))
            c = m.cfg
            x = torch.randn(2, c.hidden, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
            P = m.W("model.full_memory_layer.pre_values_for_look_up").numpy()
            V = m.W("model.full_memory_layer.values_for_look_up").numpy()
            for l in range(len(c.insert)):
                p = (x @ m._mem(l, "pre_values_proj.weight").T).numpy()

                def gate(t, r):
                    g = P[r] @ p[t]
                    return float(torch.nn.functional.gelu(torch.tensor(g, dtype=torch.float64))) if c.glu_act else g

                np.testing.assert_allclose(m.memory(l, x).numpy(), memory_entry_by_entry(m, l, x, V, gate),
                                           rtol=1e-10, atol=1e-12)

    def test_linear_gate_is_linear_in_the_pre_value_projection(self):
        s = Scratch(TINY["v2"])
        try:
            x = torch.randn(2, 32, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
            base = ultramem_ref.UltraMemRef(s.dir).memory(1, x)
            name = "model.mem_blocks.1.pre_values_proj.weight"
            s.tensors[name] = Tensor("F32", np.array(s.tensors[name].data) * np.float32(-2.0))
            scaled = ultramem_ref.UltraMemRef(s.save()).memory(1, x)
            np.testing.assert_allclose(scaled.numpy(), -2.0 * base.numpy(), rtol=1e-12, atol=1e-12)
        finally:
            s.close()


class Queries(unittest.TestCase):
    def test_v2_second_query_block_is_read_by_heads_2_and_3_only(self):
        for name, heads_read in ((TINY["v2"], False), (TINY["v2glu"], True)):
            s = Scratch(name)
            try:
                c = ultramem_ref.Config.load(s.dir)
                x = torch.randn(2, c.hidden, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
                before = ultramem_ref.UltraMemRef(s.dir).memory(0, x)
                key = "model.mem_blocks.0.query_proj.weight"
                w = np.array(s.tensors[key].data)
                w[2 * c.kdim:] = np.random.default_rng(0).standard_normal(w[2 * c.kdim:].shape)
                s.tensors[key] = Tensor("F32", w)
                after = ultramem_ref.UltraMemRef(s.save()).memory(0, x)
                self.assertEqual(not torch.equal(before, after), heads_read, name)
            finally:
                s.close()


class Wiring(unittest.TestCase):
    def test_full_is_every_block_reading_and_adding_itself(self):
        s = Scratch(TINY["v2"])
        try:
            full = ultramem_ref.forward(s.dir, IDS)
            s.config["mem_insert_way"] = "0:0/1:1/2:2/3:3"
            explicit = ultramem_ref.forward(s.save(), IDS)
            np.testing.assert_array_equal(full, explicit)
        finally:
            s.close()

    def test_memory_output_lands_after_block_b(self):
        """The memories matter in the test model, where their output is added matters, and a
        silenced memory (values_proj = 0) does nothing wherever it is added."""
        s = Scratch(TINY["v1"])
        try:
            with_mem = ultramem_ref.forward(s.dir, IDS)
            s.config["mem_insert_way"] = "0:1/3:3"
            moved = ultramem_ref.forward(s.save(), IDS)
            self.assertGreater(rel(moved, with_mem), 1e-3, "adding after block 1 instead of 2 must differ")
            for l in range(2):
                name = f"model.mem_blocks.{l}.values_proj.weight"
                s.tensors[name] = Tensor("F32", np.zeros_like(s.tensors[name].data))
            without = ultramem_ref.forward(s.save(), IDS)
            self.assertGreater(rel(with_mem, without), 0.05, "the memory must matter in the test model")
            s.config["mem_insert_way"] = "0:2/3:3"
            self.assertTrue(np.array_equal(ultramem_ref.forward(s.save(), IDS), without))
        finally:
            s.close()

    def test_overlapping_pairs_are_rejected(self):
        for way in ("0:2/1:3", "2:1", "0:1/0:2", "0:4"):
            with self.assertRaises(ValueError, msg=way):
                ultramem_ref.parse_insert_way(way, 4)
        self.assertEqual(ultramem_ref.parse_insert_way("2:3/0:1", 4), [(2, 3), (0, 1)])

    def test_backbone_matches_llama_ref_without_memory_and_qk_norm(self):
        """With the memories silenced and no QK-norm, the OLMo block is a Llama block: compare with
        the independent numpy reference."""
        s = Scratch(TINY["v1"])
        try:
            for n in list(s.tensors):
                if n.startswith("model.mem_blocks.") and n.endswith("values_proj.weight"):
                    s.tensors[n] = Tensor("F32", np.zeros_like(s.tensors[n].data))
                if "q_norm" in n or "k_norm" in n:
                    del s.tensors[n]
            s.config["qk_norm"] = False
            ours = ultramem_ref.forward(s.save(), IDS)
            llama_dir = tempfile.mkdtemp(prefix="ultramem-llama-")
            try:
                keep = {n: t for n, t in s.tensors.items() if not n.startswith("model.mem_blocks.")}
                safetensors_io.write_safetensors(os.path.join(llama_dir, "model.safetensors"), keep)
                cfg = {k: v for k, v in s.config.items() if not k.startswith("mem_")}
                cfg["model_type"] = "llama"
                with open(os.path.join(llama_dir, "config.json"), "w", encoding="utf-8") as f:
                    json.dump(cfg, f)
                self.assertLess(rel(ours, llama_ref.forward(llama_dir, IDS)), 1e-12)
            finally:
                shutil.rmtree(llama_dir, ignore_errors=True)
        finally:
            s.close()

    def test_qk_norm_is_per_head(self):
        """q_norm/k_norm gains are [head_dim] and normalise each head on its own (the fork's
        OLMoBlock), so scaling one head's q_proj rows leaves the logits unchanged."""
        s = Scratch(TINY["v1"])
        try:
            before = ultramem_ref.forward(s.dir, IDS)
            key = "model.layers.1.self_attn.q_proj.weight"
            w = np.array(s.tensors[key].data)
            w[8:16] *= np.float32(4.0)   # head 1 of 4 (head_dim 8)
            s.tensors[key] = Tensor("F32", w)
            after = ultramem_ref.forward(s.save(), IDS)
            self.assertLess(rel(after, before), 1e-5)
        finally:
            s.close()


class Goldens(unittest.TestCase):
    def test_stored_goldens_are_this_reference(self):
        for name in TINY.values():
            d = os.path.join(MODELS, name)
            with open(os.path.join(d, "golden_ids.txt"), encoding="utf-8") as f:
                ids = [int(t) for t in f.read().strip().split(",")]
            golden = np.load(os.path.join(d, "golden_logits.npy"))
            st = ultramem_ref.Stats()
            ours = ultramem_ref.forward(d, ids, st)
            self.assertLess(rel(golden.astype(np.float64), ours), 1e-6, name)
            self.assertGreater(st.min_gap(), 1e-3, name)


if __name__ == "__main__":
    unittest.main()
