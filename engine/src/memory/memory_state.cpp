#include "memory/memory_state.hpp"

namespace mnemo::detail {

MemoryState::MemoryState(const mnemo_memory_spec& declared, int64_t n_layers, int32_t n_seq, MemoryHost& host)
    : layout_(derive_memory_layout(declared, n_layers, host)),
      writer_(layout_, host, stats_),
      blocks_(layout_, host, stats_, writer_.encode_prefix()),
      retrieval_(layout_, writer_, stats_),
      schedule_(layout_.spec, n_seq, retrieval_, blocks_.empty()) {}

void MemoryState::set_source(std::shared_ptr<MemorySource> source) {
    blocks_.set_codec(source ? source->codec() : nullptr);
    retrieval_.set_source(std::move(source));
    // Blocks filled from the old source would be reused by id: forget them.
    blocks_.forget();
    schedule_.forget_memories();
}

size_t MemoryState::bind_prompt_run(const Prompt& prompt, size_t begin, size_t end, std::vector<int32_t>& block_input) {
    end = schedule_.prompt_run(prompt, begin, end, blocks_.blocks());
    blocks_.bind(schedule_.run_sets(), schedule_.row_set(), block_input);
    return end;
}

void MemoryState::bind_generated(const std::vector<BatchToken>& batch, std::vector<int32_t>& block_input) {
    schedule_.generated_run(batch, blocks_.blocks());
    blocks_.bind(schedule_.run_sets(), schedule_.row_set(), block_input);
}

}  // namespace mnemo::detail
