// Workgroup-wide reductions of one float per invocation: wg_sum(v) and wg_max(v) return the
// sum / maximum over the whole workgroup to every invocation. For kernels that reduce a row
// with one workgroup (norms, softmax) and anything else that needs a block-wide total.
//
// Before including this file, #define
//   REDUCE_SIZE      the number of invocations of the workgroup (a power of two; it may be a
//                    specialization constant, e.g. the one local_size_x_id names) — it sizes the
//                    shared scratch array and drives the shared-memory tree;
//   REDUCE_SUBGROUPS 1 in the shader variant built for devices with subgroup arithmetic
//                    (DeviceFeatures::subgroup_arithmetic), 0 or undefined for the fallback.
// The workgroup must be one-dimensional in the sense that gl_LocalInvocationIndex runs over
// 0..REDUCE_SIZE-1.
//
// Rules for callers: every invocation of the workgroup must make the same sequence of calls
// (the functions contain barriers, so they belong in uniform control flow: return early only
// for a whole workgroup), and the accumulation is f32. Each call ends with a barrier, so the
// shared array can be reused by the next call without a race, and shared memory written by the
// caller before a call is visible to the whole workgroup after it.
//
// Subgroup path: subgroupAdd/subgroupMax inside each subgroup, one partial per subgroup in
// shared memory, then every subgroup folds the partials itself (no second barrier round to
// broadcast one result). It works for any subgroup size, including a last partial subgroup and
// more subgroups than lanes in one subgroup. Shared-memory path: a plain halving tree.
#ifndef MNEMO_REDUCE_COMMON_GLSL
#define MNEMO_REDUCE_COMMON_GLSL

#ifndef REDUCE_SIZE
#error "define REDUCE_SIZE (the workgroup size) before including reduce_common.glsl"
#endif

#if defined(REDUCE_SUBGROUPS) && REDUCE_SUBGROUPS
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require
#define MNEMO_REDUCE_WITH_SUBGROUPS 1
#else
#define MNEMO_REDUCE_WITH_SUBGROUPS 0
#endif

#define REDUCE_OP_SUM 0u
#define REDUCE_OP_MAX 1u

// One slot per invocation: the tree needs them all; the subgroup path uses one per subgroup.
shared float reduce_scratch[REDUCE_SIZE];

float reduce_combine_(float a, float b, uint op) { return op == REDUCE_OP_SUM ? a + b : max(a, b); }
float reduce_identity_(uint op) { return op == REDUCE_OP_SUM ? 0.0 : uintBitsToFloat(0xFF800000u); }  // -inf

// `op` is a compile-time constant at every call site below, so the branches fold away.
float wg_reduce_(float v, uint op) {
#if MNEMO_REDUCE_WITH_SUBGROUPS
    v = op == REDUCE_OP_SUM ? subgroupAdd(v) : subgroupMax(v);
    if (subgroupElect()) reduce_scratch[gl_SubgroupID] = v;
    barrier();
    float r = reduce_identity_(op);
    for (uint i = gl_SubgroupInvocationID; i < gl_NumSubgroups; i += gl_SubgroupSize)
        r = reduce_combine_(r, reduce_scratch[i], op);
    r = op == REDUCE_OP_SUM ? subgroupAdd(r) : subgroupMax(r);
#else
    const uint t = gl_LocalInvocationIndex;
    reduce_scratch[t] = v;
    barrier();
    [[unroll]] for (uint s = REDUCE_SIZE / 2u; s > 0u; s >>= 1u) {
        if (t < s) reduce_scratch[t] = reduce_combine_(reduce_scratch[t], reduce_scratch[t + s], op);
        barrier();
    }
    const float r = reduce_scratch[0];
#endif
    barrier();  // everyone has read the scratch before the next call overwrites it
    return r;
}

float wg_sum(float v) { return wg_reduce_(v, REDUCE_OP_SUM); }
float wg_max(float v) { return wg_reduce_(v, REDUCE_OP_MAX); }

#endif  // MNEMO_REDUCE_COMMON_GLSL
