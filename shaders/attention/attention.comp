#version 450
// ATTENTION: one workgroup per (query head h, key chunk, token n), a streaming (online) softmax
// over the chunk's keys in tiles of WG keys:
//   1. scores: thread t takes key base+t of the tile and computes scale * q.k over D (q is in
//      shared memory, broadcast to every thread);
//   2. the tile's max joins the running max m (a workgroup reduction: subgroupMax, or a shared
//      memory tree without subgroups); the tile's probabilities exp(s - m) go to shared memory;
//   3. values: the threads form GROUPS key groups of LANES lanes; lane c of group g owns columns
//      c, c + LANES, ... of the output and adds p_j * v[j] for keys j = g, g + GROUPS, ... of the
//      tile. Consecutive lanes read consecutive floats of a value row (coalesced). The running
//      sums are rescaled by exp(m_old - m) whenever m grows.
// Every thread of the workgroup sees the same m, so the key groups merge by plain addition.
// Without SPLIT the chunk is the whole causal prefix and the result is normalised into out;
// with SPLIT (flash decoding: few queries, long cache) each chunk stores its unnormalised row
// with (m, sum) in scratch and attention_combine.comp merges the chunks. Chunks that start after
// pos[n] exit at once: the graph is recorded for the cache capacity, pos is only known here.
//
// Prefix (explicit memories): with pk set, query n first attends to slots 0..plen[b]-1 of prefix
// block b = pblock[n] (b = 0 without pblock; b < 0: none), through the same running max and sums
// as its cache keys, so one softmax covers both. Under SPLIT, chunk 0 takes the prefix (its (m,
// sum) then include it and the combine merges it like any key). A bad block or length is
// reported and the query skipped; workgroup 0 also checks every length, read or not, as the
// CPU does.
//
// CACHE_F16: the caches and the prefix hold f16. A slab is addressed by its first word and the
// parity of its first half (kh / vh: odd only for odd head dims). With D even, keys are read a
// word (two halves) at a time through unpack_half2, and with DV even values too (VW = 2);
// odd sizes read each half of its word (VW = 1).
//
// CACHE_Q8: the caches and the prefix hold q8_0 rows (D and DV multiples of 32: blocks of an f16
// scale d and 32 int8, value = d * q; 34-byte blocks, so rows start on any even byte). A slab is
// a Weight (word address, byte offset of its first byte; shaders/quant.glsl reads the blocks).
// A key's score sums each block's q.k in int8-widened floats and scales it once, as the CPU does;
// values are read as quads (VW = 4) under their block's scale.
#include "common.glsl"
#if defined(CACHE_Q8)
#define Q_TYPE 16
#include "quant.glsl"
#endif
#if defined(USE_SUBGROUPS)
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#endif

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint D = 64;       // key head dim
layout(constant_id = 2) const uint DV = 64;      // value head dim
layout(constant_id = 3) const uint LANES = 64;   // lanes per key group (a power of two <= WG)
layout(constant_id = 4) const uint ACC = 1;      // output units per lane: ceil(DV / VW / LANES), >= 1
layout(constant_id = 5) const bool K_VEC4 = false;  // keys read as vec4 (D % 4 == 0, 16-byte aligned)
layout(constant_id = 6) const uint VW = 1;       // floats per value load: 4 (vec4) or 1; 2 (a word of halves) with CACHE_F16

const uint WG = gl_WorkGroupSize.x;  // a power of two
const uint GROUPS = WG / LANES;
const uint COLS = DV / VW;           // value units per row

// 128 bytes, the most every device takes: the chunk count is gl_NumWorkGroups.y, and the
// split partials are one record per (token, head, chunk) in one scratch region.
layout(push_constant) uniform Push {
    uvec2 q, k, v, seq, pos, out_;
    uvec2 part;      // SPLIT: (m, sum, unnormalised row[DV]) per (token, head, chunk)
    uvec2 pk, pv;    // prefix keys [B, Hkv, M, D] and values [B, Hkv, M, DV]; pk = 0: no prefix
    uvec2 plen;      // [B] i32
    uvec2 pblock;    // [N] i32; 0: block 0 for every query
    uint n_base;     // first token of this dispatch
    uint hq, hkv;
    uint ctx;        // cache positions C
    uint n_seq;      // cache sequences S
    uint chunk;      // keys per chunk (C without SPLIT)
    uint node;
    float scale;
    uint n_blocks;   // B
    uint slots;      // M
} pc;

shared float q_s[D + 1];            // +1: a legal size for D = 0
shared float p_s[WG];               // the tile's probabilities
shared float red_s[WG];             // reduction slots
shared float merge_s[WG * ACC * VW];  // per key group output rows (GROUPS * DV floats used)
shared float lsum_s[GROUPS];

#define NEG_INF uintBitsToFloat(0xFF800000u)

// base + count * stride_bytes as a 64-bit address (the caches of a long context pass 4 GiB;
// 64-bit integers in shaders are optional in Vulkan, so the carry is done by hand).
uvec2 offset_address(uvec2 base, uint count, uint stride_bytes) {
    uint hi, lo, carry;
    umulExtended(count, stride_bytes, hi, lo);
    const uint low = uaddCarry(base.x, lo, carry);
    return uvec2(low, base.y + hi + carry);
}

float workgroup_max(float x) {
    const uint tid = gl_LocalInvocationID.x;
#if defined(USE_SUBGROUPS)
    x = subgroupMax(x);
    if (subgroupElect()) red_s[gl_SubgroupID] = x;
    barrier();
    float r = red_s[0];
    for (uint i = 1; i < gl_NumSubgroups; ++i) r = max(r, red_s[i]);
    return r;
#else
    red_s[tid] = x;
    barrier();
    [[unroll]] for (uint stride = WG / 2; stride > 0; stride >>= 1) {
        if (tid < stride) red_s[tid] = max(red_s[tid], red_s[tid + stride]);
        barrier();
    }
    return red_s[0];
#endif
}

// The workgroup's running softmax state: max m, sum l (this thread's key group), and the lane's
// output units.
// (Set at the start of main.)
float m_run, l_run;
vec4 acc[ACC];

// scale-free q.k for key row j of the (sequence, kv head) slab at kb.
#if defined(CACHE_F16)
// Half h of the f16 slab whose first word is at b.
float half_at(uvec2 b, uint h) {
    const uint w = Words(b).v[h >> 1];
    return half_to_f32((h & 1u) != 0u ? (w >> 16) : w);
}

// The word address and half parity of element `first` of an f16 tensor at base (first < 2^32).
uvec2 half_base(uvec2 base, uint first, out uint parity) {
    parity = first & 1u;
    return offset_address(base, first >> 1, 4u);
}
#endif

#if defined(CACHE_Q8)
// The slab at byte address b as a Weight whose rows (cache positions) quant_row finds.
Weight q8_slab(uvec2 b) { return Weight(uvec2(b.x & ~3u, b.y), 16u, (b.x & 3u) >> 1); }

// Quad c (values 4c .. 4c+3) of a q8_0 row.
vec4 q8_quad(Weight row, uint c) {
    const uint blk = (c >> 3) * 34u;
    return q_f16(row, blk) * vec4(bytes_i(q_u32(row, blk + 2u + 4u * (c & 7u))));
}
#endif

float score(uvec2 kb, uint kh, uint j) {
    vec4 s4 = vec4(0.0);
    float s = 0.0;
#if defined(CACHE_Q8)
    const Weight row = quant_row(q8_slab(kb), j, D / 32u * 34u);
    for (uint b = 0; b < D / 32u; ++b) {
        vec4 bs = vec4(0.0);
        for (uint c = 0; c < 8u; ++c) {
            const uint i = 32u * b + 4u * c;
            bs += vec4(q_s[i], q_s[i + 1], q_s[i + 2], q_s[i + 3]) * vec4(bytes_i(q_u32(row, 34u * b + 2u + 4u * c)));
        }
        s += ((bs.x + bs.y) + (bs.z + bs.w)) * q_f16(row, 34u * b);
    }
#elif defined(CACHE_F16)
    if (D % 2u != 0u) {  // odd head dim (a specialization constant: the branch folds)
        for (uint i = 0; i < D; ++i) s += q_s[i] * half_at(kb, kh + j * D + i);
        return s;
    }
    const uint row = j * (D / 2);
    uint w = 0;
    for (; w + 2 <= D / 2; w += 2) {
        const vec2 k0 = unpack_half2(Words(kb).v[row + w]);
        const vec2 k1 = unpack_half2(Words(kb).v[row + w + 1]);
        s4 += vec4(q_s[2 * w], q_s[2 * w + 1], q_s[2 * w + 2], q_s[2 * w + 3]) * vec4(k0, k1);
    }
    if (w < D / 2) {
        const vec2 k0 = unpack_half2(Words(kb).v[row + w]);
        s += q_s[2 * w] * k0.x + q_s[2 * w + 1] * k0.y;
    }
#else
    if (K_VEC4) {
        const uint row = j * (D / 4);
        for (uint i = 0; i < D / 4; ++i) {
            const vec4 kv = Vec4s(kb).v[row + i];
            s4 += vec4(q_s[4 * i], q_s[4 * i + 1], q_s[4 * i + 2], q_s[4 * i + 3]) * kv;
        }
    } else {
        const uint row = j * D;
        uint i = 0;
        // Four independent sums keep several loads in flight.
        for (; i + 4 <= D; i += 4) {
            s4.x += q_s[i] * Floats(kb).v[row + i];
            s4.y += q_s[i + 1] * Floats(kb).v[row + i + 1];
            s4.z += q_s[i + 2] * Floats(kb).v[row + i + 2];
            s4.w += q_s[i + 3] * Floats(kb).v[row + i + 3];
        }
        for (; i < D; ++i) s += q_s[i] * Floats(kb).v[row + i];
    }
#endif
    return (s4.x + s4.y) + (s4.z + s4.w) + s;
}

// Keys begin..end-1 of the slab at kb (values at vb) join the running softmax, in tiles of WG.
void attend(uvec2 kb, uint kh, uvec2 vb, uint vh, uint begin, uint end) {
    const uint tid = gl_LocalInvocationID.x;
    const uint lane = tid % LANES, group = tid / LANES;
    for (uint base = begin; base < end; base += WG) {
        const uint j = base + tid;
        float s = NEG_INF;
        if (j < end) s = pc.scale * score(kb, kh, j);  // a branch, never a select: j may lie past the cache
        // The tile holds at least one key, so m_new is finite for finite scores and the first
        // tile's factor exp(-inf) is 0.
        const float m_new = max(m_run, workgroup_max(s));
        p_s[tid] = j < end ? exp(s - m_new) : 0.0;
        barrier();
        const float alpha = exp(m_run - m_new);
        l_run *= alpha;
        for (uint a = 0; a < ACC; ++a) acc[a] *= alpha;
        const uint count = min(WG, end - base);
        for (uint jj = group; jj < count; jj += GROUPS) {
            const float p = p_s[jj];
            l_run += p;
            const uint row = (base + jj) * COLS;
            for (uint a = 0; a < ACC; ++a) {
                const uint col = lane + a * LANES;
                if (col < COLS) {
#if defined(CACHE_Q8)
                    acc[a] += p * q8_quad(quant_row(q8_slab(vb), base + jj, DV / 32u * 34u), col);
#elif defined(CACHE_F16)
                    if (VW == 2) acc[a].xy += p * unpack_half2(Words(vb).v[row + col]);
                    else acc[a].x += p * half_at(vb, vh + (base + jj) * DV + col);
#else
                    if (VW == 4) acc[a] += p * Vec4s(vb).v[row + col];
                    else acc[a].x += p * Floats(vb).v[row + col];
#endif
                }
            }
        }
        // The next tile's p_s writes come after its reduction's barrier, which every thread
        // reaches only after finishing this tile's values; but a later attend() call (cache
        // after prefix) starts with a reduction too, so the same holds across calls.
        m_run = m_new;
    }
}

// Slots of prefix block b that query n reads (0 for none), or -1 when its block or the block's
// length is bad (reported by `reporter`).
int prefix_length(uint n, bool reporter, out int b) {
    b = -1;
    if (pc.pk == uvec2(0)) return 0;
    b = pc.pblock == uvec2(0) ? 0 : Ints(pc.pblock).v[n];
    if (b >= int(pc.n_blocks)) {
        if (reporter) report_bad_index(pc.node, b, int(pc.n_blocks));
        return -1;
    }
    if (b < 0) return 0;
    const int len = Ints(pc.plen).v[b];
    if (len < 0 || len > int(pc.slots)) {
        if (reporter) report_bad_index(pc.node, len, int(pc.slots) + 1);
        return -1;
    }
    return len;
}

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint h = gl_WorkGroupID.x;
    const uint split = gl_WorkGroupID.y;
    const uint n = pc.n_base + gl_WorkGroupID.z;
    const bool reporter = tid == 0 && h == 0 && split == 0;

    // Every prefix length is checked once (by the first workgroup), so a bad one fails the run
    // even when no query reads its block, as on the CPU.
    if (reporter && n == 0 && pc.pk != uvec2(0))
        for (uint b = 0; b < pc.n_blocks; ++b) {
            const int len = Ints(pc.plen).v[b];
            if (len < 0 || len > int(pc.slots)) report_bad_index(pc.node, len, int(pc.slots) + 1);
        }

    // The whole workgroup takes the same branch, so returning here keeps barriers uniform.
    const int sq = Ints(pc.seq).v[n];
    const int ps = Ints(pc.pos).v[n];
    if (sq < 0 || sq >= int(pc.n_seq)) {
        if (reporter) report_bad_index(pc.node, sq, int(pc.n_seq));
        return;
    }
    if (ps < 0 || ps >= int(pc.ctx)) {
        if (reporter) report_bad_index(pc.node, ps, int(pc.ctx));
        return;
    }
    int blk;
    const int plen = prefix_length(n, reporter, blk);
    if (plen < 0) return;
    if (h >= pc.hq) return;
    const uint keys = uint(ps) + 1;
    const uint begin = split * pc.chunk;
    if (begin >= keys) return;  // a chunk past the causal limit: the combine pass skips it
    const uint end = min(keys, begin + pc.chunk);

    const uint task = n * pc.hq + h;
    for (uint i = tid; i < D; i += WG) q_s[i] = Floats(pc.q).v[task * D + i];
    // Query head h reads kv head h / (Hq / Hkv); its slab holds C rows of the sequence.
    const uint kvh = h / (pc.hq / pc.hkv);
    const uint slab = (uint(sq) * pc.hkv + kvh) * pc.ctx;
#if defined(CACHE_Q8)
    const uint kh = 0u, vh = 0u;
    const uvec2 kb = offset_address(pc.k, slab, D / 32u * 34u);
    const uvec2 vb = offset_address(pc.v, slab, DV / 32u * 34u);
#elif defined(CACHE_F16)
    uint kh, vh;  // the host keeps every f16 tensor under 2^32 elements
    const uvec2 kb = half_base(pc.k, slab * D, kh);
    const uvec2 vb = half_base(pc.v, slab * DV, vh);
#else
    const uint kh = 0u, vh = 0u;
    const uvec2 kb = offset_address(pc.k, slab, D * 4u);
    const uvec2 vb = offset_address(pc.v, slab, DV * 4u);
#endif
    barrier();

    const uint lane = tid % LANES, group = tid / LANES;
    m_run = NEG_INF;
    l_run = 0.0;
    for (uint a = 0; a < ACC; ++a) acc[a] = vec4(0.0);
    if (split == 0 && plen > 0) {
        const uint pslab = (uint(blk) * pc.hkv + kvh) * pc.slots;
#if defined(CACHE_Q8)
        attend(offset_address(pc.pk, pslab, D / 32u * 34u), 0u, offset_address(pc.pv, pslab, DV / 32u * 34u), 0u, 0u,
               uint(plen));
#elif defined(CACHE_F16)
        uint pkh, pvh;
        const uvec2 pkb = half_base(pc.pk, pslab * D, pkh);
        const uvec2 pvb = half_base(pc.pv, pslab * DV, pvh);
        attend(pkb, pkh, pvb, pvh, 0u, uint(plen));
#else
        attend(offset_address(pc.pk, pslab, D * 4u), 0u, offset_address(pc.pv, pslab, DV * 4u), 0u, 0u, uint(plen));
#endif
    }
    attend(kb, kh, vb, vh, begin, end);
    const float m = m_run;
    const float l = l_run;

    // Merge the key groups (same m everywhere: plain sums).
    for (uint a = 0; a < ACC; ++a) {
        const uint col = lane + a * LANES;
        if (col < COLS) {
            const uint at = group * DV + col * VW;
            if (VW == 4) {
                merge_s[at] = acc[a].x;
                merge_s[at + 1] = acc[a].y;
                merge_s[at + 2] = acc[a].z;
                merge_s[at + 3] = acc[a].w;
            } else if (VW == 2) {
                merge_s[at] = acc[a].x;
                merge_s[at + 1] = acc[a].y;
            } else {
                merge_s[at] = acc[a].x;
            }
        }
    }
    if (lane == 0) lsum_s[group] = l;
    barrier();
    float total = 0.0;
    for (uint g = 0; g < GROUPS; ++g) total += lsum_s[g];
#if defined(SPLIT)
    // Record of (token, head, chunk): m, sum, then the unnormalised row.
    const uint rec = (task * gl_NumWorkGroups.y + split) * (DV + 2);
    for (uint i = tid; i < DV; i += WG) {
        float o = 0.0;
        for (uint g = 0; g < GROUPS; ++g) o += merge_s[g * DV + i];
        Floats(pc.part).v[rec + 2 + i] = o;
    }
    if (tid == 0) {
        Floats(pc.part).v[rec] = m;
        Floats(pc.part).v[rec + 1] = total;
    }
#else
    const float inv = 1.0 / total;
    for (uint i = tid; i < DV; i += WG) {
        float o = 0.0;
        for (uint g = 0; g < GROUPS; ++g) o += merge_s[g * DV + i];
        Floats(pc.out_).v[task * DV + i] = o * inv;
    }
#endif
}
