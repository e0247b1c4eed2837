// How a model's chunks look for memories beyond the mode: the relative score cut, and the
// retrieval a model folder recommends for itself.
//
// The relative score cut trades recall for precision. A lexical ranking of one-fact references
// puts, after the entity's own facts, facts of entities whose names share pieces with it
// ("Mousairt Staitriox" next to "Quear Mousaim"); a small model reading five memories then copies
// the look-alike's value about as often as a person skimming would. Leaving out every reference
// that scores below `ratio` times the best one drops those near misses and keeps the references
// that match the whole query. The memory folder and the knowledge server apply it alike (the
// server after its own ranking, so the same references come back either way).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "mnemo/api.hpp"

namespace mnemo {

// Throws mnemo::Error (naming `what`) unless 0 <= ratio <= 1. 0 keeps every reference.
MNEMO_API void check_min_relative_score(double ratio, const std::string& what);
// Throws mnemo::Error (naming `what`) unless 0 <= n <= kMaxMinReferences.
constexpr int64_t kMaxMinReferences = 1000;
MNEMO_API void check_min_references(int64_t n, const std::string& what);

// ", min relative score 0.7, at least 3 kept" for a source's describe(); "" for no cut.
MNEMO_API std::string relative_cut_suffix(double ratio, uint32_t min_references = 0);

// How many of a best-first ranking to keep: those scoring at least `ratio` times the best score,
// and never fewer than the best `min_references` (or all, if fewer). The floor is what keeps a
// small corpus answerable: among a handful of references BM25's length normalisation can put an
// entity's own fact below the ratio of its shorter sibling, and the cut is meant for the long tail
// of look-alikes, not for the few best matches. A best score <= 0 (e.g. a cosine ranking with no
// positive match) cuts nothing: a ratio of a non-positive score orders nothing.
template <typename Ranking, typename ScoreOf>
size_t count_near_best(const Ranking& best_first, double ratio, uint32_t min_references, ScoreOf score_of) {
    if (best_first.empty() || ratio <= 0) return best_first.size();
    const double best = static_cast<double>(score_of(best_first.front()));
    if (!(best > 0)) return best_first.size();
    size_t n = 1;
    while (n < best_first.size() && static_cast<double>(score_of(best_first[n])) >= ratio * best) ++n;
    return std::max(n, std::min<size_t>(min_references, best_first.size()));
}

// What a model folder's generation_config.json recommends under "mnemo_retrieval" (written by the
// tool that trained it, e.g. tools/train/export.py):
// {"mode": "bm25", "min_relative_score": 0.8, "min_references": 3}.
// A field that is absent is empty / 0 here; the caller's own default then applies.
struct RetrievalAdvice {
    std::string mode;               // "vector" | "bm25" | "hybrid" | "" (no advice)
    double min_relative_score = 0;  // 0: no cut
    bool has_min_relative_score = false;
    uint32_t min_references = 0;    // the cut's floor (count_near_best); 0: none
    bool has_min_references = false;
};
// Reads MODEL_DIR/generation_config.json; no such file or no "mnemo_retrieval" object gives no advice. Throws mnemo::Error
// naming the file and field when the object is malformed (a mode outside the three, a ratio
// outside [0, 1], a floor that is not a whole number in [0, 1000]).
MNEMO_API RetrievalAdvice recommended_retrieval(const std::string& model_dir);

}  // namespace mnemo
