"""The Llama decoder in torch (CPU, float64) that every torch reference is built on.

The memory-layer, MoE and Memory3 references (ultramem_ref.py, midus_ref.py, memory_plus_ref.py,
moe_ref.py, memory3.py) all sit on a Llama-style backbone. Its pieces live here once, so that each
reference file holds only what its paper adds. The numpy llama_ref.py stays apart on purpose: it is
the independent second opinion these torch pieces are tested against. From it this module takes
only what is not arithmetic on activations: the config reader (llama_ref.Config, which the
references' configs extend), the weight reader (exact f16/bf16 widening) and the RoPE frequencies
(the tested HF rope_scaling formulas).

Layouts: activations [T, D]; per-head tensors [heads, T, d]; weights [out, in] as nn.Linear.
Every formula below fixes the order of its floating-point operations, and the Memory3 goldens
record float64 results of them: change one only together with the goldens.

  rms_norm(x, g)    g * (x / sqrt(mean(x^2) + eps))            (Zhang & Sennrich 2019)
  silu(x)           x / (1 + exp(-x))
  swiglu            down(silu(gate x) * up x)                   (Shazeer 2020)
  Rope              HF rotate-half RoPE: x cos + rotate_half(x) sin, pairs (i, i + d/2)
  attend            softmax(q k^T / sqrt(d), -inf where closed) v; query head h reads kv head
                    h // (H / Hkv) (GQA, HF repeat_kv)
  decoder_layer     pre-norm: h = h + attn(input_layernorm(h)); h + mlp(post_attention_layernorm(h))
  run_layers        embed, the layers, final norm, lm_head (the embeddings when tied and the
                    checkpoint has no lm_head.weight)
"""

from __future__ import annotations

import math
import os
import sys
from typing import Callable, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import llama_ref  # noqa: E402  (Config, the numpy weight reader, rope_inv_freq)

F64 = torch.float64
Config = llama_ref.Config

# Tensor names of the attention and MLP projections: HF's, and Meta lingua's (memory_plus_ref.py).
HF_ATTENTION = ("q_proj", "k_proj", "v_proj", "o_proj")
HF_MLP = ("gate_proj", "up_proj", "down_proj")


class Weights:
    """Tensors by name as float64 torch tensors, read and widened by llama_ref.Weights (which
    shares its arrays with them): from a model folder, an existing llama_ref.Weights, or arrays."""

    def __init__(self, source: Union[str, llama_ref.Weights] = "",
                 tensors: Optional[Dict[str, np.ndarray]] = None):
        self.np = source if isinstance(source, llama_ref.Weights) else llama_ref.Weights(source, tensors)
        self.cache: Dict[str, torch.Tensor] = {}

    def __call__(self, name: str) -> torch.Tensor:
        if name not in self.cache:
            self.cache[name] = torch.from_numpy(np.ascontiguousarray(self.np(name), dtype=np.float64))
        return self.cache[name]

    def has(self, name: str) -> bool:
        return name in self.cache or self.np.has(name)

    def optional(self, name: str, present: bool) -> Optional[torch.Tensor]:
        return self(name) if present else None

    def indices(self, name: str) -> torch.Tensor:
        """An integer tensor (I32 in the file) as int64, e.g. a permutation."""
        if name not in self.np.raw:
            raise KeyError(f"{self.np.model_dir}: checkpoint has no tensor {name!r}")
        return torch.from_numpy(np.array(self.np.raw[name].data, dtype=np.int64))

    def linear(self, name: str, x: torch.Tensor, bias: bool = False) -> torch.Tensor:
        """nn.Linear `name` on x: x name.weight^T (+ name.bias)."""
        return linear(x, self(name + ".weight"), self.optional(name + ".bias", bias))


# ----------------------------------------------------------------------------------------------
# Building blocks
# ----------------------------------------------------------------------------------------------

def rms_norm(x: torch.Tensor, weight: torch.Tensor, eps: float) -> torch.Tensor:
    """RMSNorm over the last axis: weight * (x / sqrt(mean(x^2) + eps)); no mean, no bias."""
    return weight * (x / torch.sqrt((x * x).mean(dim=-1, keepdim=True) + eps))


def linear(x: torch.Tensor, w: torch.Tensor, b: Optional[torch.Tensor] = None) -> torch.Tensor:
    """nn.Linear: x W^T + b, W stored [out_features, in_features]."""
    y = x @ w.T
    return y + b if b is not None else y


def silu(x: torch.Tensor) -> torch.Tensor:
    return x / (1.0 + torch.exp(-x))


def swiglu(x: torch.Tensor, gate: torch.Tensor, up: torch.Tensor, down: torch.Tensor,
           biases: Sequence[Optional[torch.Tensor]] = (None, None, None)) -> torch.Tensor:
    """down(silu(gate x) * up x) with weights [F, D], [F, D], [D, F] and optional biases."""
    return linear(silu(linear(x, gate, biases[0])) * linear(x, up, biases[1]), down, biases[2])


def mlp(cfg: Config, W: Weights, prefix: str, x: torch.Tensor, names: Sequence[str] = HF_MLP) -> torch.Tensor:
    """The SwiGLU MLP whose projections are named prefix + names (gate, up, down); biases when
    cfg.mlp_bias."""
    weights = [W(prefix + n + ".weight") for n in names]
    return swiglu(x, *weights, [W.optional(prefix + n + ".bias", cfg.mlp_bias) for n in names])


class Rope:
    """HF rotate-half RoPE at the given positions (any, also negative): tables cos, sin [T, d]
    with freqs = pos * inv_freq and emb = cat(freqs, freqs); applied to x [heads, T, d]."""

    def __init__(self, cfg: Config, positions: torch.Tensor):
        inv_freq = torch.from_numpy(llama_ref.rope_inv_freq(cfg))
        freqs = positions.to(F64)[:, None] * inv_freq[None, :]
        emb = torch.cat([freqs, freqs], dim=-1)
        self.cos, self.sin = emb.cos(), emb.sin()

    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        half = x.shape[-1] // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], dim=-1)
        return x * self.cos[None] + rotated * self.sin[None]


Rotation = Callable[[torch.Tensor], torch.Tensor]   # RoPE of q or k [heads, T, d] at their positions


def project_qkv(cfg: Config, W: Weights, prefix: str, x: torch.Tensor, names: Sequence[str] = HF_ATTENTION):
    """Pre-RoPE q [H, T, d], k [Hkv, T, d], v [Hkv, T, d] of attention input x [T, D]: the
    projections prefix + names[0..2] (biases when cfg.attention_bias), q and k RMS-normed as
    cfg.qk_norm says (gains prefix + q_norm / k_norm)."""
    T = x.shape[0]
    q = W.linear(prefix + names[0], x, cfg.attention_bias)
    k = W.linear(prefix + names[1], x, cfg.attention_bias)
    v = W.linear(prefix + names[2], x, cfg.attention_bias)
    if cfg.qk_norm == "full":
        q = rms_norm(q, W(prefix + "q_norm.weight"), cfg.eps)
        k = rms_norm(k, W(prefix + "k_norm.weight"), cfg.eps)
    q = q.reshape(T, cfg.heads, cfg.head_dim)
    k = k.reshape(T, cfg.kv_heads, cfg.head_dim)
    if cfg.qk_norm == "head":
        q = rms_norm(q, W(prefix + "q_norm.weight"), cfg.eps)
        k = rms_norm(k, W(prefix + "k_norm.weight"), cfg.eps)
    return q.transpose(0, 1), k.transpose(0, 1), v.reshape(T, cfg.kv_heads, cfg.head_dim).transpose(0, 1)


def causal_mask(T: int) -> torch.Tensor:
    """[T, T] bool: query t may read keys 0..t."""
    return torch.tril(torch.ones(T, T, dtype=torch.bool))


def attend(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, open_: torch.Tensor) -> torch.Tensor:
    """softmax(q k^T / sqrt(d), -inf where open_ is False) v, heads concatenated: [T, H*d].
    q [H, T, d] post-RoPE, k, v [Hkv, S, d]; open_ [T, S] for every head or [Hkv, T, S] per kv head.
    GQA: query head h reads kv head h // (H / Hkv)."""
    H, T, d = q.shape
    group = H // k.shape[0]
    k = k.repeat_interleave(group, dim=0)
    v = v.repeat_interleave(group, dim=0)
    if open_.dim() == 3:
        open_ = open_.repeat_interleave(group, dim=0)
    s = (q @ k.transpose(1, 2) / math.sqrt(d)).masked_fill(~open_, -math.inf)
    p = torch.softmax(s, dim=-1)
    return (p @ v).transpose(0, 1).reshape(T, H * d)


def attention_heads(cfg: Config, W: Weights, prefix: str, x: torch.Tensor, rope: Rotation,
                    names: Sequence[str] = HF_ATTENTION) -> torch.Tensor:
    """Causal GQA self-attention of x [T, D] before the output projection: [T, H*d]."""
    q, k, v = project_qkv(cfg, W, prefix, x, names)
    return attend(rope(q), rope(k), v, causal_mask(x.shape[0]))


def self_attention(cfg: Config, W: Weights, prefix: str, x: torch.Tensor, rope: Rotation,
                   names: Sequence[str] = HF_ATTENTION) -> torch.Tensor:
    """attention_heads followed by the output projection prefix + names[3] (bias when cfg.o_bias)."""
    return W.linear(prefix + names[3], attention_heads(cfg, W, prefix, x, rope, names), cfg.o_bias)


# ----------------------------------------------------------------------------------------------
# The decoder
# ----------------------------------------------------------------------------------------------

Attention = Callable[[int, torch.Tensor, Rotation], torch.Tensor]   # (layer, normed h, rope) -> [T, D]
FeedForward = Callable[[int, torch.Tensor], torch.Tensor]           # (layer, normed h) -> [T, D]
Layer = Callable[[int, torch.Tensor, Rotation], torch.Tensor]       # (layer, h, rope) -> h


def layer_attention(cfg: Config, W: Weights, i: int, x: torch.Tensor, rope: Rotation) -> torch.Tensor:
    return self_attention(cfg, W, f"model.layers.{i}.self_attn.", x, rope)


def layer_mlp(cfg: Config, W: Weights, i: int, x: torch.Tensor) -> torch.Tensor:
    return mlp(cfg, W, f"model.layers.{i}.mlp.", x)


def decoder_layer(cfg: Config, W: Weights, i: int, h: torch.Tensor, rope: Rotation,
                  attention: Optional[Attention] = None, feed_forward: Optional[FeedForward] = None) -> torch.Tensor:
    """Pre-norm layer i: h = h + attention(input_layernorm(h)); h + feed_forward(post_attention_layernorm(h)).
    attention / feed_forward default to the layer's own self-attention and SwiGLU MLP."""
    p = f"model.layers.{i}."
    x = rms_norm(h, W(p + "input_layernorm.weight"), cfg.eps)
    h = h + (attention(i, x, rope) if attention else layer_attention(cfg, W, i, x, rope))
    x = rms_norm(h, W(p + "post_attention_layernorm.weight"), cfg.eps)
    return h + (feed_forward(i, x) if feed_forward else layer_mlp(cfg, W, i, x))


def token_tensor(cfg: Config, ids: Sequence[int]) -> torch.Tensor:
    ids_t = torch.as_tensor(list(ids), dtype=torch.long)
    if ids_t.ndim != 1 or ids_t.numel() == 0 or int(ids_t.min()) < 0 or int(ids_t.max()) >= cfg.vocab:
        raise ValueError(f"ids must be a non-empty sequence of ids in [0, {cfg.vocab})")
    return ids_t


def output_logits(cfg: Config, W: Weights, h: torch.Tensor, embed: str = "model.embed_tokens.weight",
                  norm: str = "model.norm.weight", head: str = "lm_head.weight") -> torch.Tensor:
    """norm(h) head^T; head = the embeddings when tied and the checkpoint has no head of its own."""
    lm_head = W(embed) if cfg.tied and not W.has(head) else W(head)
    return rms_norm(h, W(norm), cfg.eps) @ lm_head.T


def run_layers(cfg: Config, W: Weights, ids: Sequence[int], positions: Optional[torch.Tensor] = None,
               attention: Optional[Attention] = None, feed_forward: Optional[FeedForward] = None,
               layer: Optional[Layer] = None) -> Tuple[torch.Tensor, List[torch.Tensor]]:
    """The whole decoder on ids at positions (default 0..T-1). Returns (logits [T, V], the residual
    stream [T, D] entering each layer 0..L-1 and leaving the last: L + 1 tensors, the first the
    token embeddings). A model changes the attention or the feed-forward of decoder_layer, or
    gives its own layer (which may call decoder_layer)."""
    ids_t = token_tensor(cfg, ids)
    rope = Rope(cfg, torch.arange(len(ids_t)) if positions is None else positions)
    h = W("model.embed_tokens.weight")[ids_t]
    states = [h]
    for i in range(cfg.layers):
        h = layer(i, h, rope) if layer else decoder_layer(cfg, W, i, h, rope, attention, feed_forward)
        states.append(h)
    return output_logits(cfg, W, h), states
