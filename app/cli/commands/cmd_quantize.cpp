// `mnemo quantize IN OUT --type T`: a model folder or GGUF file written as one GGUF file in the
// mix T (mnemo/io/gguf_convert.hpp and docs/gguf.md say which tensors keep a higher precision).
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "commands.hpp"
#include "common.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/gguf_convert.hpp"
#include "mnemo/io/printable.hpp"

namespace mnemo::cli {
namespace {

// Names llama.cpp users may try that Mnemo does not write, with the reason.
const char* not_written(const std::string& t) {
    if (t == "q4_k" || t == "q5_k") return "name the mix: q4_k_s / q4_k_m (or q5_k_s / q5_k_m), as llama-quantize does";
    if (t == "q2_k" || t.starts_with("q3_k") || t.starts_with("iq") || t == "q4_1" || t == "q5_0" || t == "q5_1" || t.starts_with("tq"))
        return "Mnemo reads and writes only the types of its mixes; llama-quantize writes this one from a GGUF that `mnemo quantize` writes";
    return nullptr;
}

void draw_progress(size_t done, size_t total, const std::string& name) {
    const int width = 30;
    const int filled = total ? static_cast<int>(width * done / total) : width;
    if (isatty(STDERR_FILENO)) {
        std::fprintf(stderr, "\r[%.*s%*s] %zu/%zu %-40.40s", filled, "##############################", width - filled, "", done, total,
                     printable(name, 40).c_str());
        if (done == total) std::fprintf(stderr, "\n");
    } else if (done == total || done % 50 == 0) {
        std::fprintf(stderr, "quantize: %zu/%zu tensors\n", done, total);
    }
}

}  // namespace

int cmd_quantize(int argc, char** argv) {
    const std::string types = gguf_mix_names();
    app::ArgParser p("quantize", "mnemo quantize IN OUT --type TYPE [--threads N] [--allow-requantize]",
                     "Write the model folder or GGUF file IN as the GGUF file OUT in the mix TYPE: " + types +
                         ". 1-D tensors stay f32; the output head keeps q6_k (q8_0 with q8_0); the _m mixes keep attn_v and "
                         "ffn_down at q6_k on a third of the layers, as llama.cpp does (docs/gguf.md, \"Mixes\"). A GGUF IN that "
                         "holds quantized tensors needs --allow-requantize. OUT is written whole or not at all.");
    std::string type_name;
    int32_t threads = 0;
    bool allow_requantize = false;
    p.string_opt("--type", "TYPE", "mix: " + types, &type_name)
        .int_opt("-t,--threads", "N", "threads that quantize (default: all cores)", &threads, 0, 4096)
        .flag("--allow-requantize", "allow a quantized GGUF IN (quality is lost: say so, then do it)", &allow_requantize);
    // IN and OUT come first, before the options (or --help alone).
    if (argc >= 3 && (std::strcmp(argv[2], "--help") == 0 || std::strcmp(argv[2], "-h") == 0)) {
        p.parse(argc, argv, 2);
        return 0;
    }
    if (argc < 4 || argv[2][0] == '-' || argv[3][0] == '-') throw app::UsageError("expected IN and OUT first: mnemo quantize IN OUT --type TYPE");
    const std::string in = argv[2], out = argv[3];
    if (!p.parse(argc, argv, 4)) return 0;
    if (type_name.empty()) throw app::UsageError("--type is required (" + types + ")");
    GgufConvertOptions o;
    GgufMix mix;
    if (!gguf_mix_from_name(type_name, &mix)) {
        const std::string accepted = "accepted: " + types;
        if (const char* why = not_written(type_name)) throw app::UsageError("--type " + type_name + " cannot be written: " + why + "; " + accepted);
        throw app::UsageError("--type '" + printable(type_name, 40) + "' is not a mix Mnemo writes; " + accepted);
    }
    o.mix = mix;
    o.allow_requantize = allow_requantize;
    o.warn = [](const std::string& w) { std::fprintf(stderr, "warning: %s\n", printable(w, 400).c_str()); };
    o.threads = threads;
    o.progress = draw_progress;
    convert_to_gguf(in, out, o);
    std::fprintf(stderr, "wrote %s\n", printable(out).c_str());
    return 0;
}

}  // namespace mnemo::cli
