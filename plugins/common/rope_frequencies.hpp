// RoPE inverse frequencies, including the frequency-dependent rescaling of Llama 3.1+.
#pragma once

#include <vector>

#include "llama_config.hpp"

namespace mnemo::llama {

// inv_freq[j] = theta^(-2j/d) for j < d/2, then rescaled as the config's rope_scaling says.
std::vector<float> rope_inverse_frequencies(int64_t rotary_dims, double theta, const RopeScaling& scaling);

}  // namespace mnemo::llama
