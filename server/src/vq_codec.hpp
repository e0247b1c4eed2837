// A FAISS vector-quantisation codec of the one shape the engine's VQ_DECODE op decodes:
// [orthonormal linear map, e.g. OPQ ->] Index2Layer(MultiIndexQuantizer coarse, PQ residual), the
// factory strings "OPQ<M>_<d>,Residual<Mc>x<bc>,PQ<Mp>x<bp>" (tools/reference/vq_codec.py is the
// numpy reference of the same codec, and its docstring the derivation).
//
// FAISS trains and encodes; codebook() exports the arrays in the canonical form the device
// checks and decodes (mnemo/memory/vq_codebook.hpp). Every FAISS exception leaves as a mnemo::Error
// naming the factory string.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "mnemo/memory/vq_codebook.hpp"

namespace faiss {
struct Index;
struct LinearTransform;
struct Index2Layer;
struct MultiIndexQuantizer;
}  // namespace faiss

namespace mnemo::kb {

// The paper's codec ("OPQ20_80,Residual2x14,PQ8x10" at d = 80) adapted to head dimension d, the
// rule of vq_codec.py's default_factory: OPQ with d/4 sub-spaces (the largest divisor of d not
// above d/4), Residual2x14, PQ<m>x10 with m the divisor of d nearest d/10 (the larger on a tie).
std::string default_factory(int d);

// FAISS's k-means prints a warning below this many points per centroid; fewer still trains.
constexpr size_t kFaissPointsPerCentroid = 39;

struct TrainOptions {
    // 0 keeps FAISS's defaults. opq_iterations: OPQ's outer rounds (50). kmeans_iterations: the
    // coarse and PQ k-means (25 each) and OPQ's first-round PQ (40). Fewer: faster, worse codec.
    int opq_iterations = 0;
    int kmeans_iterations = 0;
    // FAISS writes its warnings with fprintf(stderr); quiet silences file descriptor 2 while it
    // trains (the caller reports counts itself).
    bool quiet = true;
};

class VqCodec {
public:
    // An untrained codec for d-dimensional vectors. Throws mnemo::Error when FAISS cannot parse
    // `factory`, or when it builds something VQ_DECODE cannot decode (another index type, a
    // transform with a bias, more than 16 bits per index, coarse codes wider than 32 bits).
    VqCodec(int d, const std::string& factory);
    // A trained codec rebuilt from its exported codebook (a bank's, to encode new memories with
    // the codec its old ones use). Its codebook() hashes back to cb.sha256, or this throws.
    static std::unique_ptr<VqCodec> from_codebook(const VqCodebook& cb);
    ~VqCodec();
    VqCodec(const VqCodec&) = delete;
    VqCodec& operator=(const VqCodec&) = delete;

    const std::string& factory() const { return factory_; }
    int dim() const;
    size_t code_size() const;  // bytes per vector (FAISS sa_code_size)
    uint32_t coarse_m() const;
    uint32_t coarse_nbits() const;
    uint32_t pq_m() const;
    uint32_t pq_nbits() const;
    bool trained() const;

    // The fewest vectors FAISS trains this codec on: each k-means needs a point per centroid
    // (2^bc coarse, 2^bp PQ, and 256 for OPQ's own 8-bit PQ).
    size_t min_training_vectors() const;
    // What FAISS asks for: kFaissPointsPerCentroid per centroid of its largest k-means.
    size_t recommended_training_vectors() const;
    // The factory with the Residual/PQ bit widths lowered so that n vectors can train it, for the
    // error message of too small a training set ("" when lowering bits would not be enough).
    std::string smaller_factory_for(size_t n) const;

    // Trains on n row-major vectors. Too few vectors is an Error naming the count needed and a
    // smaller factory; afterwards the rotation must be orthonormal (FAISS's sa_decode needs it).
    void train(const float* x, size_t n, const TrainOptions& options);
    // FAISS sa_encode: n rows of code_size() bytes.
    std::vector<uint8_t> encode(const float* x, size_t n) const;
    // FAISS sa_decode: n rows of dim() floats.
    std::vector<float> decode(const uint8_t* codes, size_t n) const;
    // The trained codec's arrays, canonical bytes hashed (sha256 set) and re-parsed, so that what
    // leaves here is exactly what the device will accept.
    VqCodebook codebook() const;

private:
    std::string where() const;  // "codec 'F'" for messages

    std::string factory_;
    std::unique_ptr<faiss::Index> index_;
    faiss::LinearTransform* rotation_ = nullptr;    // inside index_, or nullptr
    faiss::Index2Layer* two_layer_ = nullptr;       // inside index_
    faiss::MultiIndexQuantizer* coarse_ = nullptr;  // two_layer_'s first level
};

}  // namespace mnemo::kb
