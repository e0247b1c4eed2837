// Fuzz target: arbitrary bytes as a base file of `mnemo perplexity` (app/cli/eval/logit_base_file.hpp).
// The parser must either accept the input or throw mnemo::Error. An accepted file must be exactly
// what its header says: the size matches, the counts are consistent, writing the header back gives
// the same bytes, and every row decodes to log-probabilities that are finite and at most ~0.
// Anything else, a crash or a sanitizer report is a bug.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "eval/logit_base_file.hpp"
#include "mnemo/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    using mnemo::cli::LogitBaseHeader;
    try {
        const LogitBaseHeader h = mnemo::cli::parse_logit_base_header(data, size, size, "fuzz.klb");
        if (h.file_bytes() != size || h.rows_per_chunk != h.n_ctx - 1 - h.first) std::abort();
        if (h.n_tokens != uint64_t{h.n_chunks} * h.n_ctx || h.first == 0 || h.vocab < 2) std::abort();
        const std::string again = mnemo::cli::logit_base_header_bytes(h);
        if (again.size() != LogitBaseHeader::kBytes || std::memcmp(again.data(), data, again.size()) != 0) std::abort();
        std::vector<double> lp;
        for (uint64_t r = 0; r < h.rows(); ++r) {
            mnemo::cli::decode_logit_base_row(data + LogitBaseHeader::kBytes + r * h.row_bytes(), h.vocab, r, "fuzz.klb", lp);
            if (lp.size() != h.vocab) std::abort();
            for (const double v : lp)
                if (!std::isfinite(v) || v > 1e-3) std::abort();
            // A decoded row encodes to a row that decodes to the same values within half a step.
            const std::string row = mnemo::cli::encode_logit_base_row(lp);
            std::vector<double> back;
            mnemo::cli::decode_logit_base_row(reinterpret_cast<const uint8_t*>(row.data()), h.vocab, r, "re-encoded", back);
            double lo = 0, hi = -1e300;
            for (const double v : lp) lo = std::min(lo, v), hi = std::max(hi, v);
            const double tol = (std::min(hi, 0.0) - lo) / 65535.0 + 1e-6 * std::fabs(lo) + 1e-9;
            for (uint32_t v = 0; v < h.vocab; ++v)
                if (std::fabs(back[v] - std::min(lp[v], 0.0)) > tol) std::abort();
        }
    } catch (const mnemo::Error&) {
        // Rejected input: the expected outcome for most fuzz inputs.
    }
    return 0;
}
