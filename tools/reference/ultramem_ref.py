"""Independent torch forward pass (CPU, float64) for the Mnemo folders of UltraMem (model_type
"ultramem", arXiv 2411.12364) and UltraMemV2 ("ultramem_v2", arXiv 2508.18756).

Written from the two papers and the notes on the official code
(/work/shared/notes/memory-layers-reference-code.md sections 1, 2 and 8), never from the C++
plugin, so that the goldens it writes are a second opinion. Where the official code and the papers
disagree we follow the code (docs/models/ultramem.md and ultramem_v2.md list every such place).

Backbone: the OLMo "sequential" block of the official fork (olmo/model.py): pre-norm RMSNorm,
fused q/k/v projection, QK-norm applied PER HEAD (q_norm/k_norm are [head_dim] and run after the
split into heads, before RoPE), rotate-half RoPE, SwiGLU act(gate) * x, optional tied embeddings.

Memory layer (one per entry of mem_insert_way; it reads x = the block's ff_norm output):
  TDQKR (UltraMem eqs. 4-10):
    q = query_proj(x), split into consecutive kdim chunks, each RMS-normed with query_norm;
    memory head h reads the 2*kdim block number h//2 (two heads share a query): its first kdim
    values are the row query, the next kdim the column query.
    K~ = keys RMS-normed over kdim (keys_norm gain), S_row[h,n,r] = q_row . K~[h,row,n,:,r],
    S_col likewise (eq. 4, no 1/sqrt(d)).
    Stage 1 (eqs. 6-9): s1 = u[h] . S_row, s2 = v[h] . S_col with u, v the stored rank-1 buffers,
    I1 = top-m(s1), I2 = top-m(s2), m = knn.
    Stage 2 (eqs. 10, 16): T_c(i,j) = S_row[I1_i] C_c S_col[I2_j]^T, ranked by sum_c T_c, the
    best knn pairs kept; virtual index I1*Nk + I2 and the per-core scores T_c (raw: no softmax).
  IVE + MCS (eqs. 13-17): s = shuffle[virtual], group g = s // value_num,
    row = (s % value_num + offset) % A; out[g, core c's 1/C slice] += T_c * V[row, same slice];
    y = values_proj(out flattened g-major)  (= sum_g W_g^T (V^T s_g), eq. 15).
  V2: memory after every block ("full"), one value table shared by all layers with a window of
    value_num rows per layer starting at offset_l = l * knum^2; pre-value gate (PEER, eq. 15 of
    the V2 paper) scales every score by act(pre_values[row] . pre_values_proj(x)), act = identity
    unless mem_use_glu_act (then GELU erf); with value_expand_time == 1 the Ek^2 groups are summed
    before the single values_proj (eq. 12).

Top-k order: largest first, ties to the lower index (a stable sort), the order of the Mnemo op
ARGTOPK; `stats` reports how close any selection came to a tie so the goldens can avoid ones that
a float32 engine could resolve differently.

Usage:  logits = forward(model_dir, ids)      # -> np.ndarray [T, V] float64
        /usr/bin/python3 tools/reference/ultramem_ref.py MODEL_DIR 1,2,3
"""

from __future__ import annotations

import math
import os
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import llama_core  # noqa: E402  (the backbone: pre-norm Llama blocks, per-head QK-norm, RoPE)
import llama_ref  # noqa: E402  (the backbone config)
import reference_cli  # noqa: E402
from llama_core import F64, Rotation, Weights, rms_norm  # noqa: E402

SUPPORTED = ("ultramem", "ultramem_v2")


# ----------------------------------------------------------------------------------------------
# Configuration
# ----------------------------------------------------------------------------------------------

def parse_insert_way(text: str, n_layers: int) -> List[Tuple[int, int]]:
    """mem_insert_way -> [(read_block, add_block)] in memory-layer order.

    'full': memory l reads block l and adds after block l. "a:b/c:d": memory i is the i-th pair
    of the string (olmo/model.py parse_memory_layer_path keeps the string order); it reads block
    a's ff_norm output and its output is added to the residual after block b.
    """
    if text == "full":
        return [(i, i) for i in range(n_layers)]
    if text in ("", "no_mem"):
        return []
    pairs = []
    for part in text.split("/"):
        a, b = part.split(":")
        pairs.append((int(a), int(b)))
    # The official loop keeps ONE pending output: a pair whose add block comes before its read
    # block, or another read inside (a, b], would silently lose a memory's output. Such configs
    # are rejected here (and by the plugin) rather than reproduced.
    for i, (a, b) in enumerate(pairs):
        if not (0 <= a <= b < n_layers):
            raise ValueError(f"mem_insert_way pair {a}:{b} needs 0 <= a <= b < {n_layers}")
        for j, (a2, _) in enumerate(pairs):
            if j != i and (a2 == a or a < a2 <= b):
                raise ValueError(f"mem_insert_way pairs {a}:{b} and {a2}:{pairs[j][1]} overlap")
    return pairs


@dataclass(kw_only=True)
class MemoryFields:
    """The memory layers of a config.json (the mem_* fields) and the sizes derived from them.
    Read by ultramem's Config and by memory3.py (UltraMemV2 layers on a Llama backbone)."""
    v2: bool
    insert: List[Tuple[int, int]]
    knum: int
    kdim: int
    vdim: int
    knn: int
    mem_heads: int
    rank: int
    cores: int
    value_expand: int
    # derived per architecture
    key_expand: int = 1
    nk: int = 0               # sub-keys per side (expanded)
    value_num: int = 0        # rows of one layer's window
    table_rows: int = 0       # A: rows of the (shared) value table
    virtual: int = 0          # shuffle length
    groups: int = 1           # virtual blocks the bag output is grouped into
    queries: int = 1          # kdim chunks per side in query_proj (V2 q_for_each: rank)
    pre_vdim: int = 0
    glu_act: bool = False
    share_ratio: float = 1.0


def read_memory_fields(c: dict, layers: int, v2: bool, default_insert: str) -> MemoryFields:
    """The mem_* fields of config dict c for a backbone of `layers` blocks, read as UltraMemLayerV2
    (v2) or V1 reads them; default_insert stands in for an absent mem_insert_way."""
    f = MemoryFields(
        v2=v2, insert=parse_insert_way(str(c.get("mem_insert_way", default_insert)), layers),
        knum=int(c["mem_knum"]), kdim=int(c["mem_kdim"]), vdim=int(c["mem_vdim"]),
        knn=int(c["mem_knn"]), mem_heads=int(c.get("mem_head", 1)),
        rank=int(c.get("mem_tucker_rank", 2)), cores=int(c.get("mem_tucker_multihead", 2)),
        value_expand=int(c.get("mem_value_expand_time", 1 if v2 else 4)),
    )
    n_mem = len(f.insert)
    if not v2:
        # UltraMemLayerV1: key_expand = int(sqrt(E)), Nk = key_expand * knum, one table of
        # knum^2 rows per layer, E virtual blocks, shuffle over E * knum^2.
        f.key_expand = int(f.value_expand ** 0.5)
        f.nk = f.key_expand * f.knum
        f.value_num = f.knum * f.knum
        f.table_rows = f.value_num
        f.virtual = f.value_expand * f.value_num
        f.groups = f.value_expand
        f.queries = 1
    else:
        # UltraMemLayerV2: A = knum^2 * L_mem rows shared by all layers, each layer a window of
        # knum_r^2 rows (knum_r = int(sqrt(A * share_ratio)), float sqrt then truncation).
        f.share_ratio = float(c["mem_share_ratio"])
        f.key_expand = int(c.get("mem_key_expand_time", 1))
        f.table_rows = f.knum * f.knum * n_mem
        knum_r = int((f.table_rows * f.share_ratio) ** 0.5)
        f.value_num = knum_r * knum_r
        f.nk = f.key_expand * knum_r
        f.groups = f.key_expand * f.key_expand
        f.virtual = f.groups * f.value_num
        f.queries = f.rank if c.get("mem_q_for_each_tucker_rank", False) else 1
        f.pre_vdim = int(c.get("mem_pre_vdim", 0))
        f.glu_act = bool(c.get("mem_use_glu_act", False))
        if f.queries * f.kdim != 2 * f.kdim:
            # The CUDA path slices half = queries*kdim/2 values per side: only rank-2 queries
            # give the kdim the keys have (notes 2.2).
            raise ValueError("ultramem_v2 needs mem_q_for_each_tucker_rank with tucker rank 2")
    return f


@dataclass(kw_only=True)
class Config(llama_ref.Config, MemoryFields):
    """The OLMo backbone (a Llama with no biases and per-head QK-norm) and the memory layers."""

    @staticmethod
    def from_dict(c: dict, where: str = "config.json") -> "Config":
        mt = llama_ref.check_model_type(c, where, SUPPORTED)
        backbone = Config.shared_fields(c, eps=1e-5)
        backbone["rope_scaling"] = None          # OLMo's RotaryEmbedding has no scaling
        v2 = mt == "ultramem_v2"
        memory = read_memory_fields(c, backbone["layers"], v2, "full" if v2 else "")
        return Config(model_type=mt, **backbone, qk_norm="head" if c.get("qk_norm", True) else "", **vars(memory))


def window_offset(cfg: MemoryFields, layer: int) -> int:
    """Start of memory layer `layer`'s window in the value table (always 0 for V1)."""
    return layer * cfg.knum * cfg.knum if cfg.v2 else 0


# ----------------------------------------------------------------------------------------------
# Top-k and its tie margins
# ----------------------------------------------------------------------------------------------

def topk_stable(x: torch.Tensor, k: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Largest k along the last axis, largest first, ties to the lower index."""
    order = torch.sort(-x, dim=-1, stable=True).indices[..., :k]
    return torch.gather(x, -1, order), order


def boundary_gap(x: torch.Tensor, k: int) -> float:
    """Smallest (k-th largest - (k+1)-th largest) / max|x| over the rows: how near a tie the
    top-k selection of each row came (inf when k covers the whole row)."""
    if k >= x.shape[-1]:
        return math.inf
    s = torch.sort(x, dim=-1, descending=True).values
    scale = s.abs().amax(dim=-1).clamp_min(1e-300)
    return float(((s[..., k - 1] - s[..., k]) / scale).min())


@dataclass
class Stats:
    """How close the memory selections came to ties (relative gaps), over one forward."""
    min_gap_stage1: float = math.inf
    min_gap_stage2: float = math.inf

    def min_gap(self) -> float:
        return min(self.min_gap_stage1, self.min_gap_stage2)


# ----------------------------------------------------------------------------------------------
# Model
# ----------------------------------------------------------------------------------------------

class MemoryLayers:
    """The memory layers of a model: cfg gives their fields, W their tensors, eps every RMSNorm's
    epsilon (the query and key norms use the backbone's). stats collects the tie gaps."""

    def __init__(self, cfg: MemoryFields, W: Weights, eps: float):
        self.mem_cfg = cfg
        self.W = W
        self.eps = eps
        self.stats = Stats()

    # --- memory layer ------------------------------------------------------------------------

    def _mem(self, l: int, suffix: str) -> torch.Tensor:
        return self.W(f"model.mem_blocks.{l}.{suffix}")

    def query(self, l: int, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """Row and column queries [T, H, kdim] of memory layer l for inputs x [T, D]."""
        c = self.mem_cfg
        T = x.shape[0]
        q = x @ self._mem(l, "query_proj.weight").T                     # [T, 2*queries*kdim]
        q = rms_norm(q.view(T, -1, c.kdim), self._mem(l, "query_norm.weight"), self.eps)
        blocks = q.reshape(T, -1, 2 * c.kdim)                           # consecutive 2*kdim blocks
        if (c.mem_heads - 1) // 2 >= blocks.shape[1]:
            raise ValueError(f"memory head {c.mem_heads - 1} needs query block {(c.mem_heads - 1) // 2}, "
                             f"query_proj has {blocks.shape[1]}")
        heads = [blocks[:, h // 2, :] for h in range(c.mem_heads)]
        qh = torch.stack(heads, dim=1)                                  # [T, H, 2*kdim]
        return qh[..., : c.kdim], qh[..., c.kdim:]

    def subkey_scores(self, l: int, q_row: torch.Tensor, q_col: torch.Tensor):
        """S_row, S_col [T, H, Nk, R] (UltraMem eq. 4 with normalised keys)."""
        c = self.mem_cfg
        keys = self._mem(l, "keys").view(c.mem_heads, 2, c.nk, c.kdim, c.rank)
        # keys_norm over kdim for every (head, side, key, rank); the same gain everywhere.
        kt = keys.transpose(-1, -2)                                     # [H, 2, Nk, R, kdim]
        kn = rms_norm(kt, self._mem(l, "keys_norm.weight"), self.eps).transpose(-1, -2)
        s_row = torch.einsum("thd,hndr->thnr", q_row, kn[:, 0])
        s_col = torch.einsum("thd,hndr->thnr", q_col, kn[:, 1])
        return s_row, s_col

    def tdqkr(self, l: int, x: torch.Tensor):
        """Tucker-decomposed retrieval: virtual indices [T, H, knn] (best first) and the per-core
        scores [T, H, knn, C] of memory layer l."""
        c = self.mem_cfg
        q_row, q_col = self.query(l, x)
        s_row, s_col = self.subkey_scores(l, q_row, q_col)
        u = self._mem(l, "tucker_core_u").view(c.mem_heads, c.rank)
        v = self._mem(l, "tucker_core_v").view(c.mem_heads, c.rank)
        cores = torch.stack([self._mem(l, f"tucker_core.{i}") for i in range(c.cores)])  # [C, H, R, R]
        m = k = c.knn
        # Stage 1: rank-1 approximation of the summed core (eqs. 6-9), top-m per side.
        s1 = torch.einsum("thnr,hr->thn", s_row, u)
        s2 = torch.einsum("thnr,hr->thn", s_col, v)
        _, i1 = topk_stable(s1, m)
        _, i2 = topk_stable(s2, m)
        self.stats.min_gap_stage1 = min(self.stats.min_gap_stage1, boundary_gap(s1, m), boundary_gap(s2, m))
        # Stage 2: exact bilinear scores of the m*m candidate pairs, per core (eq. 16).
        r_sel = torch.gather(s_row, 2, i1[..., None].expand(-1, -1, -1, c.rank))   # [T, H, m, R]
        c_sel = torch.gather(s_col, 2, i2[..., None].expand(-1, -1, -1, c.rank))
        per_core = torch.einsum("thar,chrs,thbs->cthab", r_sel, cores, c_sel)       # [C, T, H, m, m]
        per_core = per_core.reshape(c.cores, *per_core.shape[1:3], m * m)
        total = per_core.sum(dim=0)                                                 # [T, H, m*m]
        _, best = topk_stable(total, k)
        self.stats.min_gap_stage2 = min(self.stats.min_gap_stage2, boundary_gap(total, k))
        virt = torch.gather(i1, 2, best // m) * c.nk + torch.gather(i2, 2, best % m)
        scores = torch.stack([torch.gather(per_core[i], 2, best) for i in range(c.cores)], dim=-1)
        return virt, scores

    def physical(self, l: int, virt: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        """Index pipeline: (group, table row) of virtual indices (notes 8.3)."""
        c = self.mem_cfg
        s = self.W.indices(f"model.mem_blocks.{l}.shuffle_index")[virt]
        group = s // c.value_num
        row = (s % c.value_num + window_offset(c, l)) % c.table_rows
        return group, row

    def value_table(self, l: int) -> torch.Tensor:
        if self.mem_cfg.v2:
            return self.W("model.full_memory_layer.values_for_look_up")
        return self._mem(l, "values_for_look_up")

    def memory(self, l: int, x: torch.Tensor) -> torch.Tensor:
        """Output [T, D] of memory layer l for its input x [T, D] (a block's ff_norm output)."""
        c = self.mem_cfg
        T = x.shape[0]
        virt, scores = self.tdqkr(l, x)
        virt = virt.reshape(T, -1)                    # heads concatenated: a bag of H*knn entries
        scores = scores.reshape(T, -1, c.cores)
        group, row = self.physical(l, virt)
        if c.pre_vdim > 0:
            # PEER pre-values (V2 paper eq. 15): a scalar per entry from a row dot product.
            p = x @ self._mem(l, "pre_values_proj.weight").T                        # [T, pre_vdim]
            pre = self.W("model.full_memory_layer.pre_values_for_look_up")[row]     # [T, B, pre_vdim]
            gate = torch.einsum("tbp,tp->tb", pre, p)
            if c.glu_act:
                gate = torch.nn.functional.gelu(gate)
            scores = scores * gate[..., None]
        table = self.value_table(l)
        vals = table[row].view(T, -1, c.cores, c.vdim // c.cores)                   # core c: own slice
        weighted = (vals * scores[..., None]).reshape(T, -1, c.vdim)
        out = torch.zeros(T, c.groups, c.vdim, dtype=F64)
        out.scatter_add_(1, group[..., None].expand(-1, -1, c.vdim), weighted)
        if c.v2 and c.value_expand == 1:
            out = out.sum(dim=1, keepdim=True)        # one projector for all virtual blocks
        return out.reshape(T, -1) @ self._mem(l, "values_proj.weight").T


class MemoryPass:
    """The memory layers inside one forward over the decoder blocks, by placement a:b: read(i, x)
    with block i's ff_norm output runs the layers that read block i, add(i, h) after block i adds
    the outputs placed there."""

    def __init__(self, layers: MemoryLayers):
        self.layers = layers
        self.reads = {a: l for l, (a, _) in enumerate(layers.mem_cfg.insert)}
        self.pending: Dict[int, List[torch.Tensor]] = {}

    def read(self, i: int, x: torch.Tensor) -> None:
        if i in self.reads:
            l = self.reads[i]
            self.pending.setdefault(self.layers.mem_cfg.insert[l][1], []).append(self.layers.memory(l, x))

    def add(self, i: int, h: torch.Tensor) -> torch.Tensor:
        for y in self.pending.pop(i, []):
            h = h + y
        return h


class UltraMemRef(MemoryLayers):
    def __init__(self, model_dir: str):
        self.cfg = Config.load(model_dir)
        super().__init__(self.cfg, Weights(model_dir), self.cfg.eps)

    # --- the model: memories read inside blocks of the llama_core decoder -----------------------

    def forward(self, ids: Sequence[int]) -> np.ndarray:
        """Logits [T, V]: memory l reads the ff_norm output x of block insert[l][0], and its output
        is added to the residual stream after block insert[l][1]."""
        c = self.cfg
        memory = MemoryPass(self)

        def feed_forward(i: int, x: torch.Tensor) -> torch.Tensor:
            memory.read(i, x)
            return llama_core.layer_mlp(c, self.W, i, x)

        def layer(i: int, h: torch.Tensor, rope: Rotation) -> torch.Tensor:
            return memory.add(i, llama_core.decoder_layer(c, self.W, i, h, rope, feed_forward=feed_forward))

        return llama_core.run_layers(c, self.W, ids, layer=layer)[0].numpy()


def forward(model_dir: str, ids: Sequence[int], stats: Optional[Stats] = None) -> np.ndarray:
    """Logits [T, vocab] (float64) at every position of `ids`; `stats` receives the tie gaps."""
    m = UltraMemRef(model_dir)
    out = m.forward(ids)
    if stats is not None:
        stats.min_gap_stage1 = m.stats.min_gap_stage1
        stats.min_gap_stage2 = m.stats.min_gap_stage2
    return out


def show(model_dir: str, ids: List[int]) -> None:
    st = Stats()
    logits = forward(model_dir, ids, st)
    print("argmax", logits.argmax(axis=1).tolist())
    print("logits[-1][:8]", np.round(logits[-1][:8], 6).tolist())
    print(f"closest selection to a tie: stage 1 {st.min_gap_stage1:.3g}, stage 2 {st.min_gap_stage2:.3g}")


if __name__ == "__main__":
    raise SystemExit(reference_cli.run(sys.argv[1:], __doc__, show))
