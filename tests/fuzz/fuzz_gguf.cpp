// Fuzz target: arbitrary bytes as a whole GGUF file image. parse_gguf must either accept the
// input (and then every tensor lies inside the data section, aligned, of the size its type and
// dimensions imply) or throw mnemo::Error; any other exception, crash or sanitizer report is a bug.
#include <cstdint>
#include <cstdlib>

#include "mnemo/error.hpp"
#include "mnemo/io/gguf.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const mnemo::GgufHeader h = mnemo::parse_gguf(data, size, "fuzz.gguf");
        if (h.alignment == 0 || (!h.tensors.empty() && (h.data_start % h.alignment != 0 || h.data_start > size))) std::abort();
        for (const auto& t : h.tensors) {
            const mnemo::GgmlTypeInfo* ti = mnemo::ggml_type_info(t.type);
            if (!ti || t.offset % h.alignment != 0 || t.offset + t.nbytes > size - h.data_start) std::abort();
            if (static_cast<uint64_t>(t.elements()) / ti->block_elems * ti->block_bytes != t.nbytes) std::abort();
            if (t.nbytes > 0) {  // first and last byte: out of bounds would trip ASan
                volatile uint8_t sink = data[h.data_start + t.offset] ^ data[h.data_start + t.offset + t.nbytes - 1];
                (void)sink;
            }
        }
    } catch (const mnemo::Error&) {
        // Rejected input: the expected outcome for most fuzz inputs.
    }
    return 0;
}
