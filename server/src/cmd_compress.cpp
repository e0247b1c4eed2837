// `mnemo-kb compress IN_FOLDER -o OUT_FOLDER`: the command line of compress_memory_folder, and
// its figures as text or (--json) as one JSON object on stdout.
#include <cstdio>
#include <string>

#include "app/args.hpp"
#include "app/json_writer.hpp"
#include "commands.hpp"
#include "compress.hpp"

namespace mnemo::kb {
namespace {

using app::JsonWriter;

void codec_json(JsonWriter& j, const CodecReport& c) {
    j.begin_object()
        .key("factory").value(c.factory)
        .key("sha256").value(c.sha256)
        .key("dim").value(static_cast<int64_t>(c.dim))
        .key("code_bytes").value(static_cast<int64_t>(c.code_bytes))
        .key("f16_bytes").value(static_cast<int64_t>(2 * c.dim))
        .key("ratio_vs_f16").value(c.ratio_vs_f16())
        .key("training_vectors").value(c.training_vectors)
        .key("encoded_vectors").value(c.encoded_vectors)
        .key("reconstruction_error").value(c.reconstruction_error)
        .key("decode_checked").value(c.decode_checked)
        .key("train_seconds").value(c.train_seconds)
        .end_object();
}

std::string report_json(const CompressOptions& o, const CompressReport& r) {
    JsonWriter j;
    j.begin_object().key("in").value(o.in_dir).key("out").value(o.out_dir).key("memories").value(r.memories);
    j.key("record_bytes").begin_object()
        .key("f32").value(r.record_bytes_f32)
        .key("vq").value(r.record_bytes_vq)
        .key("ratio").value(r.record_ratio())
        .end_object();
    j.key("keys");
    codec_json(j, r.keys);
    j.key("values");
    codec_json(j, r.values);
    j.key("attention_error").value(r.attention_error);
    j.key("notes").array(r.notes).end_object();
    return j.str();
}

void print_codec(const char* name, const CodecReport& c) {
    std::printf("  %-7s %s: %u B per vector vs %u B f16 (%.2fx); trained on %llu vectors in %.1f s; "
                "reconstruction error %.4g; codebook sha256 %.16s...\n",
                name, c.factory.c_str(), c.code_bytes, 2 * c.dim, c.ratio_vs_f16(),
                static_cast<unsigned long long>(c.training_vectors), c.train_seconds, c.reconstruction_error, c.sha256.c_str());
}

void print_report(const CompressOptions& o, const CompressReport& r) {
    std::printf("compressed %llu memories: '%s' -> '%s'\n", static_cast<unsigned long long>(r.memories), o.in_dir.c_str(),
                o.out_dir.c_str());
    print_codec("keys", r.keys);
    print_codec("values", r.values);
    std::printf("  record  %llu B f32 -> %llu B vq (%.2fx smaller)\n", static_cast<unsigned long long>(r.record_bytes_f32),
                static_cast<unsigned long long>(r.record_bytes_vq), r.record_ratio());
    std::printf("  attention-output error (relative L2, memory heads over their own slots): %.4g\n", r.attention_error);
    std::printf("  VQ_DECODE reference == FAISS sa_decode bit for bit on %llu key and %llu value codes\n",
                static_cast<unsigned long long>(r.keys.decode_checked), static_cast<unsigned long long>(r.values.decode_checked));
}

}  // namespace

int cmd_compress(int argc, char** argv) {
    CompressOptions o;
    std::string factory;
    bool json = false, verbose = false;
    int32_t decode_check = 512;
    app::ArgParser p(
        "compress", "mnemo-kb compress IN_FOLDER -o OUT_FOLDER [--factory F | --key-factory F --value-factory F] [options]",
        "Train one FAISS vector-quantisation codec on all keys and one on all values of an f32 memory folder (made by "
        "`mnemo memorize`), encode every memory, and write OUT_FOLDER with the codes and the codebooks. Prints the "
        "compression ratio, the reconstruction errors and the attention-output error.\n"
        "Factories have the form \"[OPQ<M>_<d>,]Residual<Mc>x<bc>,PQ<Mp>x<bp>\" (FAISS index_factory); the default is "
        "the paper's OPQ20_80,Residual2x14,PQ8x10 adapted to the head dimension, which needs at least 16384 vectors.");
    p.string_opt("-o,--out", "FOLDER", "the compressed memory folder to write (required)", &o.out_dir)
        .string_opt("--factory", "F", "the codec of keys and values", &factory)
        .string_opt("--key-factory", "F", "the codec of keys (default: the default factory)", &o.key_factory)
        .string_opt("--value-factory", "F", "the codec of values (default: the default factory)", &o.value_factory)
        .flag("--force", "replace OUT_FOLDER if it exists (the old one stays until the new one is complete)", &o.replace)
        .flag("--json", "print the figures as one JSON object", &json)
        .int_opt("--threads", "N", "threads FAISS uses (default: OpenMP's, all cores)", &o.threads, 1, 4096)
        .int_opt("--opq-iterations", "N", "OPQ training rounds (default: FAISS's 50)", &o.train.opq_iterations, 1, 100000)
        .int_opt("--kmeans-iterations", "N", "k-means iterations (default: FAISS's 25; 40 in OPQ's first round)",
                 &o.train.kmeans_iterations, 1, 100000)
        .int_opt("--decode-check", "N", "codes per codec decoded by VQ_DECODE's reference and compared bit for bit "
                                        "with FAISS (default: 512)",
                 &decode_check, 1, 1 << 30)
        .flag("--verbose", "progress lines and FAISS's own warnings on stderr", &verbose);
    // IN_FOLDER comes first; the parser itself takes options only.
    int first = 2;
    if (argc > 2 && argv[2][0] != '-') {
        o.in_dir = argv[2];
        first = 3;
    }
    if (!p.parse(argc, argv, first)) return 0;
    if (o.in_dir.empty()) throw app::UsageError("missing IN_FOLDER (the f32 memory folder, right after 'compress')");
    if (o.out_dir.empty()) throw app::UsageError("missing -o/--out FOLDER");
    if (!factory.empty()) {
        if (!o.key_factory.empty() || !o.value_factory.empty())
            throw app::UsageError("--factory sets both codecs; give it alone, or --key-factory/--value-factory");
        o.key_factory = o.value_factory = factory;
    }
    o.decode_check_rows = static_cast<size_t>(decode_check);
    o.train.quiet = !verbose;
    if (verbose) o.progress = [](const std::string& line) { std::fprintf(stderr, "mnemo-kb: %s\n", line.c_str()); };

    const CompressReport r = compress_memory_folder(o);
    if (json) {
        std::printf("%s\n", report_json(o, r).c_str());
    } else {
        print_report(o, r);
        for (const std::string& n : r.notes) std::printf("note: %s\n", n.c_str());
    }
    return 0;
}

}  // namespace mnemo::kb
