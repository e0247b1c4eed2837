"""Independent numpy forward pass (float64 throughout) for HF "llama", "qwen2" and "olmo2" models.

This is the yardstick the C++ engine's logits are compared against, so it is written to be
obviously right rather than fast: one sequence, every position, full causal attention, no cache.
Stored f16/bf16 weights are widened exactly to float64, so a comparison measures only the
engine's arithmetic, not the storage rounding.

Notation follows HF transformers (modeling_llama.py, modeling_qwen2.py, modeling_olmo2.py):
  T tokens, D = hidden_size, H = num_attention_heads, Hkv = num_key_value_heads,
  d = head_dim (config "head_dim", default D / H), F = intermediate_size, V = vocab_size.

Usage:  logits = forward(model_dir, ids)      # -> np.ndarray [T, V] float64
        python3 tools/reference/llama_ref.py MODEL_DIR 1,2,3   # prints argmax and a logits digest
"""

from __future__ import annotations

import json
import math
import os
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import safetensors_io  # noqa: E402  (tools/common/safetensors_io.py)

SUPPORTED = ("llama", "qwen2", "olmo2")
QK_NORMS = ("", "full", "head")


@dataclass(kw_only=True)
class Config:
    """The Llama backbone every reference reads: this numpy pass, and the torch references of
    llama_core.py, whose model configs extend it with their own fields."""
    model_type: str
    hidden: int
    layers: int
    heads: int
    kv_heads: int
    head_dim: int
    ffn: int
    vocab: int
    eps: float
    rope_theta: float
    rope_scaling: Optional[dict] = None
    tied: bool = False
    attention_bias: bool = False   # bias on q, k and v
    o_bias: bool = False
    mlp_bias: bool = False
    # RMSNorm of q and k before RoPE: "" none, "full" over the whole projection before the split
    # into heads (OLMo-2, OLMoE: q_norm [H*d]), "head" over each head (OLMo fork of UltraMem: [d])
    qk_norm: str = ""

    def __post_init__(self) -> None:
        if self.qk_norm not in QK_NORMS:
            raise ValueError(f"qk_norm {self.qk_norm!r} is not one of {QK_NORMS}")

    @staticmethod
    def shared_fields(c: dict, *, eps: float = 1e-6, rope_theta: float = 10000.0) -> dict:
        """The fields every Llama-style config.json spells the same way (HF names), as keyword
        arguments of Config. eps and rope_theta: the model family's defaults when the file has none."""
        heads = int(c["num_attention_heads"])
        hidden = int(c["hidden_size"])
        return dict(hidden=hidden, layers=int(c["num_hidden_layers"]), heads=heads,
                    kv_heads=int(c.get("num_key_value_heads") or heads),
                    head_dim=int(c.get("head_dim") or hidden // heads), ffn=int(c["intermediate_size"]),
                    vocab=int(c["vocab_size"]), eps=float(c.get("rms_norm_eps", eps)),
                    rope_theta=float(c.get("rope_theta", rope_theta)), rope_scaling=c.get("rope_scaling"),
                    tied=bool(c.get("tie_word_embeddings", False)))

    @staticmethod
    def llama_fields(c: dict, **defaults) -> dict:
        """shared_fields with HF LlamaAttention / LlamaMLP's biases: config.attention_bias applies
        to all four attention projections, config.mlp_bias to the three MLP ones."""
        bias = bool(c.get("attention_bias", False))
        return dict(Config.shared_fields(c, **defaults), attention_bias=bias, o_bias=bias,
                    mlp_bias=bool(c.get("mlp_bias", False)))

    @staticmethod
    def from_dict(c: dict, where: str = "config.json") -> "Config":
        mt = check_model_type(c, where, SUPPORTED)
        if mt == "llama":
            return Config(model_type=mt, **Config.llama_fields(c))
        if mt == "qwen2":
            # Qwen2Attention: q/k/v always have a bias, o_proj never does.
            return Config(model_type=mt, **Config.shared_fields(c), attention_bias=True)
        # Olmo2Attention reads attention_bias for all four projections and normalises q and k over
        # the whole projection.
        bias = bool(c.get("attention_bias", False))
        return Config(model_type=mt, **Config.shared_fields(c), attention_bias=bias, o_bias=bias, qk_norm="full")

    @classmethod
    def load(cls, model_dir: str):
        """The config of MODEL_DIR/config.json, read by this class's (or subclass's) from_dict."""
        path = os.path.join(model_dir, "config.json")
        return cls.from_dict(read_json(path), path)


def read_json(path: str) -> dict:
    with open(path, "r", encoding="utf-8") as f:
        return json.load(f)


def check_model_type(c: dict, where: str, model_types: Sequence[str]) -> str:
    """c's model_type, refused (ValueError naming `where`) unless it is one of model_types."""
    mt = c.get("model_type")
    if mt not in model_types:
        raise ValueError(f"{where}: model_type {mt!r} is not one of {tuple(model_types)}")
    return mt


# ----------------------------------------------------------------------------------------------
# Building blocks
# ----------------------------------------------------------------------------------------------

def rms_norm(x: np.ndarray, weight: np.ndarray, eps: float) -> np.ndarray:
    """LlamaRMSNorm / Qwen2RMSNorm / Olmo2RMSNorm over the last axis:
         y = weight * x / sqrt(mean(x^2) + eps)
    (Zhang & Sennrich 2019, "Root Mean Square Layer Normalization"; no mean subtraction, no bias.)"""
    return weight * (x / np.sqrt(np.mean(x * x, axis=-1, keepdims=True) + eps))


def rope_inv_freq(cfg: Config) -> np.ndarray:
    """Per-pair inverse frequencies, [d/2].

    Default (RoFormer, Su et al. 2021): inv_freq[i] = 1 / theta^(2i/d), i = 0 .. d/2-1.

    rope_scaling {"rope_type": "linear", "factor": s}: inv_freq /= s (position interpolation,
    Chen et al. 2023), as HF _compute_linear_scaling_rope_parameters.

    rope_scaling {"rope_type": "llama3", factor, low_freq_factor, high_freq_factor,
    original_max_position_embeddings}: HF _compute_llama3_parameters:
        low_freq_wavelen  = old_context_len / low_freq_factor
        high_freq_wavelen = old_context_len / high_freq_factor
        wavelen = 2*pi / inv_freq
        inv_freq_llama = where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
        smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
        smoothed = (1 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
        is_medium = !(wavelen < high_freq_wavelen) and !(wavelen > low_freq_wavelen)
        inv_freq_llama = where(is_medium, smoothed, inv_freq_llama)
    (attention_factor is 1.0 for both, so cos/sin are not rescaled.)
    """
    d = cfg.head_dim
    inv_freq = 1.0 / (cfg.rope_theta ** (np.arange(0, d, 2, dtype=np.float64) / d))
    rs = cfg.rope_scaling
    if not rs:
        return inv_freq
    rope_type = rs.get("rope_type", rs.get("type", "default"))
    if rope_type == "default":
        return inv_freq
    if rope_type == "linear":
        return inv_freq / float(rs["factor"])
    if rope_type == "llama3":
        factor = float(rs["factor"])
        low_freq_factor = float(rs["low_freq_factor"])
        high_freq_factor = float(rs["high_freq_factor"])
        old_context_len = float(rs["original_max_position_embeddings"])
        low_freq_wavelen = old_context_len / low_freq_factor
        high_freq_wavelen = old_context_len / high_freq_factor
        wavelen = 2.0 * math.pi / inv_freq
        inv_freq_llama = np.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
        smooth_factor = (old_context_len / wavelen - low_freq_factor) / (high_freq_factor - low_freq_factor)
        smoothed = (1.0 - smooth_factor) * inv_freq_llama / factor + smooth_factor * inv_freq_llama
        is_medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
        return np.where(is_medium, smoothed, inv_freq_llama)
    raise ValueError(f"rope_scaling type {rope_type!r} is not supported (default, linear, llama3)")


def rope_cos_sin(cfg: Config, positions: np.ndarray):
    """cos, sin of shape [T, d]: freqs = pos * inv_freq; emb = cat(freqs, freqs) (HF layout)."""
    freqs = np.outer(positions.astype(np.float64), rope_inv_freq(cfg))   # [T, d/2]
    emb = np.concatenate([freqs, freqs], axis=-1)                        # [T, d]
    return np.cos(emb), np.sin(emb)


def rotate_half(x: np.ndarray) -> np.ndarray:
    """HF rotate_half: x = [x1, x2] (halves of the last axis) -> [-x2, x1]."""
    half = x.shape[-1] // 2
    return np.concatenate([-x[..., half:], x[..., :half]], axis=-1)


def apply_rope(x: np.ndarray, cos: np.ndarray, sin: np.ndarray) -> np.ndarray:
    """x: [heads, T, d]. apply_rotary_pos_emb: x_embed = x * cos + rotate_half(x) * sin.
    Pairs are (i, i + d/2), not adjacent elements (the HF "rotate-half" convention)."""
    return x * cos[None] + rotate_half(x) * sin[None]


def linear(x: np.ndarray, w: np.ndarray, b: Optional[np.ndarray] = None) -> np.ndarray:
    """nn.Linear: y = x W^T + b, W stored [out_features, in_features]."""
    y = x @ w.T
    return y + b if b is not None else y


def silu(x: np.ndarray) -> np.ndarray:
    return x / (1.0 + np.exp(-x))


# ----------------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------------

class Weights:
    """Tensors by HF name, widened to float64 on first use: read from a model folder, or given as
    arrays (tensors=...) for hand-made cases."""

    def __init__(self, model_dir: str = "", tensors: Optional[Dict[str, np.ndarray]] = None):
        self.raw = safetensors_io.read_checkpoint(model_dir) if model_dir else {}
        self.arrays = dict(tensors or {})
        self.cache: Dict[str, np.ndarray] = {}
        self.model_dir = model_dir or "in-memory weights"

    def __call__(self, name: str) -> np.ndarray:
        if name not in self.cache:
            if name in self.arrays:
                self.cache[name] = np.asarray(self.arrays[name], dtype=np.float64)
            elif name in self.raw:
                self.cache[name] = self.raw[name].to_float64()
            else:
                raise KeyError(f"{self.model_dir}: checkpoint has no tensor {name!r}")
        return self.cache[name]

    def has(self, name: str) -> bool:
        return name in self.arrays or name in self.raw

    def optional(self, name: str, present: bool) -> Optional[np.ndarray]:
        return self(name) if present else None


def attention(cfg: Config, W: Weights, i: int, x: np.ndarray, cos, sin) -> np.ndarray:
    """Self-attention of layer i on x [T, D] (already normed for llama/qwen2; raw for olmo2).

        q = x Wq^T (+bq)   [T, H*d]      k = x Wk^T (+bk)  [T, Hkv*d]     v = x Wv^T (+bv)
        olmo2 only: q = q_norm(q), k = k_norm(k)   -- RMSNorm over the whole H*d / Hkv*d row,
                                                       before splitting into heads
        split into heads, q, k = RoPE(q), RoPE(k)
        GQA: query head h reads kv head h // (H / Hkv)   (HF repeat_kv)
        scores = q k^T / sqrt(d) + causal mask (-inf above the diagonal)
        out = softmax(scores) v, heads concatenated -> o_proj (+bo)
    """
    p = f"model.layers.{i}.self_attn."
    T = x.shape[0]
    H, Hkv, d = cfg.heads, cfg.kv_heads, cfg.head_dim
    q = linear(x, W(p + "q_proj.weight"), W.optional(p + "q_proj.bias", cfg.attention_bias))
    k = linear(x, W(p + "k_proj.weight"), W.optional(p + "k_proj.bias", cfg.attention_bias))
    v = linear(x, W(p + "v_proj.weight"), W.optional(p + "v_proj.bias", cfg.attention_bias))
    if cfg.qk_norm == "full":
        q = rms_norm(q, W(p + "q_norm.weight"), cfg.eps)
        k = rms_norm(k, W(p + "k_norm.weight"), cfg.eps)
    q = q.reshape(T, H, d).transpose(1, 0, 2)      # [H, T, d]
    k = k.reshape(T, Hkv, d).transpose(1, 0, 2)    # [Hkv, T, d]
    v = v.reshape(T, Hkv, d).transpose(1, 0, 2)
    q = apply_rope(q, cos, sin)
    k = apply_rope(k, cos, sin)
    group = H // Hkv
    k = np.repeat(k, group, axis=0)                # repeat_kv: [H, T, d]
    v = np.repeat(v, group, axis=0)
    scores = q @ k.transpose(0, 2, 1) / math.sqrt(d)            # [H, T, T]
    scores = scores + np.triu(np.full((T, T), -np.inf), k=1)[None]
    scores = scores - scores.max(axis=-1, keepdims=True)
    probs = np.exp(scores)
    probs /= probs.sum(axis=-1, keepdims=True)
    out = (probs @ v).transpose(1, 0, 2).reshape(T, H * d)      # [T, H*d]
    return linear(out, W(p + "o_proj.weight"), W.optional(p + "o_proj.bias", cfg.o_bias))


def mlp(cfg: Config, W: Weights, i: int, x: np.ndarray) -> np.ndarray:
    """SwiGLU (Shazeer 2020): down_proj( silu(gate_proj(x)) * up_proj(x) )."""
    p = f"model.layers.{i}.mlp."
    gate = linear(x, W(p + "gate_proj.weight"), W.optional(p + "gate_proj.bias", cfg.mlp_bias))
    up = linear(x, W(p + "up_proj.weight"), W.optional(p + "up_proj.bias", cfg.mlp_bias))
    return linear(silu(gate) * up, W(p + "down_proj.weight"), W.optional(p + "down_proj.bias", cfg.mlp_bias))


def forward_loaded(cfg: Config, W: Weights, ids: Sequence[int], attention_fn=attention) -> np.ndarray:
    """Logits [T, V] for token ids at positions 0..T-1.

    llama / qwen2 (pre-norm):
        h   = x + attn(input_layernorm(x))
        out = h + mlp(post_attention_layernorm(h))
    olmo2 (norm after each sublayer, no input norm):
        h   = x + post_attention_layernorm(attn(x))
        out = h + post_feedforward_layernorm(mlp(h))
    then logits = norm(x) @ lm_head^T, lm_head = embed_tokens when tie_word_embeddings.
    """
    ids = np.asarray(ids, dtype=np.int64)
    if ids.ndim != 1 or ids.size == 0:
        raise ValueError("ids must be a non-empty 1-D sequence")
    if ids.min() < 0 or ids.max() >= cfg.vocab:
        raise ValueError(f"token ids must be in [0, {cfg.vocab})")
    embed = W("model.embed_tokens.weight")
    x = embed[ids]                                              # [T, D]
    cos, sin = rope_cos_sin(cfg, np.arange(len(ids)))
    for i in range(cfg.layers):
        p = f"model.layers.{i}."
        if cfg.model_type == "olmo2":
            h = x + rms_norm(attention_fn(cfg, W, i, x, cos, sin), W(p + "post_attention_layernorm.weight"), cfg.eps)
            x = h + rms_norm(mlp(cfg, W, i, h), W(p + "post_feedforward_layernorm.weight"), cfg.eps)
        else:
            h = x + attention_fn(cfg, W, i, rms_norm(x, W(p + "input_layernorm.weight"), cfg.eps), cos, sin)
            x = h + mlp(cfg, W, i, rms_norm(h, W(p + "post_attention_layernorm.weight"), cfg.eps))
    x = rms_norm(x, W("model.norm.weight"), cfg.eps)
    lm_head = embed if cfg.tied else W("lm_head.weight")
    return x @ lm_head.T


def forward(model_dir: str, ids: Sequence[int]) -> np.ndarray:
    """logits [T, vocab] float64 for one sequence, every position."""
    return forward_loaded(Config.load(model_dir), Weights(model_dir), ids)


def show(model_dir: str, ids: List[int]) -> None:
    logits = forward(model_dir, ids)
    for t, row in enumerate(logits):
        print(f"pos {t}: token {ids[t]} -> argmax {int(row.argmax())} max {row.max():+.6f} "
              f"mean {row.mean():+.6f} std {row.std():.6f}")


if __name__ == "__main__":
    import reference_cli  # noqa: E402  (tools/reference/reference_cli.py, next to this file)
    raise SystemExit(reference_cli.run(sys.argv[1:], __doc__, show))
