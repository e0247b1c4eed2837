// The attention sub-layer of a Memory3 model in its three uses: reading (the LOGITS forward, with
// the reference BOS and the chunk's explicit memories before the context, eq. 4 of §3.2),
// writing (ENCODE: a plain causal pass over "<s>Reference: ..." that also hands out its keys,
// values and §3.3's selection weights) and the retrieval query (ENCODE_QUERY).
//
// Positions (one convention for the whole model, because stored keys are already rotated):
//   reference BOS (b tokens)          RoPE positions -b .. -1
//   token j of any reference           RoPE position  j        (0..R-1, shared by all memories:
//                                                               §3.2's parallel positions)
//   context token at engine position t RoPE position  R + t
// RoPE scores depend only on position differences, so this is Figure 9's layout
// ["<s>Reference:", memories, context] on one axis.
#pragma once

#include <string>

#include "memory3_config.hpp"
#include "mnemo/plugin.hpp"
#include "transformer_blocks.hpp"

namespace mnemo::memory3 {

using plugin::Graph;
using plugin::Host;
using plugin::T;

// The projections of one layer's attention input, before RoPE.
struct Projections {
    T q;  // [N, heads, head_dim], bias included (attention_bias)
    T k;  // [N, kv_heads, head_dim]
    T v;  // [N, kv_heads, head_dim]
};
Projections project(const Graph& g, const llama::LlamaConfig& c, const blocks::Attention& a, T x);

// What a layer reads before the context in the LOGITS graph (ids from Host; -1 when absent).
struct Prefix {
    mnemo_tid k = -1, v = -1;  // "memory.k.<l>" / "memory.v.<l>"
    mnemo_tid len = -1;        // memory layers: "memory.len" [blocks]; other layers: the constant {b}
                               // (-1 when b = 0: the layer reads no prefix)
    bool per_block = false;    // memory layer: block MEMORY_BLOCK[n] for query n
};

// The states of Prefix for layer `layer` ("memory.k.<l>" / "memory.v.<l>" for every layer, as
// mnemo_memory_spec says). `blocks` is the memory layers' block count, `len` the id of
// "memory.len", `bos_len` that of the constant {b} (-1 when b = 0), `cache_dtype` the context's
// K/V cache dtype (the prefix is read by ATTENTION alongside the cache, in the same dtype).
Prefix declare_prefix(const Host& h, const Memory3Config& c, int64_t layer, int64_t blocks, mnemo_tid len,
                      mnemo_tid bos_len, int32_t cache_dtype);

// LOGITS: the attention sub-layer output [N, hidden] with the context at RoPE positions R + t.
T read_attention(const Graph& g, const Memory3Config& c, const blocks::Attention& a, const Prefix& p, T x,
                 const blocks::Positions& pos);

// ENCODE / ENCODE_QUERY: the encode caches "encode.k.<l>" / "encode.v.<l>" [encode sequences,
// kv heads, slots, head dim] of one layer.
struct EncodeCache {
    mnemo_tid k = -1, v = -1;
};
EncodeCache declare_encode_cache(const Host& h, const Memory3Config& c, int64_t layer, int64_t sequences,
                                 int64_t slots, int32_t cache_dtype);

// ENCODE: marks "k.<l>" (keys at RoPE position slot - b), "v.<l>" and, for a memory layer,
// "mass.<l>" (§3.3's selection weights). With a cache, also returns the causal attention output
// [N, hidden] of the layer; without one (the last layer, whose output nobody reads) returns {}.
T write_attention(const Graph& g, const Memory3Config& c, const blocks::Attention& a, const EncodeCache* cache,
                  int64_t layer, T x, const blocks::Positions& pos, bool mark);

}  // namespace mnemo::memory3
