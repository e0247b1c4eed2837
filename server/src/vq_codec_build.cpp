// Building a VqCodec from a factory string and checking, before any training, that FAISS built
// the shape VQ_DECODE decodes; plus the default factory and the sizes that follow from the shape.
#include <faiss/Index2Layer.h>
#include <faiss/IndexPQ.h>
#include <faiss/IndexPreTransform.h>
#include <faiss/VectorTransform.h>
#include <faiss/impl/FaissException.h>
#include <faiss/index_factory.h>

#include <algorithm>
#include <cstdlib>

#include "faiss_error.hpp"
#include "mnemo/error.hpp"
#include "vq_codec.hpp"

namespace mnemo::kb {
namespace {

constexpr uint32_t kMaxBits = 16;        // VQ_DECODE: bits per index
constexpr uint32_t kMaxCoarseBits = 32;  // VQ_DECODE: the list number is at most 4 bytes
constexpr size_t kOpqCentroids = 256;    // OPQMatrix trains with an 8-bit PQ of its own

std::vector<int> divisors(int d) {
    std::vector<int> out;
    for (int k = 1; k <= d; ++k)
        if (d % k == 0) out.push_back(k);
    return out;
}

}  // namespace

std::string default_factory(int d) {
    if (d < 4 || d % 2 != 0)
        throw Error("head dimension " + std::to_string(d) +
                    ": the default codec's Residual2x14 splits a vector in two halves, so d must be even and at least 4 "
                    "(choose a factory)");
    int opq_m = 1, pq_m = 1;
    for (int k : divisors(d))
        if (4 * k <= d) opq_m = k;
    // The divisor nearest d/10; ascending order plus "<=" keeps the larger one on a tie.
    for (int k : divisors(d))
        if (std::abs(10 * k - d) <= std::abs(10 * pq_m - d)) pq_m = k;
    return "OPQ" + std::to_string(opq_m) + "_" + std::to_string(d) + ",Residual2x14,PQ" + std::to_string(pq_m) + "x10";
}

VqCodec::VqCodec(int d, const std::string& factory) : factory_(factory) {
    if (d < 1) throw Error(where() + ": dimension " + std::to_string(d) + " is not positive");
    try {
        index_.reset(faiss::index_factory(d, factory.c_str()));
    } catch (const faiss::FaissException& e) {
        // The paper writes "OPQ20x80-Residual2x14-PQ8x10"; FAISS 1.7.3 wants "OPQ20_80,Residual2x14,PQ8x10".
        const std::string hint = factory.find('-') != std::string::npos
                                     ? " (FAISS separates the parts with commas and writes OPQ<M>_<d>: OPQ20_80,Residual2x14,PQ8x10)"
                                     : "";
        throw Error(where() + ": FAISS cannot build it for " + std::to_string(d) + "-dimensional vectors: " + faiss_reason(e) +
                    hint);
    }
    faiss::Index* inner = index_.get();
    if (auto* pre = dynamic_cast<faiss::IndexPreTransform*>(inner)) {
        if (pre->chain.size() != 1)
            throw Error(where() + ": " + std::to_string(pre->chain.size()) +
                        " pre-transforms; VQ_DECODE undoes exactly one rotation");
        rotation_ = dynamic_cast<faiss::LinearTransform*>(pre->chain[0]);
        if (!rotation_) throw Error(where() + ": its pre-transform is not a linear map (VQ_DECODE undoes a rotation)");
        // A bias is known now; orthonormality only once trained (checked by train()).
        if (rotation_->have_bias)
            throw Error(where() + ": its pre-transform has a bias (e.g. PCA's mean); only a rotation without bias "
                                  "can be undone by VQ_DECODE (use OPQ or RR)");
        inner = pre->index;
    }
    two_layer_ = dynamic_cast<faiss::Index2Layer*>(inner);
    if (!two_layer_)
        throw Error(where() + ": FAISS builds no Index2Layer from it; the memory codec is "
                              "\"[OPQ<M>_<d>,]Residual<Mc>x<bc>,PQ<Mp>x<bp>\" (e.g. " +
                    default_factory(d % 2 == 0 && d >= 4 ? d : 80) + ")");
    coarse_ = dynamic_cast<faiss::MultiIndexQuantizer*>(two_layer_->q1.quantizer);
    if (!coarse_) throw Error(where() + ": the coarse quantizer is not a MultiIndexQuantizer (Residual<Mc>x<bc>)");
    const uint32_t mc = coarse_m(), bc = coarse_nbits(), bp = pq_nbits();
    if (bc < 1 || bc > kMaxBits || bp < 1 || bp > kMaxBits)
        throw Error(where() + ": " + std::to_string(bc) + "-bit coarse and " + std::to_string(bp) +
                    "-bit PQ indices; VQ_DECODE decodes 1..16 bits per index");
    if (mc * bc > kMaxCoarseBits)
        throw Error(where() + ": coarse codes of " + std::to_string(mc) + " x " + std::to_string(bc) +
                    " bits; VQ_DECODE reads at most 32 bits of coarse code");
}

VqCodec::~VqCodec() = default;

std::string VqCodec::where() const { return "codec '" + factory_ + "'"; }
int VqCodec::dim() const { return index_->d; }
size_t VqCodec::code_size() const { return index_->sa_code_size(); }
uint32_t VqCodec::coarse_m() const { return static_cast<uint32_t>(coarse_->pq.M); }
uint32_t VqCodec::coarse_nbits() const { return static_cast<uint32_t>(coarse_->pq.nbits); }
uint32_t VqCodec::pq_m() const { return static_cast<uint32_t>(two_layer_->pq.M); }
uint32_t VqCodec::pq_nbits() const { return static_cast<uint32_t>(two_layer_->pq.nbits); }
bool VqCodec::trained() const { return index_->is_trained; }

size_t VqCodec::min_training_vectors() const {
    size_t need = std::max(size_t{1} << coarse_nbits(), size_t{1} << pq_nbits());
    if (dynamic_cast<const faiss::OPQMatrix*>(rotation_)) need = std::max(need, kOpqCentroids);
    return need;
}

size_t VqCodec::recommended_training_vectors() const { return kFaissPointsPerCentroid * min_training_vectors(); }

std::string VqCodec::smaller_factory_for(size_t n) const {
    const bool opq = dynamic_cast<const faiss::OPQMatrix*>(rotation_) != nullptr;
    if (n < 2 || (opq && n < kOpqCentroids)) return "";
    uint32_t bits = 0;  // floor(log2(n)): 2^bits <= n
    while (bits < kMaxBits && (size_t{2} << bits) <= n) ++bits;
    // The factory's last two parts are "Residual..." and "PQ..." (an Index2Layer was built from
    // them); whatever precedes them (the rotation) is kept as written.
    const size_t pq_at = factory_.rfind(',');
    const size_t res_at = pq_at == std::string::npos || pq_at == 0 ? std::string::npos : factory_.rfind(',', pq_at - 1);
    const std::string prefix = res_at == std::string::npos ? "" : factory_.substr(0, res_at + 1);
    return prefix + "Residual" + std::to_string(coarse_m()) + "x" + std::to_string(std::min(coarse_nbits(), bits)) + ",PQ" +
           std::to_string(pq_m()) + "x" + std::to_string(std::min(pq_nbits(), bits));
}

}  // namespace mnemo::kb
