#!/usr/bin/python3
"""Seeded random "memory3" model folder (a Llama with Memory3 explicit memories, see
tools/reference/memory3.py) plus the plain-prompt goldens every tiny test model carries.

Memory3 adds no tensors to its Llama backbone (§3 of the paper), so the weights are exactly
tools/test_models/make_checkpoint.py's llama for the same flags and seed (each tensor draws from
its own (seed, name) stream); only config.json differs: model_type "memory3", architectures
["Memory3ForCausalLM"] and the "memory3" object, which is checked by the reference's own parser
before anything is written.

Also writes golden_ids.txt (make_goldens.golden_ids: the seeded draw of every test model) and
golden_logits.npy: the reference's logits of that prompt with no memories retrieved (the
reference BOS is still there, as the plugin has it). The memory goldens proper come from
`python3 tools/reference/memory3.py MODEL_DIR OUT_DIR`
(tools/test_models/make_memory3_test_models.sh).

With --memory-layers '{"mem_insert_way": "full", "mem_knum": 4, ...}' the model also gets
UltraMemV2 memory layers (tools/reference/memory3.py, "Memory layers"): the object's mem_* fields
go to the top level of config.json, and the tensors model.mem_blocks.{l}.* /
model.full_memory_layer.* are drawn as tools/test_models/make_ultramem_checkpoint.py draws them
(from numpy's default_rng(seed + 1); Tucker buffers u/v the rank-1 SVD of the summed core,
shuffle_index a permutation) and added to the backbone's checkpoint (which needs --dtype f32 then).

Usage: make_memory3_checkpoint.py --out DIR --memory3 '{"memory_layers": [0, 1], ...}'
           [--memory-layers '{"mem_insert_way": "full", ...}']
           [every tools/test_models/make_checkpoint.py flag: --hidden --layers --heads --kv-heads
            --head-dim --ffn --vocab --tied --dtype --seed ...] [--count 12] [--ids-seed 1234]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import List, Optional

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.path.dirname(HERE)
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(TOOLS, "common"))
sys.path.insert(0, os.path.join(TOOLS, "reference"))
import make_checkpoint  # noqa: E402  (the llama tensor plan and the streaming writer)
import make_goldens  # noqa: E402  (golden_ids, save_goldens)
import make_ultramem_checkpoint  # noqa: E402  (the memory layers' tensors)
import memory3  # noqa: E402  (config check and the plain-prompt logits)
import safetensors_io  # noqa: E402


def memory3_config(a: argparse.Namespace, m3: dict, mem: Optional[dict] = None) -> dict:
    cfg = make_checkpoint.make_config(a)
    cfg["model_type"] = memory3.MODEL_TYPE
    cfg["architectures"] = ["Memory3ForCausalLM"]
    cfg["memory3"] = m3
    cfg.update(mem or {})
    cfg["mnemo_generator"] = {"tool": "tools/test_models/make_memory3_checkpoint.py", "seed": a.seed,
                              "note": "random untrained weights"}
    return cfg


def generate(a: argparse.Namespace, m3: dict, mem: Optional[dict] = None) -> List[str]:
    """Writes the checkpoint and config.json of a memory3 folder; a is make_checkpoint's parsed args,
    mem the mem_* fields of UltraMemV2 memory layers (None: none)."""
    if a.arch != "llama":
        raise ValueError("the Memory3 backbone is a llama (--arch llama)")
    memory3.Memory3Config.from_json(m3, a.layers)       # refuse a bad memory3 object before writing
    config = memory3_config(a, m3, mem)
    if mem is not None:
        memory3.memory_layer_fields(config, a.layers)     # refuse bad mem_* fields likewise
        if a.dtype != "f32" or a.shards or a.shard_bytes:
            raise ValueError("--memory-layers writes one f32 file: use --dtype f32 and no sharding")
    files = make_checkpoint.write_planned(a.out, make_checkpoint.tensor_plan(a), a.seed, config,
                                          "mnemo tools/test_models/make_memory3_checkpoint.py",
                                          shard_bytes=a.shard_bytes, shards=a.shards)
    if mem is None:
        return files
    tensors = safetensors_io.read_checkpoint(a.out)
    make_ultramem_checkpoint.add_memory_tensors(tensors, np.random.default_rng(a.seed + 1),
                                                make_ultramem_checkpoint.memory_args(mem, a.layers), a.hidden)
    safetensors_io.write_model_folder(a.out, tensors, config)
    return [os.path.join(a.out, "model.safetensors")]


def write_prompt_goldens(model_dir: str, count: int, ids_seed: int) -> np.ndarray:
    ids = make_goldens.golden_ids(model_dir, count, ids_seed)
    logits = memory3.Memory3.load(model_dir).forward_chunkwise(ids, lambda c: []).numpy()
    make_goldens.save_goldens(model_dir, ids, logits)
    return logits


def main(argv: List[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--memory3", default="{}", help="the config.json memory3 object, as JSON")
    p.add_argument("--memory-layers", dest="memory_layers",
                   help="UltraMemV2 memory layers: their config.json mem_* fields, as a JSON object")
    p.add_argument("--count", type=int, default=12, help="golden ids")
    p.add_argument("--ids-seed", type=int, default=1234, dest="ids_seed")
    own, rest = p.parse_known_args(argv)
    a = make_checkpoint.parse_args(rest)
    try:
        m3 = json.loads(own.memory3)
        if not isinstance(m3, dict):
            raise ValueError("--memory3 must be a JSON object")
        mem = None if own.memory_layers is None else json.loads(own.memory_layers)
        if mem is not None and (not isinstance(mem, dict) or not all(k.startswith("mem_") for k in mem)):
            raise ValueError("--memory-layers must be a JSON object of mem_* fields")
        files = generate(a, m3, mem)
    except ValueError as e:
        print(f"make_memory3_checkpoint.py: {e}", file=sys.stderr)
        return 1
    logits = write_prompt_goldens(a.out, own.count, own.ids_seed)
    size = sum(os.path.getsize(f) for f in files)
    print(f"{a.out}: checkpoint {size:,} bytes, prompt argmax {logits.argmax(axis=1).tolist()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
