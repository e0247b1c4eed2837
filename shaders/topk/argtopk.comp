#version 450
// ARGTOPK, shared-memory path (k up to SEL_N/2): one workgroup per row streams the row through
// the selection of topk_common.glsl (filter by the k-th best so far, bitonic top-K reduction)
// and writes the indices of the best k, best first. Larger k takes argtopk_sort.comp.
#include "common.glsl"

layout(local_size_x_id = 0) in;
layout(constant_id = 0) const uint WG = 256;
layout(constant_id = 1) const uint SEL_N = 2048;  // selection capacity (power of two)

#define ELEM_W 2
#define TOPK_SHARED 1
#define TOPK_STREAM 1
shared uint sel[2u * SEL_N];

layout(push_constant) uniform Push {
    uvec2 x;       // [rows, d] f32
    uvec2 out_;    // [rows, k] i32
    uint rows;
    uint d;
    uint k;
    uint K;        // power of two >= k
    uint grid_x;   // workgroups per grid row
} pc;

uvec2 g_row;  // this workgroup's row of x

#include "topk_common.glsl"

ELEM sel_candidate(uint list, uint j) { return uvec2(f32_rank_key(Words(g_row).v[j]), ~j); }

void main() {
    const uint row = group_linear(pc.grid_x);
    if (row >= pc.rows) return;  // uniform per workgroup
    g_row = ptr_elems(pc.x, row, pc.d);
    sel_stream(0u, pc.d, pc.k, pc.K);
    Ints o = Ints(ptr_elems(pc.out_, row, pc.k));
    for (uint i = gl_LocalInvocationID.x; i < pc.k; i += WG) o.v[i] = int(elem_index(sel_get(i)));
}
