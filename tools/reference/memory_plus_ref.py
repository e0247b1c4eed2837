"""Independent torch forward pass (CPU, float64) of Memory+ models (model_type "memory_plus").

Memory+ is the memory layer of Berges et al. 2024, "Memory Layers at Scale" (papers/ in the shared
notes), released as facebookresearch/memory on Meta's lingua. Written from the paper and from
the notes on the official code (shared notes §3), not from the C++ engine. Where paper and code
differ we follow the code (see docs/models/memory_plus.md):
  - no query/key normalisation (the paper mentions qk-norm; the released code has none);
  - value_proj and swilu_projection have biases; the query projection has a bias;
  - one value table shared by every memory layer (mem_share_values, the default);
  - the PEER variant uses exact (erf) GELU and ignores value_proj / swilu_projection.

A folder holds config.json (Llama-style backbone fields + lingua's ProductKeyArgs fields) and
model.safetensors with lingua's own tensor names (tools/convert/memory_plus_to_mnemo.py).

Backbone (lingua/transformer.py, pre-norm Llama):
  h = tok_embeddings[ids]
  per layer l:  h = h + Attn_l(RMSNorm(h) * attention_norm)
                h = h + F_l(RMSNorm(h) * ffn_norm),  F_l = Memory_l in mem_layers, else SwiGLU FFN
  logits = (RMSNorm(h) * norm) output^T
  RoPE rotates interleaved pairs (2j, 2j+1) by pos * theta^(-2j/d) (lingua's complex product),
  unless config rope_interleaved is false (pairs (j, j + d/2), the HF layout).

Memory layer (x = the normed hidden state of one token, D):
  q = W_q x + b_q, split per head h into q_h = [q_h^1 | q_h^2] of k_dim/2 each
  s^1_h = K_h^1 q_h^1, s^2_h = K_h^2 q_h^2            K = keys viewed [H][2][n_keys][k_dim/2]
  I^1, I^2 = the knn best sub-keys of each side; the knn best pairs (i, j) of I^1 x I^2 by
  s^1_h[i] + s^2_h[j]; value row i * n_keys + j; weights w_h = softmax of those knn pair scores
  bag = sum_h sum_r w_h[r] V[row_h[r]]
  out = value_proj(bag * silu(swilu_projection(x)))   (or value_proj(bag), or bag: see below)
  PEER: a_h[r] = gelu(x . U[row]) * w_h[r];  out = sum a_h[r] V'[row]
  mem_gated: out = sigmoid(gating(x)) * out

Usage:  forward(model_dir, ids) -> np.ndarray [T, vocab] float64
        python3 tools/reference/memory_plus_ref.py --goldens DIR [DIR ...]   writes golden_ids.txt
            and golden_logits.npy (float32 [T, vocab]) next to each model (ids as make_goldens.py)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass
from typing import Dict, List, Sequence, Tuple

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import safetensors_io  # noqa: E402  (tools/safetensors_io.py)

F64 = torch.float64


@dataclass
class Config:
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    eps: float
    rope_theta: float
    tied: bool
    rope_interleaved: bool
    mem_layers: List[int]
    n_keys: int
    mem_heads: int
    knn: int
    k_dim: int
    v_dim: int            # resolved: mem_v_dim or hidden
    v_dim_given: bool     # mem_v_dim > 0
    share_values: bool
    swilu: bool
    gated: bool
    peer: bool
    query_bias: bool

    @staticmethod
    def load(model_dir: str) -> "Config":
        with open(os.path.join(model_dir, "config.json"), "r", encoding="utf-8") as f:
            c = json.load(f)
        if c.get("model_type") != "memory_plus":
            raise ValueError(f"{model_dir}/config.json: model_type {c.get('model_type')!r} is not 'memory_plus'")
        return Config.from_dict(c)

    @staticmethod
    def from_dict(c: dict) -> "Config":
        hidden, heads = int(c["hidden_size"]), int(c["num_attention_heads"])
        v = int(c.get("mem_v_dim", -1))
        cfg = Config(
            hidden=hidden, layers=int(c["num_hidden_layers"]), heads=heads,
            kv_heads=int(c.get("num_key_value_heads") or heads),
            head_dim=int(c.get("head_dim") or hidden // heads), ffn=int(c["intermediate_size"]),
            vocab=int(c["vocab_size"]), eps=float(c.get("rms_norm_eps", 1e-6)),
            rope_theta=float(c.get("rope_theta", 10000.0)), tied=bool(c.get("tie_word_embeddings", False)),
            rope_interleaved=bool(c.get("rope_interleaved", True)),
            mem_layers=sorted(int(i) for i in c["mem_layers"]), n_keys=int(c["mem_n_keys"]),
            mem_heads=int(c["mem_heads"]), knn=int(c["mem_knn"]), k_dim=int(c["mem_k_dim"]),
            v_dim=v if v > 0 else hidden, v_dim_given=v > 0,
            share_values=bool(c.get("mem_share_values", True)), swilu=bool(c.get("swilu_projection", True)),
            gated=bool(c.get("mem_gated", False)), peer=bool(c.get("peer_variant", False)),
            query_bias=bool(c.get("mem_query_bias", True)))
        if cfg.mem_heads < 2 or cfg.k_dim % 2 or not 1 <= cfg.knn <= cfg.n_keys:
            raise ValueError("memory config out of range (mem_heads >= 2, even mem_k_dim, 1 <= mem_knn <= mem_n_keys)")
        return cfg

    def values_prefix(self, layer: int) -> str:
        """Where layer `layer` reads its value table(s): its own name, or the first memory layer's."""
        owner = self.mem_layers[0] if self.share_values else layer
        return f"layers.{owner}.feed_forward."


class Weights:
    """Tensors by name, widened exactly to float64 torch tensors on first use."""

    def __init__(self, model_dir: str):
        self.raw = safetensors_io.read_checkpoint(model_dir)
        self.cache: Dict[str, torch.Tensor] = {}
        self.model_dir = model_dir

    def has(self, name: str) -> bool:
        return name in self.raw

    def __call__(self, name: str) -> torch.Tensor:
        if name not in self.cache:
            if name not in self.raw:
                raise KeyError(f"{self.model_dir}: checkpoint has no tensor {name!r}")
            self.cache[name] = torch.from_numpy(np.ascontiguousarray(self.raw[name].to_float64()))
        return self.cache[name]


# ----------------------------------------------------------------------------------------------
# Backbone pieces
# ----------------------------------------------------------------------------------------------

def rms_norm(x: torch.Tensor, w: torch.Tensor, eps: float) -> torch.Tensor:
    """lingua RMSNorm: x / sqrt(mean(x^2) + eps) * weight, over the last axis."""
    return x * torch.rsqrt((x * x).mean(-1, keepdim=True) + eps) * w


def linear(x: torch.Tensor, W: Weights, name: str, bias: bool = False) -> torch.Tensor:
    y = x @ W(name + ".weight").T
    return y + W(name + ".bias") if bias else y


def rope(x: torch.Tensor, pos: torch.Tensor, theta: float, interleaved: bool) -> torch.Tensor:
    """x [T, heads, d]. Rotation of pair j by pos * theta^(-2j/d) (RoFormer, Su et al. 2021).

    interleaved: pairs (2j, 2j+1), written as the complex product (x_2j + i x_2j+1) e^{i angle}
    that lingua's 2x2 rotation matrices implement; otherwise pairs (j, j + d/2) (HF)."""
    d = x.shape[-1]
    inv_freq = 1.0 / (theta ** (torch.arange(0, d, 2, dtype=F64) / d))
    angle = pos.to(F64)[:, None] * inv_freq[None, :]                   # [T, d/2]
    rot = torch.polar(torch.ones_like(angle), angle)[:, None, :]      # e^{i angle}, [T, 1, d/2]
    if interleaved:
        z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
        return torch.view_as_real(z * rot).reshape(x.shape)
    z = torch.complex(x[..., : d // 2], x[..., d // 2:]) * rot
    return torch.cat([z.real, z.imag], dim=-1)


def attention(cfg: Config, W: Weights, layer: int, x: torch.Tensor) -> torch.Tensor:
    """Causal GQA self-attention of one sequence x [T, D]; query head h reads kv head
    h // (H / Hkv); softmax(q k^T / sqrt(d)) v; lingua's wq/wk/wv/wo have no biases."""
    p = f"layers.{layer}.attention."
    T, d = x.shape[0], cfg.head_dim
    pos = torch.arange(T)
    q = rope(linear(x, W, p + "wq").view(T, cfg.heads, d), pos, cfg.rope_theta, cfg.rope_interleaved)
    k = rope(linear(x, W, p + "wk").view(T, cfg.kv_heads, d), pos, cfg.rope_theta, cfg.rope_interleaved)
    v = linear(x, W, p + "wv").view(T, cfg.kv_heads, d)
    rep = cfg.heads // cfg.kv_heads
    k = k.repeat_interleave(rep, dim=1)
    v = v.repeat_interleave(rep, dim=1)
    scores = torch.einsum("thd,shd->hts", q, k) / math.sqrt(d)
    mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
    probs = torch.softmax(scores.masked_fill(mask, float("-inf")), dim=-1)
    out = torch.einsum("hts,shd->thd", probs, v).reshape(T, cfg.heads * d)
    return linear(out, W, p + "wo")


def feed_forward(W: Weights, layer: int, x: torch.Tensor) -> torch.Tensor:
    """lingua FeedForward: w2(silu(w1 x) * w3 x), no biases."""
    p = f"layers.{layer}.feed_forward."
    return linear(torch.nn.functional.silu(linear(x, W, p + "w1")) * linear(x, W, p + "w3"), W, p + "w2")


# ----------------------------------------------------------------------------------------------
# The memory layer
# ----------------------------------------------------------------------------------------------

def product_key_search(q: torch.Tensor, keys: torch.Tensor, heads: int, knn: int
                       ) -> Tuple[torch.Tensor, torch.Tensor]:
    """q [T, H, k], keys [2 H n, k/2]. Returns (scores, rows), both [T, H, knn], best first.

    Lample et al. 2019 §3.2: with s(i, j) = s1[i] + s2[j], the knn best pairs over all n^2 lie in
    topk(s1) x topk(s2), so two small searches and a search over knn^2 candidates are exact."""
    T, H, k = q.shape
    half = k // 2
    K = keys.view(heads, 2, -1, half)
    n = K.shape[2]
    s1 = torch.einsum("thd,hnd->thn", q[..., :half], K[:, 0])
    s2 = torch.einsum("thd,hnd->thn", q[..., half:], K[:, 1])
    v1, i1 = s1.topk(knn, dim=-1)
    v2, i2 = s2.topk(knn, dim=-1)
    cand = (v1[..., :, None] + v2[..., None, :]).reshape(T, H, knn * knn)
    rows = (i1[..., :, None] * n + i2[..., None, :]).reshape(T, H, knn * knn)
    best, at = cand.topk(knn, dim=-1)
    return best, rows.gather(-1, at)


def memory(cfg: Config, W: Weights, layer: int, x: torch.Tensor) -> torch.Tensor:
    """Memory+ layer output [T, D] for the normed hidden states x [T, D]."""
    p = f"layers.{layer}.feed_forward."
    T = x.shape[0]
    q = linear(x, W, p + "query_proj.query_mlps.0", cfg.query_bias).view(T, cfg.mem_heads, cfg.k_dim)
    scores, rows = product_key_search(q, W(p + "keys"), cfg.mem_heads, cfg.knn)
    w = torch.softmax(scores, dim=-1)                                  # per head, over its knn rows
    vp = cfg.values_prefix(layer)
    if cfg.peer:
        u = W(vp + "values_u.weight")[rows]                            # [T, H, knn, D]
        a = torch.nn.functional.gelu(torch.einsum("td,thrd->thr", x, u)) * w
        out = torch.einsum("thr,thrd->td", a, W(vp + "values_v.weight")[rows])
    else:
        bag = torch.einsum("thr,thrv->tv", w, W(vp + "values.weight")[rows])   # heads summed
        if cfg.swilu:
            bag = bag * torch.nn.functional.silu(linear(x, W, p + "swilu_projection", True))
        out = linear(bag, W, p + "value_proj", True) if (cfg.swilu or cfg.v_dim_given) else bag
    if cfg.gated:
        out = torch.sigmoid(linear(x, W, p + "gating", True)) * out
    return out


# ----------------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------------

def forward_weights(cfg: Config, W: Weights, ids: Sequence[int]) -> torch.Tensor:
    h = W("tok_embeddings.weight")[torch.as_tensor(list(ids), dtype=torch.long)]
    for l in range(cfg.layers):
        p = f"layers.{l}."
        h = h + attention(cfg, W, l, rms_norm(h, W(p + "attention_norm.weight"), cfg.eps))
        x = rms_norm(h, W(p + "ffn_norm.weight"), cfg.eps)
        h = h + (memory(cfg, W, l, x) if l in cfg.mem_layers else feed_forward(W, l, x))
    head = W("tok_embeddings.weight") if (cfg.tied and not W.has("output.weight")) else W("output.weight")
    return rms_norm(h, W("norm.weight"), cfg.eps) @ head.T


def forward(model_dir: str, ids: Sequence[int]) -> np.ndarray:
    """Logits [T, vocab] (float64) of one sequence, every position."""
    return forward_weights(Config.load(model_dir), Weights(model_dir), ids).numpy()


def selection_margin(model_dir: str, ids: Sequence[int]) -> float:
    """Smallest gap, over every top-k the memory layers take for these ids, between the last score
    kept and the best score dropped. A golden is only robust if this is far above f32 rounding:
    otherwise an engine computing in f32 may legitimately pick a different row."""
    cfg, W = Config.load(model_dir), Weights(model_dir)
    margins: List[float] = []

    def gap(s: torch.Tensor, k: int) -> None:
        if s.shape[-1] > k:
            top = s.topk(k + 1, dim=-1).values
            margins.append(float((top[..., k - 1] - top[..., k]).min()))

    h = W("tok_embeddings.weight")[torch.as_tensor(list(ids), dtype=torch.long)]
    for l in range(cfg.layers):
        p = f"layers.{l}."
        h = h + attention(cfg, W, l, rms_norm(h, W(p + "attention_norm.weight"), cfg.eps))
        x = rms_norm(h, W(p + "ffn_norm.weight"), cfg.eps)
        if l in cfg.mem_layers:
            f = p + "feed_forward."
            q = linear(x, W, f + "query_proj.query_mlps.0", cfg.query_bias).view(len(ids), cfg.mem_heads, cfg.k_dim)
            half = cfg.k_dim // 2
            K = W(f + "keys").view(cfg.mem_heads, 2, -1, half)
            s1 = torch.einsum("thd,hnd->thn", q[..., :half], K[:, 0])
            s2 = torch.einsum("thd,hnd->thn", q[..., half:], K[:, 1])
            gap(s1, cfg.knn)
            gap(s2, cfg.knn)
            v1, v2 = s1.topk(cfg.knn, -1).values, s2.topk(cfg.knn, -1).values
            gap((v1[..., :, None] + v2[..., None, :]).flatten(-2), cfg.knn)
            h = h + memory(cfg, W, l, x)
        else:
            h = h + feed_forward(W, l, x)
    return min(margins) if margins else float("inf")


def write_goldens(model_dir: str, count: int = 12, seed: int = 1234, min_margin: float = 1e-3) -> None:
    import make_goldens  # noqa: E402  (same id draw as every other test model)
    ids = make_goldens.golden_ids(model_dir, count, seed)
    margin = selection_margin(model_dir, ids)
    if margin < min_margin:
        raise SystemExit(f"{model_dir}: a memory top-k is decided by a score gap of {margin:.2e} < {min_margin}; "
                         "pick another seed so the golden does not hinge on rounding")
    logits = forward(model_dir, ids).astype(np.float32)
    with open(os.path.join(model_dir, "golden_ids.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write(",".join(str(i) for i in ids) + "\n")
    tmp = os.path.join(model_dir, "golden_logits.tmp.npy")
    np.save(tmp, logits)
    os.replace(tmp, os.path.join(model_dir, "golden_logits.npy"))
    print(f"{model_dir}: {len(ids)} ids, logits {logits.shape}, top-k margin {margin:.3g}, "
          f"argmax {logits.argmax(axis=1).tolist()}")


def main(argv: Sequence[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--goldens", nargs="+", metavar="DIR", help="write golden_ids.txt / golden_logits.npy")
    ap.add_argument("--count", type=int, default=12)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("model", nargs="?", help="model folder (with ids: print argmax per position)")
    ap.add_argument("ids", nargs="?", help="comma-separated token ids")
    a = ap.parse_args(argv)
    if a.goldens:
        for d in a.goldens:
            write_goldens(d, a.count, a.seed)
        return 0
    if not (a.model and a.ids):
        ap.error("give --goldens DIR..., or MODEL IDS")
    logits = forward(a.model, [int(t) for t in a.ids.split(",")])
    print("argmax", logits.argmax(axis=1).tolist(), "sum", float(logits.sum()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
