// `mnemo logits`: run a token sequence through the model and save the logits of every position
// as float32 [T, vocab] .npy (for comparisons against reference implementations).
#include <cmath>
#include <cstdio>

#include "commands.hpp"
#include "common.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/npy.hpp"

namespace mnemo::cli {

int cmd_logits(int argc, char** argv) {
    ModelFlags model;
    std::vector<int32_t> ids;
    std::string out;
    bool allow_nonfinite = false;

    app::ArgParser p("logits", "mnemo logits [-m DIR] --ids 1,2,3 --out FILE.npy [options]",
                     "Feed the token ids to sequence 0 and write the logits of every position as a float32\n"
                     "array of shape [T, vocab].");
    add_model_flags(p, model);
    p.custom_opt("--ids", "LIST", "comma-separated token ids (required)", [&](const std::string& v) {
         ids.clear();
         const auto items = app::split(v, ',');
         for (size_t i = 0; i < items.size(); ++i) {
             ids.push_back(static_cast<int32_t>(
                 app::parse_int(items[i], "--ids item " + std::to_string(i), 0, INT32_MAX)));
         }
     })
        .string_opt("-o,--out", "FILE", "output .npy file (required)", &out)
        .flag("--allow-nonfinite", "write the file even when some logits are NaN or Inf (to look at a broken model)",
              &allow_nonfinite);
    if (!p.parse(argc, argv, 2)) return 0;
    if (!p.given("--ids")) throw app::UsageError("missing --ids LIST");
    if (out.empty()) throw app::UsageError("missing --out FILE.npy");

    const std::string dir = resolve_model_dir(model);
    const auto session = open_session(session_options(model, dir));
    const int32_t vocab = session->vocab_size();
    for (size_t i = 0; i < ids.size(); ++i) {
        if (ids[i] >= vocab) {
            throw Error("--ids: id " + std::to_string(ids[i]) + " at position " + std::to_string(i) +
                        " is outside the vocabulary (" + std::to_string(vocab) + " tokens)");
        }
    }
    if (static_cast<int64_t>(ids.size()) > session->n_ctx()) {
        throw Error("--ids has " + std::to_string(ids.size()) + " tokens but the context holds " +
                    std::to_string(session->n_ctx()) + " (-c)");
    }
    const std::vector<float>& logits = session->append(0, ids, /*all_logits=*/true);
    const uint64_t expected = static_cast<uint64_t>(ids.size()) * static_cast<uint64_t>(vocab);
    if (logits.size() != expected) {
        throw Error("the session returned " + std::to_string(logits.size()) + " logits, expected " +
                    std::to_string(ids.size()) + " x " + std::to_string(vocab));
    }
    // A comparison against a reference would read NaN/Inf as data; say where they start instead
    // (as run, chat and bench do), unless asked to keep them.
    size_t bad = 0, first_bad = 0;
    for (size_t i = 0; i < logits.size(); ++i)
        if (!std::isfinite(logits[i]) && bad++ == 0) first_bad = i;
    if (bad > 0 && !allow_nonfinite) {
        const float v = logits[first_bad];
        throw Error("the model produced NaN/Inf logits at position " + std::to_string(first_bad / static_cast<size_t>(vocab)) +
                    " (token " + std::to_string(first_bad % static_cast<size_t>(vocab)) + " is " +
                    (std::isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf") + "; " + std::to_string(bad) + " of " +
                    std::to_string(logits.size()) + " logits are not finite): its weights or activations are not finite; " +
                    out + " was not written (--allow-nonfinite writes it anyway)");
    }
    if (bad > 0)
        std::fprintf(stderr, "mnemo: warning: %zu of %zu logits are NaN or Inf (from position %zu)\n", bad, logits.size(),
                     first_bad / static_cast<size_t>(vocab));
    write_npy_f32(out, logits.data(), {static_cast<int64_t>(ids.size()), vocab});
    std::fprintf(stderr, "wrote %s: [%zu, %d] float32\n", out.c_str(), ids.size(), vocab);
    return 0;
}

}  // namespace mnemo::cli
