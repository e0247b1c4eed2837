#!/usr/bin/python3
"""Trains the default model in two stages (Memory3 §4) on the synthetic world; seeded, resumable.

    /usr/bin/python3 tools/train/train.py --work WORK [--dense] [--steps1 N --steps2 N]

WORK holds the world (world.py output), the tokenizer (tokenizer.py output), checkpoints
(ckpt.pt, written every --save-every steps and at the end; a rerun resumes from it), the loss log
(loss.jsonl) and, at the end, final.pt. --dense trains the ablation: the same backbone without
memory layers, its FFN widened to the same activated parameters, on the same batches.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import sys
import time

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from data import Batches  # noqa: E402
from model import DefaultModel, ModelConfig  # noqa: E402
from tokenizer import Tokenizer  # noqa: E402
from world import World  # noqa: E402


def memory_activated_params(c: ModelConfig) -> int:
    """Parameters one token touches in one UltraMemV2 layer: the projections, every sub-key it
    scores, the cores, and the value / pre-value rows it reads."""
    bag = c.mem_heads * c.mem_knn
    return (2 * c.mem_rank * c.mem_kdim * c.hidden + c.mem_pre_vdim * c.hidden + c.hidden * c.mem_vdim
            + c.mem_heads * 2 * c.sub_keys * c.mem_kdim * c.mem_rank + c.mem_cores * c.mem_heads * c.mem_rank ** 2
            + bag * (c.mem_vdim + c.mem_pre_vdim))


def make_config(tok: Tokenizer, dense: bool) -> ModelConfig:
    prefix = [tok.bos] + tok.encode("Reference:")
    c = ModelConfig(vocab=len(tok), prefix_ids=tuple(prefix))
    if dense:
        extra = memory_activated_params(c) // (3 * c.hidden)     # SwiGLU: 3 * hidden per FFN unit
        extra *= len(c.mem_blocks) / c.layers                    # spread over every block
        c = ModelConfig(**{**c.to_dict(), "memory_layers": c.memory_layers, "prefix_ids": c.prefix_ids,
                           "mem_blocks": c.mem_blocks, "mem_knum": 0, "ffn": c.ffn + int(round(extra))})
    return c


def lr_at(step: int, total: int, peak: float, warmup: int) -> float:
    if step < warmup:
        return peak * (step + 1) / warmup
    t = (step - warmup) / max(1, total - warmup)
    return peak * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * t)))


def loss_of(model: DefaultModel, ids, tgt, pos, item, memories=None) -> torch.Tensor:
    logits = model(ids, pos, item, memories)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), tgt.reshape(-1), ignore_index=-100)


def progress(step: int, total: int, loss: float, t0: float, start: int) -> None:
    done = step + 1 - start
    rate = (time.time() - t0) / max(1, done)
    eta = rate * (total - step - 1)
    bar = "#" * int(30 * (step + 1) / total)
    sys.stderr.write(f"\r[{bar:<30}] {step + 1}/{total} loss {loss:.3f}  {rate:.2f} s/step  eta {eta / 60:.0f} min ")
    sys.stderr.flush()


def load_init(init: str) -> dict:
    """A checkpoint, or an exported model folder (export.py's output, e.g. the shipped
    assets/default-model) read back into one: the recipe's later stages can start from the
    shipped model without its training folder."""
    if os.path.isdir(init):
        from export import read_model_folder
        return read_model_folder(init)
    return torch.load(init)


def stages_before(init: str) -> list:
    """The stages that made the checkpoint a run starts from, so that the exported config names
    the whole recipe, not only its last stage. A checkpoint from before this record names itself."""
    st = load_init(init)
    if "stages" in st:
        return list(st["stages"])
    return [{"name": os.path.basename(init), "steps": st.get("steps", st.get("step")),
             "seconds": round(st.get("seconds", 0.0))}]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--work", required=True)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--dense", action="store_true")
    ap.add_argument("--steps1", type=int, default=3000, help="stage 1 (no memories) steps")
    ap.add_argument("--steps2", type=int, default=4000, help="stage 2 (with memories) steps")
    ap.add_argument("--rows1", type=int, default=32)
    ap.add_argument("--rows2", type=int, default=16)
    ap.add_argument("--length", type=int, default=64)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--save-every", type=int, default=250)
    ap.add_argument("--init", help="start from this checkpoint's weights (e.g. stage 1 of an earlier run)")
    ap.add_argument("--name", help="run name for checkpoints and logs (default: model or dense)")
    ap.add_argument("--warmup", type=int, default=200)
    ap.add_argument("--fresh-share", type=float, default=0.6, help="stage-2 questions about fresh entities")
    ap.add_argument("--stage2-data", choices=("facts", "paragraphs", "dialogue"), default="facts",
                    help="stage-2 questions and references (data.py); paragraphs = the first recipe, "
                         "dialogue = conversations of several turns (the dialogue stage)")
    ap.add_argument("--wordings", choices=("base", "train", "wide"), default="base",
                    help="question wordings: the base recipe's two, those and world.MORE_QUESTIONS (train), "
                         "or those and world.WIDE_QUESTIONS too (wide)")
    ap.add_argument("--new-names", type=float, default=0.0,
                    help="share of fresh entities' entity-valued facts that name made-up entities")
    ap.add_argument("--name-questions", type=float, default=0.0,
                    help="dialogue: share of fresh entities' turns that ask for such a made-up name")
    ap.add_argument("--foreign-names", type=float, default=0.0,
                    help="share of made-up names (fresh entities' and those --new-names makes) of other "
                         "makes than the world's syllables (other_names.foreign_name)")
    ap.add_argument("--lookalike-share", type=float, default=0.0,
                    help="stage-2 distractors whose names share the most pieces with the entity asked's")
    ap.add_argument("--keep-weight", type=float, default=1.0,
                    help="weight of the loss that teaches memories to keep a fact's value (model.keep_loss)")
    a = ap.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    name = a.name or ("dense" if a.dense else "model")
    world = World(json.load(open(os.path.join(a.work, "world.json")))["seed"])
    tok = Tokenizer(os.path.join(a.work, "tokenizer"))
    cfg = make_config(tok, a.dense)
    model = DefaultModel(cfg, seed=a.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, betas=(0.9, 0.98), weight_decay=0.0)
    batches = Batches(world, tok, seed=a.seed)
    batches.stage2_data = a.stage2_data
    batches.fresh_share = a.fresh_share
    batches.lookalike_share = a.lookalike_share
    batches.wordings = a.wordings
    batches.new_names = a.new_names
    batches.name_questions = a.name_questions
    batches.foreign_names = a.foreign_names
    total = a.steps1 + a.steps2
    ckpt = os.path.join(a.work, f"{name}.ckpt.pt")
    start = 0
    stages = stages_before(a.init) if a.init else []
    if a.init and not os.path.exists(ckpt):
        model.load_state_dict(load_init(a.init)["model"])
        print(f"{name}: starting from {a.init}", file=sys.stderr)
    if os.path.exists(ckpt):
        st = torch.load(ckpt)
        model.load_state_dict(st["model"])
        opt.load_state_dict(st["opt"])
        batches.rng.setstate(st["data_rng"])
        torch.set_rng_state(st["torch_rng"])
        start = st["step"]
        print(f"resuming {name} at step {start}", file=sys.stderr)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"{name}: {n_params} parameters, {total} steps ({a.steps1} + {a.steps2})", file=sys.stderr)
    log = open(os.path.join(a.work, f"{name}.loss.jsonl"), "a")
    t0 = time.time()
    for step in range(start, total):
        for g in opt.param_groups:
            g["lr"] = lr_at(step, total, a.lr, a.warmup)
        model.refresh_rank1()
        ids, tgt, pos, item = batches.stage1(a.rows1 if step < a.steps1 else a.rows2, a.length)
        loss1 = loss_of(model, ids, tgt, pos, item)
        loss = loss1
        loss2 = None
        if step >= a.steps1:
            ids, tgt, pos, item, refs, valid, marks, *turns = batches.stage2(a.rows2, cfg.references_per_chunk)
            mem = model.write_memories(refs, valid)
            if turns:
                mem.set_turns(*turns)
            loss2 = loss_of(model, ids, tgt, pos, item, mem)
            keep = model.keep_loss(mem, valid, marks)
            loss = loss1 + loss2 + a.keep_weight * keep
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        rec = {"step": step + 1, "loss": round(loss1.item(), 4), "lr": opt.param_groups[0]["lr"]}
        if loss2 is not None:
            rec["loss_memory"] = round(loss2.item(), 4)
            rec["loss_keep"] = round(keep.item(), 4)
        log.write(json.dumps(rec) + "\n")
        progress(step, total, loss.item(), t0, start)
        if step + 1 == a.steps1 and a.steps2 > 0:   # stage 1's end: where a new stage 2 would start
            torch.save({"model": model.state_dict(), "config": cfg.to_dict(), "steps": step + 1},
                       os.path.join(a.work, f"{name}.stage1.pt"))
        if (step + 1) % a.save_every == 0 or step + 1 == total:
            log.flush()
            tmp = ckpt + ".tmp"
            torch.save({"model": model.state_dict(), "opt": opt.state_dict(), "step": step + 1,
                        "data_rng": batches.rng.getstate(), "torch_rng": torch.get_rng_state(),
                        "config": cfg.to_dict()}, tmp)
            os.replace(tmp, ckpt)
    model.refresh_rank1()
    stages.append({"name": name, "steps1": a.steps1, "steps2": a.steps2, "lr": a.lr, "warmup": a.warmup,
                   "fresh_share": a.fresh_share, "lookalike_share": a.lookalike_share,
                   "keep_weight": a.keep_weight, "stage2_data": a.stage2_data, "dense": a.dense,
                   "wordings": a.wordings, "new_names": a.new_names, "name_questions": a.name_questions,
                   "foreign_names": a.foreign_names,
                   "seconds": round(time.time() - t0)})
    torch.save({"model": model.state_dict(), "config": cfg.to_dict(), "steps": total,
                "seconds": time.time() - t0, "stages": stages}, os.path.join(a.work, f"{name}.final.pt"))
    sys.stderr.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
