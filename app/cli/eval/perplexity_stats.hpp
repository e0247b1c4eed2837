// The numbers `mnemo perplexity` reports, with the same definitions as llama.cpp's perplexity
// tool so the two can be compared: perplexity exp(mean NLL) with the standard error of the mean
// NLL carried through exp; and, against a base model's log-probabilities, KL(base || model) per
// position (mean with its standard error, median, 99th percentile, maximum), how often both put
// the same token first, and the RMS of the change in the probability of the actual next token.
// All arithmetic is in double; tools/reference/perplexity_ref.py is the independent reference.
#pragma once

#include <cstdint>
#include <vector>

namespace mnemo::cli {

// Log-softmax of one row of logits, in double.
void log_softmax(const float* logits, int32_t vocab, std::vector<double>& out);

// Index of the largest value (the first one on ties).
int32_t argmax(const std::vector<double>& v);

class PerplexityStats {
public:
    void add(double nll);
    uint64_t count() const { return n_; }
    double mean_nll() const;
    double ppl() const;
    // ppl * standard error of the mean NLL (first order), 0 with fewer than two values.
    double ppl_error() const;

private:
    uint64_t n_ = 0;
    double sum_ = 0, sum2_ = 0;
};

struct KlSummary {
    uint64_t count = 0;
    double mean = 0, mean_error = 0;
    double median = 0, p99 = 0, max = 0;
    double same_top_pct = 0, same_top_error_pct = 0;
    double rms_dp_pct = 0, rms_dp_error_pct = 0;
    double base_ppl = 0;  // perplexity of the base's log-probabilities on the same tokens
};

class KlStats {
public:
    // One position: both rows are log-probabilities over the vocabulary; `token` is the actual
    // next token. The base row is renormalised first (a stored row is rounded, see
    // logit_base_file.hpp), so a model against its own base gives KL ~ 0, not rounding noise,
    // and a tie the rounding made at the top counts as agreement.
    void add(const std::vector<double>& base_lp, const std::vector<double>& model_lp, int32_t token);
    KlSummary summary() const;

private:
    std::vector<double> kl_;
    uint64_t same_top_ = 0;
    double sum_dp2_ = 0, sum_dp4_ = 0;
    PerplexityStats base_;
    std::vector<double> scratch_;
};

// The q-quantile (0..1) of the values by linear interpolation between sorted neighbours.
double quantile(std::vector<double> values, double q);

}  // namespace mnemo::cli
