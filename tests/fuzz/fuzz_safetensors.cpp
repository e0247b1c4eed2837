// Fuzz target: arbitrary bytes as a whole safetensors file image. The header parser must either
// accept the input (and then every entry must lie inside the data section) or throw mnemo::Error;
// any other exception, crash or sanitizer report is a bug.
#include <cstdint>
#include <cstdlib>

#include "mnemo/error.hpp"
#include "mnemo/io/safetensors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const mnemo::SafetensorsHeader h = mnemo::parse_safetensors_header(data, size, "fuzz.safetensors");
        // Re-check what the parser promises so a validation gap shows up as a crash.
        if (h.data_start != 8 + h.header_len || h.data_start > size) std::abort();
        for (const auto& e : h.entries) {
            if (e.begin > e.end || e.end > size - h.data_start) std::abort();
            uint64_t n = mnemo::dtype_size(e.dtype);
            for (const int64_t d : e.shape) {
                if (d < 0) std::abort();
                n *= static_cast<uint64_t>(d);
            }
            if (n != e.end - e.begin) std::abort();
            // Touch the first and last byte of each tensor: out of bounds would trip ASan.
            if (n > 0) {
                volatile uint8_t sink = data[h.data_start + e.begin] ^ data[h.data_start + e.end - 1];
                (void)sink;
            }
        }
    } catch (const mnemo::Error&) {
        // Rejected input: the expected outcome for most fuzz inputs.
    }
    return 0;
}
