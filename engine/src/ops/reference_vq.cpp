// Reference of VQ_DECODE: FAISS "OPQ,Residual<Mc>x<bc>,PQ<Mp>x<bp>" codes (an Index2Layer behind
// an OPQ rotation) back to vectors, written as plainly as the code layout in mnemo_abi.h reads.
//
// Unlike the other references this one does not accumulate in double: the op's contract is the
// exact float32 arithmetic FAISS's sa_decode performs over reference BLAS (x = 0, then for
// l = 0..Do-1 in that order x += round(y[l] * A[l, :])), so that a decoded memory is the same
// vector wherever it is decoded. This file is compiled with -ffp-contract=off
// (engine/CMakeLists.txt): a fused multiply-add would skip the rounding of the product.
#include <cstdint>
#include <string>
#include <vector>

#include "ops/reference_detail.hpp"

namespace mnemo::reference {
namespace {

struct VqShape {
    int64_t rows, words;    // codes [N, W]
    int64_t mc, bc, dsub_c;  // coarse [Mc, 2^bc, Do/Mc]
    int64_t mp, bp, dsub_p;  // pq [Mp, 2^bp, Do/Mp]
    int64_t d_out, d_in;
    int64_t coarse_bytes;   // cb = ceil(Mc*bc/8)
};

// Byte i of row n's code: bits 8*(i%4).. of word i/4 (the words are little-endian byte strings).
uint32_t code_byte(const In& codes, const VqShape& s, int64_t n, int64_t i) {
    const auto word = static_cast<uint32_t>(codes.i32(n * s.words + i / 4));
    return (word >> (8 * (i % 4))) & 0xFFu;
}

uint64_t list_number(const In& codes, const VqShape& s, int64_t n) {
    uint64_t list = 0;
    for (int64_t i = 0; i < s.coarse_bytes; ++i) list |= static_cast<uint64_t>(code_byte(codes, s, n, i)) << (8 * i);
    return list;
}

// PQ index k: bits [k*bp, (k+1)*bp) of the LSB-first stream that starts at byte cb, one bit at
// a time (the fast kernels read whole words; this is the definition).
int64_t pq_index(const In& codes, const VqShape& s, int64_t n, int64_t k) {
    int64_t p = 0;
    for (int64_t b = 0; b < s.bp; ++b) {
        const int64_t bit = k * s.bp + b;
        const uint32_t byte = code_byte(codes, s, n, s.coarse_bytes + bit / 8);
        p |= static_cast<int64_t>((byte >> (bit % 8)) & 1u) << b;
    }
    return p;
}

}  // namespace

void vq_decode(const Ctx& c) {
    const In& codes = c.in[0];
    const In& coarse = c.in[1];
    const In& pq = c.in[2];
    const bool rotated = c.in.size() > 3;
    VqShape s{};
    s.rows = codes.dim(0);
    s.words = codes.dim(1);
    s.mc = coarse.dim(0);
    s.bc = c.node.iparams[0];
    s.dsub_c = coarse.dim(2);
    s.mp = pq.dim(0);
    s.bp = c.node.iparams[1];
    s.dsub_p = pq.dim(2);
    s.d_out = s.mc * s.dsub_c;
    s.d_in = rotated ? c.in[3].dim(1) : s.d_out;
    s.coarse_bytes = (s.mc * s.bc + 7) / 8;
    const int64_t kc = int64_t{1} << s.bc, kp = int64_t{1} << s.bp;
    const uint64_t nlist = uint64_t{1} << (s.mc * s.bc);  // Mc*bc <= 32 (shape rule)

    // A corrupt coarse code is an error (FAISS's decode_listno throws); checked for every row
    // before any output is written.
    for (int64_t n = 0; n < s.rows; ++n) {
        const uint64_t list = list_number(codes, s, n);
        if (list >= nlist)
            c.fail("code " + std::to_string(n) + " has coarse list number " + std::to_string(list) + ", outside 0.." +
                   std::to_string(nlist - 1) + " (" + std::to_string(s.mc) + " x " + std::to_string(s.bc) +
                   "-bit coarse indices)");
    }

    std::vector<float> y(static_cast<size_t>(s.d_out));
    for (int64_t n = 0; n < s.rows; ++n) {
        const uint64_t list = list_number(codes, s, n);
        // Rotated space: y[c] = pq[k, p_k, c - k*dsub_p] + coarse[k', c_k', c - k'*dsub_c]. One
        // f32 addition per element, so the order of its operands cannot change the result.
        for (int64_t k = 0; k < s.mp; ++k) {
            const int64_t p = pq_index(codes, s, n, k);
            for (int64_t j = 0; j < s.dsub_p; ++j)
                y[static_cast<size_t>(k * s.dsub_p + j)] = pq.f((k * kp + p) * s.dsub_p + j);
        }
        for (int64_t k = 0; k < s.mc; ++k) {
            const auto ck = static_cast<int64_t>((list >> (k * s.bc)) & static_cast<uint64_t>(kc - 1));
            for (int64_t j = 0; j < s.dsub_c; ++j)
                y[static_cast<size_t>(k * s.dsub_c + j)] += coarse.f((k * kc + ck) * s.dsub_c + j);
        }
        float* out = c.out + n * s.d_in;
        if (!rotated) {
            for (int64_t i = 0; i < s.d_out; ++i) out[i] = y[static_cast<size_t>(i)];
            continue;
        }
        // x = A^T y, reference BLAS sgemm's order: the sum over l is the outer loop, ascending.
        const In& a = c.in[3];
        for (int64_t i = 0; i < s.d_in; ++i) out[i] = 0.0f;
        for (int64_t l = 0; l < s.d_out; ++l) {
            const float yl = y[static_cast<size_t>(l)];
            for (int64_t i = 0; i < s.d_in; ++i) {
                const float product = yl * a.f(l * s.d_in + i);
                out[i] = out[i] + product;
            }
        }
    }
}

}  // namespace mnemo::reference
