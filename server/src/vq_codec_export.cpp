// What a trained VqCodec gives out: codes (FAISS sa_encode), vectors (FAISS sa_decode) and its
// codebook as plain arrays in the canonical format the device verifies and decodes.
#include <faiss/Index2Layer.h>
#include <faiss/IndexPQ.h>
#include <faiss/VectorTransform.h>
#include <faiss/impl/FaissException.h>

#include "faiss_error.hpp"
#include "mnemo/error.hpp"
#include "vq_codec.hpp"

namespace mnemo::kb {

VqCodebook VqCodec::codebook() const {
    if (!trained()) throw Error(where() + ": not trained, so there is no codebook to export");
    VqCodebook cb;
    cb.d_in = static_cast<uint32_t>(dim());
    cb.d_out = rotation_ ? static_cast<uint32_t>(rotation_->d_out) : cb.d_in;
    cb.coarse_m = coarse_m();
    cb.coarse_nbits = coarse_nbits();
    cb.pq_m = pq_m();
    cb.pq_nbits = pq_nbits();
    if (rotation_) {
        // The same conditions under which FAISS's own sa_decode works (transform_transpose).
        if (rotation_->have_bias || !rotation_->is_orthonormal)
            throw Error(where() + ": the rotation must be orthonormal and without bias");
        cb.rotation = rotation_->A;  // [d_out, d_in] row-major, as VQ_DECODE's A
    }
    cb.coarse = coarse_->pq.centroids;  // [Mc, 2^bc, d_out/Mc]
    cb.pq = two_layer_->pq.centroids;   // [Mp, 2^bp, d_out/Mp]
    // Through the canonical bytes and the device's own parser: it checks every size, refuses a
    // NaN or infinity, and sets the SHA-256 the memory folder's manifest records.
    const std::vector<uint8_t> bytes = cb.to_bytes();
    VqCodebook parsed = parse_vq_codebook(bytes.data(), bytes.size(), where(), "");
    if (parsed.code_size() != code_size())
        throw Error(where() + ": the codebook implies " + std::to_string(parsed.code_size()) + "-byte codes, FAISS writes " +
                    std::to_string(code_size()));
    return parsed;
}

std::vector<uint8_t> VqCodec::encode(const float* x, size_t n) const {
    std::vector<uint8_t> codes(n * code_size());
    try {
        index_->sa_encode(static_cast<faiss::Index::idx_t>(n), x, codes.data());
    } catch (const faiss::FaissException& e) {
        throw Error(where() + ": FAISS encoding failed: " + faiss_reason(e));
    }
    return codes;
}

std::vector<float> VqCodec::decode(const uint8_t* codes, size_t n) const {
    std::vector<float> x(n * static_cast<size_t>(dim()));
    try {
        index_->sa_decode(static_cast<faiss::Index::idx_t>(n), codes, x.data());
    } catch (const faiss::FaissException& e) {
        throw Error(where() + ": FAISS decoding failed: " + faiss_reason(e));
    }
    return x;
}

}  // namespace mnemo::kb
