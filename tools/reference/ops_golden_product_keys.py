"""Golden cases of PK_SCORE, PK_TOPK, PK_PAIR_SCORES for tools/reference/ops_golden.py (own random stream)."""
import numpy as np

RNG = np.random.default_rng(0)


def build(g):
    """g is the ops_golden module: g.case, g.f32, g.i32, g.Weight, g.f32p."""
