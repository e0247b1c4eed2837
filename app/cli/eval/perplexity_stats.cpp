#include "eval/perplexity_stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace mnemo::cli {

void log_softmax(const float* logits, int32_t vocab, std::vector<double>& out) {
    out.resize(static_cast<size_t>(vocab));
    double mx = -std::numeric_limits<double>::infinity();
    for (int32_t v = 0; v < vocab; ++v) mx = std::max(mx, double{logits[v]});
    double sum = 0;
    for (int32_t v = 0; v < vocab; ++v) sum += std::exp(double{logits[v]} - mx);
    const double lse = mx + std::log(sum);
    for (int32_t v = 0; v < vocab; ++v) out[v] = double{logits[v]} - lse;
}

int32_t argmax(const std::vector<double>& v) {
    return static_cast<int32_t>(std::max_element(v.begin(), v.end()) - v.begin());
}

void PerplexityStats::add(double nll) {
    ++n_;
    sum_ += nll;
    sum2_ += nll * nll;
}

double PerplexityStats::mean_nll() const { return n_ ? sum_ / static_cast<double>(n_) : 0.0; }

double PerplexityStats::ppl() const { return std::exp(mean_nll()); }

double PerplexityStats::ppl_error() const {
    if (n_ < 2) return 0.0;
    const double m = mean_nll();
    const double var = sum2_ / static_cast<double>(n_) - m * m;  // population variance of the NLL
    if (var <= 0) return 0.0;
    // d exp(m) = exp(m) dm, with dm the standard error of the mean (as llama.cpp computes it).
    return ppl() * std::sqrt(var / static_cast<double>(n_ - 1));
}

void KlStats::add(const std::vector<double>& base_lp, const std::vector<double>& model_lp, int32_t token) {
    const size_t n = base_lp.size();
    double mx = -std::numeric_limits<double>::infinity();
    for (const double v : base_lp) mx = std::max(mx, v);
    double sum = 0;
    for (const double v : base_lp) sum += std::exp(v - mx);
    const double lse = mx + std::log(sum);
    double kl = 0;
    for (size_t v = 0; v < n; ++v) {
        const double lb = base_lp[v] - lse;
        const double pb = std::exp(lb);
        if (pb > 0) kl += pb * (lb - model_lp[v]);
    }
    kl_.push_back(std::max(kl, 0.0));  // >= 0 mathematically; a rounding -1e-17 is 0
    // Same top token: the model's first is (one of) the base's first. Rounding a stored row keeps
    // the order of its values but can make the top two equal; then either counts as the base's.
    if (base_lp[static_cast<size_t>(argmax(model_lp))] >= mx) ++same_top_;
    const double base_tok = base_lp[static_cast<size_t>(token)] - lse;
    const double dp = std::exp(model_lp[static_cast<size_t>(token)]) - std::exp(base_tok);
    sum_dp2_ += dp * dp;
    sum_dp4_ += dp * dp * dp * dp;
    base_.add(-base_tok);
}

double quantile(std::vector<double> values, double q) {
    if (values.empty()) return 0.0;
    std::sort(values.begin(), values.end());
    const double pos = q * static_cast<double>(values.size() - 1);
    const size_t lo = static_cast<size_t>(std::floor(pos));
    const size_t hi = std::min(lo + 1, values.size() - 1);
    return values[lo] + (pos - static_cast<double>(lo)) * (values[hi] - values[lo]);
}

KlSummary KlStats::summary() const {
    KlSummary s;
    s.count = kl_.size();
    if (s.count == 0) return s;
    const double n = static_cast<double>(s.count);
    s.mean = std::accumulate(kl_.begin(), kl_.end(), 0.0) / n;
    double sum2 = 0;
    for (const double k : kl_) sum2 += k * k;
    if (s.count > 1) s.mean_error = std::sqrt(std::max(0.0, sum2 / n - s.mean * s.mean) / (n - 1));
    s.median = quantile(kl_, 0.5);
    s.p99 = quantile(kl_, 0.99);
    s.max = *std::max_element(kl_.begin(), kl_.end());
    const double p = static_cast<double>(same_top_) / n;
    s.same_top_pct = 100.0 * p;
    if (s.count > 1) s.same_top_error_pct = 100.0 * std::sqrt(p * (1 - p) / (n - 1));
    const double ms = sum_dp2_ / n;  // mean of dp^2
    s.rms_dp_pct = 100.0 * std::sqrt(ms);
    // Error of sqrt(ms) from the standard error of the mean of dp^2: d sqrt(x) = dx / (2 sqrt(x)).
    if (s.count > 1 && ms > 0) {
        const double var = std::max(0.0, sum_dp4_ / n - ms * ms);
        s.rms_dp_error_pct = 100.0 * std::sqrt(var / (n - 1)) / (2 * std::sqrt(ms));
    }
    s.base_ppl = base_.ppl();
    return s;
}

}  // namespace mnemo::cli
