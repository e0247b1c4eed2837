#!/usr/bin/python3
"""Torch reference (CPU, float64) of Memory3 explicit memories on a Llama backbone.

Memory3 (Yang et al. 2024, "Memory3: Language Modeling with Explicit Memory",
shared/papers/004_8bce556ea15d8036.txt) turns each reference text (<= 128 tokens) into an
explicit memory: for every memory layer and key-value head, the post-RoPE keys and the values of
the 8 reference tokens that receive the most attention (§3.3). At inference the model reads the
memories retrieved for the current 64-token chunk by concatenating them before the context's keys
and values (eq. 4, §3.2); every 64 generated tokens it drops them and retrieves new ones (§3.1,
§7.5). This file is written from the paper alone (no official code is consulted). Its Llama
backbone is llama_core.py's (torch float64; numpy is used for file I/O only); the tests compare
it with llama_ref's independent numpy forward pass. It is the yardstick for issue
6's C++ `memory3` plugin; `main()` writes goldens for it.

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
      "reference_length": 128,           reference tokens R, reference BOS not counted (§3.1)
      "chunk_length": 64,                tokens per retrieval chunk (§3.1)
      "references_per_chunk": 5,         at most this many memories per chunk (§3.1)
      "reference_bos": "<s>Reference:",  the modified BOS text (§3.2), tokenized with special
                                         tokens parsed ("<s>" = the BOS token) and nothing added
      "reference_bos_ids": [1, 17, 4],   optional: these ids instead of tokenizing reference_bos
                                         (this reference has no tokenizer; the caller or this
                                         field must give the ids)
      "selection": "softmax",            "softmax": the weights §3.3 defines; "exp_sum": the
                                         approximation the authors' implementation used
      "retrieval_layer": 1               default max(1, num_hidden_layers // 4); 0..layers
    }

Memory layers (optional, UltraMemV2): with "mem_insert_way" at the top level of config.json the
model also has UltraMemV2 memory layers; every other mem_* field ("mem_knum", "mem_kdim",
"mem_vdim", "mem_knn", "mem_head", "mem_tucker_rank", "mem_tucker_multihead",
"mem_value_expand_time", "mem_pre_vdim", "mem_share_ratio", "mem_key_expand_time",
"mem_q_for_each_tucker_rank", "mem_use_glu_act") and the tensors model.mem_blocks.{l}.* /
model.full_memory_layer.* mean what they mean for model_type "ultramem_v2" (ultramem_ref.py, whose
MemoryLayers this file runs). Only V2: a config without mem_share_ratio, mem_key_expand_time and
mem_q_for_each_tucker_rank (V1's) is refused, and so are mem_* fields without mem_insert_way.
Block i, in every pass (reading, writing, retrieval):
    h = h + attention(input_layernorm(h));  x = post_attention_layernorm(h);  h = h + MLP(x);
    memory layer l placed a:b reads x of block a, and its output is added to h after block b.

Positions (one absolute convention, because stored keys are post-RoPE)
---------------------------------------------------------------------
With b = len(reference BOS ids) and R = reference_length:

    reference BOS  "<s>Reference:"   positions -b .. -1
    memory token j of any reference  position  j              (j = 0..R-1: the memory's own
                                                              positions; all memories share this
                                                              interval: parallel positions, §3.2)
    context token t (ids[t])         position  R + t          (ids[0] is normally the context <s>)

Encoding a reference is a plain causal pass over [reference BOS ids, reference tokens] at
positions -b .. -1, 0 .. n-1, so token j's key comes out of RoPE already rotated at j and is
stored as it is ("sparsification is applied after RoPE", §3.2). The reference BOS K/V are a causal
pass over the BOS ids alone at -b .. -1 (the common prefix of every reference's encoding).
Attention depends only on position differences, so shifting everything by +b (BOS at 0..b-1,
memories at b+j, context at b+R+t) gives the same logits; only the stored keys would differ, by a
rotation of b, which is why the engine must use exactly this convention: keys rotated at j.

Writing (§3.3)
--------------
In the reference's encoding, at each memory layer l take the attention input X (the normed hidden
state) of the reference tokens only (BOS and padding excluded both as queries and as keys), and
the pre-RoPE projections q_i = X_i W_Q, k_j = X_j W_K (bias included). For kv head g serving
query heads h in G(g) (GQA):

    "softmax":  w_j = sum_{h in G(g)} sum_i softmax_j( q_i^h . k_j^g / sqrt(d) )
    "exp_sum":  w_j = sum_{h in G(g)} sum_i exp( q_i^h . k_j^g / sqrt(d) )

no causal mask, no RoPE. The paper writes the sum per attention head for MHA; with GQA one kv
head is one memory head (§3.3 "all key-value heads ... are memory heads"), so its weight sums the
attention its whole query group pays. Keep the top `tokens_per_head` tokens; ties go to the lower
token index; the kept tokens are stored in ascending token order (attention is a set operation,
the order only fixes the file layout). A reference shorter than tokens_per_head keeps all its
tokens and marks the remaining slots with index -1 (zero key/value, never attended).

Retrieval vector (our choice; the paper embeds with BGE-M3 and its Remark 2 wishes for the LLM's
own features)
---------------------------------------------------------------------------------------------
The retrieval vector of a text (a reference, or a query chunk) is the mean over its tokens (BOS
excluded) of the hidden state after `retrieval_layer` layers (the residual stream entering layer
retrieval_layer; 0 = the token embeddings, num_hidden_layers = the output before the final norm)
when the text is encoded exactly as a reference (reference BOS prefix, positions -b.., 0.., no
memories), L2-normalised. Retrieval ranks references by cosine = dot product of these vectors
(ties: lower reference number first). A reference's vector comes out of the same pass that writes
its memory. A query text is the chunk's tokens as they are (chunk 0 starts with the context <s>);
the query of a decoded chunk k >= 1 is the chunk_length tokens of decoded chunk k-1 (§3.1: "uses
these 64 tokens as query text"); a query longer than R is encoded all the same.

Reading (eq. 4)
---------------
At a memory layer, query i of chunk c attends to
    concat( reference-BOS K/V,  K/V of the memories of chunk c,  context K/V of tokens <= i )
and at every other layer to concat( reference-BOS K/V, context K/V of tokens <= i ): the
reference BOS "is placed at every head at every layer" (§3.2), only the memories are restricted
to the memory layers. The reference BOS K/V are there whether or not any memory was retrieved,
since the model was trained to see that prefix as "the new constant for all attention heads"
(§3.2). With reference_bos_ids = [] and no memories the model is exactly the plain Llama.

Chunks (§3.1, §7.5): the prompt ids[0:P] is cut into chunks of chunk_length tokens, numbered
0..Cp-1 (the last may be partial). Decoded tokens ids[P:] form decoded chunks of chunk_length
tokens; decoded chunk 0 keeps the memories of the last prompt chunk (index Cp-1), decoded chunk
k >= 1 gets index Cp-1+k. The caller maps a chunk index to its memories.

Usage:
    m = Memory3.load(model_dir)                          # reference_bos_ids from config or argument
    mem = m.write(ref_ids)                               # one Memory (with .retrieval)
    q = m.retrieval_vector(chunk_ids)                    # [hidden], unit norm
    logits = m.forward_chunkwise(ids, lambda c: [mem], prompt_len=P)      # [T, vocab]
    logits = m.forward_token_by_token(ids, lambda c: [mem], prompt_len=P) # same, slow
    python3 tools/reference/memory3.py MODEL_DIR OUT_DIR   # goldens (see make_goldens)
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from dataclasses import dataclass, replace
from typing import Callable, Dict, List, Optional, Sequence, Tuple

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "common"))
sys.path.insert(0, HERE)
import llama_core  # noqa: E402  (the torch Llama backbone)
import llama_ref  # noqa: E402  (the backbone config)
import ultramem_ref  # noqa: E402  (the UltraMemV2 memory layers)
from llama_core import Weights, attend, project_qkv  # noqa: E402

torch.set_default_dtype(torch.float64)

MODEL_TYPE = "memory3"
SELECTIONS = ("softmax", "exp_sum")


# ----------------------------------------------------------------------------------------------
# Configuration
# ----------------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Memory3Config:
    memory_layers: Tuple[int, ...]
    retrieval_layer: int
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
                 "references_per_chunk", "reference_bos", "reference_bos_ids", "selection",
                 "retrieval_layer"}
        unknown = sorted(set(obj) - known)
        if unknown:
            raise ValueError(f"config.json memory3: unknown field(s) {unknown}; known: {sorted(known)}")
        ids = obj.get("reference_bos_ids")
        c = Memory3Config(
            # §3.3: "we only set the first half of the attention layers to be memory layers"
            memory_layers=tuple(int(l) for l in obj.get("memory_layers", range(layers // 2))),
            # a quarter deep: past the embeddings (which know no context) and early enough that a
            # query chunk is cheap to encode
            retrieval_layer=int(obj.get("retrieval_layer", max(1, layers // 4))),
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
        if not 0 <= self.retrieval_layer <= layers:
            raise ValueError(f"memory3.retrieval_layer {self.retrieval_layer} must be in [0, {layers}]")


def load_config(model_dir: str) -> Tuple[llama_ref.Config, Memory3Config]:
    """(backbone llama Config, Memory3Config) from MODEL_DIR/config.json (model_type "memory3").
    The backbone fields mean exactly what they mean for "llama"."""
    path = os.path.join(model_dir, "config.json")
    raw = llama_ref.read_json(path)
    llama_ref.check_model_type(raw, path, (MODEL_TYPE,))
    cfg = llama_ref.Config(model_type="llama", **llama_ref.Config.llama_fields(raw))
    return cfg, Memory3Config.from_json(raw.get("memory3") or {}, cfg.layers)


MEMORY_FIELDS = ("mem_knum", "mem_kdim", "mem_vdim", "mem_knn", "mem_head", "mem_tucker_rank",
                 "mem_tucker_multihead", "mem_value_expand_time", "mem_pre_vdim", "mem_share_ratio",
                 "mem_key_expand_time", "mem_q_for_each_tucker_rank", "mem_use_glu_act")
V2_FIELDS = ("mem_share_ratio", "mem_key_expand_time", "mem_q_for_each_tucker_rank")


def memory_layer_fields(raw: dict, layers: int) -> Optional[ultramem_ref.MemoryFields]:
    """The UltraMemV2 memory layers of a memory3 config.json dict (None without mem_insert_way)."""
    if "mem_insert_way" not in raw:
        stray = [f for f in MEMORY_FIELDS if f in raw]
        if stray:
            raise ValueError(f"config.json: {stray[0]} is set but mem_insert_way is not")
        return None
    missing = [f for f in V2_FIELDS if f not in raw]
    if missing:
        raise ValueError(f"config.json: {missing[0]} is missing: memory3 reads UltraMemV2 memory layers only")
    return ultramem_ref.read_memory_fields(raw, layers, v2=True, default_insert="")


def load_memory_layer_fields(model_dir: str, layers: int) -> Optional[ultramem_ref.MemoryFields]:
    return memory_layer_fields(llama_ref.read_json(os.path.join(model_dir, "config.json")), layers)


# ----------------------------------------------------------------------------------------------
# The backbone's attention with the layer index Memory3 addresses it by
# ----------------------------------------------------------------------------------------------

def project(cfg: llama_ref.Config, W: Weights, i: int, x: torch.Tensor):
    """Pre-RoPE q [H, T, d], k [Hkv, T, d], v [Hkv, T, d] of layer i for attention input x [T, D]."""
    return project_qkv(cfg, W, f"model.layers.{i}.self_attn.", x)


def attend_output(cfg: llama_ref.Config, W: Weights, i: int, q: torch.Tensor, K: torch.Tensor, V: torch.Tensor,
                  open_: torch.Tensor) -> torch.Tensor:
    """o_proj of layer i applied to llama_core.attend(q, K, V, open_): q [H, T, d] post-RoPE, K, V
    [Hkv, S, d], open_ [Hkv, T, S] bool."""
    return W.linear(f"model.layers.{i}.self_attn.o_proj", attend(q, K, V, open_), cfg.o_bias)


# ----------------------------------------------------------------------------------------------
# Writing: token sparsification (§3.3)
# ----------------------------------------------------------------------------------------------

def selection_log_weights(q: torch.Tensor, k: torch.Tensor, valid: torch.Tensor, mode: str) -> torch.Tensor:
    """log w_j of §3.3 for one memory layer: q [H, n, d], k [Hkv, n, d] pre-RoPE projections of the
    reference tokens, valid [n] bool (False = BOS or padding). Returns [Hkv, n], -inf where invalid.

    The scores have no causal mask and no RoPE (§3.3: every position has "an equal chance to
    receive attention"). Logs keep "exp_sum" finite; they rank exactly like w. Both sums (over the
    head dimension for a score, over the group's queries for a weight) run in one fixed order
    that is the same for every token j, so tokens with identical keys (repeats at layer 0) get
    bit-identical weights and the tie rule, not a BLAS kernel's blocking, decides between them."""
    H, n, d = q.shape
    Hkv = k.shape[0]
    group = H // Hkv
    kk = k.repeat_interleave(group, dim=0)                                  # [H, n, d]
    s = torch.zeros(H, n, n)
    for t in range(d):
        s = s + q[:, :, t, None] * kk[:, None, :, t]
    s = s / math.sqrt(d)                                                    # [H, i, j]
    s = s.masked_fill(~valid[None, None, :], -math.inf)                     # invalid keys out
    rows = valid.repeat(group)                                              # [group * n]
    sv = s.reshape(Hkv, group * n, n)[:, rows, :]                           # the group's valid queries
    w = torch.zeros(Hkv, n)
    if mode == "softmax":
        # a~_{i,j} = softmax_j(s_ij) per (query head, query); w_j = sum over heads of the group and i
        a = torch.exp(sv - sv.max(dim=-1, keepdim=True).values)
        a = a / a.sum(dim=-1, keepdim=True)
        for r in range(a.shape[1]):
            w = w + a[:, r, :]
        return torch.where(valid[None, :], torch.log(w), torch.tensor(-math.inf))
    if mode == "exp_sum":
        # w_j = sum_i exp(s_ij): log w_j = m_j + log sum_i exp(s_ij - m_j), m_j = max_i s_ij
        m = sv.max(dim=1).values                                            # [Hkv, n]
        safe = torch.where(valid[None, :], m, torch.zeros(()))
        for r in range(sv.shape[1]):
            w = w + torch.exp(sv[:, r, :] - safe)
        return torch.where(valid[None, :], safe + torch.log(w), torch.tensor(-math.inf))
    raise ValueError(f"selection {mode!r} is not one of {SELECTIONS}")


def top_tokens(log_w: torch.Tensor, valid: torch.Tensor, keep: int) -> Tuple[torch.Tensor, float, int]:
    """Top-`keep` token indices per kv head from log_w [Hkv, n]: larger weight first, equal
    weights -> lower index first (deterministic tie rule). Returned sorted ascending, padded with
    -1 when fewer than `keep` tokens are valid.

    Also (margin, exact_ties) at the cut between the last kept and the first dropped token:
    margin is the smallest NONZERO log-gap (inf if none), exact_ties counts heads where the gap is
    exactly 0. Exact ties are not accidental: at layer 0 the attention input is the token
    embedding alone and the selection has no RoPE, so repeated tokens get bit-identical weights
    and the tie rule decides. Near ties (tiny nonzero gaps) are what an f32 engine could flip."""
    Hkv, n = log_w.shape
    out = torch.full((Hkv, keep), -1, dtype=torch.long)
    margin, exact_ties = math.inf, 0
    for g in range(Hkv):
        # a stable sort of -w keeps equal weights in index order: the lower index ranks first
        order = torch.sort(-log_w[g], stable=True).indices
        order = order[valid[order]]
        kept = order[:keep]
        out[g, :len(kept)] = torch.sort(kept).values
        if len(order) > keep:
            gap = float(log_w[g, order[keep - 1]] - log_w[g, order[keep]])
            if gap == 0.0:
                exact_ties += 1
            else:
                margin = min(margin, gap)
    return out, margin, exact_ties


@dataclass
class Memory:
    """One explicit memory (§3.1 shape (memory layers, 2, kv heads, sparse tokens, head dim)) and
    the retrieval vector of its reference."""
    layers: Tuple[int, ...]
    indices: torch.Tensor      # [L_mem, Hkv, keep] long: reference token index j, ascending; -1 = empty
    keys: torch.Tensor         # [L_mem, Hkv, keep, d] post-RoPE at position j; 0 in empty slots
    values: torch.Tensor       # [L_mem, Hkv, keep, d]
    log_weights: torch.Tensor  # [L_mem, Hkv, n] selection log-weights of every token (diagnostics)
    margin: float              # smallest nonzero log-gap between kept and dropped tokens (top_tokens)
    exact_ties: int            # (layer, head) cuts decided by the lower-index tie rule
    retrieval: torch.Tensor    # [D] unit-norm retrieval vector of the reference


def chunk_indices(T: int, prompt_len: Optional[int], chunk_length: int,
                  segment_starts: Sequence[int] = ()) -> torch.Tensor:
    """Chunk index of every position (module docstring, "Chunks"): prompt chunks 0..Cp-1 by
    position; decoded chunk 0 reuses Cp-1 (§7.5: "the first decoded chunk inherits the explicit
    memories retrieved by the last input chunk"), decoded chunk k >= 1 is Cp-1+k.
    segment_starts: prompt positions where a new segment (a conversation's turn) begins; prompt
    chunks restart there (the engine's Session::append(..., segment_starts))."""
    P = T if prompt_len is None else int(prompt_len)
    if not 1 <= P <= T:
        raise ValueError(f"prompt_len {P} must be in [1, {T}]")
    bounds = sorted(set([0] + [int(s) for s in segment_starts] + [P]))
    if bounds[0] != 0 or bounds[-1] != P or any(not 0 < s < P for s in segment_starts):
        raise ValueError(f"segment starts {list(segment_starts)} must lie inside the prompt (1..{P - 1})")
    chunk = torch.empty(T, dtype=torch.long)
    c = 0
    for a, b in zip(bounds[:-1], bounds[1:]):
        for s in range(a, b, chunk_length):
            chunk[s:min(b, s + chunk_length)] = c
            c += 1
    t = torch.arange(T)
    return torch.where(t < P, chunk, (c - 1) + (t - P) // chunk_length)


def query_ranges(T: int, prompt_len: Optional[int], chunk_length: int) -> List[Tuple[int, int]]:
    """[start, end) of the query text that retrieves the memories of each chunk index 0..: a
    prompt chunk's own tokens; for the index of decoded chunk k >= 1, the tokens of decoded chunk
    k - 1 (decoded chunk 0 has no query: it keeps the last prompt chunk's memories)."""
    P = T if prompt_len is None else int(prompt_len)
    C = chunk_length
    Cp = (P - 1) // C + 1
    out = [(c * C, min((c + 1) * C, P)) for c in range(Cp)]
    k = 1
    while P + k * C < T:                      # decoded chunk k exists
        out.append((P + (k - 1) * C, P + k * C))
        k += 1
    return out


def retrieve(query: torch.Tensor, bank: torch.Tensor, k: int) -> Tuple[torch.Tensor, torch.Tensor]:
    """Top-k references by cosine (vectors are unit norm, so a dot product): bank [N, D].
    Equal scores -> lower reference number first. Returns (indices [k], scores [k])."""
    scores = bank @ query
    order = torch.sort(-scores, stable=True).indices[:k]
    return order, scores[order]


MemorySource = Callable[[int], Sequence[Memory]]


# ----------------------------------------------------------------------------------------------
# The model
# ----------------------------------------------------------------------------------------------

class Memory3:
    def __init__(self, cfg: llama_ref.Config, W, m3: Memory3Config,
                 reference_bos_ids: Optional[Sequence[int]] = None,
                 memory_layers: Optional[ultramem_ref.MemoryFields] = None):
        if cfg.model_type != "llama":
            raise ValueError("the Memory3 backbone is a llama")
        m3.check(cfg.layers)
        self.cfg, self.m3 = cfg, m3
        self.W = W if isinstance(W, Weights) else Weights(W)
        # UltraMemV2 memory layers (None: a plain Memory3 model); their stats collect tie gaps
        self.memory = None if memory_layers is None else ultramem_ref.MemoryLayers(memory_layers, self.W, cfg.eps)
        ids = reference_bos_ids if reference_bos_ids is not None else m3.reference_bos_ids
        if ids is None:
            raise ValueError("reference BOS ids are needed: config memory3.reference_bos_ids or the "
                             f"argument (the tokenized {m3.reference_bos!r}; this reference has no tokenizer)")
        self.bos_ids = tuple(int(t) for t in ids)
        trace, _ = self._encode(self.bos_ids)
        self.bos_k = [trace[i]["k_rope"] for i in range(cfg.layers)]   # [Hkv, b, d] at -b..-1
        self.bos_v = [trace[i]["v"] for i in range(cfg.layers)]

    @staticmethod
    def load(model_dir: str, reference_bos_ids: Optional[Sequence[int]] = None, **overrides) -> "Memory3":
        cfg, m3 = load_config(model_dir)
        return Memory3(cfg, Weights(model_dir), replace(m3, **overrides), reference_bos_ids,
                       load_memory_layer_fields(model_dir, cfg.layers))

    @property
    def b(self) -> int:
        return len(self.bos_ids)

    def context_positions(self, T: int) -> torch.Tensor:
        return self.m3.reference_length + torch.arange(T)

    def _run_layers(self, ids: Sequence[int], positions: torch.Tensor, attention: llama_core.Attention):
        """llama_core.run_layers with the given attention and this model's feed-forward: the MLP,
        then the memory layers that read or add at the block (llama_core's plain block without them)."""
        cfg, W = self.cfg, self.W
        if self.memory is None:
            return llama_core.run_layers(cfg, W, ids, positions, attention=attention)
        memory = ultramem_ref.MemoryPass(self.memory)

        def feed_forward(i, x):
            memory.read(i, x)
            return llama_core.layer_mlp(cfg, W, i, x)

        def layer(i, h, rope):
            return memory.add(i, llama_core.decoder_layer(cfg, W, i, h, rope, attention, feed_forward))

        return llama_core.run_layers(cfg, W, ids, positions, layer=layer)

    # -- plain causal encoding "as a reference", with a record of every layer ------------------

    def _encode(self, ids: Sequence[int]):
        """A causal pass over ids (which start with the reference BOS ids) at positions -b, -b+1, ...
        Returns ({layer: x (attention input [T, D]), pre-RoPE q, k, post-RoPE k_rope, v}, residual
        states [L + 1] x [T, D])."""
        cfg, W = self.cfg, self.W
        if len(ids) == 0:
            z = torch.zeros(cfg.kv_heads, 0, cfg.head_dim)
            return {i: {"k_rope": z, "v": z} for i in range(cfg.layers)}, []
        trace: Dict[int, dict] = {}
        T = len(ids)

        def causal(i, x, rope):
            q, k, v = project(cfg, W, i, x)
            k_rope = rope(k)
            trace[i] = {"x": x, "q": q, "k": k, "v": v, "k_rope": k_rope}
            return attend_output(cfg, W, i, rope(q), k_rope, v, llama_core.causal_mask(T))

        _, states = self._run_layers(ids, torch.arange(T) - self.b, causal)
        return trace, states

    def _retrieval_of(self, states: List[torch.Tensor], n: int) -> torch.Tensor:
        h = states[self.m3.retrieval_layer][self.b:self.b + n]     # the text's tokens, BOS excluded
        v = h.mean(dim=0)
        return v / torch.linalg.vector_norm(v)

    def retrieval_vector(self, text: Sequence[int]) -> torch.Tensor:
        """[D] unit-norm retrieval vector of a text (a query chunk), encoded as a reference."""
        if len(text) == 0:
            raise ValueError("a retrieval text has at least one token")
        _, states = self._encode(list(self.bos_ids) + list(text))
        return self._retrieval_of(states, len(text))

    # -- writing ---------------------------------------------------------------------------------

    def write_batch(self, refs: Sequence[Sequence[int]], pad_id: int = 0) -> List[Memory]:
        """Memories of several references, padded to reference_length as a batched writer would
        pad them; the padding is masked out of the selection (§3.3) and, being after the real
        tokens, cannot change them through the causal encoding."""
        R, keep = self.m3.reference_length, self.m3.tokens_per_head
        Hkv, d, b = self.cfg.kv_heads, self.cfg.head_dim, self.b
        L = len(self.m3.memory_layers)
        out = []
        for ref in refs:
            n = len(ref)
            if not 1 <= n <= R:
                raise ValueError(f"a reference has 1..{R} tokens, got {n}")
            trace, states = self._encode(list(self.bos_ids) + list(ref) + [pad_id] * (R - n))
            valid = torch.arange(R) < n
            idx = torch.full((L, Hkv, keep), -1, dtype=torch.long)
            keys, vals = torch.zeros(L, Hkv, keep, d), torch.zeros(L, Hkv, keep, d)
            logw = torch.zeros(L, Hkv, R)
            margin, ties = math.inf, 0
            for li, l in enumerate(self.m3.memory_layers):
                t = trace[l]
                logw[li] = selection_log_weights(t["q"][:, b:], t["k"][:, b:], valid, self.m3.selection)
                idx[li], m, tied = top_tokens(logw[li], valid, keep)
                margin, ties = min(margin, m), ties + tied
                for g in range(Hkv):
                    sel = idx[li, g][idx[li, g] >= 0]
                    # post-RoPE keys as the encoding produced them: token j at position j (§3.2)
                    keys[li, g, :len(sel)] = t["k_rope"][g, b + sel]
                    vals[li, g, :len(sel)] = t["v"][g, b + sel]
            out.append(Memory(self.m3.memory_layers, idx, keys, vals, logw[:, :, :n], margin, ties,
                              self._retrieval_of(states, n)))
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
            if tuple(m.layers) != self.m3.memory_layers or tuple(m.keys.shape) != shape \
                    or tuple(m.values.shape) != shape:
                raise ValueError(f"chunk {c}: memory of layers {tuple(m.layers)} shape {tuple(m.keys.shape)} "
                                 f"does not match the model (layers {self.m3.memory_layers}, shape {shape})")
        return mems

    def forward_chunkwise(self, ids: Sequence[int], memories_for_chunk: MemorySource,
                          prompt_len: Optional[int] = None, segment_starts: Sequence[int] = ()) -> torch.Tensor:
        """Logits [T, V], all positions in one pass: every layer runs ONE masked attention over
        [reference BOS | the memories of every chunk | context] in which a memory column is open
        only to the queries of its own chunk (eq. 4 for all chunks at once, no loop over chunks;
        §7.5 Remark 8 names that loop as the paper's bottleneck)."""
        cfg, m3, W = self.cfg, self.m3, self.W
        T = len(ids)
        chunk = chunk_indices(T, prompt_len, m3.chunk_length, segment_starts)
        mems = {int(c): self._check_memories(int(c), memories_for_chunk(int(c))) for c in torch.unique(chunk)}
        Hkv = cfg.kv_heads
        causal = torch.tril(torch.ones(T, T, dtype=torch.bool))[None].expand(Hkv, T, T)

        def memory_attention(i, x, rope):
            q, k, v = project(cfg, W, i, x)
            Ks, Vs = [self.bos_k[i]], [self.bos_v[i]]
            opens = [torch.ones(Hkv, T, self.b, dtype=torch.bool)]
            if i in m3.memory_layers:
                li = m3.memory_layers.index(i)
                for c, ms in mems.items():
                    for m in ms:
                        Ks.append(m.keys[li])
                        Vs.append(m.values[li])
                        # open to chunk c's queries, and only in slots holding a token
                        opens.append((chunk == c)[None, :, None] & (m.indices[li] >= 0)[:, None, :])
            Ks.append(rope(k))
            Vs.append(v)
            opens.append(causal)
            return attend_output(cfg, W, i, rope(q), torch.cat(Ks, dim=1), torch.cat(Vs, dim=1),
                                 torch.cat(opens, dim=2))

        return self._run_layers(ids, self.context_positions(T), memory_attention)[0]

    def forward_token_by_token(self, ids: Sequence[int], memories_for_chunk: MemorySource,
                               prompt_len: Optional[int] = None) -> torch.Tensor:
        """The same logits computed as a decoder would: one token at a time with a KV cache,
        memories dropped and re-fetched when the chunk index changes, explicit loops over heads."""
        T = len(ids)
        chunk = chunk_indices(T, prompt_len, self.m3.chunk_length)
        return self._token_by_token(ids, self.context_positions(T), chunk, memories_for_chunk)[0]

    def _token_by_token(self, ids: Sequence[int], positions: Sequence[int], chunk: torch.Tensor,
                        memories_for_chunk: MemorySource):
        """(logits [T, V], trace {layer: {"x": [T, D], "k": [Hkv, T, d] post-RoPE, "v": ...}},
        residual states [L + 1] x [T, D]). Shares nothing with the batched path but the weights:
        its own RoPE (explicit pair rotations), softmax and head loops."""
        cfg, W, m3 = self.cfg, self.W, self.m3
        H, Hkv, d = cfg.heads, cfg.kv_heads, cfg.head_dim
        group = H // Hkv
        inv_freq = [float(f) for f in llama_ref.rope_inv_freq(cfg)]
        half = d // 2

        def rope(vec, pos):
            # rotate the pairs (j, j + d/2) by pos * inv_freq[j] (HF rotate-half layout)
            out = vec.clone()
            for j in range(half):
                c, s = math.cos(pos * inv_freq[j]), math.sin(pos * inv_freq[j])
                out[j] = vec[j] * c - vec[j + half] * s
                out[j + half] = vec[j + half] * c + vec[j] * s
            return out

        def proj(x, name, has_bias):
            y = W(name + ".weight") @ x
            return y + W(name + ".bias") if has_bias else y

        def norm(x, name):
            return W(name) * x / math.sqrt(float((x * x).sum()) / x.shape[0] + cfg.eps)

        cache_k = [[[] for _ in range(Hkv)] for _ in range(cfg.layers)]
        cache_v = [[[] for _ in range(Hkv)] for _ in range(cfg.layers)]
        xs = [[] for _ in range(cfg.layers)]
        states = [[] for _ in range(cfg.layers + 1)]
        embed = W("model.embed_tokens.weight")
        lm_head = embed if cfg.tied else W("lm_head.weight")
        logits = torch.zeros(len(ids), cfg.vocab)
        current, mems = None, []
        for t, tok in enumerate(ids):
            if int(chunk[t]) != current:          # a new chunk: drop the memories, retrieve its own
                current = int(chunk[t])
                mems = self._check_memories(current, memories_for_chunk(current))
            h = embed[int(tok)].clone()
            states[0].append(h)
            memory = None if self.memory is None else ultramem_ref.MemoryPass(self.memory)
            for i in range(cfg.layers):
                p = f"model.layers.{i}."
                x = norm(h, p + "input_layernorm.weight")
                xs[i].append(x)
                q = proj(x, p + "self_attn.q_proj", cfg.attention_bias).reshape(H, d)
                k = proj(x, p + "self_attn.k_proj", cfg.attention_bias).reshape(Hkv, d)
                v = proj(x, p + "self_attn.v_proj", cfg.attention_bias).reshape(Hkv, d)
                for g in range(Hkv):
                    cache_k[i][g].append(rope(k[g], float(positions[t])))
                    cache_v[i][g].append(v[g])
                heads_out = []
                for hq in range(H):
                    g = hq // group
                    qh = rope(q[hq], float(positions[t]))
                    keys = list(self.bos_k[i][g])
                    vals = list(self.bos_v[i][g])
                    if i in m3.memory_layers:                  # eq. 4: memories before the context
                        li = m3.memory_layers.index(i)
                        for m in mems:
                            for slot in range(m3.tokens_per_head):
                                if int(m.indices[li, g, slot]) >= 0:
                                    keys.append(m.keys[li, g, slot])
                                    vals.append(m.values[li, g, slot])
                    keys += cache_k[i][g]                      # context tokens 0..t (causal)
                    vals += cache_v[i][g]
                    scores = [float(qh @ kk) / math.sqrt(d) for kk in keys]
                    top = max(scores)
                    e = [math.exp(s - top) for s in scores]
                    z = sum(e)
                    acc = torch.zeros(d)
                    for ej, vj in zip(e, vals):
                        acc = acc + ej * vj
                    heads_out.append(acc / z)
                h = h + proj(torch.cat(heads_out), p + "self_attn.o_proj", cfg.o_bias)
                x = norm(h, p + "post_attention_layernorm.weight")
                h = h + llama_core.layer_mlp(cfg, W, i, x)
                if memory is not None:                         # this token's row through the memory layers
                    memory.read(i, x[None])
                    h = memory.add(i, h[None])[0]
                states[i + 1].append(h)
            logits[t] = lm_head @ norm(h, "model.norm.weight")
        trace = {i: {"x": torch.stack(xs[i]),
                     "k": torch.stack([torch.stack(cache_k[i][g]) for g in range(Hkv)]),
                     "v": torch.stack([torch.stack(cache_v[i][g]) for g in range(Hkv)])}
                 for i in range(cfg.layers)}
        return logits, trace, [torch.stack(s) for s in states]


# ----------------------------------------------------------------------------------------------
# Goldens
# ----------------------------------------------------------------------------------------------

def golden_reference_lengths(m3: Memory3Config) -> List[int]:
    """8 references: shorter than tokens_per_head (-1 slots), exactly tokens_per_head (no cut),
    partial ones and full ones. The first four are the ones 1 memory per chunk reads."""
    R, keep = m3.reference_length, m3.tokens_per_head
    return [max(1, keep - 1), max(1, (5 * R) // 12), R, keep, R, max(1, (3 * R) // 4), R, max(1, R - 3)]


def make_goldens(model_dir: str, out_dir: str, seed: int = 0, prompt_len: Optional[int] = None,
                 decode_len: Optional[int] = None, reference_bos_ids: Optional[Sequence[int]] = None,
                 min_margin: float = 1e-4, agreement_bound: float = 1e-9, min_memory_gap: float = 1e-5) -> dict:
    """Writes the goldens into out_dir (NPY float32 / int32, readable by tests/npy.hpp) and
    meta.json, which describes every file and the layout. Refuses (ValueError) when a kept/dropped
    selection gap is under min_margin in log-weight (exact ties included: the references have
    distinct tokens, so none is expected), so an f32 engine is not asked to reproduce a coin toss;
    the tie rule is covered by test_memory3.py. Raises AssertionError when the chunkwise and the
    token-by-token logits differ by agreement_bound or more. With UltraMemV2 memory layers, also
    refuses (ValueError) when one of their top-k selections, in any pass the goldens make, came
    within min_memory_gap (relative) of a tie (ultramem_ref.Stats)."""
    m = Memory3.load(model_dir, reference_bos_ids)
    cfg, m3 = m.cfg, m.m3
    C, R = m3.chunk_length, m3.reference_length
    rng = np.random.default_rng(seed)
    lengths = golden_reference_lengths(m3)
    if max(lengths) > cfg.vocab:
        raise ValueError("the vocabulary is too small for references of distinct tokens")
    refs = [rng.choice(cfg.vocab, size=n, replace=False).tolist() for n in lengths]
    mems = m.write_batch(refs)
    worst = min(x.margin for x in mems)
    ties = [x.exact_ties for x in mems]
    if worst < min_margin or any(ties):
        raise ValueError(f"selection margin {worst:.3g} (< {min_margin}?) or exact ties {ties}: pick another --seed")
    P = prompt_len if prompt_len is not None else 2 * C + C // 2          # last prompt chunk partial
    G = decode_len if decode_len is not None else C + C // 2              # two decoded chunks
    with open(os.path.join(model_dir, "config.json"), "r", encoding="utf-8") as f:
        bos = int(json.load(f).get("bos_token_id", 1))
    ids = [bos] + rng.integers(0, cfg.vocab, P + G - 1).tolist()
    T = len(ids)
    chunk = chunk_indices(T, P, C)
    n_chunks = int(chunk.max()) + 1
    queries = query_ranges(T, P, C)
    assert len(queries) == n_chunks
    os.makedirs(out_dir, exist_ok=True)
    files: Dict[str, str] = {}

    def save(name, a, dtype, what):
        arr = np.ascontiguousarray(a.numpy() if isinstance(a, torch.Tensor) else np.asarray(a), dtype=dtype)
        tmp = os.path.join(out_dir, name + ".tmp.npy")
        np.save(tmp, arr)
        os.replace(tmp, os.path.join(out_dir, name))
        files[name] = f"{np.dtype(dtype).str} {list(arr.shape)}: {what}"

    L_mem, Hkv, keep, d, D = len(m3.memory_layers), cfg.kv_heads, m3.tokens_per_head, cfg.head_dim, cfg.hidden
    save("reference_bos_ids.npy", list(m.bos_ids), np.int32, "[b] the reference BOS ids")
    save("reference_bos_keys.npy", torch.stack(m.bos_k), np.float32,
         "[L, Hkv, b, d] every layer's BOS keys, post-RoPE at positions -b..-1")
    save("reference_bos_values.npy", torch.stack(m.bos_v), np.float32, "[L, Hkv, b, d]")
    save("references.npy", [r + [-1] * (R - len(r)) for r in refs], np.int32,
         "[N, R] reference token ids, -1 after each reference's end")
    save("reference_lengths.npy", lengths, np.int32, "[N]")
    save("memory_indices.npy", torch.stack([x.indices for x in mems]), np.int32,
         f"[N, L_mem, Hkv, keep] kept token j per (memory layer, kv head), ascending, -1 = empty slot")
    save("memory_keys.npy", torch.stack([x.keys for x in mems]), np.float32,
         "[N, L_mem, Hkv, keep, d] post-RoPE at position j; 0 in empty slots")
    save("memory_values.npy", torch.stack([x.values for x in mems]), np.float32, "[N, L_mem, Hkv, keep, d]")
    save("retrieval_vectors.npy", torch.stack([x.retrieval for x in mems]), np.float32,
         "[N, D] unit-norm retrieval vector of each reference")
    save("context_ids.npy", ids, np.int32, "[T] prompt then decoded tokens; ids[0] = bos_token_id")
    q_vecs = torch.stack([m.retrieval_vector(ids[s:e]) for s, e in queries])
    bank = torch.stack([x.retrieval for x in mems])
    save("query_retrieval_vectors.npy", q_vecs, np.float32,
         "[chunks, D] retrieval vector of the query text of each chunk index (query_text_ranges)")
    save("query_scores.npy", q_vecs @ bank.T, np.float32, "[chunks, N] cosine of each query with each reference")
    schedules, agreement = {}, {}
    for per_chunk in (0, 1, 5):
        if per_chunk > m3.references_per_chunk:
            continue
        # chunk c reads references (c + i) mod N, i < per_chunk: neighbours differ, short ones included
        sched = [[(c + i) % len(refs) for i in range(per_chunk)] for c in range(n_chunks)]
        source = lambda c, s=sched: [mems[j] for j in s[c]]  # noqa: E731
        a = m.forward_chunkwise(ids, source, prompt_len=P)
        b = m.forward_token_by_token(ids, source, prompt_len=P)
        agreement[str(per_chunk)] = float((a - b).abs().max())
        if not agreement[str(per_chunk)] < agreement_bound:
            raise AssertionError(f"{per_chunk} memories per chunk: chunkwise and token-by-token logits differ "
                                 f"by {agreement[str(per_chunk)]:.3g}")
        schedules[str(per_chunk)] = sched
        save(f"logits_{per_chunk}.npy", a, np.float32,
             f"[T, V] logits of every context position with {per_chunk} memories per chunk (memories_per_chunk)")
    memory_gap = None
    if m.memory is not None:
        memory_gap = m.memory.stats.min_gap()
        if memory_gap < min_memory_gap:
            raise ValueError(f"a memory-layer top-k selection came within {memory_gap:.3g} (relative) of a tie "
                             f"(< {min_memory_gap}): pick another checkpoint --seed")
    meta = {
        "model": os.path.basename(os.path.normpath(model_dir)), "seed": seed,
        "generator": "python3 tools/reference/memory3.py MODEL_DIR OUT_DIR (torch float64)",
        "memory3": {"memory_layers": list(m3.memory_layers), "tokens_per_head": keep,
                    "reference_length": R, "chunk_length": C, "references_per_chunk": m3.references_per_chunk,
                    "selection": m3.selection, "retrieval_layer": m3.retrieval_layer,
                    "reference_bos_ids": list(m.bos_ids)},
        "shapes": {"N": len(refs), "L": cfg.layers, "L_mem": L_mem, "Hkv": Hkv, "keep": keep, "d": d, "D": D,
                   "b": m.b, "R": R, "T": T, "V": cfg.vocab, "chunks": n_chunks},
        "files": files,
        "positions": {
            "reference_bos": "token i of the reference BOS ids at position i - b (-b..-1), in every layer",
            "memory": "kept token j of any reference at position j (0..R-1); keys stored post-RoPE there",
            "context": "context_ids[t] at position R + t",
            "encoding": "a reference (or a retrieval text) is a causal pass over [reference_bos_ids, text] at "
                        "positions -b..-1, 0..n-1 with no memories",
        },
        "chunks": {
            "prompt_len": P, "decode_len": T - P, "tokens": T,
            "rule": "prompt position t < prompt_len: chunk t // chunk_length; decoded position t >= prompt_len: "
                    "chunk (prompt_len - 1) // chunk_length + (t - prompt_len) // chunk_length (decoded chunk 0 "
                    "keeps the last prompt chunk's memories, decoded chunk k >= 1 is a new chunk index)",
            "chunk_of_position": chunk.tolist(),
        },
        "attention": "every layer: [reference BOS K/V | at memory layers only: the memories of the query's "
                     "chunk, in memories_per_chunk order, slots with index -1 skipped | causal context]",
        "memories_per_chunk": schedules,
        "memories_per_chunk_rule": "k memories: chunk c reads references [(c + i) % N for i in range(k)]",
        "retrieval": f"mean over the text's tokens of the hidden state after retrieval_layer = {m3.retrieval_layer} "
                     "layer(s) (0 = embeddings) of its encoding, L2-normalised; score = dot product",
        "query_text_ranges": [list(r) for r in queries],
        "query_text_rule": "chunk index c < prompt chunks: context_ids of that prompt chunk; the index of decoded "
                           "chunk k >= 1: the chunk_length tokens of decoded chunk k - 1",
        "selection_min_log_margin": worst,
        "selection_margin_per_reference": [None if math.isinf(x.margin) else x.margin for x in mems],
        "selection_cuts_decided_by_tie_rule": ties,
        "max_abs_chunkwise_minus_token_by_token": agreement,
    }
    if memory_gap is not None:
        meta["ultramem_layers"] = {
            "placements": [list(p) for p in m.memory.mem_cfg.insert],
            "rule": "block i: x = post_attention_layernorm(h), h += MLP(x); memory layer l placed a:b reads x of "
                    "block a, its output is added to h after block b (every pass: reading, writing, retrieval)",
            "min_relative_topk_gap": memory_gap}
    with open(os.path.join(out_dir, "meta.json"), "w", encoding="utf-8", newline="\n") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    return meta


def main(argv: List[str]) -> int:
    ap = argparse.ArgumentParser(description="Write Memory3 goldens for a model folder (model_type memory3).")
    ap.add_argument("model_dir")
    ap.add_argument("out_dir")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--prompt-len", type=int, dest="prompt_len", help="default 2.5 chunks")
    ap.add_argument("--decode-len", type=int, dest="decode_len", help="default 1.5 chunks")
    ap.add_argument("--reference-bos-ids", dest="bos", help="comma-separated ids; default config memory3.reference_bos_ids")
    ap.add_argument("--min-margin", type=float, default=1e-4, dest="min_margin")
    a = ap.parse_args(argv)
    bos = None if a.bos is None else [int(t) for t in a.bos.split(",") if t.strip()]
    try:
        meta = make_goldens(a.model_dir, a.out_dir, a.seed, a.prompt_len, a.decode_len, bos, a.min_margin)
    except ValueError as e:
        print(f"memory3.py: {e}", file=sys.stderr)
        return 1
    print(f"{a.out_dir}: {meta['chunks']['tokens']} tokens, prompt {meta['chunks']['prompt_len']}, selection "
          f"margin {meta['selection_min_log_margin']:.3g}, chunkwise vs token-by-token "
          f"{meta['max_abs_chunkwise_minus_token_by_token']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
