#!/usr/bin/python3
"""Convert a lingua Memory+ checkpoint (facebookresearch/memory) into a Mnemo model folder.

Input, as lingua writes it:
  consolidated.pth   torch.save of {"model": state_dict, "optim": ...} (lingua's
                     consolidate_checkpoints / dcp_to_torch_save), or a bare state dict
  params.json        the training config ({"model": {...}, "data": ...}), or the training
                     .yaml (`--config`); the "model" part holds LMTransformerArgs with
                     productkey_args (ProductKeyArgs)
A DCP folder (__0_0.distcp files) must be consolidated first, with lingua's
consolidate_checkpoints(), which needs torch >= 2.2 and a distributed-capable install.

Output (docs/models/memory_plus.md):
  config.json        Llama-style backbone fields + lingua's ProductKeyArgs fields, model_type
                     "memory_plus", rope_interleaved true
  model.safetensors  lingua's own tensor names (the state dict, unchanged), with
    - the shared value table once, under the first memory layer (lingua puts a copy under every
      memory layer once the model is parallelised; all copies are checked to be identical),
    - the PEER variant's unused value_proj / swilu_projection dropped,
    - dtypes kept (the official value table is bf16) unless --dtype says otherwise.

Usage: memory_plus_to_mnemo.py SRC OUT [--config params.json|train.yaml] [--dtype keep|f32|f16|bf16]
       [--tokenizer tokenizer.model]
SRC is the folder holding consolidated.pth (and params.json), or the .pth file itself.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Tuple

import numpy as np
import torch

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(TOOLS, "common"))
import safetensors_io as st  # noqa: E402

# lingua ProductKeyArgs / HashingMemory defaults (lingua/product_key/memory.py).
PK_DEFAULTS = {
    "is_enabled": False, "layers": "", "mem_n_keys": 1024, "mem_heads": 4, "mem_knn": 32,
    "mem_share_values": True, "mem_k_dim": 512, "mem_v_dim": -1, "swilu_projection": True,
    "mem_gated": False, "peer_variant": False,
}
# lingua BaseTransformerArgs / LMTransformerArgs defaults (lingua/transformer.py, apps/main/transformer.py).
MODEL_DEFAULTS = {
    "dim": 512, "n_layers": 8, "head_dim": None, "n_heads": None, "n_kv_heads": None,
    "ffn_dim_multiplier": None, "multiple_of": 256, "norm_eps": 1e-5, "rope_theta": 10000.0,
    "max_seqlen": 1024, "vocab_size": -1, "weight_tying": False, "sliding_window": None,
}
TORCH_TO_ST = {torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16"}


class ConvertError(ValueError):
    pass


@dataclass
class LinguaModel:
    """The parts of LMTransformerArgs the forward pass depends on, resolved like lingua does."""
    dim: int
    n_layers: int
    n_heads: int
    n_kv_heads: int
    head_dim: int
    ffn: int
    norm_eps: float
    rope_theta: float
    max_seqlen: int
    vocab: int
    weight_tying: bool
    mem_layers: List[int]
    pk: dict


def _model_args(params: dict) -> dict:
    """The "model" part of lingua's params.json / train yaml (or the dict itself if it is one)."""
    m = params.get("model", params)
    if not isinstance(m, dict) or "dim" not in m:
        raise ConvertError("config: no model arguments found (expected a 'model' section with 'dim', "
                           "as lingua's params.json has)")
    return m


def parse_layers(v) -> List[int]:
    """productkey_args.layers: "4,12,20" in lingua (a yaml may give 4 or [4, 12])."""
    if isinstance(v, int):
        return [v]
    if isinstance(v, (list, tuple)):
        return [int(x) for x in v]
    return [int(s) for s in str(v).split(",") if s.strip()]


def ffn_hidden(dim: int, multiple_of: int, multiplier: Optional[float]) -> int:
    """lingua FeedForward(hidden_dim = 4 dim): int(2 h / 3), times ffn_dim_multiplier, rounded up
    to a multiple of multiple_of."""
    h = int(2 * (4 * dim) / 3)
    if multiplier is not None:
        h = int(multiplier * h)
    return multiple_of * ((h + multiple_of - 1) // multiple_of)


def resolve(params: dict, vocab_from_weights: int) -> LinguaModel:
    m = dict(MODEL_DEFAULTS)
    m.update({k: v for k, v in _model_args(params).items()})
    pk = dict(PK_DEFAULTS)
    pk.update(m.get("productkey_args") or {})
    dim = int(m["dim"])
    if m["head_dim"] is None and m["n_heads"] is None:
        raise ConvertError("config: model needs n_heads or head_dim (lingua asserts one is given)")
    head_dim = int(m["head_dim"] or dim // int(m["n_heads"]))
    n_heads = int(m["n_heads"] or dim // head_dim)
    n_kv = int(m["n_kv_heads"] or n_heads)
    if n_heads % n_kv or dim % n_heads:
        raise ConvertError(f"config: n_heads {n_heads} must divide dim {dim} and be a multiple of n_kv_heads {n_kv}")
    if m.get("sliding_window"):
        raise ConvertError("config: sliding_window attention is not supported by the memory_plus plugin")
    layers = sorted(set(parse_layers(pk["layers"])))
    if not pk["is_enabled"] or not layers:
        raise ConvertError("config: productkey_args is not enabled or lists no layers: this is a dense lingua "
                           "model, not Memory+")
    n_layers = int(m["n_layers"])
    bad = [l for l in layers if not 0 <= l < n_layers]
    if bad:
        raise ConvertError(f"config: productkey_args.layers {bad} outside 0..{n_layers - 1}")
    vocab = int(m["vocab_size"])
    if vocab > 0 and vocab != vocab_from_weights:
        raise ConvertError(f"config: vocab_size {vocab} but tok_embeddings.weight has {vocab_from_weights} rows")
    return LinguaModel(
        dim=dim, n_layers=n_layers, n_heads=n_heads, n_kv_heads=n_kv, head_dim=head_dim,
        ffn=ffn_hidden(dim, int(m["multiple_of"]), m["ffn_dim_multiplier"]), norm_eps=float(m["norm_eps"]),
        rope_theta=float(m["rope_theta"]), max_seqlen=int(m["max_seqlen"]), vocab=vocab_from_weights,
        weight_tying=bool(m["weight_tying"]), mem_layers=layers, pk=pk)


def mnemo_config(lm: LinguaModel) -> dict:
    pk = lm.pk
    return {
        "architectures": ["MemoryPlusLM"],
        "model_type": "memory_plus",
        "hidden_size": lm.dim,
        "num_hidden_layers": lm.n_layers,
        "num_attention_heads": lm.n_heads,
        "num_key_value_heads": lm.n_kv_heads,
        "head_dim": lm.head_dim,
        "intermediate_size": lm.ffn,
        "vocab_size": lm.vocab,
        "max_position_embeddings": lm.max_seqlen,
        "rms_norm_eps": lm.norm_eps,
        "rope_theta": lm.rope_theta,
        "rope_interleaved": True,
        "tie_word_embeddings": lm.weight_tying,
        "mem_layers": lm.mem_layers,
        "mem_n_keys": int(pk["mem_n_keys"]),
        "mem_heads": int(pk["mem_heads"]),
        "mem_knn": int(pk["mem_knn"]),
        "mem_k_dim": int(pk["mem_k_dim"]),
        "mem_v_dim": int(pk["mem_v_dim"]),
        "mem_share_values": bool(pk["mem_share_values"]),
        "swilu_projection": bool(pk["swilu_projection"]),
        "mem_gated": bool(pk["mem_gated"]),
        "peer_variant": bool(pk["peer_variant"]),
        "mem_query_bias": True,
    }


def clean_names(sd: Dict[str, torch.Tensor]) -> Dict[str, torch.Tensor]:
    """Drop wrapper prefixes torch.compile / DDP add ("_orig_mod.", "module.")."""
    out = {}
    for k, v in sd.items():
        name = re.sub(r"(^|\.)(_orig_mod|module)\.", r"\1", k)
        if name in out:
            raise ConvertError(f"state dict: {k!r} and another tensor both map to {name!r}")
        out[name] = v
    return out


def expected_tensors(lm: LinguaModel) -> Tuple[Dict[str, Tuple[int, ...]], Dict[str, List[str]], List[str]]:
    """(name -> shape of every tensor written, shared table name -> the names lingua may hold it
    under, names lingua has that are dropped)."""
    pk = lm.pk
    D, H, n, k = lm.dim, int(pk["mem_heads"]), int(pk["mem_n_keys"]), int(pk["mem_k_dim"])
    v = int(pk["mem_v_dim"]) if int(pk["mem_v_dim"]) > 0 else D
    peer, swilu = bool(pk["peer_variant"]), bool(pk["swilu_projection"])
    if H < 2:
        raise ConvertError(f"config: productkey_args.mem_heads must be >= 2 (lingua asserts it), got {H}")
    if k < 2 or k % 2:
        raise ConvertError(f"config: productkey_args.mem_k_dim must be even, got {k}")
    if not 1 <= int(pk["mem_knn"]) <= n:
        raise ConvertError(f"config: productkey_args.mem_knn must be in 1..mem_n_keys ({n}), got {pk['mem_knn']}")
    if peer and int(pk["mem_v_dim"]) > 0:
        raise ConvertError("config: peer_variant needs mem_v_dim = -1 (lingua asserts it)")
    kvd = lm.n_kv_heads * lm.head_dim
    shapes: Dict[str, Tuple[int, ...]] = {"tok_embeddings.weight": (lm.vocab, D), "norm.weight": (D,)}
    if not lm.weight_tying:
        shapes["output.weight"] = (lm.vocab, D)
    tables: Dict[str, List[str]] = {}
    dropped: List[str] = []
    table_names = ["values_u.weight", "values_v.weight"] if peer else ["values.weight"]
    for i in range(lm.n_layers):
        p = f"layers.{i}."
        shapes.update({p + "attention_norm.weight": (D,), p + "ffn_norm.weight": (D,),
                       p + "attention.wq.weight": (lm.n_heads * lm.head_dim, D), p + "attention.wk.weight": (kvd, D),
                       p + "attention.wv.weight": (kvd, D), p + "attention.wo.weight": (D, lm.n_heads * lm.head_dim)})
        f = p + "feed_forward."
        if i not in lm.mem_layers:
            shapes.update({f + "w1.weight": (lm.ffn, D), f + "w3.weight": (lm.ffn, D), f + "w2.weight": (D, lm.ffn)})
            continue
        shapes.update({f + "keys": (2 * H * n, k // 2), f + "query_proj.query_mlps.0.weight": (H * k, D),
                       f + "query_proj.query_mlps.0.bias": (H * k,)})
        if bool(pk["mem_gated"]):
            shapes.update({f + "gating.weight": (1, D), f + "gating.bias": (1,)})
        proj_in = v
        has_proj = int(pk["mem_v_dim"]) > 0 or swilu   # lingua builds value_proj in these cases
        proj = {f + "value_proj.weight": (D, proj_in), f + "value_proj.bias": (D,)} if has_proj else {}
        sw = {f + "swilu_projection.weight": (proj_in, D), f + "swilu_projection.bias": (proj_in,)} if swilu else {}
        if peer:
            dropped += list(proj) + list(sw)      # constructed, never applied
        else:
            shapes.update(proj)
            shapes.update(sw)
        for t in table_names:
            shapes[f + t] = (n * n, D if peer else v)
    # Shared tables: written once under the first memory layer, read from any memory layer.
    if bool(pk["mem_share_values"]):
        first = lm.mem_layers[0]
        for t in table_names:
            tables[f"layers.{first}.feed_forward.{t}"] = [f"layers.{l}.feed_forward.{t}" for l in lm.mem_layers]
            for l in lm.mem_layers[1:]:
                del shapes[f"layers.{l}.feed_forward.{t}"]
    return shapes, tables, dropped


def storage(t: torch.Tensor, dtype: str) -> st.Tensor:
    """A torch tensor as safetensors storage in `dtype` ("keep": its own float dtype)."""
    t = t.detach().cpu()
    if t.dtype not in TORCH_TO_ST:
        raise ConvertError(f"unsupported tensor dtype {t.dtype}")
    out = TORCH_TO_ST[t.dtype] if dtype == "keep" else st.canonical_dtype(dtype)
    if out == "BF16" and t.dtype == torch.bfloat16:   # numpy has no bf16: move the bits as-is
        return st.Tensor("BF16", t.contiguous().view(torch.int16).numpy().view(np.uint16).copy())
    return st.Tensor(out, st.encode(t.to(torch.float32).numpy(), out))


def convert_state_dict(params: dict, state_dict: Dict[str, torch.Tensor], dtype: str = "keep"
                       ) -> Tuple[dict, Dict[str, st.Tensor], List[str]]:
    """(config.json dict, tensors to write, notes). Raises ConvertError naming what is wrong."""
    sd = clean_names(state_dict)
    if "tok_embeddings.weight" not in sd:
        raise ConvertError("state dict: no 'tok_embeddings.weight' (is this a lingua LMTransformer checkpoint?)")
    lm = resolve(params, int(sd["tok_embeddings.weight"].shape[0]))
    shapes, tables, dropped = expected_tensors(lm)
    notes: List[str] = []
    if lm.weight_tying and "output.weight" in sd:
        shapes["output.weight"] = (lm.vocab, lm.dim)
    out: Dict[str, st.Tensor] = {}
    for name, holders in tables.items():
        present = [h for h in holders if h in sd]
        if not present:
            raise ConvertError(f"state dict: the shared table is missing (looked for {holders[0]!r})")
        ref = sd[present[0]]
        for h in present[1:]:
            if sd[h].shape != ref.shape or not torch.equal(sd[h], ref):
                raise ConvertError(f"state dict: {h!r} differs from {present[0]!r}, but mem_share_values is "
                                   "true (one table for every memory layer)")
        sd[name] = ref
        if len(present) > 1:
            notes.append(f"{name}: {len(present)} identical copies of the shared table, written once")
    for name, shape in shapes.items():
        if name not in sd:
            raise ConvertError(f"state dict: tensor {name!r} is missing")
        if tuple(sd[name].shape) != shape:
            raise ConvertError(f"state dict: tensor {name!r} has shape {list(sd[name].shape)}, expected {list(shape)}")
        out[name] = storage(sd[name], dtype)
    known = set(shapes) | set(dropped) | {h for hs in tables.values() for h in hs}
    unknown = sorted(set(sd) - known - {"rope_embeddings.freqs_cis"})
    if unknown:
        raise ConvertError(f"state dict: tensors this converter does not know: {unknown[:8]}"
                           f"{' ...' if len(unknown) > 8 else ''}")
    if dropped:
        notes.append(f"PEER variant: dropped {len([d for d in dropped if d in sd])} unused value_proj / "
                     "swilu_projection tensors")
    return mnemo_config(lm), out, notes


def load_params(path: str) -> dict:
    with open(path, "r", encoding="utf-8") as f:
        if path.endswith((".yaml", ".yml")):
            import yaml
            return yaml.safe_load(f)
        return json.load(f)


def load_lingua(src: str, config: Optional[str] = None) -> Tuple[dict, Dict[str, torch.Tensor]]:
    """(params, state dict) of a consolidated lingua checkpoint folder or .pth file."""
    if os.path.isdir(src):
        cands = [os.path.join(src, "consolidated.pth"), os.path.join(src, "consolidated", "consolidated.pth")]
        pth = next((c for c in cands if os.path.exists(c)), None)
        if pth is None:
            if any(f.endswith(".distcp") for f in os.listdir(src)):
                raise ConvertError(f"{src}: a DCP checkpoint; consolidate it first (lingua "
                                   "consolidate_checkpoints) to get consolidated/consolidated.pth")
            raise ConvertError(f"{src}: no consolidated.pth")
    else:
        pth = src
    config = config or os.path.join(os.path.dirname(pth), "params.json")
    if not os.path.exists(config):
        raise ConvertError(f"{config}: not found (give the training params.json or yaml with --config)")
    obj = torch.load(pth, map_location="cpu")
    sd = obj["model"] if isinstance(obj, dict) and isinstance(obj.get("model"), dict) else obj
    if not isinstance(sd, dict):
        raise ConvertError(f"{pth}: expected a state dict or {{'model': state_dict}}")
    return load_params(config), sd


def write_folder(out: str, config: dict, tensors: Dict[str, st.Tensor], source: str = "") -> None:
    os.makedirs(out, exist_ok=True)
    config = dict(config)
    config["mnemo_converter"] = {"tool": "tools/convert/memory_plus_to_mnemo.py", "source": source}
    specs = [st.TensorSpec(n, t.dtype, t.shape) for n, t in tensors.items()]
    st.write_checkpoint(out, specs, lambda s, w: w.write(s.name, tensors[s.name].data))
    st.write_config(out, config)


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src", help="folder with consolidated.pth (+ params.json), or the .pth file")
    ap.add_argument("out", help="Mnemo model folder to write")
    ap.add_argument("--config", help="lingua params.json or training .yaml (default: params.json next to the .pth)")
    ap.add_argument("--dtype", default="keep", choices=["keep", "f32", "f16", "bf16"],
                    help="storage dtype of every tensor (default: keep each tensor's own)")
    ap.add_argument("--tokenizer", help="SentencePiece tokenizer.model to copy into the folder")
    a = ap.parse_args(argv)
    try:
        params, sd = load_lingua(a.src, a.config)
        config, tensors, notes = convert_state_dict(params, sd, a.dtype)
    except ConvertError as e:
        print(f"memory_plus_to_mnemo: {e}", file=sys.stderr)
        return 1
    write_folder(a.out, config, tensors, source=os.path.abspath(a.src))
    if a.tokenizer:
        shutil.copyfile(a.tokenizer, os.path.join(a.out, "tokenizer.model"))
    for n in notes:
        print("note:", n)
    count = sum(int(np.prod(t.shape)) for t in tensors.values())
    print(f"{a.out}: {len(tensors)} tensors, {count} parameters, memory at layers {config['mem_layers']}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
