#include "bank_codec_fit.hpp"

#include <cstdio>

namespace mnemo::kb {

CodecFitFigures codec_fit_figures(const CodecFit& fit, uint64_t records) {
    return {fit.keys.relative_sq(), fit.values.relative_sq(), records};
}

std::optional<std::string> codec_drift_note(const CodecFitFigures& trained, const CodecFitFigures& added) {
    if (trained.keys <= 0 || trained.values <= 0 || added.records == 0) return std::nullopt;
    const double rk = added.keys / trained.keys, rv = added.values / trained.values;
    if (rk < kCodecDriftRatio && rv < kCodecDriftRatio) return std::nullopt;
    char buf[768];
    std::snprintf(buf, sizeof buf,
                  "the codec reconstructs the %llu new records worse than the %llu it was trained on: keys %.2fx (relative error "
                  "%.3g vs %.3g), values %.2fx (%.3g vs %.3g); answers that read them may be less accurate than answers from the "
                  "rest of the bank. Build the bank again from the whole corpus (`mnemo-kb build`), so that its codec is trained on "
                  "these documents too (server/README.md, \"Codec fit\")",
                  static_cast<unsigned long long>(added.records), static_cast<unsigned long long>(trained.records), rk, added.keys,
                  trained.keys, rv, added.values, trained.values);
    return std::string(buf);
}

}  // namespace mnemo::kb
