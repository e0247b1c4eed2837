#!/usr/bin/python3
"""Independent torch forward pass (float64, CPU) for mixture-of-experts decoders.

Written from the Hugging Face semantics (transformers modeling_olmoe.py / modeling_mixtral.py),
not from the C++ plugin, so the goldens it writes check the engine's graph:

  olmoe    OlmoeForCausalLM. Pre-norm blocks; attention normalises q and k with RMSNorm over the
           WHOLE projections (q_norm [H*d], k_norm [Hkv*d]) before splitting heads and RoPE;
           OlmoeSparseMoeBlock: router logits l = x W_g^T ([E, D] "mlp.gate.weight"),
           p = softmax(l) over ALL E experts, (w, e) = topk(p, k); norm_topk_prob (default
           false) divides w by its sum. Experts "mlp.experts.{e}.{gate,up,down}_proj".
  mixtral  MixtralForCausalLM. Llama attention without biases; MixtralSparseMoeBlock: the same
           softmax and topk, ALWAYS renormalised (= softmax over the k chosen logits). Router
           "block_sparse_moe.gate.weight", experts "block_sparse_moe.experts.{e}.w1" (gate),
           "w3" (up), "w2" (down).
  moe      Mnemo's generic type (benchmark models): Llama attention (attention_bias, tied
           embeddings, rope_scaling as for llama), optional "qk_norm" (OLMoE-style), OLMoE tensor
           names, "router": "softmax_topk" (OLMoE, with norm_topk_prob) or "topk_softmax"
           (Mixtral).

Each expert is SwiGLU: down(silu(gate x) * up x). The block runs the way HF does: a loop over
experts, each applied to the tokens that chose it, weighted and index_add-ed into the output.

Ties in the top-k (equal probabilities) go to the lower expert index (a stable descending sort);
torch.topk leaves that order unspecified, the engine's ARGTOPK fixes it the same way.

Usage:
  logits = forward(model_dir, ids)                 # torch.float64 [T, vocab]
  moe_ref.py MODEL_DIR 1,2,3                       # argmax per position, routing margin
  moe_ref.py --goldens [--count 12 --seed 1234] MODEL_DIR...   # golden_ids.txt + golden_logits.npy
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass, field
from typing import List, Optional, Sequence, Tuple

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import llama_core  # noqa: E402  (the Llama backbone: attention, RoPE, norms, SwiGLU)
import llama_ref  # noqa: E402  (the backbone config)
import make_goldens  # noqa: E402  (the golden id draw and files every test model shares)
import reference_cli  # noqa: E402
from llama_core import Weights, linear  # noqa: E402

SUPPORTED = ("olmoe", "mixtral", "moe")
ROUTERS = ("softmax_topk", "topk_softmax")


@dataclass(kw_only=True)
class Config(llama_ref.Config):
    """The Llama backbone (ffn: the width of every expert) and the sparse MoE block."""
    experts: int
    top_k: int
    router: str           # "softmax_topk" | "topk_softmax"
    norm_topk_prob: bool
    block: str            # "mlp" | "block_sparse_moe"
    proj: Tuple[str, str, str] = field(default=llama_core.HF_MLP)  # gate, up, down

    @staticmethod
    def from_dict(c: dict, where: str = "config.json") -> "Config":
        mt = llama_ref.check_model_type(c, where, SUPPORTED)
        if c.get("hidden_act", "silu") != "silu":
            raise ValueError(f"{where}: hidden_act must be silu")
        if mt == "olmoe":
            # OlmoeAttention: head_dim = hidden / heads; attention_bias on q, k, v and o.
            if c.get("clip_qkv") is not None:
                raise ValueError(f"{where}: clip_qkv is not supported")
            backbone = Config.shared_fields(c, eps=1e-5)
            backbone["head_dim"] = backbone["hidden"] // backbone["heads"]
            bias = bool(c.get("attention_bias", False))
            return Config(model_type=mt, **backbone, attention_bias=bias, o_bias=bias, qk_norm="full",
                          experts=int(c.get("num_experts", 64)), top_k=int(c.get("num_experts_per_tok", 8)),
                          router="softmax_topk", norm_topk_prob=bool(c.get("norm_topk_prob", False)), block="mlp")
        if mt == "mixtral":
            # MixtralAttention: no biases; head_dim from config when given.
            return Config(model_type=mt, **Config.shared_fields(c, eps=1e-5, rope_theta=1e6),
                          experts=int(c.get("num_local_experts", 8)), top_k=int(c.get("num_experts_per_tok", 2)),
                          router="topk_softmax", norm_topk_prob=True, block="block_sparse_moe",
                          proj=("w1", "w3", "w2"))
        router = c.get("router", "softmax_topk")
        if router not in ROUTERS:
            raise ValueError(f"{where}: router {router!r} is not one of {ROUTERS}")
        bias = bool(c.get("attention_bias", False))
        return Config(model_type=mt, **Config.shared_fields(c), attention_bias=bias, o_bias=bias,
                      qk_norm="full" if c.get("qk_norm", False) else "",
                      experts=int(c["num_experts"]), top_k=int(c["num_experts_per_tok"]), router=router,
                      norm_topk_prob=bool(c.get("norm_topk_prob", False)), block="mlp")


# ----------------------------------------------------------------------------------------------
# The sparse MoE block
# ----------------------------------------------------------------------------------------------

def top_k_stable(scores: torch.Tensor, k: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """(values, indices) of the k largest per row, ties to the lower index (stable sort)."""
    order = torch.sort(scores, dim=-1, descending=True, stable=True).indices[..., :k]
    return torch.gather(scores, -1, order), order


def route(logits: torch.Tensor, cfg: Config) -> Tuple[torch.Tensor, torch.Tensor]:
    """Router logits [T, E] -> (expert ids [T, k] long, weights [T, k]) as HF computes them.

    Both HF blocks compute p = softmax(l) over all experts and keep the top-k of p. OLMoE keeps
    p as the weights unless norm_topk_prob; Mixtral always divides by their sum. For
    "topk_softmax" we write Mixtral's formula literally the other way round to stay independent
    of how the engine builds it: softmax over the top-k LOGITS. Tests check the two agree."""
    if cfg.router == "softmax_topk":
        probs = torch.softmax(logits, dim=-1)
        weights, experts = top_k_stable(probs, cfg.top_k)
        if cfg.norm_topk_prob:
            weights = weights / weights.sum(dim=-1, keepdim=True)
        return experts, weights
    if cfg.model_type == "mixtral":
        probs = torch.softmax(logits, dim=-1)          # MixtralSparseMoeBlock, verbatim order
        weights, experts = top_k_stable(probs, cfg.top_k)
        return experts, weights / weights.sum(dim=-1, keepdim=True)
    chosen, experts = top_k_stable(logits, cfg.top_k)
    return experts, torch.softmax(chosen, dim=-1)


def moe_block(x: torch.Tensor, router_w: torch.Tensor, experts_w: Sequence[Tuple[torch.Tensor, ...]],
              cfg: Config) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Sparse MoE FFN on x [T, D]: returns (out [T, D], expert ids [T, k], router logits [T, E]).

    As HF: for every expert, gather the tokens that chose it, run it once on them, scale each
    row by that token's weight for it and index_add into the output."""
    logits = linear(x, router_w)
    experts, weights = route(logits, cfg)
    out = torch.zeros_like(x)
    for e, (gate, up, down) in enumerate(experts_w):
        token, slot = torch.where(experts == e)
        if token.numel() == 0:
            continue
        y = llama_core.swiglu(x[token], gate, up, down) * weights[token, slot, None]
        out.index_add_(0, token, y)
    return out, experts, logits


def expert_weights(cfg: Config, W: Weights, i: int):
    b = f"model.layers.{i}.{cfg.block}."
    g, u, d = cfg.proj
    return W(b + "gate.weight"), [(W(f"{b}experts.{e}.{g}.weight"), W(f"{b}experts.{e}.{u}.weight"),
                                   W(f"{b}experts.{e}.{d}.weight")) for e in range(cfg.experts)]


@dataclass
class Trace:
    """What the routers did: per layer the chosen experts [T, k] and the logits [T, E]."""
    experts: List[torch.Tensor] = field(default_factory=list)
    logits: List[torch.Tensor] = field(default_factory=list)

    def margin(self, cfg: Config) -> float:
        """Smallest gap between the k-th and (k+1)-th routing score (probability for OLMoE,
        logit for Mixtral) over all tokens and layers: how far the choice is from a tie. inf
        when every expert is chosen."""
        if cfg.top_k >= cfg.experts:
            return math.inf
        gaps = []
        for l in self.logits:
            s = torch.softmax(l, dim=-1) if cfg.router == "softmax_topk" else l
            top = torch.sort(s, dim=-1, descending=True).values
            gaps.append((top[:, cfg.top_k - 1] - top[:, cfg.top_k]).min().item())
        return min(gaps)


def forward_loaded(cfg: Config, W: Weights, ids: Sequence[int], trace: Optional[Trace] = None) -> torch.Tensor:
    """Logits [T, V] for ids at positions 0..T-1: h += attn(norm(h)); h += moe(norm(h))."""

    def routed(i: int, x: torch.Tensor) -> torch.Tensor:
        router_w, experts_w = expert_weights(cfg, W, i)
        out, experts, logits = moe_block(x, router_w, experts_w, cfg)
        if trace is not None:
            trace.experts.append(experts)
            trace.logits.append(logits)
        return out

    return llama_core.run_layers(cfg, W, ids, feed_forward=routed)[0]


def forward(model_dir: str, ids: Sequence[int], trace: Optional[Trace] = None) -> torch.Tensor:
    return forward_loaded(Config.load(model_dir), Weights(model_dir), ids, trace)


# ----------------------------------------------------------------------------------------------
# Goldens
# ----------------------------------------------------------------------------------------------

MIN_MARGIN = 1e-3  # a routing decision closer than this to a tie could flip in f32


def write_goldens(model_dir: str, count: int, seed: int) -> None:
    ids = make_goldens.golden_ids(model_dir, count, seed)
    cfg = Config.load(model_dir)
    trace = Trace()
    logits = forward_loaded(cfg, Weights(model_dir), ids, trace).numpy()
    margin = trace.margin(cfg)
    if margin < MIN_MARGIN:
        raise SystemExit(f"{model_dir}: a routing decision is {margin:.2e} from a tie; the engine's f32 "
                         f"could choose differently. Pick another seed.")
    used = sorted({int(e) for t in trace.experts for e in t.flatten()})
    logits = make_goldens.save_goldens(model_dir, ids, logits)
    print(f"{model_dir}: {len(ids)} ids, logits {logits.shape}, experts used {used}, "
          f"routing margin {margin:.3g}, argmax {logits.argmax(axis=1).tolist()}")


def show(model_dir: str, ids: List[int]) -> None:
    cfg = Config.load(model_dir)
    trace = Trace()
    logits = forward_loaded(cfg, Weights(model_dir), ids, trace)
    for t, row in enumerate(logits):
        chosen = [trace.experts[l][t].tolist() for l in range(cfg.layers)]
        print(f"pos {t}: token {ids[t]} -> argmax {int(row.argmax())} max {row.max().item():+.6f} experts {chosen}")
    print(f"routing margin {trace.margin(cfg):.3g}")


if __name__ == "__main__":
    raise SystemExit(reference_cli.run(sys.argv[1:], __doc__, show, write_goldens))
