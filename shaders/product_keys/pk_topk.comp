#version 450
// PK_TOPK: two-stage product-key top-k, one workgroup per (token, head) row.
//
// Stage 1 forms each side's scores s[j] (additive: the scores themselves; Tucker: sum_r u[r] S[j, r]
// in double, rounded once to f32 as the reference does) and selects the m best through the
// shared-memory selection of topk_common.glsl. Stage 2 offers the m*m pairs p = a*m + b with
// their score t in double (additive s1 + s2; Tucker the reference's triple sum, in its order)
// to the same selection.
//
// Double arithmetic is native where the device has shaderFloat64 (F64 variants; every operation
// is `precise`, so no driver fuses a multiply-add and skips the rounding the reference does),
// else the exact integer emulation of topk_f64.glsl: both give the reference's doubles bit for
// bit, and ranking uses integer keys of them, so the indices match exactly.
//
// Variants: SELECT does everything in shared memory and writes the output (m <= SEL_N/4 and
// k <= SEL_N/2); STAGE1 (larger k) selects the candidates, stores both lists in `aux` and writes
// every pair's tuple to scratch for argtopk_sort.comp (ELEM_W 3) to sort.
#include "common.glsl"
#include "topk_f64.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint SEL_N = 2048;

#define ELEM_W 3  // stage-1 tuples are (0, f32 key, ~j), stage-2 tuples (double key, ~p)
#define TOPK_SHARED 1
#define TOPK_STREAM 1
shared uint sel[3u * SEL_N];
#ifdef SELECT
shared uint cand[SEL_N / 2u];  // I1 then I2 (m <= SEL_N/4 each)
#else
shared uint cand[SEL_N];       // m <= SEL_N/2 each
#endif

layout(push_constant) uniform Push {
    uvec2 s;        // sub-key scores [N, 2H, Nk, Rk] f32
    uvec2 out_;     // SELECT: [N, H, k] i32; STAGE1: scratch tuples, rows x 3 planes x p words
    uvec2 aux;      // STAGE1: candidate lists, rows x (I1[m], I2[m])
    uvec2 u;        // Tucker: [H, Rk] weights
    uvec2 v;
    uvec2 core[5];  // Tucker: [H, Rk, Rk] weights
    uint wmeta;     // 3 bits per weight (u, v, core 0..4): dtype | first << 2; cores at bit 21
    uint rows;      // (token, head) rows in this dispatch
    uint row0;      // the dispatch's first row
    uint heads;
    uint nk;
    uint rank;
    uint m;
    uint k;
    uint K1;        // powers of two >= m, >= k
    uint K2;
    uint p;         // STAGE1: padded pair count (power of two >= m*m)
    uint grid_x;
} pc;

#include "topk_common.glsl"

// ------------------------------------------------------------------ double arithmetic

#ifdef F64
#define DVAL double
DVAL d_zero() { return 0.0LF; }
// An f32 (bits) as a double, exactly: subnormals are built from their integer mantissa, so a
// driver that flushes f32 denormals in conversions cannot change them.
DVAL d_from(uint f) {
    if ((f & 0x7F800000u) == 0u) {
        const DVAL mag = ldexp(DVAL(f & 0x7FFFFFu), -149);
        return (f & 0x80000000u) != 0u ? -mag : mag;
    }
    return DVAL(uintBitsToFloat(f));
}
DVAL d_add(DVAL a, DVAL b) {
    precise DVAL r = a + b;
    return r;
}
DVAL d_mul_f(DVAL a, uint f) {
    precise DVAL r = a * d_from(f);
    return r;
}
uvec2 d_bits(DVAL a) { return unpackDouble2x32(a); }
#else
#define DVAL uvec2
DVAL d_zero() { return uvec2(0u, 0u); }
DVAL d_from(uint f) { return sd_from_f32(f); }
DVAL d_add(DVAL a, DVAL b) { return sd_add(a, b); }
DVAL d_mul_f(DVAL a, uint f) { return sd_mul_f(a, f); }
uvec2 d_bits(DVAL a) { return a; }
#endif

// ------------------------------------------------------------------ scores

uint g_h;       // this row's head
Words g_side[2];  // S[n, 2h] and S[n, 2h+1]: Nk x Rk each

Weight weight_arg(uvec2 addr, uint slot) {
    const uint meta = (pc.wmeta >> (3u * slot)) & 7u;
    return Weight(addr, meta & 3u, meta >> 2);
}
uint n_cores() { return pc.wmeta >> 21; }
uint weight_bits(Weight w, uint i) { return floatBitsToUint(weight_at(w, i)); }

// Stage-1 score of sub-key j on `side`, as f32 bits.
uint side_score(uint side, uint j) {
    if (n_cores() == 0u) return g_side[side].v[j];  // additive: rank 1, the score itself
    const Weight w = weight_arg(side == 0u ? pc.u : pc.v, side);
    DVAL acc = d_zero();
    for (uint r = 0u; r < pc.rank; ++r)
        acc = d_add(acc, d_mul_f(d_from(weight_bits(w, g_h * pc.rank + r)), g_side[side].v[j * pc.rank + r]));
    return sd_to_f32(d_bits(acc));  // rounded once, to nearest even
}

// Stage-2 score of candidate rows i (side 0) and j (side 1), as double bits.
uvec2 pair_score(uint i, uint j) {
    const uint nc = n_cores();
    if (nc == 0u) return d_bits(d_add(d_from(g_side[0].v[i]), d_from(g_side[1].v[j])));
    DVAL t = d_zero();
    for (uint c = 0u; c < nc; ++c) {
        const Weight w = weight_arg(pc.core[c], 2u + c);
        const uint base = g_h * pc.rank * pc.rank;
        DVAL acc = d_zero();
        for (uint r1 = 0u; r1 < pc.rank; ++r1) {
            const DVAL x = d_from(g_side[0].v[i * pc.rank + r1]);
            for (uint r2 = 0u; r2 < pc.rank; ++r2)
                acc = d_add(acc, d_mul_f(d_mul_f(x, weight_bits(w, base + r1 * pc.rank + r2)), g_side[1].v[j * pc.rank + r2]));
        }
        t = d_add(t, acc);
    }
    return d_bits(t);
}

// List 0, 1: the sub-keys of side 0, 1; list 2: the pairs of the two candidate lists.
ELEM sel_candidate(uint list, uint j) {
    if (list < 2u) return uvec3(0u, f32_rank_key(side_score(list, j)), ~j);
    const uint a = j / pc.m, b = j - a * pc.m;
    const uvec2 key = sd_rank_key(pair_score(cand[a], cand[pc.m + b]));
    return uvec3(key.x, key.y, ~j);
}

void main() {
    const uint r = group_linear(pc.grid_x);
    if (r >= pc.rows) return;  // uniform per workgroup
    const uint row = pc.row0 + r;
    const uint n = row / pc.heads;
    g_h = row - n * pc.heads;
    const uint bank = n * 2u * pc.heads + 2u * g_h;
    g_side[0] = Words(ptr_elems(pc.s, bank, pc.nk * pc.rank));
    g_side[1] = Words(ptr_elems(pc.s, bank + 1u, pc.nk * pc.rank));

    // Stage 1, each side: the m best sub-keys, best first.
    for (uint side = 0u; side < 2u; ++side) {
        sel_stream(side, pc.nk, pc.m, pc.K1);
        for (uint a = gl_LocalInvocationID.x; a < pc.m; a += WG) cand[side * pc.m + a] = elem_index(sel_get(a));
        barrier();
    }
    const uint pairs = pc.m * pc.m;
#ifdef SELECT
    // Stage 2: the k best pairs.
    sel_stream(2u, pairs, pc.k, pc.K2);
    Ints o = Ints(ptr_elems(pc.out_, row, pc.k));
    for (uint q = gl_LocalInvocationID.x; q < pc.k; q += WG) {
        const uint pair = elem_index(sel_get(q));
        const uint a = pair / pc.m, b = pair - a * pc.m;
        o.v[q] = int(cand[a] * pc.nk + cand[pc.m + b]);
    }
#else
    Words lists = Words(pc.aux);
    for (uint a = gl_LocalInvocationID.x; a < 2u * pc.m; a += WG) lists.v[r * 2u * pc.m + a] = cand[a];
    Words keys = Words(pc.out_);
    for (uint q = gl_LocalInvocationID.x; q < pc.p; q += WG) {
        const uvec3 e = q < pairs ? sel_candidate(2u, q) : ELEM_ZERO;
        keys.v[(r * 3u + 0u) * pc.p + q] = e.x;
        keys.v[(r * 3u + 1u) * pc.p + q] = e.y;
        keys.v[(r * 3u + 2u) * pc.p + q] = e.z;
    }
#endif
}
