"""Round trip of tools/convert/ultramem_to_mnemo.py: random state dicts in the official UltraMem /
UltraMemV2 layout (one model.pt, and a 2-rank vertical-parallel shard set written by 4 DDP ranks),
converted, then
  * tools/reference/ultramem_ref.py on the converted folder must equal an independent forward pass
    written here on the official tensor names and shapes (att_proj, ff_proj chunks, keys
    [H, 2, Nk, kdim, R], buffers [1, H, 1, R], int64 shuffle, the official forward loop), and
  * `$MNEMO_BUILD_BIN/mnemo logits` on the converted folder must match it to 1e-4.

  MNEMO_BUILD_BIN=build/bin /usr/bin/python3 -m unittest -v tools/convert/test_ultramem_convert.py
"""

from __future__ import annotations

import math
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np
import torch
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tools", "reference"))
import ultramem_ref  # noqa: E402
import ultramem_to_mnemo  # noqa: E402
from engine_logits import engine_logits  # noqa: E402

F = torch.float32
IDS = [3, 17, 200, 45, 99, 7, 150, 31, 64, 1]


# ----------------------------------------------------------------------------------------------
# Random official-layout checkpoints
# ----------------------------------------------------------------------------------------------

def model_config(v2: bool) -> dict:
    c = {
        "d_model": 32, "n_heads": 4, "n_kv_heads": 2, "n_layers": 4 if not v2 else 3,
        "mlp_hidden_size": 96, "vocab_size": 250, "embedding_size": 256, "weight_tying": not v2,
        "block_type": "sequential", "layer_norm_type": "rms", "layer_norm_eps": 1e-5,
        "activation_type": "swiglu", "rope": True, "rope_theta": 10000, "alibi": False,
        "attention_layer_norm": True, "attention_layer_norm_with_affine": v2,
        "include_bias": False, "bias_for_layer_norm": False, "max_sequence_length": 512,
        "eos_token_id": 2, "pad_token_id": 1,
        "mem_knum": 4, "mem_kdim": 8, "mem_vdim": 8, "mem_knn": 4, "mem_head": 2,
        "mem_type": "ultramem_v2" if v2 else "ultramem_v1",
    }
    if v2:
        c.update({"mem_insert_way": "full", "mem_pre_vdim": 4, "mem_share_ratio": 0.5,
                  "mem_value_expand_time": 1, "mem_q_for_each_tucker_rank": True, "mem_key_expand_time": 2,
                  "mem_use_glu_act": False, "vertical_parallel": True, "mem_parallel_size": 2})
    else:
        # String order != block order: memory layer 0 reads block 2.
        c.update({"mem_insert_way": "2:3/0:1"})
    return c


def official_state_dict(c: dict, seed: int) -> dict:
    """Tensors named and shaped as the official modules hold them (UltraMemLayerV1 / V2)."""
    g = torch.Generator().manual_seed(seed)

    def rnd(*shape, scale=None):
        t = torch.randn(*shape, generator=g, dtype=F)
        return t / math.sqrt(shape[-1]) if scale is None else t * scale

    D, H, kv, L = c["d_model"], c["n_heads"], c["n_kv_heads"], c["n_layers"]
    hd = D // H
    sd = {"transformer.wte.weight": rnd(c["embedding_size"], D, scale=1.0)}
    for i in range(L):
        p = f"transformer.blocks.{i}."
        sd[p + "att_proj.weight"] = rnd(D + 2 * kv * hd, D)
        sd[p + "attn_out.weight"] = rnd(D, D)
        sd[p + "ff_proj.weight"] = rnd(c["mlp_hidden_size"], D)
        sd[p + "ff_out.weight"] = rnd(D, c["mlp_hidden_size"] // 2)
        sd[p + "attn_norm.weight"] = 1 + 0.1 * rnd(D, scale=1.0)
        sd[p + "ff_norm.weight"] = 1 + 0.1 * rnd(D, scale=1.0)
        if c["attention_layer_norm_with_affine"]:
            sd[p + "q_norm.weight"] = 1 + 0.1 * rnd(hd, scale=1.0)
            sd[p + "k_norm.weight"] = 1 + 0.1 * rnd(hd, scale=1.0)
    sd["transformer.ln_f.weight"] = 1 + 0.1 * rnd(D, scale=1.0)
    if not c["weight_tying"]:
        sd["transformer.ff_out.weight"] = rnd(c["embedding_size"], D)

    v2 = c["mem_type"] == "ultramem_v2"
    n_mem = L if c["mem_insert_way"] == "full" else len(c["mem_insert_way"].split("/"))
    knum, kdim, vdim, H_m, R, C = c["mem_knum"], c["mem_kdim"], c["mem_vdim"], c["mem_head"], 2, 2
    if v2:
        A = knum * knum * n_mem
        knum_r = int((A * c["mem_share_ratio"]) ** 0.5)
        ek = c["mem_key_expand_time"]
        nk, virtual, q_out = ek * knum_r, ek * ek * knum_r * knum_r, 2 * R * kdim
        proj_in = vdim * c["mem_value_expand_time"]
    else:
        nk, virtual, q_out, proj_in = 2 * knum, 4 * knum * knum, 2 * kdim, 4 * vdim
    for l in range(n_mem):
        p = f"transformer.mem_blocks.{l}."
        sd[p + "query_proj.weight"] = rnd(q_out, D)
        sd[p + "keys"] = rnd(H_m, 2, nk, kdim, R, scale=1.0)
        sd[p + "values_proj.weight"] = rnd(D, proj_in)
        if c["attention_layer_norm_with_affine"]:
            sd[p + "query_norm.weight"] = 1 + 0.1 * rnd(kdim, scale=1.0)
            sd[p + "keys_norm.weight"] = 1 + 0.1 * rnd(kdim, scale=1.0)
        cores = torch.rand(C, H_m, R, R, generator=g, dtype=F)
        for i in range(C):
            sd[p + f"tucker_core.{i}"] = cores[i].clone()
        u, _, vv = torch.linalg.svd(cores.sum(0).double())
        sd[p + "tucker_core_u"] = u[..., 0].to(F).reshape(1, H_m, 1, R)
        sd[p + "tucker_core_v"] = vv[:, 0, :].to(F).reshape(1, H_m, 1, R)
        sd[p + "shuffle_index"] = torch.randperm(virtual, generator=g)  # int64, as registered
        if not v2:
            sd[p + "values_for_look_up"] = rnd(knum * knum, vdim, scale=0.1)
        else:
            sd[p + "pre_values_proj.weight"] = rnd(c["mem_pre_vdim"], D)
    if v2:
        A = knum * knum * n_mem
        sd["transformer.full_memory_layer.values_for_look_up"] = rnd(A, vdim, scale=0.1)
        sd["transformer.full_memory_layer.pre_values_for_look_up"] = rnd(A, c["mem_pre_vdim"], scale=1.0)
    return sd


# ----------------------------------------------------------------------------------------------
# Independent forward on the official layout (the official module code restated)
# ----------------------------------------------------------------------------------------------

def rms(x, w, eps):
    x = x.double()
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * (1.0 if w is None else w.double())


def official_memory(sd, c, l, hidden, n_mem):
    p = f"transformer.mem_blocks.{l}."
    v2 = c["mem_type"] == "ultramem_v2"
    eps = c["layer_norm_eps"]
    kdim, knn = c["mem_kdim"], c["mem_knn"]
    bs = hidden.shape[0]
    qn, kn = sd.get(p + "query_norm.weight"), sd.get(p + "keys_norm.weight")
    qtr = 2 if v2 else 1
    query = hidden @ sd[p + "query_proj.weight"].double().T
    query = rms(query.view(bs, 2 if v2 else 1, qtr if v2 else 2, kdim), qn, eps)
    query = query.reshape(bs, 2, qtr * kdim) if v2 else query.reshape(bs, 1, 2 * kdim)
    keys = rms(sd[p + "keys"].double().transpose(-1, -2), kn, eps).transpose(-1, -2)
    head_num, _, n_keys, _, rank = keys.shape
    half = query.shape[-1] // 2
    s1r = torch.zeros(bs, head_num, n_keys, rank, dtype=torch.float64)
    s2r = torch.zeros_like(s1r)
    for r in range(rank):
        for i in range(head_num):  # ParallelKeyQueryInnerProduct, nhead_share_query = 2
            s1r[:, i, :, r] = query[:, i // 2, :half] @ keys[i, 0, :, :, r].T
            s2r[:, i, :, r] = query[:, i // 2, half:] @ keys[i, 1, :, :, r].T
    s1 = (s1r * sd[p + "tucker_core_u"].double()).sum(-1)
    s2 = (s2r * sd[p + "tucker_core_v"].double()).sum(-1)
    _, i1 = s1.topk(knn, dim=2, largest=True, sorted=True)
    _, i2 = s2.topk(knn, dim=2, largest=True, sorted=True)
    g1 = s1r.gather(2, i1.unsqueeze(-1).expand(-1, -1, -1, rank))
    g2 = s2r.gather(2, i2.unsqueeze(-1).expand(-1, -1, -1, rank))
    n_cores = 2
    score_list = [(g1 @ sd[p + f"tucker_core.{i}"].double() @ g2.transpose(-1, -2)).view(bs, head_num, -1)
                  for i in range(n_cores)]
    all_scores = torch.stack(score_list, -1).sum(-1)
    all_idx = (i1.view(bs, head_num, knn, 1) * n_keys + i2.view(bs, head_num, 1, knn)).view(bs, head_num, -1)
    _, best = torch.topk(all_scores, k=knn, dim=2, largest=True, sorted=True)
    best_scores = torch.stack([s.gather(2, best) for s in score_list], -1).view(bs, -1, n_cores)
    best_idx = all_idx.gather(2, best).view(bs, -1)
    shuffled = sd[p + "shuffle_index"][best_idx]
    vdim = c["mem_vdim"]
    if not v2:
        value_num = c["mem_knum"] ** 2
        real, group = shuffled % value_num, shuffled // value_num
        table = sd[p + "values_for_look_up"].double()
        groups = 4
    else:
        A = c["mem_knum"] ** 2 * n_mem
        knum_r = int((A * c["mem_share_ratio"]) ** 0.5)
        value_num = knum_r ** 2
        offset = l * c["mem_knum"] ** 2
        real, group = (shuffled % value_num + offset) % A, shuffled // value_num
        table = sd["transformer.full_memory_layer.values_for_look_up"].double()
        groups = c["mem_key_expand_time"] ** 2
        pre_in = hidden @ sd[p + "pre_values_proj.weight"].double().T
        pre_vals = sd["transformer.full_memory_layer.pre_values_for_look_up"].double()[real]
        pre = torch.einsum("bd,bkd->bk", pre_in, pre_vals)
        if c["mem_use_glu_act"]:
            pre = torch.nn.functional.gelu(pre)
        best_scores = best_scores * pre[..., None]
    values = table[real].view(bs, -1, n_cores, vdim // n_cores)
    values = (values * best_scores.unsqueeze(-1)).view(bs, -1, vdim)
    out = torch.zeros(bs, groups, vdim, dtype=torch.float64)
    out.scatter_add_(1, group.unsqueeze(-1).expand(-1, -1, vdim), values)
    if v2 and c["mem_value_expand_time"] == 1:
        out = out.sum(1)
    return out.reshape(bs, -1) @ sd[p + "values_proj.weight"].double().T


def official_forward(sd, c, ids):
    D, H, kv = c["d_model"], c["n_heads"], c["n_kv_heads"]
    hd, eps, T = D // H, c["layer_norm_eps"], len(ids)
    x = sd["transformer.wte.weight"].double()[torch.tensor(ids)]
    inv = 1.0 / (c["rope_theta"] ** (torch.arange(0, hd, 2, dtype=torch.float64) / hd))
    ang = torch.arange(T, dtype=torch.float64)[:, None] * inv[None]
    ang = torch.cat([ang, ang], -1)

    def rot(t):  # [H, T, hd], OLMo rotate_half
        t1, t2 = t[..., : hd // 2], t[..., hd // 2:]
        return t * ang.cos() + torch.cat([-t2, t1], -1) * ang.sin()

    if c["mem_insert_way"] == "full":
        way = "full"
    else:
        way = {}
        for count, part in enumerate(c["mem_insert_way"].split("/")):
            a, b = part.split(":")
            way[int(a)] = [int(b), count]
    n_mem = c["n_layers"] if way == "full" else len(way)
    mem_out_idx, mem_out = -1, None
    for i in range(c["n_layers"]):
        p = f"transformer.blocks.{i}."
        qkv = rms(x, sd[p + "attn_norm.weight"], eps) @ sd[p + "att_proj.weight"].double().T
        q, k, v = qkv.split((D, kv * hd, kv * hd), dim=-1)
        q = q.view(T, H, hd).transpose(0, 1)
        k = k.view(T, kv, hd).transpose(0, 1)
        v = v.view(T, kv, hd).transpose(0, 1)
        q = rms(q, sd.get(p + "q_norm.weight"), eps)   # per head, [head_dim] gain
        k = rms(k, sd.get(p + "k_norm.weight"), eps)
        q, k = rot(q), rot(k)
        k = k.repeat_interleave(H // kv, dim=0)
        v = v.repeat_interleave(H // kv, dim=0)
        scores = (q @ k.transpose(-1, -2)) / math.sqrt(hd)
        scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
        att = scores.softmax(-1) @ v
        x = x + att.transpose(0, 1).reshape(T, D) @ sd[p + "attn_out.weight"].double().T
        og = x
        ffn_input_after_norm = rms(x, sd[p + "ff_norm.weight"], eps)
        h, gate = (ffn_input_after_norm @ sd[p + "ff_proj.weight"].double().T).chunk(2, dim=-1)
        x = og + (torch.nn.functional.silu(gate) * h) @ sd[p + "ff_out.weight"].double().T
        if way == "full":
            x = x + official_memory(sd, c, i, ffn_input_after_norm, n_mem)
        else:
            if i in way:
                mem_out_idx, layer = way[i]
                mem_out = official_memory(sd, c, layer, ffn_input_after_norm, n_mem)
            if mem_out_idx == i:
                x = x + mem_out
    x = rms(x, sd["transformer.ln_f.weight"], eps)
    head = sd["transformer.wte.weight"] if c["weight_tying"] else sd["transformer.ff_out.weight"]
    return (x @ head.double().T).numpy()


# ----------------------------------------------------------------------------------------------

def rel(a, b):
    return float(np.abs(a - b).max() / np.abs(b).max())


class Convert(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="ultramem-convert-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def pick_seed(self, c):
        """A seed whose selections for IDS are clear of ties (so float32 and float64 agree)."""
        for seed in range(100, 140):
            sd = official_state_dict(c, seed)
            cfg, tensors = ultramem_to_mnemo.convert(sd, c)
            probe = os.path.join(self.tmp, f"probe-{seed}")
            ultramem_to_mnemo.write_folder(probe, cfg, tensors, "f32")
            st = ultramem_ref.Stats()
            ultramem_ref.forward(probe, IDS, st)
            shutil.rmtree(probe)
            if st.min_gap() > 1e-3:
                return seed, sd
        self.fail("no tie-free seed")

    def round_trip(self, c, layout):
        seed, sd = self.pick_seed(c)
        src = os.path.join(self.tmp, "official")
        os.makedirs(src)
        if layout == "single":
            torch.save(sd, os.path.join(src, "model.pt"))
        else:
            P = c["mem_parallel_size"]
            for rank in range(2 * P):  # two data-parallel groups of P memory-parallel ranks
                part = dict(sd)
                for name in ultramem_to_mnemo.SHARDED:
                    cols = sd[name].shape[1] // P
                    p = rank % P
                    part[name] = sd[name][:, p * cols:(p + 1) * cols].clone()
                os.makedirs(os.path.join(src, f"rank_{rank}"))
                torch.save(part, os.path.join(src, f"rank_{rank}", "model.pt"))
        with open(os.path.join(src, "config.yaml"), "w", encoding="utf-8") as f:
            yaml.safe_dump({"run_name": "test", "model": c}, f)
        dst = os.path.join(self.tmp, "mnemo")
        self.assertEqual(ultramem_to_mnemo.main([src, "--out", dst]), 0)

        want = official_forward(sd, c, IDS)
        ours = ultramem_ref.forward(dst, IDS)
        self.assertLess(rel(ours, want), 1e-9, f"seed {seed}")
        engine = engine_logits(self, dst, IDS, self.tmp)
        self.assertEqual(engine.shape, want.shape)
        self.assertLess(rel(engine, want), 1e-4, f"seed {seed}")

    def test_v1_single_file(self):
        self.round_trip(model_config(v2=False), "single")

    def test_v2_vertical_parallel_shards(self):
        self.round_trip(model_config(v2=True), "ranks")

    def test_sharded_tables_are_concatenated_in_rank_order(self):
        c = model_config(v2=True)
        sd = official_state_dict(c, 1)
        src = os.path.join(self.tmp, "ranks")
        name = "transformer.full_memory_layer.values_for_look_up"
        for rank in range(2):
            part = dict(sd)
            for n in ultramem_to_mnemo.SHARDED:
                part[n] = sd[n][:, rank * sd[n].shape[1] // 2:(rank + 1) * sd[n].shape[1] // 2].clone()
            os.makedirs(os.path.join(src, f"rank_{rank}"))
            torch.save(part, os.path.join(src, f"rank_{rank}", "model.pt"))
        merged = ultramem_to_mnemo.load_state_dict(src, 2)
        self.assertTrue(torch.equal(merged[name], sd[name]))
        # A replicated tensor that differs between ranks is refused.
        part = torch.load(os.path.join(src, "rank_1", "model.pt"))
        part["transformer.ln_f.weight"] = part["transformer.ln_f.weight"] + 1
        torch.save(part, os.path.join(src, "rank_1", "model.pt"))
        with self.assertRaisesRegex(ultramem_to_mnemo.ConversionError, "differs between rank_0 and rank_1"):
            ultramem_to_mnemo.load_state_dict(src, 2)

    def test_refusals(self):
        c = model_config(v2=False)
        sd = official_state_dict(c, 2)
        with self.assertRaisesRegex(ultramem_to_mnemo.ConversionError, "block_type"):
            ultramem_to_mnemo.convert(sd, dict(c, block_type="moe"))
        extra = dict(sd)
        extra["transformer.mem_blocks.0.mystery"] = torch.zeros(3)
        with self.assertRaisesRegex(ultramem_to_mnemo.ConversionError, "mystery"):
            ultramem_to_mnemo.convert(extra, c)
        missing = {k: v for k, v in sd.items() if not k.endswith("tucker_core_u")}
        with self.assertRaisesRegex(ultramem_to_mnemo.ConversionError, "tucker_core_u"):
            ultramem_to_mnemo.convert(missing, c)

    def test_layout_changes(self):
        c = model_config(v2=False)
        sd = official_state_dict(c, 3)
        cfg, t = ultramem_to_mnemo.convert(sd, c)
        att = sd["transformer.blocks.1.att_proj.weight"]
        self.assertTrue(torch.equal(t["model.layers.1.self_attn.k_proj.weight"], att[32:48]))
        ff = sd["transformer.blocks.1.ff_proj.weight"]
        self.assertTrue(torch.equal(t["model.layers.1.mlp.gate_proj.weight"], ff[48:]))
        self.assertTrue(torch.equal(t["model.layers.1.mlp.up_proj.weight"], ff[:48]))
        keys = sd["transformer.mem_blocks.0.keys"]
        self.assertTrue(torch.equal(t["model.mem_blocks.0.keys"][3], keys[1, 1]))
        self.assertEqual(t["model.mem_blocks.0.shuffle_index"].dtype, torch.int32)
        self.assertEqual((cfg["mem_value_expand_time"], cfg["intermediate_size"], cfg["vocab_size"]), (4, 48, 256))
        self.assertTrue(torch.equal(t["model.mem_blocks.1.query_norm.weight"], torch.ones(8)))


if __name__ == "__main__":
    unittest.main()
