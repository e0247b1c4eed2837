#!/usr/bin/python3
"""The default model in PyTorch, for training: a Llama backbone whose blocks carry UltraMemV2
memory layers and whose first half reads Memory3 explicit memories. Its forward pass is exactly
what the engine's `memory3` plugin computes for the exported checkpoint (export.py), so the
formulas below follow the engine's docs, not a library:

Block i (Llama, pre-norm):
    h = h + W_o Attn_i(RMSNorm(h)·g_in)                              Memory3 eq. 4 (below)
    x = RMSNorm(h)·g_post
    h = h + W_down(SiLU(W_gate x) ⊙ W_up x) + Mem_i(x)              UltraMemV2 "full" placement

Mem_i (UltraMemV2, arXiv 2508.18756; shapes as plugins/ultramem):
    q = RMSNorm_kdim(W_q x), block h//2 for memory head h, row/column halves      (eq. 4)
    S_row, S_col = q · RMSNorm_kdim(K) ⊙ g_k                           [H, Nk, R]  (no 1/√d)
    stage 1: top-knn of u·S_row and v·S_col (u, v: rank-1 SVD of Σ_c C_c)   (UltraMem eqs. 6-9)
    stage 2: T_c = S_row[I1] C_c S_col[I2]ᵀ, best knn pairs by Σ_c T_c       (eqs. 10, 16)
    row = (shuffle[virtual] + l·knum²) mod A;  T_c ← (P[row] · W_p x) T_c   (V2 eq. 15, linear gate)
    Mem(x) = W_v Σ_bag [T_c · V[row, slice_c]]_c                         (IVE + MCS, eq. 17)

Attn_i (Memory3, shared/papers/004 §3.2, eq. 4; positions as plugins/memory3/memory3_attention.hpp):
    keys = [reference BOS (RoPE -b..-1), memories of the chunk (memory layers only; token j of a
            reference at RoPE j), context (RoPE R + t, causal)]
Writing a memory (§3.3): a causal pass over "<s>Reference:" + reference at -b..-1, 0..n-1; at a
memory layer each kv head keeps the 8 reference tokens with the largest
    w_j = Σ_{h in group} Σ_i softmax_j(q_i·k_j/√d)      (pre-RoPE q, k; no mask; BOS excluded)
and stores their post-RoPE keys and values.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import List, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F


@dataclass
class ModelConfig:
    vocab: int = 2000
    hidden: int = 128
    layers: int = 4
    heads: int = 4
    kv_heads: int = 4
    head_dim: int = 32
    ffn: int = 384
    rope_theta: float = 10000.0
    eps: float = 1e-5
    # UltraMemV2 memory layers, placed as mem_insert_way pairs "a:a" (read block a's FFN input,
    # add after block a); mem_knum=0 turns them off (the dense ablation, whose FFN is widened to
    # the same activated parameters instead).
    mem_blocks: Tuple[int, ...] = (1, 3)
    mem_knum: int = 32
    mem_kdim: int = 32
    mem_vdim: int = 128
    mem_pre_vdim: int = 32
    mem_heads: int = 2
    mem_knn: int = 8
    mem_cores: int = 2
    mem_rank: int = 2
    # Memory3
    memory_layers: Tuple[int, ...] = (0, 1)
    tokens_per_head: int = 8
    reference_length: int = 128
    chunk_length: int = 64
    references_per_chunk: int = 5
    prefix_ids: Tuple[int, ...] = ()

    @property
    def has_memory(self) -> bool:
        return self.mem_knum > 0

    # Derived UltraMemV2 sizes (share ratio 1, key/value expand 1: plugins/ultramem).
    @property
    def table_rows(self) -> int:
        return self.mem_knum * self.mem_knum * len(self.mem_blocks)

    @property
    def sub_keys(self) -> int:
        return int(math.isqrt(self.table_rows))

    @property
    def value_num(self) -> int:
        return self.sub_keys * self.sub_keys

    def to_dict(self) -> dict:
        d = asdict(self)
        d["memory_layers"] = list(self.memory_layers)
        d["prefix_ids"] = list(self.prefix_ids)
        d["mem_blocks"] = list(self.mem_blocks)
        return d

    @staticmethod
    def from_dict(d: dict) -> "ModelConfig":
        d = dict(d)
        d["memory_layers"] = tuple(d["memory_layers"])
        d["prefix_ids"] = tuple(d["prefix_ids"])
        d["mem_blocks"] = tuple(d["mem_blocks"])
        return ModelConfig(**d)


def rms_norm(x: torch.Tensor, g: torch.Tensor, eps: float) -> torch.Tensor:
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * g


class Rope:
    """HF rotate-half RoPE at arbitrary (possibly negative) positions."""

    def __init__(self, cfg: ModelConfig):
        d = cfg.head_dim
        self.inv_freq = 1.0 / (cfg.rope_theta ** (torch.arange(0, d, 2, dtype=torch.float64) / d))

    def __call__(self, x: torch.Tensor, pos: torch.Tensor) -> torch.Tensor:
        """x [..., T, heads, d], pos [..., T] (integers)."""
        ang = pos.to(torch.float64)[..., None] * self.inv_freq            # [..., T, d/2]
        cos = torch.cat([ang.cos(), ang.cos()], -1).to(x.dtype)[..., None, :]
        sin = torch.cat([ang.sin(), ang.sin()], -1).to(x.dtype)[..., None, :]
        half = x.shape[-1] // 2
        rot = torch.cat([-x[..., half:], x[..., :half]], -1)
        return x * cos + rot * sin


class MemoryLayer(nn.Module):
    """One UltraMemV2 layer; the value tables live in the model (shared by every layer)."""

    def __init__(self, cfg: ModelConfig, index: int, gen: torch.Generator):
        super().__init__()
        c = cfg
        self.cfg, self.index = cfg, index
        H, R, nk, kd = c.mem_heads, c.mem_rank, c.sub_keys, c.mem_kdim
        self.query_proj = nn.Parameter(torch.randn(2 * R * kd, c.hidden, generator=gen) / math.sqrt(c.hidden))
        self.query_norm = nn.Parameter(torch.ones(kd))
        self.keys = nn.Parameter(torch.randn(H, 2, nk, kd, R, generator=gen))
        self.keys_norm = nn.Parameter(torch.ones(kd))
        self.cores = nn.Parameter(torch.randn(c.mem_cores, H, R, R, generator=gen) / R + torch.eye(R) / c.mem_cores)
        self.pre_values_proj = nn.Parameter(torch.randn(c.mem_pre_vdim, c.hidden, generator=gen) / math.sqrt(c.hidden))
        self.values_proj = nn.Parameter(torch.randn(c.hidden, c.mem_vdim, generator=gen) * 0.02)
        self.register_buffer("shuffle", torch.randperm(c.value_num, generator=gen).to(torch.int64))
        self.register_buffer("u", torch.zeros(H, R))
        self.register_buffer("v", torch.zeros(H, R))
        self.refresh_rank1()

    @torch.no_grad()
    def refresh_rank1(self) -> None:
        """u, v: the leading singular vectors of the summed core (the official training sets these
        buffers before every step); the sign makes u sum positive, a fixed convention."""
        U, S, Vh = torch.linalg.svd(self.cores.sum(0))
        u, v = U[..., :, 0], Vh[..., 0, :]
        sign = torch.where(u.sum(-1, keepdim=True) < 0, -1.0, 1.0)
        self.u.copy_(u * sign)
        self.v.copy_(v * sign)

    def forward(self, x: torch.Tensor, values: torch.Tensor, pre_values: torch.Tensor) -> torch.Tensor:
        c = self.cfg
        shape = x.shape[:-1]
        x = x.reshape(-1, c.hidden)
        T, H, R, kd, m, nk = x.shape[0], c.mem_heads, c.mem_rank, c.mem_kdim, c.mem_knn, c.sub_keys
        q = rms_norm((x @ self.query_proj.T).view(T, -1, kd), self.query_norm, c.eps)
        blocks = q.reshape(T, -1, 2 * kd)
        qh = blocks[:, [h // 2 for h in range(H)], :]                       # [T, H, 2kd]
        kn = rms_norm(self.keys.transpose(-1, -2), self.keys_norm, c.eps).transpose(-1, -2)  # [H,2,nk,kd,R]
        s_row = torch.einsum("thd,hndr->thnr", qh[..., :kd], kn[:, 0])
        s_col = torch.einsum("thd,hndr->thnr", qh[..., kd:], kn[:, 1])
        with torch.no_grad():
            i1 = torch.topk(torch.einsum("thnr,hr->thn", s_row, self.u), m, dim=-1).indices
            i2 = torch.topk(torch.einsum("thnr,hr->thn", s_col, self.v), m, dim=-1).indices
        r_sel = torch.gather(s_row, 2, i1[..., None].expand(-1, -1, -1, R))
        c_sel = torch.gather(s_col, 2, i2[..., None].expand(-1, -1, -1, R))
        # T_c[a, b] = Σ_rs S_row[a, r] C_c[r, s] S_col[b, s], written as R² broadcast products (the
        # einsum would run as T·H·C tiny matrix products).
        per_core = sum(self.cores[:, None, :, r, s_, None, None] * (r_sel[None, ..., :, r, None] * c_sel[None, ..., None, :, s_])
                       for r in range(R) for s_ in range(R)).reshape(c.mem_cores, T, H, m * m)
        with torch.no_grad():
            best = torch.topk(per_core.sum(0), m, dim=-1).indices            # [T, H, m]
        virt = torch.gather(i1, 2, best // m) * nk + torch.gather(i2, 2, best % m)
        scores = torch.gather(per_core, 3, best[None].expand(c.mem_cores, -1, -1, -1))  # [C, T, H, m]
        scores = scores.permute(1, 2, 3, 0).reshape(T, H * m, c.mem_cores)
        offset = self.index * c.mem_knum * c.mem_knum
        row = (self.shuffle[virt.reshape(T, -1)] % c.value_num + offset) % c.table_rows   # [T, B]
        gate = (F.embedding(row, pre_values) * (x @ self.pre_values_proj.T)[:, None, :]).sum(-1, keepdim=True)
        scores = scores * gate
        # Core c weights its own vdim/C slice of each value row (multi-core scoring): one weighted
        # bag sum per core, without materialising the [T, B, vdim] rows.
        dc = c.mem_vdim // c.mem_cores
        out = torch.cat([F.embedding_bag(row, values[:, i * dc:(i + 1) * dc], mode="sum",
                                         per_sample_weights=scores[..., i].contiguous())
                         for i in range(c.mem_cores)], dim=-1)
        return (out @ self.values_proj.T).reshape(*shape, c.hidden)


class Block(nn.Module):
    def __init__(self, cfg: ModelConfig, gen: torch.Generator):
        super().__init__()
        c = cfg
        D, hd = c.hidden, c.head_dim
        init = lambda o, i: nn.Parameter(torch.randn(o, i, generator=gen) * 0.02)
        self.g_in = nn.Parameter(torch.ones(D))
        self.g_post = nn.Parameter(torch.ones(D))
        self.wq, self.wk = init(c.heads * hd, D), init(c.kv_heads * hd, D)
        self.wv, self.wo = init(c.kv_heads * hd, D), init(D, c.heads * hd)
        self.w_gate, self.w_up, self.w_down = init(c.ffn, D), init(c.ffn, D), init(D, c.ffn)


@dataclass
class Memories:
    """Explicit memories for a batch: per memory layer, keys/values [B, kv_heads, S, d] (post-RoPE
    keys) and a validity mask [B, S] (the same slots in every memory layer)."""
    k: List[torch.Tensor]
    v: List[torch.Tensor]
    valid: torch.Tensor
    # Per memory layer, the §3.3 selection weights [B, M, kv_heads, n] the slots were chosen by
    # (differentiable: keep_loss trains them; the choice itself is a top-k without gradient).
    mass: List[torch.Tensor] = field(default_factory=list)
    # Conversations (data.py dialogue rows): the turn of each slot [B, S] and of each token [B, T];
    # a token reads only its own turn's memories, as each chat turn reads what its prompt retrieved.
    slot_turn: Optional[torch.Tensor] = None
    token_turn: Optional[torch.Tensor] = None

    def set_turns(self, ref_turn: torch.Tensor, token_turn: torch.Tensor) -> None:
        """ref_turn [B, M] (the turn of each reference) -> slot_turn, slots being reference-major."""
        keep = self.k[0].shape[2] // ref_turn.shape[1]
        self.slot_turn = ref_turn.repeat_interleave(keep, dim=1)
        self.token_turn = token_turn


class DefaultModel(nn.Module):
    def __init__(self, cfg: ModelConfig, seed: int = 0):
        super().__init__()
        gen = torch.Generator().manual_seed(seed)
        self.cfg = cfg
        c = cfg
        self.embed = nn.Parameter(torch.randn(c.vocab, c.hidden, generator=gen) * 0.02)
        self.blocks = nn.ModuleList([Block(c, gen) for _ in range(c.layers)])
        self.g_final = nn.Parameter(torch.ones(c.hidden))
        if c.has_memory:
            self.mems = nn.ModuleList([MemoryLayer(c, i, gen) for i in range(len(c.mem_blocks))])
            self.values = nn.Parameter(torch.randn(c.table_rows, c.mem_vdim, generator=gen) * 0.02)
            self.pre_values = nn.Parameter(torch.randn(c.table_rows, c.mem_pre_vdim, generator=gen) / math.sqrt(c.mem_pre_vdim))
        self.rope = Rope(c)

    def refresh_rank1(self) -> None:
        if self.cfg.has_memory:
            for m in self.mems:
                m.refresh_rank1()

    # --- pieces ---------------------------------------------------------------------------

    def _project(self, blk: Block, x: torch.Tensor):
        c = self.cfg
        B, T = x.shape[:2]
        return ((x @ blk.wq.T).view(B, T, c.heads, c.head_dim), (x @ blk.wk.T).view(B, T, c.kv_heads, c.head_dim),
                (x @ blk.wv.T).view(B, T, c.kv_heads, c.head_dim))

    def _attend(self, q, k, v, open_) -> torch.Tensor:
        """q [B,T,H,d], k/v [B,S,Hkv,d], open_ [B,T,S] bool -> [B,T,H*d]."""
        c = self.cfg
        rep = c.heads // c.kv_heads
        k = k.repeat_interleave(rep, dim=2)
        v = v.repeat_interleave(rep, dim=2)
        s = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(c.head_dim)
        s = s.masked_fill(~open_[:, None], float("-inf"))
        p = torch.softmax(s, dim=-1)
        return torch.einsum("bhts,bshd->bthd", p, v).reshape(q.shape[0], q.shape[1], -1)

    def _ffn(self, i: int, h: torch.Tensor) -> torch.Tensor:
        c, blk = self.cfg, self.blocks[i]
        x = rms_norm(h, blk.g_post, c.eps)
        y = (F.silu(x @ blk.w_gate.T) * (x @ blk.w_up.T)) @ blk.w_down.T
        if c.has_memory and i in c.mem_blocks:
            y = y + self.mems[c.mem_blocks.index(i)](x, self.values, self.pre_values)
        return h + y

    def logits(self, h: torch.Tensor) -> torch.Tensor:
        return rms_norm(h, self.g_final, self.cfg.eps) @ self.embed.T

    # --- the reference BOS and memory writing ----------------------------------------------

    def encode(self, ids: torch.Tensor, valid: torch.Tensor, layers: int, want_mass: bool = False):
        """A causal pass over [prefix_ids, ids] at positions -b..-1, 0..n-1 (no memories).
        ids/valid [B, n]. Returns per layer (k post-RoPE, v, mass or None) of the n reference
        slots for the first `layers` layers, and the prefix-slot k/v of every layer visited."""
        c = self.cfg
        B, n = ids.shape
        b = len(c.prefix_ids)
        pre = torch.tensor(c.prefix_ids, dtype=torch.long).expand(B, b)
        full = torch.cat([pre, ids], 1)
        ok = torch.cat([torch.ones(B, b, dtype=torch.bool), valid], 1)
        pos = torch.arange(-b, n).expand(B, -1)
        causal = torch.tril(torch.ones(b + n, b + n, dtype=torch.bool))
        open_ = causal[None] & ok[:, None, :]
        h = self.embed[full]
        out = []
        for i in range(layers):
            blk = self.blocks[i]
            x = rms_norm(h, blk.g_in, c.eps)
            q, k, v = self._project(blk, x)
            mass = None
            if want_mass and i in c.memory_layers:
                mass = self._selection_mass(q[:, b:], k[:, b:], valid)
            kr = self.rope(k, pos)
            out.append((kr, v, mass))
            if i + 1 < layers:
                h = h + self._attend(self.rope(q, pos), kr, v, open_) @ blk.wo.T
                h = self._ffn(i, h)
        return out

    def _selection_mass(self, q, k, valid) -> torch.Tensor:
        """§3.3 softmax selection weights [B, kv_heads, n] over the valid reference tokens."""
        c = self.cfg
        rep = c.heads // c.kv_heads
        kk = k.repeat_interleave(rep, dim=2)
        s = torch.einsum("bihd,bjhd->bhij", q, kk) / math.sqrt(c.head_dim)
        s = s.masked_fill(~valid[:, None, None, :], float("-inf"))
        p = torch.softmax(s, -1) * valid[:, None, :, None]               # queries: valid only
        w = p.sum(2)                                                     # [B, H, n]
        return w.view(w.shape[0], c.kv_heads, rep, -1).sum(2)

    def prefix_kv(self):
        """The reference BOS keys/values of every layer [1, b, kv_heads, d] (§3.2)."""
        c = self.cfg
        empty = torch.zeros(1, 0, dtype=torch.long)
        enc = self.encode(empty, torch.zeros(1, 0, dtype=torch.bool), c.layers)
        return [(k, v) for k, v, _ in enc]

    def write_memories(self, refs: torch.Tensor, valid: torch.Tensor) -> Memories:
        """refs/valid [B, M, n]: M references per row -> their sparse memories, each kv head
        keeping its own tokens_per_head most attended tokens, in ascending token order."""
        c = self.cfg
        B, M, n = refs.shape
        b = len(c.prefix_ids)
        enc = self.encode(refs.view(B * M, n), valid.view(B * M, n), max(c.memory_layers) + 1, want_mass=True)
        keep = min(c.tokens_per_head, n)
        ks, vs, masses = [], [], []
        slot_valid = None
        for layer in c.memory_layers:
            k, v, mass = enc[layer]
            masses.append(mass.view(B, M, c.kv_heads, n))
            k, v = k[:, b:], v[:, b:]                                      # [BM, n, Hkv, d]
            with torch.no_grad():
                m = mass.masked_fill(~valid.view(B * M, 1, n), float("-inf"))
                # Most attended first, equal weights to the lower index (repeated tokens tie exactly
                # at layer 0), then kept in ascending token order: the engine's rule.
                idx = torch.sort(-m, dim=-1, stable=True).indices[..., :keep].sort(-1).values
                ok = torch.gather(valid.view(B * M, 1, n).expand(-1, c.kv_heads, -1), 2, idx)
            kt = k.permute(0, 2, 1, 3)                                     # [BM, Hkv, n, d]
            vt = v.permute(0, 2, 1, 3)
            g = idx[..., None].expand(-1, -1, -1, c.head_dim)
            ks.append(torch.gather(kt, 2, g).view(B, M, c.kv_heads, keep, c.head_dim))
            vs.append(torch.gather(vt, 2, g).view(B, M, c.kv_heads, keep, c.head_dim))
            okv = ok.view(B, M, c.kv_heads, keep)
            slot_valid = okv if slot_valid is None else slot_valid
        # Slots: [B, Hkv, M*keep, d]; validity is per kv head, so keep it per head.
        k_out = [x.permute(0, 2, 1, 3, 4).reshape(B, c.kv_heads, M * keep, c.head_dim) for x in ks]
        v_out = [x.permute(0, 2, 1, 3, 4).reshape(B, c.kv_heads, M * keep, c.head_dim) for x in vs]
        valid_out = slot_valid.permute(0, 2, 1, 3).reshape(B, c.kv_heads, M * keep)
        return Memories(k_out, v_out, valid_out, masses)

    def keep_loss(self, memories: Memories, valid: torch.Tensor, marks: torch.Tensor,
                  margin: float = 0.2) -> torch.Tensor:
        """Teaches what a memory keeps. §3.3 keeps each kv head's tokens_per_head most attended
        reference tokens, a choice without gradient, and a small model left alone keeps the
        name's pieces and drops the value it would have to read (a year's digits first). For each
        marked value token of a reference longer than the budget, in every memory layer and kv
        head: relu(m_k + margin − m_j), m_k the head's k-th largest weight (held fixed). Zero
        once every value token outweighs the k-th by the margin: chosen, and not by a near tie.
        The engine's rule is unchanged; the model learns to attend so that the rule keeps it."""
        keep = self.cfg.tokens_per_head
        total, count = marks.new_zeros((), dtype=torch.float32), 0
        long_ = valid.sum(-1) > keep                                       # [B, M]
        want = (marks & long_[..., None])[:, :, None, :]                   # [B, M, 1, n]
        if not bool(want.any()):
            return total
        for mass in memories.mass:
            m = mass.masked_fill(~valid[:, :, None, :], float("-inf"))
            kth = torch.topk(m, keep, dim=-1).values[..., -1:].detach()     # [B, M, Hkv, 1]
            gap = F.relu(kth + margin - mass).masked_fill(~want, 0.0)
            total = total + gap.sum()
            count += int(want.sum()) * mass.shape[2]
        return total / max(1, count)

    # --- the forward pass (LOGITS) -----------------------------------------------------------

    def forward(self, ids: torch.Tensor, pos: torch.Tensor, item: torch.Tensor,
                memories: Optional[Memories] = None) -> torch.Tensor:
        """ids, pos (context position t), item (packing id; -1 = padding) [B, T] -> logits."""
        c = self.cfg
        B, T = ids.shape
        prefix = self.prefix_kv()
        b = len(c.prefix_ids)
        rpos = pos + c.reference_length
        causal = (pos[:, None, :] <= pos[:, :, None]) & (item[:, None, :] == item[:, :, None]) & (item[:, None, :] >= 0)
        eye = torch.eye(T, dtype=torch.bool)[None]
        causal = causal | eye                                               # padding rows see themselves
        h = self.embed[ids]
        for i, blk in enumerate(self.blocks):
            x = rms_norm(h, blk.g_in, c.eps)
            q, k, v = self._project(blk, x)
            q, k = self.rope(q, rpos), self.rope(k, rpos)
            pk, pv = prefix[i]
            keys = [pk.expand(B, -1, -1, -1)]
            vals = [pv.expand(B, -1, -1, -1)]
            opens = [torch.ones(B, T, b, dtype=torch.bool)]
            if memories is not None and i in c.memory_layers:
                j = c.memory_layers.index(i)
                # per-kv-head validity: attend per head group, so expand masks over heads below
                keys.append(memories.k[j].permute(0, 2, 1, 3))
                vals.append(memories.v[j].permute(0, 2, 1, 3))
                opens.append(None)
            keys.append(k)
            vals.append(v)
            opens.append(causal)
            out = self._attend_heads(q, keys, vals, opens, memories)
            h = h + out @ blk.wo.T
            h = self._ffn(i, h)
        return self.logits(h)

    def _attend_heads(self, q, keys, vals, opens, memories: Optional[Memories]) -> torch.Tensor:
        """Attention over concatenated key sets; the memory set (open_ None) has a per-kv-head
        validity mask memories.valid [B, Hkv, S], and in a conversation each token sees only the
        slots of its own turn."""
        c = self.cfg
        B, T = q.shape[:2]
        rep = c.heads // c.kv_heads
        k = torch.cat(keys, 1).repeat_interleave(rep, dim=2)
        v = torch.cat(vals, 1).repeat_interleave(rep, dim=2)
        masks = []
        for kk, o in zip(keys, opens):
            if o is None:
                mv = memories.valid.repeat_interleave(rep, dim=1)         # [B, H, S]
                m = mv[:, :, None, :].expand(-1, -1, T, -1)
                if memories.token_turn is not None:
                    m = m & (memories.token_turn[:, None, :, None] == memories.slot_turn[:, None, None, :])
                masks.append(m)
            else:
                masks.append(o[:, None].expand(-1, c.heads, -1, -1))
        open_ = torch.cat(masks, -1)                                      # [B, H, T, S]
        s = torch.einsum("bthd,bshd->bhts", q, k) / math.sqrt(c.head_dim)
        s = s.masked_fill(~open_, float("-inf"))
        p = torch.softmax(s, dim=-1)
        return torch.einsum("bhts,bshd->bthd", p, v).reshape(B, T, -1)
