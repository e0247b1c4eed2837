"""The command line every reference forward pass shares.

    REFERENCE.py MODEL_DIR ID,ID,...                          show the logits of one prompt
    REFERENCE.py --goldens [--count 12 --seed 1234] DIR...    (references that write their own
                                                              goldens) golden_ids.txt + golden_logits.npy

A reference passes what it shows for a prompt and, if it has one, its golden writer; the
argument handling (and its errors) is the same for all of them.
"""

from __future__ import annotations

import argparse
from typing import Callable, List, Optional, Sequence

Show = Callable[[str, List[int]], None]                   # (model_dir, ids): print what the reference sees
WriteGoldens = Callable[[str, int, int], None]            # (model_dir, count, seed)


def parse_ids(text: str) -> List[int]:
    """Comma-separated token ids; empty items are skipped."""
    return [int(t) for t in text.split(",") if t.strip()]


def run(argv: Sequence[str], description: str, show: Show, write_goldens: Optional[WriteGoldens] = None) -> int:
    p = argparse.ArgumentParser(description=description, formatter_class=argparse.RawDescriptionHelpFormatter)
    if write_goldens is not None:
        p.add_argument("--goldens", action="store_true",
                       help="write golden_ids.txt + golden_logits.npy into every MODEL_DIR")
        p.add_argument("--count", type=int, default=12, help="golden ids (the first is bos_token_id)")
        p.add_argument("--seed", type=int, default=1234, help="seed of the golden id draw")
    p.add_argument("args", nargs="+", help="MODEL_DIR ID,ID,... (or MODEL_DIR... with --goldens)")
    a = p.parse_args(list(argv))
    if getattr(a, "goldens", False):
        for model_dir in a.args:
            write_goldens(model_dir, a.count, a.seed)
        return 0
    if len(a.args) != 2:
        p.error("expected MODEL_DIR ID,ID,...")
    show(a.args[0], parse_ids(a.args[1]))
    return 0
