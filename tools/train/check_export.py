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
from data import conversation, turns_of_tokens  # noqa: E402
from tokenizer import Tokenizer, chat_prompt  # noqa: E402
from world import World  # noqa: E402
import memory3  # noqa: E402  (sets the default dtype to float64)


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).abs().max() / b.abs().max())


def padded(refs):
    """References (lists of ids) as one row's [1, M, n] ids and validity."""
    n = max(map(len, refs))
    R = torch.zeros(1, len(refs), n, dtype=torch.long)
    V = torch.zeros(1, len(refs), n, dtype=torch.bool)
    for j, r in enumerate(refs):
        R[0, j, :len(r)] = torch.tensor(r)
        V[0, j, :len(r)] = True
    return R, V


def conversation_example(world: World, tok: Tokenizer):
    """Two turns about two held-out entities, each reading its entity's one-fact references:
    ids, the turn-start offsets the engine's chat passes as segments, and references per turn."""
    a, b = world.split("held_out")[:2]
    qa = [world.questions(e)[0][1:] for e in (a, b)]
    ids, _, answer_ends = conversation(tok, qa)
    rng = __import__("random").Random(3)
    refs = [[tok.encode(s) for s in world.fact_sentences(e, rng)] for e in (a, b)]
    return ids, answer_ends[:-1], refs


def check_conversation(model, ref, tok: Tokenizer, world: World) -> float:
    """The training code's conversations (Memories.set_turns: a token reads its turn's memories)
    against the engine's definition (the reference's chunks restarting at each turn)."""
    ids, starts, refs = conversation_example(world, tok)
    T = len(ids)
    mem = model.write_memories(*padded([r for turn in refs for r in turn]))
    ref_turn = torch.tensor([[t for t, turn in enumerate(refs) for _ in turn]])
    mem.set_turns(ref_turn, torch.tensor([turns_of_tokens(T, starts + [T])]))
    mine = model(torch.tensor([ids]), torch.arange(T)[None], torch.zeros(1, T, dtype=torch.long), mem)[0]
    written = [[ref.write(r) for r in turn] for turn in refs]
    theirs = torch.as_tensor(ref.forward_chunkwise(ids, lambda c: written[c], prompt_len=T, segment_starts=starts))
    return rel(mine, theirs)


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
        mem = model.write_memories(*padded(refs))
        mine = model(x, pos, item, mem)[0]
        written = [ref.write(r) for r in refs]
        theirs = torch.as_tensor(ref.forward_chunkwise(ids, lambda c: written, prompt_len=T))
        d = rel(mine, theirs)
        print(f"{len(refs)} memories: max relative difference {d:.2e}")
        worst = max(worst, d)
        d = check_conversation(model, ref, tok, world)
        print(f"a conversation, each turn reading its own memories: max relative difference {d:.2e}")
        worst = max(worst, d)
    ok = worst <= a.tolerance
    print("OK" if ok else f"FAIL: {worst:.2e} > {a.tolerance:.0e}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
