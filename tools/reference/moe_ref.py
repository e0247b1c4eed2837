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

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import safetensors_io  # noqa: E402  (tools/safetensors_io.py)
import llama_ref  # noqa: E402  (RoPE inverse frequencies incl. llama3 / linear scaling)

SUPPORTED = ("olmoe", "mixtral", "moe")
ROUTERS = ("softmax_topk", "topk_softmax")


@dataclass
class Config:
    model_type: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int              # width of every expert
    vocab: int
    eps: float
    rope_theta: float
    rope_scaling: Optional[dict]
    tied: bool
    qkv_bias: bool
    o_bias: bool
    qk_norm: bool
    experts: int
    top_k: int
    router: str           # "softmax_topk" | "topk_softmax"
    norm_topk_prob: bool
    block: str            # "mlp" | "block_sparse_moe"
    proj: Tuple[str, str, str] = field(default=("gate_proj", "up_proj", "down_proj"))  # gate, up, down

    @staticmethod
    def from_dict(c: dict, where: str = "config.json") -> "Config":
        mt = c.get("model_type")
        if mt not in SUPPORTED:
            raise ValueError(f"{where}: model_type {mt!r} is not one of {SUPPORTED}")
        hidden, heads = int(c["hidden_size"]), int(c["num_attention_heads"])
        if c.get("hidden_act", "silu") != "silu":
            raise ValueError(f"{where}: hidden_act must be silu")
        common = dict(model_type=mt, hidden=hidden, layers=int(c["num_hidden_layers"]), heads=heads,
                      kv_heads=int(c.get("num_key_value_heads") or heads), ffn=int(c["intermediate_size"]),
                      vocab=int(c["vocab_size"]), rope_scaling=c.get("rope_scaling"),
                      tied=bool(c.get("tie_word_embeddings", False)))
        if mt == "olmoe":
            # OlmoeAttention: head_dim = hidden / heads; attention_bias on q, k, v and o.
            if c.get("clip_qkv") is not None:
                raise ValueError(f"{where}: clip_qkv is not supported")
            bias = bool(c.get("attention_bias", False))
            return Config(**common, head_dim=hidden // heads, eps=float(c.get("rms_norm_eps", 1e-5)),
                          rope_theta=float(c.get("rope_theta", 10000.0)), qkv_bias=bias, o_bias=bias,
                          qk_norm=True, experts=int(c.get("num_experts", 64)),
                          top_k=int(c.get("num_experts_per_tok", 8)), router="softmax_topk",
                          norm_topk_prob=bool(c.get("norm_topk_prob", False)), block="mlp")
        if mt == "mixtral":
            # MixtralAttention: no biases; head_dim from config when given.
            return Config(**common, head_dim=int(c.get("head_dim") or hidden // heads),
                          eps=float(c.get("rms_norm_eps", 1e-5)), rope_theta=float(c.get("rope_theta", 1e6)),
                          qkv_bias=False, o_bias=False, qk_norm=False,
                          experts=int(c.get("num_local_experts", 8)), top_k=int(c.get("num_experts_per_tok", 2)),
                          router="topk_softmax", norm_topk_prob=True, block="block_sparse_moe",
                          proj=("w1", "w3", "w2"))
        router = c.get("router", "softmax_topk")
        if router not in ROUTERS:
            raise ValueError(f"{where}: router {router!r} is not one of {ROUTERS}")
        bias = bool(c.get("attention_bias", False))
        return Config(**common, head_dim=int(c.get("head_dim") or hidden // heads),
                      eps=float(c.get("rms_norm_eps", 1e-6)), rope_theta=float(c.get("rope_theta", 10000.0)),
                      qkv_bias=bias, o_bias=bias, qk_norm=bool(c.get("qk_norm", False)),
                      experts=int(c["num_experts"]), top_k=int(c["num_experts_per_tok"]), router=router,
                      norm_topk_prob=bool(c.get("norm_topk_prob", False)), block="mlp")

    @staticmethod
    def load(model_dir: str) -> "Config":
        path = os.path.join(model_dir, "config.json")
        with open(path, "r", encoding="utf-8") as f:
            return Config.from_dict(json.load(f), path)


# ----------------------------------------------------------------------------------------------
# Building blocks
# ----------------------------------------------------------------------------------------------

def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """weight * x / sqrt(mean(x^2) + eps) over the last axis (OlmoeRMSNorm / MixtralRMSNorm)."""
    return weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps))


def linear(x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor] = None) -> torch.Tensor:
    y = x @ w.T
    return y + b if b is not None else y


def swiglu_expert(x: torch.Tensor, gate: torch.Tensor, up: torch.Tensor, down: torch.Tensor) -> torch.Tensor:
    """OlmoeMLP / MixtralBlockSparseTop2MLP: down(silu(gate x) * up x), weights [F,D], [F,D], [D,F]."""
    return linear(torch.nn.functional.silu(linear(x, gate)) * linear(x, up), down)


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
        y = swiglu_expert(x[token], gate, up, down) * weights[token, slot, None]
        out.index_add_(0, token, y)
    return out, experts, logits


class Weights:
    """Checkpoint tensors by HF name as float64 torch tensors (f16/bf16 widened exactly)."""

    def __init__(self, model_dir: str = "", tensors: Optional[Dict[str, np.ndarray]] = None):
        self.where = model_dir or "in-memory weights"
        self.raw = safetensors_io.read_checkpoint(model_dir) if model_dir else {}
        self.arrays = tensors or {}
        self.cache: Dict[str, torch.Tensor] = {}

    def __call__(self, name: str) -> torch.Tensor:
        if name not in self.cache:
            if name in self.arrays:
                value = np.asarray(self.arrays[name], dtype=np.float64)
            elif name in self.raw:
                value = self.raw[name].to_float64()
            else:
                raise KeyError(f"{self.where}: no tensor {name!r}")
            self.cache[name] = torch.from_numpy(np.ascontiguousarray(value))
        return self.cache[name]

    def has(self, name: str) -> bool:
        return name in self.arrays or name in self.raw


def rope(x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """HF rotate-half RoPE on x [heads, T, d]: x cos + rotate_half(x) sin, pairs (i, i + d/2)."""
    half = x.shape[-1] // 2
    rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
    return x * cos + rotated * sin


def attention(cfg: Config, W: Weights, i: int, x: torch.Tensor, cos: torch.Tensor, sin: torch.Tensor) -> torch.Tensor:
    """Causal self-attention of layer i on the normed x [T, D] (GQA: head h reads kv head h // group)."""
    p = f"model.layers.{i}.self_attn."
    T, H, Hkv, d = x.shape[0], cfg.heads, cfg.kv_heads, cfg.head_dim
    bias = (lambda n: W(p + n + ".bias")) if cfg.qkv_bias else (lambda n: None)
    q = linear(x, W(p + "q_proj.weight"), bias("q_proj"))
    k = linear(x, W(p + "k_proj.weight"), bias("k_proj"))
    v = linear(x, W(p + "v_proj.weight"), bias("v_proj"))
    if cfg.qk_norm:
        q = rms_norm(q, W(p + "q_norm.weight"), cfg.eps)
        k = rms_norm(k, W(p + "k_norm.weight"), cfg.eps)
    q = rope(q.view(T, H, d).transpose(0, 1), cos, sin)
    k = rope(k.view(T, Hkv, d).transpose(0, 1), cos, sin)
    v = v.view(T, Hkv, d).transpose(0, 1)
    k = k.repeat_interleave(H // Hkv, dim=0)
    v = v.repeat_interleave(H // Hkv, dim=0)
    scores = q @ k.transpose(1, 2) / math.sqrt(d)
    scores = scores.masked_fill(torch.triu(torch.ones(T, T, dtype=torch.bool), 1), float("-inf"))
    out = (torch.softmax(scores, dim=-1) @ v).transpose(0, 1).reshape(T, H * d)
    return linear(out, W(p + "o_proj.weight"), W(p + "o_proj.bias") if cfg.o_bias else None)


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
    ids_t = torch.as_tensor(list(ids), dtype=torch.long)
    if ids_t.ndim != 1 or ids_t.numel() == 0:
        raise ValueError("ids must be a non-empty 1-D sequence")
    if int(ids_t.min()) < 0 or int(ids_t.max()) >= cfg.vocab:
        raise ValueError(f"token ids must be in [0, {cfg.vocab})")
    inv_freq = torch.from_numpy(llama_ref.rope_inv_freq(cfg))       # [d/2] float64
    freqs = torch.outer(torch.arange(len(ids_t), dtype=torch.float64), inv_freq)
    emb = torch.cat([freqs, freqs], dim=-1)                          # [T, d]
    cos, sin = emb.cos(), emb.sin()
    h = W("model.embed_tokens.weight")[ids_t]
    for i in range(cfg.layers):
        p = f"model.layers.{i}."
        h = h + attention(cfg, W, i, rms_norm(h, W(p + "input_layernorm.weight"), cfg.eps), cos, sin)
        router_w, experts_w = expert_weights(cfg, W, i)
        out, experts, logits = moe_block(rms_norm(h, W(p + "post_attention_layernorm.weight"), cfg.eps),
                                         router_w, experts_w, cfg)
        if trace is not None:
            trace.experts.append(experts)
            trace.logits.append(logits)
        h = h + out
    h = rms_norm(h, W("model.norm.weight"), cfg.eps)
    lm_head = W("lm_head.weight") if (not cfg.tied or W.has("lm_head.weight")) else W("model.embed_tokens.weight")
    return h @ lm_head.T


def forward(model_dir: str, ids: Sequence[int], trace: Optional[Trace] = None) -> torch.Tensor:
    return forward_loaded(Config.load(model_dir), Weights(model_dir), ids, trace)


# ----------------------------------------------------------------------------------------------
# Goldens
# ----------------------------------------------------------------------------------------------

MIN_MARGIN = 1e-3  # a routing decision closer than this to a tie could flip in f32


def golden_ids(cfg_dict: dict, count: int, seed: int) -> List[int]:
    """Same draw as make_goldens.py: ids from a seeded generator, the first is bos_token_id."""
    vocab = int(cfg_dict["vocab_size"])
    rng = np.random.default_rng(seed)
    ids = [int(t) for t in rng.integers(0, vocab, size=count)]
    bos = cfg_dict.get("bos_token_id")
    if isinstance(bos, int) and 0 <= bos < vocab:
        ids[0] = bos
    return ids


def write_goldens(model_dir: str, count: int, seed: int) -> None:
    with open(os.path.join(model_dir, "config.json"), "r", encoding="utf-8") as f:
        cfg_dict = json.load(f)
    cfg = Config.from_dict(cfg_dict)
    ids = golden_ids(cfg_dict, count, seed)
    trace = Trace()
    logits = forward_loaded(cfg, Weights(model_dir), ids, trace).numpy().astype(np.float32)
    margin = trace.margin(cfg)
    if margin < MIN_MARGIN:
        raise SystemExit(f"{model_dir}: a routing decision is {margin:.2e} from a tie; the engine's f32 "
                         f"could choose differently. Pick another seed.")
    used = sorted({int(e) for t in trace.experts for e in t.flatten()})
    with open(os.path.join(model_dir, "golden_ids.txt"), "w", encoding="utf-8", newline="\n") as f:
        f.write(",".join(str(i) for i in ids) + "\n")
    tmp = os.path.join(model_dir, "golden_logits.tmp.npy")
    np.save(tmp, logits)
    os.replace(tmp, os.path.join(model_dir, "golden_logits.npy"))
    print(f"{model_dir}: {len(ids)} ids, logits {logits.shape}, experts used {used}, "
          f"routing margin {margin:.3g}, argmax {logits.argmax(axis=1).tolist()}")


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--goldens", action="store_true", help="write golden_ids.txt + golden_logits.npy")
    p.add_argument("--count", type=int, default=12)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("args", nargs="+", help="MODEL_DIR... (--goldens) or MODEL_DIR ID,ID,...")
    a = p.parse_args(argv)
    if a.goldens:
        for d in a.args:
            write_goldens(d, a.count, a.seed)
        return 0
    if len(a.args) != 2:
        p.error("expected MODEL_DIR ID,ID,...")
    ids = [int(t) for t in a.args[1].split(",") if t.strip()]
    cfg = Config.load(a.args[0])
    trace = Trace()
    logits = forward_loaded(cfg, Weights(a.args[0]), ids, trace)
    for t, row in enumerate(logits):
        chosen = [trace.experts[l][t].tolist() for l in range(cfg.layers)]
        print(f"pos {t}: token {ids[t]} -> argmax {int(row.argmax())} max {row.max().item():+.6f} experts {chosen}")
    print(f"routing margin {trace.margin(cfg):.3g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
