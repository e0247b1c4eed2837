// Fuzz target: arbitrary bytes as a VQ codebook file (format 1, mnemo/memory/vq_codebook.hpp). The parser
// must either accept the input or throw mnemo::Error. An accepted codebook must be exactly what its
// bytes say: arrays sized by the header, every value finite, and to_bytes() giving back the input
// byte for byte (the format is canonical, so the hash names one codebook). Anything else, a crash
// or a sanitizer report is a bug.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "mnemo/error.hpp"
#include "io/sha256.hpp"
#include "mnemo/memory/vq_codebook.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const mnemo::VqCodebook cb = mnemo::parse_vq_codebook(data, size, "fuzz.mvqc", "");
        if (cb.d_out == 0 || cb.coarse_m == 0 || cb.pq_m == 0 || cb.d_out % cb.coarse_m || cb.d_out % cb.pq_m) std::abort();
        if (cb.coarse_nbits < 1 || cb.coarse_nbits > 16 || cb.pq_nbits < 1 || cb.pq_nbits > 16) std::abort();
        if (uint64_t{cb.coarse_m} * cb.coarse_nbits > 32) std::abort();
        const uint64_t rotation = cb.has_rotation() ? uint64_t{cb.d_out} * cb.d_in : 0;
        if (!cb.has_rotation() && cb.d_in != cb.d_out) std::abort();
        if (cb.rotation.size() != rotation || cb.coarse.size() != (uint64_t{cb.d_out} << cb.coarse_nbits) ||
            cb.pq.size() != (uint64_t{cb.d_out} << cb.pq_nbits))
            std::abort();
        for (const std::vector<float>* a : {&cb.rotation, &cb.coarse, &cb.pq})
            for (float f : *a)
                if (!std::isfinite(f)) std::abort();
        const std::vector<uint8_t> again = cb.to_bytes();
        if (again.size() != size || std::memcmp(again.data(), data, size) != 0) std::abort();
        if (cb.sha256 != mnemo::sha256_hex(data, size)) std::abort();
        // What a reader that sees only the header (the knowledge-server client) concludes: the
        // same size, and never more than the bound for the decoded dimension.
        if (mnemo::vq_codebook_bytes(data, mnemo::VqCodebook::kHeaderBytes, "fuzz.mvqc") != size) std::abort();
        if (cb.d_out <= 2 * uint64_t{cb.d_in} && size > mnemo::vq_codebook_max_bytes(cb.d_in)) std::abort();
        // The bytes' own hash must pass the hash check.
        try {
            mnemo::parse_vq_codebook(data, size, "fuzz.mvqc", cb.sha256);
        } catch (const mnemo::Error&) {
            std::abort();
        }
    } catch (const mnemo::Error&) {
        // Rejected input: the expected outcome for most fuzz inputs.
    }
    return 0;
}
