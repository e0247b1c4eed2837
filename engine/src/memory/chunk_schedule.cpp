#include "memory/chunk_schedule.hpp"

#include <algorithm>
#include <string>
#include <utility>

#include "mnemo/error.hpp"

namespace mnemo::detail {

ChunkSchedule::Prompt ChunkSchedule::begin_prompt(int32_t seq, int64_t start, const std::vector<int32_t>& tokens,
                                                  const std::vector<int32_t>& segment_starts) {
    const size_t C = static_cast<size_t>(spec_.chunk_length);
    Seq& s = seqs_[static_cast<size_t>(seq)];
    // Each prompt chunk reads the memories its own text retrieves; a segment (a turn) starts a
    // chunk of its own, so no retrieval text mixes two turns.
    Prompt prompt;
    std::vector<ChunkText> chunks;
    size_t next_segment = 0;
    for (size_t i = 0; i < tokens.size();) {
        while (next_segment < segment_starts.size() && static_cast<size_t>(segment_starts[next_segment]) <= i) ++next_segment;
        size_t end = std::min(tokens.size(), i + C);
        if (next_segment < segment_starts.size()) end = std::min(end, static_cast<size_t>(segment_starts[next_segment]));
        prompt.chunk_begin.push_back(i);
        chunks.push_back({seq, std::vector<int32_t>(tokens.begin() + static_cast<long>(i), tokens.begin() + static_cast<long>(end))});
        i = end;
    }
    prompt.chunk_sets = retrieval_.retrieve(chunks, empty_);
    const auto& sets = prompt.chunk_sets;
    s.tokens.resize(static_cast<size_t>(start));
    s.tokens.insert(s.tokens.end(), tokens.begin(), tokens.end());
    s.gen_start = static_cast<int32_t>(start + static_cast<int64_t>(tokens.size()));
    s.prompt_last = sets.back();
    s.gen_chunk = -1;
    s.gen_set.reset();
    s.next_chunk = -1;
    s.next = ChunkText{};
    return prompt;
}

size_t ChunkSchedule::prompt_run(const Prompt& prompt, size_t begin, size_t end, size_t blocks) {
    run_sets_.clear();
    row_set_.clear();
    // The chunk of row `begin`, then one step at a time.
    size_t c = static_cast<size_t>(std::upper_bound(prompt.chunk_begin.begin(), prompt.chunk_begin.end(), begin) -
                                   prompt.chunk_begin.begin()) - 1;
    for (size_t i = begin; i < end; ++i) {
        while (c + 1 < prompt.chunk_begin.size() && prompt.chunk_begin[c + 1] <= i) ++c;
        const auto& set = prompt.chunk_sets[c];
        if (run_sets_.empty() || run_sets_.back() != set) {
            if (run_sets_.size() == blocks) return i;
            run_sets_.push_back(set);
        }
        row_set_.push_back(static_cast<int32_t>(run_sets_.size() - 1));
    }
    return end;
}

std::vector<int32_t> ChunkSchedule::generated_text(const Seq& s, int32_t k) const {
    const int64_t q0 = s.gen_start + static_cast<int64_t>(k - 1) * spec_.chunk_length;
    return std::vector<int32_t>(s.tokens.begin() + q0, s.tokens.begin() + q0 + spec_.chunk_length);
}

void ChunkSchedule::generated_run(const std::vector<BatchToken>& batch, size_t blocks) {
    const int64_t C = spec_.chunk_length;
    // Which generated chunk every row is in; chunk 0 keeps the last prompt chunk's memories,
    // chunk k >= 1 retrieves with the text of chunk k-1 (once, for every row of that chunk).
    row_chunk_.clear();
    std::vector<ChunkText> queries;                     // allocated only on a chunk boundary
    std::vector<std::pair<int32_t, int32_t>> query_of;  // (seq, chunk)
    for (const BatchToken& r : batch) {
        Seq& s = seqs_[static_cast<size_t>(r.seq)];
        if (s.tokens.size() <= static_cast<size_t>(r.pos)) s.tokens.resize(static_cast<size_t>(r.pos) + 1, 0);
        s.tokens[static_cast<size_t>(r.pos)] = r.token;
        const int32_t k = r.pos >= s.gen_start ? static_cast<int32_t>((r.pos - s.gen_start) / C) : 0;
        row_chunk_.push_back(k);
        if (k == 0 || k == s.gen_chunk) continue;
        bool queued = false;
        for (const auto& q : query_of) queued |= q.first == r.seq && q.second == k;
        if (queued) continue;
        ChunkText text{r.seq, generated_text(s, k)};
        // Announced a step ago: the same query, its vector already computed.
        if (s.next_chunk == k && s.next.tokens == text.tokens) text = std::move(s.next);
        if (s.next_chunk == k) s.next_chunk = -1;
        queries.push_back(std::move(text));
        query_of.emplace_back(r.seq, k);
    }
    if (!queries.empty()) {
        const auto got = retrieval_.retrieve(queries, empty_);
        for (size_t i = 0; i < got.size(); ++i) {
            Seq& s = seqs_[static_cast<size_t>(query_of[i].first)];
            s.gen_chunk = query_of[i].second;
            s.gen_set = got[i];
        }
    }
    run_sets_.clear();
    row_set_.clear();
    for (size_t i = 0; i < batch.size(); ++i) {
        const Seq& s = seqs_[static_cast<size_t>(batch[i].seq)];
        const std::shared_ptr<const MemorySet>& chosen = row_chunk_[i] == 0 ? s.prompt_last : s.gen_set;
        const std::shared_ptr<const MemorySet>& set = chosen ? chosen : empty_;
        auto it = std::find(run_sets_.begin(), run_sets_.end(), set);
        if (it == run_sets_.end()) it = run_sets_.insert(run_sets_.end(), set);
        row_set_.push_back(static_cast<int32_t>(it - run_sets_.begin()));
    }
    if (run_sets_.size() > blocks)
        throw Error("this batch reads " + std::to_string(run_sets_.size()) + " different memory sets, the model holds " +
                    std::to_string(blocks) + " blocks: decode fewer sequences at once");
    if (retrieval_.prefetches()) announce_next(batch);
}

void ChunkSchedule::announce_next(const std::vector<BatchToken>& batch) {
    const int64_t C = spec_.chunk_length;
    std::vector<ChunkText> next;  // allocated only when a row completes a chunk
    std::vector<int32_t> chunk_of;
    for (const BatchToken& r : batch) {
        const Seq& s = seqs_[static_cast<size_t>(r.seq)];
        const int64_t generated = static_cast<int64_t>(r.pos) - s.gen_start + 1;  // tokens up to this row
        if (generated <= 0 || generated % C != 0) continue;
        const int32_t k = static_cast<int32_t>(generated / C);  // the chunk this text will serve
        bool queued = s.next_chunk == k;
        for (size_t i = 0; i < next.size(); ++i) queued |= next[i].seq == r.seq && chunk_of[i] == k;
        if (queued) continue;
        next.push_back({r.seq, generated_text(s, k)});
        chunk_of.push_back(k);
    }
    if (next.empty()) return;
    retrieval_.announce(next);
    for (size_t i = 0; i < next.size(); ++i) {
        Seq& s = seqs_[static_cast<size_t>(next[i].seq)];
        s.next_chunk = chunk_of[i];
        s.next = std::move(next[i]);
    }
}

void ChunkSchedule::forget_memories() {
    for (Seq& s : seqs_) {
        s.prompt_last.reset();
        s.gen_set.reset();
        s.gen_chunk = -1;
        s.next_chunk = -1;
        s.next = ChunkText{};
    }
}

}  // namespace mnemo::detail
