"""Round trip of tools/convert/xlm_pkm_to_mnemo.py: random checkpoints in XLM's own layout (the
dict XLM's trainer torch.saves: 'model' state dict + 'params'), converted, then
  * tools/reference/pkm_ref.py on the converted folder must equal an independent forward pass
    written here with torch modules named and wired as in xlm/model/transformer.py and
    xlm/model/memory (nn.Embedding, nn.LayerNorm, nn.BatchNorm1d in eval mode, nn.EmbeddingBag with
    per-sample weights, torch.topk), run on the ORIGINAL state dict, and
  * `$MNEMO_BUILD_BIN/mnemo logits` on the converted folder must match it to 1e-4.
Unsupported XLM options must be refused with the flag named.

  MNEMO_BUILD_BIN=build/bin /usr/bin/python3 -m unittest -v tools/convert/test_xlm_pkm_convert.py
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import sys
import tempfile
import unittest

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(REPO, "tools", "reference"))
import pkm_ref  # noqa: E402
import xlm_pkm_to_mnemo  # noqa: E402
from engine_logits import engine_logits  # noqa: E402


# ----------------------------------------------------------------------------------------------
# An XLM-layout language model (state dict names as xlm/model/transformer.py TransformerModel)
# ----------------------------------------------------------------------------------------------

class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.q_lin, self.k_lin, self.v_lin, self.out_lin = (nn.Linear(dim, dim) for _ in range(4))

    def forward(self, x):  # x [T, D], causal
        T, D = x.shape
        d = D // self.heads
        q = self.q_lin(x).view(T, self.heads, d).transpose(0, 1) / math.sqrt(d)
        k = self.k_lin(x).view(T, self.heads, d).transpose(0, 1)
        v = self.v_lin(x).view(T, self.heads, d).transpose(0, 1)
        allowed = torch.arange(T)[None, :] <= torch.arange(T)[:, None]
        s = (q @ k.transpose(1, 2)).masked_fill(~allowed, float("-inf"))
        return self.out_lin((F.softmax(s, dim=-1) @ v).transpose(0, 1).reshape(T, D))


class FFN(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.lin1, self.lin2 = nn.Linear(dim, hidden), nn.Linear(hidden, dim)

    def forward(self, x):
        return self.lin2(F.gelu(self.lin1(x)))  # torch's default gelu is XLM's erf form


class QueryMLP(nn.Module):
    def __init__(self, dim, out, bias, batchnorm):
        super().__init__()
        layers = [nn.Linear(dim, out, bias=bias)]
        if batchnorm:
            layers.append(nn.BatchNorm1d(out))
        self.query_mlps = nn.Sequential(*layers)


class ProductKeyMemory(nn.Module):
    """XLM HashingMemoryProductFast at inference (temperature, optional softmax, no extras)."""

    def __init__(self, dim, p):
        super().__init__()
        self.heads, self.k_dim, self.knn, self.n_keys = p["mem_heads"], p["mem_k_dim"], p["mem_knn"], p["mem_n_keys"]
        self.temperature = p["mem_temperature"]
        self.softmax = p["mem_score_softmax"]
        self.different_keys = p["mem_use_different_keys"]
        half = self.k_dim // 2
        shape = (self.heads, 2, self.n_keys, half) if self.different_keys else (self.n_keys, half)
        self.keys = nn.Parameter(torch.empty(shape).uniform_(-half ** -0.5, half ** -0.5))
        self.values = nn.EmbeddingBag(self.n_keys ** 2, dim, mode="sum")
        self.query_proj = QueryMLP(dim, self.heads * self.k_dim, p["mem_query_bias"], p["mem_query_batchnorm"])

    def forward(self, x):  # [T, D]
        T = x.shape[0]
        half = self.k_dim // 2
        query = self.query_proj.query_mlps(x).view(T * self.heads, self.k_dim)
        scores, indices = [], []
        q = query.view(T, self.heads, self.k_dim)
        for h in range(self.heads):
            k1, k2 = (self.keys[h][0], self.keys[h][1]) if self.different_keys else (self.keys, self.keys)
            s1, i1 = F.linear(q[:, h, :half], k1).topk(self.knn, dim=1)
            s2, i2 = F.linear(q[:, h, half:], k2).topk(self.knn, dim=1)
            all_s = (s1[:, :, None] + s2[:, None, :]).reshape(T, -1)
            all_i = (i1[:, :, None] * self.n_keys + i2[:, None, :]).reshape(T, -1)
            best_s, best = all_s.topk(self.knn, dim=1)
            scores.append(best_s)
            indices.append(all_i.gather(1, best))
        s = torch.stack(scores, 1) / self.temperature                       # [T, H, knn]
        w = (F.softmax(s, dim=-1) if self.softmax else s).reshape(T, -1)
        return self.values(torch.stack(indices, 1).reshape(T, -1), per_sample_weights=w)


class PredLayer(nn.Module):
    def __init__(self, dim, vocab):
        super().__init__()
        self.proj = nn.Linear(dim, vocab)


class XlmLm(nn.Module):
    def __init__(self, p, vocab, max_pos):
        super().__init__()
        D = p["emb_dim"]
        self.p = p
        self.position_embeddings = nn.Embedding(max_pos, D)
        if p["n_langs"] > 1 and p["use_lang_emb"]:
            self.lang_embeddings = nn.Embedding(p["n_langs"], D)
        self.embeddings = nn.Embedding(vocab, D)
        self.layer_norm_emb = nn.LayerNorm(D, eps=1e-12)
        pos = p["mem_enc_positions"]
        if isinstance(pos, str):
            pos = [(int(s[:-1]), "after") if s.endswith("+") else (int(s), "in") for s in pos.split(",")]
        self.mem_keys = {f"{layer}_{where}" for layer, where in pos}
        self.memories = nn.ModuleDict({k: ProductKeyMemory(D, p) for k in sorted(self.mem_keys)})
        self.attentions, self.layer_norm1 = nn.ModuleList(), nn.ModuleList()
        self.ffns, self.layer_norm2 = nn.ModuleList(), nn.ModuleList()
        for i in range(p["n_layers"]):
            self.attentions.append(Attention(D, p["n_heads"]))
            self.layer_norm1.append(nn.LayerNorm(D, eps=1e-12))
            self.ffns.append(None if f"{i}_in" in self.mem_keys else FFN(D, 4 * D))
            self.layer_norm2.append(nn.LayerNorm(D, eps=1e-12))
        self.pred_layer = PredLayer(D, vocab)
        if p["share_inout_emb"]:
            self.pred_layer.proj.weight = self.embeddings.weight

    def forward(self, ids, lang=None):
        T = len(ids)
        x = self.embeddings(torch.tensor(ids)) + self.position_embeddings(torch.arange(T))
        if lang is not None:
            x = x + self.lang_embeddings(torch.full((T,), lang))
        x = self.layer_norm_emb(x)
        for i in range(self.p["n_layers"]):
            x = self.layer_norm1[i](x + self.attentions[i](x))
            f = self.memories[f"{i}_in"](x) if f"{i}_in" in self.mem_keys else self.ffns[i](x)
            x = self.layer_norm2[i](x + f)
            if f"{i}_after" in self.mem_keys:
                x = x + self.memories[f"{i}_after"](x)
        return self.pred_layer.proj(x)


def randomize(model: nn.Module, seed: int) -> None:
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, t in model.named_parameters():
            if name.endswith("keys"):
                continue  # keep XLM's uniform key init
            if "layer_norm" in name or name.endswith("query_mlps.1.weight"):
                t.copy_((1.0 if name.endswith("weight") else 0.0) + 0.2 * torch.randn(t.shape, generator=g))
            elif t.dim() == 2 and "embeddings" not in name and "values" not in name:
                t.copy_(torch.randn(t.shape, generator=g) / math.sqrt(t.shape[1]))
            elif "values" in name:
                t.copy_(0.5 * torch.randn(t.shape, generator=g))
            else:
                t.copy_(torch.randn(t.shape, generator=g) * (0.1 if t.dim() == 1 else 1.0))
        for name, b in model.named_buffers():
            if name.endswith("running_mean"):
                b.copy_(0.3 * torch.randn(b.shape, generator=g))
            elif name.endswith("running_var"):
                b.copy_(0.5 + 1.5 * torch.rand(b.shape, generator=g))
            elif name.endswith("num_batches_tracked"):
                b.fill_(1234)


def base_params(**over) -> dict:
    p = {"emb_dim": 32, "n_layers": 3, "n_heads": 4, "n_words": 80, "gelu_activation": True, "share_inout_emb": True,
         "asm": False, "n_langs": 1, "use_lang_emb": True, "use_memory": True, "mem_implementation": "pq_fast",
         "mem_enc_positions": "1,0+", "mem_dec_positions": "", "mem_k_dim": 12, "mem_heads": 2, "mem_knn": 3,
         "mem_n_keys": 6, "mem_v_dim": -1, "mem_query_layer_sizes": [0, 0], "mem_query_bias": True,
         "mem_query_batchnorm": True, "mem_use_different_keys": True, "mem_temperature": 1.0,
         "mem_score_softmax": True, "mem_score_subtract": "", "mem_score_normalize": False,
         "mem_normalize_query": False, "mem_shuffle_indices": False, "mem_modulo_size": -1, "mem_input2d": False,
         "mem_multi_query_net": False, "dropout": 0.1}
    p.update(over)
    return p


MAX_POS = 32


def make_checkpoint(path: str, p: dict, seed: int, ddp_prefix=False, namespace=False, as_decoder=False) -> XlmLm:
    """as_decoder: save as the 'decoder' of an encoder-decoder checkpoint, with the encoder
    attention tensors a decoder has (unused when it runs as a language model) and the memory
    positions in mem_dec_positions."""
    torch.manual_seed(seed)
    model = XlmLm(p, p["n_words"], MAX_POS)
    randomize(model, seed)
    sd = dict(model.state_dict())
    params = dict(p)
    key = "model"
    if as_decoder:
        key = "decoder"
        D = p["emb_dim"]
        for i in range(p["n_layers"]):
            for lin in ("q_lin", "k_lin", "v_lin", "out_lin"):
                sd[f"encoder_attn.{i}.{lin}.weight"] = torch.randn(D, D)
                sd[f"encoder_attn.{i}.{lin}.bias"] = torch.randn(D)
            sd[f"layer_norm15.{i}.weight"] = torch.randn(D)
            sd[f"layer_norm15.{i}.bias"] = torch.randn(D)
        params["mem_dec_positions"], params["mem_enc_positions"] = p["mem_enc_positions"], ""
    if ddp_prefix:
        sd = {"module." + k: v for k, v in sd.items()}
    params = argparse.Namespace(**params) if namespace else params
    torch.save({"epoch": 3, key: sd, "params": params, "dico_id2word": {i: f"w{i}" for i in range(p["n_words"])}},
               path)
    return model


def independent_logits(model: XlmLm, ids, lang=None) -> torch.Tensor:
    m = XlmLm(model.p, model.p["n_words"], MAX_POS).double().eval()
    m.load_state_dict({k: v.double() if v.is_floating_point() else v for k, v in model.state_dict().items()})
    with torch.no_grad():
        return m(ids, lang)


class ConvertRoundTrip(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="mnemo-xlm-pkm-")

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def pick_ids(self, folder: str, vocab: int, seed: int):
        """An id sequence whose top-k cuts are all >= 1e-3 from a tie (f32 picks the same keys)."""
        rng = np.random.default_rng(seed)
        for _ in range(100):
            ids = [int(v) for v in rng.integers(0, vocab, size=10)]
            trace = pkm_ref.MemoryTrace()
            pkm_ref.forward(folder, ids, trace)
            if min(trace.stage1_gap, trace.stage2_gap) >= 1e-3:
                return ids
        self.fail("no id sequence with clear top-k margins")

    def round_trip(self, p, seed, argv_extra=(), lang=None, **ckpt):
        ckpt_path = os.path.join(self.tmp, f"xlm-{seed}.pth")
        out = os.path.join(self.tmp, f"mnemo-{seed}")
        model = make_checkpoint(ckpt_path, p, seed, **ckpt)
        self.assertEqual(xlm_pkm_to_mnemo.main([ckpt_path, "--out", out, *argv_extra]), 0)
        ids = self.pick_ids(out, p["n_words"], seed)
        want = independent_logits(model, ids, lang)
        got = pkm_ref.forward(out, ids)
        self.assertLess((got - want).abs().max().item() / want.abs().max().item(), 1e-10)

        engine = torch.from_numpy(engine_logits(self, out, ids, self.tmp))
        err = (engine - want).abs().max().item() / want.abs().max().item()
        self.assertLess(err, 1e-4, f"mnemo logits vs the XLM-layout forward: max rel error {err:.3g}")
        return out

    def test_batchnorm_tied_in_and_after(self):
        # Flags as XLM writes them before check_model_params: positions "1,0+" = 1_in, 0_after.
        out = self.round_trip(base_params(), seed=11)
        cfg = pkm_ref.Config.load(out)
        self.assertEqual(cfg.mem_positions, [(1, "in"), (0, "after")])
        self.assertTrue(cfg.query_bn and cfg.tied)

    def test_shared_keys_untied_language_temperature(self):
        # Namespace params, DDP 'module.' prefix, positions as (layer, pos) tuples (after
        # check_model_params), one key table for all heads, no query bias or BN, two languages.
        p = base_params(mem_enc_positions=[(2, "after"), (0, "in")], mem_use_different_keys=False,
                        mem_query_bias=False, mem_query_batchnorm=False, share_inout_emb=False,
                        mem_temperature=0.7, n_langs=2, lang2id={"en": 0, "fr": 1}, id2lang={0: "en", 1: "fr"},
                        mem_implementation="pq_default")
        out = self.round_trip(p, seed=12, argv_extra=("--lang", "fr"), lang=1, ddp_prefix=True, namespace=True)
        cfg = pkm_ref.Config.load(out)
        self.assertEqual(cfg.lang_id, 1)
        self.assertAlmostEqual(cfg.temperature, 0.7)

    def test_raw_scores_without_softmax(self):
        # mem_score_softmax = false: the bag weights are the (temperature-scaled) raw scores.
        p = base_params(mem_enc_positions="2", mem_score_softmax=False, mem_temperature=2.0)
        out = self.round_trip(p, seed=13)
        self.assertFalse(pkm_ref.Config.load(out).softmax)

    def test_decoder_of_an_encoder_decoder_checkpoint(self):
        # --model-key decoder: mem_dec_positions, and the encoder attention is left out.
        self.round_trip(base_params(mem_enc_positions="0,2+"), seed=14, argv_extra=("--model-key", "decoder"),
                        as_decoder=True)

    def test_bf16_folder_matches_the_reference_on_its_stored_values(self):
        # --dtype bf16 rounds matrices, tables and keys (so the comparison is against pkm_ref on
        # the stored values, not the f32 original); 1-D tensors stay F32.
        p = base_params()
        ckpt = os.path.join(self.tmp, "xlm-bf16.pth")
        out = os.path.join(self.tmp, "mnemo-bf16")
        make_checkpoint(ckpt, p, 15)
        self.assertEqual(xlm_pkm_to_mnemo.main([ckpt, "--out", out, "--dtype", "bf16"]), 0)
        stored = pkm_ref.safetensors_io.read_checkpoint(out)
        self.assertEqual(stored["memories.1_in.values.weight"].dtype, "BF16")
        self.assertEqual(stored["attentions.0.q_lin.bias"].dtype, "F32")
        ids = self.pick_ids(out, p["n_words"], 15)
        want = pkm_ref.forward(out, ids)
        engine = torch.from_numpy(engine_logits(self, out, ids, self.tmp))
        self.assertLess((engine - want).abs().max().item() / want.abs().max().item(), 1e-4)


class ConvertRefuses(unittest.TestCase):
    def convert_error(self, **over) -> str:
        p = base_params(**over)
        model = XlmLm(base_params(), p["n_words"], MAX_POS)
        sd = model.state_dict()
        with self.assertRaises(xlm_pkm_to_mnemo.ConversionError) as e:
            xlm_pkm_to_mnemo.convert(sd, dict(xlm_pkm_to_mnemo.DEFAULTS, **p), "model")
        return str(e.exception)

    def test_unsupported_flags_are_named(self):
        self.assertIn("params.gelu_activation", self.convert_error(gelu_activation=False))
        self.assertIn("params.mem_score_subtract = 'min'", self.convert_error(mem_score_subtract="min"))
        self.assertIn("params.mem_query_layer_sizes", self.convert_error(mem_query_layer_sizes="0,64,0"))
        self.assertIn("params.mem_modulo_size", self.convert_error(mem_modulo_size=10))
        self.assertIn("params.asm", self.convert_error(asm=True))

    def test_language_must_be_chosen(self):
        p = base_params(n_langs=2)
        model = XlmLm(p, p["n_words"], MAX_POS)
        with self.assertRaises(xlm_pkm_to_mnemo.ConversionError) as e:
            xlm_pkm_to_mnemo.convert(model.state_dict(), dict(xlm_pkm_to_mnemo.DEFAULTS, **p), "model")
        self.assertIn("--lang", str(e.exception))

    def test_unknown_tensor_is_an_error(self):
        model = XlmLm(base_params(), 80, MAX_POS)
        sd = dict(model.state_dict())
        sd["adapters.0.weight"] = torch.zeros(3)
        with self.assertRaises(xlm_pkm_to_mnemo.ConversionError) as e:
            xlm_pkm_to_mnemo.convert(sd, dict(xlm_pkm_to_mnemo.DEFAULTS, **base_params()), "model")
        self.assertIn("adapters.0.weight", str(e.exception))

    def test_memory_outside_the_model(self):
        self.assertIn("params.mem_enc_positions", self.convert_error(mem_enc_positions="5"))


if __name__ == "__main__":
    unittest.main()
