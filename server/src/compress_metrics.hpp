// How much a codec loses, in the two measures `mnemo-kb compress` reports: the relative squared
// reconstruction error of the vectors, and the relative L2 error of attention outputs computed
// with decoded instead of exact keys and values (what the model actually consumes).
#pragma once

#include <cstddef>

namespace mnemo::kb {

// Sums over many vectors or outputs: ratio of sums, so large vectors weigh more.
struct ErrorSum {
    double diff_sq = 0;  // sum ||exact - approx||^2
    double ref_sq = 0;   // sum ||exact||^2
    double relative_sq() const;  // diff_sq / ref_sq (0 when both are 0)
    double relative_l2() const;  // sqrt(relative_sq())
};

// Adds `count` floats of exact and decoded vectors.
void add_reconstruction(ErrorSum& sum, const float* exact, const float* decoded, size_t count);

// One memory head of n kept slots: keys [n, d], values [n, dv], exact and decoded. The exact
// keys serve as queries q_i over the head's own slots: out_i = softmax(q_i K^T / sqrt(d)) V, once
// with (K, V) and once with (K_hat, V_hat); adds both outputs to `sum` (double arithmetic).
void add_attention_error(ErrorSum& sum, const float* k, const float* v, const float* k_hat, const float* v_hat, size_t n,
                         size_t d, size_t dv);

}  // namespace mnemo::kb
