#version 450
// MOE_FFN prefill, step 1: the chunk's slots grouped by expert (a counting sort in one
// workgroup). start[e] .. start[e+1]-1 index list[], which holds chunk-local slot numbers. The
// order inside one expert depends on atomics, which is harmless: every slot's results are
// computed on their own, with the same operations wherever the slot sits in a tile.
// A bad expert id is reported here and its slot left out.
#include "common.glsl"
#include "moe_common.glsl"

layout(local_size_x = 256) in;
#define MAX_EXPERTS 1024u  // the host takes the mat-vec path for more

layout(push_constant) uniform Push {
    uvec2 idx;    // expert ids [N, k]
    uvec2 start;  // [E + 1] i32
    uvec2 list;   // [slots] i32
    uint slot0, slots, experts, node;
} pc;

shared uint cursor[MAX_EXPERTS];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    for (uint e = tid; e < pc.experts; e += 256u) cursor[e] = 0u;
    barrier();
    for (uint s = tid; s < pc.slots; s += 256u) {
        const int e = expert_of(pc.idx, pc.slot0 + s, pc.experts);
        if (e < 0) report_bad_index(pc.node, Ints(pc.idx).v[pc.slot0 + s], int(pc.experts));
        else atomicAdd(cursor[e], 1u);
    }
    barrier();
    if (tid == 0u) {
        uint run = 0u;
        for (uint e = 0; e < pc.experts; ++e) {
            const uint c = cursor[e];
            Ints(pc.start).v[e] = int(run);
            cursor[e] = run;
            run += c;
        }
        Ints(pc.start).v[pc.experts] = int(run);
    }
    barrier();
    for (uint s = tid; s < pc.slots; s += 256u) {
        const int e = expert_of(pc.idx, pc.slot0 + s, pc.experts);
        if (e >= 0) Ints(pc.list).v[atomicAdd(cursor[e], 1u)] = int(s);
    }
}
