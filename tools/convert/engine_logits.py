"""What the converter round-trip tests (tools/convert/test_*.py) ask of the built engine: the
logits `bin/mnemo logits` computes (f32) for a converted folder, to compare with the float64
references.

The build is $MNEMO_BUILD_BIN (ctest sets it), else build/bin of this checkout; a test without a
built mnemo skips its engine comparison rather than failing.
"""

from __future__ import annotations

import os
import subprocess
import unittest
from typing import Optional, Sequence

import numpy as np

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def mnemo_binary() -> Optional[str]:
    """Path of the built mnemo, or None when there is none."""
    exe = os.path.join(os.environ.get("MNEMO_BUILD_BIN") or os.path.join(REPO, "build", "bin"), "mnemo")
    return exe if os.path.exists(exe) else None


def engine_logits(test: unittest.TestCase, model_dir: str, ids: Sequence[int], scratch_dir: str) -> np.ndarray:
    """`mnemo logits -m MODEL_DIR --ids ... --cache-type f32` as float64 [T, vocab] (the .npy goes to
    scratch_dir; an f32 KV cache, as the references keep theirs). Skips `test` when no mnemo is
    built; fails it, with mnemo's stderr, when mnemo fails."""
    exe = mnemo_binary()
    if exe is None:
        test.skipTest("no bin/mnemo built (set MNEMO_BUILD_BIN): engine not compared")
    out = os.path.join(scratch_dir, "engine_logits.npy")
    r = subprocess.run([exe, "logits", "-m", model_dir, "--ids", ",".join(map(str, ids)), "--cache-type", "f32", "--out", out],
                       capture_output=True, text=True)
    test.assertEqual(r.returncode, 0, f"mnemo logits -m {model_dir}: {r.stderr}")
    return np.load(out).astype(np.float64)
