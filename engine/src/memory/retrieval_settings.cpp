#include "mnemo/memory/retrieval_settings.hpp"

#include <cmath>
#include <cstdio>
#include <filesystem>

#include "mnemo/error.hpp"
#include "gguf/gguf_mnemo_arch.hpp"
#include "mnemo/io/gguf.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/kb/kb_source.hpp"

namespace mnemo {

void check_min_relative_score(double ratio, const std::string& what) {
    if (!std::isfinite(ratio) || ratio < 0 || ratio > 1)
        throw Error(what + ": the minimum relative score must be in [0, 1] (a fraction of the best reference's score), got " +
                    std::to_string(ratio));
}

void check_min_references(int64_t n, const std::string& what) {
    if (n < 0 || n > kMaxMinReferences)
        throw Error(what + ": the number of references the cut always keeps must be in [0, " + std::to_string(kMaxMinReferences) +
                    "], got " + std::to_string(n));
}

std::string relative_cut_suffix(double ratio, uint32_t min_references) {
    if (ratio <= 0) return "";  // no cut: the floor has nothing to hold up
    char buf[96];
    if (min_references > 0)
        std::snprintf(buf, sizeof buf, ", min relative score %g, at least %u kept", ratio, min_references);
    else
        std::snprintf(buf, sizeof buf, ", min relative score %g", ratio);
    return buf;
}

RetrievalAdvice recommended_retrieval(const std::string& model_dir) {
    // In generation_config.json, not config.json: it is a default for running the model, like the
    // sampling defaults there, and config.json is part of the model's fingerprint (retuning the cut
    // must not orphan every memory bank made for the model).
    // A GGUF model carries its generation_config.json as a string key (docs/gguf.md).
    RetrievalAdvice a;
    json::Value config;
    std::string path;
    if (looks_like_gguf(model_dir)) {
        const GgufFile f(model_dir);
        const std::string key(detail::kGgufMnemoGenerationConfigKey);
        if (!f.has(key)) return a;
        path = model_dir + ": key '" + key + "'";
        config = json::parse(f.get_string(key), path);
    } else {
        const std::filesystem::path file = std::filesystem::path(model_dir) / "generation_config.json";
        if (!std::filesystem::exists(file)) return a;
        path = file.string();
        config = json::parse_file(path);
    }
    const json::Value* r = config.find("mnemo_retrieval");
    if (!r) return a;
    const std::string where = path + ": mnemo_retrieval";
    if (!r->is_object()) throw Error(where + " must be an object like {\"mode\": \"bm25\", \"min_relative_score\": 0.7}");
    if (const json::Value* mode = r->find("mode")) {
        const char* expected = ".mode must be \"vector\", \"bm25\" or \"hybrid\"";
        if (!mode->is_string()) throw Error(where + expected);
        try {
            kb_retrieval_from_name(mode->as_string());  // the one list of mode names
        } catch (const Error&) {
            throw Error(where + expected + ", got \"" + mode->as_string() + "\"");
        }
        a.mode = mode->as_string();
    }
    if (const json::Value* cut = r->find("min_relative_score")) {
        if (!cut->is_number()) throw Error(where + ".min_relative_score must be a number in [0, 1]");
        a.min_relative_score = cut->as_double();
        check_min_relative_score(a.min_relative_score, where + ".min_relative_score");
        a.has_min_relative_score = true;
    }
    if (const json::Value* min_refs = r->find("min_references")) {
        const char* expected = ".min_references must be a whole number in [0, 1000]";
        if (!min_refs->is_number()) throw Error(where + expected);
        const double n = min_refs->as_double();
        if (!(n >= 0 && n <= static_cast<double>(kMaxMinReferences)) || n != std::floor(n))
            throw Error(where + expected + ", got " + min_refs->dump());
        a.min_references = static_cast<uint32_t>(n);
        a.has_min_references = true;
    }
    return a;
}

}  // namespace mnemo
