// Selection helpers of ARGTOPK and PK_TOPK (shaders/argtopk*.comp, pk_topk*.comp).
//
// Both ops must return exactly the reference's indices (mnemo_abi.h: value descending, NaN below
// every number, -0.0 == +0.0, ties to the lower index). Every candidate is therefore turned into
// an unsigned integer tuple that is larger exactly when the candidate ranks first: the value's
// order key, then the complement of its index (a lower index ranks first). No two candidates
// share a tuple, so "the k largest tuples, sorted" has one answer whatever the algorithm, the
// workgroup size or the order in which candidates arrive.
//
// Tuples are ELEM_W words (2: f32 key + index; 3: double key (2 words) + index), kept in the
// shared array `sel` as ELEM_W planes of SEL_N words (word w of element i at sel[w*SEL_N + i]:
// neighbouring invocations touch neighbouring words). The zero tuple ranks below every real one
// (a real tuple's index word is ~index > 0) and pads partial sets.
//
// Before including, a shader defines ELEM_W and declares the spec constants WG (0, the
// workgroup size) and SEL_N (1, a power of two). With TOPK_SHARED it also declares
// `shared uint sel[...]` of at least ELEM_W * SEL_N words and gets the shared-memory selection;
// with TOPK_STREAM as well, the streaming selection over a candidate function it defines.

// ------------------------------------------------------------------ order keys

// An unsigned integer that orders like the f32 with bits `b`: NaN 0 (below -inf), -0 folded into
// +0, then the usual sign-magnitude flip (backends/cpu/src/kernels/topk_order.hpp's rank_key + 2^31).
// Works on bits, never on float arithmetic, so no driver's NaN or denormal handling can move it.
uint f32_rank_key(uint b) {
    if ((b & 0x7FFFFFFFu) > 0x7F800000u) return 0u;
    if ((b & 0x7FFFFFFFu) == 0u) b = 0u;
    return (b & 0x80000000u) != 0u ? ~b : (b | 0x80000000u);
}

// ------------------------------------------------------------------ addresses

// base + (a * b) 4-byte elements, in 64 bits (a row offset may pass 4 GiB).
uvec2 ptr_elems(uvec2 base, uint a, uint b) {
    uint hi = 0u, lo = 0u, carry = 0u;
    umulExtended(a, b, hi, lo);
    const uint byte_lo = lo << 2;
    const uint byte_hi = (hi << 2) | (lo >> 30);
    const uint x = uaddCarry(base.x, byte_lo, carry);
    return uvec2(x, base.y + byte_hi + carry);
}

// The linear index of this workgroup in a 2D grid of rows of `grid_x` workgroups (grids wider
// than the device's x limit wrap into y).
uint group_linear(uint grid_x) { return gl_WorkGroupID.x + gl_WorkGroupID.y * grid_x; }

// Pair t of a compare-exchange stage with distance `stride` (a power of two): the lower index
// (t with a 0 bit inserted at the stride's position); its partner is that + stride.
uint pair_low(uint t, uint stride) { return ((t & ~(stride - 1u)) << 1) | (t & (stride - 1u)); }

uint next_pow2(uint v) { return v <= 1u ? 1u : 1u << uint(findMSB(v - 1u) + 1); }

// ------------------------------------------------------------------ tuples in shared memory

#if ELEM_W == 2
#define ELEM uvec2
#define ELEM_ZERO uvec2(0u, 0u)
bool elem_gt(ELEM a, ELEM b) { return a.x != b.x ? a.x > b.x : a.y > b.y; }
uint elem_index(ELEM a) { return ~a.y; }
#elif ELEM_W == 3
#define ELEM uvec3
#define ELEM_ZERO uvec3(0u, 0u, 0u)
bool elem_gt(ELEM a, ELEM b) { return a.x != b.x ? a.x > b.x : (a.y != b.y ? a.y > b.y : a.z > b.z); }
uint elem_index(ELEM a) { return ~a.z; }
#else
#error "define ELEM_W as 2 or 3"
#endif

#ifdef TOPK_SHARED
ELEM sel_get(uint i) {
#if ELEM_W == 2
    return uvec2(sel[i], sel[SEL_N + i]);
#else
    return uvec3(sel[i], sel[SEL_N + i], sel[2u * SEL_N + i]);
#endif
}
void sel_set(uint i, ELEM v) {
    sel[i] = v.x;
    sel[SEL_N + i] = v.y;
#if ELEM_W == 3
    sel[2u * SEL_N + i] = v.z;
#endif
}

shared uint sel_count;  // candidates appended to sel by sel_stream

// Orders sel[i] and sel[j] (i < j): the larger first when `desc`, else the smaller first.
void sel_cmpx(uint i, uint j, bool desc) {
    const ELEM a = sel_get(i), b = sel_get(j);
    if (elem_gt(b, a) == desc) {
        sel_set(i, b);
        sel_set(j, a);
    }
}

// Bitonic stages over `count` elements of sel (a power of two), in blocks whose element 0 has
// index `origin` in the full sequence: for each size in size_first..size_last (powers of two),
// strides min(size, count)/2 .. 1, direction descending where (origin + i) & size is 0. A full
// sort is sizes 2..count; after global stages of a larger size (argtopk_sort.comp), the same
// size with strides below the block finishes the merge. Ends with a barrier.
void sel_bitonic(uint count, uint origin, uint size_first, uint size_last) {
    for (uint size = size_first; size <= size_last; size <<= 1) {
        for (uint stride = min(size, count) >> 1; stride > 0u; stride >>= 1) {
            for (uint t = gl_LocalInvocationID.x; t < count / 2u; t += WG) {
                const uint i = pair_low(t, stride);
                sel_cmpx(i, i + stride, ((origin + i) & size) == 0u);
            }
            barrier();
        }
    }
}

// Reduces the candidates sel[0..count) (count <= SEL_N) to the best K of them (K a power of two,
// 2K <= SEL_N), sorted best first in sel[0..K). Called by the whole workgroup with uniform
// arguments; starts and ends with a barrier-separated state.
//
// Bitonic top-K (a selection network): pad to s = max(2K, pow2 >= count) with zero tuples, sort
// runs of K in alternating directions (run r descending when r is even), then halve the runs
// until one is left: for a descending run A and the ascending run B after it, max(A[j], B[j]) is
// the best K of both as a bitonic sequence, which log2(K) compare stages sort (into the direction of
// its new run index). Runs stay in place (the live ones G = K, 2K, 4K ... apart), so no data
// moves between rounds. Work O(s log^2 K) instead of a full sort's O(s log^2 s).
void sel_reduce(uint count, uint K) {
    const uint s = max(2u * K, next_pow2(count));
    for (uint i = count + gl_LocalInvocationID.x; i < s; i += WG) sel_set(i, ELEM_ZERO);
    barrier();
    sel_bitonic(s, 0u, 2u, K);
    const uint half_k = K >> 1;
    for (uint gap = K; gap < s; gap <<= 1) {
        const uint pairs = s / (2u * gap);  // runs after this round
        for (uint t = gl_LocalInvocationID.x; t < pairs * K; t += WG) {
            const uint ia = (t / K) * 2u * gap + (t % K);
            const ELEM b = sel_get(ia + gap);
            if (elem_gt(b, sel_get(ia))) sel_set(ia, b);
        }
        barrier();
        for (uint stride = half_k; stride > 0u; stride >>= 1) {
            for (uint t = gl_LocalInvocationID.x; t < pairs * half_k; t += WG) {
                const uint run = t / half_k;
                const uint i = run * 2u * gap + pair_low(t % half_k, stride);
                sel_cmpx(i, i + stride, (run & 1u) == 0u);
            }
            barrier();
        }
    }
}

#ifdef TOPK_STREAM
// The tuple of candidate j of a candidate list `list` (defined by the including shader).
ELEM sel_candidate(uint list, uint j);

// Streams candidates 0..n-1 of `list` through the workgroup and leaves the best K (a power of
// two >= k, 2K <= SEL_N, K + WG <= SEL_N) sorted best first in sel[0..K). Each pass every
// invocation forms up to `per` candidates and appends those that beat the k-th best kept so far
// (atomic slot in sel; arrival order does not matter, tuples are unique); when the next pass
// could overflow sel, the kept set is reduced to the best K again. After the first reduction
// most candidates are rejected by one compare, so a long row costs about one read per element.
void sel_stream(uint list, uint n, uint k, uint K) {
    const uint per = clamp((SEL_N - K) / WG, 1u, 8u);
    const uint tile = per * WG;
    ELEM threshold = ELEM_ZERO;  // ranks below every real candidate: all are admitted at first
    if (gl_LocalInvocationID.x == 0u) sel_count = 0u;
    barrier();
    uint filled = 0u;  // sel_count as of the last barrier (uniform)
    for (uint base = 0u; base < n; base += tile) {
        if (filled + tile > SEL_N) {
            sel_reduce(filled, K);
            threshold = sel_get(k - 1u);  // positions < K are not written until the next reduction
            filled = K;
            if (gl_LocalInvocationID.x == 0u) sel_count = K;
            barrier();
        }
        for (uint e = 0u; e < per; ++e) {
            const uint j = base + e * WG + gl_LocalInvocationID.x;
            if (j < n) {
                const ELEM c = sel_candidate(list, j);
                if (elem_gt(c, threshold)) sel_set(atomicAdd(sel_count, 1u), c);
            }
        }
        barrier();
        filled = sel_count;
        barrier();  // every invocation has read sel_count before the next pass appends
    }
    sel_reduce(filled, K);
}
#endif  // TOPK_STREAM
#endif  // TOPK_SHARED
