// compress_memory_folder: read, train both codecs, encode in batches, check a sample against
// VQ_DECODE, measure, write. Keys and values go through the same steps, each with its own codec.
#include "compress.hpp"

#include <omp.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <memory>

#include "compress_metrics.hpp"
#include "decode_check.hpp"
#include "mnemo/error.hpp"
#include "mnemo/io/json.hpp"
#include "mnemo/memory/memory_folder.hpp"

namespace mnemo::kb {
namespace {

// Vectors encoded per FAISS call: large enough for its parallel loops, small enough that the
// batch copies stay a few MB whatever the folder's size...
constexpr size_t kBatchVectors = 65536;
// ...and that FAISS's own table stays small: MultiIndexQuantizer::search holds Mc x 2^bc distances
// per vector of a call (128 KiB each for Residual2x14: 65,536 vectors would take 8 GiB).
constexpr size_t kEncodeTableBytes = size_t{32} << 20;

size_t vectors_per_call(const VqCodec& c) {
    const size_t table = sizeof(float) * static_cast<size_t>(c.coarse_m()) << c.coarse_nbits();
    return std::clamp<size_t>(kEncodeTableBytes / std::max<size_t>(table, 1), 1, kBatchVectors);
}

// Where a memory's vectors are: [L_mem, Hkv, keep, dim] per memory; slot s of a head is used
// when s < n_valid.
struct Layout {
    size_t heads = 0;  // L_mem * Hkv
    size_t keep = 0;
    size_t slots() const { return heads * keep; }
};

const std::vector<float>& vectors_of(const WrittenMemory& w, bool values) {
    return values ? w.memory.values : w.memory.keys;
}

size_t used_slots(const ExplicitMemory& m, const Layout& lay) {
    return std::min(static_cast<size_t>(std::max(m.n_valid, 0)), lay.keep);
}

// The training set: every valid slot of every memory.
std::vector<float> valid_vectors(const std::vector<WrittenMemory>& mems, const Layout& lay, size_t dim, bool values) {
    std::vector<float> out;
    for (const WrittenMemory& w : mems) {
        const std::vector<float>& v = vectors_of(w, values);
        const size_t used = used_slots(w.memory, lay);
        for (size_t h = 0; h < lay.heads; ++h)
            out.insert(out.end(), v.begin() + static_cast<long>(h * lay.keep * dim),
                       v.begin() + static_cast<long>((h * lay.keep + used) * dim));
    }
    return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

uint64_t manifest_record_bytes(const std::string& dir) {
    const json::Value m = json::parse_file((std::filesystem::path(dir) / "manifest.json").string());
    const json::Value* r = m.find("record_bytes");
    if (!r || !r->is_integer() || r->as_int() <= 0) throw Error(dir + "/manifest.json: no positive integer 'record_bytes'");
    return static_cast<uint64_t>(r->as_int());
}

void say(const CompressOptions& o, const std::string& line) {
    if (o.progress) o.progress(line);
}

// Trains `codec` on n row-major vectors; fills the training part of `r`.
void train_codec(VqCodec& codec, const float* train, size_t n, bool values, const CompressOptions& o, CodecReport& r,
                 std::vector<std::string>& notes) {
    const char* what = values ? "value" : "key";
    const auto dim = static_cast<size_t>(codec.dim());
    r.training_vectors = n;
    if (r.training_vectors < codec.recommended_training_vectors())
        notes.push_back(std::string(what) + " codec: " + std::to_string(r.training_vectors) + " training vectors; FAISS " +
                        "recommends " + std::to_string(codec.recommended_training_vectors()) + " (" +
                        std::to_string(kFaissPointsPerCentroid) + " per centroid of its largest k-means), so the codec is " +
                        "weaker than it could be");
    say(o, std::string("training the ") + what + " codec '" + codec.factory() + "' on " + std::to_string(r.training_vectors) +
               " vectors of " + std::to_string(dim));
    const auto t0 = std::chrono::steady_clock::now();
    try {
        codec.train(train, n, o.train);
    } catch (const Error& e) {
        throw with_context(std::string(what) + "s", e);
    }
    r.train_seconds = seconds_since(t0);
}

// Every slot of every memory, memory-major: its code (code_size bytes) and that code decoded by
// FAISS (what the figures and the VQ_DECODE check compare with).
struct Encoded {
    std::vector<uint8_t> codes;
    std::vector<float> decoded;
};

Encoded encode_all(const VqCodec& codec, const std::vector<WrittenMemory>& mems, const Layout& lay, bool values) {
    const auto dim = static_cast<size_t>(codec.dim());
    const size_t per = lay.slots(), cs = codec.code_size();
    const size_t batch_mems = std::max<size_t>(1, vectors_per_call(codec) / std::max<size_t>(per, 1));
    Encoded e;
    e.codes.resize(mems.size() * per * cs);
    e.decoded.resize(mems.size() * per * dim);
    std::vector<float> batch;
    for (size_t first = 0; first < mems.size(); first += batch_mems) {
        const size_t last = std::min(mems.size(), first + batch_mems);
        batch.clear();
        for (size_t m = first; m < last; ++m) {
            const std::vector<float>& v = vectors_of(mems[m], values);
            batch.insert(batch.end(), v.begin(), v.end());
        }
        const size_t n = (last - first) * per;
        const std::vector<uint8_t> codes = codec.encode(batch.data(), n);
        const std::vector<float> back = codec.decode(codes.data(), n);
        std::copy(codes.begin(), codes.end(), e.codes.begin() + static_cast<long>(first * per * cs));
        std::copy(back.begin(), back.end(), e.decoded.begin() + static_cast<long>(first * per * dim));
    }
    return e;
}

// Adds one memory's reconstruction error to `sum`: its exact and decoded vectors (lay.slots() of
// dim floats each, head-major), counting each head's `used` valid slots only; the unused ones are
// zeros the codec never trained on.
void add_valid_slots(ErrorSum& sum, const float* exact, const float* decoded, size_t used, const Layout& lay, size_t dim) {
    for (size_t h = 0; h < lay.heads; ++h) {
        const size_t at = (h * lay.keep) * dim;
        add_reconstruction(sum, exact + at, decoded + at, used * dim);
    }
}

// The reconstruction error over valid slots.
double reconstruction_error(const std::vector<WrittenMemory>& mems, const Layout& lay, size_t dim, bool values,
                            const std::vector<float>& decoded) {
    ErrorSum sum;
    for (size_t m = 0; m < mems.size(); ++m)
        add_valid_slots(sum, vectors_of(mems[m], values).data(), decoded.data() + m * lay.slots() * dim,
                        used_slots(mems[m].memory, lay), lay, dim);
    return sum.relative_sq();
}

// One memory with its codes (`slots` vectors each) in place of its f32 keys and values.
WrittenMemory compressed_memory(WrittenMemory&& f32, const uint8_t* key_codes, const uint8_t* value_codes, size_t slots,
                                const VqCodec& kc, const VqCodec& vc, const MemoryCodec& codec) {
    WrittenMemory w;
    w.vector = std::move(f32.vector);
    w.memory.id = f32.memory.id;
    w.memory.n_valid = f32.memory.n_valid;
    w.memory.indices = std::move(f32.memory.indices);
    w.memory.key_codes = vq_code_words(key_codes, slots, kc.code_size(), codec.keys.code_words());
    w.memory.value_codes = vq_code_words(value_codes, slots, vc.code_size(), codec.values.code_words());
    return w;
}

Layout layout_of(const MemorySpec& spec) {
    Layout lay;
    lay.heads = spec.memory_layers.size() * static_cast<size_t>(spec.kv_heads);
    lay.keep = static_cast<size_t>(spec.tokens_per_head);
    return lay;
}

}  // namespace

TrainedCodecs make_memory_codecs(const MemorySpec& spec, const CompressOptions& o, CompressReport& r) {
    // Both codecs are built before either trains, so a bad factory fails at once.
    const std::string kf = o.key_factory.empty() ? default_factory(spec.head_dim) : o.key_factory;
    const std::string vf = o.value_factory.empty() ? default_factory(spec.value_dim) : o.value_factory;
    TrainedCodecs t;
    try {
        t.keys = std::make_unique<VqCodec>(spec.head_dim, kf);
    } catch (const Error& e) {
        throw with_context("keys", e);
    }
    try {
        t.values = std::make_unique<VqCodec>(spec.value_dim, vf);
    } catch (const Error& e) {
        throw with_context("values", e);
    }
    r.keys.factory = kf;
    r.values.factory = vf;
    return t;
}

void train_memory_codecs_on(TrainedCodecs& t, const float* keys, const float* values, size_t n, const CompressOptions& o,
                            CompressReport& r) {
    if (o.threads > 0) omp_set_num_threads(o.threads);
    train_codec(*t.keys, keys, n, false, o, r.keys, r.notes);
    train_codec(*t.values, values, n, true, o, r.values, r.notes);
    t.codec = MemoryCodec{t.keys->codebook(), t.values->codebook()};
}

TrainedCodecs train_memory_codecs(const std::vector<WrittenMemory>& memories, const MemorySpec& spec, const CompressOptions& o,
                                  CompressReport& r) {
    const Layout lay = layout_of(spec);
    TrainedCodecs t = make_memory_codecs(spec, o, r);
    const std::vector<float> keys = valid_vectors(memories, lay, static_cast<size_t>(spec.head_dim), false);
    const std::vector<float> values = valid_vectors(memories, lay, static_cast<size_t>(spec.value_dim), true);
    train_memory_codecs_on(t, keys.data(), values.data(), keys.size() / static_cast<size_t>(spec.head_dim), o, r);
    return t;
}

std::vector<WrittenMemory> encode_memories(std::vector<WrittenMemory>&& memories, const MemorySpec& spec, const VqCodec& keys,
                                           const VqCodec& values, const MemoryCodec& codec, int threads, CodecFit* fit) {
    // OpenMP's thread count is per calling thread: a builder's encoding thread sets its own.
    if (threads > 0) omp_set_num_threads(threads);
    const Layout lay = layout_of(spec);
    const size_t slots = lay.slots();
    const auto dk = static_cast<size_t>(keys.dim()), dv = static_cast<size_t>(values.dim());
    for (size_t m = 0; m < memories.size(); ++m) {
        const WrittenMemory& w = memories[m];
        if (w.memory.keys.size() != slots * dk || w.memory.values.size() != slots * dv)
            throw Error("memory " + std::to_string(m) + ": " + std::to_string(w.memory.keys.size()) + " key and " +
                        std::to_string(w.memory.values.size()) + " value floats, the model's memories have " +
                        std::to_string(slots * dk) + " and " + std::to_string(slots * dv));
    }
    // Many memories per FAISS call where its table allows (vectors_per_call): each call is an
    // OpenMP parallel region, and one memory's few dozen vectors leave its threads mostly waiting
    // (20x slower than one thread for Residual2x8 on a loaded 2-core machine). A vector's code does
    // not depend on the others in its call (FAISS encodes row by row;
    // tests/test_kb_build_stream.cpp compares with one call per memory).
    const size_t per_call = std::max<size_t>(1, std::min(vectors_per_call(keys), vectors_per_call(values)) / std::max<size_t>(slots, 1));
    std::vector<WrittenMemory> out;
    out.reserve(memories.size());
    std::vector<float> kx, vx;
    for (size_t first = 0; first < memories.size(); first += per_call) {
        const size_t last = std::min(memories.size(), first + per_call);
        kx.clear();
        vx.clear();
        for (size_t m = first; m < last; ++m) {
            kx.insert(kx.end(), memories[m].memory.keys.begin(), memories[m].memory.keys.end());
            vx.insert(vx.end(), memories[m].memory.values.begin(), memories[m].memory.values.end());
        }
        const std::vector<uint8_t> kc = keys.encode(kx.data(), (last - first) * slots);
        const std::vector<uint8_t> vc = values.encode(vx.data(), (last - first) * slots);
        if (fit) {
            const std::vector<float> kd = keys.decode(kc.data(), (last - first) * slots);
            const std::vector<float> vd = values.decode(vc.data(), (last - first) * slots);
            for (size_t m = first; m < last; ++m) {
                const size_t used = used_slots(memories[m].memory, lay), at = (m - first) * slots;
                add_valid_slots(fit->keys, kx.data() + at * dk, kd.data() + at * dk, used, lay, dk);
                add_valid_slots(fit->values, vx.data() + at * dv, vd.data() + at * dv, used, lay, dv);
            }
        }
        for (size_t m = first; m < last; ++m)
            out.push_back(compressed_memory(std::move(memories[m]), kc.data() + (m - first) * slots * keys.code_size(),
                                            vc.data() + (m - first) * slots * values.code_size(), slots, keys, values, codec));
    }
    return out;
}

CompressReport compress_memory_folder(const CompressOptions& o) {
    if (o.in_dir.empty() || o.out_dir.empty()) throw Error("compress: an input and an output folder are needed");
    // write_memory_folder checks this too, but only after the training it would waste.
    if (!o.replace && std::filesystem::exists(o.out_dir))
        throw Error("memory folder '" + o.out_dir + "' already exists (choose another folder, or --force to replace it)");
    say(o, "reading '" + o.in_dir + "'");
    MemoryFolderContents in = read_memory_folder(o.in_dir);
    if (in.codec)
        throw Error("memory folder '" + o.in_dir + "' is already compressed (encoding \"vq\"); compress its f32 original");
    if (in.memories.empty()) throw Error("memory folder '" + o.in_dir + "' holds no memories: nothing to train a codec on");
    const MemorySpec& spec = in.model.spec;
    const Layout lay = layout_of(spec);
    const auto d = static_cast<size_t>(spec.head_dim), dv = static_cast<size_t>(spec.value_dim);

    CompressReport r;
    r.memories = in.memories.size();
    r.record_bytes_f32 = manifest_record_bytes(o.in_dir);  // now: out_dir may replace in_dir
    TrainedCodecs trained = train_memory_codecs(in.memories, spec, o, r);
    const VqCodec* kc = trained.keys.get();
    const VqCodec* vc = trained.values.get();
    const MemoryCodec& codec = trained.codec;

    say(o, "encoding " + std::to_string(r.memories) + " memories");
    const Encoded ek = encode_all(*kc, in.memories, lay, false);
    const Encoded ev = encode_all(*vc, in.memories, lay, true);
    const size_t slots = lay.slots();
    for (int kv = 0; kv < 2; ++kv) {
        CodecReport& cr = kv == 0 ? r.keys : r.values;
        const VqCodec& c = kv == 0 ? *kc : *vc;
        const Encoded& e = kv == 0 ? ek : ev;
        const VqCodebook& book = kv == 0 ? codec.keys : codec.values;
        cr.sha256 = book.sha256;
        cr.dim = static_cast<uint32_t>(c.dim());
        cr.code_bytes = static_cast<uint32_t>(c.code_size());
        cr.encoded_vectors = r.memories * slots;
        cr.decode_checked = check_vq_decode(book, e.codes, e.decoded, cr.encoded_vectors, o.decode_check_rows,
                                            kv == 0 ? "keys" : "values");
        cr.reconstruction_error = reconstruction_error(in.memories, lay, static_cast<size_t>(c.dim()), kv == 1, e.decoded);
    }

    // Attention of every memory head over its own slots, exact vs decoded.
    ErrorSum attn;
    for (size_t m = 0; m < in.memories.size(); ++m) {
        const ExplicitMemory& mem = in.memories[m].memory;
        const size_t used = used_slots(mem, lay);
        for (size_t h = 0; h < lay.heads; ++h) {
            const size_t slot = m * slots + h * lay.keep;
            add_attention_error(attn, mem.keys.data() + h * lay.keep * d, mem.values.data() + h * lay.keep * dv,
                                ek.decoded.data() + slot * d, ev.decoded.data() + slot * dv, used, d, dv);
        }
    }
    r.attention_error = attn.relative_l2();

    // The compressed memories: codes as VQ_DECODE words, everything else as read.
    std::vector<WrittenMemory> out;
    out.reserve(in.memories.size());
    for (size_t m = 0; m < in.memories.size(); ++m)
        out.push_back(compressed_memory(std::move(in.memories[m]), ek.codes.data() + m * slots * kc->code_size(),
                                        ev.codes.data() + m * slots * vc->code_size(), slots, *kc, *vc, codec));
    say(o, "writing '" + o.out_dir + "'");
    write_memory_folder(o.out_dir, in.model, out, in.references, o.replace, &codec);
    r.record_bytes_vq = manifest_record_bytes(o.out_dir);
    return r;
}

}  // namespace mnemo::kb
