#!/usr/bin/python3
"""Convert a checkpoint of the official UltraMem / UltraMemV2 code (ZihaoHuang-notabot/
Ultra-Sparse-Memory-Network, an OLMo fork) into a Mnemo model folder (docs/models/ultramem.md,
docs/models/ultramem_v2.md).

  ultramem_to_mnemo.py CHECKPOINT --out DIR [--config config.yaml] [--dtype f32|bf16|f16]
                       [--tokenizer TOKENIZER_DIR]

CHECKPOINT is one of
  * a model.pt / model.safetensors file: the unsharded OLMo state dict
    (transformer.wte.weight, transformer.blocks.{i}.att_proj.weight, ..., transformer.mem_blocks.{l}.*,
    transformer.full_memory_layer.*);
  * a folder holding model.pt (or model.safetensors);
  * a folder of vertical (memory) parallel shards rank_{r}/model.pt (olmo/checkpoint.py
    _write_model_dict_mp): every rank holds the whole model except the shared V2 tables
    full_memory_layer.values_for_look_up / pre_values_for_look_up, of which memory-parallel rank p
    (= global rank % P) holds the columns [p*vdim/P, (p+1)*vdim/P). The P shards are concatenated
    along dim 1 in rank order; the replicated tensors are taken from rank 0 after checking that
    every rank agrees.
The training config (the checkpoint's config.yaml, a YAML/JSON file with a `model:` section, or a
flat dict of the model fields) gives the backbone and mem_* fields; --config defaults to
config.yaml next to the checkpoint.

What the converter changes:
  att_proj [D + 2*kv, D]  -> self_attn.q_proj / k_proj / v_proj (rows in that order)
  ff_proj [2F, D]         -> mlp.up_proj = rows [0, F), mlp.gate_proj = rows [F, 2F)
                             (OLMo SwiGLU: x, gate = ff_proj(h).chunk(2); silu(gate) * x)
  keys [H, 2, Nk, kdim, R] -> keys [2H, Nk, kdim, R] (a free reshape: Mnemo tensors have <= 4 dims)
  tucker_core_u/v [1, H, 1, R] -> [H, R];  shuffle_index int64 -> I32
  norms without an affine weight (layer_norm_with_affine / attention_layer_norm_with_affine
  false) -> gains of ones.
Unknown tensors are an error (nothing is dropped silently), except the NPU-only derived copies
tucker_core_uv / tucker_core_stacked, which equal the converted buffers and cores.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))
import safetensors_io  # noqa: E402  (tools/common/safetensors_io.py)
from safetensors_io import Tensor  # noqa: E402


class ConversionError(Exception):
    pass


# ----------------------------------------------------------------------------------------------
# Reading the official checkpoint and config
# ----------------------------------------------------------------------------------------------

def _clean(name: str) -> str:
    for prefix in ("module.", "_orig_mod."):
        if name.startswith(prefix):
            name = name[len(prefix):]
    return name.replace("_fsdp_wrapped_module.", "")


def _load_file(path: str) -> Dict[str, torch.Tensor]:
    if path.endswith(".safetensors"):
        out = {}
        for n, t in safetensors_io.read_safetensors(path)[0].items():
            out[n] = torch.from_numpy(np.array(t.data, dtype=np.int64)) if t.dtype == "I32" \
                else torch.from_numpy(t.to_float64()).to(torch.float32)
        return out
    sd = torch.load(path, map_location="cpu")
    if isinstance(sd, dict) and "model" in sd and isinstance(sd["model"], dict):
        sd = sd["model"]
    return {_clean(k): v for k, v in sd.items() if isinstance(v, torch.Tensor)}


SHARDED = ("transformer.full_memory_layer.values_for_look_up",
           "transformer.full_memory_layer.pre_values_for_look_up")


def load_state_dict(path: str, parallel: Optional[int]) -> Dict[str, torch.Tensor]:
    """The whole official state dict; rank_{r} shard folders are merged (module docstring)."""
    if os.path.isfile(path):
        return _load_file(path)
    ranks = sorted((int(m.group(1)), d) for d in os.listdir(path)
                   if (m := re.fullmatch(r"rank_(\d+)", d)) and os.path.isdir(os.path.join(path, d)))
    if not ranks:
        for name in ("model.pt", "model.safetensors"):
            if os.path.exists(os.path.join(path, name)):
                return _load_file(os.path.join(path, name))
        raise ConversionError(f"{path}: no model.pt, model.safetensors or rank_*/model.pt")
    P = parallel or len(ranks)
    if [r for r, _ in ranks[:P]] != list(range(P)):
        raise ConversionError(f"{path}: vertical-parallel shards rank_0..rank_{P - 1} are needed "
                              f"(mem_parallel_size {P}), found {[d for _, d in ranks]}")

    def shard(r: int) -> Dict[str, torch.Tensor]:
        d = os.path.join(path, f"rank_{r}")
        for name in ("model.pt", "model.safetensors"):
            if os.path.exists(os.path.join(d, name)):
                return _load_file(os.path.join(d, name))
        raise ConversionError(f"{d}: no model.pt")

    parts = [shard(r) for r in range(P)]
    merged = dict(parts[0])
    for name in SHARDED:
        if name in merged:
            pieces = [p[name] for p in parts]
            if any(x.shape[0] != pieces[0].shape[0] for x in pieces):
                raise ConversionError(f"{name}: the rank shards have different row counts "
                                      f"{[tuple(x.shape) for x in pieces]}")
            merged[name] = torch.cat(pieces, dim=1)
    for r, p in enumerate(parts[1:], start=1):
        if set(p) != set(parts[0]):
            raise ConversionError(f"rank_{r} holds tensors {sorted(set(p) ^ set(parts[0]))[:4]} that rank_0 "
                                  "does not (or the reverse)")
        for name, t in p.items():
            if name not in SHARDED and not torch.equal(t, parts[0][name]):
                raise ConversionError(f"{name} differs between rank_0 and rank_{r}: only the shared value tables "
                                      "are sharded, everything else must be replicated")
    return merged


def load_config(path: str) -> dict:
    with open(path, "r", encoding="utf-8") as f:
        text = f.read()
    if path.endswith(".json"):
        c = json.loads(text)
    else:
        import yaml  # Debian python3-yaml
        c = yaml.safe_load(text)
    if isinstance(c, dict) and isinstance(c.get("model"), dict):
        c = c["model"]
    if not isinstance(c, dict):
        raise ConversionError(f"{path}: expected a mapping of model fields")
    return c


# ----------------------------------------------------------------------------------------------
# Conversion
# ----------------------------------------------------------------------------------------------

def _insert_count(way: str, n_layers: int) -> int:
    if way == "full":
        return n_layers
    if way == "no_mem":
        return 0
    return len(way.split("/"))


def check_backbone(c: dict) -> None:
    """Refuse what the Mnemo format does not express (the official UltraMem runs use none of it)."""
    def bad(field, value, why):
        raise ConversionError(f"config {field} = {value!r}: {why}")

    if c.get("block_type", "sequential") != "sequential":
        bad("block_type", c.get("block_type"), "only OLMo's sequential block carries the memory layers here")
    if c.get("layer_norm_type", "rms") not in ("rms", "LayerNormType.rms"):
        bad("layer_norm_type", c.get("layer_norm_type"), "the UltraMem runs use RMSNorm")
    if c.get("activation_type", "swiglu") not in ("swiglu", "ActivationType.swiglu"):
        bad("activation_type", c.get("activation_type"), "the UltraMem runs use SwiGLU")
    for field, default in (("alibi", False), ("norm_after", False), ("embedding_layer_norm", False),
                           ("scale_logits", False), ("moe_interleave", False), ("multi_query_attention", False)):
        if c.get(field, default):
            bad(field, c.get(field), "not part of the UltraMem backbone")
    if not c.get("rope", True):
        bad("rope", False, "the UltraMem runs use RoPE")
    if c.get("clip_qkv") is not None:
        bad("clip_qkv", c.get("clip_qkv"), "q/k/v clipping is not supported")
    if c.get("block_group_size", 1) != 1:
        bad("block_group_size", c.get("block_group_size"), "the official memory forward raises for it too")


def convert(sd: Dict[str, torch.Tensor], c: dict) -> Tuple[dict, Dict[str, torch.Tensor]]:
    """(Mnemo config.json dict, Mnemo tensors) from the official state dict and model config."""
    check_backbone(c)
    mem_type = c.get("mem_type", "ultramem_v2")
    if mem_type not in ("ultramem_v1", "ultramem_v2"):
        raise ConversionError(f"config mem_type = {mem_type!r}: expected ultramem_v1 or ultramem_v2")
    v2 = mem_type == "ultramem_v2"
    sd = dict(sd)
    used = set()

    def take(name: str) -> torch.Tensor:
        if name not in sd:
            raise ConversionError(f"the checkpoint has no tensor {name!r}")
        used.add(name)
        return sd[name]

    def maybe(name: str, size: int) -> torch.Tensor:
        """A norm gain, or ones where the config trains the norm without an affine weight."""
        if name in sd:
            return take(name)
        return torch.ones(size)

    for n in sd:
        if n.endswith(".bias"):
            raise ConversionError(f"{n}: biases (include_bias / bias_for_layer_norm) are not supported")

    D = int(c["d_model"])
    L = int(c["n_layers"])
    H = int(c["n_heads"])
    kv = int(c.get("n_kv_heads") or H)
    hd = D // H
    out: Dict[str, torch.Tensor] = {}

    wte = take("transformer.wte.weight")
    vocab = wte.shape[0]
    out["model.embed_tokens.weight"] = wte
    ff_size = None
    for i in range(L):
        src = f"transformer.blocks.{i}."
        dst = f"model.layers.{i}."
        att = take(src + "att_proj.weight")
        if att.shape != (D + 2 * kv * hd, D):
            raise ConversionError(f"{src}att_proj.weight has shape {tuple(att.shape)}, expected "
                                  f"{(D + 2 * kv * hd, D)} for d_model {D}, {H} heads, {kv} kv heads")
        out[dst + "self_attn.q_proj.weight"] = att[:D]
        out[dst + "self_attn.k_proj.weight"] = att[D:D + kv * hd]
        out[dst + "self_attn.v_proj.weight"] = att[D + kv * hd:]
        out[dst + "self_attn.o_proj.weight"] = take(src + "attn_out.weight")
        if c.get("attention_layer_norm", False):
            out[dst + "self_attn.q_norm.weight"] = maybe(src + "q_norm.weight", hd)
            out[dst + "self_attn.k_norm.weight"] = maybe(src + "k_norm.weight", hd)
        out[dst + "input_layernorm.weight"] = maybe(src + "attn_norm.weight", D)
        out[dst + "post_attention_layernorm.weight"] = maybe(src + "ff_norm.weight", D)
        ff = take(src + "ff_proj.weight")
        F = ff.shape[0] // 2
        ff_size = F
        out[dst + "mlp.up_proj.weight"] = ff[:F]      # the "x" half
        out[dst + "mlp.gate_proj.weight"] = ff[F:]    # the "gate" half: silu(gate) * x
        out[dst + "mlp.down_proj.weight"] = take(src + "ff_out.weight")
    out["model.norm.weight"] = maybe("transformer.ln_f.weight", D)
    tied = bool(c.get("weight_tying", False))
    if not tied:
        out["lm_head.weight"] = take("transformer.ff_out.weight")

    way = str(c.get("mem_insert_way", "full"))
    n_mem = _insert_count(way, L)
    rank = cores = heads = None
    for l in range(n_mem):
        src = f"transformer.mem_blocks.{l}."
        dst = f"model.mem_blocks.{l}."
        keys = take(src + "keys")
        if keys.dim() != 5 or keys.shape[1] != 2:
            raise ConversionError(f"{src}keys has shape {tuple(keys.shape)}, expected [H, 2, Nk, kdim, R]")
        heads, _, nk, kdim, rank = keys.shape
        out[dst + "keys"] = keys.reshape(2 * heads, nk, kdim, rank)
        out[dst + "query_proj.weight"] = take(src + "query_proj.weight")
        out[dst + "query_norm.weight"] = maybe(src + "query_norm.weight", kdim)
        out[dst + "keys_norm.weight"] = maybe(src + "keys_norm.weight", kdim)
        cores = 0
        while src + f"tucker_core.{cores}" in sd:
            out[dst + f"tucker_core.{cores}"] = take(src + f"tucker_core.{cores}")
            cores += 1
        for b in ("tucker_core_u", "tucker_core_v"):
            buf = take(src + b)
            if buf.numel() != heads * rank:
                raise ConversionError(f"{src}{b} has shape {tuple(buf.shape)}, expected [1, {heads}, 1, {rank}]")
            out[dst + b] = buf.reshape(heads, rank)
        sh = take(src + "shuffle_index")
        if sh.dtype.is_floating_point or sh.numel() == 0 or int(sh.min()) < 0 or int(sh.max()) > 2 ** 31 - 1:
            raise ConversionError(f"{src}shuffle_index must hold integers in 0..2^31-1")
        out[dst + "shuffle_index"] = sh.to(torch.int32)
        if not v2:
            out[dst + "values_for_look_up"] = take(src + "values_for_look_up")
        elif src + "pre_values_proj.weight" in sd:
            out[dst + "pre_values_proj.weight"] = take(src + "pre_values_proj.weight")
        out[dst + "values_proj.weight"] = take(src + "values_proj.weight")
        for derived in ("tucker_core_uv", "tucker_core_stacked"):  # NPU copies of converted tensors
            used.add(src + derived)
    if v2 and n_mem > 0:
        out["model.full_memory_layer.values_for_look_up"] = take("transformer.full_memory_layer.values_for_look_up")
        if "transformer.full_memory_layer.pre_values_for_look_up" in sd:
            out["model.full_memory_layer.pre_values_for_look_up"] = take(
                "transformer.full_memory_layer.pre_values_for_look_up")
    unknown = sorted(n for n in sd if n not in used)
    if unknown:
        raise ConversionError(f"tensors the converter does not know (not dropped silently): {unknown[:8]}"
                              + (f" and {len(unknown) - 8} more" if len(unknown) > 8 else ""))

    cfg = {
        "model_type": "ultramem_v2" if v2 else "ultramem",
        "hidden_size": D,
        "num_hidden_layers": L,
        "num_attention_heads": H,
        "num_key_value_heads": kv,
        "intermediate_size": ff_size,
        "vocab_size": vocab,
        "max_position_embeddings": int(c.get("max_sequence_length", 2048)),
        "rms_norm_eps": float(c.get("layer_norm_eps", 1e-5)),
        "rope_theta": float(c.get("rope_theta", 10000)),
        "tie_word_embeddings": tied,
        "qk_norm": bool(c.get("attention_layer_norm", False)),
        "mem_insert_way": way,
        "mem_knum": int(c["mem_knum"]),
        "mem_kdim": int(c["mem_kdim"]),
        "mem_vdim": int(c["mem_vdim"]),
        "mem_knn": int(c["mem_knn"]),
        "mem_head": int(c.get("mem_head", 1)),
        # Constructor constants model.py never passes; read back from the tensors.
        "mem_tucker_rank": int(rank) if rank is not None else 2,
        "mem_tucker_multihead": int(cores) if cores is not None else 2,
        # V1: model.py does not pass mem_value_expand_time, so UltraMemLayerV1's default 4 holds.
        "mem_value_expand_time": int(c.get("mem_value_expand_time", 1)) if v2 else 4,
    }
    for key in ("eos_token_id", "pad_token_id", "bos_token_id"):
        if c.get(key) is not None:
            cfg[key] = int(c[key])
    if v2:
        cfg.update({
            "mem_pre_vdim": int(c.get("mem_pre_vdim", 0)),
            "mem_share_ratio": float(c.get("mem_share_ratio", 1.0)),
            "mem_key_expand_time": int(c.get("mem_key_expand_time", 1)),
            "mem_q_for_each_tucker_rank": bool(c.get("mem_q_for_each_tucker_rank", False)),
            "mem_use_glu_act": bool(c.get("mem_use_glu_act", False)),
        })
    if heads is not None and heads != cfg["mem_head"]:
        raise ConversionError(f"config mem_head = {cfg['mem_head']} but the keys hold {heads} heads")
    return cfg, out


def write_folder(out_dir: str, cfg: dict, tensors: Dict[str, torch.Tensor], dtype: str) -> None:
    store: Dict[str, Tensor] = {}
    for name, t in tensors.items():
        if t.dtype in (torch.int32, torch.int64):
            store[name] = Tensor("I32", np.ascontiguousarray(t.to(torch.int32).numpy()))
        else:
            dt = safetensors_io.canonical_dtype(dtype)
            store[name] = Tensor(dt, safetensors_io.encode(t.to(torch.float32).contiguous().numpy(), dt))
    safetensors_io.write_model_folder(out_dir, store, cfg)


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("checkpoint")
    p.add_argument("--out", required=True)
    p.add_argument("--config", default="", help="training config (YAML/JSON); default: config.yaml beside it")
    p.add_argument("--dtype", default="f32", choices=["f32", "f16", "bf16"])
    p.add_argument("--tokenizer", default="", help="folder whose tokenizer*.json / special_tokens_map.json are copied")
    a = p.parse_args(argv)
    cfg_path = a.config
    if not cfg_path:
        base = a.checkpoint if os.path.isdir(a.checkpoint) else os.path.dirname(a.checkpoint)
        cfg_path = os.path.join(base, "config.yaml")
    try:
        model_cfg = load_config(cfg_path)
        parallel = int(model_cfg.get("mem_parallel_size", 1)) if model_cfg.get("vertical_parallel") else None
        sd = load_state_dict(a.checkpoint, parallel)
        cfg, tensors = convert(sd, model_cfg)
    except (ConversionError, KeyError, FileNotFoundError) as e:
        print(f"ultramem_to_mnemo: {e}", file=sys.stderr)
        return 1
    write_folder(a.out, cfg, tensors, a.dtype)
    if a.tokenizer:
        for f in os.listdir(a.tokenizer):
            if f.startswith("tokenizer") or f == "special_tokens_map.json":
                shutil.copy(os.path.join(a.tokenizer, f), a.out)
    print(f"{a.out}: {cfg['model_type']}, {len(tensors)} tensors, {n_params(tensors):,} parameters")
    return 0


def n_params(tensors: Dict[str, torch.Tensor]) -> int:
    return sum(t.numel() for t in tensors.values())


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
