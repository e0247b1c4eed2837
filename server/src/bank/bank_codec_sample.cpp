#include "bank_codec_sample.hpp"

#include <algorithm>
#include <cstring>
#include <string>

#include "mnemo/error.hpp"
#include "vq_codec.hpp"

namespace mnemo::kb {

size_t default_codec_sample(const VqCodec& keys, const VqCodec& values) {
    return std::min(kMaxDefaultCodecSample,
                    std::max({kDefaultCodecSample, keys.recommended_training_vectors(), values.recommended_training_vectors()}));
}

CodecSample::CodecSample(const MemorySpec& spec, size_t capacity, uint64_t seed)
    : capacity_(capacity),
      heads_(spec.memory_layers.size() * static_cast<size_t>(spec.kv_heads)),
      keep_(static_cast<size_t>(spec.tokens_per_head)),
      dk_(static_cast<size_t>(spec.head_dim)),
      dv_(static_cast<size_t>(spec.value_dim)),
      rng_(seed) {
    if (capacity == 0) throw Error("codec sample: its size must be positive");
    // Reserved, not filled: pages a small corpus never reaches are never touched (nor resident).
    keys_.reserve(capacity * dk_);
    values_.reserve(capacity * dv_);
}

uint64_t CodecSample::below(uint64_t n) {
    // Rejection of the top (2^64 mod n) values keeps every residue equally likely.
    const uint64_t limit = -n % n;  // = 2^64 mod n
    uint64_t x = rng_();
    while (x < limit) x = rng_();
    return x % n;
}

void CodecSample::offer(const float* key, const float* value) {
    // Algorithm R: the first `capacity` slots fill the sample in order; slot t (0-based) after
    // that replaces a uniformly chosen one with probability capacity / (t + 1).
    const uint64_t t = offered_++;
    size_t at = 0;
    if (t < capacity_) {
        at = size_++;
        keys_.resize(size_ * dk_);
        values_.resize(size_ * dv_);
    } else {
        const uint64_t j = below(t + 1);
        if (j >= capacity_) return;
        at = static_cast<size_t>(j);
    }
    std::memcpy(keys_.data() + at * dk_, key, dk_ * sizeof(float));
    std::memcpy(values_.data() + at * dv_, value, dv_ * sizeof(float));
}

void CodecSample::add(const ExplicitMemory& m) {
    if (m.keys.size() != heads_ * keep_ * dk_ || m.values.size() != heads_ * keep_ * dv_)
        throw Error("codec sample: memory " + std::to_string(m.id) + " has " + std::to_string(m.keys.size()) + " key and " +
                    std::to_string(m.values.size()) + " value floats, the model's memories have " + std::to_string(heads_ * keep_ * dk_) +
                    " and " + std::to_string(heads_ * keep_ * dv_));
    // The order compress.cpp's training set has always had: head by head, slot by slot.
    const size_t used = std::min(static_cast<size_t>(std::max(m.n_valid, 0)), keep_);
    for (size_t h = 0; h < heads_; ++h)
        for (size_t s = 0; s < used; ++s) {
            const size_t slot = h * keep_ + s;
            offer(m.keys.data() + slot * dk_, m.values.data() + slot * dv_);
        }
}

}  // namespace mnemo::kb
