// IEEE double arithmetic on 32-bit integers, for PK_TOPK on devices without shaderFloat64.
//
// PK_TOPK's indices must equal the reference's bit for bit, and the reference forms its scores
// in double (mnemo_abi.h): stage 1 sums u[r]*S[r] in double and rounds once to f32, stage 2 ranks
// pair scores computed in double. An f32 "double-float" emulation is not enough: it carries more
// bits than double in some cases (s1 + s2 with far-apart exponents stays exact in two floats but
// rounds in double) and fewer in others, so near-ties would rank differently. This file computes
// exactly what a correctly rounded double operation returns (round to nearest, ties to even),
// on the IEEE bit pattern (uvec2: x = low word, y = high word, as unpackDouble2x32 gives).
//
// Operations: sd_add (double + double), sd_mul_f (double * f32), sd_from_f32, sd_to_f32 (round
// to nearest even, with f32 overflow and subnormals). Special values follow IEEE: NaN in -> NaN
// out, inf - inf and inf * 0 are NaN. Double subnormals are handled by the packer, though the
// values of PK_TOPK never reach them (products of at most three f32 stay above 2^-447).
//
// The code uses only the GLSL subset that is also C++ (the CPU test harness compiles it with a
// small shim), hence plain structs and no swizzles or out parameters of our own.

#ifndef TOPK_F64_CPP
// A 96-bit unsigned integer, w0 the lowest word.
struct U96 {
    uint w0;
    uint w1;
    uint w2;
};
#endif

U96 u96(uint w0, uint w1, uint w2) { return U96(w0, w1, w2); }

bool u96_is_zero(U96 a) { return (a.w0 | a.w1 | a.w2) == 0u; }
bool u96_eq(U96 a, U96 b) { return a.w0 == b.w0 && a.w1 == b.w1 && a.w2 == b.w2; }
bool u96_less(U96 a, U96 b) {
    if (a.w2 != b.w2) return a.w2 < b.w2;
    if (a.w1 != b.w1) return a.w1 < b.w1;
    return a.w0 < b.w0;
}
// Index of the highest set bit, -1 for zero.
int u96_msb(U96 a) {
    if (a.w2 != 0u) return 64 + findMSB(a.w2);
    if (a.w1 != 0u) return 32 + findMSB(a.w1);
    return findMSB(a.w0);
}
U96 u96_shr(U96 a, uint s) {
    if (s >= 96u) return u96(0u, 0u, 0u);
    if (s >= 64u) return u96(a.w2 >> (s - 64u), 0u, 0u);
    if (s >= 32u) {
        a = u96(a.w1, a.w2, 0u);
        s -= 32u;
    }
    if (s == 0u) return a;  // a shift by 32 - 0 would be undefined below
    return u96((a.w0 >> s) | (a.w1 << (32u - s)), (a.w1 >> s) | (a.w2 << (32u - s)), a.w2 >> s);
}
U96 u96_shl(U96 a, uint s) {
    if (s >= 96u) return u96(0u, 0u, 0u);
    if (s >= 64u) return u96(0u, 0u, a.w0 << (s - 64u));
    if (s >= 32u) {
        a = u96(0u, a.w0, a.w1);
        s -= 32u;
    }
    if (s == 0u) return a;
    return u96(a.w0 << s, (a.w1 << s) | (a.w0 >> (32u - s)), (a.w2 << s) | (a.w1 >> (32u - s)));
}
U96 u96_add(U96 a, U96 b) {
    uint c0 = 0u, c1 = 0u, c2 = 0u;
    const uint w0 = uaddCarry(a.w0, b.w0, c0);
    const uint t = uaddCarry(a.w1, b.w1, c1);
    const uint w1 = uaddCarry(t, c0, c2);
    return u96(w0, w1, a.w2 + b.w2 + c1 + c2);
}
// a - b for a >= b.
U96 u96_sub(U96 a, U96 b) {
    uint b0 = 0u, b1 = 0u, b2 = 0u;
    const uint w0 = usubBorrow(a.w0, b.w0, b0);
    const uint t = usubBorrow(a.w1, b.w1, b1);
    const uint w1 = usubBorrow(t, b0, b2);
    return u96(w0, w1, a.w2 - b.w2 - b1 - b2);
}
// a / 2^s rounded to nearest, ties to even.
U96 u96_round_shr(U96 a, uint s) {
    if (s == 0u) return a;
    if (s > 96u) return u96(0u, 0u, 0u);  // a < 2^96 <= half of 2^s: rounds down to zero
    U96 r = u96_shr(a, s);
    const U96 rem = u96_sub(a, u96_shl(r, s));
    const U96 halfway = u96_shl(u96(1u, 0u, 0u), s - 1u);
    if (u96_less(halfway, rem) || (u96_eq(rem, halfway) && (r.w0 & 1u) != 0u)) r = u96_add(r, u96(1u, 0u, 0u));
    return r;
}

// A finite value (-1)^sign * m * 2^e, or a special: kind 0 finite, 1 infinity, 2 NaN.
#ifndef TOPK_F64_CPP
struct SoftNum {
    uint sign;
    int e;
    U96 m;
    uint kind;
};
#endif

const uint SD_FINITE = 0u;
const uint SD_INF = 1u;
const uint SD_NAN = 2u;

SoftNum sd_unpack(uvec2 d) {
    const uint sign = d.y >> 31;
    const uint be = (d.y >> 20) & 0x7FFu;
    const uint fhi = d.y & 0xFFFFFu;
    if (be == 0x7FFu) return SoftNum(sign, 0, u96(0u, 0u, 0u), (fhi | d.x) == 0u ? SD_INF : SD_NAN);
    if (be == 0u) return SoftNum(sign, -1074, u96(d.x, fhi, 0u), SD_FINITE);
    return SoftNum(sign, int(be) - 1075, u96(d.x, fhi | 0x100000u, 0u), SD_FINITE);
}

SoftNum sf_unpack(uint f) {
    const uint sign = f >> 31;
    const uint be = (f >> 23) & 0xFFu;
    const uint frac = f & 0x7FFFFFu;
    if (be == 0xFFu) return SoftNum(sign, 0, u96(0u, 0u, 0u), frac == 0u ? SD_INF : SD_NAN);
    if (be == 0u) return SoftNum(sign, -149, u96(frac, 0u, 0u), SD_FINITE);
    return SoftNum(sign, int(be) - 150, u96(frac | 0x800000u, 0u, 0u), SD_FINITE);
}

uvec2 sd_nan() { return uvec2(0u, 0x7FF80000u); }
uvec2 sd_inf(uint sign) { return uvec2(0u, (sign << 31) | 0x7FF00000u); }

// The double nearest to (-1)^sign * m * 2^e (ties to even); overflow gives infinity.
uvec2 sd_pack(uint sign, U96 m, int e) {
    const int top = u96_msb(m);
    if (top < 0) return uvec2(0u, sign << 31);
    int shift = top - 52;
    int q = e + shift;  // exponent of the result's last mantissa bit
    if (q < -1074) {    // subnormal: the last bit is pinned at 2^-1074
        shift += -1074 - q;
        q = -1074;
    }
    if (q > 971) return sd_inf(sign);  // the biased exponent q + 1075 would exceed 2046
    const U96 r = shift > 0 ? u96_round_shr(m, uint(shift)) : u96_shl(m, uint(-shift));
    // r < 2^53 carries its own leading bit into the exponent field (a subnormal r < 2^52 leaves
    // the field 0; a rounding carry to 2^53 bumps it): bits = r + (q + 1074) * 2^52.
    const uint field = uint(q + 1074) + (r.w1 >> 20);
    if (field >= 0x7FFu) return sd_inf(sign);
    return uvec2(r.w0, (sign << 31) | ((r.w1 & 0xFFFFFu) + (field << 20)));
}

// The f32 nearest to (-1)^sign * m * 2^e (ties to even), as bits; overflow gives infinity.
uint sf_pack(uint sign, U96 m, int e) {
    const int top = u96_msb(m);
    if (top < 0) return sign << 31;
    int shift = top - 23;
    int q = e + shift;
    if (q < -149) {
        shift += -149 - q;
        q = -149;
    }
    if (q > 104) return (sign << 31) | 0x7F800000u;
    const U96 r = shift > 0 ? u96_round_shr(m, uint(shift)) : u96_shl(m, uint(-shift));
    const uint field = uint(q + 149) + (r.w0 >> 23);
    if (field >= 0xFFu) return (sign << 31) | 0x7F800000u;
    return (sign << 31) | ((r.w0 & 0x7FFFFFu) + (field << 23));
}

// The f32 with bits f as a double (exact).
uvec2 sd_from_f32(uint f) {
    const SoftNum a = sf_unpack(f);
    if (a.kind == SD_NAN) return sd_nan();
    if (a.kind == SD_INF) return sd_inf(a.sign);
    return sd_pack(a.sign, a.m, a.e);
}

// A double rounded once to f32, as f32 bits.
uint sd_to_f32(uvec2 d) {
    const SoftNum a = sd_unpack(d);
    if (a.kind == SD_NAN) return 0x7FC00000u;
    if (a.kind == SD_INF) return (a.sign << 31) | 0x7F800000u;
    return sf_pack(a.sign, a.m, a.e);
}

// a + b, correctly rounded.
uvec2 sd_add(uvec2 a, uvec2 b) {
    SoftNum x = sd_unpack(a);
    SoftNum y = sd_unpack(b);
    if (x.kind == SD_NAN || y.kind == SD_NAN) return sd_nan();
    if (x.kind == SD_INF) return y.kind == SD_INF && x.sign != y.sign ? sd_nan() : a;
    if (y.kind == SD_INF) return b;
    if (u96_is_zero(x.m)) return u96_is_zero(y.m) ? uvec2(0u, (x.sign & y.sign) << 31) : b;
    if (u96_is_zero(y.m)) return a;
    // x gets the larger magnitude (IEEE magnitudes order like their bit patterns).
    const uint ma = a.y & 0x7FFFFFFFu, mb = b.y & 0x7FFFFFFFu;
    uvec2 x_bits = a;
    if (ma < mb || (ma == mb && a.x < b.x)) {
        const SoftNum t = x;
        x = y;
        y = t;
        x_bits = b;
    }
    const int d = x.e - y.e;  // >= 0
    // Beyond 55 bits the smaller one is below half an ulp of x even where x is a power of two
    // about to lose a binade: the sum rounds back to x.
    if (d > 55) return x_bits;
    // 40 guard bits below x's last bit. y's bits shifted out below them are folded into one
    // sticky bit, which lies far below the rounding position (only d <= 1 can cancel more than
    // one leading bit, and then nothing is shifted out).
    const U96 big = u96_shl(x.m, 40u);
    U96 small;
    if (d <= 40) {
        small = u96_shl(y.m, uint(40 - d));
    } else {
        small = u96_shr(y.m, uint(d - 40));
        if (!u96_eq(u96_shl(small, uint(d - 40)), y.m)) small.w0 |= 1u;
    }
    U96 sum;
    if (x.sign == y.sign) {
        sum = u96_add(big, small);
    } else {
        sum = u96_sub(big, small);
        if (u96_is_zero(sum)) return uvec2(0u, 0u);  // x - x is +0 under round to nearest
    }
    return sd_pack(x.sign, sum, x.e - 40);
}

// a * f (f given as f32 bits), correctly rounded. The product of 53 and 24 bits is formed
// exactly in 96 bits and rounded once.
uvec2 sd_mul_f(uvec2 a, uint f) {
    const SoftNum x = sd_unpack(a);
    const SoftNum y = sf_unpack(f);
    const uint sign = x.sign ^ y.sign;
    if (x.kind == SD_NAN || y.kind == SD_NAN) return sd_nan();
    const bool x_zero = x.kind == SD_FINITE && u96_is_zero(x.m);
    const bool y_zero = y.kind == SD_FINITE && u96_is_zero(y.m);
    if (x.kind == SD_INF || y.kind == SD_INF) return x_zero || y_zero ? sd_nan() : sd_inf(sign);
    if (x_zero || y_zero) return uvec2(0u, sign << 31);
    uint h0 = 0u, l0 = 0u, h1 = 0u, l1 = 0u, c = 0u;
    umulExtended(x.m.w0, y.m.w0, h0, l0);
    umulExtended(x.m.w1, y.m.w0, h1, l1);
    const uint w1 = uaddCarry(h0, l1, c);
    return sd_pack(sign, u96(l0, w1, h1 + c), x.e + y.e);
}

// An integer pair (high, low word) that orders like the double: larger ranks first. NaN is
// below every number; -0.0 and +0.0 are equal (topk_order.hpp's rank_key, offset to unsigned).
uvec2 sd_rank_key(uvec2 d) {
    uint hi = d.y, lo = d.x;
    if ((hi & 0x7FF00000u) == 0x7FF00000u && ((hi & 0xFFFFFu) | lo) != 0u) return uvec2(0u, 0u);
    if (((hi & 0x7FFFFFFFu) | lo) == 0u) hi = 0u;
    if ((hi & 0x80000000u) != 0u) return uvec2(~hi, ~lo);
    return uvec2(hi | 0x80000000u, lo);
}
