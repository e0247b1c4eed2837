// Helpers of the lookup shaders (embedding_bag, peer_gate, hive): gathered weight rows, and the
// workgroup numbering of their folded 2-D grids. Included after common.glsl.
//
// A gathered row of a large table can start beyond 4 GiB, and a 32-bit element index into it
// could overflow (or be taken as signed by the driver), so row addresses are formed in 64 bits
// from uvec2 pieces (no shaderInt64 needed) and elements are indexed from the row start.

// The linear workgroup id of a grid folded into x and y (x rows of gl_NumWorkGroups.x groups).
uint folded_workgroup() { return gl_WorkGroupID.x + gl_WorkGroupID.y * gl_NumWorkGroups.x; }

// a + x * y for a 64-bit address a.
uvec2 addr_add_product(uvec2 a, uint x, uint y) {
    uint hi, lo, carry;
    umulExtended(x, y, hi, lo);
    const uint sum = uaddCarry(a.x, lo, carry);
    return uvec2(sum, a.y + hi + carry);
}

// One row of a weight matrix: the aligned word holding its element 0, and whether element 0 is
// the high half of that word (16-bit rows of odd width, or a tensor starting on a half word).
struct WeightRow {
    uvec2 words;
    uint odd;
    uint dtype;
};

// Row `row` of a weight of `cols` columns (cols * element size below 2^32: checked by the host).
WeightRow weight_row(Weight w, uint row, uint cols) {
    const uint esize = w.dtype == DTYPE_F32 ? 4u : 2u;
    uvec2 a = addr_add_product(w.addr, row, cols * esize);
    a = addr_add_product(a, w.first, 2u);
    WeightRow r;
    r.words = uvec2(a.x & ~3u, a.y);
    r.odd = (a.x >> 1) & 1u;
    r.dtype = w.dtype;
    return r;
}

vec2 unpack16_pair(uint bits, uint dtype) {
    return dtype == DTYPE_F16 ? unpack_half2(bits)
                              : vec2(uintBitsToFloat(bits << 16), uintBitsToFloat(bits & 0xFFFF0000u));
}

// Elements c and c+1 of a row of `cols` columns; element c+1 only when c+1 < cols (else 0).
// 16-bit rows are read as 32-bit words: one word when the pair is word-aligned, else the high
// half of one word and the low half of the next.
vec2 row_pair(WeightRow r, uint c, uint cols) {
    const bool second = c + 1u < cols;
    if (r.dtype == DTYPE_F32) {
        Floats f = Floats(r.words);
        return vec2(f.v[c], second ? f.v[c + 1u] : 0.0);
    }
    Words w = Words(r.words);
    const uint e = r.odd + c;
    const uint first_word = w.v[e >> 1];
    uint bits;
    if ((e & 1u) == 0u) {
        bits = second ? first_word : (first_word & 0xFFFFu);
    } else {
        const uint next = second ? w.v[(e >> 1) + 1u] : 0u;
        bits = (first_word >> 16) | (next << 16);
    }
    return unpack16_pair(bits, r.dtype);
}
