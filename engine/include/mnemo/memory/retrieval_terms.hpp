// What BM25 counts for a reference, in the memory folder (engine/src/memory/memory_folder.cpp) and
// in a knowledge server's bank (server/src/bank/bm25_index.hpp) alike: its document's title's
// token ids, then its own. A paragraph seldom repeats the name of what its document is about
// ("The town of Deahailart dates from 1619." names the town once, as does "Lainum Ciciort was
// born in Deahailart." of another document), so by its text alone a question naming the town
// ranks the other documents' mentions of it as high as the town's own facts, and a fact worded
// away from the question ("dates from" for "founded") loses to another entity's "was founded".
// Counting the title with each paragraph, as passage retrievers index "title + passage", puts a
// document's own paragraphs first when the question names what the document is about.
// A reference without title tokens (written before they were kept) is counted by its text alone.
#pragma once

#include <cstdint>
#include <vector>

namespace mnemo {

inline std::vector<int32_t> retrieval_terms(const std::vector<int32_t>& title_tokens, const std::vector<int32_t>& tokens) {
    std::vector<int32_t> terms;
    terms.reserve(title_tokens.size() + tokens.size());
    terms.insert(terms.end(), title_tokens.begin(), title_tokens.end());
    terms.insert(terms.end(), tokens.begin(), tokens.end());
    return terms;
}

}  // namespace mnemo
