// Hyper-parameters of a MIDUS-HML model (arXiv 2512.13751): a Llama backbone plus the memory
// fields of config.json. See docs/models/midus_hml.md for the fields and their defaults.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "llama_config.hpp"
#include "mnemo/plugin.hpp"

namespace mnemo::midus {

struct MidusConfig {
    llama::LlamaConfig base;
    // i_0 < ... < i_{D-1}: memory block M_j runs right before base block B_{i_j} (eq. 2 / 11).
    std::vector<int64_t> anchors;
    int64_t n_keys = 0;      // n sub-keys per side; N = n² composite keys per head
    int64_t topk = 0;        // k: k rows and k columns, then the k best of the k² pairs
    int64_t latent_dim = 0;  // r, width of the shared latent value bank (paper: r = d_h)
    int64_t head_half() const { return base.head_dim / 2; }  // d_p
};

// Reads and checks config.json; every error names the field and what was expected.
MidusConfig read_midus_config(const plugin::Host& host);

std::string describe(const MidusConfig& c);

}  // namespace mnemo::midus
