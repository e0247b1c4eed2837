#!/usr/bin/python3
"""Writes a trained model (train.py's *.final.pt or *.ckpt.pt) as a Mnemo model folder: an HF-style
config.json (model_type "memory3", the UltraMemV2 mem_* fields when the model has memory layers),
model.safetensors (f32, HF Llama tensor names, the ultramem_v2 memory tensor names), the
tokenizer files and generation_config.json. The semantics are those of plugins/memory3 (see
docs/models/memory3.md), which tools/train/check_export.py verifies against model.py.

    /usr/bin/python3 tools/train/export.py --checkpoint WORK/model.final.pt --tokenizer WORK/tokenizer --out DIR
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))
from model import DefaultModel, ModelConfig  # noqa: E402
import safetensors_io  # noqa: E402


def load(path: str) -> DefaultModel:
    st = read_model_folder(path) if os.path.isdir(path) else torch.load(path)
    model = DefaultModel(ModelConfig.from_dict(st["config"]))
    model.load_state_dict(st["model"])
    model.refresh_rank1()
    return model


def tensors_of(model: DefaultModel) -> dict:
    c = model.cfg
    f = lambda t: safetensors_io.Tensor("F32", t.detach().to(torch.float32).contiguous().numpy())
    out = {"model.embed_tokens.weight": f(model.embed), "model.norm.weight": f(model.g_final)}
    for i, b in enumerate(model.blocks):
        p = f"model.layers.{i}."
        out.update({p + "input_layernorm.weight": f(b.g_in), p + "post_attention_layernorm.weight": f(b.g_post),
                    p + "self_attn.q_proj.weight": f(b.wq), p + "self_attn.k_proj.weight": f(b.wk),
                    p + "self_attn.v_proj.weight": f(b.wv), p + "self_attn.o_proj.weight": f(b.wo),
                    p + "mlp.gate_proj.weight": f(b.w_gate), p + "mlp.up_proj.weight": f(b.w_up),
                    p + "mlp.down_proj.weight": f(b.w_down)})
    if c.has_memory:
        out["model.full_memory_layer.values_for_look_up"] = f(model.values)
        out["model.full_memory_layer.pre_values_for_look_up"] = f(model.pre_values)
        for l, m in enumerate(model.mems):
            p = f"model.mem_blocks.{l}."
            out.update({p + "query_proj.weight": f(m.query_proj), p + "query_norm.weight": f(m.query_norm),
                        # official [H, 2, Nk, kdim, R] is the engine's [2H, Nk, kdim, R]
                        p + "keys": f(m.keys.reshape(-1, *m.keys.shape[2:])),
                        p + "keys_norm.weight": f(m.keys_norm),
                        p + "tucker_core_u": f(m.u), p + "tucker_core_v": f(m.v),
                        p + "shuffle_index": safetensors_io.Tensor("I32", m.shuffle.to(torch.int32).numpy()),
                        p + "pre_values_proj.weight": f(m.pre_values_proj), p + "values_proj.weight": f(m.values_proj)})
            for k in range(c.mem_cores):
                out[p + f"tucker_core.{k}"] = f(m.cores[k])
    return out


def read_model_folder(folder: str) -> dict:
    """The inverse of tensors_of: an exported folder as a checkpoint dict ({"model", "config",
    "steps", "seconds", "stages"}), so the recipe's later stages can start from the shipped model."""
    from tokenizer import Tokenizer
    from train import make_config
    cfg = make_config(Tokenizer(folder), dense=False)
    model = DefaultModel(cfg)
    got = safetensors_io.read_checkpoint(folder)
    params = dict(model.named_parameters())
    params.update({n: b for n, b in model.named_buffers() if n.endswith("shuffle")})
    # Which parameter each exported name was written from (tensors_of's names).
    source = {"model.embed_tokens.weight": "embed", "model.norm.weight": "g_final",
              "model.full_memory_layer.values_for_look_up": "values",
              "model.full_memory_layer.pre_values_for_look_up": "pre_values"}
    hf = {"input_layernorm.weight": "g_in", "post_attention_layernorm.weight": "g_post",
          "self_attn.q_proj.weight": "wq", "self_attn.k_proj.weight": "wk", "self_attn.v_proj.weight": "wv",
          "self_attn.o_proj.weight": "wo", "mlp.gate_proj.weight": "w_gate", "mlp.up_proj.weight": "w_up",
          "mlp.down_proj.weight": "w_down"}
    for i in range(cfg.layers):
        source.update({f"model.layers.{i}.{k}": f"blocks.{i}.{v}" for k, v in hf.items()})
    mem = {"query_proj.weight": "query_proj", "query_norm.weight": "query_norm", "keys": "keys",
           "keys_norm.weight": "keys_norm", "shuffle_index": "shuffle", "pre_values_proj.weight": "pre_values_proj",
           "values_proj.weight": "values_proj"}
    for l in range(len(cfg.mem_blocks)):
        source.update({f"model.mem_blocks.{l}.{k}": f"mems.{l}.{v}" for k, v in mem.items()})
    with torch.no_grad():
        for name, t in got.items():
            if name in source:
                p = params[source[name]]
                p.copy_(torch.from_numpy(np.array(t.data)).reshape(p.shape).to(p.dtype))
            elif ".tucker_core." in name:
                l, k = int(name.split(".")[2]), int(name.rsplit(".", 1)[1])
                model.mems[l].cores[k].copy_(torch.from_numpy(np.array(t.data)))
            elif not name.endswith(("tucker_core_u", "tucker_core_v")):   # refresh_rank1 derives u, v
                raise ValueError(f"{folder}: unexpected tensor {name}")
    model.refresh_rank1()
    note = json.load(open(os.path.join(folder, "config.json"))).get("mnemo_generator", {})
    return {"model": model.state_dict(), "config": cfg.to_dict(), "steps": note.get("steps"),
            "seconds": note.get("training_seconds", 0), "stages": note.get("stages", [])}


def config_of(c: ModelConfig, tok_cfg: dict, note: dict) -> dict:
    cfg = {
        "architectures": ["Memory3ForCausalLM"], "model_type": "memory3",
        "hidden_size": c.hidden, "intermediate_size": c.ffn, "num_hidden_layers": c.layers,
        "num_attention_heads": c.heads, "num_key_value_heads": c.kv_heads, "head_dim": c.head_dim,
        "vocab_size": c.vocab, "max_position_embeddings": 2048 + c.reference_length, "rms_norm_eps": c.eps,
        "rope_theta": c.rope_theta, "rope_scaling": None, "tie_word_embeddings": True, "hidden_act": "silu",
        "attention_bias": False, "mlp_bias": False, "torch_dtype": "float32",
        "bos_token_id": tok_cfg["bos"], "eos_token_id": tok_cfg["eos"],
        "memory3": {"memory_layers": list(c.memory_layers), "tokens_per_head": c.tokens_per_head,
                    "reference_length": c.reference_length, "chunk_length": c.chunk_length,
                    "references_per_chunk": c.references_per_chunk, "reference_bos_ids": list(c.prefix_ids),
                    "selection": "softmax"},
        "mnemo_generator": note,
    }
    if c.has_memory:
        cfg.update({"mem_insert_way": "/".join(f"{b}:{b}" for b in c.mem_blocks), "mem_knum": c.mem_knum,
                    "mem_kdim": c.mem_kdim, "mem_vdim": c.mem_vdim, "mem_knn": c.mem_knn, "mem_head": c.mem_heads,
                    "mem_tucker_rank": c.mem_rank, "mem_tucker_multihead": c.mem_cores, "mem_value_expand_time": 1,
                    "mem_pre_vdim": c.mem_pre_vdim, "mem_share_ratio": 1.0, "mem_key_expand_time": 1,
                    "mem_q_for_each_tucker_rank": True, "mem_use_glu_act": False})
    return cfg


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--tokenizer", required=True, help="the tokenizer folder tokenizer.py wrote")
    ap.add_argument("--out", required=True)
    ap.add_argument("--min-relative-score", type=float, default=0.8,
                    help="the BM25 relative score cut recommended to the engine (generation_config.json "
                         "mnemo_retrieval; 0.8 was the best of a sweep on the training questions for "
                         "the shipped model, bench/default_model/sweep_cut.sh)")
    ap.add_argument("--min-references", type=int, default=3,
                    help="the cut's floor: the best N references are always kept (mnemo_retrieval "
                         "min_references; 3 was the best of the same sweep, and keeps a folder of a "
                         "handful of documents answerable)")
    a = ap.parse_args()
    if not 0 <= a.min_relative_score <= 1:
        ap.error("--min-relative-score must be in [0, 1]")
    if not 0 <= a.min_references <= 1000:
        ap.error("--min-references must be in [0, 1000]")
    model = load(a.checkpoint)
    sys.path.insert(0, HERE)
    from tokenizer import Tokenizer
    tok = Tokenizer(a.tokenizer)
    st = torch.load(a.checkpoint)
    note = {"tool": "tools/train/train.py", "steps": st.get("steps", st.get("step")),
            "training_seconds": round(st.get("seconds", 0.0))}
    if "stages" in st:   # the whole recipe, stage by stage (train.py records it)
        steps = [x.get("steps", x.get("steps1", 0) + x.get("steps2", 0)) for x in st["stages"]]
        note.update({"steps": sum(steps), "training_seconds": sum(x["seconds"] for x in st["stages"]),
                     "stages": st["stages"]})
    cfg = config_of(model.cfg, {"bos": tok.bos, "eos": tok.eos}, note)
    os.makedirs(a.out, exist_ok=True)
    safetensors_io.write_model_folder(a.out, tensors_of(model), cfg)
    for name in ("tokenizer.json", "tokenizer.model", "tokenizer_config.json"):
        shutil.copyfile(os.path.join(a.tokenizer, name), os.path.join(a.out, name))
    gen = {"bos_token_id": tok.bos, "eos_token_id": [tok.eos, tok.im_end], "do_sample": False,
           "max_new_tokens": 32,
           # How the engine should retrieve for this model unless told otherwise: BM25 (its
           # retrieval vectors are not trained) with the relative cut and its floor
           # (retrieval_settings.hpp).
           "mnemo_retrieval": {"mode": "bm25", "min_relative_score": a.min_relative_score,
                               "min_references": a.min_references}}
    with open(os.path.join(a.out, "generation_config.json"), "w") as f:
        json.dump(gen, f, indent=2)
    print(f"wrote {a.out}: {sum(v.data.size for v in tensors_of(model).values())} values", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
