// Helpers shared by the MATMUL shaders (included after common.glsl).
//
// A weight row is reached through its own 64-bit address rather than an element index from the
// tensor start: an LM head of 128k x 16k 16-bit elements already passes 2^31 elements, and
// SPIR-V treats access-chain indices as signed.

// Only for addresses known to be 8-byte aligned (x rows in the word path).
layout(buffer_reference, std430, buffer_reference_align = 8) buffer Vec2s { vec2 v[]; };

// a + i * stride as a 64-bit address (i * stride may pass 2^32).
uvec2 addr_offset(uvec2 a, uint i, uint stride) {
    uint hi, lo;
    umulExtended(i, stride, hi, lo);
    uint carry;
    const uint l = uaddCarry(a.x, lo, carry);
    return uvec2(l, a.y + hi + carry);
}

// a + b or a - b for a small byte count b.
uvec2 addr_add(uvec2 a, uint b) {
    uint carry;
    const uint l = uaddCarry(a.x, b, carry);
    return uvec2(l, a.y + carry);
}
uvec2 addr_sub(uvec2 a, uint b) {
    uint borrow;
    const uint l = usubBorrow(a.x, b, borrow);
    return uvec2(l, a.y - borrow);
}

// Row m of a [M, K] weight as a Weight of its own, so weight_at(row, k) reads W[m, k]. For 16-bit
// types the row's first element may sit in the upper half of a word (odd K, or `first` == 1):
// the address is rounded down to the word and `first` says which half.
Weight weight_row(Weight w, uint m, uint K) {
    if (w.dtype == DTYPE_F32) return Weight(addr_offset(w.addr, m, K * 4u), w.dtype, 0u);
    // Half-word index of the row start from w.addr: first + m*K. Its parity picks the half.
    const uint par = (w.first + m * K) & 1u;
    uvec2 a = addr_offset(w.addr, m, K * 2u);
    if (w.first > par) a = addr_add(a, 2u);       // first 1, row start even: next word
    else if (par > w.first) a = addr_sub(a, 2u);  // first 0, row start odd: this word's upper half
    return Weight(a, w.dtype, par);
}

// Two consecutive 16-bit weights packed in one word, low half first.
vec2 unpack_pair(uint word) {
#if defined(W_F16)
    return unpack_half2(word);
#else
    return vec2(uintBitsToFloat(word << 16), uintBitsToFloat(word & 0xFFFF0000u));
#endif
}
