#!/usr/bin/python3
"""Seeded generator of random Hugging Face checkpoints (llama, qwen2, olmo2).

The weights are random but deterministic: each tensor draws from its own generator seeded with
(--seed, crc32(tensor name)), so a tensor's values do not depend on the sharding or on which other
tensors exist. Tensors are generated and written in row chunks straight into the file (the header
with all offsets goes first), so even the 2.5 GB `--preset llama-3.2-1b` needs only tens of MB of
RAM.

Initialisation keeps activations O(1) through any number of layers, so the models exercise real
arithmetic (no saturated softmax, no vanishing residual):
  q/k/v/gate/up_proj  N(0, 1/D)            (fan_in D = hidden_size)
  o_proj              N(0, 1/(H*d))        down_proj N(0, 1/F)
  biases              N(0, 0.5^2)          (large enough to matter against O(1) activations)
  norm weights        1 + N(0, 0.1^2)      (close to 1 but not 1, so a skipped norm is caught)
  embed_tokens        N(0, 1) untied; N(0, 4/D) tied (so tied logits stay ~N(0, 4) too)
  lm_head             N(0, 4/D)            (final-normed rows of rms ~1 give logits of std ~2)

Examples:
  make_checkpoint.py --arch llama --hidden 48 --layers 2 --heads 4 --kv-heads 2 --ffn 64 \
      --vocab 320 --seed 1 --out tests/data/models/llama-tiny-f32
  make_checkpoint.py --preset llama-3.2-1b --out bench-models/llama-3.2-1b-random
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import zlib
from typing import Dict, List

import numpy as np

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOOLS, "common"))
import safetensors_io as st  # noqa: E402

CHUNK_ELEMENTS = 1 << 23  # 8M elements (32 MB of f32) per generated chunk bounds the RAM use

# Benchmark shapes. "small" uses ffn 2816 (= 2.75 x hidden, the Llama "8/3 D rounded to 256").
PRESETS: Dict[str, dict] = {
    "llama-3.2-1b": dict(arch="llama", hidden=2048, layers=16, heads=32, kv_heads=8, head_dim=64,
                         ffn=8192, vocab=128256, dtype="f16", tied=True, rope_scaling="llama3",
                         rope_factor=32.0, rope_theta=500000.0, max_pos=131072, eps=1e-5,
                         bos=128000, eos=128001),
    "small": dict(arch="llama", hidden=1024, layers=8, heads=16, kv_heads=4, head_dim=64,
                  ffn=2816, vocab=32000, dtype="f16", tied=False, rope_scaling="none",
                  rope_theta=10000.0, max_pos=4096, eps=1e-5, bos=1, eos=2),
}

ARCH_CLASS = {"llama": "LlamaForCausalLM", "qwen2": "Qwen2ForCausalLM", "olmo2": "Olmo2ForCausalLM"}
DEFAULT_THETA = {"llama": 10000.0, "qwen2": 1000000.0, "olmo2": 500000.0}
DEFAULT_EPS = {"llama": 1e-5, "qwen2": 1e-6, "olmo2": 1e-6}
TORCH_DTYPE = {"f32": "float32", "f16": "float16", "bf16": "bfloat16"}


def parse_args(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--preset", choices=sorted(PRESETS), help="benchmark shape; other flags override it")
    p.add_argument("--arch", choices=sorted(ARCH_CLASS))
    p.add_argument("--hidden", type=int)
    p.add_argument("--layers", type=int)
    p.add_argument("--heads", type=int)
    p.add_argument("--kv-heads", type=int, dest="kv_heads")
    p.add_argument("--head-dim", type=int, dest="head_dim", help="default hidden/heads")
    p.add_argument("--ffn", type=int, help="intermediate_size")
    p.add_argument("--vocab", type=int)
    p.add_argument("--dtype", choices=["f32", "f16", "bf16"])
    p.add_argument("--tied", action="store_true", default=None, help="tie_word_embeddings")
    p.add_argument("--rope-scaling", choices=["llama3", "linear", "none"], dest="rope_scaling")
    p.add_argument("--rope-factor", type=float, dest="rope_factor", help="scaling factor (llama3: 32, linear: 2)")
    p.add_argument("--rope-original-max", type=int, dest="rope_original_max", default=8192,
                   help="llama3 original_max_position_embeddings (default 8192)")
    p.add_argument("--rope-theta", type=float, dest="rope_theta")
    p.add_argument("--max-pos", type=int, dest="max_pos", help="max_position_embeddings")
    p.add_argument("--eps", type=float, help="rms_norm_eps")
    p.add_argument("--attention-bias", action="store_true", default=None, dest="attention_bias",
                   help="llama only: bias on q/k/v/o (qwen2 always has q/k/v bias)")
    p.add_argument("--mlp-bias", action="store_true", default=None, dest="mlp_bias", help="llama only")
    p.add_argument("--bos", type=int)
    p.add_argument("--eos", type=int)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shards", type=int, default=0, help="split into N shards with an index")
    p.add_argument("--shard-bytes", type=int, default=0, dest="shard_bytes", help="max bytes per shard")
    p.add_argument("--out", required=True, help="model folder to create")
    a = p.parse_args(argv)

    defaults = dict(arch="llama", dtype="f32", tied=False, rope_scaling="none", bos=1, eos=2,
                    max_pos=2048, attention_bias=False, mlp_bias=False)
    base = dict(PRESETS[a.preset]) if a.preset else {}
    for key, value in list(vars(a).items()):
        if value is None:
            setattr(a, key, base.get(key, defaults.get(key)))
    for key in ("hidden", "layers", "heads", "ffn", "vocab"):
        if getattr(a, key) is None:
            p.error(f"--{key} is required without --preset")
        if getattr(a, key) <= 0:
            p.error(f"--{key} must be positive")
    a.kv_heads = a.kv_heads or a.heads
    if a.heads % a.kv_heads:
        p.error(f"--heads {a.heads} must be a multiple of --kv-heads {a.kv_heads}")
    if a.head_dim is None:
        if a.hidden % a.heads:
            p.error(f"--hidden {a.hidden} is not divisible by --heads {a.heads}; give --head-dim")
        a.head_dim = a.hidden // a.heads
    if a.head_dim % 2:
        p.error("--head-dim must be even (RoPE rotates pairs)")
    if a.arch != "llama" and a.head_dim * a.heads != a.hidden:
        p.error(f"{a.arch} derives head_dim from hidden/heads; --head-dim must equal it")
    if a.arch != "llama" and (a.attention_bias or a.mlp_bias):
        p.error("--attention-bias/--mlp-bias apply to llama only")
    if a.rope_theta is None:  # Llama 3 models use theta 500000 with their rope scaling
        a.rope_theta = 500000.0 if a.rope_scaling == "llama3" else DEFAULT_THETA[a.arch]
    a.eps = a.eps or DEFAULT_EPS[a.arch]
    if a.rope_factor is None:
        a.rope_factor = {"llama3": 32.0, "linear": 2.0}.get(a.rope_scaling)
    return a


def backbone_config(a: argparse.Namespace, architecture: str) -> dict:
    """The config.json fields of a Llama backbone in HF's order, from the shape flags every seeded
    generator shares (--arch --hidden --ffn --layers --heads --kv-heads --vocab --max-pos --eps
    --rope-theta --tied); the generator adds its own fields after them."""
    return {
        "architectures": [architecture],
        "model_type": a.arch,
        "hidden_size": a.hidden,
        "intermediate_size": a.ffn,
        "num_hidden_layers": a.layers,
        "num_attention_heads": a.heads,
        "num_key_value_heads": a.kv_heads,
        "vocab_size": a.vocab,
        "max_position_embeddings": a.max_pos,
        "rms_norm_eps": a.eps,
        "rope_theta": a.rope_theta,
        "rope_scaling": None,
        "tie_word_embeddings": bool(a.tied),
        "hidden_act": "silu",
    }


def make_config(a: argparse.Namespace) -> dict:
    cfg = {
        **backbone_config(a, ARCH_CLASS[a.arch]),
        "torch_dtype": TORCH_DTYPE[a.dtype],
        "bos_token_id": a.bos,
        "eos_token_id": a.eos,
        "initializer_range": 0.02,
        "attention_dropout": 0.0,
        "use_cache": True,
        "transformers_version": "4.46.0",
        "mnemo_generator": {"tool": "tools/test_models/make_checkpoint.py", "seed": a.seed,
                            "note": "random untrained weights"},
    }
    if a.arch == "llama":
        cfg.update(head_dim=a.head_dim, attention_bias=bool(a.attention_bias),
                   mlp_bias=bool(a.mlp_bias), pretraining_tp=1)
    elif a.arch == "qwen2":
        cfg.update(use_sliding_window=False, sliding_window=None, max_window_layers=a.layers)
    elif a.arch == "olmo2":
        cfg.update(attention_bias=False, pad_token_id=None)
    if a.rope_scaling == "llama3":
        cfg["rope_scaling"] = {"rope_type": "llama3", "factor": a.rope_factor, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0,
                               "original_max_position_embeddings": a.rope_original_max}
    elif a.rope_scaling == "linear":
        cfg["rope_scaling"] = {"rope_type": "linear", "factor": a.rope_factor}
    return cfg


def tensor_plan(a: argparse.Namespace):
    """[(TensorSpec, kind, std)] in file order. kind: normal | norm (1 + std*N)."""
    D, H, Hkv, d, F, V = a.hidden, a.heads, a.kv_heads, a.head_dim, a.ffn, a.vocab
    dt = st.canonical_dtype(a.dtype)
    plan = []

    def add(name, shape, kind, std):
        plan.append((st.TensorSpec(name, dt, tuple(shape)), kind, std))

    add("model.embed_tokens.weight", (V, D), "normal", 2.0 / np.sqrt(D) if a.tied else 1.0)
    qkv_bias = a.arch == "qwen2" or a.attention_bias
    for i in range(a.layers):
        p = f"model.layers.{i}."
        if a.arch != "olmo2":
            add(p + "input_layernorm.weight", (D,), "norm", 0.1)
        add(p + "self_attn.q_proj.weight", (H * d, D), "normal", 1.0 / np.sqrt(D))
        add(p + "self_attn.k_proj.weight", (Hkv * d, D), "normal", 1.0 / np.sqrt(D))
        add(p + "self_attn.v_proj.weight", (Hkv * d, D), "normal", 1.0 / np.sqrt(D))
        if qkv_bias:
            add(p + "self_attn.q_proj.bias", (H * d,), "normal", 0.5)
            add(p + "self_attn.k_proj.bias", (Hkv * d,), "normal", 0.5)
            add(p + "self_attn.v_proj.bias", (Hkv * d,), "normal", 0.5)
        plan_attention_output(add, p, D, H * d, Hkv * d, qk_norm=a.arch == "olmo2", o_bias=a.attention_bias)
        add(p + "mlp.gate_proj.weight", (F, D), "normal", 1.0 / np.sqrt(D))
        add(p + "mlp.up_proj.weight", (F, D), "normal", 1.0 / np.sqrt(D))
        add(p + "mlp.down_proj.weight", (D, F), "normal", 1.0 / np.sqrt(F))
        if a.mlp_bias:
            add(p + "mlp.gate_proj.bias", (F,), "normal", 0.5)
            add(p + "mlp.up_proj.bias", (F,), "normal", 0.5)
            add(p + "mlp.down_proj.bias", (D,), "normal", 0.5)
        if a.arch == "olmo2":
            add(p + "post_feedforward_layernorm.weight", (D,), "norm", 0.1)
    add("model.norm.weight", (D,), "norm", 0.1)
    if not a.tied:
        add("lm_head.weight", (V, D), "normal", 2.0 / np.sqrt(D))
    return plan


def plan_attention_output(add, p: str, D: int, q_rows: int, kv_rows: int, qk_norm: bool, o_bias: bool) -> None:
    """The plan entries of layer prefix p that follow its q/k/v projections, in the order every
    seeded generator writes them: q_norm [q_rows] / k_norm [kv_rows] when qk_norm (over the whole
    projections), o_proj [D, q_rows] and its bias when o_bias, post_attention_layernorm [D].
    add(name, shape, kind, std) appends to the plan (tensor_plan)."""
    if qk_norm:
        add(p + "self_attn.q_norm.weight", (q_rows,), "norm", 0.1)
        add(p + "self_attn.k_norm.weight", (kv_rows,), "norm", 0.1)
    add(p + "self_attn.o_proj.weight", (D, q_rows), "normal", 1.0 / np.sqrt(q_rows))
    if o_bias:
        add(p + "self_attn.o_proj.bias", (D,), "normal", 0.5)
    add(p + "post_attention_layernorm.weight", (D,), "norm", 0.1)


def tensor_rng(seed: int, name: str) -> np.random.Generator:
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(zlib.crc32(name.encode()),)))


def write_planned(out: str, plan, seed: int, config: dict, generator: str, shard_bytes: int = 0,
                  shards: int = 0) -> List[str]:
    """Write the (TensorSpec, kind, std) plan as a checkpoint plus config.json. Each tensor draws
    from its own generator (tensor_rng), in row chunks that bound the RAM (the draw does not depend
    on the chunking): kind "normal" is N(0, std^2), "norm" is 1 + N(0, std^2). Shared by the
    other seeded generators (tools/test_models/make_moe_checkpoint.py)."""
    info = {spec.name: (kind, std) for spec, kind, std in plan}

    def produce(spec: st.TensorSpec, w: st.StreamingWriter) -> None:
        kind, std = info[spec.name]
        rng = tensor_rng(seed, spec.name)
        rows = spec.shape[0]
        cols = int(np.prod(spec.shape[1:], dtype=np.int64)) if len(spec.shape) > 1 else 1
        step = max(1, CHUNK_ELEMENTS // cols)
        for r0 in range(0, rows, step):
            n = min(step, rows - r0)
            x = rng.standard_normal((n, cols) if len(spec.shape) > 1 else (n,), dtype=np.float32)
            x *= np.float32(std)
            if kind == "norm":
                x += np.float32(1.0)
            w.write_chunk(spec.name, st.encode(x, spec.dtype))
        w.end_tensor(spec.name)

    os.makedirs(out, exist_ok=True)
    files = st.write_checkpoint(out, [s for s, _, _ in plan], produce, shard_bytes=shard_bytes, shards=shards,
                                metadata={"generator": generator, "seed": str(seed)})
    st.write_config(out, config)
    return files


def generate(a: argparse.Namespace) -> List[str]:
    return write_planned(a.out, tensor_plan(a), a.seed, make_config(a),
                         "mnemo tools/test_models/make_checkpoint.py", shard_bytes=a.shard_bytes, shards=a.shards)


def main(argv: List[str]) -> int:
    a = parse_args(argv)
    t0 = time.time()
    files = generate(a)
    total = sum(os.path.getsize(f) for f in files)
    n_params = sum(int(np.prod(s.shape)) for s, _, _ in tensor_plan(a))
    print(f"{a.out}: {a.arch} {n_params:,} params, {len(files)} file(s), {total:,} bytes, "
          f"{time.time() - t0:.1f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
