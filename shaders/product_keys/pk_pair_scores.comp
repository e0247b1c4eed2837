#version 450
// PK_PAIR_SCORES: the scores of chosen product-key pairs. Entry e = (n, h, q) names the virtual
// key v = idx[e] = i*Nk + j; with S1 = S[n, 2h], S2 = S[n, 2h+1]:
//   additive (no cores):  out[e] = S1[i, 0] + S2[j, 0]
//   Tucker (C cores):     out[e, c] = sum_x sum_y S1[i, x] core_c[h, x, y] S2[j, y]
// One invocation per output element (entry, core): Rk*Rk products, tiny work. With F64 the sum
// runs in double in the reference's order and is rounded once (the reference's result bit for
// bit); otherwise in f32. The additive sum of two f32 is the same either way (one rounding).
#if defined(F64)
#define ACC double
#else
#define ACC float
#endif
#include "common.glsl"
#include "lookup_common.glsl"

#define MAX_CORES 5

layout(local_size_x = 64) in;

layout(push_constant) uniform Push {
    uvec2 s;                 // f32 [N, 2H, Nk, Rk]
    uvec2 idx;               // i32 [N, H, k]
    uvec2 out_;              // f32 [N, H, k, C]
    uvec2 core[MAX_CORES];   // byte address of each core [H, Rk, Rk]
    uint core_dtypes;        // dtype of core c in bits 2c..2c+1
    uint heads;              // H
    uint nk;                 // Nk
    uint rk;                 // Rk
    uint k;                  // pairs per (token, head)
    uint cores;              // C (0: additive)
    uint total;              // output elements: N * H * k * max(C, 1)
    uint limit;              // Nk*Nk, clamped to 2^31-1, for the error report
    uint node;
} pc;

// Core c as a Weight (common.glsl): its address rounded down to a word, and the half-word its
// element 0 starts at.
Weight core_weight(uint c) {
    Weight w;
    const uvec2 a = pc.core[c];
    w.addr = uvec2(a.x & ~3u, a.y);
    w.dtype = (pc.core_dtypes >> (2u * c)) & 3u;
    w.first = (a.x >> 1) & 1u;
    return w;
}

void main() {
    const uint o = folded_workgroup() * 64u + gl_LocalInvocationIndex;
    if (o >= pc.total) return;
    const uint width = max(pc.cores, 1u);
    const uint e = o / width, c = o - e * width;
    const int v = Ints(pc.idx).v[e];
    if (v < 0 || uint(v) / pc.nk >= pc.nk) {  // i.e. v >= Nk*Nk, which need not fit in 32 bits
        if (c == 0u) report_bad_index(pc.node, v, int(pc.limit));
        return;  // reported, and the entry skipped
    }
    const uint i = uint(v) / pc.nk, j = uint(v) - i * pc.nk;
    const uint n = e / (pc.heads * pc.k), h = (e / pc.k) % pc.heads;
    const uint side1 = (n * 2u * pc.heads + 2u * h) * pc.nk;  // S[n, 2h, 0, 0] / Rk
    Floats sc = Floats(pc.s);
    const uint r1 = (side1 + i) * pc.rk, r2 = (side1 + pc.nk + j) * pc.rk;
    if (pc.cores == 0u) {
        Floats(pc.out_).v[o] = sc.v[r1] + sc.v[r2];
        return;
    }
    const Weight core = core_weight(c);
    const uint c0 = h * pc.rk * pc.rk;
    ACC acc = ACC(0.0);
    for (uint x = 0u; x < pc.rk; ++x) {
        const ACC a = ACC(sc.v[r1 + x]);
        for (uint y = 0u; y < pc.rk; ++y)
            acc += a * ACC(weight_at(core, c0 + x * pc.rk + y)) * ACC(sc.v[r2 + y]);
    }
    Floats(pc.out_).v[o] = float(acc);
}
