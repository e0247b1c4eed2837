"""Independent numpy reference (float64) of Memory3 explicit memories on a Llama backbone.

Memory3 (Yang et al. 2024, "Memory3: Language Modeling with Explicit Memory",
shared/papers/004_8bce556ea15d8036.txt) turns each reference text (<= 128 tokens) into an
explicit memory: for every memory layer and key-value head, the post-RoPE keys and the values of
the 8 reference tokens that receive the most attention (§3.3). At inference the model reads the
memories retrieved for the current 64-token chunk by concatenating them before the context's keys
and values (eq. 4, §3.2); every 64 generated tokens it drops them and retrieves new ones (§3.1,
§7.5). This file is written from the paper alone (no official code is consulted) and reuses the
Llama building blocks of llama_ref.py, so that the only new arithmetic here is Memory3's. It is
the yardstick for issue 6's C++ `memory3` plugin; `main()` writes goldens for it.

Model folder format (the C++ plugin follows it)
-----------------------------------------------
config.json is an HF "llama" config whose model_type is "memory3" (the engine picks a plugin by
model_type; keeping "llama" would let the plain llama plugin run a Memory3 model silently without
its reference BOS). The backbone fields mean exactly what they mean for "llama" (head_dim,
attention_bias, mlp_bias, rope_scaling, tie_word_embeddings, ...), and the tensors carry the HF
llama names: Memory3 "adds no new trainable parameters" (§3). The Memory3 settings sit in one
optional object, every field optional (defaults shown); unknown fields are an error so a typo is
not silently a default:

    "memory3": {
      "memory_layers": [0, 1],           default: the first half, range(num_hidden_layers // 2) (§3.3)
      "tokens_per_head": 8,              tokens kept per kv head (§3.3)
      "reference_length": 128,           reference tokens, reference BOS not counted (§3.1)
      "chunk_length": 64,                tokens per retrieval chunk (§3.1)
      "references_per_chunk": 5,         at most this many memories per chunk (§3.1)
      "reference_bos": "<s>Reference:",  the modified BOS text (§3.2), tokenized with special
                                         tokens parsed ("<s>" = the BOS token) and nothing added
      "reference_bos_ids": [1, 17, 4],   optional: these ids instead of tokenizing reference_bos
                                         (this reference has no tokenizer; the caller or this
                                         field must give the ids)
      "selection": "softmax"             "softmax": the weights §3.3 defines; "exp_sum": the
                                         approximation the authors' implementation used
    }

Positions (one absolute convention, because stored keys are post-RoPE)
---------------------------------------------------------------------
With b = len(reference BOS ids) and R = reference_length, Figure 9's layout is laid out on
consecutive positions:

    reference BOS  "<s>Reference:"   positions 0 .. b-1
    memory token j of any reference  position  b + j         (j = 0..R-1; all memories share
                                                              this interval: parallel positions)
    context token t (ids[t])         position  b + R + t     (ids[0] is normally the context <s>)

A reference is encoded exactly as a normal text "<s>Reference: ..." at positions 0 .. b+n-1, so
its token j already sits at b + j and the writer is a plain causal forward pass whose keys are
stored as they come out of RoPE ("sparsification is applied after RoPE", §3.2). Shifting every
position by -b gives the "memory's own positions 0..R-1" view with the BOS at -b..-1; attention
is identical (RoPE scores depend only on position differences), but stored keys differ by a
rotation of b, so the engine must use this convention: keys rotated at b + j.

Writing (§3.3)
--------------
Encode [reference BOS, reference] causally. At each memory layer l take the attention input X
(the normed hidden state) of the reference tokens only (BOS and padding excluded both as queries
and as keys), and the pre-RoPE projections q_i = X_i W_Q, k_j = X_j W_K (bias included). For kv
head g serving query heads h in G(g) (GQA):

    "softmax":  w_j = sum_{h in G(g)} sum_i softmax_j( q_i^h . k_j^g / sqrt(d) )
    "exp_sum":  w_j = sum_{h in G(g)} sum_i exp( q_i^h . k_j^g / sqrt(d) )

no causal mask, no RoPE. The paper writes the sum per attention head for MHA; with GQA one kv
head is one memory head (§3.3 "all key-value heads ... are memory heads"), so its weight sums the
attention its whole query group pays. Keep the top `tokens_per_head` tokens; ties go to the lower
token index; the kept tokens are stored in ascending token order (attention is a set operation,
the order only fixes the file layout). A reference shorter than tokens_per_head keeps all its
tokens and marks the remaining slots with index -1 (zero key/value, never attended).

Reading (eq. 4)
---------------
At a memory layer, query i of chunk c attends to
    concat( reference-BOS K/V,  K/V of the memories of chunk c,  context K/V of tokens <= i )
and at every other layer to concat( reference-BOS K/V, context K/V of tokens <= i ): the
reference BOS "is placed at every head at every layer" (§3.2), only the memories are restricted
to the memory layers. The reference BOS K/V are those of a plain causal pass over the BOS ids;
they are there whether or not any memory was retrieved, since the model was trained to see that
prefix as "the new constant for all attention heads" (§3.2). With reference_bos_ids = [] and no
memories the model is exactly the plain Llama.

Chunks (§3.1, §7.5): the prompt ids[0:P] is cut into chunks of chunk_length tokens, numbered
0..Cp-1 (the last may be partial). Decoded tokens ids[P:] form decoded chunks of chunk_length
tokens; decoded chunk 0 keeps the memories of the last prompt chunk (index Cp-1), decoded chunk
k >= 1 gets index Cp-1+k. The caller maps a chunk index to its memories.

Usage:
    m = Memory3.load(model_dir)                          # reference_bos_ids from config or argument
    mem = m.write(ref_ids)                               # one Memory
    logits = m.forward_chunkwise(ids, lambda c: [mem], prompt_len=P)      # [T, vocab]
    logits = m.forward_token_by_token(ids, lambda c: [mem], prompt_len=P) # same, slow
    python3 tools/reference/memory3_ref.py MODEL_DIR OUT_DIR   # goldens (see main)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
from dataclasses import dataclass, replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.dirname(HERE))
sys.path.insert(0, HERE)
import llama_ref  # noqa: E402  (tools/reference/llama_ref.py: Config, Weights, RoPE, attention, MLP)

MODEL_TYPE = "memory3"
SELECTIONS = ("softmax", "exp_sum")


# ----------------------------------------------------------------------------------------------
# Configuration
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Memory3Config:
    memory_layers: Tuple[int, ...]
    tokens_per_head: int = 8
    reference_length: int = 128
    chunk_length: int = 64
    references_per_chunk: int = 5
    reference_bos: str = "<s>Reference:"
    reference_bos_ids: Optional[Tuple[int, ...]] = None
    selection: str = "softmax"

    @staticmethod
    def from_json(obj: dict, layers: int) -> "Memory3Config":
        known = {"memory_layers", "tokens_per_head", "reference_length", "chunk_length",
                 "references_per_chunk", "reference_bos", "reference_bos_ids", "selection"}
        unknown = sorted(set(obj) - known)
        if unknown:
            raise ValueError(f"config.json memory3: unknown field(s) {unknown}; known: {sorted(known)}")
        ids = obj.get("reference_bos_ids")
        c = Memory3Config(
            # §3.3: "we only set the first half of the attention layers to be memory layers"
            memory_layers=tuple(int(l) for l in obj.get("memory_layers", range(layers // 2))),
            tokens_per_head=int(obj.get("tokens_per_head", 8)),
            reference_length=int(obj.get("reference_length", 128)),
            chunk_length=int(obj.get("chunk_length", 64)),
            references_per_chunk=int(obj.get("references_per_chunk", 5)),
            reference_bos=str(obj.get("reference_bos", "<s>Reference:")),
            reference_bos_ids=None if ids is None else tuple(int(t) for t in ids),
            selection=str(obj.get("selection", "softmax")),
        )
        c.check(layers)
        return c

    def check(self, layers: int) -> None:
        ml = self.memory_layers
        if list(ml) != sorted(set(ml)) or any(l < 0 or l >= layers for l in ml):
            raise ValueError(f"memory3.memory_layers {list(ml)} must be increasing, distinct, in [0, {layers})")
        if not 1 <= self.tokens_per_head <= self.reference_length:
            raise ValueError("memory3.tokens_per_head must be in [1, reference_length]")
        if self.chunk_length < 1 or self.references_per_chunk < 0:
            raise ValueError("memory3.chunk_length must be >= 1 and references_per_chunk >= 0")
        if self.selection not in SELECTIONS:
            raise ValueError(f"memory3.selection {self.selection!r} is not one of {SELECTIONS}")


def load_config(model_dir: str) -> Tuple[llama_ref.Config, Memory3Config]:
    """(backbone llama Config, Memory3Config) from MODEL_DIR/config.json (model_type "memory3")."""
    with open(os.path.join(model_dir, "config.json"), "r", encoding="utf-8") as f:
        raw = json.load(f)
    if raw.get("model_type") != MODEL_TYPE:
        raise ValueError(f"{model_dir}/config.json: model_type {raw.get('model_type')!r} is not {MODEL_TYPE!r}")
    # llama_ref parses a config from a folder; give it the backbone as the llama config it is,
    # rather than re-writing its parser here.
    backbone = {k: v for k, v in raw.items() if k != "memory3"}
    backbone["model_type"] = "llama"
    with tempfile.TemporaryDirectory() as tmp:
        with open(os.path.join(tmp, "config.json"), "w", encoding="utf-8") as f:
            json.dump(backbone, f)
        cfg = llama_ref.Config.load(tmp)
    return cfg, Memory3Config.from_json(raw.get("memory3") or {}, cfg.layers)


# ----------------------------------------------------------------------------------------------
# Writing: token sparsification (§3.3)
# ----------------------------------------------------------------------------------------------

def selection_log_weights(q: np.ndarray, k: np.ndarray, valid: np.ndarray, mode: str) -> np.ndarray:
    """log w_j of §3.3 for one memory layer: q [H, n, d], k [Hkv, n, d] pre-RoPE projections of the
    reference tokens, valid [n] (False = BOS or padding). Returns [Hkv, n], -inf where invalid.

    The scores have no causal mask and no RoPE (§3.3: every position has "an equal chance to
    receive attention"). Logs keep "exp_sum" finite; they rank exactly like w."""
    H, n, d = q.shape
    Hkv = k.shape[0]
    group = H // Hkv
    # einsum without `optimize` runs numpy's own loop for every element, never BLAS, so tokens with
    # identical keys (repeats at layer 0) get bit-identical scores and the tie rule, not the
    # BLAS kernel's blocking, decides between them.
    s = np.einsum("hid,hjd->hij", q, np.repeat(k, group, axis=0)) / math.sqrt(d)   # [H, i, j]
    s = np.where(valid[None, None, :], s, -np.inf)                          # invalid keys out
    s = np.where(valid[None, :, None], s, -np.inf)                          # invalid queries out
    s = s.reshape(Hkv, group * n, n)                                        # the group's queries together
    rows = valid[None, :].repeat(group, axis=0).reshape(group * n)
    if mode == "softmax":
        # a~_{i,j} = softmax_j(s_ij) per (query head, query); w_j = sum over heads of the group and i
        sv = s[:, rows, :]
        a = np.exp(sv - sv.max(axis=-1, keepdims=True))
        a /= a.sum(axis=-1, keepdims=True)
        w = a.sum(axis=1)                                                   # [Hkv, n]
        with np.errstate(divide="ignore"):
            return np.where(valid[None, :], np.log(w), -np.inf)
    if mode == "exp_sum":
        # w_j = sum_i exp(s_ij): log w_j = logsumexp over the group's queries, per key j
        sv = s[:, rows, :]
        m = sv.max(axis=1, keepdims=True)
        with np.errstate(invalid="ignore"):
            lw = (m + np.log(np.exp(sv - m).sum(axis=1, keepdims=True)))[:, 0, :]
        return np.where(valid[None, :], lw, -np.inf)
    raise ValueError(f"selection {mode!r} is not one of {SELECTIONS}")


def top_tokens(log_w: np.ndarray, valid: np.ndarray, keep: int) -> Tuple[np.ndarray, float, int]:
    """Top-`keep` token indices per kv head from log_w [Hkv, n]: larger weight first, equal
    weights -> lower index first (deterministic tie rule). Returned sorted ascending, padded with
    -1 when fewer than `keep` tokens are valid.

    Also (margin, exact_ties) at the cut between the last kept and the first dropped token:
    margin is the smallest NONZERO log-gap (inf if none), exact_ties counts heads where the gap is
    exactly 0. Exact ties are common, not accidental: at layer 0 the attention input is the token
    embedding alone and the selection has no RoPE, so repeated tokens get bit-identical weights
    in any implementation that reduces every column the same way, and the tie rule decides. Near ties (tiny nonzero gaps) are what an f32
    engine could flip; goldens refuse those."""
    Hkv, n = log_w.shape
    out = np.full((Hkv, keep), -1, dtype=np.int64)
    margin, exact_ties = math.inf, 0
    tokens = np.arange(n)
    for g in range(Hkv):
        order = np.lexsort((tokens, -log_w[g]))        # last key is primary: weight desc, then index asc
        order = order[valid[order]]
        kept = order[:keep]
        out[g, :len(kept)] = np.sort(kept)
        if len(order) > keep:
            gap = float(log_w[g, order[keep - 1]] - log_w[g, order[keep]])
            if gap == 0.0:
                exact_ties += 1
            else:
                margin = min(margin, gap)
    return out, margin, exact_ties


@dataclass
class Memory:
    """One explicit memory (§3.1 shape (memory layers, 2, kv heads, sparse tokens, head dim))."""
    layers: Tuple[int, ...]
    indices: np.ndarray       # [L_mem, Hkv, keep] int64: reference token index j, ascending; -1 = empty
    keys: np.ndarray          # [L_mem, Hkv, keep, d] post-RoPE at position b + j; 0 in empty slots
    values: np.ndarray        # [L_mem, Hkv, keep, d]
    log_weights: np.ndarray   # [L_mem, Hkv, n] selection log-weights of every token (diagnostics)
    margin: float             # smallest nonzero log-gap between kept and dropped tokens (top_tokens)
    exact_ties: int           # (layer, head) cuts decided by the lower-index tie rule


# ----------------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------------

def project(cfg: llama_ref.Config, W: llama_ref.Weights, i: int, x: np.ndarray):
    """Pre-RoPE q [H, T, d], k [Hkv, T, d], v [Hkv, T, d] of layer i for attention input x [T, D]
    (the projections of llama_ref.attention, which does not expose them)."""
    p = f"model.layers.{i}.self_attn."
    T = x.shape[0]
    q = llama_ref.linear(x, W(p + "q_proj.weight"), W.optional(p + "q_proj.bias", cfg.attention_bias))
    k = llama_ref.linear(x, W(p + "k_proj.weight"), W.optional(p + "k_proj.bias", cfg.attention_bias))
    v = llama_ref.linear(x, W(p + "v_proj.weight"), W.optional(p + "v_proj.bias", cfg.attention_bias))
    return (q.reshape(T, cfg.heads, cfg.head_dim).transpose(1, 0, 2),
            k.reshape(T, cfg.kv_heads, cfg.head_dim).transpose(1, 0, 2),
            v.reshape(T, cfg.kv_heads, cfg.head_dim).transpose(1, 0, 2))


def chunk_indices(T: int, prompt_len: Optional[int], chunk_length: int) -> np.ndarray:
    """Chunk index of every position (module docstring, "Chunks"): prompt chunks 0..Cp-1 by
    position; decoded chunk 0 reuses Cp-1 (§7.5: "the first decoded chunk inherits the explicit
    memories retrieved by the last input chunk"), decoded chunk k >= 1 is Cp-1+k."""
    P = T if prompt_len is None else int(prompt_len)
    if not 1 <= P <= T:
        raise ValueError(f"prompt_len {P} must be in [1, {T}]")
    t = np.arange(T)
    last_prompt = (P - 1) // chunk_length
    return np.where(t < P, t // chunk_length, last_prompt + (t - P) // chunk_length)


MemorySource = Callable[[int], Sequence[Memory]]


class Memory3:
    def __init__(self, cfg: llama_ref.Config, W: llama_ref.Weights, m3: Memory3Config,
                 reference_bos_ids: Optional[Sequence[int]] = None):
        if cfg.model_type != "llama":
            raise ValueError("the Memory3 backbone is a llama")
        m3.check(cfg.layers)
        self.cfg, self.W, self.m3 = cfg, W, m3
        ids = reference_bos_ids if reference_bos_ids is not None else m3.reference_bos_ids
        if ids is None:
            raise ValueError("reference BOS ids are needed: config memory3.reference_bos_ids or the "
                             f"argument (the tokenized {m3.reference_bos!r}; this reference has no tokenizer)")
        self.bos_ids = tuple(int(t) for t in ids)
        # The reference BOS K/V: a plain causal pass over "<s>Reference:" alone at positions
        # 0..b-1. It is also the common prefix of every reference's encoding.
        trace = self._encode(self.bos_ids)
        self.bos_k = [trace[i]["k_rope"] for i in range(cfg.layers)]   # [Hkv, b, d] per layer
        self.bos_v = [trace[i]["v"] for i in range(cfg.layers)]

    @staticmethod
    def load(model_dir: str, reference_bos_ids: Optional[Sequence[int]] = None, **overrides) -> "Memory3":
        cfg, m3 = load_config(model_dir)
        return Memory3(cfg, llama_ref.Weights(model_dir), replace(m3, **overrides), reference_bos_ids)

    @property
    def b(self) -> int:
        return len(self.bos_ids)

    def context_positions(self, T: int) -> np.ndarray:
        return self.b + self.m3.reference_length + np.arange(T)

    # -- plain causal encoding with a record of every layer's attention inputs -----------------

    def _encode(self, ids: Sequence[int]) -> Dict[int, dict]:
        """Per layer: x (attention input [T, D]), pre-RoPE q, k, post-RoPE k_rope, v, for a plain
        causal pass at positions 0..T-1 (llama_ref.forward_loaded with a recording hook)."""
        cfg = self.cfg
        if len(ids) == 0:
            z = np.zeros((cfg.kv_heads, 0, cfg.head_dim))
            return {i: {"k_rope": z, "v": z} for i in range(cfg.layers)}
        trace: Dict[int, dict] = {}

        def recording_attention(cfg_, W_, i, x, cos, sin):
            q, k, v = project(cfg_, W_, i, x)
            trace[i] = {"x": x, "q": q, "k": k, "v": v, "k_rope": llama_ref.apply_rope(k, cos, sin)}
            return llama_ref.attention(cfg_, W_, i, x, cos, sin)

        llama_ref.forward_loaded(cfg, self.W, list(ids), attention_fn=recording_attention)
        return trace

    # -- writing ---------------------------------------------------------------------------------

    def write_batch(self, refs: Sequence[Sequence[int]], pad_id: int = 0) -> List[Memory]:
        """Memories of several references, padded to reference_length as a batched writer would
        pad them; the padding is masked out of the selection (§3.3) and, being after the real
        tokens, cannot change them through the causal encoding."""
        R, keep = self.m3.reference_length, self.m3.tokens_per_head
        Hkv, d, b = self.cfg.kv_heads, self.cfg.head_dim, self.b
        out = []
        for ref in refs:
            n = len(ref)
            if not 1 <= n <= R:
                raise ValueError(f"a reference has 1..{R} tokens, got {n}")
            padded = list(ref) + [pad_id] * (R - n)
            trace = self._encode(list(self.bos_ids) + padded)
            valid = np.arange(R) < n
            L = len(self.m3.memory_layers)
            idx = np.full((L, Hkv, keep), -1, dtype=np.int64)
            keys = np.zeros((L, Hkv, keep, d))
            vals = np.zeros((L, Hkv, keep, d))
            logw = np.zeros((L, Hkv, R))
            margin, ties = math.inf, 0
            for li, l in enumerate(self.m3.memory_layers):
                t = trace[l]
                ref_rows = slice(b, b + R)                   # BOS rows excluded here
                logw[li] = selection_log_weights(t["q"][:, ref_rows], t["k"][:, ref_rows], valid, self.m3.selection)
                idx[li], m, tied = top_tokens(logw[li], valid, keep)
                margin, ties = min(margin, m), ties + tied
                for g in range(Hkv):
                    sel = idx[li, g][idx[li, g] >= 0]
                    # post-RoPE keys as the encoding produced them: token j at position b + j (§3.2)
                    keys[li, g, :len(sel)] = t["k_rope"][g, b + sel]
                    vals[li, g, :len(sel)] = t["v"][g, b + sel]
            out.append(Memory(self.m3.memory_layers, idx, keys, vals, logw[:, :, :n], margin, ties))
        return out

    def write(self, ref: Sequence[int]) -> Memory:
        return self.write_batch([ref])[0]

    # -- reading ---------------------------------------------------------------------------------

    def _check_memories(self, c: int, mems: Sequence[Memory]) -> List[Memory]:
        mems = list(mems)
        if len(mems) > self.m3.references_per_chunk:
            raise ValueError(f"chunk {c}: {len(mems)} memories, more than references_per_chunk "
                             f"{self.m3.references_per_chunk}")
        shape = (len(self.m3.memory_layers), self.cfg.kv_heads, self.m3.tokens_per_head, self.cfg.head_dim)
        for m in mems:
            if tuple(m.layers) != self.m3.memory_layers or m.keys.shape != shape or m.values.shape != shape:
                raise ValueError(f"chunk {c}: memory of layers {tuple(m.layers)} shape {m.keys.shape} does "
                                 f"not match the model (layers {self.m3.memory_layers}, shape {shape})")
        return mems

    def forward_chunkwise(self, ids: Sequence[int], memories_for_chunk: MemorySource,
                          prompt_len: Optional[int] = None) -> np.ndarray:
        """Logits [T, V], all positions in one pass: every layer runs ONE masked attention over
        [reference BOS | the memories of every chunk | context] in which a memory column is open
        only to the queries of its own chunk (eq. 4 for all chunks at once, no loop over chunks;
        §7.5 Remark 8 names that loop as the paper's bottleneck)."""
        cfg, m3 = self.cfg, self.m3
        T = len(ids)
        chunk = chunk_indices(T, prompt_len, m3.chunk_length)
        mems = {int(c): self._check_memories(int(c), memories_for_chunk(int(c))) for c in np.unique(chunk)}
        cos, sin = llama_ref.rope_cos_sin(cfg, self.context_positions(T))
        H, Hkv, d = cfg.heads, cfg.kv_heads, cfg.head_dim
        group = H // Hkv

        def memory_attention(cfg_, W_, i, x, _cos, _sin):
            # forward_loaded hands RoPE tables for positions 0..T-1; the context sits at b + R + t.
            q, k, v = project(cfg_, W_, i, x)
            q = llama_ref.apply_rope(q, cos, sin)
            k = llama_ref.apply_rope(k, cos, sin)
            Ks, Vs, opens = [self.bos_k[i]], [self.bos_v[i]], [np.ones((Hkv, T, self.b), bool)]
            if i in m3.memory_layers:
                li = m3.memory_layers.index(i)
                for c, ms in mems.items():
                    for m in ms:
                        Ks.append(m.keys[li])
                        Vs.append(m.values[li])
                        # open to chunk c's queries, and only in slots holding a token
                        opens.append((chunk == c)[None, :, None] & (m.indices[li] >= 0)[:, None, :])
            Ks.append(k)
            Vs.append(v)
            opens.append(np.broadcast_to(np.tril(np.ones((T, T), bool))[None], (Hkv, T, T)))
            K = np.repeat(np.concatenate(Ks, axis=1), group, axis=0)        # [H, S, d]
            V = np.repeat(np.concatenate(Vs, axis=1), group, axis=0)
            open_ = np.repeat(np.concatenate(opens, axis=2), group, axis=0)  # [H, T, S]
            s = np.where(open_, q @ K.transpose(0, 2, 1) / math.sqrt(d), -np.inf)
            s = s - s.max(axis=-1, keepdims=True)
            p = np.exp(s)
            p /= p.sum(axis=-1, keepdims=True)
            out = (p @ V).transpose(1, 0, 2).reshape(T, H * d)
            pre = f"model.layers.{i}.self_attn."
            return llama_ref.linear(out, W_(pre + "o_proj.weight"), W_.optional(pre + "o_proj.bias", cfg_.o_bias))

        return llama_ref.forward_loaded(cfg, self.W, list(ids), attention_fn=memory_attention)

    def forward_token_by_token(self, ids: Sequence[int], memories_for_chunk: MemorySource,
                               prompt_len: Optional[int] = None) -> np.ndarray:
        """The same logits computed as a decoder would: one token at a time with a KV cache,
        memories dropped and re-fetched when the chunk index changes, explicit loops over heads."""
        T = len(ids)
        chunk = chunk_indices(T, prompt_len, self.m3.chunk_length)
        return self._token_by_token(ids, self.context_positions(T), chunk, memories_for_chunk)[0]

    def _token_by_token(self, ids: Sequence[int], positions: np.ndarray, chunk: np.ndarray,
                        memories_for_chunk: MemorySource):
        """(logits [T, V], trace {layer: {"x": [T, D], "k": [Hkv, T, d] post-RoPE, "v": ...}})."""
        cfg, W, m3 = self.cfg, self.W, self.m3
        H, Hkv, d = cfg.heads, cfg.kv_heads, cfg.head_dim
        group = H // Hkv
        inv_freq = llama_ref.rope_inv_freq(cfg)
        half = d // 2

        def rope(vec, pos):
            # rotate the pairs (j, j + d/2) by pos * inv_freq[j] (HF rotate-half layout)
            out = vec.copy()
            for j in range(half):
                c, s = math.cos(pos * inv_freq[j]), math.sin(pos * inv_freq[j])
                out[j] = vec[j] * c - vec[j + half] * s
                out[j + half] = vec[j + half] * c + vec[j] * s
            return out

        def proj(x, name, has_bias):
            y = W(name + ".weight") @ x
            return y + W(name + ".bias") if has_bias else y

        cache_k = [[[] for _ in range(Hkv)] for _ in range(cfg.layers)]
        cache_v = [[[] for _ in range(Hkv)] for _ in range(cfg.layers)]
        xs = [[] for _ in range(cfg.layers)]
        embed = W("model.embed_tokens.weight")
        lm_head = embed if cfg.tied else W("lm_head.weight")
        logits = np.zeros((len(ids), cfg.vocab))
        current, mems = None, []
        for t, tok in enumerate(ids):
            if chunk[t] != current:          # a new chunk: drop the memories, retrieve its own
                current = int(chunk[t])
                mems = self._check_memories(current, memories_for_chunk(current))
            h = embed[tok].copy()
            for i in range(cfg.layers):
                p = f"model.layers.{i}."
                x = llama_ref.rms_norm(h, W(p + "input_layernorm.weight"), cfg.eps)
                xs[i].append(x)
                q = proj(x, p + "self_attn.q_proj", cfg.attention_bias).reshape(H, d)
                k = proj(x, p + "self_attn.k_proj", cfg.attention_bias).reshape(Hkv, d)
                v = proj(x, p + "self_attn.v_proj", cfg.attention_bias).reshape(Hkv, d)
                for g in range(Hkv):
                    cache_k[i][g].append(rope(k[g], positions[t]))
                    cache_v[i][g].append(v[g])
                heads_out = []
                for hq in range(H):
                    g = hq // group
                    qh = rope(q[hq], positions[t])
                    keys = list(self.bos_k[i][g])
                    vals = list(self.bos_v[i][g])
                    if i in m3.memory_layers:                  # eq. 4: memories before the context
                        li = m3.memory_layers.index(i)
                        for m in mems:
                            for slot in range(m3.tokens_per_head):
                                if m.indices[li, g, slot] >= 0:
                                    keys.append(m.keys[li, g, slot])
                                    vals.append(m.values[li, g, slot])
                    keys += cache_k[i][g]                      # context tokens 0..t (causal)
                    vals += cache_v[i][g]
                    scores = [float(qh @ kk) / math.sqrt(d) for kk in keys]
                    top = max(scores)
                    e = [math.exp(s - top) for s in scores]
                    z = sum(e)
                    heads_out.append(sum(ej * vj for ej, vj in zip(e, vals)) / z)
                o = proj(np.concatenate(heads_out), p + "self_attn.o_proj", cfg.o_bias)
                h = h + o
                h = h + llama_ref.mlp(cfg, W, i, llama_ref.rms_norm(h, W(p + "post_attention_layernorm.weight"), cfg.eps))
            logits[t] = llama_ref.rms_norm(h, W("model.norm.weight"), cfg.eps) @ lm_head.T
        trace = {i: {"x": np.array(xs[i]),
                     "k": np.array([[r for r in cache_k[i][g]] for g in range(Hkv)]),
                     "v": np.array([[r for r in cache_v[i][g]] for g in range(Hkv)])}
                 for i in range(cfg.layers)}
        return logits, trace


# ----------------------------------------------------------------------------------------------
# Goldens
# ----------------------------------------------------------------------------------------------

def make_goldens(model_dir: str, out_dir: str, seed: int = 0, prompt_len: Optional[int] = None,
                 decode_len: Optional[int] = None, reference_bos_ids: Optional[Sequence[int]] = None,
                 min_margin: float = 1e-4) -> dict:
    """Writes into out_dir (NPY, float32 / int32 so tests/npy.hpp reads them):
      reference_bos_ids.npy [b], reference_bos_keys.npy / _values.npy [L, Hkv, b, d]
      references.npy [N, R] (-1 after each reference's end), reference_lengths.npy [N]
      memory_indices.npy [N, L_mem, Hkv, keep] (-1 = empty slot), memory_keys.npy / memory_values.npy
          [N, L_mem, Hkv, keep, d]
      context_ids.npy [T] (ids[0] = bos_token_id), prompt_len in meta.json
      for n in 0, 1, 5: schedule_n.npy [chunks, n] (reference numbers per chunk index),
          logits_chunkwise_n.npy and logits_token_n.npy [T, V]
      meta.json: every setting, the position convention, the agreement of the two formulations.
    Refuses (ValueError) when some nonzero kept/dropped selection gap is under min_margin in
    log-weight, so an f32 engine is not asked to reproduce a coin toss; exact ties (repeated
    tokens at layer 0, see top_tokens) stay: they test the tie rule."""
    m = Memory3.load(model_dir, reference_bos_ids)
    cfg, m3 = m.cfg, m.m3
    C, R = m3.chunk_length, m3.reference_length
    rng = np.random.default_rng(seed)
    # 6 full references, one partial, one shorter than tokens_per_head (-1 slots)
    lengths = [R] * 6 + [max(1, (3 * R) // 5), max(1, m3.tokens_per_head - 3)]
    refs = [rng.integers(0, cfg.vocab, n).tolist() for n in lengths]
    mems = m.write_batch(refs)
    worst = min(x.margin for x in mems)
    if worst < min_margin:
        raise ValueError(f"selection margin {worst:.3g} < {min_margin}: pick another --seed")
    P = prompt_len if prompt_len is not None else 2 * C - C // 4          # last prompt chunk partial
    G = decode_len if decode_len is not None else C + C // 2              # two decoded chunks
    with open(os.path.join(model_dir, "config.json"), "r", encoding="utf-8") as f:
        bos = int(json.load(f).get("bos_token_id", 1))
    ids = [bos] + rng.integers(0, cfg.vocab, P + G - 1).tolist()
    chunk = chunk_indices(len(ids), P, C)
    n_chunks = int(chunk.max()) + 1
    os.makedirs(out_dir, exist_ok=True)

    def save(name, a, dtype):
        np.save(os.path.join(out_dir, name), np.ascontiguousarray(np.asarray(a, dtype=dtype)))

    save("reference_bos_ids.npy", m.bos_ids, np.int32)
    save("reference_bos_keys.npy", np.stack(m.bos_k), np.float32)
    save("reference_bos_values.npy", np.stack(m.bos_v), np.float32)
    save("references.npy", [r + [-1] * (R - len(r)) for r in refs], np.int32)
    save("reference_lengths.npy", lengths, np.int32)
    save("memory_indices.npy", np.stack([x.indices for x in mems]), np.int32)
    save("memory_keys.npy", np.stack([x.keys for x in mems]), np.float32)
    save("memory_values.npy", np.stack([x.values for x in mems]), np.float32)
    save("context_ids.npy", ids, np.int32)
    agreement = {}
    for per_chunk in (0, 1, 5):
        if per_chunk > m3.references_per_chunk:
            continue
        # chunk c reads references (per_chunk * c + r) mod N: neighbours differ, short ones included
        sched = np.array([[(per_chunk * c + r) % len(refs) for r in range(per_chunk)] for c in range(n_chunks)],
                         dtype=np.int64).reshape(n_chunks, per_chunk)
        source = lambda c, s=sched: [mems[j] for j in s[c]]  # noqa: E731
        a = m.forward_chunkwise(ids, source, prompt_len=P)
        b = m.forward_token_by_token(ids, source, prompt_len=P)
        agreement[per_chunk] = float(np.abs(a - b).max())
        save(f"schedule_{per_chunk}.npy", sched, np.int32)
        save(f"logits_chunkwise_{per_chunk}.npy", a, np.float32)
        save(f"logits_token_{per_chunk}.npy", b, np.float32)
    meta = {
        "model_dir": os.path.abspath(model_dir), "seed": seed,
        "memory3": {"memory_layers": list(m3.memory_layers), "tokens_per_head": m3.tokens_per_head,
                    "reference_length": R, "chunk_length": C, "references_per_chunk": m3.references_per_chunk,
                    "selection": m3.selection, "reference_bos_ids": list(m.bos_ids)},
        "prompt_len": P, "tokens": len(ids), "chunk_of_position": chunk.tolist(),
        "positions": "reference BOS 0..b-1; memory token j at b+j (keys stored post-RoPE there); "
                     "context ids[t] at b+reference_length+t",
        "min_selection_log_margin": worst,
        "selection_cuts_decided_by_tie_rule": [x.exact_ties for x in mems],
        "max_abs_chunkwise_minus_token": agreement,
    }
    with open(os.path.join(out_dir, "meta.json"), "w", encoding="utf-8") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    return meta


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description="Write Memory3 goldens for a model folder (model_type memory3).")
    ap.add_argument("model_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--prompt-len", type=int, dest="prompt_len")
    ap.add_argument("--decode-len", type=int, dest="decode_len")
    ap.add_argument("--reference-bos-ids", dest="bos", help="comma-separated ids; default config memory3.reference_bos_ids")
    ap.add_argument("--min-margin", type=float, default=1e-4, dest="min_margin")
    a = ap.parse_args(argv)
    bos = None if a.bos is None else [int(t) for t in a.bos.split(",") if t.strip()]
    meta = make_goldens(a.model_dir, a.out_dir, a.seed, a.prompt_len, a.decode_len, bos, a.min_margin)
    print(f"{a.out_dir}: {meta['tokens']} tokens, prompt {meta['prompt_len']}, selection margin "
          f"{meta['min_selection_log_margin']:.3g}, chunkwise vs token-by-token {meta['max_abs_chunkwise_minus_token']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
