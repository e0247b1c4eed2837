// Token sampling and stop-string matching (see sampling.hpp for the order of the steps).
#include "mnemo/session/sampling.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "mnemo/error.hpp"

namespace mnemo {

namespace {

using Candidate = std::pair<float, int32_t>;

// Higher logit first; equal logits keep the lower id first so results never depend on the
// sort's internal order.
bool better(const Candidate& a, const Candidate& b) {
    if (a.first != b.first) return a.first > b.first;
    return a.second < b.second;
}

// A uniform double in [0, 1) from the top 53 bits: the same stream on every standard library
// (std::uniform_real_distribution is not specified bit-for-bit across implementations).
double uniform01(std::mt19937_64& rng) {
    return static_cast<double>(rng() >> 11) * (1.0 / 9007199254740992.0);
}

// CTRL-style penalty (as in llama.cpp): a token seen in the window becomes less likely whatever
// the sign of its logit. Each distinct token is penalised once, however often it occurred.
void apply_repetition_penalty(std::vector<Candidate>& cand, const std::vector<int32_t>& history,
                              float penalty, int32_t last_n) {
    if (penalty == 1.0f || last_n == 0 || history.empty()) return;
    const size_t n = history.size();
    const size_t window = last_n < 0 ? n : std::min(n, static_cast<size_t>(last_n));
    const size_t begin = n - window;
    for (size_t i = begin; i < n; ++i) {
        const int32_t id = history[i];
        if (id < 0 || static_cast<size_t>(id) >= cand.size()) continue;
        // Only the last occurrence in the window applies the penalty; a linear scan keeps the
        // sampler allocation-free (windows are short: tens to a few hundred tokens).
        bool seen_later = false;
        for (size_t j = i + 1; j < n; ++j) {
            if (history[j] == id) { seen_later = true; break; }
        }
        if (seen_later) continue;
        float& logit = cand[static_cast<size_t>(id)].first;
        logit = logit > 0.0f ? logit / penalty : logit * penalty;
    }
}

}  // namespace

NonFiniteLogits::NonFiniteLogits(int32_t token, float value)
    : Error("the model produced " + std::string(std::isnan(value) ? "a NaN" : "an infinite") + " logit (token " +
            std::to_string(token) + "): its weights or activations are not finite"),
      token(token),
      value(value) {}

Sampler::Sampler(const SamplingParams& p) : p_(p), rng_(p.seed) {}

int32_t Sampler::sample(const float* logits, int32_t vocab, const std::vector<int32_t>& history) {
    if (logits == nullptr || vocab <= 0) {
        throw Error("sampler: expected logits for a vocabulary of at least 1 token, got " +
                    std::to_string(vocab));
    }
    const size_t nv = static_cast<size_t>(vocab);
    if (cand_.size() != nv) cand_.resize(nv);  // allocates only when the vocab size changes
    for (size_t i = 0; i < nv; ++i) {
        const float l = logits[i];
        // NaN or infinity means the forward pass broke (all-NaN embeddings make every logit NaN):
        // whatever token came out would be noise presented as an answer.
        if (!std::isfinite(l)) throw NonFiniteLogits(static_cast<int32_t>(i), l);
        cand_[i] = {l, static_cast<int32_t>(i)};
    }
    apply_repetition_penalty(cand_, history, p_.repeat_penalty, p_.repeat_last_n);

    if (p_.temperature <= 0.0f) {
        size_t best = 0;
        for (size_t i = 1; i < nv; ++i) {
            if (cand_[i].first > cand_[best].first) best = i;  // strict: ties keep the lower id
        }
        return cand_[best].second;
    }

    // Top-k: the k best in order at the front; the rest are dropped.
    size_t n = nv;
    bool sorted = false;
    if (p_.top_k > 0 && static_cast<size_t>(p_.top_k) < n) {
        n = static_cast<size_t>(p_.top_k);
        std::partial_sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(n),
                          cand_.end(), better);
        sorted = true;
    }

    const bool use_top_p = p_.top_p < 1.0f;
    if (use_top_p && !sorted) {
        std::sort(cand_.begin(), cand_.begin() + static_cast<std::ptrdiff_t>(n), better);
        sorted = true;
    }

    // Probabilities for top-p and min-p are taken at temperature 1 over the remaining candidates
    // (temperature comes last): p_i = exp(l_i - l_max) / sum.
    float l_max = -std::numeric_limits<float>::infinity();
    for (size_t i = 0; i < n; ++i) l_max = std::max(l_max, cand_[i].first);

    if (use_top_p) {
        double total = 0.0;
        for (size_t i = 0; i < n; ++i) total += std::exp(static_cast<double>(cand_[i].first - l_max));
        const double target = static_cast<double>(std::max(p_.top_p, 0.0f)) * total;
        double cum = 0.0;
        size_t keep = n;
        for (size_t i = 0; i < n; ++i) {
            cum += std::exp(static_cast<double>(cand_[i].first - l_max));
            if (cum >= target) { keep = i + 1; break; }  // smallest prefix reaching top_p
        }
        n = std::max<size_t>(keep, 1);
    }

    if (p_.min_p > 0.0f) {
        // p_i >= min_p * p_max  <=>  l_i - l_max >= log(min_p); compacting keeps the order.
        const double floor = std::log(static_cast<double>(p_.min_p));
        size_t kept = 0;
        for (size_t i = 0; i < n; ++i) {
            if (static_cast<double>(cand_[i].first - l_max) >= floor) cand_[kept++] = cand_[i];
        }
        n = std::max<size_t>(kept, 1);  // the maximum always survives (min_p <= 1)
    }

    // Temperature, then one draw from the renormalised distribution.
    const double inv_t = 1.0 / static_cast<double>(p_.temperature);
    double total = 0.0;
    for (size_t i = 0; i < n; ++i) total += std::exp(static_cast<double>(cand_[i].first - l_max) * inv_t);
    const double u = uniform01(rng_) * total;
    double cum = 0.0;
    for (size_t i = 0; i < n; ++i) {
        cum += std::exp(static_cast<double>(cand_[i].first - l_max) * inv_t);
        if (u < cum) return cand_[i].second;
    }
    // Rounding can leave u just above the final sum: the last candidate with weight wins.
    for (size_t i = n; i-- > 0;) {
        if (std::isfinite(cand_[i].first)) return cand_[i].second;
    }
    return cand_[0].second;
}

std::string StopMatcher::push(const std::string& text) {
    if (stopped_) return {};
    held_ += text;

    // Earliest complete stop string: everything before it is shown, the rest is dropped.
    size_t stop_at = std::string::npos;
    for (const std::string& s : stops_) {
        if (s.empty()) continue;
        const size_t pos = held_.find(s);
        if (pos < stop_at) stop_at = pos;
    }
    if (stop_at != std::string::npos) {
        std::string out = held_.substr(0, stop_at);
        held_.clear();
        stopped_ = true;
        return out;
    }

    // Hold back the longest tail that could still grow into a stop string.
    size_t hold = 0;
    for (const std::string& s : stops_) {
        const size_t max_len = std::min(held_.size(), s.size() - (s.empty() ? 0 : 1));
        for (size_t len = max_len; len > hold; --len) {
            if (held_.compare(held_.size() - len, len, s, 0, len) == 0) {
                hold = len;
                break;
            }
        }
    }
    std::string out = held_.substr(0, held_.size() - hold);
    held_.erase(0, held_.size() - hold);
    return out;
}

std::string StopMatcher::flush() {
    std::string out;
    out.swap(held_);
    return out;
}

}  // namespace mnemo
