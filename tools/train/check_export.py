#!/usr/bin/python3
"""Checks that an exported model folder means what the trained PyTorch model means: the logits of
model.py (the training code) and of tools/reference/memory3.py (the engine's reference, reading
the exported files) agree, without and with explicit memories.

    /usr/bin/python3 tools/train/check_export.py --checkpoint WORK/model.final.pt --model DIR
Exit status 1 when the largest relative difference exceeds --tolerance.
"""

from __future__ import annotations

import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "reference"))
from export import load  # noqa: E402
from tokenizer import Tokenizer, chat_prompt  # noqa: E402
from world import World  # noqa: E402
import memory3  # noqa: E402  (sets the default dtype to float64)


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--tolerance", type=float, default=1e-6)
    a = ap.parse_args()
    model = load(a.checkpoint).double()
    tok = Tokenizer(a.model)
    world = World(14)
    e = world.split("held_out")[0]
    ids = [tok.bos] + tok.encode(chat_prompt(world.questions(e)[0][1]))
    docs = [world.entities[i] for i in (e.id, 1, 2, 3, 4)]
    refs = [tok.encode(world.document(d, __import__("random").Random(d.id))) for d in docs]
    ref = memory3.Memory3.load(a.model)
    T = len(ids)
    x = torch.tensor([ids])
    pos = torch.arange(T)[None]
    item = torch.zeros(1, T, dtype=torch.long)
    worst = 0.0
    with torch.no_grad():
        mine = model(x, pos, item)[0]
        theirs = torch.as_tensor(ref.forward_chunkwise(ids, lambda c: [], prompt_len=T))
        d = rel(mine, theirs)
        print(f"no memories: max relative difference {d:.2e}")
        worst = max(worst, d)
        n = max(len(r) for r in refs)
        R = torch.zeros(1, len(refs), n, dtype=torch.long)
        V = torch.zeros(1, len(refs), n, dtype=torch.bool)
        for j, r in enumerate(refs):
            R[0, j, :len(r)] = torch.tensor(r)
            V[0, j, :len(r)] = True
        mem = model.write_memories(R, V)
        mine = model(x, pos, item, mem)[0]
        written = [ref.write(r) for r in refs]
        theirs = torch.as_tensor(ref.forward_chunkwise(ids, lambda c: written, prompt_len=T))
        d = rel(mine, theirs)
        print(f"{len(refs)} memories: max relative difference {d:.2e}")
        worst = max(worst, d)
    ok = worst <= a.tolerance
    print("OK" if ok else f"FAIL: {worst:.2e} > {a.tolerance:.0e}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
