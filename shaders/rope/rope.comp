#version 450
// ROPE on x[N, H, D]: one invocation per rotated pair, plus one per pass-through element
// (dims R..D-1 are copied), so a row of D values takes D - R/2 invocations. Grid: 1D index
// over all rows, laid out 2D when it exceeds the x limit.
//
// Position offset. i[2] = o shifts every position: the angle is (pos + o) * inv_freq with the
// integer sum exact even where it leaves the i32 range (|o| <= 2^30, so the sum fits 33 bits):
// pos and o are each cut into a multiple of 256 and a low byte, and the two parts are summed
// separately, both exact in f32 (see rope_cos_sin).
//
// Precision. The reference forms angle = pos * inv_freq and its cos/sin in double. An f32
// product alone is off by half an ulp of the angle (0.03 rad at pos 1M), and Vulkan lets a
// driver's sin/cos be 2^-11 off even inside [-pi, pi]. So neither is used: the angle is formed
// exactly as an unevaluated sum hi + lo of two floats (splitting both factors into 12-bit
// halves, whose products are exact), reduced modulo pi/2 with a two-float pi/2, and cos/sin
// come from our own polynomials on [-pi/4, pi/4] plus the quadrant. Emulated in numpy f32
// against double: cos/sin within 1e-7 of the truth for angles up to 1.7e7 rad (pos 2^24 at
// inv_freq 1), within 2e-5 even at pos 2^31 - 1 (the float k * pi/2 no longer has the bits;
// no real position/frequency pair gets there), where an f32 angle is off by 1e-4 at pos 4095
// and 0.03 at pos 1M.
#include "common.glsl"

layout(local_size_x = 256) in;

layout(push_constant) uniform Push {
    uvec2 x;
    uvec2 pos;
    uvec2 inv_freq;
    uvec2 out_;
    uint total;        // N * H * per_row invocations
    uint per_row;      // D - R/2
    uint heads;
    uint d;
    uint half_;        // R / 2
    uint interleaved;  // i[0] == 1
    uint row_groups;   // gl_NumWorkGroups.x
    int offset;        // i[2], |offset| <= 2^30
} pc;

// a = hi + lo where hi keeps the top 12 significant bits and lo (exact) the other 12, so the
// product of two such halves has at most 24 bits: exact in f32.
vec2 split12(float a) {
    const float hi = uintBitsToFloat(floatBitsToUint(a) & 0xFFFFF000u);
    return vec2(hi, a - hi);
}

// (p, e) with p + e == a * b exactly (Dekker), given round-to-nearest f32 arithmetic.
// `precise` keeps the compiler from reassociating the error terms away.
vec2 two_prod(float a, float b) {
    precise float p = a * b;
    const vec2 as = split12(a), bs = split12(b);
    precise float e = as.y * bs.y - (((p - as.x * bs.x) - as.y * bs.x) - as.x * bs.y);
    return vec2(p, e);
}

// (s, e) with s + e == a + b exactly (Knuth's two-sum, any magnitudes).
vec2 two_sum(float a, float b) {
    precise float s = a + b;
    precise float bb = s - a;
    precise float e = (a - (s - bb)) + (b - bb);
    return vec2(s, e);
}

// Polynomials for |t| <= pi/4 (least-squares fits on Chebyshev nodes, ours; max error about
// 4e-8 for sin and 7e-8 for cos, i.e. about one f32 ulp).
float sin_poly(float t) {
    const float u = t * t;
    return t + t * u * (-0.1666666716337204 + u * (0.008333329111337662 + u * (-0.00019839289598166943 + u * 2.7179328299098415e-06)));
}
float cos_poly(float t) {
    const float u = t * t;
    return 1.0 - 0.5 * u + u * u * (0.0416666679084301 + u * (-0.0013888883404433727 + u * (2.4799423044896685e-05 + u * -2.7203006425224885e-07)));
}

// cos and sin of (p + o) * f for an integer position p and offset o (|o| <= 2^30).
vec2 rope_cos_sin(int p, int o, float f) {
    // p + o = ph + pl with ph = 256 * ((p >> 8) + (o >> 8)) (arithmetic shifts; the sum of the
    // two is below 2^24 in magnitude, so ph has at most 24 significant bits) and pl = (p & 255)
    // + (o & 255) in 0..510: both convert to f32 exactly, for every int32 p.
    const float ph = float((p >> 8) + (o >> 8)) * 256.0, pl = float((p & 0xFF) + (o & 0xFF));
    const vec2 a = two_prod(ph, f), b = two_prod(pl, f);
    const vec2 s = two_sum(a.x, b.x);
    precise float hi = s.x, lo = s.y + (a.y + b.y);  // angle = hi + lo

    // k = nearest multiple of pi/2; the exact k * PIO2_HI removed from hi cancels exactly
    // (Sterbenz), so the remainder keeps the bits of lo.
    const float PIO2_HI = 1.57079637050628662109375;  // float(pi/2)
    const float PIO2_LO = -4.37113900018624283e-08;   // pi/2 - PIO2_HI
    const float k = round(hi * 0.63661977236758134);   // 2/pi
    const vec2 kp = two_prod(k, PIO2_HI);
    precise float t = ((hi - kp.x) - kp.y) + (lo - k * PIO2_LO);

    // Quadrant k mod 4, exact for every integral float k.
    uint q = uint(k - 4.0 * floor(k * 0.25));
    // Past ~2^23 quarter turns float(hi * 2/pi) may miss the nearest k by a few, leaving t
    // outside [-pi/4, pi/4]: a second, small reduction brings it back (k2 = 0 almost always).
    const float k2 = round(t * 0.63661977236758134);
    const vec2 kp2 = two_prod(k2, PIO2_HI);
    t = ((t - kp2.x) - kp2.y) - k2 * PIO2_LO;
    q = (q + uint(int(k2))) & 3u;
    const float c = cos_poly(t), s_ = sin_poly(t);
    switch (q) {
        case 0u: return vec2(c, s_);
        case 1u: return vec2(-s_, c);
        case 2u: return vec2(-c, -s_);
        default: return vec2(s_, -c);
    }
}

void main() {
    const uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * pc.row_groups * 256u;
    if (i >= pc.total) return;
    const uint row = i / pc.per_row;  // row = n * H + h
    const uint k = i - row * pc.per_row;
    const uint base = row * pc.d;
    Floats x = Floats(pc.x);
    Floats y = Floats(pc.out_);
    if (k >= pc.half_) {  // pass-through dims R..D-1
        const uint j = base + pc.half_ + k;  // = base + R + (k - R/2)
        y.v[j] = x.v[j];
        return;
    }
    const int p = Ints(pc.pos).v[row / pc.heads];
    const vec2 cs = rope_cos_sin(p, pc.offset, Floats(pc.inv_freq).v[k]);
    // Mode 0 pairs (k, k + R/2) (HF rotate_half); mode 1 pairs (2k, 2k + 1).
    const uint i0 = base + (pc.interleaved != 0u ? 2u * k : k);
    const uint i1 = pc.interleaved != 0u ? i0 + 1u : i0 + pc.half_;
    const float a = x.v[i0], b = x.v[i1];
    y.v[i0] = a * cs.x - b * cs.y;
    y.v[i1] = b * cs.x + a * cs.y;
}
