#version 450
// HIVE: out[n, h, :] = (sum_j w[n, h, j] * bank[idx[n, h, j], :]) proj[h]
//
// One workgroup per bag (n, h), in two phases that are both weighted sums of rows:
//  1. the bag over the latent bank into shared memory (latent[r], f32), the entries staged in
//     shared memory in chunks;
//  2. latent x proj[h]: the sum of proj[h]'s rows k weighted by latent[k].
// In both, the 64 x-lanes hold two adjacent columns each (one 32-bit word of 16-bit rows) and
// the 4 y-slices share the rows (row e goes to slice e % 4); the slices' partial sums are added
// in shared memory. Accumulation is f32.
//
// A block-quantized bank (Q_TYPE, shaders/quant.glsl) gives each lane a quad of four adjacent
// columns in phase 1 (r is a whole number of blocks, so of quads), decoded exactly as the CPU
// reference decodes it; the projections are never quantized (the op's rule).
#include "common.glsl"
#include "lookup_common.glsl"
#if defined(Q_TYPE)
#include "quant.glsl"
#define BANK_UNIT 4u  // bank columns per lane in phase 1
#else
#define BANK_UNIT 2u
#endif

#define LANES 64u
#define SLICES 4u
#define BLOCK_COLS (2u * LANES)
#define THREADS (LANES * SLICES)
#define MAX_RANK 2048u  // kMaxRank in backends/vulkan/src/kernels/lookup.cpp

layout(local_size_x = 64, local_size_y = 4) in;

layout(push_constant) uniform Push {
    Weight bank;  // [R, r]
    Weight proj;  // [H, r, Dh]
    uvec2 idx;    // i32 [N, H, m]
    uvec2 w;      // f32 [N, H, m]
    uvec2 out_;   // f32 [N, H, Dh]
    uint rows;    // R
    uint rank;    // r
    uint dh;
    uint heads;
    uint m;
    uint bags;    // N * H
    uint node;
} pc;

shared float s_latent[MAX_RANK];
shared int s_row[THREADS];  // bank row of each staged entry, -1 for a bad index
shared float s_w[THREADS];
shared vec4 s_part[SLICES - 1u][LANES];  // up to four columns per lane

// Adds the other slices' partial sums into slice 0's `acc` (every invocation must call it).
vec4 sum_slices(vec4 acc, uint lane, uint slice) {
    if (slice > 0u) s_part[slice - 1u][lane] = acc;
    barrier();
    if (slice == 0u) {
        [[unroll]] for (uint s = 0u; s < SLICES - 1u; ++s) acc += s_part[s][lane];
    }
    barrier();  // s_part is reused by the next block
    return acc;
}

void main() {
    const uint bag = folded_workgroup();
    if (bag >= pc.bags) return;  // whole workgroup: no barrier is skipped by half
    const uint h = bag % pc.heads;
    const uint tid = gl_LocalInvocationIndex, lane = gl_LocalInvocationID.x, slice = gl_LocalInvocationID.y;

    for (uint k = tid; k < pc.rank; k += THREADS) s_latent[k] = 0.0;
    barrier();

    // Phase 1: latent = sum_j w[j] * bank[idx[j], :].
    const uint first = bag * pc.m;
    for (uint j0 = 0u; j0 < pc.m; j0 += THREADS) {
        const uint count = min(THREADS, pc.m - j0);
        if (tid < count) {
            const int v = Ints(pc.idx).v[first + j0 + tid];
            const bool bad = v < 0 || uint(v) >= pc.rows;
            if (bad) report_bad_index(pc.node, v, int(pc.rows));  // reported, and the entry skipped
            s_row[tid] = bad ? -1 : v;
            s_w[tid] = Floats(pc.w).v[first + j0 + tid];
        }
        barrier();
        for (uint c0 = 0u; c0 < pc.rank; c0 += BANK_UNIT * LANES) {
            const uint c = c0 + BANK_UNIT * lane;
            vec4 acc = vec4(0.0);
            if (c < pc.rank) {
                for (uint e = slice; e < count; e += SLICES) {
                    const int row = s_row[e];
                    if (row < 0) continue;
#if defined(Q_TYPE)
                    acc += s_w[e] * q_quad(quant_row(pc.bank, uint(row), quant_row_bytes(pc.rank)), c);
#else
                    acc.xy += s_w[e] * row_pair(weight_row(pc.bank, uint(row), pc.rank), c, pc.rank);
#endif
                }
            }
            acc = sum_slices(acc, lane, slice);
            if (slice == 0u)
                [[unroll]] for (uint i = 0u; i < BANK_UNIT; ++i)
                    if (c + i < pc.rank) s_latent[c + i] += acc[i];
        }
        barrier();  // latent complete for this chunk; the next chunk overwrites the staging
    }

    // Phase 2: out = latent proj[h], i.e. the rows k of proj[h] weighted by latent[k].
    Floats o = Floats(pc.out_);
    for (uint d0 = 0u; d0 < pc.dh; d0 += BLOCK_COLS) {
        const uint d = d0 + 2u * lane;
        vec4 acc = vec4(0.0);
        if (d < pc.dh) {
            for (uint k = slice; k < pc.rank; k += SLICES)
                acc.xy += s_latent[k] * row_pair(weight_row(pc.proj, h * pc.rank + k, pc.dh), d, pc.dh);
        }
        acc = sum_slices(acc, lane, slice);
        if (slice == 0u && d < pc.dh) {
            o.v[bag * pc.dh + d] = acc.x;
            if (d + 1u < pc.dh) o.v[bag * pc.dh + d + 1u] = acc.y;
        }
    }
}
