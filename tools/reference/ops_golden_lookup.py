"""Golden cases of MEM_INDEX, PEER_GATE, HIVE and the grouped / per-core EMBEDDING_BAG for tools/reference/ops_golden.py (own random stream)."""
import numpy as np

RNG = np.random.default_rng(0)


def build(g):
    """g is the ops_golden module: g.case, g.f32, g.i32, g.Weight, g.f32p."""
