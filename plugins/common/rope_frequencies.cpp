#include "rope_frequencies.hpp"

#include <cmath>

namespace mnemo::llama {

std::vector<float> rope_inverse_frequencies(int64_t d, double theta, const RopeScaling& s) {
    const double pi = 3.14159265358979323846;
    std::vector<float> out(static_cast<size_t>(d / 2));
    for (int64_t j = 0; j < d / 2; ++j) {
        double f = 1.0 / std::pow(theta, static_cast<double>(2 * j) / static_cast<double>(d));
        if (s.type == "linear") {
            f /= s.factor;  // position interpolation: every frequency slowed by the same factor
        } else if (s.type == "llama3") {
            // Llama 3.1: long wavelengths (low frequencies) are interpolated by `factor`, short
            // ones kept, and the band between blended linearly in 1/wavelength.
            const double low_wavelen = s.original_max_positions / s.low_freq_factor;
            const double high_wavelen = s.original_max_positions / s.high_freq_factor;
            const double wavelen = 2.0 * pi / f;
            if (wavelen > low_wavelen) {
                f /= s.factor;
            } else if (wavelen >= high_wavelen) {
                const double smooth = (s.original_max_positions / wavelen - s.low_freq_factor) /
                                      (s.high_freq_factor - s.low_freq_factor);
                f = (1.0 - smooth) * f / s.factor + smooth * f;
            }
        }
        if (!s.freq_factors.empty()) f /= s.freq_factors[static_cast<size_t>(j)];
        out[static_cast<size_t>(j)] = static_cast<float>(f);
    }
    return out;
}

}  // namespace mnemo::llama
