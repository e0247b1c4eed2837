#!/usr/bin/python3
"""Independent torch forward pass (CPU, float64) for Mnemo "pkm" model folders: an XLM
transformer with product-key memory layers (Lample, Sablayrolles, Ranzato, Denoyer, Jegou 2019,
"Large Memory Layers with Product Keys", arXiv 1907.05242; official code facebookresearch/XLM).

Written from the paper and the notes in /work/shared/notes/memory-layers-reference-code.md
(sections 4 and 8), not from the C++ plugin. One sequence, every position, full causal
attention, no cache; stored f16/bf16 weights are widened exactly.

Backbone (XLM TransformerModel, post-LN, causal), for tokens t_0..t_{T-1}:
    h = LayerNorm_emb(E[t] + P[pos] (+ L[lang_id]))
    block l:  h = LN1_l(h + Attn_l(h))
              h = LN2_l(h + FFN_l(h))        FFN(x) = W2 gelu(W1 x + b1) + b2, gelu with erf
                  or LN2_l(h + m(h))         memory "l:in" replaces the FFN
              h = h + m(h)                   memory "l:after" (no norm after it)
    logits = h W_pred^T + b_pred             (W_pred = E when share_inout_emb)

Product-key memory m(x) (paper sec. 3; XLM HashingMemoryProductFast):
    z = W_q x + b_q;  q = BN(z) = (z - mu) / sqrt(var + eps) * gamma + beta  (eval-mode BN)
    per head h: q_h = [q1 | q2] (halves of k/2)
        s1(i) = <q1, K[h,0,i]>,  s2(j) = <q2, K[h,1,j]>          i, j in 0..n_keys-1
        the key (i, j) scores s1(i) + s2(j); the best knn of all n_keys^2 keys are found in
        two stages (paper sec. 3.2): the knn best i and the knn best j, then the knn best of
        those knn^2 pairs (exact: any pair beaten on one side by knn others cannot be in the
        top knn).
        w = softmax(scores / temperature) over the knn selected keys
    m(x) = sum_h sum_(i,j) w(i,j) V[i * n_keys + j]    (heads summed, XLM's EmbeddingBag "sum")

Usage:  logits = forward(model_dir, ids)        # torch.float64 [T, n_words]
        python3 tools/reference/pkm_ref.py MODEL_DIR 1,2,3
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import safetensors_io  # noqa: E402  (tools/common/safetensors_io.py)

DT = torch.float64


@dataclass
class Config:
    dim: int
    layers: int
    heads: int
    ffn: int
    vocab: int
    max_positions: int
    ln_eps: float
    tied: bool
    lang_id: Optional[int]
    mem_positions: List[Tuple[int, str]]  # (layer, "in" | "after")
    k_dim: int
    mem_heads: int
    knn: int
    n_keys: int
    query_bias: bool
    query_bn: bool
    bn_eps: float
    temperature: float
    softmax: bool
    raw: dict = field(default_factory=dict)

    @staticmethod
    def from_dict(c: dict) -> "Config":
        if c.get("model_type") != "pkm":
            raise ValueError(f"model_type {c.get('model_type')!r} is not 'pkm'")
        dim = int(c["emb_dim"])
        positions = []
        for s in c["mem_positions"]:
            layer, where = s.split(":")
            if where not in ("in", "after"):
                raise ValueError(f"mem_positions entry {s!r}: expected '<layer>:in' or '<layer>:after'")
            positions.append((int(layer), where))
        n_langs = int(c.get("n_langs", 1))
        use_lang = bool(c.get("use_lang_emb", True)) and n_langs > 1
        v_dim = int(c.get("mem_v_dim", -1))
        if v_dim not in (-1, dim):
            raise ValueError("mem_v_dim must be -1 or emb_dim")
        if not c.get("gelu_activation", True):
            raise ValueError("gelu_activation = false (ReLU FFN) is not part of this reference")
        return Config(
            dim=dim, layers=int(c["n_layers"]), heads=int(c["n_heads"]), ffn=int(c.get("ffn_dim", 4 * dim)),
            vocab=int(c["n_words"]), max_positions=int(c["max_position_embeddings"]),
            ln_eps=float(c.get("layer_norm_eps", 1e-12)), tied=bool(c.get("share_inout_emb", True)),
            lang_id=int(c["lang_id"]) if use_lang else None, mem_positions=positions,
            k_dim=int(c["mem_k_dim"]), mem_heads=int(c["mem_heads"]), knn=int(c["mem_knn"]),
            n_keys=int(c["mem_n_keys"]), query_bias=bool(c.get("mem_query_bias", True)),
            query_bn=bool(c.get("mem_query_batchnorm", False)), bn_eps=float(c.get("mem_bn_eps", 1e-5)),
            temperature=float(c.get("mem_temperature", 1.0)), softmax=bool(c.get("mem_score_softmax", True)),
            raw=c)

    @staticmethod
    def load(model_dir: str) -> "Config":
        with open(os.path.join(model_dir, "config.json"), "r", encoding="utf-8") as f:
            return Config.from_dict(json.load(f))


def load_weights(model_dir: str) -> Dict[str, torch.Tensor]:
    """Every tensor of the folder as float64 (f16/bf16 widened exactly)."""
    return {name: torch.from_numpy(np.array(t.to_float64())) for name, t in safetensors_io.read_checkpoint(model_dir).items()}


# ----------------------------------------------------------------------------------------------
# Pieces
# ----------------------------------------------------------------------------------------------

def layer_norm(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor, eps: float) -> torch.Tensor:
    """(x - mean) / sqrt(biased variance + eps) * w + b over the last axis (Ba et al. 2016)."""
    mean = x.mean(dim=-1, keepdim=True)
    var = ((x - mean) ** 2).mean(dim=-1, keepdim=True)
    return (x - mean) / torch.sqrt(var + eps) * w + b


def gelu_erf(x: torch.Tensor) -> torch.Tensor:
    """x Phi(x) = 0.5 x (1 + erf(x / sqrt 2)) (Hendrycks & Gimpel 2016), XLM's gelu()."""
    return 0.5 * x * (1.0 + torch.erf(x / math.sqrt(2.0)))


def batchnorm_eval(z: torch.Tensor, gamma, beta, mean, var, eps: float) -> torch.Tensor:
    """BatchNorm in inference mode (Ioffe & Szegedy 2015, alg. 2): the running statistics
    replace the batch ones, so it is a fixed per-channel affine map."""
    return (z - mean) / torch.sqrt(var + eps) * gamma + beta


def fold_batchnorm(bias: Optional[torch.Tensor], gamma, beta, mean, var, eps: float):
    """BN(W x + b) = (W x) * scale + shift with scale = gamma / sqrt(var + eps) and
    shift = (b - mean) * scale + beta (how a loader can drop BN at inference)."""
    scale = gamma / torch.sqrt(var + eps)
    b = torch.zeros_like(mean) if bias is None else bias
    return scale, (b - mean) * scale + beta


def two_stage_topk(s1: torch.Tensor, s2: torch.Tensor, knn: int,
                   candidates: Optional[int] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """Product-key search for one query: s1, s2 [n_keys] sub-key scores. Returns (scores [knn],
    ids [knn]) of the best composite keys, best first, id = i * n_keys + j. Stage 1 keeps the
    `candidates` (XLM: knn) best sub-keys of each side; stage 2 ranks the candidate pairs by
    s1(i) + s2(j)."""
    n_keys = s1.shape[0]
    m = knn if candidates is None else candidates
    v1, i1 = torch.sort(s1, descending=True, stable=True)
    v2, i2 = torch.sort(s2, descending=True, stable=True)
    v1, i1, v2, i2 = v1[:m], i1[:m], v2[:m], i2[:m]
    pair = (v1[:, None] + v2[None, :]).reshape(-1)                  # pair a*knn + b
    ids = (i1[:, None] * n_keys + i2[None, :]).reshape(-1)
    order = torch.sort(pair, descending=True, stable=True).indices[:knn]
    return pair[order], ids[order]


def exhaustive_topk(s1: torch.Tensor, s2: torch.Tensor, knn: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """The same search over all n_keys^2 composite keys (the definition the two stages speed up)."""
    n_keys = s1.shape[0]
    all_scores = (s1[:, None] + s2[None, :]).reshape(-1)            # id i*n_keys + j
    order = torch.sort(all_scores, descending=True, stable=True).indices[:knn]
    return all_scores[order], order


@dataclass
class MemoryTrace:
    """What one memory call selected, for margin checks (how far each top-k cut is from a tie)."""
    stage1_gap: float = math.inf   # smallest (knn-th - (knn+1)-th) sub-key score, over sides/heads/tokens
    stage2_gap: float = math.inf   # smallest (knn-th - (knn+1)-th) pair score among the knn^2 candidates
    ids: List[torch.Tensor] = field(default_factory=list)


def _cut_gap(sorted_desc: torch.Tensor, k: int) -> float:
    return math.inf if sorted_desc.shape[0] <= k else float(sorted_desc[k - 1] - sorted_desc[k])


def memory(cfg: Config, W: Dict[str, torch.Tensor], key: str, x: torch.Tensor,
           trace: Optional[MemoryTrace] = None) -> torch.Tensor:
    """m(x) of memory `key` ("2_in", "0_after") for x [T, dim] -> [T, dim]."""
    p = f"memories.{key}."
    z = x @ W[p + "query_proj.query_mlps.0.weight"].T
    if cfg.query_bias:
        z = z + W[p + "query_proj.query_mlps.0.bias"]
    if cfg.query_bn:
        bn = p + "query_proj.query_mlps.1."
        z = batchnorm_eval(z, W[bn + "weight"], W[bn + "bias"], W[bn + "running_mean"], W[bn + "running_var"],
                           cfg.bn_eps)
    H, half, knn, n = cfg.mem_heads, cfg.k_dim // 2, cfg.knn, cfg.n_keys
    keys = W[p + "keys"]                                             # [H, 2, n_keys, k/2]
    values = W[p + "values.weight"]                                  # [n_keys^2, v]
    out = torch.zeros(x.shape[0], values.shape[1], dtype=DT)
    for t in range(x.shape[0]):
        q = z[t].reshape(H, cfg.k_dim)
        for h in range(H):
            s1 = keys[h, 0] @ q[h, :half]
            s2 = keys[h, 1] @ q[h, half:]
            scores, ids = two_stage_topk(s1, s2, knn)
            scores = scores / cfg.temperature
            w = torch.softmax(scores, dim=0) if cfg.softmax else scores
            out[t] += (w[:, None] * values[ids]).sum(dim=0)
            if trace is not None:
                trace.ids.append(ids)
                for s in (s1, s2):
                    trace.stage1_gap = min(trace.stage1_gap, _cut_gap(torch.sort(s, descending=True).values, knn))
                top1 = torch.sort(s1, descending=True).values[:knn]
                top2 = torch.sort(s2, descending=True).values[:knn]
                pairs = torch.sort((top1[:, None] + top2[None, :]).reshape(-1), descending=True).values
                trace.stage2_gap = min(trace.stage2_gap, _cut_gap(pairs, knn))
    return out


def attention(cfg: Config, W: Dict[str, torch.Tensor], i: int, x: torch.Tensor) -> torch.Tensor:
    """XLM MultiHeadAttention, causal: q, k, v, out linear layers all with biases; q is scaled by
    1/sqrt(d_head) before q k^T; position t attends to 0..t."""
    p = f"attentions.{i}."
    T, D = x.shape
    H = cfg.heads
    d = D // H

    def proj(name):
        return x @ W[p + name + ".weight"].T + W[p + name + ".bias"]

    q = proj("q_lin").reshape(T, H, d).transpose(0, 1) / math.sqrt(d)   # [H, T, d]
    k = proj("k_lin").reshape(T, H, d).transpose(0, 1)
    v = proj("v_lin").reshape(T, H, d).transpose(0, 1)
    scores = q @ k.transpose(1, 2)                                      # [H, T, T]
    future = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    scores = scores.masked_fill(future, -math.inf)
    ctx = torch.softmax(scores, dim=-1) @ v                              # [H, T, d]
    ctx = ctx.transpose(0, 1).reshape(T, D)
    return ctx @ W[p + "out_lin.weight"].T + W[p + "out_lin.bias"]


def hidden_states(cfg: Config, W: Dict[str, torch.Tensor], ids: List[int],
                  trace: Optional[MemoryTrace] = None) -> torch.Tensor:
    T = len(ids)
    if T > cfg.max_positions:
        raise ValueError(f"{T} tokens exceed the {cfg.max_positions} learned positions")
    tok = torch.tensor(ids, dtype=torch.long)
    h = W["embeddings.weight"][tok] + W["position_embeddings.weight"][torch.arange(T)]
    if cfg.lang_id is not None:
        h = h + W["lang_embeddings.weight"][cfg.lang_id]
    h = layer_norm(h, W["layer_norm_emb.weight"], W["layer_norm_emb.bias"], cfg.ln_eps)
    mem = set(cfg.mem_positions)
    for i in range(cfg.layers):
        h = layer_norm(h + attention(cfg, W, i, h), W[f"layer_norm1.{i}.weight"], W[f"layer_norm1.{i}.bias"], cfg.ln_eps)
        if (i, "in") in mem:
            f = memory(cfg, W, f"{i}_in", h, trace)
        else:
            p = f"ffns.{i}."
            f = gelu_erf(h @ W[p + "lin1.weight"].T + W[p + "lin1.bias"]) @ W[p + "lin2.weight"].T + W[p + "lin2.bias"]
        h = layer_norm(h + f, W[f"layer_norm2.{i}.weight"], W[f"layer_norm2.{i}.bias"], cfg.ln_eps)
        if (i, "after") in mem:
            h = h + memory(cfg, W, f"{i}_after", h, trace)
    return h


def logits_from(cfg: Config, W: Dict[str, torch.Tensor], ids: List[int],
                trace: Optional[MemoryTrace] = None) -> torch.Tensor:
    h = hidden_states(cfg, W, ids, trace)
    w_pred = W["embeddings.weight"] if cfg.tied else W["pred_layer.proj.weight"]
    return h @ w_pred.T + W["pred_layer.proj.bias"]


def forward(model_dir: str, ids: List[int], trace: Optional[MemoryTrace] = None) -> torch.Tensor:
    """Logits [T, n_words] (float64) at every position of `ids`."""
    with torch.no_grad():
        return logits_from(Config.load(model_dir), load_weights(model_dir), ids, trace)


def show(model_dir: str, ids: List[int]) -> None:
    trace = MemoryTrace()
    logits = forward(model_dir, ids, trace)
    print("argmax", logits.argmax(dim=1).tolist())
    print(f"max |logit| {logits.abs().max().item():.6f}  top-k margins: stage 1 {trace.stage1_gap:.3g}, "
          f"stage 2 {trace.stage2_gap:.3g}")


if __name__ == "__main__":
    import reference_cli  # noqa: E402  (tools/reference/reference_cli.py, next to this file)
    raise SystemExit(reference_cli.run(sys.argv[1:], __doc__, show))
