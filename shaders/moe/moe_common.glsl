// Shared by the MOE_FFN shaders (included after common.glsl).

float silu(float v) { return v / (1.0 + exp(-v)); }

// Expert id of slot `slot` (token slot / k, choice slot % k), or -1 when it is outside 0..E-1.
int expert_of(uvec2 idx, uint slot, uint experts) {
    const int e = Ints(idx).v[slot];
    return e >= 0 && e < int(experts) ? e : -1;
}

#ifdef MOE_WG_SUM
// Workgroup sums of NV per-invocation values (WG invocations, a power of two): afterwards
// wg_total[i] holds the sum of every invocation's v[i]. The summation order is fixed by the
// shape of the reduction, so a result never depends on timing.
shared float wg_red[NV * WG];
shared float wg_total[NV];

void wg_sum(float v[NV]) {
    const uint tid = gl_LocalInvocationID.x;
#ifdef SUBGROUPS
    // One subgroupAdd per value, then the subgroups' partial sums in subgroup order. Works for
    // any subgroup size the driver picks, since no row is tied to a subgroup.
    [[unroll]] for (uint i = 0; i < NV; ++i) {
        const float s = subgroupAdd(v[i]);
        if (subgroupElect()) wg_red[gl_SubgroupID * NV + i] = s;
    }
    barrier();
    if (tid < NV) {
        float t = 0.0;
        for (uint g = 0; g < gl_NumSubgroups; ++g) t += wg_red[g * NV + tid];
        wg_total[tid] = t;
    }
#else
    [[unroll]] for (uint i = 0; i < NV; ++i) wg_red[i * WG + tid] = v[i];
    barrier();
    for (uint half_ = WG / 2u; half_ > 0u; half_ >>= 1) {
        if (tid < half_)
            [[unroll]] for (uint i = 0; i < NV; ++i) wg_red[i * WG + tid] += wg_red[i * WG + tid + half_];
        barrier();
    }
    if (tid < NV) wg_total[tid] = wg_red[tid * WG];
#endif
    barrier();
}
#endif
