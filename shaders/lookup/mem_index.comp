#version 450
// MEM_INDEX, UltraMem's virtual index -> table row pipeline, one invocation per index:
//   s = shuffle[v] (SHUFFLE) or v;  g = s / value_num;  row = (s % value_num + offset) % A;
//   out = with_group ? g * A + row : row.
// A v outside the shuffle, a negative s or g >= G is reported (value and valid range) and the
// element skipped. The host clamps value_num and G to 2^31 (s never reaches it, so the division
// and the group test are unchanged) and checked that g * A + row fits an i32.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(push_constant) uniform Push {
    uvec2 v;
    uvec2 shuffle;
    uvec2 out_;
    uint count;       // indices
    uint shuffle_size;
    uint value_num;
    uint offset;
    uint rows;        // A
    uint groups;      // G
    int s_limit;      // min(G * value_num, 2^31 - 1): the valid s are 0..s_limit-1
    uint with_group;
    uint node;
    uint row_groups;  // gl_NumWorkGroups.x
} pc;

void main() {
    const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * pc.row_groups * 256u;
    if (i >= pc.count) return;
    int s = Ints(pc.v).v[i];
#if defined(SHUFFLE)
    if (s < 0 || uint(s) >= pc.shuffle_size) {
        report_bad_index(pc.node, s, int(pc.shuffle_size));
        return;
    }
    s = Ints(pc.shuffle).v[s];
#endif
    const uint g = s < 0 ? 0u : uint(s) / pc.value_num;
    if (s < 0 || g >= pc.groups) {
        report_bad_index(pc.node, s, pc.s_limit);
        return;
    }
    // s % value_num < 2^31 and offset < A < 2^31: the sum fits a uint.
    const uint row = (uint(s) - g * pc.value_num + pc.offset) % pc.rows;
    Ints(pc.out_).v[i] = int(pc.with_group != 0u ? g * pc.rows + row : row);
}
