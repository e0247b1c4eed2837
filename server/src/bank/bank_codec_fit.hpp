// Whether a bank's codec fits the memories `add` encodes with it. The codec (Memory3 §3.3's
// vector quantisation) is trained once, by `build`, on that corpus's memories; `add` reuses it,
// so documents unlike the training corpus are encoded with codebooks that never saw their kind of
// vector. Measured on the default model's bank: 520 documents naming places and firms of English
// make ("Port Elleshaven") reconstruct 2.5x worse in their keys and 1.7x in their values than the
// world's own memories (170 corrected world documents: 1.09x and 1.06x), and questions about
// them are answered 41.7 % of the time from this bank, 46.5 % from a bank built with them (its
// codec trained on them too), 48.1 % from uncompressed memories (server/README.md, "Codec fit").
// So `add` compares the error of what it encoded with the error the codec had on its training
// corpus and says when to rebuild; nothing is refused: a worse codec still serves.
#pragma once

#include <optional>
#include <string>

#include "bank_format.hpp"
#include "compress.hpp"

namespace mnemo::kb {

// An error this many times the training corpus's (keys or values) is worth a rebuild: between
// the 1.06-1.09x of documents like the corpus and the 1.7-2.5x that cost 4.8 points of accuracy.
constexpr double kCodecDriftRatio = 1.5;

CodecFitFigures codec_fit_figures(const CodecFit& fit, uint64_t records);

// The note `add` prints when `added` (its new records) reconstruct at least kCodecDriftRatio times
// worse than the memories the codec was trained on (`trained`, the manifest's fit), in keys or in
// values; nullopt when they do not, or when the training error is 0 (nothing to compare with).
std::optional<std::string> codec_drift_note(const CodecFitFigures& trained, const CodecFitFigures& added);

}  // namespace mnemo::kb
