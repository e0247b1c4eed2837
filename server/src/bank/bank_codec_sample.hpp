// The codec's training set for a build too large to hold: a uniform random sample of the corpus's
// valid key/value slots, drawn while the memories stream past once (reservoir sampling, Vitter's
// Algorithm R), so that RAM holds the sample and never the corpus. A slot is one (memory, layer,
// kv head, token) position with token < n_valid; its key trains the key codec and its value the
// value codec, so both codecs see the same slots.
//
// Deterministic: the random numbers come from std::mt19937_64 (whose sequence the C++ standard
// fixes) with a fixed seed, and the draws from its raw output (never a std:: distribution, whose
// algorithm is the library's choice), so the same corpus gives the same sample on every machine and
// on a resumed run. While fewer slots than the capacity have been offered the sample is every slot in
// the order offered, i.e. exactly what training on all memories used before sampling existed:
// banks whose corpus fits in the sample are built bit for bit as they were.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>
#include <vector>

#include "mnemo/memory/explicit_memory.hpp"

namespace mnemo::kb {

class VqCodec;

// The seed of every build's sample (BankBuildOptions::codec_sample_seed's default).
constexpr uint64_t kCodecSampleSeed = 0x6d6e656d6f2d6b62ull;  // "mnemo-kb"

// The sample a build draws unless told otherwise: kDefaultCodecSample vectors, or what FAISS asks
// for to train the larger of the two codecs when that is more (kFaissPointsPerCentroid per
// centroid of its largest k-means: 1,277,952 for Residual2x15), at most kMaxDefaultCodecSample.
// 2^20 covers FAISS's recommendation for every factory up to 2^14 centroids (638,976 for the
// paper's Residual2x14) and four times what FAISS's k-means itself keeps of a larger set for a
// 2^10 codec (256 per centroid); a corpus of up to 2^20 valid slots (16,384 references of the
// default model, the shipped bank's 8,400 among them) trains on every vector, as before sampling.
// RAM: 2^20 x (head_dim + value_dim) x 4 bytes (256 MiB at 32 + 32).
constexpr size_t kDefaultCodecSample = size_t{1} << 20;
constexpr size_t kMaxDefaultCodecSample = size_t{1} << 22;
size_t default_codec_sample(const VqCodec& keys, const VqCodec& values);

class CodecSample {
public:
    // At most `capacity` slots (> 0) of memories of `spec`'s shape.
    CodecSample(const MemorySpec& spec, size_t capacity, uint64_t seed = kCodecSampleSeed);

    // Offers every valid slot of `m` (an f32 memory of the spec's shape; throws otherwise).
    void add(const ExplicitMemory& m);

    size_t capacity() const { return capacity_; }
    uint64_t offered() const { return offered_; }  // valid slots seen so far
    size_t size() const { return size_; }          // min(offered, capacity)
    // size() rows of head_dim (keys) and value_dim (values) floats, row i of both the same slot.
    const std::vector<float>& keys() const { return keys_; }
    const std::vector<float>& values() const { return values_; }

private:
    void offer(const float* key, const float* value);
    uint64_t below(uint64_t n);  // uniform in [0, n)

    size_t capacity_;
    size_t heads_, keep_, dk_, dv_;
    std::mt19937_64 rng_;
    uint64_t offered_ = 0;
    size_t size_ = 0;
    std::vector<float> keys_, values_;
};

}  // namespace mnemo::kb
