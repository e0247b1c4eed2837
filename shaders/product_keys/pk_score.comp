#version 450
// PK_SCORE: S[n, b, c] = sum_d q[n, h/s, t, d] * k~[b, j, d, r] for bank b = 2h+t, column
// c = j*Rk + r. Per bank this is a small GEMM [N, K] x [K, Nk*Rk], tiled here: a workgroup owns
// TN tokens x TC columns of one bank and walks d in chunks of KB, staging the chunk's keys and
// queries in shared memory; each thread keeps TP x CP sums in registers.
//
// With the key-norm gain the scores are (q*g) . k / rms(k): g is folded into the staged queries
// and each column's sum of squares is taken from the same staged key values the dot products
// use, so the keys are read once (no pre-pass over the keys, which at decode would double the
// traffic of a kernel that is bound by streaming the keys).
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;  // invocations
layout(constant_id = 1) const uint TT = 16;   // threads along tokens
layout(constant_id = 2) const uint TP = 4;    // tokens per thread
layout(constant_id = 3) const uint CP = 4;    // columns per thread
layout(constant_id = 4) const uint KB = 16;   // d per chunk

const uint CT = WG / TT;  // threads along columns
const uint TC = CT * CP;  // columns per tile
const uint TN = TT * TP;  // tokens per tile
const uint KS = TC + 1;   // row stride of ks: the padding spreads the transposing stores over banks
const uint QS = KB + 1;

layout(push_constant) uniform Push {
    Weight keys;  // [2H, Nk, K, Rk]
    Weight gain;  // [K] (norm only)
    uvec2 q;      // [N, Q, 2, K] f32
    uvec2 out_;   // [N, 2H, Nk, Rk] f32
    uint n_tok, n_q, kdim, rank;
    uint nk, share, ncols, banks;  // ncols = Nk * Rk, banks = 2H
    float eps;
    uint norm;
} pc;

shared float ks[KB * KS];  // ks[dd][c - c0]
shared float qs[TN * QS];  // qs[token - n0][dd]

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint ct = tid % CT, tt = tid / CT;
    const uint c0 = gl_WorkGroupID.x * TC;
    const uint n0 = gl_WorkGroupID.y * TN;
    const uint b = gl_WorkGroupID.z;
    const uint side = b & 1u, qhead = (b >> 1) / pc.share;
    const uint rank = pc.rank;

    // The keys overlapping the tile's columns: each is one contiguous run of KB*Rk elements per
    // chunk, so consecutive invocations load consecutive elements.
    const uint c_end = min(c0 + TC, pc.ncols);
    const uint j_first = c0 / rank;
    const uint j_count = (c_end + rank - 1u) / rank - j_first;
    const uint run = KB * rank;
    const uint key_row0 = b * pc.nk + j_first;

    float acc[TP * CP];
    float ss[CP];
    [[unroll]] for (uint i = 0; i < TP * CP; ++i) acc[i] = 0.0;
    [[unroll]] for (uint i = 0; i < CP; ++i) ss[i] = 0.0;

    for (uint d0 = 0; d0 < pc.kdim; d0 += KB) {
        const uint kb = min(KB, pc.kdim - d0);
        for (uint i = tid; i < j_count * run; i += WG) {
            const uint jj = i / run, rem = i - jj * run;
            const uint dd = rem / rank;
            const uint c = (j_first + jj) * rank + (rem - dd * rank);
            if (dd < kb && c >= c0 && c < c_end)
                ks[dd * KS + (c - c0)] = weight_at(pc.keys, ((key_row0 + jj) * pc.kdim + d0) * rank + rem);
        }
        for (uint i = tid; i < TN * KB; i += WG) {
            const uint t = i / KB, dd = i - t * KB;
            const uint n = n0 + t;
            float v = 0.0;
            if (n < pc.n_tok && dd < kb) {
                v = Floats(pc.q).v[((n * pc.n_q + qhead) * 2u + side) * pc.kdim + d0 + dd];
                if (pc.norm != 0u) v *= weight_at(pc.gain, d0 + dd);
            }
            qs[t * QS + dd] = v;
        }
        barrier();
        // Columns past c_end read stale shared values; their sums are never stored.
        for (uint dd = 0; dd < kb; ++dd) {
            float kv[CP], qv[TP];
            [[unroll]] for (uint i = 0; i < CP; ++i) kv[i] = ks[dd * KS + ct + i * CT];
            [[unroll]] for (uint t = 0; t < TP; ++t) qv[t] = qs[(tt * TP + t) * QS + dd];
            [[unroll]] for (uint t = 0; t < TP; ++t)
                [[unroll]] for (uint i = 0; i < CP; ++i) acc[t * CP + i] += qv[t] * kv[i];
            if (pc.norm != 0u)
                [[unroll]] for (uint i = 0; i < CP; ++i) ss[i] += kv[i] * kv[i];
        }
        barrier();
    }

    [[unroll]] for (uint i = 0; i < CP; ++i) {
        const uint c = c0 + ct + i * CT;
        if (c >= pc.ncols) continue;
        const float scale = pc.norm != 0u ? 1.0 / sqrt(ss[i] / float(pc.kdim) + pc.eps) : 1.0;
        [[unroll]] for (uint t = 0; t < TP; ++t) {
            const uint n = n0 + tt * TP + t;
            if (n < pc.n_tok) Floats(pc.out_).v[(n * pc.banks + b) * pc.ncols + c] = acc[t * CP + i] * scale;
        }
    }
}
