// Writing with the model (Memory3 §3.3), through ENCODE graphs on the session's device: the
// memories of references, the retrieval vectors of texts (references and query chunks alike),
// and the prefix (reference BOS) keys and values that open every memory block.
#pragma once

#include <cstdint>
#include <vector>

#include "memory/memory_host.hpp"
#include "memory/memory_layout.hpp"

namespace mnemo::detail {

class MemoryWriter {
public:
    MemoryWriter(const MemoryLayout& layout, MemoryHost& host, MemoryStats& stats)
        : layout_(layout), host_(host), stats_(stats) {}

    // References (token ids, 1..reference_length each) into memories, encode_sequences at a time.
    std::vector<WrittenMemory> write(const std::vector<std::vector<int32_t>>& references);
    // The mean hidden state after retrieval_layer layers over each text's tokens, L2-normalised.
    std::vector<std::vector<float>> retrieval_vectors(const std::vector<std::vector<int32_t>>& texts);

    // Per layer, the prefix's keys and values as a block lays them out, [kv_heads, n_prefix, dim]
    // at positions -b..-1: "the new constant for all attention heads" (§3.2), one plain causal
    // pass over the prefix ids. Empty arrays when the prefix is.
    struct Prefix {
        std::vector<std::vector<float>> k, v;
    };
    Prefix encode_prefix();

private:
    // Rows of texts [first, last) as ENCODE lays them out: sequence i - first holds the prefix
    // ids at positions 0..b-1, then the text. Throws for a text outside 1..reference_length
    // tokens, naming it "reference <i>" (`references`) or "a retrieval text".
    std::vector<BatchToken> text_rows(const std::vector<std::vector<int32_t>>& texts, size_t first, size_t last,
                                      bool references) const;

    const MemoryLayout& layout_;
    MemoryHost& host_;
    MemoryStats& stats_;
};

}  // namespace mnemo::detail
