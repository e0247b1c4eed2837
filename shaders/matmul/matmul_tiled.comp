#version 450
// MATMUL for many rows of x (prefill): y[n, m] = sum_k x[n, k] W[m, k], bound by arithmetic.
//
// A workgroup computes a BM (rows of W) x BN (rows of x) tile of y. K advances BK at a time:
// the threads copy a BM x BK block of W (widened to f32) and a BN x BK block of x into shared
// memory, then each thread multiplies out a TM x TN micro-tile held in registers, so every
// shared value feeds TN (or TM) multiply-adds. A thread owns groups of 4 consecutive rows, the
// groups interleaved with its neighbours' ((i4*TX + tx)*4 + e), so its shared reads are 16-byte
// vec4 loads and neighbouring threads read (and finally store) contiguous memory. Out-of-range
// rows and columns load as zero; stores are bounds-checked. TM and TN are multiples of 4.
//
// Variants (matmul.cmake): W_F32 (one float per load); W_F16 / W_BF16 with LOAD_WORD
// (two elements per 32-bit load: K even and `first` 0); W_ANY (weight_at, any K and `first`);
// Q_TYPE (a block-quantized W, quant.glsl: each thread decodes quads of 4 weights to f32 into the
// shared tile, so the GEMM itself does not change; K is a whole number of blocks of 32 or 256
// and BK a multiple of 4, so a quad never crosses a K block).
#include "common.glsl"
#include "matmul_common.glsl"
#if defined(Q_TYPE)
#include "quant.glsl"
#endif

layout(local_size_x_id = 0) in;             // WG = (BM / TM) * (BN / TN)
layout(constant_id = 1) const uint BM = 64;
layout(constant_id = 2) const uint BN = 64;
layout(constant_id = 3) const uint BK = 16;  // even (a multiple of 4 for Q_TYPE)
layout(constant_id = 4) const uint TM = 4;
layout(constant_id = 5) const uint TN = 4;
const uint WG = gl_WorkGroupSize.x;
const uint TX = BM / TM;  // threads along m
const uint TY = BN / TN;  // threads along n
// Loads per thread and K block (ceiling), for loops the compiler can unroll.
const uint W_ITEMS = BM * BK / 2u;  // words (LOAD_WORD) ...
const uint W_LOADS = (W_ITEMS + WG - 1u) / WG;
const uint W_ELEMS = BM * BK;       // ... or elements
const uint W_ELEM_LOADS = (W_ELEMS + WG - 1u) / WG;
const uint W_QUADS = BM * BK / 4u;  // ... or quads of 4 (Q_TYPE)
const uint W_QUAD_LOADS = (W_QUADS + WG - 1u) / WG;
const uint X_ELEMS = BN * BK;
const uint X_LOADS = (X_ELEMS + WG - 1u) / WG;

layout(push_constant) uniform Push {
    uvec2 x;   // f32 [N, K]
    uvec2 y;   // f32 [N, M]
    Weight w;  // [M, K]
    uint K;
    uint M;
    uint N;
} pc;

// Transposed tiles ws[k][m] and xs[k][n] in vec4s, so the micro-tile reads are 16-byte shared
// loads. Each k row is padded by 4 floats (one vec4): the rows stay 16-byte aligned and the
// transposing stores of neighbouring threads spread over the banks.
const uint WS_ROW = BM + 4u;  // floats per k row
const uint XS_ROW = BN + 4u;
shared vec4 ws[BK * WS_ROW / 4u];
shared vec4 xs[BK * XS_ROW / 4u];

void ws_store(uint kl, uint ml, float v) {
    const uint f = kl * WS_ROW + ml;
    ws[f >> 2][f & 3u] = v;
}

void load_w_tile(uint m0, uint k0, uint tid) {
#if defined(Q_TYPE)
    // BM rows of BK/4 quads; neighbouring threads decode neighbouring quads of one row.
    const uint quarter_bk = BK / 4u;
    const uint row_bytes = quant_row_bytes(pc.K);
    [[unroll]] for (uint t = 0; t < W_QUAD_LOADS; ++t) {
        const uint i = tid + t * WG;
        if (i >= W_QUADS) break;
        const uint ml = i / quarter_bk, kl = (i % quarter_bk) * 4u;
        const uint m = m0 + ml, k = k0 + kl;
        vec4 v = vec4(0.0);
        if (m < pc.M && k < pc.K) v = q_quad(quant_row(pc.w, m, row_bytes), k);
        [[unroll]] for (uint e = 0; e < 4u; ++e) ws_store(kl + e, ml, v[e]);
    }
#elif defined(LOAD_WORD)
    // BM rows of BK/2 words; neighbouring threads read neighbouring words of one row.
    const uint half_bk = BK / 2u;
    [[unroll]] for (uint t = 0; t < W_LOADS; ++t) {
        const uint i = tid + t * WG;
        if (i >= W_ITEMS) break;
        const uint ml = i / half_bk, kl = (i % half_bk) * 2u;
        const uint m = m0 + ml, k = k0 + kl;
        vec2 v = vec2(0.0);
        if (m < pc.M && k < pc.K) v = unpack_pair(Words(addr_offset(pc.w.addr, m, pc.K * 2u)).v[k >> 1]);
        ws_store(kl, ml, v.x);
        ws_store(kl + 1u, ml, v.y);  // K is even: k+1 < K whenever k < K
    }
#else
    [[unroll]] for (uint t = 0; t < W_ELEM_LOADS; ++t) {
        const uint i = tid + t * WG;
        if (i >= W_ELEMS) break;
        const uint ml = i / BK, kl = i % BK;
        const uint m = m0 + ml, k = k0 + kl;
        float v = 0.0;
        if (m < pc.M && k < pc.K) {
#if defined(W_F32)
            v = Floats(addr_offset(pc.w.addr, m, pc.K * 4u)).v[k];
#else
            v = weight_at(weight_row(pc.w, m, pc.K), k);
#endif
        }
        ws_store(kl, ml, v);
    }
#endif
}

void load_x_tile(uint n0, uint k0, uint tid) {
    [[unroll]] for (uint t = 0; t < X_LOADS; ++t) {
        const uint i = tid + t * WG;
        if (i >= X_ELEMS) break;
        const uint nl = i / BK, kl = i % BK;
        const uint n = n0 + nl, k = k0 + kl;
        // The host keeps N*K below 2^31, so the flat index is safe.
        const uint f = kl * XS_ROW + nl;
        xs[f >> 2][f & 3u] = n < pc.N && k < pc.K ? Floats(pc.x).v[n * pc.K + k] : 0.0;
    }
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint tx = tid % TX, ty = tid / TX;
    const uint m0 = gl_WorkGroupID.x * BM, n0 = gl_WorkGroupID.y * BN;

    // acc[j * TM4 + i4] holds y rows n_local(j), columns m_local(4*i4 .. 4*i4+3).
    const uint TM4 = TM / 4u, TN4 = TN / 4u;
    vec4 acc[TN * TM4];
    [[unroll]] for (uint i = 0; i < TN * TM4; ++i) acc[i] = vec4(0.0);

    for (uint k0 = 0; k0 < pc.K; k0 += BK) {
        load_w_tile(m0, k0, tid);
        load_x_tile(n0, k0, tid);
        barrier();
        [[unroll]] for (uint kl = 0; kl < BK; ++kl) {
            vec4 a[TM4], b[TN4];
            [[unroll]] for (uint i4 = 0; i4 < TM4; ++i4) a[i4] = ws[kl * (WS_ROW / 4u) + i4 * TX + tx];
            [[unroll]] for (uint j4 = 0; j4 < TN4; ++j4) b[j4] = xs[kl * (XS_ROW / 4u) + j4 * TY + ty];
            [[unroll]] for (uint j = 0; j < TN; ++j) {
                const float bj = b[j >> 2][j & 3u];
                [[unroll]] for (uint i4 = 0; i4 < TM4; ++i4) acc[j * TM4 + i4] = fma(a[i4], vec4(bj), acc[j * TM4 + i4]);
            }
        }
        barrier();  // the next block overwrites the tiles
    }

    [[unroll]] for (uint j = 0; j < TN; ++j) {
        const uint n = n0 + ((j >> 2) * TY + ty) * 4u + (j & 3u);
        if (n >= pc.N) continue;
        [[unroll]] for (uint i4 = 0; i4 < TM4; ++i4) {
            const uint m = m0 + (i4 * TX + tx) * 4u;
            [[unroll]] for (uint e = 0; e < 4u; ++e)
                if (m + e < pc.M) Floats(pc.y).v[n * pc.M + m + e] = acc[j * TM4 + i4][e];
        }
    }
}
