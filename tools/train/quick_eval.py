#!/usr/bin/python3
"""A quick greedy exact-match check of a training checkpoint in PyTorch, while it trains (the real
evaluation is `mnemo eval` on the exported model). With --memories each question gets its
entity's three one-fact references plus two other entities' facts as explicit memories.

    /usr/bin/python3 tools/train/quick_eval.py --work WORK --checkpoint WORK/model.ckpt.pt [--split train] [--n 200]
    ... --questions WORK/questions-unseen_names.jsonl --memories   # the items of a question set
"""
import json
import argparse
import os
import random
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from export import load  # noqa: E402
from tokenizer import Tokenizer, chat_prompt  # noqa: E402
from world import World  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--checkpoint", required=True)
    ap.add_argument("--split", default="train")
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--memories", action="store_true")
    ap.add_argument("--questions", help="a question set (world.py's JSONL): its first N items, not --split")
    a = ap.parse_args()
    torch.set_num_threads(1)
    model = load(a.checkpoint)
    tok = Tokenizer(os.path.join(a.work, "tokenizer"))
    world = World(14)
    rng = random.Random(0)
    ents = world.split(a.split)
    others = world.split("train") + world.split("practice")
    right = 0
    items = [json.loads(l) for l in open(a.questions)][:a.n] if a.questions else None
    by_id = {e.id: e for e in world.entities}
    for k in range(a.n):
        if items:
            it = items[k]
            e, q, ans = by_id[int(it["id"].split(".")[-2][1:])], it["question"], it["answer"]
        else:
            e = rng.choice(ents)
            rel, q, ans = rng.choice(world.questions(e)[::2])
        ids = [tok.bos] + tok.encode(chat_prompt(q))
        mem = None
        if a.memories:
            texts = world.fact_sentences(e, rng) + [rng.choice(world.fact_sentences(d, rng)) for d in rng.sample(others, 2)]
            rng.shuffle(texts)
            refs = [tok.encode(t) for t in texts]
            n = max(map(len, refs))
            R = torch.zeros(1, 5, n, dtype=torch.long)
            V = torch.zeros(1, 5, n, dtype=torch.bool)
            for j, r in enumerate(refs):
                R[0, j, :len(r)] = torch.tensor(r)
                V[0, j, :len(r)] = True
        out = []
        with torch.no_grad():
            if a.memories:
                mem = model.write_memories(R, V)
            for _ in range(12):
                x = torch.tensor([ids + out])
                T = x.shape[1]
                nxt = int(model(x, torch.arange(T)[None], torch.zeros(1, T, dtype=torch.long), mem)[0, -1].argmax())
                if nxt in (tok.eos, tok.im_end):
                    break
                out.append(nxt)
        got = tok.decode(out).strip()
        right += got.lower() == ans.lower()
        if k < 5:
            print(f"  {q} -> {got!r} (expected {ans!r})")
    name = os.path.basename(a.questions) if a.questions else a.split
    print(f"{name}{' +memories' if a.memories else ''}: {right}/{a.n} = {100 * right / a.n:.1f}% exact")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
