#!/usr/bin/python3
"""Up-scale a Hugging Face Llama checkpoint into a MIDUS-HML model folder (arXiv 2512.13751).

There is no official MIDUS code or checkpoint to convert from, so this tool does what the paper
does before continued pre-training: it keeps every base block and inserts a memory block before
each anchor block (eq. 2 / 11), initialised as in section 2.1 and appendix D.2:
  - the memory block's attention (input RMSNorm, q/k/v projections and biases) is copied from the
    base block that follows it (its anchor); there is no output projection (eq. 3);
  - the latent value bank is zero, so Mem(a) = 0 and every memory block is the identity: the
    up-scaled model computes exactly the base model's logits until it is trained;
  - sub-keys and head projections are random (the paper does not say how; see --key-std and
    docs/models/midus_hml.md).

The result loads in mnemo (model_type "midus_hml"); train it elsewhere, or use it to check a MIDUS
training setup starts from the base model. Base tensors are copied byte for byte; memory tensors
are written in the dtype of the base attention weights unless --dtype says otherwise.

Anchors: --anchors 1,3,5 (base block indices), or --placement with --blocks D (default L/2) for
the policies of appendix G.4, written as anchors (MIDUS inserts before the anchor):
  distributed    anchors 1, 3, 5, ...     (memory blocks at final-stack positions 1, 4, 7, ...;
                                           the paper's default, needs 2D <= L)
  top-heavy      anchors L-D .. L-1       (memory blocks alternate with the upper base blocks)
  bottom-heavy   anchors 0 .. D-1

Usage:
  midus_from_llama.py LLAMA_DIR OUT_DIR --placement distributed [--n-keys 64 --topk 4]
  midus_from_llama.py LLAMA_DIR OUT_DIR --anchors 1,3 --n-keys 8 --topk 2 --latent-dim 8
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from typing import Dict, List, Optional, Tuple

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import safetensors_io as st  # noqa: E402  (tools/common/safetensors_io.py)

ROW_CHUNK_BYTES = 64 << 20  # base tensors are copied in row chunks of at most this many bytes
WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")
# Other copies of the weights (and test goldens) are not carried into the MIDUS folder.
SKIPPED_SUFFIXES = (".safetensors", ".bin", ".pt", ".pth", ".gguf", ".npy", ".index.json")


def anchors_for(placement: str, layers: int, blocks: int) -> List[int]:
    """Appendix G.4 placement policies as MIDUS anchor lists."""
    if not 1 <= blocks <= layers:
        raise ValueError(f"--blocks {blocks} must be in 1..{layers} (one memory block per anchor block)")
    if placement == "distributed":
        if 2 * blocks > layers:
            raise ValueError(f"distributed placement puts anchors at 1, 3, 5, ...: {blocks} blocks need "
                             f"{2 * blocks} base blocks, the model has {layers}")
        return [1 + 2 * j for j in range(blocks)]
    if placement == "top-heavy":
        return list(range(layers - blocks, layers))
    if placement == "bottom-heavy":
        return list(range(blocks))
    raise ValueError(f"unknown placement {placement!r}")


def check_anchors(anchors: List[int], layers: int) -> None:
    if not anchors:
        raise ValueError("at least one anchor is needed")
    for a, b in zip(anchors, anchors[1:]):
        if b <= a:
            raise ValueError(f"anchors {anchors} must be strictly increasing")
    if anchors[0] < 0 or anchors[-1] >= layers:
        raise ValueError(f"anchors {anchors} must be base block indices 0..{layers - 1}")


def midus_config(base: dict, anchors: List[int], n_keys: int, topk: int, latent_dim: int) -> dict:
    if base.get("model_type") != "llama":
        raise ValueError(f"base model_type is {base.get('model_type')!r}; MIDUS up-scales a 'llama' model")
    heads = int(base["num_attention_heads"])
    head_dim = int(base.get("head_dim") or int(base["hidden_size"]) // heads)
    if heads * head_dim != int(base["hidden_size"]):
        raise ValueError("MIDUS needs num_attention_heads x head_dim == hidden_size (eq. 5 adds the "
                         "concatenated head outputs to the hidden state)")
    if not 1 <= topk <= n_keys:
        raise ValueError(f"--topk {topk} must be in 1..--n-keys {n_keys}")
    if n_keys * n_keys > 2**31 - 1:
        raise ValueError(f"--n-keys {n_keys}: n^2 slots must fit i32 indices")
    if latent_dim < 1:
        raise ValueError("--latent-dim must be >= 1")
    check_anchors(anchors, int(base["num_hidden_layers"]))
    cfg = dict(base)
    cfg["model_type"] = "midus_hml"
    cfg["architectures"] = ["MidusHmlForCausalLM"]
    cfg["memory_anchors"] = list(anchors)
    cfg["memory_n_keys"] = n_keys
    cfg["memory_topk"] = topk
    cfg["memory_latent_dim"] = latent_dim
    return cfg


def memory_tensors(base_cfg: dict, base: Dict[str, st.Tensor], anchors: List[int], n_keys: int,
                   latent_dim: int, rng: np.random.Generator, key_std: Optional[float],
                   proj_std: Optional[float]) -> Dict[str, np.ndarray]:
    """float64 values of every memory-block tensor, initialised as in appendix D.2."""
    heads = int(base_cfg["num_attention_heads"])
    head_dim = int(base_cfg.get("head_dim") or int(base_cfg["hidden_size"]) // heads)
    dp = head_dim // 2
    key_std = 1.0 / np.sqrt(dp) if key_std is None else key_std
    proj_std = 1.0 / np.sqrt(latent_dim) if proj_std is None else proj_std
    out: Dict[str, np.ndarray] = {}
    for j, anchor in enumerate(anchors):
        src, dst = f"model.layers.{anchor}.", f"model.memory_blocks.{j}."
        copied = ["input_layernorm.weight"] + [f"self_attn.{p}_proj.{kind}" for p in "qkv"
                                               for kind in ("weight", "bias")]
        for name in copied:
            if src + name in base:
                out[dst + name] = base[src + name].to_float64()
        out[dst + "hml.keys"] = rng.standard_normal((heads, 2, n_keys, dp)) * key_std
        out[dst + "hml.values"] = np.zeros((n_keys * n_keys, latent_dim))
        out[dst + "hml.value_proj"] = rng.standard_normal((heads, latent_dim, head_dim)) * proj_std
    return out


def write_model(base_dir: str, out_dir: str, cfg: dict, base: Dict[str, st.Tensor],
                memory: Dict[str, np.ndarray], dtype: str, shard_bytes: int = 0) -> List[str]:
    """Base tensors (bytes unchanged) then memory tensors (in `dtype`), plus config and the base
    folder's other files (tokenizer, generation config)."""
    if os.path.realpath(base_dir) == os.path.realpath(out_dir):
        raise ValueError("the output folder must differ from the base folder")
    specs = [st.TensorSpec(n, t.dtype, t.shape) for n, t in base.items()]
    specs += [st.TensorSpec(n, dtype, v.shape) for n, v in memory.items()]

    def produce(spec: st.TensorSpec, w: st.StreamingWriter) -> None:
        if spec.name in memory:
            w.write(spec.name, st.encode(memory[spec.name], spec.dtype))
            return
        data = base[spec.name].data
        if data.ndim == 0 or data.shape[0] == 0:
            w.write(spec.name, data)
            return
        # Row chunks keep a multi-GB checkpoint from being paged in all at once.
        rows = max(1, ROW_CHUNK_BYTES // max(1, data.nbytes // data.shape[0]))
        for r0 in range(0, data.shape[0], rows):
            w.write_chunk(spec.name, data[r0:r0 + rows])
        w.end_tensor(spec.name)

    os.makedirs(out_dir, exist_ok=True)
    files = st.write_checkpoint(out_dir, specs, produce, shard_bytes=shard_bytes,
                                metadata={"generator": "mnemo tools/convert/midus_from_llama.py"})
    for name in sorted(os.listdir(base_dir)):
        path = os.path.join(base_dir, name)
        if os.path.isfile(path) and name != "config.json" and not name.endswith(SKIPPED_SUFFIXES) \
                and name not in WEIGHT_FILES and not name.startswith("golden_"):
            shutil.copyfile(path, os.path.join(out_dir, name))
    st.write_config(out_dir, cfg)
    return files


def upscale(base_dir: str, anchors: List[int], n_keys: int, topk: int, latent_dim: Optional[int],
            seed: int, key_std: Optional[float] = None,
            proj_std: Optional[float] = None) -> Tuple[dict, Dict[str, st.Tensor], Dict[str, np.ndarray]]:
    """(config, base tensors, memory tensors as float64) of the up-scaled model."""
    with open(os.path.join(base_dir, "config.json"), "r", encoding="utf-8") as f:
        base_cfg = json.load(f)
    heads = int(base_cfg["num_attention_heads"])
    head_dim = int(base_cfg.get("head_dim") or int(base_cfg["hidden_size"]) // heads)
    latent_dim = head_dim if latent_dim is None else latent_dim  # paper: r = d_h
    cfg = midus_config(base_cfg, anchors, n_keys, topk, latent_dim)
    base = st.read_checkpoint(base_dir)
    clash = [n for n in base if n.startswith("model.memory_blocks.")]
    if clash:
        raise ValueError(f"{base_dir} already holds memory-block tensors ({clash[0]}); is it a MIDUS model?")
    rng = np.random.default_rng(seed)
    return cfg, base, memory_tensors(base_cfg, base, anchors, n_keys, latent_dim, rng, key_std, proj_std)


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("base", help="Hugging Face Llama folder (config.json + safetensors)")
    p.add_argument("out", help="MIDUS folder to write")
    where = p.add_mutually_exclusive_group(required=True)
    where.add_argument("--anchors", help="comma-separated base block indices, strictly increasing")
    where.add_argument("--placement", choices=["distributed", "top-heavy", "bottom-heavy"])
    p.add_argument("--blocks", type=int, help="memory blocks for --placement (default: half the base blocks)")
    p.add_argument("--n-keys", type=int, default=64, dest="n_keys", help="sub-keys per side n (paper: 64)")
    p.add_argument("--topk", type=int, default=4, help="k (paper: 4)")
    p.add_argument("--latent-dim", type=int, dest="latent_dim", help="HIVE latent width r (paper and default: head_dim)")
    p.add_argument("--key-std", type=float, dest="key_std", help="sub-key init std (default 1/sqrt(head_dim/2))")
    p.add_argument("--dtype", choices=["f32", "f16", "bf16"], help="memory tensor dtype (default: that of q_proj)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--shard-bytes", type=int, default=0, dest="shard_bytes", help="max bytes per output shard")
    a = p.parse_args(argv)
    try:
        with open(os.path.join(a.base, "config.json"), "r", encoding="utf-8") as f:
            layers = int(json.load(f)["num_hidden_layers"])
        if a.anchors is not None:
            anchors = [int(x) for x in a.anchors.split(",") if x.strip()]
        else:
            anchors = anchors_for(a.placement, layers, a.blocks or max(1, layers // 2))
        cfg, base, memory = upscale(a.base, anchors, a.n_keys, a.topk, a.latent_dim, a.seed, a.key_std)
        dtype = st.canonical_dtype(a.dtype) if a.dtype else base["model.layers.0.self_attn.q_proj.weight"].dtype
        files = write_model(a.base, a.out, cfg, base, memory, dtype, a.shard_bytes)
    except (ValueError, KeyError, FileNotFoundError) as e:
        print(f"midus_from_llama: {e}", file=sys.stderr)
        return 1
    added = sum(v.size for v in memory.values())
    print(f"{a.out}: {len(anchors)} memory blocks before base blocks {anchors}, n {a.n_keys}, top-{a.topk}, "
          f"r {cfg['memory_latent_dim']}; {added:,} memory parameters ({dtype}), {len(files)} file(s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
