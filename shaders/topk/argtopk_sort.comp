#version 450
// Full bitonic sort of rows of rank tuples, for ARGTOPK and PK_TOPK when k is too large for the
// shared-memory selection (argtopk.comp, pk_topk.comp). A row of p tuples (p a power of two,
// padded with zero tuples) lives in scratch as ELEM_W planes of p words. Stages whose compare
// distance fits in a block of B = min(p, SEL_N) tuples run in shared memory (LOCAL: load a block,
// run sizes size_first..size_last, store it or write the output); each larger distance is one
// GLOBAL dispatch of one compare-exchange per invocation. Tuples are unique, so the order, and
// with it every output index, is exact.
//
// Variants: ELEM_W 2 (ARGTOPK: the LOCAL pass may load x itself and writes tuple indices) and
// ELEM_W 3 (PK_TOPK: tuples come from pk_topk.comp's stage-1 pass, the index is a pair
// p = a*m + b and the output is I1[a]*Nk + I2[b], from the candidate lists in `aux`).
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint SEL_N = 2048;

#ifdef SORT_LOCAL
#define TOPK_SHARED 1
shared uint sel[ELEM_W * SEL_N];
#endif

layout(push_constant) uniform Push {
    uvec2 src;    // ARGTOPK: x [.., d] f32 (LOCAL with flag 1)
    uvec2 keys;   // scratch tuples of this batch: rows x ELEM_W planes x p words
    uvec2 out_;   // [.., k] i32
    uvec2 aux;    // PK_TOPK: candidate lists, rows x (I1[m], I2[m])
    uint rows;    // rows in this batch
    uint row0;    // the batch's first row (of x and out)
    uint d;       // real tuples per row (ARGTOPK: D)
    uint p;       // padded row length
    uint k;
    uint size_first;  // LOCAL: bitonic sizes size_first..size_last; GLOBAL: the size
    uint size_last;
    uint stride;      // GLOBAL: compare distance (>= SEL_N)
    uint flags;       // LOCAL: 1 = load from src (ARGTOPK), 2 = write the output, not scratch
    uint grid_x;
    uint m;           // PK_TOPK: candidates per side
    uint nk;          // PK_TOPK: sub-keys per side
} pc;

#include "topk_common.glsl"

uint key_word(uint r, uint w, uint i) { return (r * ELEM_W + w) * pc.p + i; }

ELEM load_tuple(uint r, uint i) {
    Words s = Words(pc.keys);
#if ELEM_W == 2
    return uvec2(s.v[key_word(r, 0u, i)], s.v[key_word(r, 1u, i)]);
#else
    return uvec3(s.v[key_word(r, 0u, i)], s.v[key_word(r, 1u, i)], s.v[key_word(r, 2u, i)]);
#endif
}

void store_tuple(uint r, uint i, ELEM e) {
    Words s = Words(pc.keys);
    s.v[key_word(r, 0u, i)] = e.x;
    s.v[key_word(r, 1u, i)] = e.y;
#if ELEM_W == 3
    s.v[key_word(r, 2u, i)] = e.z;
#endif
}

// The output value of the tuple ranked `e`.
int output_of(uint r, ELEM e) {
#if ELEM_W == 2
    return int(elem_index(e));
#else
    const uint pair = elem_index(e);
    Words lists = Words(pc.aux);
    const uint a = pair / pc.m, b = pair - a * pc.m;
    return int(lists.v[r * 2u * pc.m + a] * pc.nk + lists.v[r * 2u * pc.m + pc.m + b]);
#endif
}

void main() {
#ifdef SORT_LOCAL
    const uint block = min(pc.p, SEL_N);
    const uint blocks = pc.p / block;
    const uint g = group_linear(pc.grid_x);
    if (g >= pc.rows * blocks) return;  // uniform per workgroup
    const uint r = g / blocks;
    const uint origin = (g - r * blocks) * block;
#if ELEM_W == 2
    if ((pc.flags & 1u) != 0u) {
        Words x = Words(ptr_elems(pc.src, pc.row0 + r, pc.d));
        for (uint i = gl_LocalInvocationID.x; i < block; i += WG) {
            const uint gi = origin + i;
            sel_set(i, gi < pc.d ? uvec2(f32_rank_key(x.v[gi]), ~gi) : ELEM_ZERO);
        }
    } else
#endif
    {
        for (uint i = gl_LocalInvocationID.x; i < block; i += WG) sel_set(i, load_tuple(r, origin + i));
    }
    barrier();
    sel_bitonic(block, origin, pc.size_first, pc.size_last);
    if ((pc.flags & 2u) != 0u) {
        Ints o = Ints(ptr_elems(pc.out_, pc.row0 + r, pc.k));
        for (uint i = gl_LocalInvocationID.x; i < block && origin + i < pc.k; i += WG) o.v[origin + i] = output_of(r, sel_get(i));
    } else {
        for (uint i = gl_LocalInvocationID.x; i < block; i += WG) store_tuple(r, origin + i, sel_get(i));
    }
#else
    const uint per_row = pc.p / (2u * WG);  // workgroups per row
    const uint g = group_linear(pc.grid_x);
    if (g >= pc.rows * per_row) return;
    const uint r = g / per_row;
    const uint t = (g - r * per_row) * WG + gl_LocalInvocationID.x;
    const uint i = pair_low(t, pc.stride), j = i + pc.stride;
    const ELEM a = load_tuple(r, i), b = load_tuple(r, j);
    if (elem_gt(b, a) == ((i & pc.size_first) == 0u)) {
        store_tuple(r, i, b);
        store_tuple(r, j, a);
    }
#endif
}
