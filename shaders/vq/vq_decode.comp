#version 450
// VQ_DECODE, first pass: the rotated-space vector of each code, one invocation per element
//   y[n, c] = pq[kp, p_kp, c - kp*dsub_p] + coarse[kc, c_kc, c - kc*dsub_c]
// with kp = c / dsub_p and kc = c / dsub_c. The code of row n is `words` i32 words holding a
// little-endian byte string: the coarse list number in its first cb (<= 4) bytes, then the PQ
// indices as an LSB-first bit stream of bp-bit fields. A list number >= 2^(Mc*bc) is a corrupt
// code: its row is reported once (by element 0) and skipped.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(push_constant) uniform Push {
    uvec2 codes;
    uvec2 coarse;
    uvec2 pq;
    uvec2 dst;        // the output (no rotation) or the node's scratch
    uint total;       // N * Do
    uint d_out;
    uint words;       // W
    uint dsub_c;      // Do / Mc
    uint dsub_p;      // Do / Mp
    uint bc;          // bits per coarse index
    uint bp;          // bits per PQ index
    uint coarse_bytes;
    uint list_bits;   // Mc * bc (<= 32)
    uint node;
    uint row_groups;  // gl_NumWorkGroups.x
} pc;

void main() {
    const uint e = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * pc.row_groups * 256u;
    if (e >= pc.total) return;
    const uint n = e / pc.d_out, c = e - n * pc.d_out;
    const uint base = n * pc.words;
    const uint w0 = Words(pc.codes).v[base];
    const uint list = pc.coarse_bytes >= 4u ? w0 : (w0 & ((1u << (8u * pc.coarse_bytes)) - 1u));
    if (pc.list_bits < 32u && list >= (1u << pc.list_bits)) {
        // Values and limits above 2^31 - 1 are clamped: the status word holds ints.
        if (c == 0u) report_bad_index(pc.node, int(min(list, 0x7FFFFFFFu)), int(min(1u << pc.list_bits, 0x7FFFFFFFu)));
        return;
    }
    // Coarse index of sub-quantizer kc: bits [kc*bc, (kc+1)*bc) of the list number.
    const uint kc = c / pc.dsub_c;
    const uint ci = (list >> (kc * pc.bc)) & ((1u << pc.bc) - 1u);
    // PQ index of sub-quantizer kp: bp (<= 16) bits from bit 8*cb + kp*bp of the code, within one
    // word or across two; the second word lies inside the row because the field ends inside
    // the code.
    const uint kp = c / pc.dsub_p;
    const uint bit = 8u * pc.coarse_bytes + kp * pc.bp;
    const uint word = bit >> 5u, shift = bit & 31u;
    uint p = Words(pc.codes).v[base + word] >> shift;
    if (shift + pc.bp > 32u) p |= Words(pc.codes).v[base + word + 1u] << (32u - shift);
    p &= (1u << pc.bp) - 1u;
    const float from_pq = Floats(pc.pq).v[((kp << pc.bp) + p) * pc.dsub_p + (c - kp * pc.dsub_p)];
    const float from_coarse = Floats(pc.coarse).v[((kc << pc.bc) + ci) * pc.dsub_c + (c - kc * pc.dsub_c)];
    Floats(pc.dst).v[e] = from_pq + from_coarse;
}
