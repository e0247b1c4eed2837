"""Checks of the MoE reference (run: /usr/bin/python3 -m unittest tools/reference/test_moe_ref.py).

1. Hand-checkable block cases: one expert chosen with k = 1 is a dense SwiGLU layer; the router
   orders experts by score, ties to the lower index; OLMoE weights are the plain probabilities
   (sum < 1) unless norm_topk_prob; Mixtral's (HF: softmax, top-k, divide by the sum) equal a
   softmax over the k chosen logits and OLMoE with norm_topk_prob.
2. The HF-style sparse dispatch (loop over experts, index_add) equals a dense formulation
   (every expert on every token, mixed by a [T, E] weight matrix with zeros off the top-k), and
   never mixes tokens: a batch equals its rows run one by one.
3. Whole models: the attention agrees with the numpy llama_ref on the test checkpoints; logits
   are causal (a prefix gives the prefix's logits); the generic "moe" type configured like OLMoE
   (or like Mixtral, with the tensors renamed) gives the same logits; the committed goldens are
   what this reference computes now, route to several experts and stay clear of ties.
"""

from __future__ import annotations

import json
import os
import sys
import unittest

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))
import llama_core  # noqa: E402
import llama_ref  # noqa: E402
import moe_ref  # noqa: E402
import safetensors_io  # noqa: E402

MODELS = os.path.join(REPO, "tests", "data", "models")
TINY = ("olmoe-tiny-f32", "mixtral-tiny-f32", "moe-tiny-f32")


def block_config(router: str, experts: int, top_k: int, norm: bool = False, model_type: str = "moe") -> moe_ref.Config:
    return moe_ref.Config(model_type=model_type, hidden=6, layers=1, heads=1, kv_heads=1, head_dim=6, ffn=5,
                          vocab=4, eps=1e-6, rope_theta=1e4, experts=experts, top_k=top_k, router=router,
                          norm_topk_prob=norm, block="mlp")


def random_experts(gen: torch.Generator, experts: int, d: int = 6, f: int = 5):
    return [(torch.randn(f, d, generator=gen, dtype=torch.float64), torch.randn(f, d, generator=gen, dtype=torch.float64),
             torch.randn(d, f, generator=gen, dtype=torch.float64)) for _ in range(experts)]


def load_config_dict(name: str) -> dict:
    with open(os.path.join(MODELS, name, "config.json"), "r", encoding="utf-8") as f:
        return json.load(f)


class BlockTests(unittest.TestCase):
    def test_one_expert_with_k1_is_a_dense_swiglu_layer(self):
        gen = torch.Generator().manual_seed(1)
        x = torch.randn(7, 6, generator=gen, dtype=torch.float64)
        (gate, up, down), = random_experts(gen, 1)
        router = torch.randn(1, 6, generator=gen, dtype=torch.float64)
        dense = down @ (torch.nn.functional.silu(gate @ x.T) * (up @ x.T))    # [D, T]
        for router_style, norm in (("softmax_topk", False), ("softmax_topk", True), ("topk_softmax", False)):
            out, experts, _ = moe_ref.moe_block(x, router, [(gate, up, down)], block_config(router_style, 1, 1, norm))
            self.assertTrue(torch.equal(experts, torch.zeros(7, 1, dtype=torch.long)))
            self.assertLess((out - dense.T).abs().max().item(), 1e-12, router_style)

    def test_router_orders_by_score_ties_to_the_lower_index(self):
        logits = torch.tensor([[0.5, 2.0, -1.0, 2.0], [3.0, -2.0, 1.0, 0.0]], dtype=torch.float64)
        p = torch.softmax(logits, dim=-1)
        experts, w = moe_ref.route(logits, block_config("softmax_topk", 4, 2))
        self.assertEqual(experts.tolist(), [[1, 3], [0, 2]])
        self.assertTrue(torch.allclose(w, torch.stack([p[0, [1, 3]], p[1, [0, 2]]]), rtol=0, atol=1e-15))
        self.assertTrue((w.sum(-1) < 1).all())  # OLMoE default: the chosen probabilities, not renormalised
        _, wn = moe_ref.route(logits, block_config("softmax_topk", 4, 2, norm=True))
        self.assertTrue(torch.allclose(wn.sum(-1), torch.ones(2, dtype=torch.float64), atol=1e-15))
        self.assertAlmostEqual(wn[0, 0].item(), 0.5, places=15)  # equal logits, equal shares
        self.assertAlmostEqual(wn[1, 0].item(), 1 / (1 + np.exp(-2.0)), places=14)
        for cfg in (block_config("topk_softmax", 4, 2, model_type="mixtral"), block_config("topk_softmax", 4, 2)):
            e2, w2 = moe_ref.route(logits, cfg)
            self.assertEqual(e2.tolist(), [[1, 3], [0, 2]])
            self.assertTrue(torch.allclose(w2, wn, rtol=0, atol=1e-15))

    def test_mixtral_weights_are_a_softmax_over_the_chosen_logits(self):
        gen = torch.Generator().manual_seed(2)
        logits = torch.randn(50, 8, generator=gen, dtype=torch.float64) * 3
        hf_e, hf_w = moe_ref.route(logits, block_config("topk_softmax", 8, 3, model_type="mixtral"))
        sm_e, sm_w = moe_ref.route(logits, block_config("topk_softmax", 8, 3))
        ol_e, ol_w = moe_ref.route(logits, block_config("softmax_topk", 8, 3, norm=True))
        self.assertTrue(torch.equal(hf_e, sm_e) and torch.equal(hf_e, ol_e))
        self.assertLess((hf_w - sm_w).abs().max().item(), 1e-15)
        self.assertLess((hf_w - ol_w).abs().max().item(), 1e-15)
        # Chosen = the k largest logits, best first.
        self.assertTrue(torch.equal(hf_e, torch.sort(logits, dim=-1, descending=True).indices[:, :3]))

    def test_sparse_dispatch_equals_the_dense_mixture(self):
        gen = torch.Generator().manual_seed(3)
        x = torch.randn(9, 6, generator=gen, dtype=torch.float64)
        experts_w = random_experts(gen, 5)
        router = torch.randn(5, 6, generator=gen, dtype=torch.float64)
        for cfg in (block_config("softmax_topk", 5, 2), block_config("softmax_topk", 5, 5),
                    block_config("topk_softmax", 5, 3)):
            out, experts, logits = moe_ref.moe_block(x, router, experts_w, cfg)
            _, weights = moe_ref.route(logits, cfg)
            mix = torch.zeros(9, 5, dtype=torch.float64).scatter(1, experts, weights)     # [T, E]
            every = torch.stack([llama_core.swiglu(x, *e) for e in experts_w], dim=1)  # [T, E, D]
            dense = (mix[:, :, None] * every).sum(dim=1)
            self.assertLess((out - dense).abs().max().item(), 1e-12)
            if cfg.top_k == cfg.experts:  # every expert, each exactly once per token
                self.assertTrue(torch.equal(experts.sort(dim=-1).values, torch.arange(5).expand(9, 5)))

    def test_a_batch_equals_its_rows_alone(self):
        gen = torch.Generator().manual_seed(4)
        x = torch.randn(6, 6, generator=gen, dtype=torch.float64)
        experts_w = random_experts(gen, 4)
        router = torch.randn(4, 6, generator=gen, dtype=torch.float64)
        cfg = block_config("softmax_topk", 4, 2)
        batch, _, _ = moe_ref.moe_block(x, router, experts_w, cfg)
        for t in range(6):
            alone, _, _ = moe_ref.moe_block(x[t:t + 1], router, experts_w, cfg)
            self.assertLess((batch[t] - alone[0]).abs().max().item(), 1e-12)


class ModelTests(unittest.TestCase):
    def test_attention_agrees_with_the_numpy_llama_reference(self):
        # llama_ref implements the same attention (numpy); "olmo2" there is QK-norm over the full
        # projections, as OLMoE. Layer 0 on the embeddings of a few tokens.
        for name in TINY:
            d = os.path.join(MODELS, name)
            cfg = moe_ref.Config.load(d)
            lcfg = llama_ref.Config(model_type="olmo2" if cfg.qk_norm else "llama", hidden=cfg.hidden,
                                    layers=cfg.layers, heads=cfg.heads, kv_heads=cfg.kv_heads,
                                    head_dim=cfg.head_dim, ffn=cfg.ffn, vocab=cfg.vocab, eps=cfg.eps,
                                    rope_theta=cfg.rope_theta, rope_scaling=cfg.rope_scaling, tied=cfg.tied,
                                    attention_bias=cfg.attention_bias, o_bias=cfg.o_bias, qk_norm=cfg.qk_norm)
            W = moe_ref.Weights(d)
            x = W("model.embed_tokens.weight")[torch.tensor([1, 5, 9, 3, 7])]
            ours = llama_core.layer_attention(cfg, W, 0, x, llama_core.Rope(cfg, torch.arange(5)))
            cos, sin = llama_ref.rope_cos_sin(lcfg, np.arange(5))
            theirs = llama_ref.attention(lcfg, llama_ref.Weights(d), 0, x.numpy(), cos, sin)
            self.assertLess(np.abs(ours.numpy() - theirs).max(), 1e-12, name)

    def test_logits_are_causal(self):
        for name in TINY:
            d = os.path.join(MODELS, name)
            ids = [1, 17, 99, 4, 56, 23, 88]
            full = moe_ref.forward(d, ids)
            prefix = moe_ref.forward(d, ids[:4])
            self.assertLess((full[:4] - prefix).abs().max().item(), 1e-10, name)

    def test_generic_type_configured_like_olmoe_gives_olmoe_logits(self):
        d = os.path.join(MODELS, "olmoe-tiny-f32")
        c = load_config_dict("olmoe-tiny-f32")
        c.update(model_type="moe", qk_norm=True, router="softmax_topk")
        ids = [1, 40, 2, 77, 5]
        generic = moe_ref.forward_loaded(moe_ref.Config.from_dict(c), moe_ref.Weights(d), ids)
        self.assertLess((generic - moe_ref.forward(d, ids)).abs().max().item(), 1e-12)

    def test_generic_type_configured_like_mixtral_gives_mixtral_logits(self):
        d = os.path.join(MODELS, "mixtral-tiny-f32")
        c = load_config_dict("mixtral-tiny-f32")
        c.update(model_type="moe", router="topk_softmax", num_experts=c["num_local_experts"])
        renamed = {}
        for name, t in safetensors_io.read_checkpoint(d).items():
            for old, new in ((".block_sparse_moe.", ".mlp."), (".w1.", ".gate_proj."), (".w3.", ".up_proj."),
                             (".w2.", ".down_proj.")):
                name = name.replace(old, new)
            renamed[name] = t.to_float64()
        ids = [1, 40, 2, 77, 5]
        generic = moe_ref.forward_loaded(moe_ref.Config.from_dict(c), llama_core.Weights(tensors=renamed), ids)
        self.assertLess((generic - moe_ref.forward(d, ids)).abs().max().item(), 1e-12)

    def test_committed_goldens_are_current_and_well_conditioned(self):
        for name in TINY:
            d = os.path.join(MODELS, name)
            with open(os.path.join(d, "golden_ids.txt"), "r", encoding="utf-8") as f:
                ids = [int(t) for t in f.read().strip().split(",")]
            golden = np.load(os.path.join(d, "golden_logits.npy"))
            cfg = moe_ref.Config.load(d)
            trace = moe_ref.Trace()
            logits = moe_ref.forward_loaded(cfg, moe_ref.Weights(d), ids, trace).numpy()
            self.assertEqual(golden.shape, (len(ids), cfg.vocab))
            self.assertLess(np.abs(logits - golden).max(), 1e-5 * np.abs(golden).max(), name)
            self.assertGreaterEqual(trace.margin(cfg), moe_ref.MIN_MARGIN, name)
            used = {int(e) for t in trace.experts for e in t.flatten()}
            self.assertGreater(len(used), cfg.experts // 2, f"{name}: routing uses only experts {sorted(used)}")

    def test_bad_configs_are_refused(self):
        c = load_config_dict("moe-tiny-f32")
        with self.assertRaisesRegex(ValueError, "router"):
            moe_ref.Config.from_dict(dict(c, router="expert_choice"))
        with self.assertRaisesRegex(ValueError, "clip_qkv"):
            moe_ref.Config.from_dict(dict(load_config_dict("olmoe-tiny-f32"), clip_qkv=8.0))


if __name__ == "__main__":
    unittest.main()
