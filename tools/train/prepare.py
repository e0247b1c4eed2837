#!/usr/bin/python3
"""Writes the world and trains the tokenizer into WORK (the first step of make_default_model.sh).

    /usr/bin/python3 tools/train/prepare.py --work WORK [--seed 14] [--vocab 2000]
"""
import argparse
import os
import random
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import tokenizer  # noqa: E402
from world import UNSEEN_SPLITS, World, write_outputs  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--work", required=True)
    ap.add_argument("--seed", type=int, default=14)
    ap.add_argument("--vocab", type=int, default=2000)
    a = ap.parse_args()
    w = World(a.seed)
    write_outputs(w, a.work)
    # Tokenizer text: documents and questions of the entities training may show (train and
    # practice), several wordings each; held-out entities are left out (see tokenizer.py).
    rng = random.Random(a.seed + 2)
    lines = ["Reference:"] * 200  # the reference BOS text (model.py prefix) should be a piece or two
    for e in w.entities:
        if e.split in UNSEEN_SPLITS:   # held out and novel: never in training text
            continue
        for _ in range(3):
            lines.append(w.document(e, rng))
        for _, q, ans in w.questions(e):
            lines.append(f"Question: {q} Answer: {ans}")
            lines.append(f"user {q} assistant")
    tokenizer.train(lines, os.path.join(a.work, "tokenizer"), a.vocab)
    tok = tokenizer.Tokenizer(os.path.join(a.work, "tokenizer"))
    sample = w.document(w.entities[0], rng)
    print(f"tokenizer: {len(tok)} pieces; {len(sample)} chars -> {len(tok.encode(sample))} tokens", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
