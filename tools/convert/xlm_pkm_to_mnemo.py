#!/usr/bin/python3
"""Convert an XLM checkpoint with product-key memories (facebookresearch/XLM, Lample et al. 2019)
into a Mnemo "pkm" model folder (docs/models/pkm.md).

  xlm_pkm_to_mnemo.py CHECKPOINT.pth --out DIR [--model-key model|encoder|decoder]
                      [--lang NAME | --lang-id N] [--dtype f32|f16|bf16]

CHECKPOINT is what XLM's trainer writes with torch.save: a dict with the state dict under
'model' (or 'encoder' / 'decoder') and the training flags under 'params' (a dict, or an argparse
Namespace / AttrDict). DistributedDataParallel's 'module.' prefix is removed.

The Mnemo folder keeps XLM's tensor names, so conversion is mostly a copy. What changes:
  * memories.<l>_<pos>.query_proj.query_mlps.1.num_batches_tracked (int64, training only) is dropped;
  * with share_inout_emb, pred_layer.proj.weight (the same tensor as embeddings.weight) is dropped;
  * with mem_use_different_keys = false the one shared key table [n_keys, k/2] is repeated to
    [heads, 2, n_keys, k/2] (every head and both halves read the same keys in XLM);
  * the flags become config.json fields (mem_enc_positions "1,3+" -> mem_positions ["1:in", "3:after"]);
  * --dtype f16/bf16 converts matrices, tables and keys; 1-D tensors (biases, norms) stay F32.
Options the plugin does not implement are refused with the flag named (ReLU FFN, adaptive softmax,
query MLPs with hidden layers, identity / convolutional queries, score subtraction or L1
normalisation, query normalisation, index shuffling, modulo memories, flat memories). Unknown
tensors are an error: nothing is dropped silently.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, List, Tuple

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))
import safetensors_io  # noqa: E402  (tools/common/safetensors_io.py)

XLM_MAX_POSITIONS = 512  # xlm/model/transformer.py N_MAX_POSITIONS


class ConversionError(Exception):
    pass


# XLM's registered defaults (xlm/model/memory/memory.py register_args, train.py) for flags an
# older checkpoint may lack.
DEFAULTS = {
    "gelu_activation": False, "share_inout_emb": True, "asm": False, "n_langs": 1, "use_lang_emb": True,
    "mem_implementation": "pq_fast", "mem_k_dim": 256, "mem_v_dim": -1, "mem_heads": 4, "mem_knn": 32,
    "mem_n_keys": 512, "mem_query_layer_sizes": "0,0", "mem_query_bias": True, "mem_query_batchnorm": False,
    "mem_use_different_keys": True, "mem_multi_query_net": False, "mem_shuffle_indices": False,
    "mem_shuffle_query": False, "mem_modulo_size": -1, "mem_normalize_query": False, "mem_temperature": 1.0,
    "mem_score_softmax": True, "mem_score_subtract": "", "mem_score_normalize": False, "mem_input2d": False,
    "mem_enc_positions": "", "mem_dec_positions": "",
}


def _params_dict(p) -> dict:
    if isinstance(p, dict):
        return dict(p)
    if hasattr(p, "__dict__"):
        return dict(vars(p))
    raise ConversionError(f"'params' is a {type(p).__name__}, expected a dict or a Namespace")


def load_checkpoint(path: str, model_key: str) -> Tuple[Dict[str, torch.Tensor], dict]:
    data = torch.load(path, map_location="cpu")
    if not isinstance(data, dict):
        raise ConversionError(f"{path}: expected the dict XLM saves, found a {type(data).__name__}")
    if model_key not in data:
        raise ConversionError(f"{path}: no '{model_key}' entry (found {sorted(k for k in data if isinstance(k, str))}); "
                              f"choose one with --model-key")
    if "params" not in data:
        raise ConversionError(f"{path}: no 'params' entry (XLM stores the training flags there)")
    sd = {k: v for k, v in data[model_key].items()}
    if sd and all(k.startswith("module.") for k in sd):
        sd = {k[len("module."):]: v for k, v in sd.items()}
    params = dict(DEFAULTS)
    params.update(_params_dict(data["params"]))
    return sd, params


def parse_positions(value, field: str, n_layers: int) -> List[str]:
    """XLM flags: "4,7+" before check_model_params, [(4, 'in'), (7, 'after')] after it."""
    if isinstance(value, str):
        items = []
        for s in (x for x in value.split(",") if x != ""):
            layer = s[:-1] if s.endswith("+") else s
            if not layer.isdigit():
                raise ConversionError(f"params.{field}: '{s}' is not '<layer>' or '<layer>+'")
            items.append((int(layer), "after" if s.endswith("+") else "in"))
    else:
        items = [(int(layer), str(where)) for layer, where in value]
    out = []
    for layer, where in items:
        if where not in ("in", "after") or not 0 <= layer < n_layers:
            raise ConversionError(f"params.{field}: ({layer}, {where!r}) is not a memory position of a "
                                  f"{n_layers}-layer model")
        out.append(f"{layer}:{where}")
    if not out:
        raise ConversionError(f"params.{field} is empty: the checkpoint has no memory layer")
    return out


def check_supported(p: dict) -> None:
    def refuse(flag, why):
        raise ConversionError(f"params.{flag} = {p.get(flag)!r}: {why} is not supported by the Mnemo pkm plugin")

    if not p["gelu_activation"]:
        refuse("gelu_activation", "a ReLU FFN")
    if p["asm"]:
        refuse("asm", "an adaptive softmax output layer")
    if p["mem_implementation"] not in ("pq_fast", "pq_default"):
        refuse("mem_implementation", "a memory without product keys")
    sizes = p["mem_query_layer_sizes"]
    sizes = [int(x) for x in sizes.split(",") if x != ""] if isinstance(sizes, str) else list(sizes)
    if sizes != [0, 0]:
        refuse("mem_query_layer_sizes", "a query network other than one linear layer ('0,0')")
    for flag, why in (("mem_multi_query_net", "one query MLP per head"), ("mem_shuffle_indices", "shuffled indices"),
                      ("mem_shuffle_query", "a shuffled identity query"), ("mem_normalize_query", "query normalisation"),
                      ("mem_score_normalize", "L1 score normalisation"), ("mem_input2d", "a convolutional query")):
        if p[flag]:
            refuse(flag, why)
    if p["mem_score_subtract"] not in ("", None):
        refuse("mem_score_subtract", "score subtraction")
    if int(p["mem_modulo_size"]) != -1:
        refuse("mem_modulo_size", "a memory whose indices are taken modulo its size")


def convert(sd: Dict[str, torch.Tensor], p: dict, model_key: str, lang_id=None) -> Tuple[dict, Dict[str, torch.Tensor]]:
    """Returns (config.json dict, tensors by Mnemo name)."""
    check_supported(p)
    if "embeddings.weight" not in sd:
        raise ConversionError("the state dict has no 'embeddings.weight': not an XLM TransformerModel")
    vocab, dim = sd["embeddings.weight"].shape
    n_layers, n_heads = int(p["n_layers"]), int(p["n_heads"])
    if int(p.get("emb_dim", dim)) != dim:
        raise ConversionError(f"params.emb_dim = {p['emb_dim']} but embeddings.weight is {list(sd['embeddings.weight'].shape)}")
    field = "mem_dec_positions" if model_key == "decoder" else "mem_enc_positions"
    positions = parse_positions(p[field], field, n_layers)
    heads, k_dim, n_keys = int(p["mem_heads"]), int(p["mem_k_dim"]), int(p["mem_n_keys"])
    half = k_dim // 2
    n_langs = int(p["n_langs"])
    use_lang = n_langs > 1 and bool(p["use_lang_emb"])
    if use_lang and lang_id is None:
        raise ConversionError(f"the model has {n_langs} language embeddings: choose the language with --lang NAME "
                              f"(one of {sorted(p.get('lang2id', {}))}) or --lang-id N")
    ffn_key = next((f"ffns.{i}.lin1.weight" for i in range(n_layers) if f"ffns.{i}.lin1.weight" in sd), None)
    cfg = {
        "model_type": "pkm",
        "emb_dim": int(dim), "n_layers": n_layers, "n_heads": n_heads,
        "ffn_dim": int(sd[ffn_key].shape[0]) if ffn_key else 4 * int(dim),
        "n_words": int(vocab), "max_position_embeddings": int(sd["position_embeddings.weight"].shape[0]),
        "gelu_activation": True, "layer_norm_eps": 1e-12, "share_inout_emb": bool(p["share_inout_emb"]),
        "n_langs": n_langs, "use_lang_emb": bool(p["use_lang_emb"]),
        "mem_positions": positions,
        "mem_k_dim": k_dim, "mem_heads": heads, "mem_knn": int(p["mem_knn"]), "mem_n_keys": n_keys,
        "mem_v_dim": int(p["mem_v_dim"]), "mem_query_bias": bool(p["mem_query_bias"]),
        "mem_query_batchnorm": bool(p["mem_query_batchnorm"]), "mem_bn_eps": 1e-5,
        "mem_temperature": float(p["mem_temperature"]), "mem_score_softmax": bool(p["mem_score_softmax"]),
    }
    if use_lang:
        if not 0 <= lang_id < n_langs:
            raise ConversionError(f"--lang-id {lang_id} is outside 0..{n_langs - 1}")
        cfg["lang_id"] = int(lang_id)

    out: Dict[str, torch.Tensor] = {}
    used = set()

    def take(name: str, expect=None) -> torch.Tensor:
        if name not in sd:
            raise ConversionError(f"tensor '{name}' is missing from the checkpoint")
        t = sd[name]
        if expect is not None and list(t.shape) != list(expect):
            raise ConversionError(f"tensor '{name}' has shape {list(t.shape)}, expected {list(expect)}")
        used.add(name)
        return t

    def copy(name: str, expect=None) -> None:
        out[name] = take(name, expect)

    copy("embeddings.weight")
    copy("position_embeddings.weight")
    if use_lang:
        copy("lang_embeddings.weight", [n_langs, dim])
    elif "lang_embeddings.weight" in sd:
        used.add("lang_embeddings.weight")  # not used by XLM either when use_lang_emb is false
    for n in ("weight", "bias"):
        copy(f"layer_norm_emb.{n}", [dim])
    in_layers = {int(s.split(":")[0]) for s in positions if s.endswith(":in")}
    for i in range(n_layers):
        for lin in ("q_lin", "k_lin", "v_lin", "out_lin"):
            copy(f"attentions.{i}.{lin}.weight", [dim, dim])
            copy(f"attentions.{i}.{lin}.bias", [dim])
        for n in ("weight", "bias"):
            copy(f"layer_norm1.{i}.{n}", [dim])
            copy(f"layer_norm2.{i}.{n}", [dim])
        if i not in in_layers:
            for lin in ("lin1", "lin2"):
                copy(f"ffns.{i}.{lin}.weight")
                copy(f"ffns.{i}.{lin}.bias")
    if model_key == "decoder":
        # Run as a language model the decoder never reads a source: no encoder attention.
        used.update(k for k in sd if k.startswith(("encoder_attn.", "layer_norm15.")))
    for s in positions:
        layer, where = s.split(":")
        pre = f"memories.{layer}_{where}."
        copy(pre + "query_proj.query_mlps.0.weight", [heads * k_dim, dim])
        if p["mem_query_bias"]:
            copy(pre + "query_proj.query_mlps.0.bias", [heads * k_dim])
        if p["mem_query_batchnorm"]:
            for n in ("weight", "bias", "running_mean", "running_var"):
                copy(pre + f"query_proj.query_mlps.1.{n}", [heads * k_dim])
            if pre + "query_proj.query_mlps.1.num_batches_tracked" in sd:
                used.add(pre + "query_proj.query_mlps.1.num_batches_tracked")
        keys = take(pre + "keys")
        if p["mem_use_different_keys"]:
            if list(keys.shape) != [heads, 2, n_keys, half]:
                raise ConversionError(f"tensor '{pre}keys' has shape {list(keys.shape)}, expected {[heads, 2, n_keys, half]}")
            out[pre + "keys"] = keys
        else:
            if list(keys.shape) != [n_keys, half]:
                raise ConversionError(f"tensor '{pre}keys' has shape {list(keys.shape)}, expected {[n_keys, half]} "
                                      f"(mem_use_different_keys is false)")
            out[pre + "keys"] = keys[None, None].expand(heads, 2, n_keys, half).contiguous()
        copy(pre + "values.weight", [n_keys * n_keys, dim])
    if p["share_inout_emb"]:
        if "pred_layer.proj.weight" in sd:
            if not torch.equal(sd["pred_layer.proj.weight"], sd["embeddings.weight"]):
                raise ConversionError("share_inout_emb is set but pred_layer.proj.weight differs from embeddings.weight")
            used.add("pred_layer.proj.weight")
    else:
        copy("pred_layer.proj.weight", [vocab, dim])
    copy("pred_layer.proj.bias", [vocab])
    unknown = sorted(set(sd) - used)
    if unknown:
        raise ConversionError(f"{len(unknown)} tensors of the checkpoint have no place in a pkm folder: "
                              f"{unknown[:6]}{' ...' if len(unknown) > 6 else ''}")
    return cfg, out


def write_folder(out_dir: str, cfg: dict, tensors: Dict[str, torch.Tensor], dtype: str, source: str) -> None:
    dt = safetensors_io.canonical_dtype(dtype)
    stored = {}
    for name in sorted(tensors):
        x = tensors[name].detach().to(torch.float32).contiguous().numpy()
        # --dtype applies to matrices, tables and keys; 1-D tensors (biases, norms, batch norm)
        # stay F32: the plugin adds biases to f32 activations and requires them F32.
        t = dt if x.ndim >= 2 else "F32"
        stored[name] = safetensors_io.Tensor(t, safetensors_io.encode(x, t))
    cfg = dict(cfg)
    cfg["torch_dtype"] = {"F32": "float32", "F16": "float16", "BF16": "bfloat16"}[dt]
    cfg["mnemo_converter"] = {"tool": "tools/convert/xlm_pkm_to_mnemo.py", "source": os.path.basename(source)}
    safetensors_io.write_model_folder(out_dir, stored, cfg)


def main(argv) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("checkpoint")
    ap.add_argument("--out", required=True)
    ap.add_argument("--model-key", default="model", choices=("model", "encoder", "decoder"))
    ap.add_argument("--lang", help="language name (params.lang2id) of the text, for multi-language models")
    ap.add_argument("--lang-id", type=int, help="language id of the text, for multi-language models")
    ap.add_argument("--dtype", default="f32", choices=("f32", "f16", "bf16"))
    a = ap.parse_args(argv)
    try:
        sd, params = load_checkpoint(a.checkpoint, a.model_key)
        lang_id = a.lang_id
        if a.lang is not None:
            lang2id = params.get("lang2id") or {}
            if a.lang not in lang2id:
                raise ConversionError(f"--lang {a.lang!r} is not one of the model's languages {sorted(lang2id)}")
            lang_id = int(lang2id[a.lang])
        cfg, tensors = convert(sd, params, a.model_key, lang_id)
        write_folder(a.out, cfg, tensors, a.dtype, a.checkpoint)
    except ConversionError as e:
        print(f"xlm_pkm_to_mnemo: {e}", file=sys.stderr)
        return 1
    n = sum(t.numel() for t in tensors.values())
    print(f"wrote {a.out}: {len(tensors)} tensors, {n} parameters, memories {cfg['mem_positions']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
