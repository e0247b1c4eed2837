// The chunk schedule of Memory3 §3.1: which memories every row of a run reads. A prompt is cut
// into chunk_length chunks that each retrieve with their own text (restarting at every segment
// start the caller gives: a conversation's turns); generated tokens keep the
// last prompt chunk's memories for chunk_length tokens, then every generated chunk retrieves
// with the text of the one before. For a prefetching source, a generated chunk's query is
// announced in the step that completes its text, one step before it is asked.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "memory/chunk_retrieval.hpp"

namespace mnemo::detail {

class ChunkSchedule {
public:
    ChunkSchedule(const MemorySpec& spec, int32_t n_seq, ChunkRetrieval& retrieval, std::shared_ptr<const MemorySet> empty)
        : spec_(spec), retrieval_(retrieval), empty_(std::move(empty)), seqs_(static_cast<size_t>(n_seq)) {}

    // A prompt's chunks: where each begins (offsets into the prompt) and the memories it reads.
    struct Prompt {
        std::vector<size_t> chunk_begin;
        std::vector<std::shared_ptr<const MemorySet>> chunk_sets;
    };
    // The chunks of a prompt appended to `seq` at position `start`, each with its memories:
    // chunk_length tokens each, a new chunk at every offset of segment_starts.
    Prompt begin_prompt(int32_t seq, int64_t start, const std::vector<int32_t>& tokens,
                        const std::vector<int32_t>& segment_starts = {});
    // The sets of prompt rows [begin, end): the run stops before the first chunk that would
    // need more than `blocks` distinct sets. Returns its end.
    size_t prompt_run(const Prompt& prompt, size_t begin, size_t end, size_t blocks);
    // The sets of a batch of generated rows, retrieving where a row starts a new chunk. Throws
    // when the batch needs more than `blocks` distinct sets.
    void generated_run(const std::vector<BatchToken>& batch, size_t blocks);

    // After prompt_run / generated_run: the run's distinct sets, and the set of each row.
    const std::vector<std::shared_ptr<const MemorySet>>& run_sets() const { return run_sets_; }
    const std::vector<int32_t>& row_set() const { return row_set_; }

    void reset(int32_t seq) { seqs_[static_cast<size_t>(seq)] = Seq{}; }
    void reset_all() { std::fill(seqs_.begin(), seqs_.end(), Seq{}); }
    // A new source: positions stay, the memories (and announcements) of the old one go.
    void forget_memories();

private:
    struct Seq {
        std::vector<int32_t> tokens;  // the token fed at each position (query text of generated chunks)
        int32_t gen_start = 0;        // first position after the last prompt
        std::shared_ptr<const MemorySet> prompt_last;  // memories of the last prompt chunk
        int32_t gen_chunk = -1;       // generated chunk gen_set belongs to
        std::shared_ptr<const MemorySet> gen_set;
        int32_t next_chunk = -1;      // generated chunk whose query `next` announced
        ChunkText next;
    };
    // The query of generated chunk k >= 1 of `seq`: the text of chunk k - 1.
    std::vector<int32_t> generated_text(const Seq& s, int32_t k) const;
    // Announce the chunks whose text the rows of `batch` complete.
    void announce_next(const std::vector<BatchToken>& batch);

    const MemorySpec& spec_;
    ChunkRetrieval& retrieval_;
    std::shared_ptr<const MemorySet> empty_;
    std::vector<Seq> seqs_;
    // Scratch of one run, kept so that a decode step allocates nothing.
    std::vector<std::shared_ptr<const MemorySet>> run_sets_;
    std::vector<int32_t> row_set_, row_chunk_;
};

}  // namespace mnemo::detail
