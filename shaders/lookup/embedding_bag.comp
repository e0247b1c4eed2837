#version 450
// EMBEDDING_BAG: out[n, g*C + c] = sum over the entries j of bag n whose index v = idx[n, j]
// falls in group g = v / R of  w[n, j (, core of c)] * table[v % R, c].
//
// One workgroup per (segment = (bag n, group g), block of 128 columns); each output element is
// written by exactly one invocation (0 for a group no entry falls in). The 64 x-lanes hold two
// adjacent columns each (one 32-bit word of a 16-bit table); the 4 y-slices share the bag's
// entries (entry e goes to slice e % 4), so that each lane keeps four independent gathered rows
// in flight, and the slices' partial sums are added in shared memory at the end. The bag's
// indices and weights are staged in shared memory, in chunks, once per workgroup. Accumulation
// is f32; no [N, m, C] intermediate exists.
//
// A block-quantized table (Q_TYPE, shaders/quant.glsl) gives each lane a quad of four adjacent
// columns instead (C is a whole number of 32- or 256-weight blocks, so of quads), decoded exactly
// as the CPU reference does; the block is then 256 columns, and the four columns of a quad may
// lie in different cores (a core can be narrower than a quad), so each takes its own weight.
#include "common.glsl"
#include "lookup_common.glsl"
#if defined(Q_TYPE)
#include "quant.glsl"
#define UNIT 4u  // columns per lane
#define Acc vec4
#else
#define UNIT 2u
#define Acc vec2
#endif

#define LANES 64u
#define SLICES 4u
#define BLOCK_COLS (UNIT * LANES)
#define THREADS (LANES * SLICES)
#define MAX_ENTRIES THREADS   // entries staged per chunk
#define WEIGHT_SLOTS 1024u    // staged weights per chunk (entries x cores the block spans)

layout(local_size_x = 64, local_size_y = 4) in;

layout(push_constant) uniform Push {
    Weight table;    // [R, C]
    uvec2 idx;       // i32 [N, m]
    uvec2 w;         // f32 [N, m] or [N, m, P]
    uvec2 out_;      // f32 [N, G*C]
    uint rows;       // R
    uint cols;       // C
    uint groups;     // G
    uint m;
    uint cores;      // P (1 for w [N, m])
    uint core_cols;  // C / P
    uint blocks;     // column blocks per segment
    uint segments;   // N * G
    uint limit;      // G * R: indices must lie in 0..limit-1
    uint node;
} pc;

shared int s_row[MAX_ENTRIES];      // table row of each staged entry, -1 when not in this group
shared float s_w[WEIGHT_SLOTS];     // weight of staged entry e for core core_lo + q: [e * span + q]
shared Acc s_part[SLICES - 1u][LANES];

void main() {
    const uint wg = folded_workgroup();
    if (wg >= pc.segments * pc.blocks) return;  // whole workgroup: no barrier is skipped by half
    const uint seg = wg / pc.blocks, blk = wg - seg * pc.blocks;
    const uint n = seg / pc.groups, g = seg - n * pc.groups;
    const uint c0 = blk * BLOCK_COLS, c1 = min(pc.cols, c0 + BLOCK_COLS);
    // The cores whose columns this block touches; their weights are staged per entry.
    const uint core_lo = c0 / pc.core_cols, span = (c1 - 1u) / pc.core_cols - core_lo + 1u;
    const uint chunk = min(MAX_ENTRIES, WEIGHT_SLOTS / span);
    const uint tid = gl_LocalInvocationIndex, lane = gl_LocalInvocationID.x, slice = gl_LocalInvocationID.y;
    const uint c = c0 + UNIT * lane;
    const bool in_block = c < c1;
    // Core slot of each of this lane's columns (a unit may straddle a core boundary; a column
    // past the row's end takes the last one's slot).
    uint q[UNIT];
    [[unroll]] for (uint i = 0u; i < UNIT; ++i) q[i] = min(c + i, c1 - 1u) / pc.core_cols - core_lo;
#if defined(Q_TYPE)
    const uint row_bytes = quant_row_bytes(pc.cols);
#endif
    const uint first = n * pc.m;
    Acc acc = Acc(0.0);
    for (uint j0 = 0u; j0 < pc.m; j0 += chunk) {
        const uint count = min(chunk, pc.m - j0);
        for (uint e = tid; e < count; e += THREADS) {
            const int v = Ints(pc.idx).v[first + j0 + e];
            int row = -1;
            if (v < 0 || uint(v) >= pc.limit) {
                report_bad_index(pc.node, v, int(pc.limit));  // reported, and the entry skipped
            } else {
                const uint vg = uint(v) / pc.rows;
                if (vg == g) row = int(uint(v) - vg * pc.rows);
            }
            s_row[e] = row;
        }
        for (uint i = tid; i < count * span; i += THREADS) {
            const uint e = i / span;
            s_w[i] = Floats(pc.w).v[(first + j0 + e) * pc.cores + core_lo + (i - e * span)];
        }
        barrier();
        if (in_block) {
            for (uint e = slice; e < count; e += SLICES) {
                const int row = s_row[e];
                if (row < 0) continue;
                Acc we;
                [[unroll]] for (uint i = 0u; i < UNIT; ++i) we[i] = s_w[e * span + q[i]];
#if defined(Q_TYPE)
                const vec4 v = q_quad(quant_row(pc.table, uint(row), row_bytes), c);
#else
                const vec2 v = row_pair(weight_row(pc.table, uint(row), pc.cols), c, pc.cols);
#endif
                acc += we * v;
            }
        }
        barrier();  // the next chunk overwrites the staged entries
    }
    if (slice > 0u) s_part[slice - 1u][lane] = acc;
    barrier();
    if (slice == 0u && in_block) {
        [[unroll]] for (uint s = 0u; s < SLICES - 1u; ++s) acc += s_part[s][lane];
        Floats o = Floats(pc.out_);
        const uint at = seg * pc.cols + c;  // out[n, g*C + c]: segments are bag-major, then group
        [[unroll]] for (uint i = 0u; i < UNIT; ++i)
            if (c + i < c1) o.v[at + i] = acc[i];
    }
}
