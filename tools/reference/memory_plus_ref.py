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

import math
import os
import sys
from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import llama_core  # noqa: E402  (the Llama blocks, here under lingua's tensor names)
import llama_ref  # noqa: E402  (the backbone config)
import make_goldens  # noqa: E402  (the golden id draw and files every test model shares)
import reference_cli  # noqa: E402
from llama_core import F64, Weights, rms_norm  # noqa: E402

MODEL_TYPE = "memory_plus"
LINGUA_ATTENTION = ("wq", "wk", "wv", "wo")
LINGUA_FEED_FORWARD = ("w1", "w3", "w2")   # gate, up, down


@dataclass(kw_only=True)
class Config(llama_ref.Config):
    """lingua's Llama (no biases, no rope scaling) and the memory layers."""
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
    def from_dict(c: dict, where: str = "config.json") -> "Config":
        llama_ref.check_model_type(c, where, (MODEL_TYPE,))
        backbone = Config.shared_fields(c)
        backbone["rope_scaling"] = None           # lingua's RoPE has no scaling
        v = int(c.get("mem_v_dim", -1))
        cfg = Config(
            model_type=MODEL_TYPE, **backbone, rope_interleaved=bool(c.get("rope_interleaved", True)),
            mem_layers=sorted(int(i) for i in c["mem_layers"]), n_keys=int(c["mem_n_keys"]),
            mem_heads=int(c["mem_heads"]), knn=int(c["mem_knn"]), k_dim=int(c["mem_k_dim"]),
            v_dim=v if v > 0 else backbone["hidden"], v_dim_given=v > 0,
            share_values=bool(c.get("mem_share_values", True)), swilu=bool(c.get("swilu_projection", True)),
            gated=bool(c.get("mem_gated", False)), peer=bool(c.get("peer_variant", False)),
            query_bias=bool(c.get("mem_query_bias", True)))
        if cfg.mem_heads < 2 or cfg.k_dim % 2 or not 1 <= cfg.knn <= cfg.n_keys:
            raise ValueError(f"{where}: memory config out of range (mem_heads >= 2, even mem_k_dim, "
                             "1 <= mem_knn <= mem_n_keys)")
        return cfg

    def values_prefix(self, layer: int) -> str:
        """Where layer `layer` reads its value table(s): its own name, or the first memory layer's."""
        owner = self.mem_layers[0] if self.share_values else layer
        return f"layers.{owner}.feed_forward."


# ----------------------------------------------------------------------------------------------
# Backbone pieces: lingua's RoPE; attention and FFN are llama_core's under lingua's names
# ----------------------------------------------------------------------------------------------

class LinguaRope:
    """RoPE of x [heads, T, d]: pair j rotated by pos * theta^(-2j/d) (RoFormer, Su et al. 2021).

    interleaved: pairs (2j, 2j+1), written as the complex product (x_2j + i x_2j+1) e^{i angle}
    that lingua's 2x2 rotation matrices implement; otherwise pairs (j, j + d/2) (HF)."""

    def __init__(self, cfg: Config, positions: torch.Tensor):
        inv_freq = torch.from_numpy(llama_ref.rope_inv_freq(cfg))
        angle = positions.to(F64)[:, None] * inv_freq[None, :]           # [T, d/2]
        self.rot = torch.polar(torch.ones_like(angle), angle)             # e^{i angle}
        self.interleaved = cfg.rope_interleaved

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1]
        if self.interleaved:
            z = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
            return torch.view_as_real(z * self.rot).reshape(x.shape)
        z = torch.complex(x[..., : d // 2], x[..., d // 2:]) * self.rot
        return torch.cat([z.real, z.imag], dim=-1)


def attention(cfg: Config, W: Weights, layer: int, x: torch.Tensor, rope: LinguaRope) -> torch.Tensor:
    """Causal GQA self-attention of one sequence x [T, D]; lingua's wq/wk/wv/wo have no biases."""
    return llama_core.self_attention(cfg, W, f"layers.{layer}.attention.", x, rope, LINGUA_ATTENTION)


def feed_forward(cfg: Config, W: Weights, layer: int, x: torch.Tensor) -> torch.Tensor:
    """lingua FeedForward: w2(silu(w1 x) * w3 x), no biases."""
    return llama_core.mlp(cfg, W, f"layers.{layer}.feed_forward.", x, LINGUA_FEED_FORWARD)


# ----------------------------------------------------------------------------------------------
# The memory layer
# ----------------------------------------------------------------------------------------------

def cut_gap(s: torch.Tensor, k: int) -> float:
    """Smallest gap, over the rows of s, between the k-th best score (kept) and the (k+1)-th
    (dropped); inf when a row has no more than k scores."""
    if s.shape[-1] <= k:
        return math.inf
    top = s.topk(k + 1, dim=-1).values
    return float((top[..., k - 1] - top[..., k]).min())


def product_key_search(q: torch.Tensor, keys: torch.Tensor, heads: int, knn: int,
                       gaps: Optional[List[float]] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """q [T, H, k], keys [2 H n, k/2]. Returns (scores, rows), both [T, H, knn], best first.

    Lample et al. 2019 §3.2: with s(i, j) = s1[i] + s2[j], the knn best pairs over all n^2 lie in
    topk(s1) x topk(s2), so two small searches and a search over knn^2 candidates are exact.
    gaps, when given, receives the cut_gap of each of the three searches."""
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
    if gaps is not None:
        gaps += [cut_gap(s1, knn), cut_gap(s2, knn), cut_gap(cand, knn)]
    return best, rows.gather(-1, at)


def memory(cfg: Config, W: Weights, layer: int, x: torch.Tensor, gaps: Optional[List[float]] = None) -> torch.Tensor:
    """Memory+ layer output [T, D] for the normed hidden states x [T, D]; gaps: product_key_search's."""
    p = f"layers.{layer}.feed_forward."
    T = x.shape[0]
    q = W.linear(p + "query_proj.query_mlps.0", x, cfg.query_bias).view(T, cfg.mem_heads, cfg.k_dim)
    scores, rows = product_key_search(q, W(p + "keys"), cfg.mem_heads, cfg.knn, gaps)
    w = torch.softmax(scores, dim=-1)                                  # per head, over its knn rows
    vp = cfg.values_prefix(layer)
    if cfg.peer:
        u = W(vp + "values_u.weight")[rows]                            # [T, H, knn, D]
        a = torch.nn.functional.gelu(torch.einsum("td,thrd->thr", x, u)) * w
        out = torch.einsum("thr,thrd->td", a, W(vp + "values_v.weight")[rows])
    else:
        bag = torch.einsum("thr,thrv->tv", w, W(vp + "values.weight")[rows])   # heads summed
        if cfg.swilu:
            bag = bag * torch.nn.functional.silu(W.linear(p + "swilu_projection", x, True))
        out = W.linear(p + "value_proj", bag, True) if (cfg.swilu or cfg.v_dim_given) else bag
    if cfg.gated:
        out = torch.sigmoid(W.linear(p + "gating", x, True)) * out
    return out


# ----------------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------------

def forward_weights(cfg: Config, W: Weights, ids: Sequence[int], gaps: Optional[List[float]] = None) -> torch.Tensor:
    """Logits [T, V]: lingua's pre-norm layers, the FFN of a memory layer replaced by its memory."""
    ids_t = llama_core.token_tensor(cfg, ids)
    rope = LinguaRope(cfg, torch.arange(len(ids_t)))
    h = W("tok_embeddings.weight")[ids_t]
    for l in range(cfg.layers):
        p = f"layers.{l}."
        h = h + attention(cfg, W, l, rms_norm(h, W(p + "attention_norm.weight"), cfg.eps), rope)
        x = rms_norm(h, W(p + "ffn_norm.weight"), cfg.eps)
        h = h + (memory(cfg, W, l, x, gaps) if l in cfg.mem_layers else feed_forward(cfg, W, l, x))
    return llama_core.output_logits(cfg, W, h, embed="tok_embeddings.weight", norm="norm.weight",
                                    head="output.weight")


def forward(model_dir: str, ids: Sequence[int]) -> np.ndarray:
    """Logits [T, vocab] (float64) of one sequence, every position."""
    return forward_weights(Config.load(model_dir), Weights(model_dir), ids).numpy()


def selection_margin(model_dir: str, ids: Sequence[int]) -> float:
    """Smallest gap, over every top-k the memory layers take for these ids, between the last score
    kept and the best score dropped. A golden is only robust if this is far above f32 rounding:
    otherwise an engine computing in f32 may legitimately pick a different row."""
    gaps: List[float] = []
    forward_weights(Config.load(model_dir), Weights(model_dir), ids, gaps)
    return min(gaps, default=math.inf)


def write_goldens(model_dir: str, count: int = 12, seed: int = 1234, min_margin: float = 1e-3) -> None:
    ids = make_goldens.golden_ids(model_dir, count, seed)
    margin = selection_margin(model_dir, ids)
    if margin < min_margin:
        raise SystemExit(f"{model_dir}: a memory top-k is decided by a score gap of {margin:.2e} < {min_margin}; "
                         "pick another seed so the golden does not hinge on rounding")
    logits = make_goldens.save_goldens(model_dir, ids, forward(model_dir, ids))
    print(f"{model_dir}: {len(ids)} ids, logits {logits.shape}, top-k margin {margin:.3g}, "
          f"argmax {logits.argmax(axis=1).tolist()}")


def show(model_dir: str, ids: List[int]) -> None:
    logits = forward(model_dir, ids)
    print("argmax", logits.argmax(axis=1).tolist(), "sum", float(logits.sum()))


if __name__ == "__main__":
    raise SystemExit(reference_cli.run(sys.argv[1:], __doc__, show, write_goldens))
