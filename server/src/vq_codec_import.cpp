// VqCodec::from_codebook: the inverse of codebook(). FAISS builds the empty index of the same
// shape from a factory string, and the arrays go into it as FAISS's training would have left
// them; the round trip through codebook() proves nothing was lost.
#include <faiss/Index2Layer.h>
#include <faiss/IndexPQ.h>
#include <faiss/IndexPreTransform.h>
#include <faiss/VectorTransform.h>

#include "mnemo/error.hpp"
#include "vq_codec.hpp"

namespace mnemo::kb {

std::unique_ptr<VqCodec> VqCodec::from_codebook(const VqCodebook& cb) {
    // OPQ's M only matters while training; 1 fits every d_out. Any orthonormal A decodes alike.
    const std::string factory = (cb.has_rotation() ? "OPQ1_" + std::to_string(cb.d_out) + "," : std::string()) + "Residual" +
                                std::to_string(cb.coarse_m) + "x" + std::to_string(cb.coarse_nbits) + ",PQ" +
                                std::to_string(cb.pq_m) + "x" + std::to_string(cb.pq_nbits);
    auto c = std::make_unique<VqCodec>(static_cast<int>(cb.d_in), factory);
    const std::string where = "codebook " + cb.sha256.substr(0, 16) + " as '" + factory + "'";
    if (c->rotation_) {
        if (c->rotation_->d_in != static_cast<int>(cb.d_in) || c->rotation_->d_out != static_cast<int>(cb.d_out))
            throw Error(where + ": FAISS built a " + std::to_string(c->rotation_->d_in) + " -> " + std::to_string(c->rotation_->d_out) +
                        " rotation");
        c->rotation_->A = cb.rotation;
        c->rotation_->is_trained = true;
        c->rotation_->set_is_orthonormal();
        if (!c->rotation_->is_orthonormal) throw Error(where + ": the rotation is not orthonormal");
    }
    if (c->coarse_->pq.centroids.size() != cb.coarse.size() || c->two_layer_->pq.centroids.size() != cb.pq.size())
        throw Error(where + ": FAISS's centroid tables do not have the codebook's sizes");
    c->coarse_->pq.centroids = cb.coarse;
    c->coarse_->is_trained = true;
    c->coarse_->ntotal = faiss::Index::idx_t{1} << (cb.coarse_m * cb.coarse_nbits);
    c->two_layer_->pq.centroids = cb.pq;
    c->two_layer_->is_trained = true;
    c->index_->is_trained = true;
    if (c->codebook().sha256 != cb.sha256) throw Error(where + ": the rebuilt codec exports other bytes than it was given");
    return c;
}

}  // namespace mnemo::kb
