#version 450
// MOE_FFN prefill, steps 2 and 3: per expert, a GEMM of the expert's slots with its weights, so
// each expert's weights stream once per chunk of tokens (not once per token).
//   UP:   h[s, f] = w[s] * silu(gate[e, f] . x[token(s)]) * (up[e, f] . x[token(s)])
//   DOWN: y[s, d] = down[e, d] . h[s]
// Grid: x = blocks of TF weight rows, y = expert, z = a few workgroups sharing the expert's slot
// tiles (TS slots each, taken in turn). A workgroup stages KB-wide slices of TS activation rows
// (gathered through the slot list) and of TF weight rows in shared memory; each invocation
// accumulates 4 slots x RP rows in registers, in the same order for every slot, so no result
// depends on the slot's place in the list. The tile shape (specialization constants) follows
// the expected slots per expert: a 64-slot tile would waste most of its multiply-adds on an
// expert that gets 10 slots.
//
// Block-quantized weights (Q_TYPE, shaders/quant.glsl; UP: gate and up share it) are staged a
// quad of four weights per load, decoded exactly as the CPU reference decodes them: rows are
// whole blocks of 32 or 256 weights, so every KB-wide slice (KB = 8 or 16) is full and made of
// whole quads.
#include "common.glsl"
#include "moe_common.glsl"
#if defined(Q_TYPE)
#include "quant.glsl"
#endif

layout(local_size_x = 256) in;
layout(constant_id = 0) const uint TY = 16;  // invocations along slots (4 slots each)
layout(constant_id = 1) const uint RP = 4;   // weight rows per invocation
layout(constant_id = 2) const uint KB = 16;  // reduction slice
const uint TX = 256u / TY;  // invocations along weight rows
const uint TS = 4u * TY;    // slots per tile
const uint TF = TX * RP;    // weight rows per tile
const uint AS = KB + 1u;
const uint BS = TF + 1u;    // padded: the transposing stores spread over banks

layout(push_constant) uniform Push {
    Weight w0;     // UP: gate [E, F, D]; DOWN: down [E, D, F]
    Weight w1;     // UP: up [E, F, D]
    uvec2 src;     // UP: x [N, D]; DOWN: the chunk's h rows [slots, F]
    uvec2 wts;     // router weights [N, k] (UP)
    uvec2 start;   // [E + 1] from moe_group
    uvec2 list;    // chunk-local slots grouped by expert
    uvec2 dst;     // UP: h [slots, F]; DOWN: y [slots, D]
    uint k, rows, len;  // weight rows per expert and their length (UP: F, D; DOWN: D, F)
    uint slot0;    // first slot of the chunk
} pc;

shared float as_[TS * AS];
shared float bs0[KB * BS];
#ifdef UP
shared float bs1[KB * BS];
#endif
shared uint tile_slot[TS];

const uint kNone = 0xFFFFFFFFu;

void main() {
    const uint tid = gl_LocalInvocationID.x;
    const uint tx = tid % TX, ty = tid / TX;  // rows tx + TX*r, slots 4ty + i
    const uint e = gl_WorkGroupID.y;
    const uint first = uint(Ints(pc.start).v[e]);
    const uint count = uint(Ints(pc.start).v[e + 1u]) - first;
    const uint r0 = gl_WorkGroupID.x * TF;
    const uint wrow0 = e * pc.rows;

    for (uint t0 = gl_WorkGroupID.z * TS; t0 < count; t0 += gl_NumWorkGroups.z * TS) {
        if (tid < TS) tile_slot[tid] = t0 + tid < count ? uint(Ints(pc.list).v[first + t0 + tid]) : kNone;
        barrier();
        float a0[4u * RP];
#ifdef UP
        float a1[4u * RP];
#endif
        [[unroll]] for (uint i = 0; i < 4u * RP; ++i) {
            a0[i] = 0.0;
#ifdef UP
            a1[i] = 0.0;
#endif
        }
        for (uint l0 = 0; l0 < pc.len; l0 += KB) {
            const uint kb = min(KB, pc.len - l0);
            for (uint i = tid; i < TS * KB; i += 256u) {
                const uint ts = i / KB, dd = i % KB;
                const uint s = tile_slot[ts];
                float v = 0.0;
                if (s != kNone && dd < kb) {
#ifdef UP
                    v = Floats(pc.src).v[((pc.slot0 + s) / pc.k) * pc.len + l0 + dd];
#else
                    v = Floats(pc.src).v[s * pc.len + l0 + dd];
#endif
                }
                as_[ts * AS + dd] = v;
            }
#if defined(Q_TYPE)
            for (uint i = tid; i < TF * (KB / 4u); i += 256u) {
                const uint tf = i / (KB / 4u), dd = 4u * (i % (KB / 4u));
                const uint row = r0 + tf;
                vec4 q0 = vec4(0.0);
#ifdef UP
                vec4 q1 = vec4(0.0);
#endif
                if (row < pc.rows) {
                    q0 = q_quad(quant_row(pc.w0, wrow0 + row, quant_row_bytes(pc.len)), l0 + dd);
#ifdef UP
                    q1 = q_quad(quant_row(pc.w1, wrow0 + row, quant_row_bytes(pc.len)), l0 + dd);
#endif
                }
                [[unroll]] for (uint c = 0u; c < 4u; ++c) {
                    bs0[(dd + c) * BS + tf] = q0[c];
#ifdef UP
                    bs1[(dd + c) * BS + tf] = q1[c];
#endif
                }
            }
#else
            for (uint i = tid; i < TF * KB; i += 256u) {
                const uint tf = i / KB, dd = i % KB;
                const uint row = r0 + tf;
                const bool ok = row < pc.rows && dd < kb;
                const uint at = (wrow0 + row) * pc.len + l0 + dd;
                bs0[dd * BS + tf] = ok ? weight_at(pc.w0, at) : 0.0;
#ifdef UP
                bs1[dd * BS + tf] = ok ? weight_at(pc.w1, at) : 0.0;
#endif
            }
#endif
            barrier();
            for (uint dd = 0; dd < kb; ++dd) {
                float av[4], b0[RP];
                [[unroll]] for (uint i = 0; i < 4u; ++i) av[i] = as_[(ty * 4u + i) * AS + dd];
                [[unroll]] for (uint r = 0; r < RP; ++r) b0[r] = bs0[dd * BS + tx + TX * r];
#ifdef UP
                float b1[RP];
                [[unroll]] for (uint r = 0; r < RP; ++r) b1[r] = bs1[dd * BS + tx + TX * r];
#endif
                [[unroll]] for (uint i = 0; i < 4u; ++i)
                    [[unroll]] for (uint r = 0; r < RP; ++r) {
                        a0[i * RP + r] += av[i] * b0[r];
#ifdef UP
                        a1[i * RP + r] += av[i] * b1[r];
#endif
                    }
            }
            barrier();
        }
        [[unroll]] for (uint i = 0; i < 4u; ++i) {
            const uint s = tile_slot[ty * 4u + i];
            if (s == kNone) continue;
#ifdef UP
            const float w = Floats(pc.wts).v[pc.slot0 + s];
#endif
            [[unroll]] for (uint r = 0; r < RP; ++r) {
                const uint row = r0 + tx + TX * r;
                if (row >= pc.rows) continue;
#ifdef UP
                Floats(pc.dst).v[s * pc.rows + row] = w * silu(a0[i * RP + r]) * a1[i * RP + r];
#else
                Floats(pc.dst).v[s * pc.rows + row] = a0[i * RP + r];
#endif
            }
        }
        barrier();  // tile_slot is rewritten by the next tile
    }
}
