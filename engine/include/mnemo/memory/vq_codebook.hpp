// The codebooks of a Memory3 vector-quantisation codec (FAISS "OPQ,Residual<Mc>x<bc>,PQ<Mp>x<bp>")
// in the canonical serialisation, format 1, that tools/reference/vq_codec.py defines and hashes
// (all integers u32 and all floats binary32, little-endian, no padding):
//     0  "MNEMOVQC"   8  version = 1   12  flags (bit 0: rotation A present)
//    16  d_in   20  d_out   24  coarse_M   28  coarse_nbits   32  pq_M   36  pq_nbits
//    40  A[d_out][d_in] (only with the flag), coarse[coarse_M][2^coarse_nbits][d_out/coarse_M],
//        pq[pq_M][2^pq_nbits][d_out/pq_M]; nothing after the last array.
// The SHA-256 of exactly these bytes names a codebook: the device refuses one whose hash is not the
// one its memories were encoded with. The arrays feed VQ_DECODE (coarse, pq [, A]) as they are.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>
#include "mnemo/api.hpp"

namespace mnemo {

struct MNEMO_API VqCodebook {
    static constexpr uint32_t kFormatVersion = 1;
    static constexpr uint32_t kFlagRotation = 1;
    static constexpr size_t kHeaderBytes = 40;

    uint32_t d_in = 0;   // dimension of a decoded vector
    uint32_t d_out = 0;  // dimension of the rotated space (= d_in without a rotation)
    uint32_t coarse_m = 0, coarse_nbits = 0;  // Mc, bc
    uint32_t pq_m = 0, pq_nbits = 0;          // Mp, bp
    std::vector<float> rotation;  // A [d_out, d_in] row-major; empty when there is none
    std::vector<float> coarse;    // [Mc, 2^bc, d_out/Mc]
    std::vector<float> pq;        // [Mp, 2^bp, d_out/Mp]
    std::string sha256;           // lowercase hex of to_bytes()

    bool has_rotation() const { return !rotation.empty(); }
    uint32_t coarse_code_size() const { return (coarse_m * coarse_nbits + 7) / 8; }  // cb
    uint32_t pq_code_size() const { return (pq_m * pq_nbits + 7) / 8; }              // pb
    uint32_t code_size() const { return coarse_code_size() + pq_code_size(); }        // bytes per vector
    // i32 words per code as VQ_DECODE takes them: ceil(code_size / 4).
    uint32_t code_words() const { return (code_size() + 3) / 4; }

    // The canonical bytes (what sha256 hashes).
    std::vector<uint8_t> to_bytes() const;
};

// Parses format 1 from memory. `name` (a file name, a URL) prefixes every error. With a non-empty
// `expected_sha256` (64 hex digits, either case) the bytes must hash to it; empty skips that
// check, for callers that have already verified the bytes. Throws mnemo::Error naming the field
// and what was expected: bad magic, version or flags, an inconsistent header, truncated data,
// trailing bytes, a NaN or infinity, a hash mismatch. The codec must also be one VQ_DECODE
// decodes: bits per index in 1..16 and Mc * bc <= 32.
MNEMO_API VqCodebook parse_vq_codebook(const void* data, size_t size, const std::string& name,
                             const std::string& expected_sha256);
MNEMO_API VqCodebook load_vq_codebook(const std::string& path, const std::string& expected_sha256);

// For a reader that gets a codebook in pieces (the knowledge-server client) and must know how
// large it will be before buffering it. vq_codebook_bytes: the size the whole codebook must have
// by its header (the first `size` >= 40 bytes; `shape` gets the header's fields, arrays empty),
// with parse_vq_codebook's header checks and errors. vq_codebook_max_bytes: the largest codebook
// any header can announce for d_in-dimensional vectors (VQ_DECODE's 16 bits per index, a rotated
// space of at most 2 d_in dimensions, which covers FAISS's padding to a multiple of OPQ's M).
MNEMO_API uint64_t vq_codebook_bytes(const void* header, size_t size, const std::string& name, VqCodebook* shape = nullptr);
MNEMO_API uint64_t vq_codebook_max_bytes(uint32_t d_in);

// Codes as FAISS's sa_encode writes them (n rows of code_size bytes) packed into the i32 words
// VQ_DECODE reads: byte i of a row is bits 8*(i%4).. of word i/4; the last word's unused bytes
// are 0. `words` >= ceil(code_size / 4).
MNEMO_API std::vector<int32_t> vq_code_words(const uint8_t* codes, size_t n, size_t code_size, size_t words);

}  // namespace mnemo
