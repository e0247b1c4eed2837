#!/usr/bin/python3
"""Seeded generator of random mixture-of-experts checkpoints in the Hugging Face layout.

  --arch olmoe    OlmoeForCausalLM: q_norm/k_norm, router "mlp.gate.weight",
                  experts "mlp.experts.{e}.{gate,up,down}_proj.weight"
  --arch mixtral  MixtralForCausalLM: router "block_sparse_moe.gate.weight",
                  experts "block_sparse_moe.experts.{e}.w1/w3/w2.weight" (gate/up/down)
  --arch moe      Mnemo's generic type: Llama attention (optionally --attention-bias, --qk-norm),
                  OLMoE tensor names, "router": --router softmax_topk | topk_softmax

Each tensor draws from its own generator seeded with (--seed, crc32(name)). Initialisation keeps
activations O(1) (as tools/test_models/make_checkpoint.py): projections and the router N(0, 1/fan_in), so the
router logits are ~N(0, 1) and the routing is spread over the experts; norm weights
1 + N(0, 0.1^2); biases N(0, 0.5^2); embeddings N(0, 1) (N(0, 4/D) when tied); lm_head N(0, 4/D).

Example:
  make_moe_checkpoint.py --arch olmoe --hidden 32 --layers 2 --heads 4 --kv-heads 2 --ffn 24 \
      --experts 8 --top-k 2 --vocab 128 --seed 11 --out tests/data/models/olmoe-tiny-f32
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import List

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))
import make_checkpoint  # noqa: E402  (backbone_config, write_planned: the seeded, chunked tensor writer)
import safetensors_io as st  # noqa: E402

ARCH_CLASS = {"olmoe": "OlmoeForCausalLM", "mixtral": "MixtralForCausalLM", "moe": "MnemoMoeForCausalLM"}
TORCH_DTYPE = make_checkpoint.TORCH_DTYPE


def parse_args(argv: List[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--arch", choices=sorted(ARCH_CLASS), required=True)
    p.add_argument("--hidden", type=int, required=True)
    p.add_argument("--layers", type=int, required=True)
    p.add_argument("--heads", type=int, required=True)
    p.add_argument("--kv-heads", type=int, dest="kv_heads")
    p.add_argument("--ffn", type=int, required=True, help="intermediate_size of every expert")
    p.add_argument("--experts", type=int, required=True)
    p.add_argument("--top-k", type=int, dest="top_k", required=True)
    p.add_argument("--vocab", type=int, required=True)
    p.add_argument("--norm-topk-prob", action="store_true", dest="norm_topk_prob")
    p.add_argument("--router", choices=["softmax_topk", "topk_softmax"], default="softmax_topk",
                   help="moe only")
    p.add_argument("--qk-norm", action="store_true", dest="qk_norm", help="moe only (olmoe always)")
    p.add_argument("--attention-bias", action="store_true", dest="attention_bias", help="olmoe / moe")
    p.add_argument("--tied", action="store_true", help="tie_word_embeddings")
    p.add_argument("--rope-theta", type=float, dest="rope_theta")
    p.add_argument("--eps", type=float, default=1e-5, help="rms_norm_eps")
    p.add_argument("--max-pos", type=int, dest="max_pos", default=4096)
    p.add_argument("--dtype", choices=sorted(TORCH_DTYPE), default="f32")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    a.kv_heads = a.kv_heads or a.heads
    if a.hidden % a.heads or a.heads % a.kv_heads or (a.hidden // a.heads) % 2:
        p.error("hidden must split into heads of even size, heads into kv-heads")
    if not 1 <= a.top_k <= a.experts:
        p.error("--top-k must be in 1..--experts")
    if a.arch == "mixtral" and (a.attention_bias or a.norm_topk_prob or a.qk_norm):
        p.error("mixtral has no attention bias, QK-norm or norm_topk_prob option")
    if a.arch != "moe" and (a.qk_norm or a.router != "softmax_topk"):
        p.error("--qk-norm / --router apply to --arch moe only")
    if a.rope_theta is None:
        a.rope_theta = 1e6 if a.arch == "mixtral" else 10000.0
    return a


def make_config(a: argparse.Namespace) -> dict:
    cfg = {
        **make_checkpoint.backbone_config(a, ARCH_CLASS[a.arch]),
        "num_experts_per_tok": a.top_k,
        "torch_dtype": TORCH_DTYPE[a.dtype],
        "bos_token_id": 1,
        "eos_token_id": 2,
        "use_cache": True,
        "mnemo_generator": {"tool": "tools/test_models/make_moe_checkpoint.py", "seed": a.seed,
                            "note": "random untrained weights"},
    }
    if a.arch == "olmoe":
        cfg.update(num_experts=a.experts, norm_topk_prob=bool(a.norm_topk_prob), clip_qkv=None,
                   attention_bias=bool(a.attention_bias), router_aux_loss_coef=0.01, output_router_logits=False)
    elif a.arch == "mixtral":
        cfg.update(num_local_experts=a.experts, sliding_window=None, router_aux_loss_coef=0.02,
                   router_jitter_noise=0.0, output_router_logits=False)
    else:
        cfg.update(num_experts=a.experts, router=a.router, norm_topk_prob=bool(a.norm_topk_prob),
                   qk_norm=bool(a.qk_norm), attention_bias=bool(a.attention_bias))
    return cfg


def tensor_plan(a: argparse.Namespace):
    """[(TensorSpec, kind, std)] in file order; kind normal | norm (1 + std N(0, 1))."""
    D, H, Hkv, F, V, E = a.hidden, a.heads, a.kv_heads, a.ffn, a.vocab, a.experts
    d = D // H
    dt = st.canonical_dtype(a.dtype)
    plan = []

    def add(name, shape, kind, std):
        plan.append((st.TensorSpec(name, dt, tuple(shape)), kind, std))

    qk_norm = a.arch == "olmoe" or a.qk_norm
    block, (g, u, dn) = ("block_sparse_moe", ("w1", "w3", "w2")) if a.arch == "mixtral" else \
        ("mlp", ("gate_proj", "up_proj", "down_proj"))
    add("model.embed_tokens.weight", (V, D), "normal", 2.0 / np.sqrt(D) if a.tied else 1.0)
    for i in range(a.layers):
        p = f"model.layers.{i}."
        add(p + "input_layernorm.weight", (D,), "norm", 0.1)
        for name, rows in (("q_proj", H * d), ("k_proj", Hkv * d), ("v_proj", Hkv * d)):
            add(p + f"self_attn.{name}.weight", (rows, D), "normal", 1.0 / np.sqrt(D))
            if a.attention_bias:
                add(p + f"self_attn.{name}.bias", (rows,), "normal", 0.5)
        make_checkpoint.plan_attention_output(add, p, D, H * d, Hkv * d, qk_norm, o_bias=a.attention_bias)
        add(p + f"{block}.gate.weight", (E, D), "normal", 1.0 / np.sqrt(D))
        for e in range(E):
            x = p + f"{block}.experts.{e}."
            add(x + f"{g}.weight", (F, D), "normal", 1.0 / np.sqrt(D))
            add(x + f"{u}.weight", (F, D), "normal", 1.0 / np.sqrt(D))
            add(x + f"{dn}.weight", (D, F), "normal", 1.0 / np.sqrt(F))
    add("model.norm.weight", (D,), "norm", 0.1)
    if not a.tied:
        add("lm_head.weight", (V, D), "normal", 2.0 / np.sqrt(D))
    return plan


def generate(a: argparse.Namespace) -> List[str]:
    return make_checkpoint.write_planned(a.out, tensor_plan(a), a.seed, make_config(a),
                                         "mnemo tools/test_models/make_moe_checkpoint.py")


def main(argv: List[str]) -> int:
    a = parse_args(argv)
    files = generate(a)
    total = sum(os.path.getsize(f) for f in files)
    n_params = sum(int(np.prod(s.shape)) for s, _, _ in tensor_plan(a))
    print(f"{a.out}: {a.arch} {n_params:,} params, {total:,} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
