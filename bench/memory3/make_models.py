#!/usr/bin/python3
"""Memory3 benchmark models: Memory3 adds no parameters to its Llama backbone (§3 of the paper),
so a Memory3 model is an existing Llama checkpoint with model_type "memory3" and the paper's
settings (first half memory layers, 8 tokens per kv head, 128-token references, 64-token chunks,
5 memories per chunk). The weights are linked, not copied.

    bench/memory3/make_models.py [OUT_DIR]      (default: bench-models/)
writes OUT_DIR/memory3-default (assets/default-model, the trained Memory3 model, 1.5 M parameters) and
OUT_DIR/memory3-small (from bench-models/small-random, 156 M, when that exists: make it with
tools/test_models/make_checkpoint.py --preset small, as docs/benchmarks.md says).
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def make(src, dst, memory3):
    if not os.path.isdir(src):
        print(f"skip {dst}: {src} does not exist")
        return
    os.makedirs(dst, exist_ok=True)
    with open(os.path.join(src, "config.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    cfg["model_type"] = "memory3"
    cfg["architectures"] = ["Memory3ForCausalLM"]
    cfg["memory3"] = {**cfg.get("memory3", {}), **memory3}  # the default model is Memory3 already
    with open(os.path.join(dst, "config.json"), "w", encoding="utf-8") as f:
        json.dump(cfg, f, indent=2)
        f.write("\n")
    for name in os.listdir(src):
        if name == "config.json":
            continue
        link = os.path.join(dst, name)
        if os.path.lexists(link):
            os.remove(link)
        os.symlink(os.path.abspath(os.path.join(src, name)), link)
    print(f"wrote {dst}")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "bench-models")
    # The paper's settings are the plugin's defaults; only the reference BOS needs ids for a
    # checkpoint without a tokenizer (random weights: any ids do).
    make(os.path.join(ROOT, "assets", "default-model"), os.path.join(out, "memory3-default"), {})
    make(os.path.join(ROOT, "bench-models", "small-random"), os.path.join(out, "memory3-small"),
         {"reference_bos_ids": [1, 17, 4]})


if __name__ == "__main__":
    main()
