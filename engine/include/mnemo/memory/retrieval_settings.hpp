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

#include <cstddef>
#include <string>
#include <vector>

#include "mnemo/api.hpp"

namespace mnemo {

// Throws mnemo::Error (naming `what`) unless 0 <= ratio <= 1. 0 keeps every reference.
MNEMO_API void check_min_relative_score(double ratio, const std::string& what);

// ", min relative score 0.7" for a source's describe(); "" for 0.
MNEMO_API std::string relative_cut_suffix(double ratio);

// How many of a best-first ranking to keep: those scoring at least `ratio` times the best score.
// A best score <= 0 (e.g. a cosine ranking with no positive match) cuts nothing: a ratio of a
// non-positive score orders nothing.
template <typename Ranking, typename ScoreOf>
size_t count_near_best(const Ranking& best_first, double ratio, ScoreOf score_of) {
    if (best_first.empty() || ratio <= 0) return best_first.size();
    const double best = static_cast<double>(score_of(best_first.front()));
    if (!(best > 0)) return best_first.size();
    size_t n = 1;
    while (n < best_first.size() && static_cast<double>(score_of(best_first[n])) >= ratio * best) ++n;
    return n;
}

// What a model folder's generation_config.json recommends under "mnemo_retrieval" (written by the
// tool that trained it, e.g. tools/train/export.py): {"mode": "bm25", "min_relative_score": 0.7}.
// A field that is absent is empty / 0 here; the caller's own default then applies.
struct RetrievalAdvice {
    std::string mode;               // "vector" | "bm25" | "hybrid" | "" (no advice)
    double min_relative_score = 0;  // 0: no cut
    bool has_min_relative_score = false;
};
// Reads MODEL_DIR/generation_config.json; no such file or no "mnemo_retrieval" object gives no advice. Throws mnemo::Error
// naming the file and field when the object is malformed (a mode outside the three, a ratio
// outside [0, 1]).
MNEMO_API RetrievalAdvice recommended_retrieval(const std::string& model_dir);

}  // namespace mnemo
