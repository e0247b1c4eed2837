#!/usr/bin/python3
"""MIDUS-HML reference forward pass (torch, CPU, float64), written from the paper.

Paper: "MIDUS: Memory-Infused Depth Up-Scaling" (arXiv 2512.13751), section 2 and appendix D.1-D.4,
G.1, G.2. No official code or checkpoint exists, so the paper is the whole specification; every
choice it leaves open is listed in docs/models/midus_hml.md and marked "OPEN" below.

Model (eq. 2 / 11): a Llama decoder f_0 = B_{L-1} o ... o B_0 with D memory blocks, M_j placed
right BEFORE the anchor block B_{i_j} (0 <= i_0 < ... < i_{D-1} <= L-1):
    f(x) = B_{L-1} o ... o B_{i_{D-1}} o M_{D-1} o ... o B_{i_0} o M_0 o ... o B_0 (x)
Memory block (eq. 1, 5, 12):  M(x) = x + HML(a'(x)),  a'(x) = Attn'(LN(x)) = [a_1 | ... | a_H]
    Attn' is the block's own causal self-attention WITHOUT the output projection; the attention
    update itself is not added to the residual stream (eq. 1: M(x) = x + Mem(a(x)), not a(x) + ...).
HML (eq. 13-15, D.3): per head h, q_h = a_h(x) = [q_row | q_col], d_p = d_h / 2
    S_row = q_row K_h^row^T, S_col = q_col K_h^col^T                 (eq. 13; no 1/sqrt scaling)
    I, J = Top-k(S_row), Top-k(S_col); candidates I x J               (eq. 14)
    sigma(i, j) = S_row(i) + S_col(j); Omega = Top-k of the k^2 candidates by sigma   (eq. 15)
    alpha = softmax over the selected sigma
HIVE (eq. 4): Mbar = sum_Omega alpha V[pi(i, j)] in R^r, out_h = Mbar W_h in R^{d_h},
    pi(i, j) = i*n + j with 0-based i, j (the paper's (i-1)n + j with 1-based indices, minus 1).
    Heads are concatenated back to [T, H*d_h] = [T, d] (eq. 5).

Tensor names (ours; see docs/models/midus_hml.md): base blocks use the HF Llama names,
memory block j uses model.memory_blocks.{j}.input_layernorm.weight, .self_attn.{q,k,v}_proj.*,
.hml.keys [H, 2, n, d_p], .hml.values [n^2, r], .hml.value_proj [H, r, d_h].

Usage:  logits = forward(model_dir, ids)            # numpy float64 [T, vocab]
        python3 tools/reference/midus_ref.py MODEL_DIR 1,2,3
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
import llama_core  # noqa: E402  (the Llama blocks: HF LlamaForCausalLM semantics)
import llama_ref  # noqa: E402  (the backbone config)
import reference_cli  # noqa: E402
from llama_core import Rotation, Weights, rms_norm  # noqa: E402

DT = torch.float64
MODEL_TYPE = "midus_hml"


@dataclass(kw_only=True)
class MidusConfig(llama_ref.Config):
    """A Llama backbone (the fields and biases of HF "llama") and the memory blocks."""
    anchors: List[int]
    n_keys: int
    topk: int
    latent_dim: int

    @staticmethod
    def from_dict(c: dict, where: str = "config.json") -> "MidusConfig":
        llama_ref.check_model_type(c, where, (MODEL_TYPE,))
        backbone = llama_ref.Config.llama_fields(c)
        cfg = MidusConfig(
            model_type=MODEL_TYPE, **backbone,
            anchors=[int(a) for a in c["memory_anchors"]], n_keys=int(c["memory_n_keys"]),
            topk=int(c["memory_topk"]), latent_dim=int(c.get("memory_latent_dim") or backbone["head_dim"]))
        cfg.check()
        return cfg

    def check(self) -> None:
        if self.heads * self.head_dim != self.hidden:
            raise ValueError("heads x head_dim must equal hidden_size (eq. 5 concatenates head outputs)")
        if self.head_dim % 2:
            raise ValueError("head_dim must be even (row and column halves)")
        if not self.anchors or any(b <= a for a, b in zip(self.anchors, self.anchors[1:])) \
                or self.anchors[0] < 0 or self.anchors[-1] >= self.layers:
            raise ValueError(f"memory_anchors {self.anchors} must be strictly increasing in 0..{self.layers - 1}")
        if not 1 <= self.topk <= self.n_keys:
            raise ValueError("memory_topk must be in 1..memory_n_keys")


@dataclass
class LookupStats:
    """Smallest gap between the k-th and (k+1)-th score of any selection: how close a lookup came
    to a tie, i.e. how much float error the engine may have before it picks another slot."""
    min_margin: float = math.inf
    lookups: int = 0

    def see(self, sorted_scores: torch.Tensor, k: int) -> None:
        if sorted_scores.shape[-1] > k:
            gap = (sorted_scores[..., k - 1] - sorted_scores[..., k]).min().item()
            self.min_margin = min(self.min_margin, gap)
        self.lookups += int(np.prod(sorted_scores.shape[:-1]))


# ----------------------------------------------------------------------------------------------
# Product-key selection (eq. 13-15) and the fused variant of appendix G.1
# ----------------------------------------------------------------------------------------------

def topk_stable(x: torch.Tensor, k: int, stats: Optional[LookupStats] = None) -> torch.Tensor:
    """Indices of the k largest entries along the last axis, largest first.
    OPEN: the paper does not say how ties are broken; ties go to the lower index (a stable sort of
    -x), the rule of the engine's ARGTOPK / PK_TOPK ops."""
    order = torch.sort(-x, dim=-1, stable=True).indices
    if stats is not None:
        stats.see(torch.gather(x, -1, order), k)
    return order[..., :k]


def product_key_topk(s_row: torch.Tensor, s_col: torch.Tensor, k: int,
                     stats: Optional[LookupStats] = None) -> Tuple[torch.Tensor, torch.Tensor]:
    """Two-stage additive product-key selection (eq. 14, 15) over sub-key scores [..., n].
    Returns (pi [..., k] int64 with pi = i*n + j, sigma [..., k]), best pair first."""
    n = s_row.shape[-1]
    rows = topk_stable(s_row, k, stats)                                    # I  [..., k]
    cols = topk_stable(s_col, k, stats)                                    # J  [..., k]
    sr = torch.gather(s_row, -1, rows)
    sc = torch.gather(s_col, -1, cols)
    cand = (sr[..., :, None] + sc[..., None, :]).flatten(-2)              # sigma over I x J, p = a*k + b
    best = topk_stable(cand, k, stats)                                     # Omega as positions in I x J
    pi = torch.gather(rows, -1, best // k) * n + torch.gather(cols, -1, best % k)
    return pi, torch.gather(cand, -1, best)


def fused_cartesian_topk(s_row: torch.Tensor, s_col: torch.Tensor, k: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Appendix G.1: Top-k over the whole n x n grid S_ij = S_row(i) + S_col(j), flattened as i*n + j."""
    grid = (s_row[..., :, None] + s_col[..., None, :]).flatten(-2)
    pi = topk_stable(grid, k)
    return pi, torch.gather(grid, -1, pi)


# ----------------------------------------------------------------------------------------------
# HIVE (eq. 4) and its inference-time cached form (appendix G.2)
# ----------------------------------------------------------------------------------------------

def hive(bank: torch.Tensor, pi: torch.Tensor, alpha: torch.Tensor, proj: torch.Tensor) -> torch.Tensor:
    """bank [n^2, r], pi / alpha [T, H, k], proj [H, r, d_h] -> [T, H, d_h]:
    Mbar_{h,t} = sum_j alpha_j bank[pi_j]  (R^r),  out_{h,t} = Mbar_{h,t} W_h."""
    latent = (alpha[..., None] * bank[pi]).sum(dim=-2)                    # [T, H, r]
    return torch.einsum("thr,hrd->thd", latent, proj)


def hive_cached(bank: torch.Tensor, pi: torch.Tensor, alpha: torch.Tensor, proj: torch.Tensor) -> torch.Tensor:
    """Appendix G.2: V_h^cache = bank W_h [H, n^2, d_h], then a plain weighted bag per head."""
    cache = torch.einsum("nr,hrd->hnd", bank, proj)
    heads = torch.arange(proj.shape[0])[None, :, None]
    return (alpha[..., None] * cache[heads, pi]).sum(dim=-2)


def hml(a: torch.Tensor, keys: torch.Tensor, bank: torch.Tensor, proj: torch.Tensor, k: int,
        stats: Optional[LookupStats] = None) -> torch.Tensor:
    """a'(x) as heads [T, H, d_h] -> HML(a'(x)) [T, H*d_h] (eq. 4, 5, 13-15).
    keys [H, 2, n, d_p]: keys[h, 0] = K_h^row, keys[h, 1] = K_h^col.
    OPEN: which half of a head is the row query; we take q_row = a_h[:d_p], q_col = a_h[d_p:]
    (the order of [q_row | q_col] in D.3)."""
    T, H, dh = a.shape
    dp = dh // 2
    s_row = torch.einsum("thd,hnd->thn", a[..., :dp], keys[:, 0])         # eq. 13
    s_col = torch.einsum("thd,hnd->thn", a[..., dp:], keys[:, 1])
    pi, sigma = product_key_topk(s_row, s_col, k, stats)
    alpha = torch.softmax(sigma, dim=-1)
    return hive(bank, pi, alpha, proj).reshape(T, H * dh)


# ----------------------------------------------------------------------------------------------
# The model: memory blocks before their anchors in a Llama (llama_core)
# ----------------------------------------------------------------------------------------------

def memory_block(cfg: MidusConfig, W: Weights, j: int, x: torch.Tensor, rope: Rotation,
                 stats: Optional[LookupStats] = None) -> torch.Tensor:
    """eq. 5 / 12: M(x) = x + HML(a'(x)), a'(x) = Attn'(LN(x)): the block's causal GQA
    self-attention (HF Llama) without the output projection, as heads [T, H, d_h]."""
    p = f"model.memory_blocks.{j}."
    a = llama_core.attention_heads(cfg, W, p + "self_attn.", rms_norm(x, W(p + "input_layernorm.weight"), cfg.eps),
                                   rope)
    a = a.reshape(x.shape[0], cfg.heads, cfg.head_dim)
    return x + hml(a, W(p + "hml.keys"), W(p + "hml.values"), W(p + "hml.value_proj"), cfg.topk, stats)


def forward_loaded(cfg: MidusConfig, W: Weights, ids: Sequence[int],
                   stats: Optional[LookupStats] = None) -> torch.Tensor:
    """eq. 11: memory block j runs right before base block anchors[j]; a base block is eq. 7,
    B(x) = a(x) + FFN(LN(a(x))), a(x) = x + Attn(LN(x)): llama_core.decoder_layer."""
    memory_before = {anchor: j for j, anchor in enumerate(cfg.anchors)}

    def layer(i: int, h: torch.Tensor, rope: Rotation) -> torch.Tensor:
        if i in memory_before:
            h = memory_block(cfg, W, memory_before[i], h, rope, stats)
        return llama_core.decoder_layer(cfg, W, i, h, rope)

    return llama_core.run_layers(cfg, W, ids, layer=layer)[0]


def forward(model_dir: str, ids: Sequence[int], stats: Optional[LookupStats] = None) -> np.ndarray:
    """Logits [T, vocab] (numpy float64) at every position of one sequence."""
    return forward_loaded(MidusConfig.load(model_dir), Weights(model_dir), ids, stats).numpy()


def show(model_dir: str, ids: List[int]) -> None:
    stats = LookupStats()
    logits = forward(model_dir, ids, stats)
    print(f"argmax {logits.argmax(axis=1).tolist()}  max|logit| {np.abs(logits).max():.6f}  "
          f"lookups {stats.lookups}  min top-k margin {stats.min_margin:.3g}")


if __name__ == "__main__":
    raise SystemExit(reference_cli.run(sys.argv[1:], __doc__, show))
