// Training a VqCodec with FAISS: the training-set size is checked first (FAISS's own error is a
// failed assertion deep inside k-means), iteration counts may be lowered, FAISS's stderr chatter
// is silenced, and the trained rotation must be one FAISS's sa_decode (and VQ_DECODE) can undo.
#include <faiss/Index2Layer.h>
#include <faiss/IndexPQ.h>
#include <faiss/VectorTransform.h>
#include <faiss/impl/FaissException.h>
#include <fcntl.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>

#include "faiss_error.hpp"
#include "mnemo/error.hpp"
#include "vq_codec.hpp"

namespace mnemo::kb {
namespace {

// File descriptor 2 pointed at /dev/null for the object's lifetime: FAISS's k-means warnings are
// fprintf(stderr) calls in C++, which no stream redirection above the descriptor catches.
class SilencedStderr {
public:
    explicit SilencedStderr(bool enabled) {
        if (!enabled) return;
        std::fflush(stderr);
        saved_ = ::dup(2);
        const int null = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (saved_ < 0 || null < 0 || ::dup2(null, 2) < 0) {  // then FAISS just stays audible
            if (null >= 0) ::close(null);
            if (saved_ >= 0) ::close(saved_);
            saved_ = -1;
            return;
        }
        ::close(null);
    }
    ~SilencedStderr() {
        if (saved_ < 0) return;
        std::fflush(stderr);
        ::dup2(saved_, 2);
        ::close(saved_);
    }
    SilencedStderr(const SilencedStderr&) = delete;
    SilencedStderr& operator=(const SilencedStderr&) = delete;

private:
    int saved_ = -1;
};

}  // namespace

void VqCodec::train(const float* x, size_t n, const TrainOptions& options) {
    const size_t need = min_training_vectors();
    if (n < need) {
        const std::string smaller = smaller_factory_for(n);
        throw Error(where() + ": " + std::to_string(n) + " training vectors, but FAISS's k-means needs at least " +
                    std::to_string(need) + " (one per centroid: 2^" + std::to_string(coarse_nbits()) + " coarse, 2^" +
                    std::to_string(pq_nbits()) + " PQ" +
                    (dynamic_cast<const faiss::OPQMatrix*>(rotation_) ? ", 256 for OPQ" : "") + "); " +
                    (smaller.empty() ? "write more memories first"
                                     : "use a smaller factory, e.g. '" + smaller + "', or write more memories"));
    }
    const size_t d = static_cast<size_t>(dim());
    for (size_t i = 0; i < n * d; ++i)
        if (!std::isfinite(x[i]))
            throw Error(where() + ": training vector " + std::to_string(i / d) + " holds a NaN or infinity");

    if (options.opq_iterations > 0 || options.kmeans_iterations > 0) {
        if (auto* opq = dynamic_cast<faiss::OPQMatrix*>(rotation_)) {
            if (options.opq_iterations > 0) opq->niter = options.opq_iterations;
            if (options.kmeans_iterations > 0) opq->niter_pq_0 = options.kmeans_iterations;
        }
        if (options.kmeans_iterations > 0) {
            coarse_->pq.cp.niter = options.kmeans_iterations;
            two_layer_->pq.cp.niter = options.kmeans_iterations;
        }
    }
    try {
        SilencedStderr quiet(options.quiet);
        index_->train(static_cast<faiss::Index::idx_t>(n), x);
    } catch (const faiss::FaissException& e) {
        throw Error(where() + ": FAISS training failed: " + faiss_reason(e));
    }
    // FAISS decodes through A^T only: anything but orthonormal rows would make sa_decode throw
    // and leave VQ_DECODE nothing to reproduce.
    if (rotation_ && !rotation_->is_orthonormal)
        throw Error(where() + ": the trained pre-transform is not orthonormal, so FAISS cannot decode through it "
                              "(use OPQ or RR)");
}

}  // namespace mnemo::kb
