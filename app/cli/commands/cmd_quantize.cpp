// `mnemo quantize IN OUT --type T`: a model folder written as one GGUF file with its weights in
// type T (mnemo/io/gguf_convert.hpp says which tensors keep a higher precision).
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

// Types llama.cpp users ask for that Mnemo cannot write yet, with what to use instead.
const char* not_yet(const std::string& t) {
    if (t == "q4_k_m" || t == "q4_k_s" || t == "q4_k" || t == "q5_k_m" || t == "q5_k_s" || t == "q5_k" || t == "q6_k")
        return "Mnemo reads K-quant files (Q4_K, Q5_K, Q6_K, e.g. made by llama.cpp's llama-quantize) but does not write them yet; "
               "use q8_0 or q4_0, or llama-quantize on a GGUF that `mnemo quantize --type f16` writes";
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
    app::ArgParser p("quantize", "mnemo quantize IN OUT --type TYPE [--threads N]",
                     "Write the model folder IN as the GGUF file OUT with its weights in TYPE: f32, f16, bf16, q8_0 or q4_0. "
                     "1-D tensors stay f32; with q4_0 the output head is q8_0. OUT is written whole or not at all.");
    std::string type_name;
    int32_t threads = 0;
    p.string_opt("--type", "TYPE", "weight type: f32, f16, bf16, q8_0, q4_0", &type_name)
        .int_opt("-t,--threads", "N", "threads that quantize (default: all cores)", &threads, 0, 4096);
    // IN and OUT come first, before the options (or --help alone).
    if (argc >= 3 && (std::strcmp(argv[2], "--help") == 0 || std::strcmp(argv[2], "-h") == 0)) {
        p.parse(argc, argv, 2);
        return 0;
    }
    if (argc < 4 || argv[2][0] == '-' || argv[3][0] == '-') throw app::UsageError("expected IN and OUT first: mnemo quantize IN OUT --type TYPE");
    const std::string in = argv[2], out = argv[3];
    if (!p.parse(argc, argv, 4)) return 0;
    if (type_name.empty()) throw app::UsageError("--type is required (f32, f16, bf16, q8_0 or q4_0)");
    GgufConvertOptions o;
    if (!gguf_write_type_from_name(type_name, &o.type)) {
        if (const char* why = not_yet(type_name)) throw Error("--type " + type_name + ": " + why);
        throw app::UsageError("--type '" + printable(type_name, 40) + "' is not one of f32, f16, bf16, q8_0, q4_0");
    }
    o.threads = threads;
    o.progress = draw_progress;
    convert_to_gguf(in, out, o);
    std::fprintf(stderr, "wrote %s\n", printable(out).c_str());
    return 0;
}

}  // namespace mnemo::cli
