// 64-bit address arithmetic for the row-moving shaders (GET_ROWS, KV_STORE), included after
// common.glsl. Tables and caches may exceed 4 GiB (and 2^31 elements, past which an i32 index in
// an access chain is read as negative), so a row's start is computed as a 64-bit byte address
// from 32-bit factors; indices inside a row stay small.

// a + b, both uvec2 (low word first).
uvec2 addr_add(uvec2 a, uvec2 b) {
    uint carry;
    const uint lo = uaddCarry(a.x, b.x, carry);
    return uvec2(lo, a.y + b.y + carry);
}

// The full 64-bit product a * b.
uvec2 mul_wide(uint a, uint b) {
    uint hi, lo;
    umulExtended(a, b, hi, lo);
    return uvec2(lo, hi);
}

// Address of row `row` of a tensor with `row_bytes` bytes per row.
uvec2 row_address(uvec2 base, uint row, uint row_bytes) { return addr_add(base, mul_wide(row, row_bytes)); }

// Row `row` of a weight (f32/f16/bf16) with `cols` elements per row, as a Weight of its own:
// the byte address rounded down to a word, and the 16-bit half it starts on.
Weight weight_row(Weight w, uint row, uint cols) {
    const uint esize = w.dtype == DTYPE_F32 ? 4u : 2u;
    const uvec2 at = addr_add(addr_add(w.addr, uvec2(w.first * 2u, 0u)), mul_wide(row, cols * esize));
    Weight r;
    r.addr = uvec2(at.x & ~3u, at.y);
    r.dtype = w.dtype;
    r.first = (at.x >> 1) & 1u;
    return r;
}
