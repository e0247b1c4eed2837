#version 450
// GET_ROWS: out[n, :] = f32(table[idx[n], :]). Workgroup (x, y + z * rows_per_z) copies one block
// of 256 units of output row n, a unit being one element (any dtype, any alignment), four f32
// (VEC4_F32: C % 4 == 0 and 16-byte aligned table and output) or eight f16/bf16 read as one
// uvec4 (VEC8_W16: C % 8 == 0, same alignment) or, for a block-quantized table (Q_TYPE,
// quant.glsl), a quad of four weights dequantized exactly as the CPU reference does. A row index
// outside 0..R-1 is reported once per row and the row is skipped.
#include "common.glsl"
#include "rows_common.glsl"
#if defined(Q_TYPE)
#include "quant.glsl"
#endif

layout(local_size_x = 256) in;

layout(push_constant) uniform Push {
    Weight table;
    uvec2 idx;
    uvec2 out_;
    uint rows;        // R
    uint cols;        // C
    uint n;           // output rows
    uint node;        // for report_bad_index
    uint rows_per_z;  // gl_NumWorkGroups.y
} pc;

void main() {
    const uint n = gl_WorkGroupID.y + gl_WorkGroupID.z * pc.rows_per_z;
    if (n >= pc.n) return;
    const int r = Ints(pc.idx).v[n];
    if (r < 0 || uint(r) >= pc.rows) {
        if (gl_WorkGroupID.x == 0u && gl_LocalInvocationID.x == 0u) report_bad_index(pc.node, r, int(pc.rows));
        return;
    }
    const uint u = gl_GlobalInvocationID.x;  // unit within the row
    const uvec2 dst = row_address(pc.out_, n, pc.cols * 4u);
#if defined(Q_TYPE)
    // C is a whole number of blocks, so of quads. The output's alignment is not known: 4 stores.
    if (u >= pc.cols / 4u) return;
    const vec4 q = q_quad(quant_row(pc.table, uint(r), quant_row_bytes(pc.cols)), 4u * u);
    [[unroll]] for (uint e = 0; e < 4u; ++e) Floats(dst).v[4u * u + e] = q[e];
#elif defined(VEC4_F32)
    if (u >= pc.cols / 4u) return;
    Vec4s(dst).v[u] = Vec4s(row_address(pc.table.addr, uint(r), pc.cols * 4u)).v[u];
#elif defined(VEC8_W16)
    if (u >= pc.cols / 8u) return;
    const uvec4 w = UVec4s(row_address(pc.table.addr, uint(r), pc.cols * 2u)).v[u];
    vec4 lo, hi;
    if (pc.table.dtype == DTYPE_F16) {
        lo = vec4(unpack_half2(w.x), unpack_half2(w.y));
        hi = vec4(unpack_half2(w.z), unpack_half2(w.w));
    } else {
        lo = uintBitsToFloat(uvec4(w.x << 16, w.x & 0xFFFF0000u, w.y << 16, w.y & 0xFFFF0000u));
        hi = uintBitsToFloat(uvec4(w.z << 16, w.z & 0xFFFF0000u, w.w << 16, w.w & 0xFFFF0000u));
    }
    Vec4s(dst).v[2u * u] = lo;
    Vec4s(dst).v[2u * u + 1u] = hi;
#else
    if (u >= pc.cols) return;
    Floats(dst).v[u] = weight_at(weight_row(pc.table, uint(r), pc.cols), u);
#endif
}
